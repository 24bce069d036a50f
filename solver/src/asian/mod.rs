//! The rule phase of the Asian rule set: after plain retrograde analysis has resolved every
//! position that ends in mate, decide which of the rest the repetition rules win.
//!
//! The phase works in rounds over the undecided positions (see `docs/repetition-rules.md`):
//! - round 0 takes up captures into rule-decided positions of other tables (and exits, pawn
//!   advances into rule-decided positions of slices solved by earlier jobs, which are as
//!   irreversible as captures) and propagates them backwards (a position is won with one move into a position lost for the opponent, lost when
//!   every move leads to a position won for the opponent);
//! - every later round finds the positions where one side is *forced to offend*: each of its
//!   moves either loses (leads to a position already won for the other side) or is a check (or
//!   a chase of one piece) into an undecided position. With the positions around them they form
//!   a game graph, on which the rule engine ([`crate::rules::traps`]) finds the traps: the forced
//!   positions in which the offender cannot escape and the other side can keep it trapped
//!   without offending as much ([`search`]). Those positions are lost by rule, 0 plies away;
//!   backward propagation level by level gives the positions leading to them their values, one
//!   ply per level ([`levels`]), so that every value is consistent with its successors one ply
//!   deep.
//!
//! Rounds stop when one finds no trap; what is left is a draw.
//!
//! Memory: the phase keeps its bookkeeping in the two-byte states themselves (an undecided
//! state has eight flag bits and a three-bit witness, which four of the flags' bits extend on
//! the positions that cannot carry those flags), and builds explicit graphs only for one
//! batch of connected components of the trap graph at a time. Every step is a fixed point or a
//! level of a breadth-first propagation whose writes do not depend on their order, so the result
//! is the same bit for bit for any thread count.

mod levels;
mod search;

use crate::CHUNK_SLOTS;
use crate::capture::ExitValues;
use crate::position::SlotPosition;
use crate::solve::{Progress, SolveError, Solver, capture_holds, is_unresolved};
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicU16, AtomicU64};
use xiangqi::repetition::{MoveClass, MoveClasses};
use xiangqi::{Board, Color, Move, MoveList, Square};
use xqtb_core::{Probe, Rule, RuleValue, Value};

/// State of a position no phase has decided yet (a draw if it stays so); the low bits hold the
/// flags and the witness below.
pub(crate) const UNDECIDED: u16 = Value::FIRST_FREE_CODE;
/// The loss levels' witness: three bits (0, 1 and 10) holding a hash ([`witness_hash`]; 0 for
/// none) of the slot of one successor that is not won for the opponent, who moves there. A
/// position becomes a candidate of a loss level only when the position just won has that hash:
/// otherwise the witness still keeps it from losing, and its test would fail. Set by the
/// forced-to-offend test (a move into an undecided position) and by every failed candidate
/// test; since a position is tested again whenever a successor with its witness's hash is won,
/// the witness is never stale. A position without a role in the trap graph (most of them)
/// extends the hash with the four bits of [`ROLE_FLAGS`] ([`witness_extra`]), so that another
/// successor shares it one time in 96 rather than one in 6. On KRNvKR the candidate tests fall
/// from 15.9 M (no witness) to 10.7 M (three bits) and 9.0 M (seven).
const WITNESS: u16 = 1 << 0 | 1 << 1 | 1 << 10;
/// A capture does not lose (it draws): the position can be won, never lost. The one witness
/// value no hash takes: such a position is never a candidate and never tested for a witness.
const HOLDS: u16 = WITNESS;
/// A candidate of the current loss level. Shares its bit with [`REVIVED`]: candidates live
/// within a loss level, revived positions within a trap search.
const CAND: u16 = REVIVED;
/// A successor was decided since the last trap search: whether it is forced to offend, and
/// the traps around it, must be looked at again.
const TOUCHED: u16 = 1 << 2;
/// Its side to move is forced to offend (stays so while undecided: successors are only ever
/// decided as wins for the other side, which keeps every move an offence or a loss).
const FORCED: u16 = 1 << 3;
/// In the trap search: may be a trapped offender position.
const OFFENDER: u16 = 1 << 4;
/// In the trap search: may be a position of the winner inside a trap.
const WINNER: u16 = 1 << 5;
/// In the trap search's safety pass: gained (while roles are given back) or lost (while they
/// are taken) [`WINNER`] in the last wave, so its predecessors are to be looked at.
const WAVE_WINNER: u16 = 1 << 6;
/// In the trap search's safety pass: gained or lost [`OFFENDER`] in the last wave.
const WAVE_OFFENDER: u16 = 1 << 7;
/// Some quiet move leads here from a position marked [`FORCED`], set when that one is marked:
/// the trap search's winner role without a pass over every forced position's moves in every
/// round. It may outlast that position (decided later), harmlessly: no offender position leads
/// there, so no trap runs through it.
const ROLE_WINNER: u16 = 1 << 8;
/// In the trap search's safety pass: given a role back this round, so whether it keeps it is
/// to be checked.
const REVIVED: u16 = 1 << 9;
/// Every bit an undecided state may carry. All of them at once would be the illegal code: a
/// position that holds is never forced to offend, so that never happens.
const FLAGS: u16 = 0x7FF;
const _: () = assert!(UNDECIDED & FLAGS == 0 && UNDECIDED | FLAGS == Value::ILLEGAL_CODE);
/// The roles in the trap graph: a position with neither has none of [`ROLE_FLAGS`].
const ROLES: u16 = FORCED | ROLE_WINNER;
/// The flags only a position with a role carries (see [`flagged`]); on the others their bits
/// (4 to 7) extend the witness.
const ROLE_FLAGS: u16 = OFFENDER | WINNER | WAVE_WINNER | WAVE_OFFENDER;
const _: () = assert!(ROLE_FLAGS == 0xF << 4);
// The flags and the witness are apart and fill the bits.
const _: () = {
    let all = [
        WITNESS,
        TOUCHED,
        FORCED,
        OFFENDER,
        WINNER,
        WAVE_WINNER,
        WAVE_OFFENDER,
        ROLE_WINNER,
        REVIVED,
    ];
    let (mut union, mut bits, mut i) = (0u16, 0u32, 0);
    while i < all.len() {
        union |= all[i];
        bits += all[i].count_ones();
        i += 1;
    }
    assert!(union == FLAGS && bits == FLAGS.count_ones());
};

/// Whether a state is undecided (whatever its flags): a code from [`UNDECIDED`] up to, not
/// including, the illegal code.
#[inline]
pub(crate) fn is_undecided(c: u16) -> bool {
    c.wrapping_sub(UNDECIDED) < FLAGS
}

/// Whether an undecided state [`HOLDS`].
#[inline]
fn holds(c: u16) -> bool {
    c & WITNESS == HOLDS
}

/// The witness value of an undecided state: 0 for none, else a [`witness_hash`].
#[inline]
fn witness(c: u16) -> u16 {
    (c & 3) | (c >> 8 & 4)
}

/// `c` with witness value `w`.
#[inline]
fn with_witness(c: u16, w: u16) -> u16 {
    c & !WITNESS | (w & 3) | (w & 4) << 8
}

/// The witness value of a successor's job slot: 1 to 6.
#[inline]
fn witness_hash(q: u64) -> u16 {
    (q % 6) as u16 + 1
}

/// The witness's extension for a successor's job slot, on a position without a role: 0 to 15.
#[inline]
fn witness_extra(q: u64) -> u16 {
    (q / 6 % 16) as u16
}

/// Whether a state has a role in the trap graph ([`ROLES`]).
#[inline]
fn has_role(c: u16) -> bool {
    c & ROLES != 0
}

/// Whether a state carries any of `flags` (of [`ROLE_FLAGS`] or [`ROLES`]): the bits of
/// [`ROLE_FLAGS`] are flags only on a position with a role.
#[inline]
fn flagged(c: u16, flags: u16) -> bool {
    c & flags != 0 && has_role(c)
}

/// `c` (undecided, not holding) with the witness of the successor of job slot `q` (`None`:
/// no witness), extended when `c` has no role.
#[inline]
fn with_witness_of(c: u16, q: Option<u64>) -> u16 {
    let (w, x) = q.map_or((0, 0), |q| (witness_hash(q), witness_extra(q)));
    let c = with_witness(c, w);
    if has_role(c) {
        c
    } else {
        c & !ROLE_FLAGS | x << 4
    }
}

/// Whether a position of state `c` (undecided) may lose now that the successor of job slot `q`
/// is won: it has no witness, or one that may be that successor.
#[inline]
fn may_lose_by(c: u16, q: u64) -> bool {
    let w = witness(c);
    w == 0 || (w == witness_hash(q) && (has_role(c) || (c & ROLE_FLAGS) >> 4 == witness_extra(q)))
}

/// `c` given [`FORCED`] or [`ROLE_WINNER`]: on a position without a role, the bits that extended
/// its witness become role flags (none set).
#[inline]
fn with_role(c: u16, role: u16) -> u16 {
    if has_role(c) {
        c | role
    } else {
        c & !ROLE_FLAGS | role
    }
}

/// A table entry: side to move and slot.
type Pos = (Color, u64);

/// Slots per block of a [`Marks`] word: a chunk's 64 bits mark its 64 blocks.
const MARK_SLOTS: u64 = CHUNK_SLOTS / 64;

/// Per chunk (as [`Solver::chunk_of`]), which of its 64 blocks of slots hold an entry to look
/// at. The phase's levels and waves decide few positions each, scattered over the table: with a
/// mark per chunk, as the retrograde solver keeps, every level read most of the table (on
/// KRNvKR the levels spent more time finding their positions than deciding them).
struct Marks(Vec<AtomicU64>);

impl Marks {
    fn new(solver: &Solver) -> Marks {
        Marks((0..2 * solver.chunks).map(|_| AtomicU64::new(0)).collect())
    }

    /// Marks the block of `(side, slot)`.
    #[inline]
    fn mark(&self, solver: &Solver, side: Color, slot: u64) {
        let word = &self.0[solver.chunk_of(side, slot as usize)];
        let bit = 1u64 << (slot % CHUNK_SLOTS / MARK_SLOTS);
        if word.load(Relaxed) & bit == 0 {
            word.fetch_or(bit, Relaxed);
        }
    }

    /// Marks every block.
    fn fill(&self) {
        self.0.par_iter().for_each(|w| w.store(!0, Relaxed));
    }

    /// Takes every mark.
    fn clear(&self) {
        self.0.par_iter().for_each(|w| w.store(0, Relaxed));
    }
}

/// The slots of the marked blocks of one chunk, in order.
struct MarkedSlots {
    blocks: u64,
    start: u64,
    end: u64,
    block: std::ops::Range<u64>,
}

impl Iterator for MarkedSlots {
    type Item = u64;

    #[inline]
    fn next(&mut self) -> Option<u64> {
        loop {
            if let Some(slot) = self.block.next() {
                return Some(slot);
            }
            if self.blocks == 0 {
                return None;
            }
            let b = self.blocks.trailing_zeros() as u64;
            self.blocks &= self.blocks - 1;
            let lo = self.start + b * MARK_SLOTS;
            self.block = lo..(lo + MARK_SLOTS).min(self.end);
        }
    }
}

/// What the phase needs to look at positions and their moves.
struct Phase<'a> {
    solver: &'a Solver<'a>,
    /// The values of the moves that leave the job (captures and exits).
    exits: ExitValues<'a>,
    /// Positions decided at a level, by the parity of the level (read at the next one); not the
    /// losses a loss level's tests find, which give their wins at once.
    decided: [Marks; 2],
    /// Positions marked [`CAND`].
    candidates: Marks,
    /// Positions with a [`WAVE_WINNER`], a [`WAVE_OFFENDER`] flag.
    waves: [Marks; 2],
    /// Positions with a [`REVIVED`] flag.
    revived: Marks,
    /// Positions with a [`TOUCHED`] flag: late rounds touch few positions, and the passes that
    /// look at them would otherwise read the whole table every round.
    touched: Marks,
    /// Positions with a role in the trap graph ([`FORCED`] or [`ROLE_WINNER`]) as the last
    /// search that numbered the graph's nodes counted them (a search that walks from touched
    /// nodes does not count): what [`search`] weighs the touched ones against.
    roles: AtomicU64,
}

/// A position's best value for its side to move over the moves whose value is known, and
/// whether some move leads to an undecided or drawn position.
struct Look {
    best: Value,
    open: bool,
    /// The best over the moves leaving the job (captures and exits) alone.
    best_leaving: Value,
}

/// How [`Phase::forced`] and [`Phase::mark_forced`] give the trap search's roles along with
/// [`FORCED`] and [`ROLE_WINNER`].
#[derive(Clone, Copy, PartialEq, Eq)]
enum Marking {
    /// The first round (every undecided position tested, no role given yet): [`OFFENDER`] and
    /// [`WINNER`] come with them, so that the search does not read the table once more to give
    /// them.
    First,
    /// Later rounds, whose trap search may keep the last round's roles: a position that gets
    /// [`ROLE_WINNER`] is given the winner role back ([`search::revive`]); one marked forced
    /// gets its offender role as a touched position ([`search`]).
    Later,
}

impl Marking {
    /// The flags a position found forced to offend gets.
    fn forced_flags(self) -> u16 {
        match self {
            Marking::First => FORCED | OFFENDER,
            Marking::Later => FORCED,
        }
    }

    /// The flags a position a forced one's move leads to gets.
    fn winner_flags(self) -> u16 {
        match self {
            Marking::First => ROLE_WINNER | WINNER,
            Marking::Later => ROLE_WINNER,
        }
    }
}

/// What [`Phase::look_if_lost`] found.
enum IfLost {
    /// Every legal move staying in the job leads to a position won for the opponent; the
    /// position's [`Look`].
    AllWon(Look),
    /// The move into this job slot (of the opponent) does not.
    Open(usize),
}

impl<'a> Phase<'a> {
    fn states(&self, side: Color) -> &[AtomicU16] {
        &self.solver.state[side.index()]
    }

    fn code(&self, (side, slot): Pos) -> u16 {
        self.states(side)[slot as usize].load(Relaxed)
    }

    /// Records that `(side, slot)` was decided at `level`.
    #[inline]
    fn note_decided(&self, side: Color, slot: u64, level: u16) {
        self.decided[level as usize % 2].mark(self.solver, side, slot);
    }

    /// Runs `f(chunk, side, first slot, end)` over every chunk of both sides in parallel.
    fn par_over_chunks<T: Send>(
        &self,
        f: impl Fn(usize, Color, u64, u64) -> Result<T, SolveError> + Sync,
    ) -> Result<Vec<T>, SolveError> {
        let size = self.solver.len();
        let chunks = self.solver.chunks;
        (0..2 * chunks)
            .into_par_iter()
            .map(|c| {
                let side = if c < chunks { Color::Red } else { Color::Black };
                let start = (c % chunks) * CHUNK_SLOTS;
                f(c as usize, side, start, (start + CHUNK_SLOTS).min(size))
            })
            .collect()
    }

    /// Runs `f` in parallel over the slots of the blocks `marks` marks, a chunk at a time, with
    /// a position to load slots into, taking the marks; a chunk without any gives the default.
    fn par_marked<T: Send + Default>(
        &self,
        marks: &Marks,
        f: impl Fn(Color, MarkedSlots, &mut SlotPosition) -> Result<T, SolveError> + Sync,
    ) -> Result<Vec<T>, SolveError> {
        self.par_in_marks(marks, true, f)
    }

    /// [`Phase::par_marked`], taking the marks only when `take`.
    fn par_in_marks<T: Send + Default>(
        &self,
        marks: &Marks,
        take: bool,
        f: impl Fn(Color, MarkedSlots, &mut SlotPosition) -> Result<T, SolveError> + Sync,
    ) -> Result<Vec<T>, SolveError> {
        self.par_over_chunks(|c, side, start, end| {
            let blocks = if take {
                marks.0[c].swap(0, Relaxed)
            } else {
                marks.0[c].load(Relaxed)
            };
            if blocks == 0 {
                return Ok(T::default());
            }
            let slots = MarkedSlots {
                blocks,
                start,
                end,
                block: 0..0,
            };
            f(side, slots, &mut self.solver.position())
        })
    }

    /// Runs `f` over every chunk of both sides in parallel, with a position to load slots
    /// into; returns what it returned, chunk by chunk.
    fn par_chunks<T: Send>(
        &self,
        f: impl Fn(Color, std::ops::Range<u64>, &mut SlotPosition) -> Result<T, SolveError> + Sync,
    ) -> Result<Vec<T>, SolveError> {
        self.par_over_chunks(|_, side, start, end| f(side, start..end, &mut self.solver.position()))
    }

    /// The value, for the mover, of the move `m` leaving the job from the loaded position (a
    /// capture or an exit); `Illegal` when the move is not legal. Rule values there are settled
    /// facts of a job solved before, round 0 here.
    fn exit_value(&self, pos: &mut SlotPosition, m: Move) -> Result<Value, SolveError> {
        let v = self.exits.after(pos, m)?;
        Ok(match v {
            Value::Illegal => Value::Illegal,
            v => v.as_exit().for_mover(),
        })
    }

    /// Looks at every legal move of the loaded position.
    fn look(&self, pos: &mut SlotPosition) -> Result<Look, SolveError> {
        let side = pos.board.side_to_move();
        let them = side.opponent();
        let mut moves = MoveList::new();
        pos.board.pseudo_moves(&mut moves);
        let mut best = Value::Illegal;
        let mut best_leaving = Value::Illegal;
        let mut open = false;
        for &m in moves.iter() {
            let v = if let Some(q) = pos.stays(m) {
                match self.code((them, q as u64)) {
                    Value::ILLEGAL_CODE => continue,
                    c if is_undecided(c) => {
                        open = true;
                        Value::Draw
                    }
                    c => Value::decode(c).for_mover(),
                }
            } else {
                match self.exit_value(pos, m)? {
                    Value::Illegal => continue,
                    v => {
                        open |= !v.is_loss();
                        if v.preference() > best_leaving.preference() {
                            best_leaving = v;
                        }
                        v
                    }
                }
            };
            if v.preference() > best.preference() {
                best = v;
            }
        }
        Ok(Look {
            best,
            open,
            best_leaving,
        })
    }

    /// [`Phase::look`] at a position (undecided, its captures and exits all losing) when every
    /// legal move staying in the job leads to a position won for the opponent; otherwise the
    /// first other such move's successor. A successor whose code is one of `unsettled` counts as
    /// undecided: it was won at a later level than the one being tested. The moves leaving the
    /// job are looked at last, only when the others all lose.
    fn look_if_lost(
        &self,
        pos: &mut SlotPosition,
        unsettled: [u16; 2],
    ) -> Result<IfLost, SolveError> {
        let side = pos.board.side_to_move();
        let them = self.states(side.opponent());
        // The king's moves last: a candidate is tested when the successor its witness named was
        // won, and its next open move is less often a king's (on KRNvKR the tests read 4% fewer
        // successors). Slots are computed one by one: prefetching every successor's state first
        // did not pay (measured on KRNvKR: levels 2.8-2.9 s wall before, 3.0-3.1 with it).
        let mut moves = MoveList::new();
        let (king, mut others) = king_and_others(&pos.board, side);
        while let Some(s) = pop_square(&mut others) {
            pos.board.piece_pseudo_moves(s, &mut moves);
        }
        if let Some(k) = king {
            pos.board.piece_pseudo_moves(k, &mut moves);
        }
        let mut best = Value::Illegal;
        for q in moves.iter().filter_map(|&m| pos.stays(m)) {
            let c = them[q].load(Relaxed);
            if c == Value::ILLEGAL_CODE {
                continue;
            }
            if is_undecided(c) || unsettled.contains(&c) || !Value::decode(c).is_win() {
                return Ok(IfLost::Open(q));
            }
            let v = Value::decode(c).for_mover();
            if v.preference() > best.preference() {
                best = v;
            }
        }
        let mut open = false;
        let mut best_leaving = Value::Illegal;
        for &m in moves.iter() {
            if !pos.leaves(m) {
                continue;
            }
            match self.exit_value(pos, m)? {
                Value::Illegal => {}
                v => {
                    open |= !v.is_loss();
                    if v.preference() > best_leaving.preference() {
                        best_leaving = v;
                    }
                }
            }
        }
        if best_leaving.preference() > best.preference() {
            best = best_leaving;
        }
        Ok(IfLost::AllWon(Look {
            best,
            open,
            best_leaving,
        }))
    }

    /// Whether the side to move of the loaded position (undecided, its captures and exits all
    /// losing) is forced to offend: every legal move in the job into an undecided position is a
    /// check, or every one chases one and the same piece, and every other move loses. When it
    /// is, the positions those moves lead to get [`ROLE_WINNER`], and with it the search's
    /// [`WINNER`] role as `marking` says. Also returns a witness for the loss levels (`None` for
    /// none): the slot of a move into an undecided position. `moves` and `open` are scratch
    /// space.
    fn forced(
        &self,
        pos: &mut SlotPosition,
        marking: Marking,
        moves: &mut MoveList,
        open: &mut Vec<usize>,
    ) -> (bool, Option<u64>) {
        let side = pos.board.side_to_move();
        let them = self.states(side.opponent());
        // The king's moves first: they are seldom checks or chases, and lead to an undecided
        // position more often than the other pieces' (on KRNvKR a quarter fewer successors are
        // looked at before the first idle move). The other pieces' moves are generated only
        // when no king move settles it. Slots are computed one by one: most positions have
        // such a move among their first few, so computing every successor first does not pay.
        let (king, mut others) = king_and_others(&pos.board, side);
        moves.clear();
        if let Some(k) = king {
            pos.board.piece_pseudo_moves(k, moves);
        }
        // The positions its moves into undecided positions lead to (decided successors are wins
        // for the opponent, or this position would be decided).
        open.clear();
        let mut checks = true;
        let mut chased = !0u128;
        // Classified on the position's own board: a classifier's copy of it cost more than the
        // classes of most positions' one or two moves.
        let mut classes = MoveClasses::new(side);
        let mut next = 0;
        loop {
            if next == moves.len() {
                let Some(s) = pop_square(&mut others) else {
                    break;
                };
                pos.board.piece_pseudo_moves(s, moves);
                continue;
            }
            let m = moves[next];
            next += 1;
            let Some(q) = pos.stays(m) else { continue };
            if !is_undecided(them[q].load(Relaxed)) {
                continue;
            }
            open.push(q);
            match classes.class(&mut pos.board, m) {
                MoveClass::Check => chased = 0,
                MoveClass::Chase(sq) => {
                    checks = false;
                    chased &= sq.0;
                }
                MoveClass::Idle => return (false, Some(q as u64)),
            }
            if !checks && chased == 0 {
                return (false, Some(q as u64));
            }
        }
        // A position without a move into an undecided one would be decided.
        let Some(&first) = open.first() else {
            return (false, None);
        };
        // Forced: its moves into undecided positions lead to positions of the winner role.
        for &q in open.iter() {
            let a = &them[q];
            let c = a.load(Relaxed);
            if c & ROLE_WINNER == 0 {
                let role = marking.winner_flags();
                let _ = a.fetch_update(Relaxed, Relaxed, |c| Some(with_role(c, role)));
                if marking == Marking::Later {
                    search::revive(self, side.opponent(), q as u64, WINNER);
                }
            }
        }
        (true, Some(first as u64))
    }

    /// Marks as forced to offend the undecided positions that can lose (all of them, or only
    /// those touched since the last search). Returns how many it marked.
    fn mark_forced(&self, all: bool) -> Result<u64, SolveError> {
        let marking = if all { Marking::First } else { Marking::Later };
        let role = marking.forced_flags();
        let test = |side: Color, slots: &mut dyn Iterator<Item = u64>, pos: &mut SlotPosition| {
            let states = self.states(side);
            let mut n = 0u64;
            let mut open = Vec::with_capacity(xiangqi::MAX_MOVES);
            let mut moves = MoveList::new();
            for slot in slots {
                let state = &states[slot as usize];
                let c = state.load(Relaxed);
                if !is_undecided(c)
                    || holds(c)
                    || c & FORCED != 0
                    || !(all || c & TOUCHED != 0)
                    || !pos.load(slot, side)
                {
                    continue;
                }
                let (forced, q) = self.forced(pos, marking, &mut moves, &mut open);
                let update = |c: u16| {
                    let c = if forced { with_role(c, role) } else { c };
                    with_witness_of(c, q)
                };
                if update(c) != c {
                    // Other positions' tests may give this one a role meanwhile.
                    let _ = state.fetch_update(Relaxed, Relaxed, |c| Some(update(c)));
                }
                n += forced as u64;
            }
            Ok(n)
        };
        let counts = if all {
            self.par_chunks(|side, mut slots, pos| test(side, &mut slots, pos))?
        } else {
            self.par_in_marks(&self.touched, false, |side, mut slots, pos| {
                test(side, &mut slots, pos)
            })?
        };
        Ok(counts.into_iter().sum())
    }

    /// Round 0's start: the positions with a capture into another table's rule-decided
    /// position, or an exit into one of another slice. Sets [`HOLDS`] exactly (a capture or exit
    /// draws, or wins by rule) and returns the positions whose value through such moves falls
    /// due at a level, by level.
    fn capture_exits(&self) -> Result<BTreeMap<u16, Vec<Pos>>, SolveError> {
        let found = self.par_chunks(|side, slots, pos| {
            let states = self.states(side);
            let mut out = Vec::new();
            for slot in slots {
                let c = states[slot as usize].load(Relaxed);
                if !is_undecided(c) || !holds(c) || !pos.load(slot, side) {
                    continue;
                }
                let look = self.look(pos)?;
                if look.best_leaving.is_loss() {
                    // No witness yet.
                    states[slot as usize].fetch_and(!WITNESS, Relaxed);
                }
                if (look.best.is_win() || (look.best.is_loss() && !look.open))
                    && look.best.rule().is_some()
                {
                    out.push((look.best.rule_plies().expect("a rule value"), (side, slot)));
                }
            }
            Ok(out)
        })?;
        let mut pending: BTreeMap<u16, Vec<Pos>> = BTreeMap::new();
        for (level, p) in found.into_iter().flatten() {
            pending.entry(level).or_default().push(p);
        }
        Ok(pending)
    }
}

/// The square of `side`'s king, and the squares of its other pieces (a bit each): the tests
/// that look at moves one piece at a time take the king's apart.
fn king_and_others(board: &Board, side: Color) -> (Option<Square>, u128) {
    let king = board.king_square(side);
    let others = board.occupancy(side) & !king.map_or(0, |k| 1u128 << k.index());
    (king, others)
}

/// Takes the lowest square out of `squares` (a bit each).
fn pop_square(squares: &mut u128) -> Option<Square> {
    if *squares == 0 {
        return None;
    }
    let s = squares.trailing_zeros() as usize;
    *squares &= *squares - 1;
    Some(Square::from_index(s).expect("a square of the board"))
}

/// Whether `side` has a piece that can check or chase.
fn has_attacker(index: &xqtb_core::TableIndex, side: Color) -> bool {
    index
        .piece_list()
        .iter()
        .any(|p| p.color() == side && p.kind().is_attacker())
}

/// Whether any table `deps` holds in memory for this table's captures has a rule value (or the
/// dependencies are not in memory, so it cannot be told), or the job has exits (pawn advances
/// into slices outside it: a `Probe` does not hand out parts to look into, so they may).
fn dependencies_may_have_rule_values(solver: &Solver, deps: &dyn Probe) -> bool {
    let id = xqtb_core::TableId::new(solver.rules, solver.index.signature());
    let job = solver.slots;
    let inside = |r: xqtb_core::SlotRange| job.start <= r.start && r.end <= job.end;
    let slices = solver.index.slices();
    let exits = slices
        .iter()
        .filter(|s| inside(s.slots))
        .any(|s| s.advances_into.iter().any(|&to| !inside(slices[to].slots)));
    exits
        || id.dependencies().iter().any(|d| match deps.table(d) {
            None => true,
            Some(t) => Color::ALL.iter().any(|&side| {
                t.codes(side)
                    .par_iter()
                    .any(|&c| c != Value::ILLEGAL_CODE && c >= Value::MAX_DTM + 2)
            }),
        })
}

/// The value of `rule` in `round`, `plies` away (a win when `plies` is odd), or why it does not
/// fit the encoding.
fn rule_value(solver: &Solver, rule: Rule, round: u8, plies: u16) -> Result<Value, SolveError> {
    let overflow = |what: String| SolveError::Unsupported(solver.index.signature(), what);
    if round > RuleValue::MAX_ROUND {
        return Err(overflow(format!(
            "the rule analysis needs more than {} rounds",
            RuleValue::MAX_ROUND
        )));
    }
    if plies > RuleValue::MAX_RULE_PLIES {
        return Err(overflow(format!(
            "a rule-decided position lies more than {} plies from its rule",
            RuleValue::MAX_RULE_PLIES
        )));
    }
    let r = RuleValue { rule, round, plies };
    Ok(if plies % 2 == 1 {
        Value::RuleWin(r)
    } else {
        Value::RuleLoss(r)
    })
}

/// Decides, under the Asian rules, the positions plain retrograde analysis left unresolved in
/// `solver`'s states.
pub(crate) fn decide(
    solver: &Solver,
    deps: &dyn Probe,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<(), SolveError> {
    let started = std::time::Instant::now();
    for side in &solver.state {
        side.par_iter().for_each(|a| {
            let c = a.load(Relaxed);
            if is_unresolved(c) {
                a.store(
                    UNDECIDED | if capture_holds(c) { HOLDS } else { 0 },
                    Relaxed,
                );
            }
        });
    }
    let index = solver.index;
    let both_attack = has_attacker(index, Color::Red) && has_attacker(index, Color::Black);
    let exits = dependencies_may_have_rule_values(solver, deps);
    if !both_attack && !exits {
        // No side can be forced to offend and no capture leads to a rule-decided position:
        // nothing here depends on the rules.
        return Ok(());
    }
    let marks = || Marks::new(solver);
    let phase = Phase {
        solver,
        exits: ExitValues::new(index, solver.rules, deps),
        decided: [marks(), marks()],
        candidates: marks(),
        waves: [marks(), marks()],
        revived: marks(),
        touched: marks(),
        roles: AtomicU64::new(0),
    };
    let mut total = 0u64;
    if exits {
        let pending = phase.capture_exits()?;
        total += levels::run(&phase, 0, pending)?;
        progress(Progress::Rules {
            round: 0,
            decided: total,
        });
    }
    if both_attack {
        for round in 1u8.. {
            let t0 = std::time::Instant::now();
            let newly_forced = phase.mark_forced(round == 1)?;
            let t1 = t0.elapsed().as_secs_f64();
            let terminals = search::trap_round(&phase, round, round == 1)?;
            let t2 = t0.elapsed().as_secs_f64();
            if terminals == 0 {
                tracing::debug!(table = %index.signature(), round, newly_forced, "no trap");
                break;
            }
            let decided = levels::run(&phase, round, BTreeMap::new())?;
            total += terminals + decided;
            progress(Progress::Rules {
                round,
                decided: total,
            });
            tracing::debug!(table = %index.signature(), round, newly_forced, terminals, decided = total,
                forced_secs = t1, search_secs = t2 - t1, levels_secs = t0.elapsed().as_secs_f64() - t2, "rule round");
        }
    }
    tracing::info!(table = %index.signature(), decided = total, secs = started.elapsed().as_secs_f64(), "rule phase done");
    Ok(())
}
