//! What the passes of the rule phase share: the job's states and block marks ([`Phase`]), and
//! the values of a position's moves.

use super::marks::{MarkedSlots, Marks};
use super::states::Solver;
use crate::CHUNK_SLOTS;
use crate::capture::ExitValues;
use crate::error::SolveError;
use crate::position::SlotPosition;
use crate::state::{Flag, Undecided, is_undecided};
use rayon::prelude::*;
use std::sync::atomic::AtomicU16;
use std::sync::atomic::Ordering::Relaxed;
use xiangqi::{Board, Color, Move, MoveList, Square};
use xqtb_core::{MoveReading, Rule, RuleValue, Value};

/// A table entry: side to move and job slot.
pub(super) type Pos = (Color, u64);

/// The number of entry `(side, slot)` when the job's entries are numbered side-major: Red's job
/// slots, then Black's (the trap search's node sets and graphs number them so).
#[inline]
pub(super) fn entry_of(size: u64, (side, slot): Pos) -> u64 {
    side.index() as u64 * size + slot
}

/// The entry numbered `e` ([`entry_of`]).
#[inline]
pub(super) fn pos_of(size: u64, e: u64) -> Pos {
    if e < size {
        (Color::Red, e)
    } else {
        (Color::Black, e - size)
    }
}

/// What the phase needs to look at positions and their moves, and its block marks.
pub(super) struct Phase<'a> {
    pub(super) solver: &'a Solver<'a>,
    /// The values of the moves that leave the job (captures and exits).
    pub(super) exits: ExitValues<'a>,
    /// Positions decided at a level, by the parity of the level (read at the next one); not the
    /// losses a loss level's tests find, which give their wins at once.
    pub(super) decided: [Marks; 2],
    /// Positions flagged as candidates of the current loss level (the flags are those of
    /// [`crate::state::Flags`]).
    pub(super) candidates: Marks,
    /// Positions flagged `REVIVED`.
    pub(super) revived: Marks,
    /// Positions flagged `TOUCHED`.
    pub(super) touched: Marks,
    /// Positions of the trap graph: flagged `FORCED` or `REACHED` (never taken).
    pub(super) graph: Marks,
    /// Positions with a role in the trap search's fixed point (`OFFENDER`, `WINNER`), and maybe
    /// some that lost theirs: the node set of the trap graph is read from these blocks only.
    pub(super) roles: Marks,
}

/// A position's best value for its side to move over the moves whose value is known, and
/// whether some move leads to an undecided or drawn position.
pub(super) struct Look {
    pub(super) best: Value,
    pub(super) open: bool,
    /// The best over the moves leaving the job (captures and exits) alone.
    pub(super) best_leaving: Value,
}

/// What [`Phase::look_if_lost`] found.
pub(super) enum IfLost {
    /// Every legal move staying in the job leads to a position won for the opponent; the
    /// position's [`Look`].
    AllWon(Look),
    /// The move into this job slot (of the opponent) does not.
    Open(usize),
}

/// The level a pass of the rule phase decides, and what it may know of a move's successor in
/// the job: its kind, never its value.
///
/// A position decided by rule owes its value to the round, the level that decides it and the
/// rule of its successors decided at the level before, never to the value of any other
/// successor: a position with a move into one lost for the opponent at an earlier level was won
/// then, and for a position whose every move loses the successors decided at the level before
/// are the ones its side prefers (rule losses rank above mate losses, later levels above
/// earlier ones, this round above the earlier ones and above the moves leaving the job, whose
/// rule values count as round 0). So a pass reads a successor as one of: illegal, undecided,
/// decided at the level before with one of the two rules, or else won or lost for its side to
/// move. The phase's passes can then work from a plane of those kinds, without the values of
/// positions held elsewhere (`docs/scaling.md`, "The rule phase in groups").
#[derive(Clone, Copy)]
pub(super) struct Due {
    /// The codes of this round's values at the level before, perpetual check first.
    last: [u16; 2],
    /// The values, for the mover, of moves into those positions: this round's at this level.
    values: [Value; 2],
}

impl Due {
    /// Level `level` of round `round`.
    pub(super) fn new(solver: &Solver, round: u8, level: u16) -> Result<Due, SolveError> {
        let rule = |r, plies| rule_value(solver, r, round, plies);
        let checks = [Rule::PerpetualCheck, Rule::PerpetualChase];
        Ok(Due {
            last: [
                rule(checks[0], level - 1)?.encode(),
                rule(checks[1], level - 1)?.encode(),
            ],
            values: [rule(checks[0], level)?, rule(checks[1], level)?],
        })
    }

    /// The value, for the mover, of a move into a decided successor of code `c`, as far as a
    /// pass at level `due` (`None`: before any level) needs it: exact for a successor decided
    /// at the level before; for another a mate at once, suffered when the successor is won for
    /// its side, given when it is lost. Like the exact value, that is never due at this level
    /// and ranks on the same side of every value that is: a loss below (an earlier level's or
    /// round's rule loss, or a mate), a win above.
    #[inline]
    pub(super) fn value(due: Option<&Due>, c: u16) -> Value {
        if let Some(d) = due
            && let Some(i) = d.last.iter().position(|&l| l == c)
        {
            return d.values[i];
        }
        if Value::decode(c).is_win() {
            Value::Loss(0)
        } else {
            Value::Win(1)
        }
    }
}

impl<'a> Phase<'a> {
    pub(super) fn states(&self, side: Color) -> &[AtomicU16] {
        self.solver.states(side)
    }

    pub(super) fn code(&self, (side, slot): Pos) -> u16 {
        self.states(side)[slot as usize].load(Relaxed)
    }

    /// The undecided state of `(side, slot)`, if it is undecided.
    #[inline]
    pub(super) fn undecided(&self, side: Color, slot: u64) -> Option<Undecided> {
        Undecided::of(self.states(side)[slot as usize].load(Relaxed))
    }

    /// Sets `flag` on the undecided state of `(side, slot)`; returns whether it was not set.
    /// (Undecided states change only by their flags and witness until decided, and a decided
    /// state is never flagged: the passes that decide and those that flag do not overlap.)
    #[inline]
    pub(super) fn set_flag(&self, side: Color, slot: u64, flag: Flag) -> bool {
        self.states(side)[slot as usize].fetch_or(flag.bit(), Relaxed) & flag.bit() == 0
    }

    /// Takes `flag` from the undecided state of `(side, slot)`; returns whether it was set.
    #[inline]
    pub(super) fn clear_flag(&self, side: Color, slot: u64, flag: Flag) -> bool {
        self.states(side)[slot as usize].fetch_and(!flag.bit(), Relaxed) & flag.bit() != 0
    }

    /// Records that `(side, slot)` was decided at `level`.
    #[inline]
    pub(super) fn note_decided(&self, side: Color, slot: u64, level: u16) {
        self.decided[level as usize % 2].mark(self.solver, side, slot);
    }

    /// Runs `f(chunk, side, first slot, end)` over every chunk of both sides in parallel.
    pub(super) fn par_over_chunks<T: Send>(
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
    /// a position to load slots into, taking the marks when `take`; a chunk without any gives
    /// the default.
    pub(super) fn par_marked<T: Send + Default>(
        &self,
        marks: &Marks,
        take: bool,
        f: impl Fn(Color, MarkedSlots, &mut SlotPosition) -> Result<T, SolveError> + Sync,
    ) -> Result<Vec<T>, SolveError> {
        self.par_over_chunks(|c, side, start, end| {
            let blocks = marks.chunk(c, take);
            if blocks == 0 {
                return Ok(T::default());
            }
            f(
                side,
                MarkedSlots::new(blocks, start, end),
                &mut self.solver.position(),
            )
        })
    }

    /// Runs `f` over every chunk of both sides in parallel, with a position to load slots
    /// into; returns what it returned, chunk by chunk.
    pub(super) fn par_chunks<T: Send>(
        &self,
        f: impl Fn(Color, std::ops::Range<u64>, &mut SlotPosition) -> Result<T, SolveError> + Sync,
    ) -> Result<Vec<T>, SolveError> {
        self.par_over_chunks(|_, side, start, end| f(side, start..end, &mut self.solver.position()))
    }

    /// The value, for the mover, of the move `m` leaving the job from the loaded position (a
    /// capture or an exit); `Illegal` when the move is not legal. Rule values there are settled
    /// facts of a job solved before, round 0 here.
    pub(super) fn exit_value(&self, pos: &mut SlotPosition, m: Move) -> Result<Value, SolveError> {
        let v = self.exits.after(pos, m)?;
        Ok(match v {
            Value::Illegal => Value::Illegal,
            v => MoveReading::leaving(v).for_mover(),
        })
    }

    /// Looks at every legal move of the loaded position, reading its successors in the job as
    /// the level `due` reads them ([`Due::value`]; `None`: before any level).
    pub(super) fn look(
        &self,
        pos: &mut SlotPosition,
        due: Option<&Due>,
    ) -> Result<Look, SolveError> {
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
                    c => Due::value(due, c),
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
    /// undecided: it was won at a later level than the one being tested, `due`. The moves
    /// leaving the job are looked at last, only when the others all lose.
    pub(super) fn look_if_lost(
        &self,
        pos: &mut SlotPosition,
        due: &Due,
        unsettled: Option<[u16; 2]>,
    ) -> Result<IfLost, SolveError> {
        let side = pos.board.side_to_move();
        let them = self.states(side.opponent());
        // The king's moves last: a candidate is tested when the successor its witness named was
        // won, and its next open move is less often a king's, so fewer successors are read
        // before the first open one. Slots are computed one at a time, as most tests stop at
        // one of the first few.
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
            if is_undecided(c)
                || unsettled.is_some_and(|u| u.contains(&c))
                || !Value::decode(c).is_win()
            {
                return Ok(IfLost::Open(q));
            }
            let v = Due::value(Some(due), c);
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
}

/// The square of `side`'s king, and the squares of its other pieces (a bit each): the tests
/// that look at moves one piece at a time take the king's apart.
pub(super) fn king_and_others(board: &Board, side: Color) -> (Option<Square>, u128) {
    let king = board.king_square(side);
    let others = board.occupancy(side) & !king.map_or(0, |k| 1u128 << k.index());
    (king, others)
}

/// Takes the lowest square out of `squares` (a bit each).
pub(super) fn pop_square(squares: &mut u128) -> Option<Square> {
    if *squares == 0 {
        return None;
    }
    let s = squares.trailing_zeros() as usize;
    *squares &= *squares - 1;
    Some(Square::from_index(s).expect("a square of the board"))
}

/// The value of `rule` in `round`, `plies` away (a win when `plies` is odd), or why it does not
/// fit the encoding.
pub(super) fn rule_value(
    solver: &Solver,
    rule: Rule,
    round: u8,
    plies: u16,
) -> Result<Value, SolveError> {
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
