//! The repetition rules of the Asian rule set (AXF/WXF) as far as single moves and a repeated
//! cycle of moves are concerned: what counts as a check, a chase or an idle move, and who loses
//! when a cycle is repeated for ever. `docs/repetition-rules.md` states the definitions with the
//! rule texts they follow; this module is their one implementation, shared by the adjudicator,
//! the tablebase solver and its verifier.
//!
//! In short:
//! - a move is a **check** when afterwards the opponent's king is attacked;
//! - otherwise it is a **chase** of every opponent piece it newly *threatens to win*
//!   ([`threatened`]: attacked by a chariot, horse or cannon that can capture it legally, and
//!   either unprotected, or a chariot attacked by a horse or cannon, or attacked by a piece of its
//!   own kind that it cannot capture back); "newly" means the piece was not threatened before the
//!   move, so a victim that does not run is not chased again;
//! - otherwise it is **idle**.
//!
//! A side's offence in a cycle repeated for ever ([`offence`]) is *perpetual check* when every
//! one of its moves checks, *perpetual chase* when one and the same piece (followed as it moves)
//! is chased by every one of its moves, and none otherwise. The side with the greater offence
//! loses (check outranks chase); equal offences, and none, are a draw.

use crate::board::Board;
use crate::moves::{Move, MoveList};
use crate::types::{Color, PieceKind, Square};
use std::fmt;

/// What a move does, for the repetition rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MoveClass {
    /// Neither a check nor a chase.
    Idle,
    /// The opponent's king is attacked after the move.
    Check,
    /// The move newly threatens to win these opponent pieces (squares after the move).
    Chase(Squares),
}

/// A set of squares (bit `n` is square `n`).
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Squares(pub u128);

impl Squares {
    /// Whether `s` is in the set.
    #[inline]
    pub fn contains(self, s: Square) -> bool {
        self.0 & (1u128 << s.index()) != 0
    }

    /// Whether the set is empty.
    #[inline]
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The squares, a0 first.
    pub fn iter(self) -> impl Iterator<Item = Square> {
        let mut bits = self.0;
        std::iter::from_fn(move || {
            if bits == 0 {
                return None;
            }
            let s = bits.trailing_zeros() as usize;
            bits &= bits - 1;
            Square::from_index(s)
        })
    }
}

impl fmt::Debug for Squares {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.iter().map(|s| s.to_string()))
            .finish()
    }
}

/// Whether a pawn of `color` on `s` has crossed the river.
fn crossed(color: Color, s: Square) -> bool {
    match color {
        Color::Red => s.rank() >= 5,
        Color::Black => s.rank() <= 4,
    }
}

/// Whether `side` has a legal capture on `target` on `board` (whose side to move is set to
/// `side` for the test and restored).
fn can_capture_on(board: &mut Board, side: Color, target: Square) -> bool {
    if !board.may_capture_on(target.index() as u8, side) {
        return false;
    }
    let saved = board.side_to_move();
    board.set_side_to_move(side);
    let mut moves = MoveList::new();
    board.pseudo_moves(&mut moves);
    let in_check = board.in_check(side);
    let found = moves
        .iter()
        .filter(|m| m.to() == target)
        .any(|&m| board.is_legal_pseudo(m, in_check));
    board.set_side_to_move(saved);
    found
}

/// Whether the piece on `m.from()` can play the capture `m` legally on `board`, whoever is to
/// move there (the side to move is set for the test and restored).
fn can_play(board: &mut Board, m: Move) -> bool {
    let Some(piece) = board.piece_at(m.from()) else {
        return false;
    };
    let mut moves = MoveList::new();
    board.piece_pseudo_moves(m.from(), &mut moves);
    if !moves.contains(&m) {
        return false;
    }
    let mover = piece.color();
    let in_check = board.in_check(mover);
    is_legal_for(board, mover, m, in_check)
}

/// The opponent pieces that `by` threatens to win on `board` (whoever is to move there): pieces
/// other than the king and uncrossed pawns that a chariot, horse or cannon of `by` can capture
/// legally, where
/// - a chariot attacked by a horse or a cannon is always threatened;
/// - a piece attacked by a piece of its own kind that it can legally capture back is not
///   threatened (the attack is an offer to exchange);
/// - any other piece is threatened when it is unprotected: after the capture its side has no
///   legal move that captures on its square.
pub fn threatened(board: &Board, by: Color) -> Squares {
    threatened_on(&mut board.clone(), by)
}

/// [`threatened`] on a board it may change in between (it is left as it was found).
fn threatened_on(board: &mut Board, by: Color) -> Squares {
    let them = by.opponent();
    // The chaseable pieces of the other side that a chariot, horse or cannon of `by` can
    // capture: a threat needs such a capture, so with none there is nothing to look at (the
    // common case, decided without generating a move).
    let mut victims = 0u128;
    let mut theirs = board.occupancy(them);
    while theirs != 0 {
        let t = Square::from_u8(theirs.trailing_zeros() as u8);
        theirs &= theirs - 1;
        let v = board.piece_at(t).expect("a piece of the other side");
        if v.kind() != PieceKind::King
            && (v.kind() != PieceKind::Pawn || crossed(them, t))
            && board.attacked_by_capturer(t.index() as u8, by)
        {
            victims |= 1u128 << t.index();
        }
    }
    if victims == 0 {
        return Squares(0);
    }
    let mut out = 0u128;
    let mut moves = MoveList::new();
    // The attackers' squares, read before the board is changed (every change below is undone).
    let mut attackers = board.occupancy(by);
    // Whether `by` is in check decides how its captures' legality is tested; the board is the
    // same for every capture tested.
    let by_in_check = board.in_check(by);
    while attackers != 0 {
        let s = Square::from_u8(attackers.trailing_zeros() as u8);
        attackers &= attackers - 1;
        let attacker = board.piece_at(s).expect("an attacker");
        if !matches!(
            attacker.kind(),
            PieceKind::Rook | PieceKind::Horse | PieceKind::Cannon
        ) {
            continue;
        }
        moves.clear();
        board.piece_pseudo_moves(s, &mut moves);
        for &m in moves.iter() {
            let t = m.to();
            if victims & (1u128 << t.index()) == 0 || out & (1u128 << t.index()) != 0 {
                continue;
            }
            let victim = board.piece_at(t).expect("a victim");
            if !is_legal_for(board, by, m, by_in_check) {
                continue;
            }
            let threat = if matches!(attacker.kind(), PieceKind::Horse | PieceKind::Cannon)
                && victim.kind() == PieceKind::Rook
            {
                true
            } else if attacker.kind() == victim.kind() && can_play(board, Move::new(t, s)) {
                // The victim could take the attacker: an offer to exchange.
                false
            } else {
                let saved = board.side_to_move();
                board.set_side_to_move(by);
                let captured = board.make(m);
                let protected = can_capture_on(board, them, t);
                board.unmake(m, captured);
                board.set_side_to_move(saved);
                !protected
            };
            if threat {
                out |= 1u128 << t.index();
            }
        }
    }
    Squares(out)
}

/// Whether the pseudo-legal move `m` of `side` is legal on `board`, whoever is to move there
/// (the side to move is set for the test and restored); `in_check` says whether `side` is in
/// check.
fn is_legal_for(board: &mut Board, side: Color, m: Move, in_check: bool) -> bool {
    let saved = board.side_to_move();
    board.set_side_to_move(side);
    let legal = board.is_legal_pseudo(m, in_check);
    board.set_side_to_move(saved);
    legal
}

/// Classifies the moves of one position, computing what the mover threatens before any move
/// once, on first need.
pub struct Classifier {
    classes: MoveClasses,
    /// The position before any move; each move is made on it and taken back.
    scratch: Board,
}

impl Classifier {
    /// A classifier for the moves of `before` (its mover to move).
    pub fn new(before: &Board) -> Classifier {
        Classifier {
            classes: MoveClasses::new(before.side_to_move()),
            scratch: before.clone(),
        }
    }

    /// What the legal non-capturing move `m` does.
    pub fn class(&mut self, m: Move) -> MoveClass {
        self.classes.class(&mut self.scratch, m)
    }
}

/// [`Classifier`] without a board of its own: each call is lent the position, which it leaves
/// as it found it. Where the caller owns the board, this spares the copy a classifier makes.
pub struct MoveClasses {
    mover: Color,
    threats_before: Option<u128>,
}

impl MoveClasses {
    /// Classes of the moves of a position with `mover` to move.
    pub fn new(mover: Color) -> MoveClasses {
        MoveClasses {
            mover,
            threats_before: None,
        }
    }

    /// What the legal non-capturing move `m` does on `before`, which must be the same position
    /// at every call.
    pub fn class(&mut self, before: &mut Board, m: Move) -> MoveClass {
        let mover = self.mover;
        let captured = before.make(m);
        if before.in_check_from_pieces(mover.opponent()) {
            before.unmake(m, captured);
            return MoveClass::Check;
        }
        let after = threatened_on(before, mover).0;
        before.unmake(m, captured);
        if after == 0 {
            // Nothing is threatened after the move, so nothing newly: what was threatened before
            // is not needed (most moves of most positions end here).
            return MoveClass::Idle;
        }
        let before = match self.threats_before {
            Some(b) => b,
            None => {
                let b = threatened_on(before, mover).0;
                self.threats_before = Some(b);
                b
            }
        };
        let new = after & !before;
        if new == 0 {
            MoveClass::Idle
        } else {
            MoveClass::Chase(Squares(new))
        }
    }
}

/// What the legal non-capturing move `m` does on `before` (its mover to move), for the
/// repetition rules.
pub fn classify(before: &Board, m: Move) -> MoveClass {
    Classifier::new(before).class(m)
}

/// [`classify`] given both positions: `after` is `before` after a non-capturing move of
/// `mover`.
pub fn classify_after(before: &Board, after: &Board, mover: Color) -> MoveClass {
    if after.in_check(mover.opponent()) {
        return MoveClass::Check;
    }
    let new = threatened(after, mover).0 & !threatened(before, mover).0;
    if new == 0 {
        MoveClass::Idle
    } else {
        MoveClass::Chase(Squares(new))
    }
}

/// What a side keeps doing in a cycle repeated for ever.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Offence {
    /// Nothing forbidden.
    None,
    /// One and the same piece is chased by every move of the side.
    PerpetualChase,
    /// Every move of the side checks.
    PerpetualCheck,
}

impl Offence {
    /// `"none"`, `"perpetual-chase"` or `"perpetual-check"`.
    pub const fn name(self) -> &'static str {
        match self {
            Offence::None => "none",
            Offence::PerpetualChase => "perpetual-chase",
            Offence::PerpetualCheck => "perpetual-check",
        }
    }
}

/// The offence of `side` in the cycle `plies` repeated for ever: each ply is the mover, the
/// move and its class. `side` must have at least one move in the cycle.
///
/// A chased piece is followed as it moves (its square changes with every move that moves it),
/// and the cycle is repeated until the pieces are back where they started, so that a chase of
/// one of two identical pieces is told apart from alternately chasing both.
pub fn offence(plies: &[(Color, Move, MoveClass)], side: Color) -> Offence {
    let own: Vec<&MoveClass> = plies
        .iter()
        .filter(|(c, _, _)| *c == side)
        .map(|(_, _, k)| k)
        .collect();
    if own.is_empty() {
        return Offence::None;
    }
    if own.iter().all(|k| **k == MoveClass::Check) {
        return Offence::PerpetualCheck;
    }
    if !own.iter().all(|k| matches!(k, MoveClass::Chase(_))) {
        return Offence::None;
    }
    // Candidate victims: the pieces the side's first move in the cycle chases, followed through
    // the cycle (rotated to start at that move) until they are back on their squares: a chase of
    // one of two identical pieces is then told apart from chasing both in turn.
    let first = plies
        .iter()
        .position(|(c, _, _)| *c == side)
        .expect("the side moves in the cycle");
    let n = plies.len();
    let MoveClass::Chase(start) = plies[first].2 else {
        unreachable!("checked above")
    };
    'victim: for v in start.iter() {
        let mut at = v;
        // A group of up to five identical pieces returns to its squares within six rounds.
        for _round in 0..6 {
            for i in 0..n {
                let (c, m, k) = &plies[(first + i) % n];
                if *c == side {
                    match k {
                        MoveClass::Chase(sq) if sq.contains(at) => {}
                        _ => continue 'victim,
                    }
                }
                if m.from() == at {
                    at = m.to();
                }
            }
            if at == v {
                return Offence::PerpetualChase;
            }
        }
    }
    Offence::None
}

/// The verdict on a cycle repeated for ever: who loses, or a draw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// No side offends more than the other.
    Draw,
    /// `loser` offends more than the other side and loses by `offence`.
    Loses {
        /// The side that loses.
        loser: Color,
        /// Its offence.
        offence: Offence,
    },
}

/// The verdict when Red's and Black's offences are `red` and `black`: the greater offence loses.
pub fn verdict(red: Offence, black: Offence) -> Verdict {
    match red.cmp(&black) {
        std::cmp::Ordering::Equal => Verdict::Draw,
        std::cmp::Ordering::Greater => Verdict::Loses {
            loser: Color::Red,
            offence: red,
        },
        std::cmp::Ordering::Less => Verdict::Loses {
            loser: Color::Black,
            offence: black,
        },
    }
}

/// One move of an adjudicated cycle.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CycleMove {
    /// Index of the move in the sequence given to [`adjudicate`].
    pub index: usize,
    /// The side that played it.
    pub mover: Color,
    /// The move.
    pub mv: Move,
    /// What it does.
    pub class: MoveClass,
}

/// The judgement of a played sequence that repeats a position.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Adjudication {
    /// Index of the first move of the repeated cycle: the position before it is the one the
    /// sequence returns to.
    pub cycle_start: usize,
    /// The moves of the cycle with their classes.
    pub cycle: Vec<CycleMove>,
    /// Each side's offence in the cycle `[Red, Black]`.
    pub offences: [Offence; 2],
    /// The verdict.
    pub verdict: Verdict,
}

/// Why a sequence could not be adjudicated.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AdjudicationError {
    /// A move is not legal where it is played.
    #[error("move {index} ({mv}) is not legal in {fen}")]
    Illegal {
        /// Its index in the sequence (0 for the first).
        index: usize,
        /// The move.
        mv: Move,
        /// The position it was tried in.
        fen: String,
    },
    /// The last position does not occur earlier in the sequence.
    #[error("the last position ({0}) does not repeat an earlier one of the sequence")]
    NoRepetition(String),
}

/// Judges the sequence `moves` played from `start`, whose last position must repeat an earlier
/// one (same placement, same side to move): the cycle between the last position and its most
/// recent earlier occurrence is taken as repeated for ever.
pub fn adjudicate(start: &Board, moves: &[Move]) -> Result<Adjudication, AdjudicationError> {
    let mut positions = vec![start.clone()];
    let mut board = start.clone();
    let mut classes = Vec::with_capacity(moves.len());
    for (index, &mv) in moves.iter().enumerate() {
        if !board.is_legal_move(mv) {
            return Err(AdjudicationError::Illegal {
                index,
                mv,
                fen: board.fen(),
            });
        }
        let before = board.clone();
        let captured = board.make(mv);
        classes.push(match captured {
            Some(_) => MoveClass::Idle,
            None => classify_after(&before, &board, before.side_to_move()),
        });
        positions.push(board.clone());
    }
    let last = positions.len() - 1;
    let cycle_start = (0..last)
        .rev()
        .find(|&i| positions[i] == positions[last])
        .ok_or_else(|| AdjudicationError::NoRepetition(board.fen()))?;
    let cycle: Vec<CycleMove> = (cycle_start..last)
        .map(|index| CycleMove {
            index,
            mover: positions[index].side_to_move(),
            mv: moves[index],
            class: classes[index],
        })
        .collect();
    let plies: Vec<(Color, Move, MoveClass)> =
        cycle.iter().map(|c| (c.mover, c.mv, c.class)).collect();
    let offences = Color::ALL.map(|side| offence(&plies, side));
    Ok(Adjudication {
        cycle_start,
        cycle,
        offences,
        verdict: verdict(offences[0], offences[1]),
    })
}
