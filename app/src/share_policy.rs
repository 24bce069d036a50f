//! Which jobs the coordinator shares between workers, and how long a shared job takes: the one
//! policy the coordinator's seats (`shares.rs`), its leasing order
//! ([`crate::scheduler`]) and the plan's simulation ([`crate::simulate`]) all follow.

use xqtb_core::{JobCost, JobKey, RuleSet};

/// Speed-up per worker of a table shared by several, fitted to two workers of one thread
/// sharing KRNvKRAB against one (BENCHMARKS.md, "Cluster"); assumed the same for more workers,
/// where the barriers of each pass may cost more.
pub const SHARED_EFFICIENCY: f64 = 0.89;

/// Bytes the workers sharing a table send in all per entry, each batch going to every other
/// worker: the start's words and the entries the levels wrote (each resolution sent once, by
/// the worker that made it), fitted to KRNvKRAB shared by two (docs/scaling.md, "Traffic":
/// the larger of the two tables measured there).
pub const RELAYED_BYTES_PER_ENTRY: f64 = 0.14;

/// The same for workers without the memory of a seat ([`JobCost::seat_bytes`]), which send
/// the words of kinds the levels wrote in whole: fitted the same way.
pub const RELAYED_WORD_BYTES_PER_ENTRY: f64 = 0.41;

/// Passes of a shared table, each ending at a barrier (a round trip to the coordinator): the
/// most of the tables measured (docs/scaling.md, "Traffic"); the levels of larger tables may
/// take more.
pub const SHARED_PASSES: u32 = 140;

/// The round trip of a barrier between a worker and the coordinator: an assumption for
/// machines on one local network.
pub const BARRIER_ROUND_TRIP_SECONDS: f64 = 0.001;

/// How the coordinator shares jobs between workers (`xqtb coordinator --share-by`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sharing {
    /// The most workers one job is shared by (1: no job is shared).
    pub workers: usize,
    /// Jobs of at least this many entries are shared (`cycles-are-draws` jobs only, whole
    /// tables or pawn slices: the rule phase is not shared yet).
    pub from_entries: u64,
    /// Failed seats leased again before the job's attempt is given up.
    pub max_replacements: u32,
}

impl Default for Sharing {
    fn default() -> Sharing {
        Sharing {
            workers: 1,
            from_entries: 1 << 30,
            max_replacements: 4,
        }
    }
}

impl Sharing {
    /// Whether job `key` is shared when workers are free for it: a `cycles-are-draws` job (a
    /// whole table or a pawn slice; the rule phase is not shared yet) of at least the entries
    /// asked, when jobs may be shared at all.
    pub fn shares(&self, key: &JobKey) -> bool {
        self.workers > 1
            && key.table.rules == RuleSet::CyclesAreDraws
            && key.entries() >= self.from_entries
    }

    /// The CPU seconds of each of `seats` workers sharing a job of `cost` when each can give
    /// it `memory_bytes` (0: any): [`SHARED_EFFICIENCY`] times as fast per worker as one
    /// worker keeping its states on local disk, which every seat does.
    pub fn seat_cpu_seconds(cost: &JobCost, seats: usize, memory_bytes: u64) -> f64 {
        let memory = match memory_bytes {
            0 => cost.least_bytes(),
            m => cost.least_bytes().min(m),
        };
        cost.cpu_seconds_with(memory) / (seats as f64 * SHARED_EFFICIENCY)
    }

    /// The bytes the coordinator relays for a job of `cost` shared by `seats` workers, of which
    /// `sending_words` lack a seat's memory and send whole words: every kind a worker sends
    /// (its share of the job's) and every worker's part of the stored table go to each of the
    /// `seats - 1` others.
    pub fn relayed_bytes(cost: &JobCost, seats: usize, sending_words: usize) -> f64 {
        let share = |rate: f64| rate * cost.entries as f64 / seats.max(1) as f64;
        let kinds = seats.saturating_sub(sending_words) as f64 * share(RELAYED_BYTES_PER_ENTRY)
            + sending_words as f64 * share(RELAYED_WORD_BYTES_PER_ENTRY);
        seats.saturating_sub(1) as f64 * (kinds + cost.stored_bytes as f64)
    }

    /// The wall seconds the barriers of a shared job add: a round trip per pass.
    pub fn barrier_seconds() -> f64 {
        f64::from(SHARED_PASSES) * BARRIER_ROUND_TRIP_SECONDS
    }
}
