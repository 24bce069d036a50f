//! The job scheduler: jobs keyed by [`JobKey`] (a table, or a pawn slice of one), handed out
//! under leases once their dependencies are finished, each only to a worker with the memory to
//! hold it, the job with the longest estimated path to the end of the plan first (a job shared
//! by several workers counting on the path at the time its seats take).
//!
//! Pure state: time is passed in as Unix milliseconds and every change returns the records to
//! persist, so the services and the tests drive it the same way and a restart resumes from the
//! persisted records.

use crate::share_policy::Sharing;
use serde::{Deserialize, Serialize};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use xqtb_core::{JobCost, JobKey, RuleSet, Signature, SlotRange, TableId};

/// Where a job stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum JobState {
    /// Some dependency is not finished yet.
    Waiting,
    /// Every dependency is finished; the job can be leased.
    Ready,
    /// A worker holds the job under a lease.
    Leased,
    /// The table is committed.
    Finished,
    /// The job failed more often than the retry limit allows.
    Failed,
}

impl JobState {
    /// Lowercase name used in status output.
    pub fn name(self) -> &'static str {
        match self {
            JobState::Waiting => "waiting",
            JobState::Ready => "ready",
            JobState::Leased => "leased",
            JobState::Finished => "finished",
            JobState::Failed => "failed",
        }
    }
}

/// A lease on a job.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lease {
    /// Unique id of this lease; uploads and heartbeats name it.
    pub id: String,
    /// The worker holding it.
    pub worker: String,
    /// Unix milliseconds when it expires unless renewed.
    pub expires_at_ms: u64,
}

/// One job, as persisted (JSON). Records written before jobs had keys (`signature` only: a
/// whole `cycles-are-draws` table) still load; see [`JobRecord::from_json`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobRecord {
    /// The job.
    #[serde(with = "key_serde")]
    pub key: JobKey,
    /// Current state.
    pub state: JobState,
    /// Leases granted so far.
    pub attempts: u32,
    /// The current lease, when leased.
    pub lease: Option<Lease>,
    /// Why the last attempt failed, if it did.
    pub last_error: Option<String>,
    /// Progress reported by the last heartbeat (0..1).
    #[serde(default)]
    pub progress: f64,
    /// Unix milliseconds when the job finished.
    #[serde(default)]
    pub finished_at_ms: Option<u64>,
}

/// The JSON form of a job key: `{"rules": "cycles-are-draws", "signature": "KRvK", "slots":
/// [0, 4050]}`.
pub(crate) mod key_serde {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use xqtb_core::{JobKey, SlotRange, TableId};

    #[derive(Serialize, Deserialize)]
    struct Key {
        rules: String,
        signature: String,
        slots: [u64; 2],
    }

    pub fn serialize<S: Serializer>(k: &JobKey, s: S) -> Result<S::Ok, S::Error> {
        Key {
            rules: k.table.rules.name().into(),
            signature: k.table.signature.name(),
            slots: [k.slots.start, k.slots.end],
        }
        .serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<JobKey, D::Error> {
        use serde::de::Error;
        let k = Key::deserialize(d)?;
        let table = TableId::new(
            k.rules.parse().map_err(D::Error::custom)?,
            k.signature.parse().map_err(D::Error::custom)?,
        );
        Ok(JobKey {
            table,
            slots: SlotRange {
                start: k.slots[0],
                end: k.slots[1],
            },
        })
    }
}

/// A record as the first version wrote it: keyed by signature, rule set implied.
#[derive(Deserialize)]
struct RecordV0 {
    signature: String,
    state: JobState,
    attempts: u32,
    lease: Option<Lease>,
    last_error: Option<String>,
    #[serde(default)]
    progress: f64,
    #[serde(default)]
    finished_at_ms: Option<u64>,
}

impl JobRecord {
    /// The name the record is persisted under: `RULES/SIGNATURE/START-END`.
    pub fn record_name(key: &JobKey) -> String {
        format!(
            "{}/{}/{}-{}",
            key.table.rules.name(),
            key.table.signature.name(),
            key.slots.start,
            key.slots.end
        )
    }

    /// Parses a persisted record. The first version's records (keyed by signature, whole
    /// `cycles-are-draws` tables) load too; the second value says the record was in that form
    /// and must be rewritten under [`JobRecord::record_name`].
    pub fn from_json(bytes: &[u8]) -> Result<(JobRecord, bool), String> {
        if let Ok(r) = serde_json::from_slice::<JobRecord>(bytes) {
            return Ok((r, false));
        }
        let old: RecordV0 = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
        let sig: Signature = old
            .signature
            .parse()
            .map_err(|e| format!("signature '{}': {e}", old.signature))?;
        Ok((
            JobRecord {
                key: JobKey {
                    table: TableId::new(RuleSet::CyclesAreDraws, sig),
                    slots: SlotRange::whole(&sig),
                },
                state: old.state,
                attempts: old.attempts,
                lease: old.lease,
                last_error: old.last_error,
                progress: old.progress,
                finished_at_ms: old.finished_at_ms,
            },
            true,
        ))
    }
}

/// Why a worker's request was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LeaseError {
    /// No current lease has this id (expired, re-leased, finished or never granted).
    #[error("lease {0} is not current (expired, re-leased or finished)")]
    Stale(String),
    /// The upload is for another table than the lease.
    #[error("lease {lease} is for {leased}, not {uploaded}")]
    WrongTable {
        /// The lease id.
        lease: String,
        /// The table leased.
        leased: String,
        /// The table uploaded.
        uploaded: String,
    },
}

/// Settings of the scheduler.
#[derive(Clone, Copy, Debug)]
pub struct SchedulerConfig {
    /// How long a lease lasts without a heartbeat.
    pub lease_ttl_ms: u64,
    /// Leases granted per job before it is marked failed.
    pub max_attempts: u32,
    /// Tables with pawns of at least this many entries are solved as one job per pawn slice
    /// (see [`JobKey::jobs_of`]); smaller ones as one job, whose overhead a slice would not
    /// repay.
    pub slice_from_entries: u64,
}

/// Entries from which a table with pawns is solved slice by slice unless told otherwise: 2^27,
/// from where a table held whole takes hundreds of megabytes while solving (two bytes an entry,
/// [`xqtb_core::JobCost::solve_bytes`]).
pub const DEFAULT_SLICE_FROM_ENTRIES: u64 = 1 << 27;

impl Default for SchedulerConfig {
    fn default() -> Self {
        SchedulerConfig {
            lease_ttl_ms: 30_000,
            max_attempts: 5,
            slice_from_entries: DEFAULT_SLICE_FROM_ENTRIES,
        }
    }
}

/// A granted job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grant {
    /// The job to solve.
    pub key: JobKey,
    /// The lease.
    pub lease: Lease,
    /// The finished tables it depends on.
    pub dependencies: Vec<TableId>,
    /// Which attempt this is (1 for the first).
    pub attempt: u32,
}

/// Sort key of the plan order: fewer pieces first (captures remove a piece, so every table
/// comes after the tables it depends on), then by name, rule set and slots for a stable order.
fn plan_order(k: &JobKey) -> (u32, String, RuleSet, u64) {
    let sig = &k.table.signature;
    (
        sig.material().piece_count(),
        sig.name(),
        k.table.rules,
        k.slots.start,
    )
}

/// The first key of `table`'s jobs in key order (no job has it): where a range of its jobs
/// begins.
fn lowest_key(table: TableId) -> JobKey {
    JobKey {
        table,
        slots: SlotRange { start: 0, end: 0 },
    }
}

/// All jobs and their leases.
///
/// Indexed so that a plan of many thousands of jobs is scheduled (and simulated, by `xqtb
/// plan`) in time proportional to the jobs and their dependencies, not their square: the
/// unfinished jobs of each table are counted, each table knows the jobs waiting for it, and the
/// ready jobs are kept sorted by their path.
pub struct Scheduler {
    config: SchedulerConfig,
    jobs: BTreeMap<JobKey, JobRecord>,
    /// Plan order (dependencies first), for listings and to break ties between equal paths.
    order: Vec<JobKey>,
    /// Each job's estimated cost.
    costs: BTreeMap<JobKey, JobCost>,
    /// How jobs are shared between workers: a shared job's path counts the time its seats
    /// take, not the time of one worker.
    sharing: Sharing,
    /// Estimated CPU seconds from the start of each job to the end of the plan along its
    /// longest chain of dependent jobs (the job's own cost included, per seat if shared).
    path_seconds: BTreeMap<JobKey, f64>,
    /// Jobs not yet finished, per table (a table absent here has none left).
    unfinished: HashMap<TableId, u32>,
    /// The jobs whose table depends on each table.
    dependents: HashMap<TableId, Vec<JobKey>>,
    /// Ready jobs in leasing order: the longest path (in milliseconds) first, then plan order.
    ready: BTreeSet<(Reverse<u64>, usize, JobKey)>,
    /// Each job's place in `order`.
    position: HashMap<JobKey, usize>,
    /// The job of each current lease.
    leases: HashMap<String, JobKey>,
    /// Jobs neither finished nor failed.
    open: usize,
    next_lease: u64,
    lease_prefix: String,
}

impl Scheduler {
    /// A scheduler resuming from `records` (possibly empty). `lease_prefix` makes lease ids of
    /// this process distinct from those of earlier runs.
    pub fn new(config: SchedulerConfig, records: Vec<JobRecord>, lease_prefix: String) -> Self {
        let mut s = Scheduler {
            config,
            jobs: BTreeMap::new(),
            order: Vec::new(),
            costs: BTreeMap::new(),
            sharing: Sharing::default(),
            path_seconds: BTreeMap::new(),
            unfinished: HashMap::new(),
            dependents: HashMap::new(),
            ready: BTreeSet::new(),
            position: HashMap::new(),
            leases: HashMap::new(),
            open: 0,
            next_lease: 1,
            lease_prefix,
        };
        for r in records {
            s.jobs.insert(r.key, r);
        }
        s.reindex();
        s
    }

    /// Orders the ready jobs knowing that jobs are shared as `sharing` says: a job its workers
    /// share takes a fraction of its time on one, so a chain of small jobs that are not shared
    /// may be the longer path, and is leased first.
    pub fn share(&mut self, sharing: Sharing) {
        self.sharing = sharing;
        self.reindex();
    }

    /// The estimated CPU seconds job `key` adds to a path: its cost, or each seat's if shared
    /// (every seat working at once, as many seats as sharing allows).
    fn path_term(&self, key: &JobKey) -> f64 {
        let cost = &self.costs[key];
        if self.sharing.shares(key) {
            Sharing::seat_cpu_seconds(cost, self.sharing.workers, 0)
        } else {
            cost.cpu_seconds
        }
    }

    /// Rebuilds the plan order, the costs, the longest remaining paths and the indexes after
    /// jobs were added.
    fn reindex(&mut self) {
        self.order = self.jobs.keys().copied().collect();
        self.order.sort_by_key(plan_order);
        self.position = self
            .order
            .iter()
            .enumerate()
            .map(|(i, k)| (*k, i))
            .collect();
        for key in &self.order {
            self.costs.entry(*key).or_insert_with(|| JobCost::of(key));
        }
        self.unfinished.clear();
        self.dependents.clear();
        self.leases.clear();
        self.open = 0;
        for (key, job) in &self.jobs {
            if !matches!(job.state, JobState::Finished | JobState::Failed) {
                self.open += 1;
            }
            if let (JobState::Leased, Some(l)) = (job.state, &job.lease) {
                self.leases.insert(l.id.clone(), *key);
            }
            if job.state != JobState::Finished {
                *self.unfinished.entry(key.table).or_default() += 1;
            }
            for dep in key.table.dependencies() {
                self.dependents.entry(dep).or_default().push(*key);
            }
        }
        // Dependents come later in plan order, so one backward pass sees every dependent's path
        // before the jobs it depends on.
        let mut longest_after: HashMap<TableId, f64> = HashMap::new();
        // The same for the slices of one table that others of its slices read.
        let mut longest_after_job: HashMap<JobKey, f64> = HashMap::new();
        self.path_seconds.clear();
        for key in self.order.iter().rev() {
            let after = longest_after
                .get(&key.table)
                .copied()
                .unwrap_or(0.0)
                .max(longest_after_job.get(key).copied().unwrap_or(0.0));
            let path = self.path_term(key) + after;
            self.path_seconds.insert(*key, path);
            for dep in key.table.dependencies() {
                let e = longest_after.entry(dep).or_insert(0.0);
                *e = e.max(path);
            }
            for slots in key.slice_dependencies() {
                let e = longest_after_job
                    .entry(JobKey {
                        table: key.table,
                        slots,
                    })
                    .or_insert(0.0);
                *e = e.max(path);
            }
        }
        self.ready.clear();
        let ready: Vec<JobKey> = self
            .jobs
            .iter()
            .filter(|(_, j)| j.state == JobState::Ready)
            .map(|(k, _)| *k)
            .collect();
        for key in ready {
            let entry = self.ready_entry(&key);
            self.ready.insert(entry);
        }
    }

    fn ready_entry(&self, key: &JobKey) -> (Reverse<u64>, usize, JobKey) {
        let ms = (self.path_seconds[key] * 1e3).round() as u64;
        (Reverse(ms), self.position[key], *key)
    }

    /// Moves job `key` to state `to`, keeping the indexes, and readies the jobs that waited
    /// only for its table. Returns the jobs readied.
    fn set_state(&mut self, key: JobKey, to: JobState) -> Vec<JobRecord> {
        let job = self.jobs.get_mut(&key).expect("planned job");
        let from = std::mem::replace(&mut job.state, to);
        if from == to {
            return Vec::new();
        }
        if from == JobState::Ready {
            let entry = self.ready_entry(&key);
            self.ready.remove(&entry);
        }
        if from == JobState::Leased {
            self.leases.retain(|_, k| *k != key);
        }
        let done = |s: JobState| matches!(s, JobState::Finished | JobState::Failed);
        if done(to) && !done(from) {
            self.open -= 1;
        }
        if to == JobState::Ready {
            let entry = self.ready_entry(&key);
            self.ready.insert(entry);
        }
        let mut readied = Vec::new();
        if to == JobState::Finished && !key.is_whole_table() {
            // Slices of the same table that read this one may be ready now.
            let table = key.table;
            let waiting: Vec<JobKey> = self
                .jobs
                .range(lowest_key(table)..)
                .take_while(|(k, _)| k.table == table)
                .filter(|(k, j)| {
                    j.state == JobState::Waiting && k.slice_dependencies().contains(&key.slots)
                })
                .map(|(k, _)| *k)
                .collect();
            for w in waiting {
                if self.dependencies_done(&w) {
                    self.set_state(w, JobState::Ready);
                    readied.push(self.jobs[&w].clone());
                }
            }
        }
        if to == JobState::Finished {
            let left = self
                .unfinished
                .get_mut(&key.table)
                .expect("unfinished job counted");
            *left -= 1;
            if *left == 0 {
                self.unfinished.remove(&key.table);
                let waiting = self.dependents.get(&key.table).cloned().unwrap_or_default();
                for w in waiting {
                    if self.jobs[&w].state == JobState::Waiting && self.dependencies_done(&w) {
                        self.set_state(w, JobState::Ready);
                        readied.push(self.jobs[&w].clone());
                    }
                }
            }
        }
        readied
    }

    /// Whether every table `key` depends on is finished (a table nobody planned counts as
    /// finished: it is not this scheduler's to wait for).
    fn dependencies_done(&self, key: &JobKey) -> bool {
        let slice_done = |slots: SlotRange| {
            self.jobs
                .get(&JobKey {
                    table: key.table,
                    slots,
                })
                .is_none_or(|j| j.state == JobState::Finished)
        };
        key.table
            .dependencies()
            .iter()
            .all(|d| !self.unfinished.contains_key(d))
            && key.slice_dependencies().into_iter().all(slice_done)
    }

    /// The estimated cost of a planned job.
    pub fn cost(&self, key: &JobKey) -> Option<&JobCost> {
        self.costs.get(key)
    }

    /// Estimated CPU seconds from the start of `key` to the end of the plan along its longest
    /// chain of dependent jobs.
    pub fn path_seconds(&self, key: &JobKey) -> Option<f64> {
        self.path_seconds.get(key).copied()
    }

    /// Adds `targets` and the closure of their dependencies, one job per table. Returns the
    /// records created or changed (to persist) and the newly planned jobs. `finished` says which
    /// tables are already in the store.
    pub fn plan(
        &mut self,
        targets: &[TableId],
        finished: impl Fn(&TableId) -> bool,
    ) -> (Vec<JobRecord>, Vec<JobKey>) {
        let mut new = Vec::new();
        for table in xqtb_core::closure_of_tables(targets) {
            let planned = self
                .jobs
                .range(lowest_key(table)..)
                .next()
                .is_some_and(|(k, _)| k.table == table);
            if planned {
                continue;
            }
            let done = finished(&table);
            for key in JobKey::jobs_of(table, self.config.slice_from_entries) {
                self.jobs.insert(
                    key,
                    JobRecord {
                        key,
                        state: if done {
                            JobState::Finished
                        } else {
                            JobState::Waiting
                        },
                        attempts: 0,
                        lease: None,
                        last_error: None,
                        progress: if done { 1.0 } else { 0.0 },
                        finished_at_ms: None,
                    },
                );
                new.push(key);
            }
        }
        self.reindex();
        let mut changed = self.refresh_ready();
        changed.extend(new.iter().map(|k| self.jobs[k].clone()));
        changed.sort_by_key(|r| r.key);
        changed.dedup_by(|a, b| a.key == b.key);
        (changed, new)
    }

    /// Moves every waiting job whose dependencies are all finished to ready.
    fn refresh_ready(&mut self) -> Vec<JobRecord> {
        let mut changed = Vec::new();
        for key in self.order.clone() {
            if self.jobs[&key].state == JobState::Waiting && self.dependencies_done(&key) {
                self.set_state(key, JobState::Ready);
                changed.push(self.jobs[&key].clone());
            }
        }
        changed
    }

    /// Returns expired leases to the queue (or fails jobs past the retry limit).
    pub fn expire(&mut self, now_ms: u64) -> Vec<JobRecord> {
        let expired: Vec<JobKey> = self
            .leases
            .values()
            .filter(|k| {
                self.jobs[k]
                    .lease
                    .as_ref()
                    .is_some_and(|l| l.expires_at_ms <= now_ms)
            })
            .copied()
            .collect();
        expired
            .into_iter()
            .map(|key| {
                let worker = self.jobs[&key].lease.as_ref().map(|l| l.worker.clone());
                let worker = worker.unwrap_or_default();
                self.give_up_attempt(key, format!("lease held by {worker} expired"))
            })
            .collect()
    }

    /// Ends the current attempt at `key` with `error`: the job goes back to the queue unless it
    /// ran out of attempts.
    fn give_up_attempt(&mut self, key: JobKey, error: String) -> JobRecord {
        let max = self.config.max_attempts;
        let job = self.jobs.get_mut(&key).expect("planned job");
        job.lease = None;
        job.last_error = Some(error);
        job.progress = 0.0;
        let to = if job.attempts >= max {
            JobState::Failed
        } else {
            JobState::Ready
        };
        self.set_state(key, to);
        self.jobs[&key].clone()
    }

    /// Leases to `worker` the ready job with the longest estimated path to the end of the plan
    /// among those it can hold: whose estimated memory is at most `memory_bytes` (`None`: the
    /// worker did not say, and is trusted with any job). Ties go in plan order.
    pub fn lease(
        &mut self,
        worker: &str,
        memory_bytes: Option<u64>,
        now_ms: u64,
    ) -> (Option<Grant>, Vec<JobRecord>) {
        let mut changed = self.expire(now_ms);
        let Some(key) = self
            .ready
            .iter()
            .map(|(_, _, k)| *k)
            .find(|k| memory_bytes.is_none_or(|m| self.costs[k].least_bytes() <= m))
        else {
            return (None, changed);
        };
        let id = format!("{}-{}", self.lease_prefix, self.next_lease);
        self.next_lease += 1;
        let lease = Lease {
            id,
            worker: worker.to_string(),
            expires_at_ms: now_ms + self.config.lease_ttl_ms,
        };
        self.set_state(key, JobState::Leased);
        self.leases.insert(lease.id.clone(), key);
        let job = self.jobs.get_mut(&key).expect("ready jobs exist");
        job.attempts += 1;
        job.lease = Some(lease.clone());
        job.progress = 0.0;
        changed.push(job.clone());
        let grant = Grant {
            key,
            lease,
            dependencies: key.table.dependencies(),
            attempt: job.attempts,
        };
        (Some(grant), changed)
    }

    fn leased_mut(&mut self, lease_id: &str) -> Result<(JobKey, &mut JobRecord), LeaseError> {
        let key = self
            .leased_job(lease_id)
            .ok_or_else(|| LeaseError::Stale(lease_id.to_string()))?;
        Ok((key, self.jobs.get_mut(&key).expect("leased job")))
    }

    /// Renews a lease for `ttls` lease TTLs and records progress, if given (a shared job's
    /// seats other than the first keep its lease alive without reporting its progress).
    /// Returns the new expiry.
    pub fn heartbeat(
        &mut self,
        lease_id: &str,
        progress: Option<f64>,
        now_ms: u64,
        ttls: u64,
    ) -> Result<(u64, JobRecord), LeaseError> {
        self.expire(now_ms);
        self.renew(lease_id, progress, now_ms, ttls)
    }

    /// [`Scheduler::heartbeat`] without first ending the leases expired by `now_ms`: the
    /// coordinator keeping a lease it holds for a job (a shared job's, also one resumed after a
    /// restart that took longer than a lease lasts).
    pub fn renew(
        &mut self,
        lease_id: &str,
        progress: Option<f64>,
        now_ms: u64,
        ttls: u64,
    ) -> Result<(u64, JobRecord), LeaseError> {
        let ttl = self.config.lease_ttl_ms;
        let (_, job) = self.leased_mut(lease_id)?;
        let lease = job.lease.as_mut().expect("leased");
        lease.expires_at_ms = lease.expires_at_ms.max(now_ms + ttls * ttl);
        if let Some(progress) = progress {
            job.progress = progress.clamp(0.0, 1.0);
        }
        Ok((lease.expires_at_ms, job.clone()))
    }

    /// Checks that `lease_id` is current and for job `key`, before an upload is committed.
    pub fn check_upload(
        &mut self,
        lease_id: &str,
        key: &JobKey,
        now_ms: u64,
    ) -> Result<(), LeaseError> {
        self.expire(now_ms);
        let (leased, _) = self.leased_mut(lease_id)?;
        if leased != *key {
            return Err(LeaseError::WrongTable {
                lease: lease_id.to_string(),
                leased: leased.to_string(),
                uploaded: key.to_string(),
            });
        }
        Ok(())
    }

    /// The job `lease_id` is for, if the lease is current.
    pub fn leased_job(&self, lease_id: &str) -> Option<JobKey> {
        self.leases.get(lease_id).copied()
    }

    /// When `lease_id` expires, if it is current.
    pub fn lease_expiry(&self, lease_id: &str) -> Option<u64> {
        let key = self.leases.get(lease_id)?;
        self.jobs[key].lease.as_ref().map(|l| l.expires_at_ms)
    }

    /// The worker holding `lease_id`, if the lease is current.
    pub fn lease_holder(&self, lease_id: &str) -> Option<&str> {
        let key = self.leases.get(lease_id)?;
        self.jobs[key].lease.as_ref().map(|l| l.worker.as_str())
    }

    /// Marks the job of `lease_id` finished (after its table was committed) and readies the jobs
    /// that waited for it.
    pub fn finish(&mut self, lease_id: &str, now_ms: u64) -> Result<Vec<JobRecord>, LeaseError> {
        let (key, job) = self.leased_mut(lease_id)?;
        job.lease = None;
        job.progress = 1.0;
        job.last_error = None;
        job.finished_at_ms = Some(now_ms);
        let readied = self.set_state(key, JobState::Finished);
        let mut changed = vec![self.jobs[&key].clone()];
        changed.extend(readied);
        Ok(changed)
    }

    /// Records a failed attempt; the job goes back to the queue unless it ran out of attempts.
    pub fn fail(&mut self, lease_id: &str, message: &str) -> Result<JobRecord, LeaseError> {
        let (key, _) = self.leased_mut(lease_id)?;
        Ok(self.give_up_attempt(key, message.to_string()))
    }

    /// Marks every job of `table` finished because the table is already committed (found at
    /// start-up).
    pub fn mark_finished(&mut self, table: &TableId, now_ms: u64) -> Vec<JobRecord> {
        let keys: Vec<JobKey> = self
            .jobs
            .iter()
            .filter(|(k, j)| k.table == *table && j.state != JobState::Finished)
            .map(|(k, _)| *k)
            .collect();
        let mut changed = Vec::new();
        for key in keys {
            let job = self.jobs.get_mut(&key).expect("planned job");
            job.lease = None;
            job.progress = 1.0;
            job.finished_at_ms = Some(now_ms);
            let readied = self.set_state(key, JobState::Finished);
            changed.push(self.jobs[&key].clone());
            changed.extend(readied);
        }
        changed
    }

    /// Every job in plan order.
    pub fn jobs(&self) -> impl Iterator<Item = &JobRecord> {
        self.order.iter().map(|k| &self.jobs[k])
    }

    /// Whether every job is finished or failed.
    pub fn all_done(&self) -> bool {
        self.open == 0
    }

    /// The job `key`, if planned.
    pub fn job(&self, key: &JobKey) -> Option<&JobRecord> {
        self.jobs.get(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sig(s: &str) -> TableId {
        TableId::new(RuleSet::CyclesAreDraws, s.parse().unwrap())
    }

    fn job(s: &str) -> JobKey {
        JobKey::whole(sig(s))
    }

    fn scheduler() -> Scheduler {
        Scheduler::new(
            SchedulerConfig {
                lease_ttl_ms: 1000,
                max_attempts: 2,
                ..SchedulerConfig::default()
            },
            vec![],
            "t".into(),
        )
    }

    #[test]
    fn leases_follow_dependency_order() {
        let mut s = scheduler();
        let (_, planned) = s.plan(&[sig("KRvKN")], |_| false);
        assert_eq!(planned.len(), 3);
        let (g1, _) = s.lease("w1", None, 0);
        let (g2, _) = s.lease("w2", None, 0);
        let g1 = g1.unwrap();
        let g2 = g2.unwrap();
        assert_eq!(g1.key, job("KNvK"));
        assert_eq!(g2.key, job("KRvK"));
        assert!(
            s.lease("w3", None, 0).0.is_none(),
            "KRvKN waits for its dependencies"
        );
        s.finish(&g1.lease.id, 1).unwrap();
        assert!(s.lease("w3", None, 0).0.is_none());
        s.finish(&g2.lease.id, 1).unwrap();
        let g3 = s.lease("w3", None, 0).0.unwrap();
        assert_eq!(g3.key, job("KRvKN"));
        assert_eq!(g3.dependencies, vec![sig("KNvK"), sig("KRvK")]);
        s.finish(&g3.lease.id, 2).unwrap();
        assert!(s.all_done());
    }

    #[test]
    fn expired_leases_are_requeued_and_stale_ones_refused() {
        let mut s = scheduler();
        s.plan(&[sig("KRvK")], |_| false);
        let g = s.lease("w1", None, 0).0.unwrap();
        assert!(s.heartbeat(&g.lease.id, Some(0.5), 900, 1).is_ok());
        // Renewed at 900: still valid at 1800, expired at 1900.
        assert!(s.check_upload(&g.lease.id, &job("KRvK"), 1800).is_ok());
        let g2 = s
            .lease("w2", None, 1900)
            .0
            .expect("expired job is leased again");
        assert_eq!(g2.attempt, 2);
        assert_eq!(
            s.check_upload(&g.lease.id, &job("KRvK"), 1900),
            Err(LeaseError::Stale(g.lease.id.clone()))
        );
        assert!(s.finish(&g.lease.id, 1900).is_err());
        assert!(matches!(
            s.check_upload(&g2.lease.id, &job("KNvK"), 1900),
            Err(LeaseError::WrongTable { .. })
        ));
        // Second expiry exhausts the attempts.
        s.expire(10_000);
        assert_eq!(s.job(&job("KRvK")).unwrap().state, JobState::Failed);
        assert!(s.all_done());
    }

    #[test]
    fn records_of_the_first_version_load_as_whole_cycles_are_draws_jobs() {
        let old = br#"{"signature":"KRvKN","state":"Finished","attempts":1,"lease":null,"last_error":null}"#;
        let (r, migrated) = JobRecord::from_json(old).unwrap();
        assert!(migrated);
        assert_eq!(r.key, job("KRvKN"));
        assert_eq!(r.state, JobState::Finished);
        let again = serde_json::to_vec(&r).unwrap();
        assert_eq!(JobRecord::from_json(&again).unwrap(), (r, false));
        assert!(JobRecord::from_json(br#"{"signature":"KXvK"}"#).is_err());
    }

    #[test]
    fn failures_requeue_until_the_limit_and_restart_resumes() {
        let mut s = scheduler();
        let (records, _) = s.plan(&[sig("KRvK"), sig("KNvK")], |x| *x == sig("KNvK"));
        assert_eq!(s.job(&job("KNvK")).unwrap().state, JobState::Finished);
        let g = s.lease("w1", None, 0).0.unwrap();
        s.fail(&g.lease.id, "disk full").unwrap();
        assert_eq!(s.job(&job("KRvK")).unwrap().state, JobState::Ready);
        // Restart from the persisted records: the lease granted now survives the restart.
        let g = s.lease("w1", None, 0).0.unwrap();
        let persisted: Vec<JobRecord> = s.jobs().cloned().collect();
        assert!(!records.is_empty());
        let mut s2 = Scheduler::new(
            SchedulerConfig {
                lease_ttl_ms: 1000,
                max_attempts: 2,
                ..SchedulerConfig::default()
            },
            persisted,
            "u".into(),
        );
        assert!(s2.heartbeat(&g.lease.id, Some(0.1), 10, 1).is_ok());
        assert_eq!(s2.job(&job("KNvK")).unwrap().state, JobState::Finished);
        s2.fail(&g.lease.id, "again").unwrap();
        assert_eq!(s2.job(&job("KRvK")).unwrap().state, JobState::Failed);
    }

    #[test]
    fn a_job_goes_only_to_a_worker_that_can_hold_it() {
        let mut s = scheduler();
        s.plan(&[sig("KRvKR")], |_| false);
        let need = |s: &Scheduler, t: &str| s.cost(&job(t)).unwrap().least_bytes();
        // Enough memory for the dependencies, not for KRvKR itself.
        let small = need(&s, "KRvK");
        assert!(small < need(&s, "KRvKR"));
        let g = s.lease("small", Some(small), 0).0.unwrap();
        assert_eq!(g.key, job("KRvK"));
        s.finish(&g.lease.id, 1).unwrap();
        assert_eq!(s.job(&job("KRvKR")).unwrap().state, JobState::Ready);
        assert!(
            s.lease("small", Some(small), 2).0.is_none(),
            "KRvKR does not fit the small worker"
        );
        assert!(s.lease("tiny", Some(1), 2).0.is_none());
        let g = s.lease("big", Some(need(&s, "KRvKR")), 2).0.unwrap();
        assert_eq!(g.key, job("KRvKR"));
    }

    /// A table with pawns above the threshold is one job per slice; a slice is leased only
    /// once the slices its pawn advances lead into are committed, slices that do not read each
    /// other are leased at once, and the table counts as finished with its last slice.
    #[test]
    fn pawn_slices_are_jobs_leased_in_the_order_their_advances_allow() {
        let mut s = Scheduler::new(
            SchedulerConfig {
                slice_from_entries: 0,
                ..SchedulerConfig::default()
            },
            vec![],
            "t".into(),
        );
        let table = sig("KPPvK");
        s.plan(&[table], |t| t.signature.name() != "KPPvK");
        let slices = xqtb_core::TableIndex::slices_of(&table.signature);
        let jobs: Vec<JobKey> = s
            .jobs()
            .map(|j| j.key)
            .filter(|k| k.table == table)
            .collect();
        assert_eq!(jobs.len(), slices.len());
        let mut done: Vec<JobKey> = Vec::new();
        let mut most_at_once = 0;
        let mut now = 0;
        while !s.all_done() {
            let mut leased = Vec::new();
            while let (Some(g), _) = s.lease(&format!("w{now}"), None, now) {
                // Everything it reads is committed.
                for slots in g.key.slice_dependencies() {
                    assert!(
                        done.contains(&JobKey { table, slots }),
                        "{} too early",
                        g.key
                    );
                }
                leased.push(g);
            }
            assert!(!leased.is_empty(), "nothing ready, yet not done");
            most_at_once = most_at_once.max(leased.len());
            for g in leased {
                s.finish(&g.lease.id, now).unwrap();
                done.push(g.key);
            }
            now += 1;
        }
        assert_eq!(done.len(), slices.len());
        assert!(most_at_once > 1, "no two slices ran at once");
        assert!(!s.unfinished.contains_key(&table));
    }

    #[test]
    fn the_longest_remaining_path_is_leased_first() {
        let mut s = scheduler();
        // KRNvK's closure, whose longest path runs through KRvK and KNvK into KRNvK, and KCvK
        // on its own: KCvK is as big as KRvK but nothing waits for it.
        s.plan(&[sig("KCvK"), sig("KRNvK")], |_| false);
        let path = |t: &str| s.path_seconds(&job(t)).unwrap();
        let own = |t: &str| s.cost(&job(t)).unwrap().cpu_seconds;
        assert_eq!(path("KRNvK"), own("KRNvK"));
        assert_eq!(path("KRvK"), own("KRvK") + own("KRNvK"));
        assert_eq!(path("KCvK"), own("KCvK"));
        let first = s.lease("w1", None, 0).0.unwrap().key;
        let second = s.lease("w2", None, 0).0.unwrap().key;
        let third = s.lease("w3", None, 0).0.unwrap().key;
        // In plan order KCvK (3 pieces, "KCvK" < "KNvK") would come first.
        assert_eq!(third, job("KCvK"), "{first} {second} {third}");
    }

    #[test]
    fn a_shared_job_counts_the_time_of_its_seats_in_a_path() {
        let mut s = scheduler();
        let sharing = Sharing {
            workers: 4,
            from_entries: job("KRNvK").entries(),
            ..Sharing::default()
        };
        s.share(sharing);
        s.plan(&[sig("KRNvK")], |_| false);
        let path = |t: &str| s.path_seconds(&job(t)).unwrap();
        let cost = |t: &str| *s.cost(&job(t)).unwrap();
        // KRNvK is shared by four: its seats take less than a quarter of its time alone (they
        // keep their states on disk); the three-piece tables below it are not shared.
        let seats = Sharing::seat_cpu_seconds(&cost("KRNvK"), 4, 0);
        assert_eq!(path("KRNvK"), seats);
        assert!(seats < cost("KRNvK").cpu_seconds / 2.0, "{seats}");
        assert_eq!(path("KRvK"), cost("KRvK").cpu_seconds + seats);
        // Without sharing the path counts the whole job again.
        let alone = cost("KRNvK").cpu_seconds;
        s.share(Sharing::default());
        assert_eq!(s.path_seconds(&job("KRNvK")), Some(alone));
    }

    /// The indexes kept up to date by each operation equal those rebuilt from the records.
    fn assert_indexes_match_records(s: &Scheduler) {
        let records: Vec<JobRecord> = s.jobs().cloned().collect();
        let rebuilt = Scheduler::new(s.config, records, "r".into());
        assert_eq!(s.ready, rebuilt.ready);
        assert_eq!(s.unfinished, rebuilt.unfinished);
        assert_eq!(s.leases, rebuilt.leases);
        assert_eq!(s.open, rebuilt.open);
        for j in s.jobs() {
            if j.state == JobState::Waiting {
                assert!(!s.dependencies_done(&j.key), "{} could be ready", j.key);
            }
        }
    }

    #[test]
    fn random_operations_keep_the_indexes_consistent() {
        let mut rng = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move |n: u64| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng % n
        };
        for round in 0..20 {
            let mut s = scheduler();
            let roots = ["KRNvKR", "KCvKC", "KRvKN", "KNPvK"];
            let pick = roots[round % roots.len()];
            let stored: Vec<TableId> = sig(pick)
                .signature
                .closure()
                .into_iter()
                .filter(|t| t.name() != pick && next(5) == 0)
                .map(|t| TableId::new(RuleSet::CyclesAreDraws, t))
                .collect();
            s.plan(&[sig(pick)], |t| stored.contains(t));
            let mut now = 0;
            let mut held: Vec<String> = Vec::new();
            for _ in 0..200 {
                now += next(700);
                match next(4) {
                    0 | 1 => {
                        let memory = [None, Some(1 << 30), Some(50 << 20)][next(3) as usize];
                        if let (Some(g), _) = s.lease("w", memory, now) {
                            held.push(g.lease.id);
                        }
                    }
                    2 if !held.is_empty() => {
                        let id = held.swap_remove(next(held.len() as u64) as usize);
                        let _ = s.finish(&id, now);
                    }
                    3 if !held.is_empty() => {
                        let id = held.swap_remove(next(held.len() as u64) as usize);
                        let _ = s.fail(&id, "test");
                    }
                    _ => {
                        s.expire(now);
                    }
                }
                assert_indexes_match_records(&s);
            }
        }
    }
}
