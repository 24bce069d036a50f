//! The planned jobs: the pure [`Scheduler`] behind its lock, and its job records in the store.
//! Every change is persisted before the lock is released, so that records reach the disk in the
//! order they changed and a restarted coordinator resumes where this one stopped.

use crate::error::AppError;
use crate::scheduler::{JobRecord, JobState, Scheduler, SchedulerConfig};
use std::sync::{Mutex, MutexGuard};
use std::time::{SystemTime, UNIX_EPOCH};
use storage_format::store::{RecordTree, SledStore, TableStore};
use xqtb_core::TableId;

/// Unix time in milliseconds: the scheduler's clock.
pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// The scheduler and the record tree its job records are kept in.
pub(crate) struct Jobs {
    scheduler: Mutex<Scheduler>,
    log: RecordTree,
}

impl Jobs {
    /// Resumes the jobs recorded in `store` (records of the first version are migrated to job
    /// keys); the jobs of tables committed but not recorded as finished (a crash between the
    /// two) are marked finished.
    pub(crate) fn open(store: &SledStore, config: SchedulerConfig) -> Result<Jobs, AppError> {
        let log = store.records("jobs")?;
        let mut records = Vec::new();
        let mut migrated = Vec::new();
        for (name, bytes) in log.all()? {
            match JobRecord::from_json(&bytes) {
                Ok((r, old)) => {
                    if old {
                        migrated.push((name, r.clone()));
                    }
                    records.push(r);
                }
                Err(e) => tracing::warn!(record = %name, "ignoring an unreadable job record: {e}"),
            }
        }
        for (name, r) in &migrated {
            persist_record(&log, r)?;
            log.remove(name)?;
        }
        if !migrated.is_empty() {
            tracing::info!(
                records = migrated.len(),
                "migrated job records of the first version to job keys"
            );
        }
        let prefix = format!("{:x}", now_ms());
        let mut scheduler = Scheduler::new(config, records, prefix);
        let mut changed = Vec::new();
        let committed: Vec<TableId> = scheduler
            .jobs()
            .filter(|j| {
                j.state != JobState::Finished && store.header(&j.key.table).ok().flatten().is_some()
            })
            .map(|j| j.key.table)
            .collect();
        for table in committed {
            changed.extend(scheduler.mark_finished(&table, now_ms()));
        }
        let jobs = Jobs {
            scheduler: Mutex::new(scheduler),
            log,
        };
        jobs.persist(&changed)?;
        Ok(jobs)
    }

    /// The scheduler, locked. Whoever changes it persists the records it hands back
    /// ([`Jobs::persist`]) before letting go of the lock, or calls [`Jobs::change`].
    pub(crate) fn lock(&self) -> MutexGuard<'_, Scheduler> {
        self.scheduler.lock().expect("scheduler lock")
    }

    /// Writes changed job records.
    pub(crate) fn persist(&self, records: &[JobRecord]) -> Result<(), AppError> {
        for r in records {
            persist_record(&self.log, r)?;
        }
        Ok(())
    }

    /// Runs `f` on the scheduler and persists the records it changed before the lock is
    /// released.
    pub(crate) fn change<R>(
        &self,
        f: impl FnOnce(&mut Scheduler) -> Result<(R, Vec<JobRecord>), AppError>,
    ) -> Result<R, AppError> {
        let mut s = self.lock();
        let (r, changed) = f(&mut s)?;
        self.persist(&changed)?;
        Ok(r)
    }
}

fn persist_record(log: &RecordTree, r: &JobRecord) -> Result<(), AppError> {
    let bytes = serde_json::to_vec(r).map_err(|e| AppError::Persist(e.to_string()))?;
    log.put(&JobRecord::record_name(&r.key), &bytes)
        .map_err(|e| AppError::Persist(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use xqtb_core::{JobKey, RuleSet};

    #[test]
    fn job_records_of_the_first_version_are_migrated_at_open() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(SledStore::open(dir.path()).unwrap());
        let log = store.records("jobs").unwrap();
        // As the first version wrote them: keyed by signature, no rule set, no slots.
        log.put(
            "KRvK",
            br#"{"signature":"KRvK","state":"Ready","attempts":0,"lease":null,"last_error":null}"#,
        )
        .unwrap();
        let ready = |jobs: &Jobs| -> Vec<JobKey> {
            jobs.lock()
                .jobs()
                .filter(|j| j.state == JobState::Ready)
                .map(|j| j.key)
                .collect()
        };
        let jobs = Jobs::open(&store, SchedulerConfig::default()).unwrap();
        let krk = TableId::new(RuleSet::CyclesAreDraws, "KRvK".parse().unwrap());
        assert_eq!(ready(&jobs), [JobKey::whole(krk)]);
        let names: Vec<String> = log.all().unwrap().into_iter().map(|(k, _)| k).collect();
        assert_eq!(names, ["cycles-are-draws/KRvK/0-3690"]);
        // Reopened, the migrated record loads as it is.
        drop(jobs);
        let jobs = Jobs::open(&store, SchedulerConfig::default()).unwrap();
        assert_eq!(ready(&jobs), [JobKey::whole(krk)]);
    }
}
