//! The board: piece placement, side to move, making and retracting moves, check detection.

use crate::moves::{Move, MoveList};
use crate::tables::{
    ADVISOR_STEPS, ELEPHANT_STEPS, HORSE_FROM, HORSE_STEPS, KING_STEPS, PAWN_FROM, PAWN_STEPS,
    RAY_DELTA, RAY_LEN,
};
use crate::types::{Color, NUM_SQUARES, Piece, PieceKind, Square};

const EMPTY: u8 = 0;
const NO_KING: u8 = 0xFF;

#[inline]
const fn bit(s: u8) -> u128 {
    1u128 << s
}

/// The squares of file 0 (a0, a1, ..., a9); file `f`'s are these shifted by `f`.
const FILE_A: u128 = {
    let mut m = 0u128;
    let mut r = 0;
    while r < 10 {
        m |= 1u128 << (r * 9);
        r += 1;
    }
    m
};

/// The squares strictly between `a` and `b` when they share a rank or a file, `None` when they
/// share neither (or are the same square).
#[inline]
fn between(a: u8, b: u8) -> Option<u128> {
    let (lo, hi) = (a.min(b), a.max(b));
    let (same_rank, same_file) = (lo / 9 == hi / 9, lo % 9 == hi % 9);
    if lo == hi || !(same_rank || same_file) {
        return None;
    }
    // Bits lo+1 .. hi-1.
    let span = (bit(hi) - 1) & !((bit(lo) << 1) - 1);
    Some(if same_rank {
        span
    } else {
        span & (FILE_A << (lo % 9))
    })
}

/// Whether a piece of this kind can give check (advisors and elephants never reach the other
/// palace).
#[inline]
fn gives_check(kind: PieceKind) -> bool {
    !matches!(kind, PieceKind::Advisor | PieceKind::Elephant)
}

/// A Xiangqi position: where every piece stands and whose turn it is.
///
/// A board built by [`crate::fen`] parsing or checked with [`crate::fen::validate`] has exactly one king a
/// side; the attack and move functions rely on that.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Board {
    cells: [u8; NUM_SQUARES],
    occ: [u128; 2],
    kings: [u8; 2],
    side: Color,
}

impl Default for Board {
    fn default() -> Self {
        Board::empty(Color::Red)
    }
}

impl Board {
    /// A board with no pieces. Place both kings before asking about checks or moves.
    pub const fn empty(side: Color) -> Board {
        Board {
            cells: [EMPTY; NUM_SQUARES],
            occ: [0; 2],
            kings: [NO_KING; 2],
            side,
        }
    }

    /// The side to move.
    #[inline]
    pub fn side_to_move(&self) -> Color {
        self.side
    }

    /// Sets the side to move.
    #[inline]
    pub fn set_side_to_move(&mut self, side: Color) {
        self.side = side;
    }

    /// The piece on `s`, if any.
    #[inline]
    pub fn piece_at(&self, s: Square) -> Option<Piece> {
        Piece::from_code(self.cells[s.index()])
    }

    #[inline]
    fn code(&self, s: u8) -> u8 {
        self.cells[s as usize]
    }

    /// Whether `s` is empty.
    #[inline]
    pub fn is_empty(&self, s: Square) -> bool {
        self.cells[s.index()] == EMPTY
    }

    /// Puts `piece` on the empty square `s`.
    #[inline]
    pub fn put(&mut self, s: Square, piece: Piece) {
        debug_assert!(self.is_empty(s), "put on occupied {s}");
        let i = s.index() as u8;
        self.cells[s.index()] = piece.code();
        self.occ[piece.color().index()] |= bit(i);
        if piece.kind() == PieceKind::King {
            self.kings[piece.color().index()] = i;
        }
    }

    /// Removes and returns the piece on `s`.
    #[inline]
    pub fn remove(&mut self, s: Square) -> Option<Piece> {
        let p = self.piece_at(s)?;
        self.cells[s.index()] = EMPTY;
        self.occ[p.color().index()] &= !bit(s.index() as u8);
        if p.kind() == PieceKind::King {
            self.kings[p.color().index()] = NO_KING;
        }
        Some(p)
    }

    /// The square of `color`'s king, if it has one.
    #[inline]
    pub fn king_square(&self, color: Color) -> Option<Square> {
        let k = self.kings[color.index()];
        (k != NO_KING).then(|| Square::from_u8(k))
    }

    /// Bit mask (bit n = square n) of `color`'s pieces.
    #[inline]
    pub fn occupancy(&self, color: Color) -> u128 {
        self.occ[color.index()]
    }

    /// Every piece with its square, in square order.
    pub fn pieces(&self) -> impl Iterator<Item = (Square, Piece)> + '_ {
        let mut occ = self.occ[0] | self.occ[1];
        std::iter::from_fn(move || {
            if occ == 0 {
                return None;
            }
            let s = occ.trailing_zeros() as u8;
            occ &= occ - 1;
            Some((
                Square::from_u8(s),
                Piece::from_code(self.cells[s as usize])?,
            ))
        })
    }

    /// How many pieces of `color` and `kind` stand on the board.
    pub fn count(&self, color: Color, kind: PieceKind) -> usize {
        let code = Piece::new(color, kind).code();
        self.cells.iter().filter(|&&c| c == code).count()
    }

    /// Whether `color`'s king is attacked, the kings facing each other on an open file included.
    #[inline]
    pub fn in_check(&self, color: Color) -> bool {
        self.is_attacked(self.kings[color.index()], color.opponent())
    }

    /// Whether the side that is not to move is in check, which makes the position illegal.
    #[inline]
    pub fn opponent_in_check(&self) -> bool {
        self.in_check(self.side.opponent())
    }

    /// Whether pieces of `by` attack square `s` in the way that matters for a king standing there:
    /// chariots, cannons over one screen, horses with a free leg, pawns, and the enemy king along an
    /// open file. Every square a chariot, horse or cannon of `by` could capture on is among
    /// them, which makes it a quick necessary test for such a capture too.
    pub(crate) fn is_attacked(&self, s: u8, by: Color) -> bool {
        let rook = Piece::new(by, PieceKind::Rook).code();
        let cannon = Piece::new(by, PieceKind::Cannon).code();
        let king = Piece::new(by, PieceKind::King).code();
        let horse = Piece::new(by, PieceKind::Horse).code();
        let pawn = Piece::new(by, PieceKind::Pawn).code();
        for (d, &delta) in RAY_DELTA.iter().enumerate() {
            let mut t = s as i32;
            let mut left = RAY_LEN[s as usize][d];
            let mut screened = false;
            while left > 0 {
                t += delta as i32;
                left -= 1;
                let c = self.cells[t as usize];
                if c == EMPTY {
                    continue;
                }
                if screened {
                    if c == cannon {
                        return true;
                    }
                    break;
                }
                if c == rook || (c == king && d >= 2) {
                    return true;
                }
                screened = true;
            }
        }
        for (from, leg) in HORSE_FROM[s as usize].iter() {
            if self.code(from) == horse && self.code(leg) == EMPTY {
                return true;
            }
        }
        for (from, _) in PAWN_FROM[by.index()][s as usize].iter() {
            if self.code(from) == pawn {
                return true;
            }
        }
        false
    }

    /// Whether some piece of `by` might capture on `s`: a quick necessary test, passed by every
    /// square on which `by` has a pseudo-legal capture (and by some on which it has none).
    pub(crate) fn may_capture_on(&self, s: u8, by: Color) -> bool {
        if self.is_attacked(s, by) {
            return true;
        }
        let king = self.kings[by.index()];
        if king != NO_KING && KING_STEPS[king as usize].iter().any(|(to, _)| to == s) {
            return true;
        }
        // Advisor and elephant steps are symmetric: the squares they reach `s` from are those
        // they reach from `s` (blocking points aside, which only make this test looser).
        let advisor = Piece::new(by, PieceKind::Advisor).code();
        let elephant = Piece::new(by, PieceKind::Elephant).code();
        ADVISOR_STEPS[s as usize]
            .iter()
            .any(|(from, _)| self.cells[from as usize] == advisor)
            || ELEPHANT_STEPS[s as usize]
                .iter()
                .any(|(from, _)| self.cells[from as usize] == elephant)
    }

    /// Whether a piece of `by` that can threaten to win a piece (a chariot, horse, cannon,
    /// advisor or elephant, see [`crate::repetition`]) has a pseudo-legal capture on `s`, which
    /// holds a piece of the other side. Read from `by`'s few pieces, which is much cheaper than
    /// [`Board::is_attacked`]'s walk along every ray out of `s` on the sparse boards of endgames.
    pub(crate) fn attacked_by_chaser(&self, s: u8, by: Color) -> bool {
        self.attackers::<true>(s, by, |kind| {
            !matches!(kind, PieceKind::King | PieceKind::Pawn)
        }) != 0
    }

    /// [`Board::in_check`] read from the attacking side's pieces, like
    /// [`Board::attacked_by_chaser`]: the same answer, cheaper on sparse boards.
    pub(crate) fn in_check_from_pieces(&self, color: Color) -> bool {
        self.attackers::<true>(self.kings[color.index()], color.opponent(), gives_check) != 0
    }

    /// The squares of the pieces that give `color`'s king check (the enemy king facing it on
    /// an open file included).
    pub(crate) fn checkers(&self, color: Color) -> u128 {
        self.attackers::<false>(self.kings[color.index()], color.opponent(), gives_check)
    }

    /// The squares of `by`'s pieces of a kind `kinds` accepts that can capture on `s`: for the
    /// king, facing `s` on an open file (what matters when `s` holds the other king); for the
    /// others, a pseudo-legal capture. With `FIRST`, stops at the first one found.
    #[inline]
    fn attackers<const FIRST: bool>(
        &self,
        s: u8,
        by: Color,
        kinds: impl Fn(PieceKind) -> bool,
    ) -> u128 {
        let all = self.occ[0] | self.occ[1];
        let mut own = self.occ[by.index()];
        let mut found = 0u128;
        while own != 0 {
            let a = own.trailing_zeros() as u8;
            own &= own - 1;
            let Some(piece) = Piece::from_code(self.cells[a as usize]) else {
                continue;
            };
            let kind = piece.kind();
            if !kinds(kind) {
                continue;
            }
            let attacks = match kind {
                PieceKind::Horse => {
                    // One step straight (towards the longer distance: the leg), one diagonally.
                    let (df, dr) = ((s % 9) as i8 - (a % 9) as i8, (s / 9) as i8 - (a / 9) as i8);
                    let leg = match (df.abs(), dr.abs()) {
                        (1, 2) => a as i8 + 9 * dr.signum(),
                        (2, 1) => a as i8 + df.signum(),
                        _ => continue,
                    };
                    self.cells[leg as usize] == EMPTY
                }
                PieceKind::Rook | PieceKind::Cannon | PieceKind::King => {
                    // The king attacks along an open file only (the kings facing each other).
                    let Some(between) = between(a, s) else {
                        continue;
                    };
                    if kind == PieceKind::King && a % 9 != s % 9 {
                        continue;
                    }
                    (between & all).count_ones() == (kind == PieceKind::Cannon) as u32
                }
                PieceKind::Pawn => PAWN_FROM[by.index()][s as usize]
                    .iter()
                    .any(|(from, _)| from == a),
                PieceKind::Advisor => ADVISOR_STEPS[a as usize].iter().any(|(to, _)| to == s),
                PieceKind::Elephant => ELEPHANT_STEPS[a as usize]
                    .iter()
                    .any(|(to, eye)| to == s && self.cells[eye as usize] == EMPTY),
            };
            if attacks {
                found |= bit(a);
                if FIRST {
                    return found;
                }
            }
        }
        found
    }

    /// Plays `m` (which must be pseudo-legal) and returns the captured piece.
    #[inline]
    pub fn make(&mut self, m: Move) -> Option<Piece> {
        let (f, t) = (m.from().index(), m.to().index());
        let pc = self.cells[f];
        let cap = self.cells[t];
        let us = self.side.index();
        self.cells[t] = pc;
        self.cells[f] = EMPTY;
        self.occ[us] ^= bit(f as u8) | bit(t as u8);
        if cap != EMPTY {
            self.occ[us ^ 1] ^= bit(t as u8);
        }
        if pc & 7 == PieceKind::King as u8 {
            self.kings[us] = t as u8;
        }
        self.side = self.side.opponent();
        Piece::from_code(cap)
    }

    /// Takes back `m`, restoring `captured`; the exact inverse of [`Board::make`].
    #[inline]
    pub fn unmake(&mut self, m: Move, captured: Option<Piece>) {
        self.side = self.side.opponent();
        let (f, t) = (m.from().index(), m.to().index());
        let us = self.side.index();
        let pc = self.cells[t];
        self.cells[f] = pc;
        self.occ[us] ^= bit(f as u8) | bit(t as u8);
        match captured {
            Some(c) => {
                self.cells[t] = c.code();
                self.occ[us ^ 1] |= bit(t as u8);
            }
            None => self.cells[t] = EMPTY,
        }
        if pc & 7 == PieceKind::King as u8 {
            self.kings[us] = f as u8;
        }
    }

    /// Appends every pseudo-legal move of the side to move (own king safety not checked).
    pub fn pseudo_moves(&self, out: &mut MoveList) {
        let us = self.side;
        let mut own = self.occ[us.index()];
        while own != 0 {
            let s = own.trailing_zeros() as u8;
            own &= own - 1;
            self.piece_moves(s, out);
        }
    }

    /// Appends the pseudo-legal moves of the piece on `s` (of its own colour, whoever is to
    /// move): the repetition rules ask what a side threatens when it is not its turn.
    pub fn piece_pseudo_moves(&self, s: Square, out: &mut MoveList) {
        if !self.is_empty(s) {
            self.piece_moves(s.index() as u8, out);
        }
    }

    /// Appends the pseudo-legal moves of the piece on `s`, which must hold a piece.
    fn piece_moves(&self, s: u8, out: &mut MoveList) {
        let code = self.cells[s as usize];
        let us = if code & 8 == 0 {
            Color::Red
        } else {
            Color::Black
        };
        let them = us.opponent().index();
        let own_bits = self.occ[us.index()];
        let from = Square::from_u8(s);
        let push_if_free = |to: u8, out: &mut MoveList| {
            if own_bits & bit(to) == 0 {
                out.push(Move::new(from, Square::from_u8(to)));
            }
        };
        match PieceKind::ALL[(code & 7) as usize] {
            PieceKind::King => KING_STEPS[s as usize]
                .iter()
                .for_each(|(t, _)| push_if_free(t, out)),
            PieceKind::Advisor => ADVISOR_STEPS[s as usize]
                .iter()
                .for_each(|(t, _)| push_if_free(t, out)),
            PieceKind::Elephant => {
                for (t, eye) in ELEPHANT_STEPS[s as usize].iter() {
                    if self.cells[eye as usize] == EMPTY {
                        push_if_free(t, out);
                    }
                }
            }
            PieceKind::Horse => {
                for (t, leg) in HORSE_STEPS[s as usize].iter() {
                    if self.cells[leg as usize] == EMPTY {
                        push_if_free(t, out);
                    }
                }
            }
            PieceKind::Pawn => PAWN_STEPS[us.index()][s as usize]
                .iter()
                .for_each(|(t, _)| push_if_free(t, out)),
            PieceKind::Rook => {
                for (d, &delta) in RAY_DELTA.iter().enumerate() {
                    let mut t = s as i32;
                    for _ in 0..RAY_LEN[s as usize][d] {
                        t += delta as i32;
                        let c = self.cells[t as usize];
                        if c == EMPTY {
                            out.push(Move::new(from, Square::from_u8(t as u8)));
                        } else {
                            if self.occ[them] & bit(t as u8) != 0 {
                                out.push(Move::new(from, Square::from_u8(t as u8)));
                            }
                            break;
                        }
                    }
                }
            }
            PieceKind::Cannon => {
                for (d, &delta) in RAY_DELTA.iter().enumerate() {
                    let mut t = s as i32;
                    let mut screened = false;
                    for _ in 0..RAY_LEN[s as usize][d] {
                        t += delta as i32;
                        let c = self.cells[t as usize];
                        if !screened {
                            if c == EMPTY {
                                out.push(Move::new(from, Square::from_u8(t as u8)));
                            } else {
                                screened = true;
                            }
                        } else if c != EMPTY {
                            if self.occ[them] & bit(t as u8) != 0 {
                                out.push(Move::new(from, Square::from_u8(t as u8)));
                            }
                            break;
                        }
                    }
                }
            }
        }
    }

    /// Whether pseudo-legal `m` could expose the mover's king, so that it needs a full check test.
    /// Only moves touching the king's file or rank, vacating a horse-leg point next to the king,
    /// or moving the king itself can change what attacks it.
    #[inline]
    fn may_expose_king(&self, m: Move, king: Square) -> bool {
        let (f, t) = (m.from(), m.to());
        if f == king {
            return true;
        }
        let (kf, kr) = (king.file(), king.rank());
        f.file() == kf
            || f.rank() == kr
            || t.file() == kf
            || t.rank() == kr
            || (f.file().abs_diff(kf) == 1 && f.rank().abs_diff(kr) == 1)
    }

    /// Whether the pseudo-legal move `m` leaves the mover's king safe, that is, is legal.
    /// `in_check` must say whether the side to move is in check now (compute it once per
    /// position); most moves are then decided without playing them.
    #[inline]
    pub fn is_legal_pseudo(&mut self, m: Move, in_check: bool) -> bool {
        let us = self.side;
        let king = Square::from_u8(self.kings[us.index()]);
        if !in_check && !self.may_expose_king(m, king) {
            return true;
        }
        let cap = self.make(m);
        let ok = !self.in_check(us);
        self.unmake(m, cap);
        ok
    }

    /// Appends every legal move of the side to move.
    pub fn legal_moves_into(&self, out: &mut MoveList) {
        let mut pseudo = MoveList::new();
        self.pseudo_moves(&mut pseudo);
        let us = self.side;
        let king = Square::from_u8(self.kings[us.index()]);
        let checked = self.in_check(us);
        let mut scratch = self.clone();
        for &m in pseudo.iter() {
            if checked || self.may_expose_king(m, king) {
                let cap = scratch.make(m);
                let ok = !scratch.in_check(us);
                scratch.unmake(m, cap);
                if !ok {
                    continue;
                }
            }
            out.push(m);
        }
    }

    /// Every legal move of the side to move.
    pub fn legal_moves(&self) -> MoveList {
        let mut out = MoveList::new();
        self.legal_moves_into(&mut out);
        out
    }

    /// Number of legal moves, without collecting them.
    pub fn count_legal_moves(&self) -> usize {
        self.legal_moves().len()
    }

    /// Whether the side to move has at least one legal move (without one it has lost).
    pub fn has_legal_move(&self) -> bool {
        let mut pseudo = MoveList::new();
        self.pseudo_moves(&mut pseudo);
        let us = self.side;
        let mut scratch = self.clone();
        pseudo.iter().any(|&m| {
            let cap = scratch.make(m);
            let ok = !scratch.in_check(us);
            scratch.unmake(m, cap);
            ok
        })
    }

    /// Whether `m` is a legal move here.
    pub fn is_legal_move(&self, m: Move) -> bool {
        self.legal_moves().iter().any(|&x| x == m)
    }

    /// Appends every non-capturing move the side not to move could just have played to reach this
    /// position, as the forward move (origin, arrival). The origin is empty now and the geometry is
    /// checked; whether the position before the move was legal is not (see [`Board::legal_unmoves`]).
    pub fn unmoves(&self, out: &mut MoveList) {
        self.retractions(out, false);
    }

    /// Appends every capturing move the side not to move could just have played: the forward move
    /// whose arrival square held a piece of the side to move, now taken. Pair each with a kind from
    /// [`Board::uncapture_kinds`] to get the position before.
    pub fn uncapture_moves(&self, out: &mut MoveList) {
        self.retractions(out, true);
    }

    fn retractions(&self, out: &mut MoveList, captures: bool) {
        let mover = self.side.opponent();
        let mut own = self.occ[mover.index()];
        while own != 0 {
            let q = own.trailing_zeros() as u8;
            own &= own - 1;
            let to = Square::from_u8(q);
            let push_if_empty = |p: u8, out: &mut MoveList| {
                if self.cells[p as usize] == EMPTY {
                    out.push(Move::new(Square::from_u8(p), to));
                }
            };
            let code = self.cells[q as usize];
            match PieceKind::ALL[(code & 7) as usize] {
                PieceKind::King => KING_STEPS[q as usize]
                    .iter()
                    .for_each(|(p, _)| push_if_empty(p, out)),
                PieceKind::Advisor => ADVISOR_STEPS[q as usize]
                    .iter()
                    .for_each(|(p, _)| push_if_empty(p, out)),
                PieceKind::Elephant => {
                    for (p, eye) in ELEPHANT_STEPS[q as usize].iter() {
                        if self.cells[eye as usize] == EMPTY {
                            push_if_empty(p, out);
                        }
                    }
                }
                PieceKind::Horse => {
                    for (p, leg) in HORSE_FROM[q as usize].iter() {
                        if self.cells[leg as usize] == EMPTY {
                            push_if_empty(p, out);
                        }
                    }
                }
                PieceKind::Pawn => PAWN_FROM[mover.index()][q as usize]
                    .iter()
                    .for_each(|(p, _)| push_if_empty(p, out)),
                PieceKind::Rook => {
                    for (d, &delta) in RAY_DELTA.iter().enumerate() {
                        let mut t = q as i32;
                        for _ in 0..RAY_LEN[q as usize][d] {
                            t += delta as i32;
                            if self.cells[t as usize] != EMPTY {
                                break;
                            }
                            out.push(Move::new(Square::from_u8(t as u8), to));
                        }
                    }
                }
                PieceKind::Cannon => {
                    for (d, &delta) in RAY_DELTA.iter().enumerate() {
                        let mut t = q as i32;
                        let mut screened = false;
                        for _ in 0..RAY_LEN[q as usize][d] {
                            t += delta as i32;
                            let empty = self.cells[t as usize] == EMPTY;
                            if !empty {
                                if screened || !captures {
                                    break;
                                }
                                screened = true;
                            } else if screened == captures {
                                out.push(Move::new(Square::from_u8(t as u8), to));
                            }
                        }
                    }
                }
            }
        }
    }

    /// The kinds of the side to move that could have stood on `s` and been captured there, by
    /// legal squares and by how many of each kind the side still has room for.
    pub fn uncapture_kinds(&self, s: Square) -> impl Iterator<Item = PieceKind> + '_ {
        let victim = self.side;
        PieceKind::CAPTURABLE.into_iter().filter(move |&k| {
            s.is_legal_for(victim, k) && self.count(victim, k) < k.max_count() as usize
        })
    }

    /// Takes back the forward move `m` (a non-capture when `captured` is `None`): the piece on
    /// `m.to()` returns to `m.from()`, a captured piece of the side to move reappears on `m.to()`,
    /// and the turn passes back to the mover.
    pub fn retract(&mut self, m: Move, captured: Option<PieceKind>) {
        let victim = self.side;
        self.unmake(m, captured.map(|k| Piece::new(victim, k)));
    }

    /// Every legal position this one can be reached from by one non-capturing move, with that move.
    pub fn legal_unmoves(&self) -> Vec<(Move, Board)> {
        let mut list = MoveList::new();
        self.unmoves(&mut list);
        list.iter()
            .filter_map(|&m| {
                let mut b = self.clone();
                b.retract(m, None);
                (!b.opponent_in_check()).then_some((m, b))
            })
            .collect()
    }

    /// Every legal position this one can be reached from by one capture, with the move and the kind
    /// of piece it captured.
    pub fn legal_uncaptures(&self) -> Vec<(Move, PieceKind, Board)> {
        let mut list = MoveList::new();
        self.uncapture_moves(&mut list);
        let mut out = Vec::new();
        for &m in list.iter() {
            for k in self.uncapture_kinds(m.to()) {
                let mut b = self.clone();
                b.retract(m, Some(k));
                if !b.opponent_in_check() {
                    out.push((m, k, b));
                }
            }
        }
        out
    }

    /// The left-right mirror image (same side to move).
    pub fn mirrored(&self) -> Board {
        let mut b = Board::empty(self.side);
        for (s, p) in self.pieces() {
            b.put(s.mirror(), p);
        }
        b
    }

    /// The board turned by 180 degrees with the colours swapped, side to move included: Red's
    /// pieces become Black's on the opposite points.
    pub fn rotated(&self) -> Board {
        let mut b = Board::empty(self.side.opponent());
        for (s, p) in self.pieces() {
            b.put(s.rotate(), p.flipped());
        }
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Positions from the perft table and a few thousand reached from them by pseudo-random
    /// legal moves (a fixed linear congruential sequence, so the test is the same every run).
    fn positions() -> Vec<Board> {
        let mut out = Vec::new();
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        for line in include_str!("../tests/data/perft.tsv").lines().skip(1) {
            let Some(fen) = line.split('\t').nth(1) else {
                continue;
            };
            let mut board = crate::parse_fen(fen).expect("a perft position");
            for _ in 0..60 {
                out.push(board.clone());
                let moves = board.legal_moves();
                if moves.is_empty() {
                    break;
                }
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let m = moves
                    .iter()
                    .nth((seed >> 33) as usize % moves.len())
                    .copied();
                board.make(m.expect("a move"));
            }
        }
        out
    }

    /// The quick capturer test says yes exactly where a chariot, horse or cannon has a
    /// pseudo-legal capture, and the quick check test agrees with the rays', on crowded boards
    /// and on the sparse ones of endgames (the same positions with all but a few pieces taken
    /// off).
    #[test]
    fn attacks_read_from_the_pieces_agree_with_moves_and_rays() {
        let mut tested = 0;
        let mut checks = 0;
        let mut boards = positions();
        let sparse: Vec<Board> = boards
            .iter()
            .enumerate()
            .map(|(i, b)| {
                let mut b = b.clone();
                for (n, (sq, p)) in b.clone().pieces().enumerate() {
                    if p.kind() != PieceKind::King && (n + i) % 4 != 0 {
                        b.remove(sq);
                    }
                }
                b
            })
            .collect();
        boards.extend(sparse);
        for b in boards {
            for by in Color::ALL {
                let mut captures = 0u128;
                for (sq, p) in b.pieces() {
                    let kind = p.kind();
                    if p.color() == by && !matches!(kind, PieceKind::King | PieceKind::Pawn) {
                        let mut moves = MoveList::new();
                        b.piece_pseudo_moves(sq, &mut moves);
                        for m in moves.iter().filter(|m| !b.is_empty(m.to())) {
                            captures |= bit(m.to().index() as u8);
                        }
                    }
                }
                checks += b.in_check(by.opponent()) as usize;
                assert_eq!(
                    b.in_check_from_pieces(by.opponent()),
                    b.in_check(by.opponent()),
                    "{b:?}: is {:?} in check?",
                    by.opponent()
                );
                for (sq, p) in b.pieces().filter(|(_, p)| p.color() != by) {
                    tested += 1;
                    let s = sq.index() as u8;
                    assert_eq!(
                        b.attacked_by_chaser(s, by),
                        captures & bit(s) != 0,
                        "{b:?}: {by:?} on {sq:?} ({p:?})"
                    );
                }
            }
        }
        assert!(tested > 50_000, "only {tested} squares tested");
        assert!(checks > 500, "only {checks} checks among the boards");
    }

    #[test]
    fn may_capture_on_passes_every_square_a_capture_reaches() {
        let mut tested = 0;
        for board in positions() {
            for side in Color::ALL {
                let mut b = board.clone();
                b.set_side_to_move(side);
                let mut moves = MoveList::new();
                b.pseudo_moves(&mut moves);
                for m in moves.iter().filter(|m| !b.is_empty(m.to())) {
                    tested += 1;
                    assert!(
                        b.may_capture_on(m.to().index() as u8, side),
                        "{b:?}: {side:?} captures on {:?} but the quick test says it cannot",
                        m.to()
                    );
                }
            }
        }
        assert!(tested > 5_000, "only {tested} captures tested");
    }
}
