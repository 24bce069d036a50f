//! The status: jobs, tables, workers, rate and time left, as every front end reports them, and
//! the gauges set from it.

use crate::app::App;
use crate::scheduler::JobState;
use crate::workers::WorkerReport;
use std::collections::HashMap;
use xqtb_core::{JobKey, TableId};

/// One job in a status report.
#[derive(Clone, Debug)]
pub struct JobReport {
    /// The job.
    pub key: JobKey,
    /// Where it stands.
    pub state: JobState,
    /// Leases granted so far.
    pub attempts: u32,
    /// The worker holding it, when leased.
    pub worker: Option<String>,
    /// Progress reported by the last heartbeat (0..1).
    pub progress: f64,
    /// Why the last attempt failed, if it did.
    pub last_error: Option<String>,
    /// Estimated peak memory to solve it ([`xqtb_core::JobCost::least_bytes`]).
    pub memory_bytes: u64,
    /// Why no registered worker can take it (each has too little memory), if so.
    pub unholdable: Option<String>,
    /// Its seats and exchange, while several workers share it.
    pub share: Option<crate::shares::ShareReport>,
}

/// One table in a status report: its jobs (one, or one per pawn slice when it is solved in
/// slices) by state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableReport {
    /// The table.
    pub table: TableId,
    /// Its jobs.
    pub jobs: u32,
    /// Its jobs waiting for a dependency.
    pub waiting: u32,
    /// Its jobs ready to lease.
    pub ready: u32,
    /// Its jobs leased.
    pub leased: u32,
    /// Its jobs committed.
    pub finished: u32,
    /// Its jobs failed for good.
    pub failed: u32,
    /// Entries of the table (slots times both sides to move, padding between slices included).
    pub entries_total: u64,
    /// Entries of its committed jobs.
    pub entries_done: u64,
}

impl TableReport {
    fn new(table: TableId) -> TableReport {
        TableReport {
            table,
            jobs: 0,
            waiting: 0,
            ready: 0,
            leased: 0,
            finished: 0,
            failed: 0,
            entries_total: 0,
            entries_done: 0,
        }
    }

    fn add(&mut self, state: JobState, entries: u64) {
        self.jobs += 1;
        self.entries_total += entries;
        match state {
            JobState::Waiting => self.waiting += 1,
            JobState::Ready => self.ready += 1,
            JobState::Leased => self.leased += 1,
            JobState::Finished => {
                self.finished += 1;
                self.entries_done += entries;
            }
            JobState::Failed => self.failed += 1,
        }
    }

    /// Where the table stands: `finished` (every job committed; the table is stored whole),
    /// `failed` (a job failed for good), `solving` (some jobs leased or committed), `ready` or
    /// `waiting`.
    pub fn state(&self) -> &'static str {
        if self.finished == self.jobs {
            "finished"
        } else if self.failed > 0 {
            "failed"
        } else if self.leased + self.finished > 0 {
            "solving"
        } else if self.ready > 0 {
            "ready"
        } else {
            "waiting"
        }
    }

    /// Every state [`TableReport::state`] names, for documentation checks.
    pub const STATES: [&'static str; 5] = ["waiting", "ready", "solving", "finished", "failed"];
}

/// Jobs, workers, rate and time left.
#[derive(Clone, Debug, Default)]
pub struct StatusReport {
    /// Jobs in plan order.
    pub jobs: Vec<JobReport>,
    /// Tables in plan order, each with its jobs counted by state.
    pub tables: Vec<TableReport>,
    /// Registered workers, by id.
    pub workers: Vec<WorkerReport>,
    /// Jobs per state: waiting, ready, leased, finished, failed.
    pub waiting: u32,
    /// Jobs ready to lease.
    pub ready: u32,
    /// Jobs leased.
    pub leased: u32,
    /// Jobs finished.
    pub finished: u32,
    /// Jobs failed for good.
    pub failed: u32,
    /// Index entries (slots times both sides) finished per second over this run.
    pub entries_per_second: f64,
    /// Estimated seconds left, `None` when unknown.
    pub eta_seconds: Option<f64>,
    /// Entries of finished jobs.
    pub entries_done: u64,
    /// Entries of every planned job.
    pub entries_total: u64,
}

impl App {
    /// Jobs, workers, rate and time left. A pure read: leases expire in [`App::tick`].
    pub fn status(&self) -> StatusReport {
        let s = self.jobs.lock();
        let mut r = StatusReport::default();
        let mut remaining = 0u64;
        let mut table_at: HashMap<TableId, usize> = HashMap::new();
        let holder = self.workers.largest();
        for job in s.jobs() {
            let entries = job.key.entries();
            let need = s.cost(&job.key).map_or(0, |c| c.least_bytes());
            match job.state {
                JobState::Waiting => r.waiting += 1,
                JobState::Ready => r.ready += 1,
                JobState::Leased => r.leased += 1,
                JobState::Finished => r.finished += 1,
                JobState::Failed => r.failed += 1,
            }
            r.entries_total += entries;
            let t = *table_at.entry(job.key.table).or_insert_with(|| {
                r.tables.push(TableReport::new(job.key.table));
                r.tables.len() - 1
            });
            r.tables[t].add(job.state, entries);
            if job.state == JobState::Finished {
                r.entries_done += entries;
            } else if job.state != JobState::Failed {
                remaining += entries;
            }
            r.jobs.push(JobReport {
                key: job.key,
                state: job.state,
                attempts: job.attempts,
                worker: job.lease.as_ref().map(|l| l.worker.clone()),
                progress: job.progress,
                last_error: job.last_error.clone(),
                memory_bytes: need,
                unholdable: match job.state {
                    JobState::Finished | JobState::Failed => None,
                    _ => why_unholdable(need, &holder),
                },
                share: match job.state {
                    JobState::Leased => self.shares.report(&job.key),
                    _ => None,
                },
            });
        }
        let secs = self.started.elapsed().as_secs_f64();
        let done_here = r.entries_done.saturating_sub(self.entries_at_start);
        if secs > 0.0 && done_here > 0 {
            r.entries_per_second = done_here as f64 / secs;
            r.eta_seconds = Some(remaining as f64 / r.entries_per_second);
        } else if remaining == 0 {
            r.eta_seconds = Some(0.0);
        }
        r.workers = self.workers.reports(|l| {
            s.leased_job(l)
                .or_else(|| self.shares.seat_holder(l).map(|(key, _)| key))
        });
        r
    }

    /// Sets the gauges from the current state (after every change and on every tick).
    pub(crate) fn update_gauges(&self) {
        let status = self.status();
        for (state, n) in [
            ("waiting", status.waiting),
            ("ready", status.ready),
            ("leased", status.leased),
            ("finished", status.finished),
            ("failed", status.failed),
        ] {
            metrics::gauge!("xqtb_jobs", "state" => state).set(n as f64);
        }
        for state in TableReport::STATES {
            let n = status.tables.iter().filter(|t| t.state() == state).count();
            metrics::gauge!("xqtb_tables", "state" => state).set(n as f64);
        }
        let slices = |t: &&TableReport| t.jobs > 1;
        metrics::gauge!("xqtb_slice_jobs", "state" => "finished").set(
            status
                .tables
                .iter()
                .filter(slices)
                .map(|t| t.finished)
                .sum::<u32>() as f64,
        );
        metrics::gauge!("xqtb_slice_jobs", "state" => "open").set(
            status
                .tables
                .iter()
                .filter(slices)
                .map(|t| t.jobs - t.finished - t.failed)
                .sum::<u32>() as f64,
        );
        metrics::gauge!("xqtb_leases_active").set(status.leased as f64);
        let unholdable = status
            .jobs
            .iter()
            .filter(|j| j.unholdable.is_some())
            .count();
        metrics::gauge!("xqtb_jobs_unholdable").set(unholdable as f64);
        metrics::gauge!("xqtb_solve_entries_per_second").set(status.entries_per_second);
        metrics::gauge!("xqtb_workers").set(status.workers.len() as f64);
        let tb = &self.tablebase;
        let (lookups, loads) = (tb.block_lookups(), tb.blocks_loaded());
        metrics::counter!("xqtb_block_cache_hits_total").absolute(lookups.saturating_sub(loads));
        metrics::counter!("xqtb_block_cache_misses_total").absolute(loads);
        metrics::gauge!("xqtb_block_cache_bytes").set(tb.cached_bytes() as f64);
        metrics::gauge!("xqtb_tables_open").set(tb.tables_open() as f64);
        if lookups > 0 {
            metrics::gauge!("xqtb_block_cache_hit_ratio")
                .set(lookups.saturating_sub(loads) as f64 / lookups as f64);
        }
    }
}

/// Why a job needing `need` bytes cannot be leased to any registered worker, if it cannot.
fn why_unholdable(need: u64, holder: &Option<(String, Option<u64>)>) -> Option<String> {
    // With no worker registered at all the worker list says so; nothing is singled out.
    match holder {
        None | Some((_, None)) => None,
        Some((id, Some(m))) if *m < need => Some(format!(
            "needs {} to solve; the largest registered worker, {id}, has {}",
            human_bytes(need),
            human_bytes(*m)
        )),
        Some(_) => None,
    }
}

/// Bytes in decimal units, as operators size machines: `950 B`, `12.3 kB`, `171 MB`, `4.1 GB`,
/// `2.3 TB`.
pub fn human_bytes(n: u64) -> String {
    let x = n as f64;
    let scaled = |v: f64, unit: &str| {
        if v >= 100.0 {
            format!("{v:.0} {unit}")
        } else {
            format!("{v:.1} {unit}")
        }
    };
    if x >= 1e12 {
        scaled(x / 1e12, "TB")
    } else if x >= 1e9 {
        scaled(x / 1e9, "GB")
    } else if x >= 1e6 {
        scaled(x / 1e6, "MB")
    } else if x >= 1e3 {
        scaled(x / 1e3, "kB")
    } else {
        format!("{n} B")
    }
}
