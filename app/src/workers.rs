//! The worker registry: who registered, with what memory, which lease each holds, what it last
//! reported, and which are quarantined (an upload of theirs failed the sample check, so they get
//! no more jobs). Kept in memory only: workers register again after a coordinator restart.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use xqtb_core::JobKey;

/// How long a worker may stay silent before a new registration forgets it.
const FORGET_SILENT_WORKERS: Duration = Duration::from_secs(600);

/// A registered worker.
#[derive(Clone, Debug)]
struct WorkerInfo {
    name: String,
    threads: u32,
    /// Memory it can give one job, `None` when it did not say.
    memory_bytes: Option<u64>,
    /// What it held between jobs at its last lease request, `None` when it did not say.
    resident_bytes: Option<u64>,
    last_seen: Instant,
    lease: Option<String>,
    progress: f64,
    phase: String,
    /// Why it gets no more jobs: an upload of it failed the sample check.
    quarantined: Option<String>,
}

/// What a newly registered worker is told.
#[derive(Clone, Debug)]
pub struct Registration {
    /// Its id for later calls.
    pub worker_id: String,
    /// How often to heartbeat while holding a lease.
    pub heartbeat_interval_ms: u32,
}

/// One worker in a status report.
#[derive(Clone, Debug)]
pub struct WorkerReport {
    /// Its id.
    pub worker_id: String,
    /// The name it registered with.
    pub name: String,
    /// Solver threads.
    pub threads: u32,
    /// Memory it can give one job, `None` when it did not say.
    pub memory_bytes: Option<u64>,
    /// What it held between jobs at its last lease request, `None` when it did not say.
    pub resident_bytes: Option<u64>,
    /// The job it holds.
    pub current_job: Option<JobKey>,
    /// Progress of that job (0..1).
    pub progress: f64,
    /// What it is doing (`idle`, `starting`, `quarantined`, `lost` when it missed four
    /// heartbeats, or the phase it reported).
    pub phase: String,
    /// Milliseconds since it last called in.
    pub last_seen_ms_ago: u64,
    /// Why it gets no more jobs (an upload of it failed the sample check), if so.
    pub quarantined: Option<String>,
}

/// The registered workers, by id. Where the scheduler's lock is also taken, it is taken first.
pub(crate) struct Workers {
    registry: Mutex<HashMap<String, WorkerInfo>>,
    next_id: Mutex<u64>,
    heartbeat_ms: u32,
}

impl Workers {
    /// No workers yet; each is told to heartbeat every `heartbeat_ms`.
    pub(crate) fn new(heartbeat_ms: u32) -> Workers {
        Workers {
            registry: Mutex::new(HashMap::new()),
            next_id: Mutex::new(1),
            heartbeat_ms,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, WorkerInfo>> {
        self.registry.lock().expect("workers lock")
    }

    /// Registers a worker with its solver threads and the memory it can give one job (`None`:
    /// not said, so it is trusted with any job).
    pub(crate) fn register(
        &self,
        name: &str,
        threads: u32,
        memory_bytes: Option<u64>,
        version: &str,
    ) -> Registration {
        let id = {
            let mut n = self.next_id.lock().expect("lock");
            let id = format!("w{}-{}", *n, name);
            *n += 1;
            id
        };
        tracing::info!(worker = %id, threads, memory_bytes, version, "worker registered");
        let mut workers = self.lock();
        // A restarted worker registers anew: forget the entries of those long silent, so that
        // neither `status` nor the map grows with every restart.
        workers.retain(|_, w| w.last_seen.elapsed() < FORGET_SILENT_WORKERS);
        workers.insert(
            id.clone(),
            WorkerInfo {
                name: name.into(),
                threads,
                memory_bytes,
                resident_bytes: None,
                last_seen: Instant::now(),
                lease: None,
                progress: 0.0,
                phase: "idle".into(),
                quarantined: None,
            },
        );
        Registration {
            worker_id: id,
            heartbeat_interval_ms: self.heartbeat_ms,
        }
    }

    /// Notes that `id` asked for a job, records what it holds between jobs (0: not said) and
    /// returns the memory it can give one job, `None` when it did not say (or is unknown). An
    /// idle worker calls in only by asking for jobs, so asking counts as being seen.
    pub(crate) fn memory_for_lease(&self, id: &str, resident_bytes: u64) -> Option<u64> {
        let mut memory = None;
        self.touch(id, |w| {
            w.resident_bytes = (resident_bytes > 0).then_some(resident_bytes);
            memory = w.memory_bytes;
        });
        memory
    }

    /// Notes that `id` called in, and changes its entry with `f`.
    fn touch(&self, id: &str, f: impl FnOnce(&mut WorkerInfo)) {
        if let Some(w) = self.lock().get_mut(id) {
            w.last_seen = Instant::now();
            f(w);
        }
    }

    /// Notes that `id` called in.
    pub(crate) fn seen(&self, id: &str) {
        self.touch(id, |_| {});
    }

    /// Notes that `id` was granted `lease_id` and is starting on it.
    pub(crate) fn leased(&self, id: &str, lease_id: &str) {
        self.touch(id, |w| {
            w.lease = Some(lease_id.to_string());
            w.progress = 0.0;
            w.phase = "starting".into();
        });
    }

    /// Records the progress and phase `id` reported with a heartbeat.
    pub(crate) fn progress(&self, id: &str, progress: f64, phase: &str) {
        self.touch(id, |w| {
            w.progress = progress;
            w.phase = phase.into();
        });
    }

    /// Marks the worker holding `lease_id` idle (its job was committed or handed back).
    pub(crate) fn release(&self, lease_id: &str) {
        for w in self.lock().values_mut() {
            if w.lease.as_deref() == Some(lease_id) {
                w.lease = None;
                w.progress = 0.0;
                w.phase = "idle".into();
            }
        }
    }

    /// Gives `worker` no more jobs: its upload of `key` failed the sample check for `reason`.
    pub(crate) fn quarantine(&self, worker: &str, key: &JobKey, reason: &str) {
        tracing::error!(
            worker = %worker,
            job = %key,
            "worker quarantined: its table failed the sample check, so its results cannot be \
             trusted (check its memory and build, then restart it): {reason}"
        );
        metrics::counter!("xqtb_sample_check_failures_total", "worker" => worker.to_string())
            .increment(1);
        if let Some(w) = self.lock().get_mut(worker) {
            w.quarantined = Some(format!("its upload of {key} failed the sample check"));
        }
    }

    /// Whether `worker` is quarantined.
    pub(crate) fn is_quarantined(&self, worker: &str) -> bool {
        self.lock()
            .get(worker)
            .is_some_and(|w| w.quarantined.is_some())
    }

    /// The registered worker that can hold the largest job (quarantined ones left out): `None`
    /// when there is none, a `None` memory when one did not say (and is trusted with any job).
    pub(crate) fn largest(&self) -> Option<(String, Option<u64>)> {
        self.lock()
            .iter()
            .filter(|(_, w)| w.quarantined.is_none())
            .map(|(id, w)| (id.clone(), w.memory_bytes))
            .max_by_key(|(id, m)| (m.unwrap_or(u64::MAX), std::cmp::Reverse(id.clone())))
    }

    /// How many workers may take a job of `least_bytes` now: registered, not quarantined, not
    /// silent for four heartbeats, and with the memory for it (or not saying).
    pub(crate) fn live(&self, least_bytes: u64) -> usize {
        let silent = 4 * u128::from(self.heartbeat_ms);
        self.lock()
            .values()
            .filter(|w| w.quarantined.is_none() && w.last_seen.elapsed().as_millis() <= silent)
            .filter(|w| w.memory_bytes.is_none_or(|m| least_bytes <= m))
            .count()
    }

    /// Every worker, by id; `leased_job` names the job of a lease.
    pub(crate) fn reports(&self, leased_job: impl Fn(&str) -> Option<JobKey>) -> Vec<WorkerReport> {
        let workers = self.lock();
        let mut ws: Vec<_> = workers.iter().collect();
        ws.sort_by(|a, b| a.0.cmp(b.0));
        ws.into_iter()
            .map(|(id, w)| WorkerReport {
                worker_id: id.clone(),
                name: w.name.clone(),
                threads: w.threads,
                memory_bytes: w.memory_bytes,
                resident_bytes: w.resident_bytes,
                current_job: w.lease.as_deref().and_then(&leased_job),
                progress: w.progress,
                phase: if w.quarantined.is_some() {
                    "quarantined".into()
                } else if w.last_seen.elapsed().as_millis() > 4 * self.heartbeat_ms as u128 {
                    // Four heartbeats missed: its lease (if any) is about to expire.
                    "lost".into()
                } else {
                    w.phase.clone()
                },
                last_seen_ms_ago: w.last_seen.elapsed().as_millis() as u64,
                quarantined: w.quarantined.clone(),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn silent_workers_show_as_lost_and_are_forgotten() {
        let workers = Workers::new(100);
        let phases = |w: &Workers| -> Vec<(String, String)> {
            w.reports(|_| None)
                .into_iter()
                .map(|r| (r.worker_id, r.phase))
                .collect()
        };
        let a = workers.register("a", 1, None, "test").worker_id;
        assert_eq!(phases(&workers), [(a.clone(), "idle".to_string())]);
        // Makes `id` look silent for `by` (on a machine up for less than that, the test cannot).
        let backdate = |id: &str, by: Duration| -> bool {
            let mut registry = workers.lock();
            let w = registry.get_mut(id).unwrap();
            match w.last_seen.checked_sub(by) {
                Some(t) => {
                    w.last_seen = t;
                    true
                }
                None => false,
            }
        };
        let heartbeat = Duration::from_millis(workers.heartbeat_ms as u64);
        if !backdate(&a, 5 * heartbeat) || !backdate(&a, FORGET_SILENT_WORKERS) {
            eprintln!("skipped: the machine has not been up long enough to backdate a worker");
            return;
        }
        assert_eq!(phases(&workers), [(a.clone(), "lost".to_string())]);
        // Asking for a job is calling in: an idle worker that keeps asking is not lost.
        workers.memory_for_lease(&a, 0);
        assert_eq!(phases(&workers), [(a.clone(), "idle".to_string())]);
        assert!(backdate(&a, FORGET_SILENT_WORKERS));
        let b = workers.register("b", 1, None, "test").worker_id;
        assert_eq!(phases(&workers), [(b, "idle".to_string())]);
    }
}
