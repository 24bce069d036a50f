//! The [`App`] type: the coordinator's state, how it is opened on a store, and its settings.
//! Its operations are `impl App` blocks in the module of their concern (jobs and leases,
//! uploads, the catalog, queries, status).
//!
//! State lives in one sled database: the committed tables (the store), the job records (the
//! scheduler's persisted state) and nothing else; workers and caches are in memory and rebuilt
//! as workers call in.

use crate::access::Access;
use crate::error::AppError;
use crate::jobs::Jobs;
use crate::limits::Limits;
use crate::scheduler::{JobState, SchedulerConfig};
use crate::searches::Searches;
use crate::share_policy::Sharing;
use crate::shares::Shares;
use crate::telemetry::describe_check_metrics;
use crate::workers::Workers;
use probe::Tablebase;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;
use storage_format::store::SledStore;
use xqtb_core::{RuleSet, TableId};

/// The coordinator's state and operations.
pub struct App {
    /// The committed tables.
    pub(crate) store: Arc<SledStore>,
    /// Probes of the committed tables, through one block cache.
    pub(crate) tablebase: Tablebase<Arc<SledStore>>,
    /// CRC-32 of each committed table's shard file (tables never change once committed).
    pub(crate) checksums: Mutex<HashMap<TableId, u32>>,
    /// The scheduler and its persisted records.
    pub(crate) jobs: Jobs,
    /// The registered workers.
    pub(crate) workers: Workers,
    /// When this coordinator started, for the rate in the status.
    pub(crate) started: Instant,
    /// Entries of the jobs already finished when it started.
    pub(crate) entries_at_start: u64,
    /// When freed memory was last returned to the operating system.
    pub(crate) last_trim: Mutex<Instant>,
    /// The mate searches running, at most [`MAX_SEARCHES`](crate::MAX_SEARCHES) at once.
    pub(crate) searches: Searches,
    /// The jobs shared by several workers in progress.
    pub(crate) shares: Shares,
    /// How long a lease lasts without a heartbeat (the scheduler's), for seat leases.
    pub(crate) lease_ttl_ms: u64,
    /// Makes the ids of this process's seat leases distinct from those of earlier runs.
    pub(crate) lease_prefix: String,
    access: Access,
    default_rules: RuleSet,
    limits: Limits,
}

impl App {
    /// Opens the coordinator's state on `store`, resuming the persisted jobs (records of the
    /// first version are migrated to job keys). `default_rules` is the rule set of requests that
    /// name none.
    pub fn open(
        store: Arc<SledStore>,
        access: Access,
        config: SchedulerConfig,
        default_rules: RuleSet,
    ) -> Result<App, AppError> {
        let jobs = Jobs::open(&store, config)?;
        let entries_at_start = jobs
            .lock()
            .jobs()
            .filter(|j| j.state == JobState::Finished)
            .map(|j| j.key.entries())
            .sum();
        let app = App {
            tablebase: Tablebase::new(Arc::clone(&store)),
            store,
            checksums: Mutex::new(HashMap::new()),
            jobs,
            workers: Workers::new((config.lease_ttl_ms / 4).clamp(100, 10_000) as u32),
            started: Instant::now(),
            entries_at_start,
            last_trim: Mutex::new(Instant::now()),
            searches: Searches::new(),
            shares: Shares::new(Sharing::default(), None, None),
            lease_ttl_ms: config.lease_ttl_ms,
            lease_prefix: format!("{:x}", crate::jobs::now_ms()),
            access,
            default_rules,
            limits: Limits::default(),
        };
        describe_check_metrics();
        Ok(app)
    }

    /// Sets the limits (the defaults until called).
    pub fn with_limits(mut self, limits: Limits) -> App {
        self.limits = limits;
        self
    }

    /// Shares jobs between workers as `sharing` says (none is shared until called), keeping
    /// each shared job's log, once every seat took a pass, in a file in `log_dir` (`None`: in
    /// memory). With a log on disk the sessions are recorded in the store, and those a
    /// coordinator that stopped left are resumed: their seats wait for workers, which catch up
    /// from the log, in the same attempt.
    pub fn with_sharing(
        mut self,
        sharing: Sharing,
        log_dir: Option<std::path::PathBuf>,
    ) -> Result<App, AppError> {
        let records = match log_dir {
            Some(_) => Some(self.store.records("share-sessions")?),
            None => None,
        };
        self.jobs.lock().share(sharing);
        self.shares = Shares::new(sharing, log_dir, records);
        let resumed = {
            let s = self.jobs.lock();
            self.shares.resume(|lease| s.leased_job(lease).is_some())
        };
        // The coordinator may have been stopped for longer than a lease lasts: the resumed
        // jobs' leases start afresh, as the tick keeps them (`App::tick`).
        let now = crate::jobs::now_ms();
        self.jobs.change(|s| {
            let renewed = resumed
                .iter()
                .filter_map(|lease| s.renew(lease, None, now, 2).ok())
                .map(|(_, record)| record)
                .collect();
            Ok(((), renewed))
        })?;
        Ok(self)
    }

    /// What keeps one client from holding the server.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Who may call what.
    pub fn access(&self) -> &Access {
        &self.access
    }

    /// The rule set of requests that name none.
    pub fn default_rules(&self) -> RuleSet {
        self.default_rules
    }

    /// The store of committed tables.
    pub fn store(&self) -> &Arc<SledStore> {
        &self.store
    }
}

/// An app over an empty store in a temporary directory (kept while it is held), for the tests
/// of every module.
#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Asian by default.
    pub(crate) fn empty_app() -> (tempfile::TempDir, App) {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(SledStore::open(dir.path()).unwrap());
        let app = App::open(
            store,
            Access::default(),
            SchedulerConfig::default(),
            RuleSet::Asian,
        )
        .unwrap();
        (dir, app)
    }
}
