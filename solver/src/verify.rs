//! Independent verification of a solved table by forward move generation.
//!
//! Every slot is recomputed from scratch: its position is set up from the index, its legal moves
//! are generated forwards, and the best of the successors' stored values (in this table, or in
//! the dependency tables for captures) must equal the stored value exactly. Illegal slots must be
//! exactly the placements that cannot be set up or leave the side not to move in check. Nothing
//! here shares code with the solver's backward step (un-moves and candidate checks).
//!
//! Why this suffices: stored wins and losses that are consistent with their successors are
//! well-founded (a loss in `d` only has successors won in less than `d`), so by induction on the
//! distance every stored decisive value is true, and every truly decisive position is stored as
//! such; what is left are the draws.
//!
//! A part of a table (pawn slices, [`Table::part`]) is verified the same way: a move out of its
//! slots (a pawn's step forward into another slice) is looked up in `deps` like a capture, so
//! the slices a part's advances lead into must be available there, verified before.
//!
//! Under the Asian rules the local pass leaves the rule-decided values to the rule checks of
//! [`crate::verify_rules`]. Both read the table's codes only through a reader per thread
//! ([`Codes`]): the decoded table ([`verify`]), or its encoded blocks through a cache of bounded
//! size ([`verify_blocks`]), with the same verdict either way.

use crate::CHUNK_SLOTS;
use crate::block_reader::{Legal, SharedBlocks};
use crate::error::{JobError, VerifyError};
use crate::position::{LEAVES, SlotPosition};
use crate::progress::Progress;
use crate::table_codes::{Codes, Readers, SliceCodes};
use crate::verify_rules::{Checked, Findings};
use rayon::prelude::*;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use xiangqi::{Board, Color};
use xqtb_core::{
    BlockSource, MoveReading, Probe, ProbeError, RuleSet, SlotRange, Table, TableCounts, TableId,
    TableIndex, Value,
};

/// Verifies every slot of `table` (a whole table or a part) against its successors, the
/// dependency tables (and, for a part, the other slices of its table) read from `deps` under the
/// table's own rule set. Returns the counts of the slots `table` holds.
pub fn verify(table: &Table, deps: &dyn Probe) -> Result<TableCounts, Box<VerifyError>> {
    verify_reporting(table, deps, &|_| {})
}

/// [`verify`], reporting [`Progress::Verify`] as it goes.
pub fn verify_reporting(
    table: &Table,
    deps: &dyn Probe,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<TableCounts, Box<VerifyError>> {
    // Under the repetition rules a table of several slices is verified slice by slice, as it is
    // solved (see `solve_range`): moves into other slices are read like captures.
    let (index, slots) = (table.index(), table.slots());
    if table.rules().solves_slices_apart(index) && index.slices_in(slots) > 1 {
        let with_table = Within { table, deps };
        let mut counts = TableCounts::default();
        for span in slice_spans(index, slots) {
            let at = (span.start - slots.start) as usize..(span.end - slots.start) as usize;
            let codes = Color::ALL.map(|side| table.codes(side).slice(at.clone()).into_owned());
            let part = Table::part(index.clone(), table.rules(), span, codes);
            counts = counts.merge(verify_reporting(&part, &with_table, progress)?);
        }
        return Ok(counts);
    }
    // The one place the verifier depends on the rule set: the proof in the module header holds
    // for cycles-are-draws.
    match table.rules() {
        RuleSet::CyclesAreDraws => verify_values(table, deps, progress, None),
        RuleSet::Asian => verify_asian(index, slots, &|| table, deps, progress),
    }
}

/// The slots of each pawn slice of `index` within `slots`, in slot order.
fn slice_spans(index: &TableIndex, slots: SlotRange) -> impl Iterator<Item = SlotRange> + '_ {
    (index.slice_of(slots.start)..=index.slice_of(slots.end - 1)).map(move |i| {
        let span = index.slice_span(i);
        SlotRange {
            start: span.start.max(slots.start),
            end: span.end.min(slots.end),
        }
    })
}

/// Verifies an Asian table (or a part of one slice) of `index` holding `slots`, each thread
/// reading its codes through a reader `readers` makes: the local pass, then the rule checks
/// ([`crate::verify_rules`]) on what it found.
fn verify_asian<R: Readers>(
    index: &TableIndex,
    slots: SlotRange,
    readers: &R,
    deps: &dyn Probe,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<TableCounts, Box<VerifyError>> {
    let found = Findings::new(slots.len());
    let t0 = std::time::Instant::now();
    let counts = local_pass(
        index,
        slots,
        || readers.reader(),
        deps,
        progress,
        Some(&found),
        &|_| true,
    )?;
    tracing::debug!(secs = t0.elapsed().as_secs_f64(), "local pass");
    let table = Checked {
        index,
        slots,
        readers,
    };
    crate::verify_rules::check(&table, deps, found)?;
    Ok(counts)
}

/// A table (or a part) read in place over the tables below it: what the verification of its own
/// slices reads (a copy of a large table would double the verifier's memory).
struct Within<'a> {
    table: &'a Table,
    deps: &'a dyn Probe,
}

impl Probe for Within<'_> {
    fn probe(&self, rules: RuleSet, board: &xiangqi::Board) -> Result<Value, ProbeError> {
        let o = xqtb_core::Orientation::of_board(board);
        if TableId::new(rules, o.signature) != self.table.id() {
            return self.deps.probe(rules, board);
        }
        let slot = self
            .table
            .index()
            .slot_of(board, o.rotated)
            .map_err(|e| ProbeError::Illegal(e.to_string()))?;
        if !self.table.holds(slot) {
            return self.deps.probe(rules, board);
        }
        match self.table.value(o.side(board.side_to_move()), slot) {
            Value::Illegal => Err(ProbeError::Illegal(
                "the side not to move is in check".into(),
            )),
            v => Ok(v),
        }
    }

    fn has_table(&self, id: &TableId) -> bool {
        (*id == self.table.id() && self.table.is_whole()) || self.deps.has_table(id)
    }

    fn has_slots(&self, id: &TableId, slots: SlotRange) -> bool {
        let held = self.table.slots();
        (*id == self.table.id() && held.start <= slots.start && slots.end <= held.end)
            || self.deps.has_slots(id, slots)
    }

    fn table(&self, id: &TableId) -> Option<&Table> {
        if *id == self.table.id() && self.table.is_whole() {
            Some(self.table)
        } else {
            self.deps.table(id)
        }
    }
}

/// The local pass: every entry against its successors ([`verify_slot`]); under the Asian rules
/// it gathers into `rules` what the rule checks need.
pub(crate) fn verify_values(
    table: &Table,
    deps: &dyn Probe,
    progress: &(dyn Fn(Progress) + Sync),
    // Under the Asian rules: gathers the drawn entries whose side to move is forced to offend,
    // for the rule checks ([`crate::verify_rules`]).
    rules: Option<&crate::verify_rules::Findings>,
) -> Result<TableCounts, Box<VerifyError>> {
    local_pass(
        table.index(),
        table.slots(),
        || table,
        deps,
        progress,
        rules,
        &|_| true,
    )
}

/// Verifies every entry of a table (or a part) as [`verify`] does, with the same verdict,
/// reading the table's own codes a block at a time from `source` (such as the table just
/// encoded) through a cache of bounded size shared by the threads, instead of decoded whole, so
/// that the codes take little memory whatever the table's size (under `asian` the rule checks'
/// graphs and sets still grow with the table). `legal` says which entries are legal (a stored
/// block's illegal slots hold a filler): from the solve ([`crate::solve_range_in_parts`]) or
/// computed ([`Legal::of`]); every entry's legality is checked against its position all the
/// same. Returns the table's counts.
pub fn verify_blocks<S: BlockSource + ?Sized>(
    source: &S,
    legal: &Legal,
    deps: &dyn Probe,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<TableCounts, JobError> {
    verify_blocks_where(source, legal, deps, progress, None)
}

/// [`verify_blocks`] of the entries of worker `worker`'s groups only, for a table that
/// `workers` workers shared in groups of about `group_slots` slots ([`crate::Share::owner`]):
/// each verifies its own, reading the whole table. Returns the counts of those entries. Only
/// `cycles-are-draws` tables are shared (see [`crate::solve_range_in`]): the rule checks of an
/// `asian` table look across all of its entries at once, so another rule set is an error.
pub fn verify_blocks_of_worker<S: BlockSource + ?Sized>(
    source: &S,
    legal: &Legal,
    deps: &dyn Probe,
    progress: &(dyn Fn(Progress) + Sync),
    (worker, workers): (usize, usize),
    group_slots: u64,
) -> Result<TableCounts, JobError> {
    let group = |slot| crate::level_groups::group_of(slot, group_slots);
    let owns = |slot: u64| crate::level_share::owner_of(group(slot), workers) == worker;
    verify_blocks_where(source, legal, deps, progress, Some(&owns))
}

/// [`verify_blocks`] of the chunks whose first job slot `verify_chunk` takes (every chunk when
/// `None`; only a `cycles-are-draws` table is verified a share at a time).
fn verify_blocks_where<S: BlockSource + ?Sized>(
    source: &S,
    legal: &Legal,
    deps: &dyn Probe,
    progress: &(dyn Fn(Progress) + Sync),
    verify_chunk: Option<&(dyn Fn(u64) -> bool + Sync)>,
) -> Result<TableCounts, JobError> {
    let signature = source.index().signature();
    if source.rules() != RuleSet::CyclesAreDraws && verify_chunk.is_some() {
        return Err(JobError::Blocks(
            signature,
            format!(
                "only cycles-are-draws tables are verified a share at a time, not {}: the rule \
                 checks look across the whole table",
                source.rules()
            ),
        ));
    }
    assert_eq!(
        legal.slots(),
        source.slots(),
        "the legal entries of another table"
    );
    let entries = 2 * source.slots().len();
    let cache_bytes = xqtb_core::verify_cache_bytes(entries);
    let shared = SharedBlocks::new(source, legal, cache_bytes);
    let counts = match source.rules() {
        RuleSet::CyclesAreDraws => local_pass(
            source.index(),
            source.slots(),
            || shared.reader(),
            deps,
            progress,
            None,
            verify_chunk.unwrap_or(&|_| true),
        ),
        RuleSet::Asian => verify_asian_blocks(&shared, deps, progress),
    };
    if let Some(e) = shared.failed.into_inner().expect("block read failures") {
        return Err(JobError::Blocks(signature, e));
    }
    Ok(counts?)
}

/// [`verify_asian`] of the table `shared` reads, as [`verify_reporting`] verifies it decoded:
/// a table of several pawn slices slice by slice, each reading the others through the same
/// cache as it reads captures ([`BlocksWithin`]).
fn verify_asian_blocks<S: BlockSource + ?Sized>(
    shared: &SharedBlocks<S>,
    deps: &dyn Probe,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<TableCounts, Box<VerifyError>> {
    let source = shared.source();
    let (index, slots) = (source.index(), source.slots());
    if !source.rules().solves_slices_apart(index) || index.slices_in(slots) <= 1 {
        return verify_asian(index, slots, &|| shared.reader(), deps, progress);
    }
    let within = BlocksWithin { shared, deps };
    let mut counts = TableCounts::default();
    for span in slice_spans(index, slots) {
        let readers = || SliceCodes {
            codes: shared.reader(),
            slots: span,
        };
        counts = counts.merge(verify_asian(index, span, &readers, &within, progress)?);
    }
    Ok(counts)
}

/// A table (or a part) read a block at a time over the tables below it: what the verification
/// of its own slices reads, as [`Within`] for a decoded table.
struct BlocksWithin<'s, 'a, S: ?Sized> {
    shared: &'s SharedBlocks<'a, S>,
    deps: &'s dyn Probe,
}

impl<S: BlockSource + ?Sized> BlocksWithin<'_, '_, S> {
    fn id(&self) -> TableId {
        let source = self.shared.source();
        TableId::new(source.rules(), source.index().signature())
    }
}

impl<S: BlockSource + ?Sized> Probe for BlocksWithin<'_, '_, S> {
    fn probe(&self, rules: RuleSet, board: &xiangqi::Board) -> Result<Value, ProbeError> {
        let o = xqtb_core::Orientation::of_board(board);
        if TableId::new(rules, o.signature) != self.id() {
            return self.deps.probe(rules, board);
        }
        let source = self.shared.source();
        let slot = source
            .index()
            .slot_of(board, o.rotated)
            .map_err(|e| ProbeError::Illegal(e.to_string()))?;
        let held = source.slots();
        if !(held.start <= slot && slot < held.end) {
            return self.deps.probe(rules, board);
        }
        let side = o.side(board.side_to_move());
        match Value::decode(self.shared.code(side, slot - held.start)) {
            Value::Illegal => Err(ProbeError::Illegal(
                "the side not to move is in check".into(),
            )),
            v => Ok(v),
        }
    }

    fn has_table(&self, id: &TableId) -> bool {
        let source = self.shared.source();
        let whole = source.slots() == SlotRange::whole(&source.index().signature());
        (*id == self.id() && whole) || self.deps.has_table(id)
    }

    fn has_slots(&self, id: &TableId, slots: SlotRange) -> bool {
        let held = self.shared.source().slots();
        (*id == self.id() && held.start <= slots.start && slots.end <= held.end)
            || self.deps.has_slots(id, slots)
    }

    fn table(&self, id: &TableId) -> Option<&Table> {
        // Never decoded whole: the solver's readers of a table held in memory do not apply.
        if *id == self.id() {
            None
        } else {
            self.deps.table(id)
        }
    }
}

/// The local pass over the table of `index` holding `slots`, each thread reading its codes
/// through a reader `codes` makes, over the chunks whose first job slot `verify_chunk` takes.
fn local_pass<C: Codes>(
    index: &TableIndex,
    slots: SlotRange,
    codes: impl Fn() -> C + Sync,
    deps: &dyn Probe,
    progress: &(dyn Fn(Progress) + Sync),
    rules: Option<&crate::verify_rules::Findings>,
    verify_chunk: &(dyn Fn(u64) -> bool + Sync),
) -> Result<TableCounts, Box<VerifyError>> {
    let may_trap = rules.is_some() && index.signature().material().may_force_offence();
    let size = slots.len();
    let chunks: Vec<u64> = (0..size.div_ceil(CHUNK_SLOTS))
        .filter(|&c| verify_chunk(c * CHUNK_SLOTS))
        .collect();
    let total = chunks
        .iter()
        .map(|&c| 2 * (size.min((c + 1) * CHUNK_SLOTS) - c * CHUNK_SLOTS))
        .sum();
    let done = AtomicU64::new(0);
    let pieces = index.piece_list();
    chunks
        .into_par_iter()
        .map_init(&codes, |table, c| {
            let start = c * CHUNK_SLOTS;
            let end = (start + CHUNK_SLOTS).min(size);
            let mut counts = TableCounts::default();
            let mut pos = SlotPosition::new(index, &pieces, slots);
            let mut local = Local {
                counts: &mut counts,
                found: rules,
                terminal_rounds: 0,
                may_trap,
            };
            for slot in start..end {
                // Both sides to move share the placement: it is set up once.
                let possible = pos.load(slot, Color::Red);
                for side in Color::ALL {
                    pos.board.set_side_to_move(side);
                    verify_slot(&*table, deps, side, slot, possible, &mut pos, &mut local)?;
                }
            }
            if let Some(found) = rules
                && local.terminal_rounds != 0
            {
                found.terminal_rounds[c as usize].fetch_or(local.terminal_rounds, Relaxed);
            }
            let n = 2 * (end - start);
            progress(Progress::Verify {
                done: done.fetch_add(n, Relaxed) + n,
                total,
            });
            Ok(counts)
        })
        .try_reduce(TableCounts::default, |a, b| Ok(a.merge(b)))
}

/// What one chunk of the local pass gathers.
pub(crate) struct Local<'a> {
    pub(crate) counts: &'a mut TableCounts,
    /// Under the Asian rules: what the rule checks need, gathered here.
    pub(crate) found: Option<&'a crate::verify_rules::Findings>,
    /// Under the Asian rules: the rounds with a terminal position seen, a bit each (handed to
    /// `found` at the end of a chunk, not at every position).
    pub(crate) terminal_rounds: u32,
    /// A side can be forced to offend in this material
    /// ([`xqtb_core::Material::may_force_offence`]).
    pub(crate) may_trap: bool,
}

/// Verifies one entry, of job slot `slot`; `pos` holds the slot's placement with `side` to move
/// when `possible`.
pub(crate) fn verify_slot<C: Codes + ?Sized>(
    table: &C,
    deps: &dyn Probe,
    side: Color,
    slot: u64,
    possible: bool,
    pos: &mut SlotPosition,
    local: &mut Local,
) -> Result<(), Box<VerifyError>> {
    let code = table.code(side, slot);
    let stored = Value::decode(code);
    // Counts and failures name the table's slot, not the job's.
    let at = table.slots().start + slot;
    let fail = |fen: String, expected: Value| {
        Box::new(VerifyError {
            signature: table.index().signature(),
            side,
            slot: at,
            fen,
            stored,
            expected,
        })
    };
    let board = &pos.board;
    match (
        possible && !board.opponent_in_check(),
        code == Value::ILLEGAL_CODE,
    ) {
        (true, false) => {}
        (false, true) => return Ok(()),
        (true, true) => return Err(fail(board.fen(), Value::Illegal)),
        (false, false) => return Err(fail("-".into(), Value::Illegal)),
    }
    // Illegal moves are recognised by their successor: an illegal slot of this table (each
    // slot's own legality is checked above, so the marks are trusted only once verified as a
    // whole) or an illegal position in a dependency.
    let opponent = side.opponent();
    let next = |s: usize| table.code(opponent, s as u64);
    let (board, moves, slots) = pos.successors(|s| table.prefetch(opponent, s as u64));
    let mut best = Value::Loss(0);
    let mut after: Option<Board> = None;
    // A position lost by rule 0 plies away in round `r` (a terminal) is trapped only if each of
    // its legal moves leaving the table (or part) loses for it to a position decided before
    // round `r`: checked here, where those moves are valued anyway, so that the rule checks
    // need not probe them again.
    let terminal_round = match stored {
        Value::RuleLoss(r) if r.plies == 0 && local.found.is_some() => Some(r.round),
        _ => None,
    };
    // Whether a legal move leaving the table (or part) does not lose for the mover: the rule
    // checks' forced-to-offend test needs no probe of its own then.
    let mut leaving_holds = false;
    let reading = MoveReading::new(table.rules(), table.index(), at);
    let start = table.slots().start;
    for (i, &m) in moves.iter().enumerate() {
        // A capture leaves the table, an exit the part: both are looked up in `deps`.
        let v = if slots[i] != LEAVES {
            reading.quiet(start + slots[i] as u64, Value::decode(next(slots[i])))
        } else {
            let after = after.get_or_insert_with(|| board.clone());
            let captured = after.make(m);
            let v = deps.probe(table.rules(), after);
            after.unmake(m, captured);
            match v {
                Ok(v) => MoveReading::leaving(v),
                Err(ProbeError::Illegal(_)) => Value::Illegal,
                Err(e) => return Err(fail(format!("{} ({e})", board.fen()), Value::Illegal)),
            }
        };
        // Any legal move beats having none (Loss(0)): after a move the mover loses in 1 ply or
        // more.
        let mine = v.for_mover();
        if v != Value::Illegal && mine.preference() > best.preference() {
            best = mine;
        }
        leaving_holds |= slots[i] == LEAVES && v != Value::Illegal && !mine.is_loss();
        if let Some(round) = terminal_round
            && slots[i] == LEAVES
            && v != Value::Illegal
            && !crate::verify_rules::won_before(v, round)
        {
            return Err(fail(
                format!(
                    "{} (lost by rule in round {round}, but {m} leaves for a position not won before it)",
                    board.fen()
                ),
                mine,
            ));
        }
    }
    if let Some(found) = local.found {
        // A position lost by rule 0 plies away takes its value from the rule, not from its
        // successors: the rule checks verify it with the trap it belongs to.
        if let Value::RuleLoss(r) = stored
            && r.plies == 0
        {
            local.terminal_rounds |= 1 << r.round;
            local.counts.add(side, at, stored);
            return Ok(());
        }
        if stored == Value::Draw
            && best == Value::Draw
            && local.may_trap
            && !leaving_holds
            && crate::verify_rules::forced_to_offend(board, moves, slots, &next)
        {
            found
                .forced_draws
                .insert(side.index() as u64 * table.slots().len() + slot);
        }
    }
    if stored != best {
        return Err(fail(board.fen(), best));
    }
    local.counts.add(side, at, best);
    Ok(())
}
