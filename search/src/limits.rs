//! What a search may spend, and the handle that watches and stops it from another thread.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

/// Longest mate, in plies, that a search may look for: distances in the tables go much further,
/// but a search that deep has long run out of any time limit.
pub const MAX_PLIES: u16 = 255;

/// What one search may spend.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Longest win searched for, in plies, counting the distances read from the tables.
    pub max_plies: u16,
    /// Most positions expanded, over all threads.
    pub nodes: Option<u64>,
    /// Longest time spent.
    pub time: Option<Duration>,
    /// Threads searching at once.
    pub threads: usize,
    /// Bytes of the transposition table; the check of a proof keeps its memo within a quarter
    /// as much again.
    pub hash_bytes: u64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_plies: 41,
            nodes: None,
            time: None,
            threads: 1,
            hash_bytes: 64 << 20,
        }
    }
}

impl Limits {
    /// These limits capped by `cap`: the smaller of each, a missing limit taking `cap`'s. A
    /// server applies its own caps to what a request asks for this way.
    pub fn capped_by(&self, cap: &Limits) -> Limits {
        let min = |a: Option<u64>, b: Option<u64>| match (a, b) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        Limits {
            max_plies: self.max_plies.min(cap.max_plies),
            nodes: min(self.nodes, cap.nodes),
            time: match (self.time, cap.time) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            },
            threads: self.threads.clamp(1, cap.threads.max(1)),
            hash_bytes: self.hash_bytes.min(cap.hash_bytes),
        }
    }
}

/// Why a search stopped before it had an answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum StopReason {
    /// It reached [`Limits::max_plies`] without a proof.
    MaxPlies,
    /// It expanded [`Limits::nodes`] positions.
    Nodes,
    /// It ran for [`Limits::time`].
    Time,
    /// [`Control::cancel`] was called.
    Cancelled,
}

impl StopReason {
    /// `"max-plies"`, `"nodes"`, `"time"` or `"cancelled"`.
    pub const fn name(self) -> &'static str {
        match self {
            StopReason::MaxPlies => "max-plies",
            StopReason::Nodes => "nodes",
            StopReason::Time => "time",
            StopReason::Cancelled => "cancelled",
        }
    }
}

/// Shared between a running search and whoever watches it: progress to read, a switch to stop
/// it. A search started with a control that is already cancelled stops at once.
#[derive(Debug)]
pub struct Control {
    cancelled: AtomicBool,
    nodes: AtomicU64,
    table_hits: AtomicU64,
    plies: AtomicU32,
    started: Instant,
}

impl Default for Control {
    fn default() -> Control {
        Control::new()
    }
}

/// A running search's progress.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Progress {
    /// Positions expanded so far.
    pub nodes: u64,
    /// Positions whose value was read from a table.
    pub table_hits: u64,
    /// The longest win being searched for, in plies.
    pub plies: u32,
    /// Time since the control was made.
    pub elapsed: Duration,
}

impl Control {
    /// A control for a search starting now.
    pub fn new() -> Control {
        Control {
            cancelled: AtomicBool::new(false),
            nodes: AtomicU64::new(0),
            table_hits: AtomicU64::new(0),
            plies: AtomicU32::new(0),
            started: Instant::now(),
        }
    }

    /// Asks the search to stop; it answers `unknown` (or what it proved already) soon after.
    pub fn cancel(&self) {
        self.cancelled.store(true, Relaxed);
    }

    /// Whether [`Control::cancel`] was called.
    pub fn is_cancelled(&self) -> bool {
        self.cancelled.load(Relaxed)
    }

    /// The progress so far.
    pub fn progress(&self) -> Progress {
        Progress {
            nodes: self.nodes.load(Relaxed),
            table_hits: self.table_hits.load(Relaxed),
            plies: self.plies.load(Relaxed),
            elapsed: self.started.elapsed(),
        }
    }

    pub(crate) fn add(&self, nodes: u64, table_hits: u64) -> u64 {
        self.table_hits.fetch_add(table_hits, Relaxed);
        self.nodes.fetch_add(nodes, Relaxed) + nodes
    }

    pub(crate) fn searching(&self, plies: u16) {
        self.plies.fetch_max(plies as u32, Relaxed);
    }

    /// Why the search must stop now, if it must.
    pub(crate) fn stop_reason(&self, limits: &Limits, nodes: u64) -> Option<StopReason> {
        if self.is_cancelled() {
            Some(StopReason::Cancelled)
        } else if limits.nodes.is_some_and(|n| nodes >= n) {
            Some(StopReason::Nodes)
        } else if limits.time.is_some_and(|t| self.started.elapsed() >= t) {
            Some(StopReason::Time)
        } else {
            None
        }
    }
}
