//! The repetition rules of the Asian rule set (AXF/WXF) as far as single moves and a repeated
//! cycle of moves are concerned: what a move does (a check, a chase of which pieces, or
//! nothing forbidden) and who loses when a cycle is repeated for ever.
//! `docs/repetition-rules.md` states the definitions with the rule texts they follow; this
//! module is their one implementation, shared by the adjudicator, the tablebase solver and its
//! verifier.
//!
//! In short:
//! - a move is a **check** when afterwards the opponent's king is attacked;
//! - it **chases** every opponent piece it gives a new *threat* ([`threatened`]): a capture by a
//!   chariot, horse, cannon, advisor or elephant that would win the piece (it is unprotected,
//!   or worth more than its attacker, and not an offer to exchange), and that was no threat
//!   before the move. Threats are told apart by attacker and victim, so a second piece
//!   taking up the attack on a victim is a new threat; a threat the mover's own check only
//!   held in suspense is not. A move that defends a piece of its own (takes a threat against
//!   it away, or answers a check) chases only with the attacks it makes itself, not with the
//!   threats that arise because it happens to take a victim's protection away;
//! - a move can be both: a check that also makes a new threat chases too.
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
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct MoveClass {
    /// The opponent's king is attacked after the move.
    pub check: bool,
    /// The opponent pieces the move chases (their squares, which the move does not change).
    pub chased: Squares,
}

impl MoveClass {
    /// Neither a check nor a chase.
    pub const IDLE: MoveClass = MoveClass {
        check: false,
        chased: Squares(0),
    };

    /// Whether the move neither checks nor chases.
    #[inline]
    pub fn is_idle(self) -> bool {
        !self.check && self.chased.is_empty()
    }

    /// Whether the move chases some piece.
    #[inline]
    pub fn is_chase(self) -> bool {
        !self.chased.is_empty()
    }
}

impl fmt::Display for MoveClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.check, self.is_chase()) {
            (false, false) => f.write_str("idle"),
            (true, false) => f.write_str("check"),
            (false, true) => f.write_str("chase"),
            (true, true) => f.write_str("check and chase"),
        }
    }
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

#[inline]
const fn bit(s: u8) -> u128 {
    1u128 << s
}

/// One capture of a piece by another: the attacker's square and the victim's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Attack {
    from: u8,
    on: u8,
}

/// Captures of one side in one position, at most as many as its chasers can make at once
/// (two each of chariots, horses, cannons, advisors and elephants: 48).
#[derive(Clone, Copy)]
struct Attacks {
    len: u8,
    list: [Attack; 48],
}

impl Attacks {
    const NONE: Attacks = Attacks {
        len: 0,
        list: [Attack { from: 0, on: 0 }; 48],
    };

    fn push(&mut self, a: Attack) {
        self.list[self.len as usize] = a;
        self.len += 1;
    }

    fn iter(&self) -> impl Iterator<Item = Attack> + '_ {
        self.list[..self.len as usize].iter().copied()
    }

    fn contains(&self, a: Attack) -> bool {
        self.iter().any(|b| b == a)
    }

    fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The victims' squares.
    fn victims(&self) -> u128 {
        self.iter().fold(0, |v, a| v | bit(a.on))
    }
}

/// One side's captures of chaseable pieces in one position: those it may play, and those of
/// them that are threats.
#[derive(Clone, Copy)]
struct Threats {
    /// Captures of the other side's chaseable pieces (not the king, not a pawn that has not
    /// crossed the river) by chariots, horses, cannons, advisors and elephants that the side may
    /// play ([`playable`]: its own check set aside).
    playable: Attacks,
    /// Those of them that threaten to win the piece.
    threats: Attacks,
}

/// Whether a capture of a `victim` by an `attacker` wins material whatever the victim's
/// protection: a chariot taken by anything less (a horse, cannon, advisor or elephant; rule
/// 15), a horse or cannon taken by an advisor or elephant.
fn wins_outright(attacker: PieceKind, victim: PieceKind) -> bool {
    use PieceKind::*;
    match victim {
        Rook => matches!(attacker, Horse | Cannon | Advisor | Elephant),
        Horse | Cannon => matches!(attacker, Advisor | Elephant),
        _ => false,
    }
}

/// Whether a piece of this kind threatens to win pieces: every piece but the king and pawns
/// (rules 28, 29: they may chase for ever).
fn is_chaser(kind: PieceKind) -> bool {
    !matches!(kind, PieceKind::King | PieceKind::Pawn)
}

/// Whether `side` may play the pseudo-legal move `m` on `board` (whoever is to move there),
/// counting as legal a move that is illegal only because `side` is in check: `checkers` are the
/// squares of the pieces giving that check (none when `side` is not in check). A threat the
/// check holds in suspense is still a threat (the king stepping out of check does not make it
/// new).
fn playable(board: &mut Board, side: Color, m: Move, checkers: u128) -> bool {
    let saved = board.side_to_move();
    board.set_side_to_move(side);
    let ok = if checkers == 0 {
        board.is_legal_pseudo(m, false)
    } else {
        let captured = board.make(m);
        let now = board.checkers(side);
        board.unmake(m, captured);
        now & !checkers == 0
    };
    board.set_side_to_move(saved);
    ok
}

/// Whether `side` has a capture on `target` on `board` that it may play (see [`playable`], with
/// `checkers` the pieces whose check on `side` is set aside).
fn can_capture_on(board: &mut Board, side: Color, target: Square, checkers: u128) -> bool {
    if !board.may_capture_on(target.index() as u8, side) {
        return false;
    }
    let saved = board.side_to_move();
    board.set_side_to_move(side);
    let mut moves = MoveList::new();
    board.pseudo_moves(&mut moves);
    let in_check = checkers == 0 && board.in_check(side);
    let found = moves.iter().filter(|m| m.to() == target).any(|&m| {
        if checkers == 0 {
            board.is_legal_pseudo(m, in_check)
        } else {
            playable(board, side, m, checkers)
        }
    });
    board.set_side_to_move(saved);
    found
}

/// Whether the piece on `m.from()` has the pseudo-legal capture `m` on `board` and may play it
/// (see [`playable`]; its side's own check aside).
fn can_take_back(board: &mut Board, m: Move) -> bool {
    let Some(piece) = board.piece_at(m.from()) else {
        return false;
    };
    let mut moves = MoveList::new();
    board.piece_pseudo_moves(m.from(), &mut moves);
    if !moves.contains(&m) {
        return false;
    }
    let side = piece.color();
    let checkers = board.checkers(side);
    playable(board, side, m, checkers)
}

/// The opponent pieces that `by` threatens to win on `board` (whoever is to move there): pieces
/// other than the king and uncrossed pawns that a chariot, horse, cannon, advisor or elephant of
/// `by` can capture (with a legal move, or one that only `by`'s being in check forbids), where
/// - a chariot attacked by a horse, cannon, advisor or elephant, and a horse or cannon attacked
///   by an advisor or elephant, are always threatened;
/// - a piece attacked by a piece of its own kind that it can capture back is not threatened
///   (the attack is an offer to exchange);
/// - any other piece is threatened when it is unprotected: after the capture its side has no
///   legal move that captures on its square.
pub fn threatened(board: &Board, by: Color) -> Squares {
    Squares(threats_of(&mut board.clone(), by).threats.victims())
}

/// `by`'s captures and threats on `board` (see [`threatened`]); the board is left as it was
/// found.
fn threats_of(board: &mut Board, by: Color) -> Threats {
    let them = by.opponent();
    let mut out = Threats {
        playable: Attacks::NONE,
        threats: Attacks::NONE,
    };
    // The chaseable pieces of the other side that a chaser of `by` can capture: with none
    // there is nothing to look at (the common case, decided without generating a move).
    let mut victims = 0u128;
    let mut theirs = board.occupancy(them);
    while theirs != 0 {
        let t = Square::from_u8(theirs.trailing_zeros() as u8);
        theirs &= theirs - 1;
        let v = board.piece_at(t).expect("a piece of the other side");
        if v.kind() != PieceKind::King
            && (v.kind() != PieceKind::Pawn || crossed(them, t))
            && board.attacked_by_chaser(t.index() as u8, by)
        {
            victims |= bit(t.index() as u8);
        }
    }
    if victims == 0 {
        return out;
    }
    let checkers = board.checkers(by);
    // The other side's protectors may recapture as if the check it is in were not there: the
    // check and the threat are two things a move may do at once.
    let their_checkers = board.checkers(them);
    let mut moves = MoveList::new();
    let mut attackers = board.occupancy(by);
    while attackers != 0 {
        let s = Square::from_u8(attackers.trailing_zeros() as u8);
        attackers &= attackers - 1;
        let attacker = board.piece_at(s).expect("an attacker").kind();
        if !is_chaser(attacker) {
            continue;
        }
        moves.clear();
        board.piece_pseudo_moves(s, &mut moves);
        for &m in moves.iter() {
            let t = m.to();
            if victims & bit(t.index() as u8) == 0 {
                continue;
            }
            let a = Attack {
                from: s.index() as u8,
                on: t.index() as u8,
            };
            if !playable(board, by, m, checkers) {
                continue;
            }
            out.playable.push(a);
            let victim = board.piece_at(t).expect("a victim").kind();
            let threat = if wins_outright(attacker, victim) {
                true
            } else if attacker == victim && can_take_back(board, Move::new(t, s)) {
                // The victim could take the attacker: an offer to exchange.
                false
            } else {
                let saved = board.side_to_move();
                board.set_side_to_move(by);
                let captured = board.make(m);
                let protected = can_capture_on(board, them, t, their_checkers);
                board.unmake(m, captured);
                board.set_side_to_move(saved);
                !protected
            };
            if threat {
                out.threats.push(a);
            }
        }
    }
    out
}

/// Classifies the moves of one position, computing what is threatened before any move once,
/// on first need.
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
    /// The mover's captures and threats before any move.
    own_before: Option<Threats>,
    /// The mover's pieces the opponent threatens before any move.
    theirs_before: Option<u128>,
}

impl MoveClasses {
    /// Classes of the moves of a position with `mover` to move.
    pub fn new(mover: Color) -> MoveClasses {
        MoveClasses {
            mover,
            own_before: None,
            theirs_before: None,
        }
    }

    /// What the legal non-capturing move `m` does on `before`, which must be the same position
    /// at every call.
    pub fn class(&mut self, before: &mut Board, m: Move) -> MoveClass {
        let mover = self.mover;
        let captured = before.make(m);
        let check = before.in_check_from_pieces(mover.opponent());
        let after = threats_of(before, mover).threats;
        before.unmake(m, captured);
        if after.is_empty() {
            // Nothing is threatened after the move, so nothing newly: what was threatened before
            // is not needed (most moves of most positions end here).
            return MoveClass {
                check,
                chased: Squares(0),
            };
        }
        let own = *self
            .own_before
            .get_or_insert_with(|| threats_of(before, mover));
        // The square before the move of the piece on `s` after it.
        let (from, to) = (m.from().index() as u8, m.to().index() as u8);
        let back = |s: u8| if s == to { from } else { s };
        // New threats: those whose capture the move makes possible (by the piece moved, or by a
        // line it opened, a cannon screen it put up or a pin it ended), and those whose capture
        // was possible already but becomes a threat because the victim got weaker (lost its
        // protection, or the means to take the attacker back).
        let (mut made, mut freed) = (0u128, 0u128);
        for a in after.iter() {
            let was = Attack {
                from: back(a.from),
                on: a.on,
            };
            if own.threats.contains(was) {
                continue;
            }
            if a.from == to || !own.playable.contains(was) {
                made |= bit(a.on);
            } else {
                freed |= bit(a.on);
            }
        }
        let mut chased = made;
        if freed & !made != 0 && !self.defends(before, m) {
            chased |= freed;
        }
        MoveClass {
            check,
            chased: Squares(chased),
        }
    }

    /// Whether the move `m` on `before` defends: the mover was in check, or a piece of the mover
    /// the opponent threatened before the move is not threatened after it (it ran, or was
    /// protected, or the attack was blocked or its screen taken away).
    fn defends(&mut self, before: &mut Board, m: Move) -> bool {
        let mover = self.mover;
        if before.in_check_from_pieces(mover) {
            return true;
        }
        let them = mover.opponent();
        let was = *self
            .theirs_before
            .get_or_insert_with(|| threats_of(before, them).threats.victims());
        if was == 0 {
            return false;
        }
        let (from, to) = (m.from().index() as u8, m.to().index() as u8);
        let was = if was & bit(from) != 0 {
            was & !bit(from) | bit(to)
        } else {
            was
        };
        let captured = before.make(m);
        let now = threats_of(before, them).threats.victims();
        before.unmake(m, captured);
        was & !now != 0
    }
}

/// Whether the legal move `m` on `before` (its mover to move) gives check: [`MoveClass::check`]
/// alone, without what the move chases (the board is left as it was found).
pub fn gives_check(before: &mut Board, m: Move) -> bool {
    let mover = before.side_to_move();
    let captured = before.make(m);
    let check = before.in_check_from_pieces(mover.opponent());
    before.unmake(m, captured);
    check
}

/// What the legal non-capturing move `m` does on `before` (its mover to move), for the
/// repetition rules.
pub fn classify(before: &Board, m: Move) -> MoveClass {
    Classifier::new(before).class(m)
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
    if own.iter().all(|k| k.check) {
        return Offence::PerpetualCheck;
    }
    if !own.iter().all(|k| k.is_chase()) {
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
    let start = plies[first].2.chased;
    'victim: for v in start.iter() {
        let mut at = v;
        // A group of up to five identical pieces returns to its squares within six rounds.
        for _round in 0..6 {
            for i in 0..n {
                let (c, m, k) = &plies[(first + i) % n];
                if *c == side && !k.chased.contains(at) {
                    continue 'victim;
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
/// one (same placement, same side to move): the play since that position's earlier occurrence
/// is taken as repeated for ever. When the position occurred three times or more, that play
/// runs from the third-to-last occurrence, as an arbiter judges a threefold repetition by all
/// the moves between its first and third occurrence (a side that alternates two cycles, chasing
/// one piece in each, chases neither perpetually); otherwise from the one before the last.
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
        classes.push(if board.is_empty(mv.to()) {
            classify(&board, mv)
        } else {
            // A capture ends every cycle: never an offence.
            MoveClass::IDLE
        });
        board.make(mv);
        positions.push(board.clone());
    }
    let last = positions.len() - 1;
    let mut earlier = (0..last).rev().filter(|&i| positions[i] == positions[last]);
    let previous = earlier
        .next()
        .ok_or_else(|| AdjudicationError::NoRepetition(board.fen()))?;
    let cycle_start = earlier.next().unwrap_or(previous);
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
