//! What a job costs a worker, estimated from its size alone: the memory it holds while solving,
//! the bytes its table takes once stored, and its CPU time. The scheduler leases a job only to a
//! worker that can hold it and orders ready jobs by the CPU time left on their longest path;
//! `xqtb plan` prints these estimates and simulates a run with them.
//!
//! The rates are measured (BENCHMARKS.md, "Cost model": per table the commands, the measured
//! peaks, CPU times and stored sizes, and this model's predictions next to them), not derived:
//! they move when the solver does, and that section says how to measure them again.
//!
//! - Memory: `BASE_BYTES + 2 × entries + overhead(rules) × entries + 2.2 × dependency entries`,
//!   with the dependency term capped at [`DEPENDENCY_CACHE_BYTES`]: a worker that cannot hold
//!   the dependency tables beside the job reads them through a block cache of that size
//!   instead ([`JobCost::reads_dependencies_whole`]). Two bytes per entry are the table being solved; the overhead is the rule phase's and the
//!   verifier's bookkeeping at their peak (asian), or the encoded blocks and the store's page
//!   cache at the end (cycles-are-draws); a dependency costs its two-byte codes and a little of
//!   the store's cache. Fitted to be at or above every measured peak and not far above it on
//!   large tables (small ones are dominated by the base; the tests below hold it to both): the
//!   scheduler refuses a worker whose memory is below the estimate, so too low an estimate is
//!   an out-of-memory kill and too high a slightly idle worker. The base is a fresh worker's; a
//!   worker's memory between jobs grows over a run (its cache store's pages), and the scheduler
//!   counts what it holds beyond the base as taken ([`memory_for_jobs`]).
//! - CPU: `rate(rules, sides) × pieces × entries`, kings counted in the pieces; CPU seconds of a
//!   worker that has its cores to itself (on a loaded machine fewer are measured: rayon's idle
//!   threads spin less). Under asian rules a table whose weaker side has an attacking piece
//!   costs more than one whose weaker side has only defenders: only the former has positions
//!   the repetition rules decide (perpetual checks and chases need an attacker), and deciding
//!   them is most of the rule phase.
//! - Stored bytes: a rate per entry, rule set and the same split, the mean of the measured
//!   tables weighted by their entries. Single tables compress very differently, so one table
//!   can be far from it either way; totals over many tables are what it is for.
//!
//! Tables larger than the measured ones are extrapolated.

use crate::key::JobKey;
use crate::rules::RuleSet;
use xiangqi::Color;

/// Bytes a worker holds besides the job's tables: the binary, its threads and allocator arenas,
/// the local cache store and the encoder. Set just above what a fresh worker and `xqtb solve`
/// of a small table were measured to hold, so that small jobs are not underestimated.
pub const BASE_BYTES: u64 = 16_000_000;

/// Bytes per entry of a table held in memory: one two-byte code per slot and side to move, for
/// the job's own table while it is solved and for each dependency loaded to value captures.
pub const TABLE_BYTES_PER_ENTRY: f64 = 2.0;

/// Bytes per dependency entry on top of its code: its blocks in the store's page cache and
/// while they are decoded. Fitted on two tables of the same size whose dependencies differ in
/// size (KRNvKABB and KRNvKR), so that the difference in their peaks is the dependencies' alone.
const DEPENDENCY_OVERHEAD_BYTES_PER_ENTRY: f64 = 0.2;

/// Bytes of decompressed blocks a job caches when it reads its dependency tables from the store
/// instead of decoding them whole: what the memory estimate counts for them at most. Large
/// enough to hold the blocks that the captures of a run of neighbouring slots land in.
pub const DEPENDENCY_CACHE_BYTES: u64 = 128_000_000;

/// Bytes per entry a job with its states on local disk holds in memory through its levels:
/// each entry's kind, two bits (`solver/src/level_groups.rs`).
const KINDS_BYTES_PER_ENTRY: f64 = 0.25;

/// Bytes per entry a worker sharing a job holds through the levels beside the kinds when it has
/// the memory: a bit per entry, set when a pass writes the entry's kind, so that only those
/// entries are sent to the others (`solver/src/level_groups.rs`).
const WRITTEN_BYTES_PER_ENTRY: f64 = 0.125;

/// Bytes per entry that verifying a table from its blocks holds for which entries are legal: a
/// bit each.
const LEGAL_BYTES_PER_ENTRY: f64 = 0.125;

/// Bytes per entry that verifying a table from its blocks was measured to hold beyond its
/// legal bits, its block cache, the encoded table and the dependency cache (BENCHMARKS.md,
/// "Memory": KRNvKRAB), rounded up, so that the estimate covers the peak. What holds them is not
/// pinned down yet (the heap that encoding the parts leaves is the first suspect).
const VERIFY_HEAP_BYTES_PER_ENTRY: f64 = 0.1;

/// Bytes of one group of states a job with its states on local disk holds in memory: the
/// default of `xqtb solve --group-memory`, and what a worker uses.
pub const GROUP_BYTES: u64 = 64 << 20;

/// CPU a job costs with its states on local disk, as a multiple of its CPU in memory: the
/// largest ratio measured (BENCHMARKS.md, "Memory"), rounded up, so that the plan does not
/// promise a run faster than the slowest seen.
const STATES_ON_DISK_CPU_FACTOR: f64 = 1.4;

/// Bytes of decoded blocks the verifier of a table of `entries` read from its blocks caches:
/// an eighth of the table decoded (two bytes an entry), within bounds (BENCHMARKS.md, "Memory").
pub fn verify_cache_bytes(entries: u64) -> u64 {
    (2 * entries / 8).clamp(8 << 20, 128 << 20)
}

/// The memory a worker of `memory_bytes` has for a job's [`JobCost::solve_bytes`] while it holds
/// `resident_bytes` between jobs: what it holds beyond [`BASE_BYTES`] (mostly its cache store's
/// pages, which grow over a long run) is not there for the job.
pub fn memory_for_jobs(memory_bytes: u64, resident_bytes: u64) -> u64 {
    memory_bytes.saturating_sub(held_beyond_base(resident_bytes))
}

/// What a worker holding `resident_bytes` between jobs holds beyond a fresh worker's base.
fn held_beyond_base(resident_bytes: u64) -> u64 {
    resident_bytes.saturating_sub(BASE_BYTES)
}

/// What one job costs, as estimated before it runs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct JobCost {
    /// Index slots the job solves (per side to move).
    pub slots: u64,
    /// Entries the job solves (slots times both sides to move).
    pub entries: u64,
    /// Entries of the dependency tables the worker loads to value captures, and of the slices
    /// of its own table a pawn slice's advances lead into.
    pub dependency_entries: u64,
    /// Peak bytes the worker holds while solving, verifying and uploading the job with its
    /// states in memory, reading the dependency tables through a cache when they take more than
    /// [`DEPENDENCY_CACHE_BYTES`].
    pub solve_bytes: u64,
    /// Peak bytes with the job's states on local disk instead, a group of [`GROUP_BYTES`] in
    /// memory at a time, and its dependencies through the cache (the states then take a byte
    /// per entry of local disk): for the jobs that can be solved so (a whole table under
    /// `cycles-are-draws`), `None` for the others.
    pub states_on_disk_bytes: Option<u64>,
    /// Peak bytes of each worker sharing the job that sends the others only the entries it
    /// wrote ([`JobCost::states_on_disk_bytes`], since every such worker keeps its states on
    /// local disk, with a bit per entry more through the levels to mark them; a worker with
    /// less memory sends whole words instead): `None` for the jobs that cannot be shared.
    pub seat_bytes: Option<u64>,
    /// Bytes the dependency tables take decoded whole (not the slices of the job's own table,
    /// which are always held whole).
    pub dependency_bytes: u64,
    /// Bytes the job's part of its table takes compressed in the store and in a shard file.
    pub stored_bytes: u64,
    /// Local disk the worker needs for the job: the compressed tables (and slices of its own
    /// table) it depends on in its cache, and the job's own result; with its states on local
    /// disk, a byte per entry more.
    pub disk_bytes: u64,
    /// CPU seconds to solve, verify and encode it (divide by threads for wall time).
    pub cpu_seconds: f64,
}

/// Measured rates of one rule set.
struct Rates {
    /// Bytes per solved entry on top of its code at the job's peak.
    overhead_bytes_per_entry: f64,
    /// Compressed bytes per entry in the store.
    stored_bytes_per_entry: BySides,
    /// CPU nanoseconds per entry and piece, kings included.
    cpu_ns_per_entry_piece: BySides,
}

/// A rate by whether only the stronger side has attacking pieces (R N C P) or both sides have
/// some.
struct BySides {
    one: f64,
    both: f64,
}

/// The fitted rates: BENCHMARKS.md, "Cost model", lists the tables they were fitted on and how
/// far each prediction is from its measurement.
fn rates(rules: RuleSet) -> Rates {
    match rules {
        RuleSet::CyclesAreDraws => Rates {
            overhead_bytes_per_entry: 0.15,
            stored_bytes_per_entry: BySides {
                one: 0.107,
                both: 0.070,
            },
            cpu_ns_per_entry_piece: BySides {
                one: 97.0,
                both: 104.0,
            },
        },
        RuleSet::Asian => Rates {
            overhead_bytes_per_entry: 0.8,
            // With no attacker on the weaker side the rules decide nothing: the same table.
            stored_bytes_per_entry: BySides {
                one: 0.107,
                both: 0.144,
            },
            cpu_ns_per_entry_piece: BySides {
                one: 97.0,
                both: 181.0,
            },
        },
    }
}

impl JobCost {
    /// The memory this job needs of a worker that holds `resident_bytes` between jobs, as the
    /// scheduler matches them ([`memory_for_jobs`]): the estimate and what the worker holds
    /// beyond the base.
    pub fn solve_bytes_beside(&self, resident_bytes: u64) -> u64 {
        self.solve_bytes + held_beyond_base(resident_bytes)
    }

    /// The least memory a worker needs for this job: with its states on local disk where it
    /// can, else in memory. The scheduler leases a job to any worker that has this much.
    pub fn least_bytes(&self) -> u64 {
        self.states_on_disk_bytes
            .map_or(self.solve_bytes, |d| d.min(self.solve_bytes))
    }

    /// Whether a worker with `memory_bytes` for this job (as [`memory_for_jobs`] gives it)
    /// keeps the job's states on local disk: when they do not fit in memory and the job can.
    pub fn keeps_states_on_disk(&self, memory_bytes: u64) -> bool {
        memory_bytes != 0
            && self.solve_bytes > memory_bytes
            && self
                .states_on_disk_bytes
                .is_some_and(|d| d < self.solve_bytes)
    }

    /// CPU seconds on a worker with `memory_bytes` for this job: more when it keeps the job's
    /// states on local disk ([`JobCost::keeps_states_on_disk`]).
    pub fn cpu_seconds_with(&self, memory_bytes: u64) -> f64 {
        if self.keeps_states_on_disk(memory_bytes) {
            self.cpu_seconds * STATES_ON_DISK_CPU_FACTOR
        } else {
            self.cpu_seconds
        }
    }

    /// Peak bytes with every dependency table decoded whole.
    pub fn in_memory_bytes(&self) -> u64 {
        self.solve_bytes - self.dependency_bytes.min(DEPENDENCY_CACHE_BYTES) + self.dependency_bytes
    }

    /// Whether a worker with `memory_bytes` for this job decodes its dependency tables whole
    /// (faster: a capture is then one lookup) rather than reading them through a block cache.
    pub fn reads_dependencies_whole(&self, memory_bytes: u64) -> bool {
        self.in_memory_bytes() <= memory_bytes
    }

    /// The estimated cost of `key`.
    pub fn of(key: &JobKey) -> JobCost {
        let r = rates(key.table.rules);
        let entries = key.entries();
        let table_entries: u64 = key
            .table
            .dependencies()
            .iter()
            .map(|d| 2 * crate::TableIndex::size_of(&d.signature))
            .sum();
        let slice_entries: u64 = key.slice_dependencies().iter().map(|s| 2 * s.len()).sum();
        let per_dependency_entry = TABLE_BYTES_PER_ENTRY + DEPENDENCY_OVERHEAD_BYTES_PER_ENTRY;
        let dependency_bytes = (per_dependency_entry * table_entries as f64).ceil() as u64;
        let held = (TABLE_BYTES_PER_ENTRY + r.overhead_bytes_per_entry) * entries as f64
            + per_dependency_entry * slice_entries as f64;
        let material = key.table.signature.material();
        let pieces = material.piece_count() as f64;
        // The canonical table gives the stronger side to Red.
        let sides_of = |m: &crate::Material, rate: &BySides| {
            if m.attackers(Color::Black) > 0 {
                rate.both
            } else {
                rate.one
            }
        };
        let by_sides = |rate: &BySides| sides_of(material, rate);
        let stored = by_sides(&r.stored_bytes_per_entry) * entries as f64;
        let dependencies_stored: f64 = key
            .table
            .dependencies()
            .iter()
            .map(|d| {
                let entries = 2 * crate::TableIndex::size_of(&d.signature);
                sides_of(d.signature.material(), &r.stored_bytes_per_entry) * entries as f64
            })
            .sum::<f64>()
            + by_sides(&r.stored_bytes_per_entry) * slice_entries as f64;
        // With the states on disk: each entry's kind and one group through the levels, while the
        // finished parts are encoded; then each entry's legality, the verifier's block cache and
        // the encoded table or part (`worker::solve_in_groups`). A pawn slice also holds the
        // slices its pawn advances lead into, decoded.
        let on_disk = key.table.rules == RuleSet::CyclesAreDraws;
        let on_disk_with = |levels_bytes_per_entry: f64| {
            let levels = levels_bytes_per_entry * entries as f64
                + GROUP_BYTES.min(2 * key.slots.len()) as f64;
            let verify = (LEGAL_BYTES_PER_ENTRY + VERIFY_HEAP_BYTES_PER_ENTRY) * entries as f64
                + verify_cache_bytes(entries) as f64;
            let slices = per_dependency_entry * slice_entries as f64;
            BASE_BYTES
                + (levels.max(verify) + stored + slices).ceil() as u64
                + dependency_bytes.min(DEPENDENCY_CACHE_BYTES)
        };
        let states_on_disk_bytes = on_disk.then(|| on_disk_with(KINDS_BYTES_PER_ENTRY));
        let seat_bytes =
            on_disk.then(|| on_disk_with(KINDS_BYTES_PER_ENTRY + WRITTEN_BYTES_PER_ENTRY));
        JobCost {
            slots: key.slots.len(),
            entries,
            dependency_entries: table_entries + slice_entries,
            solve_bytes: BASE_BYTES
                + held.ceil() as u64
                + dependency_bytes.min(DEPENDENCY_CACHE_BYTES),
            states_on_disk_bytes,
            seat_bytes,
            dependency_bytes,
            stored_bytes: stored.ceil() as u64,
            disk_bytes: (stored + dependencies_stored).ceil() as u64,
            cpu_seconds: by_sides(&r.cpu_ns_per_entry_piece) * pieces * entries as f64 * 1e-9,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Limits, Signature, TableId};

    fn cost(sig: &str, rules: RuleSet) -> JobCost {
        let sig: Signature = sig.parse().unwrap();
        JobCost::of(&JobKey::whole(TableId::new(rules, sig)))
    }

    /// Peaks of BENCHMARKS.md's "Cost model" from 2026-12-01 (`xqtb solve` of one table, its
    /// dependencies stored, 2 threads), the lowest and highest peak RSS of the runs in bytes,
    /// when every state and table was held at two bytes per entry, as a table with more than
    /// 256 codes to a side still is: what the memory rates are fitted to.
    const TWO_BYTE_PEAKS: [(&str, RuleSet, u64, u64); 8] = [
        ("KRNvKR", RuleSet::CyclesAreDraws, 139_440_000, 139_920_000),
        (
            "KRNvKAABB",
            RuleSet::CyclesAreDraws,
            444_210_000,
            444_620_000,
        ),
        ("KRNvKRA", RuleSet::CyclesAreDraws, 703_860_000, 710_060_000),
        ("KRPvKR", RuleSet::Asian, 105_880_000, 106_260_000),
        ("KRNvKR", RuleSet::Asian, 177_720_000, 178_600_000),
        ("KRNvKABB", RuleSet::Asian, 215_860_000, 218_750_000),
        ("KRNvKAABB", RuleSet::Asian, 443_760_000, 455_590_000),
        ("KRNvKRA", RuleSet::Asian, 848_170_000, 875_460_000),
    ];

    /// Measurements of BENCHMARKS.md's "Cost model" from 2026-12-06, the same way, two runs
    /// each: the highest peak RSS in bytes and the median CPU seconds on the otherwise idle
    /// machine.
    const MEASURED: [(&str, RuleSet, u64, f64); 8] = [
        ("KRNvKR", RuleSet::CyclesAreDraws, 78_393_344, 33.14),
        ("KRNvKAABB", RuleSet::CyclesAreDraws, 240_922_624, 80.83),
        ("KRNvKRA", RuleSet::CyclesAreDraws, 373_866_496, 157.33),
        ("KRPvKR", RuleSet::Asian, 90_923_008, 36.32),
        ("KRNvKR", RuleSet::Asian, 156_508_160, 48.41),
        ("KRNvKABB", RuleSet::Asian, 177_401_856, 39.69),
        ("KRNvKAABB", RuleSet::Asian, 346_107_904, 79.79),
        ("KRNvKRA", RuleSet::Asian, 764_022_784, 257.92),
    ];

    /// Peaks with the states on local disk (BENCHMARKS.md, "Memory", 2026-12-06): `xqtb solve
    /// SIG --rules cycles-are-draws --threads 2 --states-on-disk DIR --dependency-cache 128MB`
    /// (the worker's cache; groups of the default 64 MiB) from a store of the dependencies.
    const ON_DISK_PEAKS: [(&str, u64); 2] = [("KRNvKRA", 228_814_848), ("KRNvKRAB", 785_403_904)];

    #[test]
    fn estimates_with_states_on_disk_cover_their_peaks_and_only_where_they_can_be() {
        for (sig, peak) in ON_DISK_PEAKS {
            let c = cost(sig, RuleSet::CyclesAreDraws);
            let need = c.states_on_disk_bytes.unwrap();
            assert!(need >= peak, "{sig}: {need} < measured {peak}");
            assert!(
                (need as f64) <= 1.35 * peak as f64,
                "{sig}: {need} against {peak}"
            );
            assert!(need < c.solve_bytes && c.least_bytes() == need);
            // A worker that holds the job in memory does; one that cannot keeps it on disk,
            // for more CPU.
            assert!(!c.keeps_states_on_disk(c.solve_bytes));
            assert!(c.keeps_states_on_disk(need));
            assert!(c.cpu_seconds_with(need) > c.cpu_seconds_with(c.solve_bytes));
            // A worker sharing the job holds a bit per entry more, through the levels only.
            let seat = c.seat_bytes.unwrap();
            assert!(
                seat > need && seat <= need + c.entries / 8 + 1,
                "{sig}: {seat}"
            );
        }
        // The rule phase is solved in memory; a pawn slice keeps its states on disk, holding
        // the slices its pawn advances lead into.
        assert_eq!(cost("KRNvKRA", RuleSet::Asian).states_on_disk_bytes, None);
        assert_eq!(cost("KRNvKRA", RuleSet::Asian).seat_bytes, None);
        let large = TableId::new(RuleSet::CyclesAreDraws, "KRAABBvKPAABB".parse().unwrap());
        let slices = JobKey::jobs_of(large, 0);
        let (first, last) = (JobCost::of(&slices[0]), JobCost::of(slices.last().unwrap()));
        assert!(!slices[0].is_whole_table() && slices[0].slice_dependencies().is_empty());
        assert!(!slices.last().unwrap().slice_dependencies().is_empty());
        for c in [first, last] {
            assert!(c.states_on_disk_bytes.unwrap() < c.solve_bytes);
        }
    }

    #[test]
    fn memory_estimates_cover_the_two_byte_peaks_by_at_most_a_fifth() {
        for (sig, rules, low, high) in TWO_BYTE_PEAKS {
            let need = cost(sig, rules).in_memory_bytes();
            // At or above every run (a worker below the estimate is never sent the job, so an
            // estimate under a real peak is an out-of-memory kill), and not wastefully above.
            assert!(need >= high, "{sig} {rules}: {need} < measured {high}");
            assert!(
                (need as f64) <= 1.2 * low as f64,
                "{sig} {rules}: {need} more than 20% over measured {low}"
            );
        }
    }

    #[test]
    fn memory_estimates_cover_todays_peaks() {
        for (sig, rules, high, _) in MEASURED {
            let need = cost(sig, rules).in_memory_bytes();
            assert!(need >= high, "{sig} {rules}: {need} < measured {high}");
        }
    }

    #[test]
    fn cpu_estimates_of_the_large_tables_are_within_fifteen_percent() {
        for (sig, rules, _, cpu) in MEASURED {
            let est = cost(sig, rules).cpu_seconds;
            assert!(
                (est / cpu - 1.0).abs() <= 0.15,
                "{sig} {rules}: estimated {est:.1} s, measured {cpu} s"
            );
        }
    }

    #[test]
    fn stored_estimates_add_up_over_the_measured_tables() {
        // Stored bytes measured (identical in every run), tables of 10 M entries or more; the
        // asian tables with attackers on both sides as stored with indexed blocks.
        let measured: [(&str, u64, u64); 8] = [
            ("KRvKPP", 759_753, 799_166),
            ("KRAvKRA", 556_882, 607_515),
            ("KRNvKAB", 1_517_281, 1_517_281),
            ("KRPvKR", 1_660_436, 3_188_737),
            ("KRNvKABB", 5_706_205, 5_706_205),
            ("KRNvKR", 4_453_216, 7_719_556),
            ("KRNvKAABB", 12_323_895, 12_323_895),
            ("KRNvKRA", 19_276_561, 42_938_172),
        ];
        for (i, rules) in [RuleSet::CyclesAreDraws, RuleSet::Asian]
            .into_iter()
            .enumerate()
        {
            let pick = |m: &(&str, u64, u64)| if i == 0 { m.1 } else { m.2 };
            let est: u64 = measured.iter().map(|m| cost(m.0, rules).stored_bytes).sum();
            let real: u64 = measured.iter().map(pick).sum();
            let ratio = est as f64 / real as f64;
            assert!((0.85..=1.15).contains(&ratio), "{rules}: {est} for {real}");
        }
    }

    #[test]
    fn dependencies_count_at_most_the_cache_a_job_reads_them_through() {
        // KRNvKRAB's dependencies decode to far more than the cache: the estimate counts the
        // cache, and a worker decodes them whole only when it holds the larger figure.
        let c = cost("KRNvKRAB", RuleSet::Asian);
        assert!(c.dependency_bytes > 10 * DEPENDENCY_CACHE_BYTES, "{c:?}");
        assert_eq!(
            c.in_memory_bytes() - c.solve_bytes,
            c.dependency_bytes - DEPENDENCY_CACHE_BYTES
        );
        assert!(!c.reads_dependencies_whole(c.solve_bytes));
        assert!(!c.reads_dependencies_whole(c.in_memory_bytes() - 1));
        assert!(c.reads_dependencies_whole(c.in_memory_bytes()));
        // Small dependencies are counted whole.
        let small = cost("KRvKN", RuleSet::Asian);
        assert_eq!(small.in_memory_bytes(), small.solve_bytes);
        assert!(small.reads_dependencies_whole(small.solve_bytes));
    }

    #[test]
    fn a_job_needs_disk_for_its_dependencies_and_its_result() {
        let c = cost("KRNvKRAB", RuleSet::Asian);
        let deps: u64 = TableId::new(RuleSet::Asian, "KRNvKRAB".parse().unwrap())
            .dependencies()
            .iter()
            .map(|d| JobCost::of(&JobKey::whole(*d)).stored_bytes)
            .sum();
        assert!(c.disk_bytes.abs_diff(c.stored_bytes + deps) <= 16, "{c:?}");
        let alone = cost("KRvK", RuleSet::Asian);
        assert!(alone.disk_bytes >= alone.stored_bytes);
    }

    #[test]
    fn what_a_worker_holds_beyond_the_base_is_taken_from_its_memory() {
        let c = cost("KRNvKR", RuleSet::Asian);
        let grown = BASE_BYTES + 40_000_000;
        assert_eq!(c.solve_bytes_beside(0), c.solve_bytes);
        assert_eq!(c.solve_bytes_beside(BASE_BYTES), c.solve_bytes);
        assert_eq!(c.solve_bytes_beside(grown), c.solve_bytes + 40_000_000);
        // A worker fits the job exactly when the job's need beside what it holds fits.
        let memory = c.solve_bytes_beside(grown);
        assert!(memory_for_jobs(memory, grown) >= c.solve_bytes);
        assert!(memory_for_jobs(memory - 1, grown) < c.solve_bytes);
        assert_eq!(memory_for_jobs(1000, u64::MAX), 0);
    }

    #[test]
    fn costs_grow_with_the_table_and_the_rules() {
        let small = cost("KRvK", RuleSet::Asian);
        let big = cost("KRNvKR", RuleSet::Asian);
        assert_eq!(big.entries, 59_058_000);
        assert_eq!(big.dependency_entries, 3 * 657_000);
        assert!(big.cpu_seconds > 100.0 * small.cpu_seconds);
        // A table with no dependency loads none.
        assert_eq!(small.dependency_entries, 0);
        // Every table costs at least as much as each table its captures lead into, and at least
        // as much under asian rules as when cycles are draws.
        let limits = Limits {
            attackers_per_side: 2,
            total_attackers: 2,
            pawns_per_side: 2,
            defenders_per_side: 4,
        };
        let sigs: Vec<Signature> = Signature::enumerate(&limits)
            .into_iter()
            .filter(|s| s.material().piece_count() <= 7)
            .collect();
        assert!(sigs.len() > 300, "{}", sigs.len());
        for s in sigs {
            let of = |rules, s| JobCost::of(&JobKey::whole(TableId::new(rules, s)));
            for rules in RuleSet::ALL {
                let c = of(rules, s);
                assert!(c.in_memory_bytes() > BASE_BYTES + 2 * (c.entries + c.dependency_entries));
                for d in s.capture_targets() {
                    let dc = of(rules, d);
                    assert!(dc.solve_bytes < c.solve_bytes, "{d} {s} {rules}");
                    assert!(dc.cpu_seconds < c.cpu_seconds, "{d} {s} {rules}");
                }
            }
            let (cad, asian) = (of(RuleSet::CyclesAreDraws, s), of(RuleSet::Asian, s));
            assert!(cad.solve_bytes < asian.solve_bytes, "{s}");
            // Equal where the weaker side has no attacker: there the rules decide nothing, and
            // both rule sets were measured to cost the same.
            assert!(cad.cpu_seconds <= asian.cpu_seconds, "{s}");
            assert!(cad.stored_bytes <= asian.stored_bytes, "{s}");
        }
    }
}
