//! Solving one job: a table, or a union of its pawn slices. The retrograde phase
//! ([`crate::retrograde`]) resolves every position that ends in mate; under the Asian rule set
//! the rule phase ([`crate::asian`]) then decides which of the rest the repetition rules win.
//!
//! A job may solve only some of a table's slots: one pawn slice, or any union of whole slices
//! ([`solve_range`]). A pawn's step forward then leads out of the job into a slice solved
//! before, and is an *exit* valued exactly like a capture; un-moves from outside the job are
//! skipped, since the job that owns them reads this one's values as its exits.

use crate::block_reader::Legal;
use crate::error::SolveError;
use crate::level_groups::StateStore;
use crate::position::Job;
use crate::progress::Progress;
use crate::retrograde::retrograde;
use crate::slices::{SliceDeps, assemble};
use std::sync::Arc;
use xiangqi::Color;
use xqtb_core::{Codes, Probe, RuleSet, SlotRange, Table, TableId, TableIndex};

/// Solves table `id`, reading the tables its captures lead into (under the same rule set) from
/// `deps`.
///
/// Under the repetition rules a table of several pawn slices is solved slice by slice (see
/// [`solve_range`]).
pub fn solve(
    id: TableId,
    deps: &dyn Probe,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<Table, SolveError> {
    solve_range(id, SlotRange::whole(&id.signature), deps, progress)
}

/// Solves the slots `slots` of table `id`, a union of whole pawn slices (see
/// [`TableIndex::slices`]; the padding between them may be included or not), as a part of the
/// table ([`Table::part`] of exactly `slots`). Captures are read from the tables below in `deps`
/// as by [`solve`]; pawn advances that leave `slots` are read from `deps` too, which must hold
/// the slices they lead into ([`Probe::has_slots`]). Solving every slice this way, in an order
/// in which each slice comes after those its advances lead into, gives the table [`solve`]
/// gives.
///
/// Under the repetition rules ([`RuleSet::solves_slices_apart`]) the slices of `slots` are
/// solved one at a time, in slot order, each reading the ones its pawn advances lead into as it
/// reads the tables its captures lead into: a pawn's step forward, like a capture, can never be
/// part of a repeating cycle, and the rounds of the rule phase (which order rule-decided
/// distances) start afresh behind it. So a table has the same values however many jobs solve
/// it, and however its slices are grouped into jobs.
pub fn solve_range(
    id: TableId,
    slots: SlotRange,
    deps: &dyn Probe,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<Table, SolveError> {
    solve_range_in(id, slots, StateStore::Memory, deps, progress)
}

/// [`solve_range`] with the retrograde phase's states held as `store` says: in memory, or in
/// groups of slots of which one is in memory at a time and the others in a [`crate::Scratch`]
/// (local disk). The table is the same bit for bit either way.
pub fn solve_range_in(
    id: TableId,
    slots: SlotRange,
    store: StateStore,
    deps: &dyn Probe,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<Table, SolveError> {
    let signature = id.signature;
    if let StateStore::Groups { share: Some(_), .. } = store {
        return Err(SolveError::Share(
            signature,
            "a job is shared only under cycles-are-draws, where each worker hands on its \
             groups' values as parts of the table (the asian rule phase takes the whole table)"
                .into(),
        ));
    }
    let index = check_job(id, slots, deps)?;
    if id.rules.solves_slices_apart(&index) && index.slices_in(slots) > 1 {
        return solve_in_slot_order(id, index, slots, store, deps, progress);
    }
    let job = Job::new(&index, id.rules, slots);
    // Plain retrograde analysis first: under every rule set, what it resolves ends in mate (a
    // capture into a rule-decided position of another table counts as a draw here).
    let states = retrograde(&job, deps, store, progress)?;
    // The one place the solver depends on the rule set: what is left unresolved. It is a draw
    // under cycles-are-draws, and under the Asian rules where they can decide nothing here; the
    // level states then become the finished table directly, a byte per entry.
    let work = match id.rules {
        RuleSet::CyclesAreDraws => None,
        RuleSet::Asian => Some(crate::asian::RuleWork::of(&job, deps)).filter(|w| !w.is_none()),
    };
    let scratch_error = |e: std::io::Error| SolveError::Scratch(signature, e.to_string());
    let values = match work {
        None => states.into_values().map_err(scratch_error)?,
        Some(work) => {
            let codes = states.into_codes().map_err(scratch_error)?;
            crate::asian::decide(job, work, codes, deps, progress)?.map(Codes::from)
        }
    };
    Ok(Table::part(index, id.rules, slots, values))
}

/// [`solve_range_in`], handing the table to `on_part` in parts in slot order instead of whole:
/// under `cycles-are-draws` with the states in groups, a part per group, so that the finished
/// table is never whole in memory either (the caller encodes each part and joins them);
/// otherwise the whole as one part. Returns which entries are legal, for verifying the table a
/// block at a time ([`crate::verify_blocks`]).
pub fn solve_range_in_parts(
    id: TableId,
    slots: SlotRange,
    store: StateStore,
    deps: &dyn Probe,
    progress: &(dyn Fn(Progress) + Sync),
    on_part: &mut dyn FnMut(Table),
) -> Result<Legal, SolveError> {
    let mut legal = Legal::none(slots);
    let mut take = |part: Table| {
        legal.add_part(part.slots(), Color::ALL.map(|side| part.codes(side)));
        on_part(part);
    };
    // A shared job takes the path below under cycles-are-draws, and is refused by
    // `solve_range_in` otherwise.
    let grouped = matches!(store, StateStore::Groups { .. });
    if id.rules != RuleSet::CyclesAreDraws || !grouped {
        take(solve_range_in(id, slots, store, deps, progress)?);
        return Ok(legal);
    }
    let index = check_job(id, slots, deps)?;
    let job = Job::new(&index, id.rules, slots);
    let states = retrograde(&job, deps, store, progress)?;
    states
        .into_value_parts(&mut |range, values| {
            let part = SlotRange {
                start: slots.start + range.start as u64,
                end: slots.start + range.end as u64,
            };
            take(Table::part(index.clone(), id.rules, part, values));
        })
        .map_err(|e| SolveError::Scratch(id.signature, e.to_string()))?;
    Ok(legal)
}

/// Checks that a job of `slots` of table `id` can be solved over `deps`, and gives the
/// table's index.
fn check_job(id: TableId, slots: SlotRange, deps: &dyn Probe) -> Result<TableIndex, SolveError> {
    let signature = id.signature;
    for missing in id.dependencies() {
        if !deps.has_table(&missing) {
            return Err(SolveError::MissingDependency {
                table: signature,
                missing: missing.signature,
            });
        }
    }
    if signature.material().piece_count() as usize > xqtb_core::MAX_PIECES {
        return Err(SolveError::Unsupported(signature, "too many pieces".into()));
    }
    let index = TableIndex::new(signature);
    check_slices(id, &index, slots, deps)?;
    Ok(index)
}

/// Checks that `slots` is a union of whole slices of `index` and that `deps` holds every slice
/// outside it that a pawn advance from it leads into.
fn check_slices(
    id: TableId,
    index: &TableIndex,
    slots: SlotRange,
    deps: &dyn Probe,
) -> Result<(), SolveError> {
    let table = id.signature;
    let not_slices = || SolveError::NotSlices { table, slots };
    if slots.is_empty() || slots.end > index.size() {
        return Err(not_slices());
    }
    let slices = index.slices();
    let inside = |r: SlotRange| slots.start <= r.start && r.end <= slots.end;
    let mut any = false;
    for slice in slices {
        let overlaps = slice.slots.start < slots.end && slots.start < slice.slots.end;
        if overlaps && !inside(slice.slots) {
            return Err(not_slices());
        }
        any |= overlaps;
    }
    if !any {
        return Err(not_slices());
    }
    for slice in slices.iter().filter(|s| inside(s.slots)) {
        for &to in &slice.advances_into {
            let missing = slices[to].slots;
            if !inside(missing) && !deps.has_slots(&id, missing) {
                return Err(SolveError::MissingSlice {
                    table,
                    slots,
                    missing,
                });
            }
        }
    }
    Ok(())
}

/// Solves the slices of `slots` (more than one, checked by the caller to be whole slices whose
/// advances out of `slots` `deps` holds) one job each, in slot order (the most advanced first,
/// so each comes after those its advances lead into), and returns the part of exactly `slots`.
fn solve_in_slot_order(
    id: TableId,
    index: TableIndex,
    slots: SlotRange,
    store: StateStore,
    deps: &dyn Probe,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<Table, SolveError> {
    let mut done = SliceDeps::new(id, deps);
    for slice in index.slices() {
        if slots.start <= slice.slots.start && slice.slots.end <= slots.end {
            let part = solve_range_in(id, slice.slots, store, &done, progress)?;
            done.insert(Arc::new(part));
        }
    }
    Ok(assemble(id, index, slots, done))
}
