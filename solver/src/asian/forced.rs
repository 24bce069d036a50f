//! Step 1 of a round: which undecided positions are forced to offend.
//!
//! A position is *forced to offend* when its side to move can only offend or lose: every legal
//! move leads to a position already won for the other side (a capture or exit that loses, or a
//! move into a won position), or is an offence into an undecided position, and those offences
//! are all checks, or all chase one and the same piece. Such a position may be the offender's
//! in a trap; the undecided positions its offences lead into may be the winner's.
//!
//! The first round tests every undecided position; later rounds only those whose successors
//! changed (flagged [`Flags::TOUCHED`] when a successor was decided). A forced position stays
//! forced while undecided: its successors can only be decided as wins for the other side.

use super::phase::{Phase, king_and_others, pop_square};
use super::roles::{ByRole, Gained, GainedCount, entry, revive};
use crate::error::SolveError;
use crate::position::SlotPosition;
use crate::state::{Flags, Undecided, Witness, is_undecided};
use std::sync::atomic::Ordering::Relaxed;
use xiangqi::repetition::{MoveClasses, gives_check};
use xiangqi::{Color, MoveList};

/// Whether the side to move of the loaded position (undecided, its captures and exits all
/// losing) is forced to offend: every move into an undecided position is a check, or every one
/// chases one same piece (a check that chases it too counts). When it is, the positions its
/// moves into undecided positions lead to are flagged [`Flags::REACHED`] and given the winner
/// role; those new to it are pushed onto `reached` as entries. Also returns a witness for the
/// loss levels (`None` for none): the slot of a move into an undecided position. `moves` and
/// `open` are scratch space.
fn forced(
    phase: &Phase,
    pos: &mut SlotPosition,
    moves: &mut MoveList,
    open: &mut Vec<usize>,
    reached: &mut Vec<u64>,
) -> (bool, Option<u64>) {
    let side = pos.board.side_to_move();
    let them = side.opponent();
    let states = phase.states(them);
    // The king's moves first: they are seldom checks or chases, and lead to an undecided
    // position more often than the other pieces', so an idle move is found sooner. The
    // other pieces' moves are generated only when no king move settles it. Slots are
    // computed one at a time: most positions have such a move among their first few.
    let (king, mut others) = king_and_others(&pos.board, side);
    moves.clear();
    if let Some(k) = king {
        pos.board.piece_pseudo_moves(k, moves);
    }
    // The positions its moves into undecided positions lead to (decided successors are wins
    // for the opponent, or this position would be decided).
    open.clear();
    // Whether every move so far is a check, and the pieces every one chases. While every move
    // is a check the side is forced to check whatever its checks chase, so a check's chases are
    // looked at only once a move that is no check turns up (`unclassified`: the checks before,
    // by their index in `moves`).
    let mut checks = true;
    let mut chased = !0u128;
    let mut unclassified = [0u8; xiangqi::MAX_MOVES];
    let mut n_unclassified = 0;
    // Classified on the position's own board: a classifier's copy of it would cost more than
    // the classes of most positions' one or two moves.
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
        if !is_undecided(states[q].load(Relaxed)) {
            continue;
        }
        open.push(q);
        if checks && gives_check(&mut pos.board, m) {
            unclassified[n_unclassified] = (next - 1) as u8;
            n_unclassified += 1;
            continue;
        }
        if checks {
            checks = false;
            for &i in &unclassified[..n_unclassified] {
                chased &= classes.class(&mut pos.board, moves[i as usize]).chased.0;
            }
        }
        chased &= classes.class(&mut pos.board, m).chased.0;
        if chased == 0 {
            return (false, Some(q as u64));
        }
    }
    // A position without a move into an undecided one would be decided.
    let Some(&first) = open.first() else {
        return (false, None);
    };
    for &q in open.iter() {
        let q = q as u64;
        if phase.set_flag(them, q, Flags::REACHED) {
            phase.graph.mark(phase.solver, them, q);
            if revive(phase, them, q, Flags::WINNER) {
                reached.push(entry(phase, (them, q)));
            }
        }
    }
    (true, Some(first as u64))
}

/// Flags as forced to offend the undecided positions that are (all of them in the first round,
/// later only those touched since the last trap search), gives them the offender role and the
/// positions their offences reach the winner role ([`revive`]), and gives the others a fresh
/// witness. Returns how many it flagged, and the positions that gained a role when at most
/// `limit` did ([`super::search::gained_limit`]).
pub(super) fn mark(
    phase: &Phase,
    first: bool,
    limit: Option<u64>,
) -> Result<(u64, Gained), SolveError> {
    let all = first;
    let count = GainedCount::new(limit);
    let test = |side: Color, slots: &mut dyn Iterator<Item = u64>, pos: &mut SlotPosition| {
        let states = phase.states(side);
        let mut n = 0u64;
        let mut open = Vec::with_capacity(xiangqi::MAX_MOVES);
        let mut moves = MoveList::new();
        let mut gained: ByRole = Default::default();
        for slot in slots {
            let state = &states[slot as usize];
            let Some(u) = Undecided::of(state.load(Relaxed)) else {
                continue;
            };
            if u.holds()
                || u.has(Flags::FORCED)
                || !(all || u.has(Flags::TOUCHED))
                || !pos.load(slot, side)
            {
                continue;
            }
            let (forced, q) = forced(phase, pos, &mut moves, &mut open, &mut gained[0]);
            let update = |u: Undecided| {
                let u = if forced { u.with(Flags::FORCED) } else { u };
                u.with_witness(Witness::of(q))
            };
            if update(u) != u {
                // Other positions' tests may flag this one meanwhile.
                let _ = state.fetch_update(Relaxed, Relaxed, |c| {
                    Some(update(Undecided::of(c).expect("undecided")).code())
                });
            }
            if forced {
                phase.graph.mark(phase.solver, side, slot);
                if revive(phase, side, slot, Flags::OFFENDER) {
                    gained[1].push(entry(phase, (side, slot)));
                }
                n += 1;
            }
        }
        Ok((n, count.keep(gained)))
    };
    let found = if all {
        phase.par_chunks(|side, mut slots, pos| test(side, &mut slots, pos))?
    } else {
        phase.par_marked(&phase.touched, false, |side, mut slots, pos| {
            test(side, &mut slots, pos)
        })?
    };
    let n = found.iter().map(|(k, _)| k).sum();
    let parts = found.into_iter().map(|(_, g)| g).collect();
    Ok((n, Gained::join(parts, &count)))
}
