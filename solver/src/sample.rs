//! Checking a random sample of a table's entries one ply deep, for a table that arrives from
//! elsewhere: the coordinator re-checks every uploaded table this way before it commits it, so
//! a worker with bad memory, a bug or a wrong build cannot poison the store.
//!
//! Each sampled entry is checked exactly as the verifier's local pass checks every entry
//! ([`verify`](crate::verify()), one shared function): its legality must match its code, and its
//! stored value must equal the best of its successors' stored values, read from the table itself
//! for quiet moves and from the dependency tables for captures. Under the Asian rules a position
//! stored as lost by rule 0 plies away takes its value from the rule and passes as the local pass
//! lets it pass; the rule checks that prove such positions need the whole table and are not
//! repeated here.
//!
//! A full verification proves a table; a sample only makes it unlikely that wrong values go
//! unnoticed. A wrong value is caught when its own entry is sampled (and often when one of its
//! predecessors is, whose best successor it changes), so with `n` of `L` legal entries sampled,
//! `k` independent wrong values all escape with probability at most about `(1 - n/L)^k`.
//!
//! The sample is drawn from a seed by a fixed generator: the same table and seed always check
//! the same entries, so a refusal can be reproduced.
//!
//! A part of a table (pawn slices) is checked the same way over the slots it holds, its moves
//! into other slices valued like captures: from `deps`, or, read a block at a time like the
//! part itself, from the other slices handed to [`check_sample_blocks`] (so that the check of
//! a slice never holds the slices it reads decoded: the coordinator's memory stays bounded
//! whatever the size of the table).

use crate::error::VerifyError;
use crate::position::{LEAVES, SlotPosition};
use crate::table_codes::Codes;
use crate::verify::{Local, verify_slot};
use crate::verify_rules::Findings;
use rayon::prelude::*;
use thiserror::Error;
use xiangqi::{Board, Color};
use xqtb_core::{
    BlockSource, Orientation, Probe, ProbeError, RuleSet, SlotRange, Table, TableCounts, TableId,
    TableIndex, Value,
};

/// How many entries a sample check takes: a share of the table's legal entries, but at least a
/// minimum (every legal entry of a table smaller than that).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SamplePolicy {
    /// Percentage of the legal entries (0 to 100).
    pub percent: f64,
    /// At least this many entries.
    pub minimum: u64,
}

impl SamplePolicy {
    /// 1% of the legal entries or 100,000 of them, whichever is larger: cheap next to solving
    /// and verifying, which visit every entry, yet by the bound in the module documentation `k`
    /// independent wrong values all escape with probability at most about `0.99^k` (under 1%
    /// from 500 of them), and less in tables small enough for the minimum to be a larger share.
    pub const DEFAULT: SamplePolicy = SamplePolicy {
        percent: 1.0,
        minimum: 100_000,
    };

    /// No check at all.
    pub const OFF: SamplePolicy = SamplePolicy {
        percent: 0.0,
        minimum: 0,
    };

    /// Whether the policy checks nothing, whatever the table.
    pub fn is_off(&self) -> bool {
        self.size(u64::MAX) == 0
    }

    /// The sample size for a table of `legal` legal entries: the larger of the percentage and
    /// the minimum, at most `legal`.
    pub fn size(&self, legal: u64) -> u64 {
        let share = (legal as f64 * self.percent.clamp(0.0, 100.0) / 100.0).ceil() as u64;
        share.max(self.minimum).min(legal)
    }
}

impl Default for SamplePolicy {
    fn default() -> SamplePolicy {
        SamplePolicy::DEFAULT
    }
}

/// What a sample check covered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SampleReport {
    /// Legal entries of the table (both sides to move).
    pub legal: u64,
    /// Entries checked.
    pub checked: u64,
    /// The seed the sample was drawn from.
    pub seed: u64,
}

/// SplitMix64: a small, fast, fixed generator, so that a seed means the same sample on every
/// machine and in every version of the dependencies.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`), by multiply-shift: the bias is below `n / 2^64`.
    fn below(&mut self, n: u64) -> u64 {
        ((self.next() as u128 * n as u128) >> 64) as u64
    }
}

/// The entries of a table as numbers: Red to move's slots, then Black to move's.
fn entry_of(size: u64, e: u64) -> (Color, u64) {
    if e < size {
        (Color::Red, e)
    } else {
        (Color::Black, e - size)
    }
}

fn number_of(size: u64, (side, slot): (Color, u64)) -> u64 {
    side.index() as u64 * size + slot
}

/// Legal entries of `table` (both sides to move): those whose code is not the illegal code.
pub fn legal_entries(table: &Table) -> u64 {
    Color::ALL
        .iter()
        .map(|&side| {
            table
                .codes(side)
                .par_iter()
                .filter(|&c| c != Value::ILLEGAL_CODE)
                .count() as u64
        })
        .sum()
}

/// Whether entry `e` (of job slots `slots`) of a table with `index` holds a legal position (from
/// the index alone, as the decoder restores illegal slots).
fn is_legal(index: &TableIndex, slots: SlotRange, e: u64) -> bool {
    let (side, slot) = entry_of(slots.len(), e);
    index.legal_sides(slots.start + slot)[side.index()]
}

/// `n` distinct legal entries of `table` (fewer if it has fewer), drawn uniformly from `seed`,
/// as (side to move, slot) in order of side then slot.
pub fn sample_entries(table: &Table, n: u64, seed: u64) -> Vec<(Color, u64)> {
    let start = table.slots().start;
    draw(table.index(), table.slots(), n, legal_entries(table), seed)
        .into_iter()
        .map(|(side, slot)| (side, start + slot))
        .collect()
}

/// [`sample_entries`] of slots `slots` of a table with `index` and `legal` legal entries there,
/// as job slots (counted from `slots.start`).
fn draw(index: &TableIndex, slots: SlotRange, n: u64, legal: u64, seed: u64) -> Vec<(Color, u64)> {
    let size = slots.len();
    let n = n.min(legal);
    // Drawing until `n` distinct entries are found slows down as the picked entries fill the
    // table; past half of it the complement is drawn instead, so no draw is ever more likely to
    // repeat than to succeed.
    let take_rest = 2 * n > legal;
    let wanted = if take_rest { legal - n } else { n };
    let mut picked = vec![0u64; (2 * size).div_ceil(64) as usize];
    let mut rng = SplitMix(seed);
    let mut found = 0;
    while found < wanted {
        let e = rng.below(2 * size);
        let (word, bit) = ((e / 64) as usize, 1u64 << (e % 64));
        if picked[word] & bit == 0 && is_legal(index, slots, e) {
            picked[word] |= bit;
            found += 1;
        }
    }
    let picked = |e: u64| picked[(e / 64) as usize] & (1 << (e % 64)) != 0;
    if take_rest {
        (0..2 * size)
            .into_par_iter()
            .filter(|&e| !picked(e) && is_legal(index, slots, e))
            .map(|e| entry_of(size, e))
            .collect()
    } else {
        (0..2 * size)
            .filter(|&e| picked(e))
            .map(|e| entry_of(size, e))
            .collect()
    }
}

/// Entries handed to one parallel task.
const ENTRIES_PER_TASK: usize = 1 << 12;

/// Sampled entries checked per round: each round decodes the blocks its entries and their
/// successors lie in and keeps only the codes it needs (an entry's own and its successors'), so
/// a round's memory depends on this count, not on the size of the table.
const ENTRIES_PER_ROUND: usize = 1 << 16;

/// Checks `entries` (side to move, slot) of `table` (whole or a part holding them) one ply deep
/// against the table itself and its dependencies in `deps` (under the table's rule set), in
/// parallel on the current rayon pool. The first entry found wrong is the error.
pub fn check_entries(
    table: &Table,
    deps: &dyn Probe,
    entries: &[(Color, u64)],
) -> Result<(), Box<VerifyError>> {
    let start = table.slots().start;
    let job: Vec<(Color, u64)> = entries
        .iter()
        .map(|&(side, slot)| (side, slot - start))
        .collect();
    check_with(table, deps, &job)
}

fn check_with<C: Codes + Sync + ?Sized>(
    table: &C,
    deps: &dyn Probe,
    entries: &[(Color, u64)],
) -> Result<(), Box<VerifyError>> {
    // The local pass gathers forced draws into these findings for the rule checks; with
    // `may_trap` off it gathers none, and the findings only switch on the local pass's
    // treatment of rule values (positions lost by rule 0 plies away take their value from the
    // rule).
    let rule_findings = match table.rules() {
        RuleSet::Asian => Some(Findings::new(table.slots().len())),
        RuleSet::CyclesAreDraws => None,
    };
    entries.par_chunks(ENTRIES_PER_TASK).try_for_each(|chunk| {
        let pieces = table.index().piece_list();
        let mut pos = SlotPosition::new(table.index(), &pieces, table.slots());
        let mut counts = TableCounts::default();
        let mut local = Local {
            counts: &mut counts,
            found: rule_findings.as_ref(),
            terminal_rounds: 0,
            may_trap: false,
        };
        for &(side, slot) in chunk {
            let possible = pos.load(slot, side);
            verify_slot(table, deps, side, slot, possible, &mut pos, &mut local)?;
        }
        Ok(())
    })
}

/// Why a sample check failed.
#[derive(Debug, Error)]
pub enum SampleError {
    /// A checked entry's value disagrees with its successors: the table is wrong.
    #[error(transparent)]
    Wrong(Box<VerifyError>),
    /// A block could not be read.
    #[error("block {block} of {side} to move cannot be read: {reason}")]
    Block {
        /// Side to move of the block.
        side: Color,
        /// The block.
        block: u64,
        /// What went wrong.
        reason: String,
    },
}

/// Checks a sample of `table`'s legal entries, as many as `policy` asks, drawn from `seed`.
pub fn check_sample(
    table: &Table,
    deps: &dyn Probe,
    policy: SamplePolicy,
    seed: u64,
) -> Result<SampleReport, SampleError> {
    check_sample_blocks(table, &[], legal_entries(table), deps, policy, seed)
}

/// [`check_sample`] of a table read block by block, whose `legal` legal entries are known (an
/// upload's header counts, once its blocks have been checked against them). The entries drawn
/// are those [`sample_entries`] draws from the decoded table. A part's pawn steps into the
/// table's other slices are read from `slices` (parts of the same table, read block by block
/// too) where one holds them, else from `deps`.
pub fn check_sample_blocks<S: BlockSource + ?Sized>(
    src: &S,
    slices: &[&dyn BlockSource],
    legal: u64,
    deps: &dyn Probe,
    policy: SamplePolicy,
    seed: u64,
) -> Result<SampleReport, SampleError> {
    let entries = draw(src.index(), src.slots(), policy.size(legal), legal, seed);
    for round in entries.chunks(ENTRIES_PER_ROUND) {
        let codes = Needed::read(src, round)?;
        if slices.is_empty() {
            check_with(&codes, deps, round).map_err(SampleError::Wrong)?;
        } else {
            let exits = SliceExits::read(src, slices, round, deps)?;
            check_with(&codes, &exits, round).map_err(SampleError::Wrong)?;
        }
    }
    Ok(SampleReport {
        legal,
        checked: entries.len() as u64,
        seed,
    })
}

/// The codes a round of the sample check reads: its entries' own and those of their
/// non-capturing successors, by entry number.
struct Needed<'a> {
    index: &'a TableIndex,
    rules: RuleSet,
    slots: SlotRange,
    entries: Vec<u64>,
    codes: Vec<u16>,
}

/// The entry numbers `visit` pushes for the entries of `round` (each given a position over
/// `index`'s slots `job` to load them into), in parallel, sorted and each once.
fn gather(
    index: &TableIndex,
    job: SlotRange,
    round: &[(Color, u64)],
    visit: impl Fn(&mut SlotPosition, (Color, u64), &mut Vec<u64>) + Sync,
) -> Vec<u64> {
    let mut entries: Vec<u64> = round
        .par_chunks(ENTRIES_PER_TASK)
        .flat_map_iter(|chunk| {
            let pieces = index.piece_list();
            let mut pos = SlotPosition::new(index, &pieces, job);
            let mut out = Vec::new();
            for &entry in chunk {
                visit(&mut pos, entry, &mut out);
            }
            out
        })
        .collect();
    entries.par_sort_unstable();
    entries.dedup();
    entries
}

impl<'a> Needed<'a> {
    /// Gathers the entries the checks of `round` read (exactly those [`verify_slot`] reads)
    /// and reads their codes from `src`, each block decoded once.
    fn read<S: BlockSource + ?Sized>(
        src: &'a S,
        round: &[(Color, u64)],
    ) -> Result<Needed<'a>, SampleError> {
        let index = src.index();
        let job = src.slots();
        let size = job.len();
        let entries = gather(index, job, round, |pos, (side, slot), out| {
            out.push(number_of(size, (side, slot)));
            if !pos.load(slot, side) || pos.board.opponent_in_check() {
                return;
            }
            let opponent = side.opponent();
            let (_, _, slots) = pos.successors(|_| {});
            for &q in slots {
                if q != LEAVES {
                    out.push(number_of(size, (opponent, q as u64)));
                }
            }
        });
        // The entries by block, in order: (side, block, range of `entries`).
        let per_block = src.block_slots().max(1);
        let mut groups: Vec<(Color, u64, std::ops::Range<usize>)> = Vec::new();
        for (i, &e) in entries.iter().enumerate() {
            let (side, slot) = entry_of(size, e);
            let block = slot / per_block;
            match groups.last_mut() {
                Some((s, b, r)) if *s == side && *b == block => r.end = i + 1,
                _ => groups.push((side, block, i..i + 1)),
            }
        }
        let codes: Vec<Vec<u16>> = groups
            .par_iter()
            .map(|(side, block, range)| {
                let codes = src
                    .block(*side, *block)
                    .map_err(|reason| SampleError::Block {
                        side: *side,
                        block: *block,
                        reason,
                    })?;
                let first = block * per_block;
                entries[range.clone()]
                    .iter()
                    .map(|&e| {
                        let slot = entry_of(size, e).1;
                        let stored =
                            codes.get((slot - first) as usize).copied().ok_or_else(|| {
                                SampleError::Block {
                                    side: *side,
                                    block: *block,
                                    reason: format!("it has no slot {slot}"),
                                }
                            })?;
                        Ok(if is_legal(index, job, e) {
                            stored
                        } else {
                            Value::ILLEGAL_CODE
                        })
                    })
                    .collect()
            })
            .collect::<Result<_, _>>()?;
        Ok(Needed {
            index,
            rules: src.rules(),
            slots: job,
            entries,
            codes: codes.concat(),
        })
    }
}

/// The codes a round of the sample check of a part reads in the table's other slices (its
/// pawns' steps into them), by table entry (side-major over the whole index), over `deps` for
/// every other table.
struct SliceExits<'a> {
    index: &'a TableIndex,
    table: TableId,
    entries: Vec<u64>,
    codes: Vec<u16>,
    deps: &'a dyn Probe,
}

impl<'a> SliceExits<'a> {
    /// Gathers, from `slices`, the codes of the positions the quiet moves of `round`'s entries
    /// (of the part `src`) lead to outside the part: each block read once.
    fn read<S: BlockSource + ?Sized>(
        src: &'a S,
        slices: &[&dyn BlockSource],
        round: &[(Color, u64)],
        deps: &'a dyn Probe,
    ) -> Result<SliceExits<'a>, SampleError> {
        let index = src.index();
        let job = src.slots();
        let size = index.size();
        let entries = gather(index, job, round, |pos, (side, slot), out| {
            if !pos.load(slot, side) || pos.board.opponent_in_check() {
                return;
            }
            let opponent = side.opponent();
            pos.successors(|_| {});
            let (moves, slots) = pos.last_successors();
            for (&m, _) in moves.iter().zip(slots).filter(|&(_, &q)| q == LEAVES) {
                if let Some(t) = pos.quiet_target(m) {
                    out.push(number_of(size, (opponent, t)));
                }
            }
        });
        // By source and block, in order: (source, side, block, range of `entries`).
        let mut groups: Vec<(usize, Color, u64, std::ops::Range<usize>)> = Vec::new();
        for (i, &e) in entries.iter().enumerate() {
            let (side, slot) = entry_of(size, e);
            let Some(s) = slices
                .iter()
                .position(|s| s.slots().start <= slot && slot < s.slots().end)
            else {
                // Not held by the slices given: read from `deps` when asked.
                continue;
            };
            let block = (slot - slices[s].slots().start) / slices[s].block_slots().max(1);
            match groups.last_mut() {
                Some((gs, gside, gb, r)) if *gs == s && *gside == side && *gb == block => {
                    r.end = i + 1
                }
                _ => groups.push((s, side, block, i..i + 1)),
            }
        }
        let filled: Vec<(std::ops::Range<usize>, Vec<u16>)> = groups
            .par_iter()
            .map(|(s, side, block, range)| {
                let source = slices[*s];
                let held = source.slots();
                let first = held.start + block * source.block_slots().max(1);
                let stored = source
                    .block(*side, *block)
                    .map_err(|reason| SampleError::Block {
                        side: *side,
                        block: *block,
                        reason: format!("slices {held}: {reason}"),
                    })?;
                let values = entries[range.clone()]
                    .iter()
                    .map(|&e| {
                        let slot = entry_of(size, e).1;
                        if !index.legal_sides(slot)[side.index()] {
                            return Ok(Value::ILLEGAL_CODE);
                        }
                        stored.get((slot - first) as usize).copied().ok_or_else(|| {
                            SampleError::Block {
                                side: *side,
                                block: *block,
                                reason: format!("slices {held}: it has no slot {slot}"),
                            }
                        })
                    })
                    .collect::<Result<Vec<u16>, SampleError>>()?;
                Ok((range.clone(), values))
            })
            .collect::<Result<_, SampleError>>()?;
        // Only the entries a slice given holds, in order (the groups are); the rest are left to
        // `deps`.
        let (mut held, mut codes) = (Vec::new(), Vec::new());
        for (range, values) in filled {
            held.extend_from_slice(&entries[range]);
            codes.extend(values);
        }
        Ok(SliceExits {
            index,
            table: TableId::new(src.rules(), index.signature()),
            entries: held,
            codes,
            deps,
        })
    }
}

impl Probe for SliceExits<'_> {
    fn probe(&self, rules: RuleSet, board: &Board) -> Result<Value, ProbeError> {
        let o = Orientation::of_board(board);
        if TableId::new(rules, o.signature) != self.table {
            return self.deps.probe(rules, board);
        }
        let slot = self
            .index
            .slot_of(board, o.rotated)
            .map_err(|e| ProbeError::Illegal(e.to_string()))?;
        let e = number_of(self.index.size(), (o.side(board.side_to_move()), slot));
        match self.entries.binary_search(&e) {
            Ok(i) => match self.codes[i] {
                Value::ILLEGAL_CODE => Err(ProbeError::Illegal(
                    "the side not to move is in check".into(),
                )),
                c => Ok(Value::decode(c)),
            },
            Err(_) => self.deps.probe(rules, board),
        }
    }

    fn has_table(&self, id: &TableId) -> bool {
        self.deps.has_table(id)
    }

    fn has_slots(&self, id: &TableId, slots: SlotRange) -> bool {
        self.deps.has_slots(id, slots)
    }

    fn table(&self, id: &TableId) -> Option<&Table> {
        self.deps.table(id)
    }
}

impl Codes for Needed<'_> {
    fn index(&self) -> &TableIndex {
        self.index
    }
    fn rules(&self) -> RuleSet {
        self.rules
    }
    fn slots(&self) -> SlotRange {
        self.slots
    }
    fn code(&self, side: Color, slot: u64) -> u16 {
        let e = number_of(self.slots.len(), (side, slot));
        match self.entries.binary_search(&e) {
            Ok(i) => self.codes[i],
            // Needed::read gathers every entry verify_slot reads; anything else is a bug here.
            Err(_) => panic!("the sample check read entry {e}, which it did not gather"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::solve_closure_in_memory;
    use xqtb_core::{MemoryTables, Signature, TableId};

    fn solved(sig: &str, rules: RuleSet) -> (Table, MemoryTables) {
        let s: Signature = sig.parse().unwrap();
        let tables = solve_closure_in_memory(&[s], rules, |_, _| {}).unwrap();
        let table = tables
            .get(&TableId::new(rules, s))
            .unwrap()
            .as_ref()
            .clone();
        (table, tables)
    }

    #[test]
    fn the_policy_takes_the_larger_share_capped_at_the_table() {
        let p = SamplePolicy::DEFAULT;
        assert_eq!(p.size(5_000), 5_000);
        assert_eq!(p.size(1_000_000), 100_000);
        assert_eq!(p.size(30_118_362), 301_184);
        assert_eq!(SamplePolicy::OFF.size(1_000_000), 0);
        assert!(SamplePolicy::OFF.is_off() && !p.is_off());
        let all = SamplePolicy {
            percent: 100.0,
            minimum: 0,
        };
        assert_eq!(all.size(777), 777);
    }

    #[test]
    fn samples_are_distinct_legal_entries_fixed_by_the_seed() {
        let (table, _) = solved("KRvK", RuleSet::CyclesAreDraws);
        let legal = legal_entries(&table);
        // Both ways of drawing: picking entries, and picking the entries left out.
        for n in [100, legal - 100] {
            let a = sample_entries(&table, n, 7);
            assert_eq!(a.len() as u64, n);
            assert!(
                a.windows(2)
                    .all(|w| (w[0].0.index(), w[0].1) < (w[1].0.index(), w[1].1))
            );
            assert!(
                a.iter()
                    .all(|&(side, slot)| table.value(side, slot) != Value::Illegal)
            );
            assert_eq!(a, sample_entries(&table, n, 7), "same seed, same sample");
            assert_ne!(
                a,
                sample_entries(&table, n, 8),
                "another seed, another sample"
            );
        }
        assert_eq!(sample_entries(&table, u64::MAX, 1).len() as u64, legal);
        assert!(sample_entries(&table, 0, 1).is_empty());
    }

    /// Gives the `nth` legal entry with Black to move whose value no rule decides another
    /// value; returns the entry.
    fn flip(table: &mut Table, nth: usize) -> (Color, u64) {
        let side = Color::Black;
        let slot = (0..table.index().size())
            .filter(|&s| {
                let v = table.value(side, s);
                v != Value::Illegal && v.rule().is_none()
            })
            .nth(nth)
            .unwrap();
        let wrong = match table.value(side, slot) {
            Value::Draw => Value::Win(1),
            _ => Value::Draw,
        };
        table.set_code(side, slot as usize, wrong.encode());
        (side, slot)
    }

    #[test]
    fn sound_tables_pass_and_a_wrong_value_in_the_sample_is_caught() {
        for rules in RuleSet::ALL {
            // KRvKN has rule-decided values under the Asian rules; its captures lead into KRvK
            // and into a dead draw.
            let (table, deps) = solved("KRvKN", rules);
            let report = check_sample(&table, &deps, SamplePolicy::DEFAULT, 1).unwrap();
            assert_eq!(report.checked, 100_000);
            assert_eq!(report.legal, legal_entries(&table));
            let all = SamplePolicy {
                percent: 100.0,
                minimum: 0,
            };
            check_sample(&table, &deps, all, 1).expect("every entry of a solved table passes");

            let mut bad = table.clone();
            let (side, slot) = flip(&mut bad, 1234);
            let err = check_entries(&bad, &deps, &[(side, slot)]).unwrap_err();
            assert_eq!((err.side, err.slot), (side, slot), "{rules}: {err}");
            assert!(check_sample(&bad, &deps, all, 1).is_err(), "{rules}");
        }
    }

    /// A table read in blocks of 1,000 slots, counting the blocks decoded; `broken` fails.
    struct Blocks<'a> {
        table: &'a Table,
        decoded: std::sync::atomic::AtomicU64,
        broken: Option<(Color, u64)>,
    }

    impl BlockSource for Blocks<'_> {
        fn index(&self) -> &TableIndex {
            self.table.index()
        }
        fn rules(&self) -> RuleSet {
            self.table.rules()
        }
        fn block_slots(&self) -> u64 {
            1000
        }
        fn block(&self, side: Color, block: u64) -> Result<Vec<u16>, String> {
            if self.broken == Some((side, block)) {
                return Err("broken".into());
            }
            self.decoded
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let codes = self.table.codes(side);
            let start = (block * 1000) as usize;
            Ok(codes
                .slice(start..(start + 1000).min(codes.len()))
                .into_owned())
        }
    }

    #[test]
    fn a_table_read_block_by_block_is_checked_like_the_decoded_table() {
        let (table, deps) = solved("KRvKN", RuleSet::Asian);
        let legal = legal_entries(&table);
        let blocks = |t| Blocks {
            table: t,
            decoded: 0.into(),
            broken: None,
        };
        let src = blocks(&table);
        let report =
            check_sample_blocks(&src, &[], legal, &deps, SamplePolicy::DEFAULT, 3).unwrap();
        assert_eq!(
            report,
            check_sample(&table, &deps, SamplePolicy::DEFAULT, 3).unwrap()
        );
        // Two rounds of 65,536 and one of the rest; each decodes every block at most once.
        let per_round = 2 * table.index().size().div_ceil(1000);
        let decoded = src.decoded.into_inner();
        assert!(decoded > per_round && decoded <= 2 * per_round, "{decoded}");

        let mut bad = table.clone();
        flip(&mut bad, 777);
        let all = SamplePolicy {
            percent: 100.0,
            minimum: 0,
        };
        match check_sample_blocks(&blocks(&bad), &[], legal, &deps, all, 3) {
            Err(SampleError::Wrong(_)) => {}
            other => panic!("a wrong value passed: {other:?}"),
        }
        let broken = Blocks {
            broken: Some((Color::Black, 5)),
            ..blocks(&table)
        };
        match check_sample_blocks(&broken, &[], legal, &deps, all, 3) {
            Err(SampleError::Block {
                side,
                block,
                reason,
            }) => {
                assert_eq!((side, block, reason.as_str()), (Color::Black, 5, "broken"))
            }
            other => panic!("a block that cannot be read passed: {other:?}"),
        }
    }
}
