//! A table's codes read a block at a time from a [`BlockSource`], for the verifier: the blocks
//! read are kept in a cache of bounded size shared by the threads, so that a table of any size
//! is verified in little memory.
//!
//! The verifier reads slots in order, and the successors of a slot lie in its own home
//! configuration (whose slots span some 45 blocks of 16,384) or in the few configurations its
//! home pieces' moves reach, each near the same offset: a thread reads a few hundred blocks
//! again and again while it passes through one configuration. Each thread keeps the blocks it
//! read last in a small direct-mapped front (a lookup without locks), the shared cache behind it
//! holds the threads' working sets, and a block missing from both is decoded again.
//!
//! A stored block's illegal slots hold a filler, not the illegal code, so each block read gets
//! its illegal slots back from [`Legal`], a bit per entry. The verifier checks every entry's own
//! legality against its position, so a wrong bit cannot pass unnoticed.

use crate::CHUNK_SLOTS;
use crate::table_codes::Codes;
use quick_cache::Weighter;
use quick_cache::sync::Cache;
use rayon::prelude::*;
use std::cell::RefCell;
use std::sync::{Arc, Mutex};
use xiangqi::Color;
use xqtb_core::{BlockSource, Codes as TableCodes, RuleSet, SlotRange, TableIndex, Value};

/// Blocks a thread keeps in front of the shared cache (each side's block of a number has one
/// place).
const FRONT_PLACES: usize = 64;

/// Which entries of a table (or a part) are legal, a bit each per side to move, by slot from
/// the first slot the table holds. Solving a table in parts ([`crate::solve_range_in_parts`])
/// gives it at no cost; [`Legal::of`] computes it from the index.
pub struct Legal {
    slots: SlotRange,
    bits: [Vec<u64>; 2],
}

impl std::fmt::Debug for Legal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The bits are a bit per entry: far too many to print.
        f.debug_struct("Legal")
            .field("slots", &self.slots)
            .finish_non_exhaustive()
    }
}

impl Legal {
    /// The legal entries of the slots `slots` of `index`, computed in parallel.
    pub fn of(index: &TableIndex, slots: SlotRange) -> Legal {
        let words_per_chunk = (CHUNK_SLOTS / 64) as usize;
        let mut legal = Legal::none(slots);
        let [red, black] = &mut legal.bits;
        red.par_chunks_mut(words_per_chunk)
            .zip(black.par_chunks_mut(words_per_chunk))
            .enumerate()
            .for_each(|(c, (red, black))| {
                let first = slots.start + c as u64 * CHUNK_SLOTS;
                for (w, (red, black)) in red.iter_mut().zip(black.iter_mut()).enumerate() {
                    let start = first + 64 * w as u64;
                    for (k, slot) in (start..(start + 64).min(slots.end)).enumerate() {
                        let [r, b] = index.legal_sides(slot);
                        *red |= (r as u64) << k;
                        *black |= (b as u64) << k;
                    }
                }
            });
        legal
    }

    /// The legal bits of `part`, a range of the slots covered starting at a multiple of 64
    /// slots from the first, per side to move: a bit per slot, 64 to a word.
    pub fn words(&self, part: SlotRange) -> [&[u64]; 2] {
        let (first, words) = self.words_of(part);
        self.bits.each_ref().map(|b| &b[first..first + words])
    }

    /// Takes the legal bits of `part` that [`Legal::words`] gave.
    pub fn add_words(&mut self, part: SlotRange, words: [&[u64]; 2]) -> Result<(), String> {
        let (first, n) = self.words_of(part);
        for (bits, words) in self.bits.iter_mut().zip(words) {
            if words.len() != n {
                return Err(format!("{} words of legal bits for {n}", words.len()));
            }
            for (b, w) in bits[first..first + n].iter_mut().zip(words) {
                *b |= w;
            }
        }
        Ok(())
    }

    /// The first word and the number of words of `part`.
    fn words_of(&self, part: SlotRange) -> (usize, usize) {
        let first = part.start - self.slots.start;
        assert!(
            first.is_multiple_of(64) && part.end <= self.slots.end,
            "a part of the slots covered, starting on a word"
        );
        ((first / 64) as usize, part.len().div_ceil(64) as usize)
    }

    /// No entry of `slots` legal, until the parts solved or [`Legal::add_words`] say
    /// otherwise.
    pub fn none(slots: SlotRange) -> Legal {
        let words = slots.len().div_ceil(64) as usize;
        Legal {
            slots,
            bits: [vec![0; words], vec![0; words]],
        }
    }

    /// Takes the legal entries of a part of the table from its codes: those not illegal. The
    /// part starts at a multiple of 64 slots from the table's first.
    pub(crate) fn add_part(&mut self, slots: SlotRange, codes: [&TableCodes; 2]) {
        let first = slots.start - self.slots.start;
        assert!(first.is_multiple_of(64), "a part starts on a word");
        for side in Color::ALL {
            let bits = &mut self.bits[side.index()][(first / 64) as usize..];
            let codes = codes[side.index()];
            for (w, bits) in bits.iter_mut().take(codes.len().div_ceil(64)).enumerate() {
                let end = (64 * w + 64).min(codes.len());
                for (k, i) in (64 * w..end).enumerate() {
                    *bits |= ((codes.get(i) != Value::ILLEGAL_CODE) as u64) << k;
                }
            }
        }
    }

    /// Whether `side` to move at table slot `first + slot` is legal, `slot` counted from the
    /// first slot held.
    #[inline]
    fn get(&self, side: Color, slot: u64) -> bool {
        self.bits[side.index()][(slot / 64) as usize] >> (slot % 64) & 1 == 1
    }

    /// The slots it covers.
    pub(crate) fn slots(&self) -> SlotRange {
        self.slots
    }
}

/// A block's place in the shared cache.
type BlockKey = (Color, u64);

/// Weighs a cached block by its bytes.
#[derive(Clone)]
struct BlockBytes;

impl Weighter<BlockKey, Arc<[u16]>> for BlockBytes {
    fn weight(&self, _key: &BlockKey, codes: &Arc<[u16]>) -> u64 {
        2 * codes.len() as u64 + 64
    }
}

/// What the threads reading one table share: the table, its legal entries, the cache, and the
/// first block that could not be read (its entries read as illegal until the verifier reports
/// the failure).
pub(crate) struct SharedBlocks<'a, S: ?Sized> {
    source: &'a S,
    legal: &'a Legal,
    cache: Cache<BlockKey, Arc<[u16]>, BlockBytes>,
    pub(crate) failed: Mutex<Option<String>>,
}

impl<'a, S: BlockSource + ?Sized> SharedBlocks<'a, S> {
    pub(crate) fn new(source: &'a S, legal: &'a Legal, bytes: u64) -> Self {
        let block_bytes = 2 * source.block_slots().max(1);
        let items = (bytes / block_bytes).clamp(16, 1 << 20) as usize;
        SharedBlocks {
            source,
            legal,
            cache: Cache::with_weighter(items, bytes.max(1), BlockBytes),
            failed: Mutex::new(None),
        }
    }

    /// The table read.
    pub(crate) fn source(&self) -> &'a S {
        self.source
    }

    /// The code of job slot `slot` (from the source's first slot) with `side` to move, read
    /// without a reader's front: for the odd lookup, such as a move into another slice.
    /// [`Value::ILLEGAL_CODE`] where illegal, or where its block cannot be read (kept in
    /// `failed`, like a reader's).
    pub(crate) fn code(&self, side: Color, slot: u64) -> u16 {
        let block_slots = self.source.block_slots().max(1);
        let block = slot / block_slots;
        self.load(side, block)
            .and_then(|codes| codes.get((slot - block * block_slots) as usize).copied())
            .unwrap_or(Value::ILLEGAL_CODE)
    }

    /// A reader for one thread.
    pub(crate) fn reader(&self) -> BlockReader<'_, 'a, S> {
        BlockReader {
            shared: self,
            block_slots: self.source.block_slots().max(1),
            front: RefCell::new(vec![None; FRONT_PLACES]),
        }
    }

    /// Block `block` of `side`, its illegal slots restored, or `None` when it cannot be read.
    fn load(&self, side: Color, block: u64) -> Option<Arc<[u16]>> {
        self.cache
            .get_or_insert_with(&(side, block), || {
                let mut codes = self.source.block(side, block)?;
                let first = block * self.source.block_slots().max(1);
                for (k, c) in codes.iter_mut().enumerate() {
                    if !self.legal.get(side, first + k as u64) {
                        *c = Value::ILLEGAL_CODE;
                    }
                }
                Ok::<_, String>(Arc::from(codes))
            })
            .map_err(|e| {
                let mut failed = self.failed.lock().expect("block read failures");
                failed.get_or_insert(format!("block {block} of {side}: {e}"));
            })
            .ok()
    }
}

/// A place of a reader's front: the side and number of the block it holds, and its codes.
type Place = Option<(Color, u64, Arc<[u16]>)>;

/// One thread's reader of a shared table (see the module documentation).
pub(crate) struct BlockReader<'s, 'a, S: ?Sized> {
    shared: &'s SharedBlocks<'a, S>,
    block_slots: u64,
    front: RefCell<Vec<Place>>,
}

impl<S: BlockSource + ?Sized> Codes for BlockReader<'_, '_, S> {
    fn index(&self) -> &TableIndex {
        self.shared.source.index()
    }
    fn rules(&self) -> RuleSet {
        self.shared.source.rules()
    }
    fn slots(&self) -> SlotRange {
        self.shared.source.slots()
    }
    #[inline]
    fn code(&self, side: Color, slot: u64) -> u16 {
        let block = slot / self.block_slots;
        let offset = (slot - block * self.block_slots) as usize;
        let mut front = self.front.borrow_mut();
        let place = &mut front[(2 * block as usize + side.index()) % FRONT_PLACES];
        match place {
            Some((s, b, codes)) if *s == side && *b == block => codes[offset],
            _ => match self.shared.load(side, block) {
                Some(codes) => {
                    let code = codes[offset];
                    *place = Some((side, block, codes));
                    code
                }
                None => Value::ILLEGAL_CODE,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::{JobError, Legal, verify, verify_blocks, verify_blocks_of_worker};
    use xiangqi::Color;
    use xqtb_core::{
        BlockSource, Probe, Rule, RuleSet, Signature, SlotRange, Table, TableCounts, TableId,
        TableIndex, Value,
    };

    /// A table read in blocks of `n` slots: small blocks, more of them than a reader keeps,
    /// whose illegal slots hold the code before them, as stored blocks do.
    struct Blocks<'a>(&'a Table, u64);

    impl BlockSource for Blocks<'_> {
        fn index(&self) -> &TableIndex {
            self.0.index()
        }
        fn rules(&self) -> RuleSet {
            self.0.rules()
        }
        fn slots(&self) -> SlotRange {
            self.0.slots()
        }
        fn block_slots(&self) -> u64 {
            self.1
        }
        fn block(&self, side: Color, block: u64) -> Result<Vec<u16>, String> {
            let codes = self.0.codes(side);
            let start = (block * self.1) as usize;
            let end = (start + self.1 as usize).min(codes.len());
            if block == 7 && self.1 == 99 {
                return Err("a damaged block".into());
            }
            let mut codes = codes.slice(start..end).into_owned();
            let mut previous = Value::DRAW_CODE;
            for c in &mut codes {
                if *c == Value::ILLEGAL_CODE {
                    *c = previous;
                }
                previous = *c;
            }
            Ok(codes)
        }
    }

    /// Verifying from blocks counts what verifying the decoded table counts, catches a wrong
    /// value, and reports a block it cannot read; only a `cycles-are-draws` table is verified a
    /// worker's share at a time.
    #[test]
    fn a_table_verified_from_its_blocks_is_verified_as_whole() {
        let sig: Signature = "KRvKN".parse().unwrap();
        let rules = RuleSet::CyclesAreDraws;
        let tables = crate::solve_closure_in_memory(&[sig], rules, |_, _| {}).unwrap();
        let table = tables.get(&TableId::new(rules, sig)).unwrap();
        assert!(
            table.index().size() > 600 * 100,
            "more blocks than a reader keeps"
        );
        let whole = verify(table, &tables).unwrap();
        let legal = Legal::of(table.index(), table.slots());
        let blocks = verify_blocks(&Blocks(table, 100), &legal, &tables, &|_| {}).unwrap();
        assert_eq!(whole, blocks);

        let mut red = table.codes(Color::Red).to_vec();
        let won = red
            .iter()
            .position(|&c| matches!(Value::decode(c), Value::Win(_)));
        red[won.unwrap()] = Value::DRAW_CODE;
        let black = table.codes(Color::Black).to_vec();
        let wrong = Table::new(table.index().clone(), rules, [red, black]);
        let err = verify_blocks(&Blocks(&wrong, 100), &legal, &tables, &|_| {}).unwrap_err();
        assert!(matches!(err, JobError::Verify(_)), "{err}");

        // Shared by three workers in groups of 65,536 slots (KRvKN's 328,500 make five): each
        // verifies its own groups, together every entry once, and only the owner of the wrong
        // value's group finds it.
        let group_slots = 1 << 16;
        let wrong_owner = (won.unwrap() as u64 / group_slots) % 3;
        let mut sum = xqtb_core::TableCounts::default();
        for worker in 0..3 {
            let of = |t: &Blocks| -> Result<xqtb_core::TableCounts, JobError> {
                verify_blocks_of_worker(t, &legal, &tables, &|_| {}, (worker, 3), group_slots)
            };
            sum = sum.merge(of(&Blocks(table, 100)).unwrap());
            assert_eq!(
                of(&Blocks(&wrong, 100)).is_err(),
                worker as u64 == wrong_owner,
                "worker {worker}"
            );
        }
        assert_eq!(sum, whole);

        let err = verify_blocks(&Blocks(table, 99), &legal, &tables, &|_| {}).unwrap_err();
        assert!(err.to_string().contains("a damaged block"), "{err}");

        let asian = crate::solve_closure_in_memory(&[sig], RuleSet::Asian, |_, _| {}).unwrap();
        let table = asian.get(&TableId::new(RuleSet::Asian, sig)).unwrap();
        let of_worker =
            |t: &Blocks| verify_blocks_of_worker(t, &legal, &asian, &|_| {}, (0, 3), group_slots);
        let err = of_worker(&Blocks(table, 100)).unwrap_err();
        assert!(err.to_string().contains("cycles-are-draws"), "{err}");
    }

    /// `table` verified decoded and from its blocks (small ones, illegal slots filled): the
    /// same counts, or both refuse it for a wrong value (their errors, in that order).
    fn both_ways(table: &Table, deps: &dyn Probe) -> Result<TableCounts, (String, String)> {
        let legal = Legal::of(table.index(), table.slots());
        let blocks = verify_blocks(&Blocks(table, 100), &legal, deps, &|_| {});
        match (verify(table, deps), blocks) {
            (Ok(whole), Ok(blocks)) => {
                assert_eq!(whole, blocks, "the counts differ");
                Ok(whole)
            }
            (Err(whole), Err(JobError::Verify(blocks))) => {
                assert_eq!(whole.signature, blocks.signature);
                Err((whole.to_string(), blocks.to_string()))
            }
            (whole, blocks) => panic!("decoded: {whole:?}; from blocks: {blocks:?}"),
        }
    }

    /// Entries of `table` with a rule value.
    fn rule_values(table: &Table) -> usize {
        Color::ALL
            .iter()
            .map(|&side| {
                let codes = table.codes(side);
                codes
                    .iter()
                    .filter(|&c| Value::decode(c).rule().is_some())
                    .count()
            })
            .sum()
    }

    /// `table` with every entry that `pick` takes (side to move, code) set to `to`, and how many
    /// were.
    fn changed(table: &Table, pick: impl Fn(Color, u16) -> bool, to: Value) -> (Table, usize) {
        let mut changed = table.clone();
        let mut n = 0;
        changed.map_codes(|side, _, c| {
            if pick(side, c) {
                n += 1;
                to.encode()
            } else {
                c
            }
        });
        (changed, n)
    }

    /// Asian tables with rule values verified from their blocks pass as they pass decoded, with
    /// the same counts, and are refused where they are refused decoded: a terminal of each rule
    /// stored as a draw, and every rule value forgotten (which only the search for traps among
    /// the draws can tell).
    #[test]
    fn an_asian_table_verified_from_its_blocks_is_verified_as_whole() {
        for name in ["KRvKN", "KCAvKN"] {
            let sig: Signature = name.parse().unwrap();
            let rules = RuleSet::Asian;
            let tables = crate::solve_closure_in_memory(&[sig], rules, |_, _| {}).unwrap();
            let table = tables.get(&TableId::new(rules, sig)).unwrap();
            assert!(rule_values(table) > 1000, "{name}");
            let counts = both_ways(table, &tables).unwrap_or_else(|e| panic!("{name}: {e:?}"));
            assert!(counts.legal() > 0, "{name}");

            for rule in [Rule::PerpetualCheck, Rule::PerpetualChase] {
                let terminal =
                    |v: Value| matches!(v, Value::RuleLoss(r) if r.plies == 0 && r.rule == rule);
                // The first terminal of the rule, Black to move.
                let codes = table.codes(Color::Black);
                let Some(t) = (0..codes.len()).find(|&i| terminal(Value::decode(codes.get(i))))
                else {
                    continue;
                };
                let mut bad = (**table).clone();
                bad.set_code(Color::Black, t, Value::DRAW_CODE);
                let (_, blocks) = both_ways(&bad, &tables).expect_err(name);
                eprintln!("{name}, a terminal of {} as a draw: {blocks}", rule.name());
            }
            let forgotten = |_: Color, c: u16| Value::decode(c).rule().is_some();
            let (bad, n) = changed(table, forgotten, Value::Draw);
            assert!(n > 1000);
            let (whole, blocks) = both_ways(&bad, &tables).expect_err(name);
            assert!(whole.contains("trapped into"), "{name}: {whole}");
            assert!(blocks.contains("trapped into"), "{name}: {blocks}");
        }
    }

    /// An Asian table of several pawn slices is verified from its blocks slice by slice, as
    /// decoded: each slice reads the others through the same blocks, like captures. So is a
    /// job of several slices, reading the slices before it from `deps`. A wrong value in one
    /// slice is refused both ways.
    #[test]
    fn an_asian_table_of_slices_verified_from_its_blocks_is_verified_as_whole() {
        let sig: Signature = "KNvKPP".parse().unwrap();
        let rules = RuleSet::Asian;
        let id = TableId::new(rules, sig);
        // Without the table itself: its slices are read from its own blocks.
        let below: Vec<Signature> = sig.closure().into_iter().filter(|&d| d != sig).collect();
        let tables = crate::solve_closure_in_memory(&below, rules, |_, _| {}).unwrap();
        assert!(!tables.has_table(&id));
        let table = &crate::solve(id, &tables, &|_| {}).unwrap();
        let index = table.index();
        assert!(index.slices().len() > 1);
        assert!(rule_values(table) > 0);
        both_ways(table, &tables).unwrap();

        // The slices from the fourth on in slot order read the first three.
        let first = SlotRange {
            start: 0,
            end: index.slice_span(2).end,
        };
        let next = SlotRange {
            start: first.end,
            end: index.slice_span(6).end,
        };
        assert!(index.slices_in(next) > 1);
        let part = |slots: SlotRange| {
            let codes = Color::ALL.map(|side| {
                let at = slots.start as usize..slots.end as usize;
                table.codes(side).slice(at).into_owned()
            });
            Table::part(index.clone(), rules, slots, codes)
        };
        let mut done = crate::SliceDeps::new(id, &tables);
        done.insert(std::sync::Arc::new(part(first)));
        let later = part(next);
        let counts = both_ways(&later, &done).unwrap();
        assert!(counts.legal() > 0);

        // A terminal stored as a draw, in whichever slice holds the first one.
        let terminal = |c: u16| matches!(Value::decode(c), Value::RuleLoss(r) if r.plies == 0);
        let (side, t) = Color::ALL
            .iter()
            .find_map(|&side| {
                let codes = table.codes(side);
                (0..codes.len())
                    .find(|&i| terminal(codes.get(i)))
                    .map(|i| (side, i))
            })
            .expect("a terminal");
        let mut bad = table.clone();
        bad.set_code(side, t, Value::DRAW_CODE);
        both_ways(&bad, &tables).expect_err("caught");
    }
}
