//! Jobs and leases: planning tables, what workers call about their jobs (registering, leasing,
//! heartbeats, failures) and the tick that expires the leases of workers that went silent.
//! Uploads, the end of a lease that succeeds, are in the uploads module.

use crate::app::App;
use crate::error::AppError;
use crate::jobs::now_ms;
use crate::memory::{TRIM_INTERVAL, release_freed_memory};
use crate::scheduler::Grant;
use crate::shares::{Seat, ShareError};
use crate::workers::Registration;
use std::time::Instant;
use storage_format::store::TableStore;
use xqtb_core::{JobKey, TableId};

/// The answer to a lease request.
#[derive(Clone, Debug)]
pub struct LeaseOutcome {
    /// The job granted, if one is ready.
    pub grant: Option<Grant>,
    /// The grant's seat, when several workers share its job.
    pub seat: Option<Seat>,
    /// When to ask again if nothing was granted.
    pub retry_after_ms: u32,
    /// Every planned job is finished or failed: the worker may stop.
    pub all_done: bool,
}

impl App {
    /// Plans `targets` and their closure; returns the newly planned jobs.
    pub fn submit(&self, targets: &[TableId]) -> Result<Vec<JobKey>, AppError> {
        let new = self.jobs.change(|s| {
            let (changed, new) = s.plan(targets, |t| self.store.header(t).ok().flatten().is_some());
            Ok((new, changed))
        })?;
        self.update_gauges();
        Ok(new)
    }

    /// Whether every planned job is finished or failed.
    pub fn all_done(&self) -> bool {
        self.jobs.lock().all_done()
    }

    /// Registers a worker with its solver threads and the memory it can give one job (`None`:
    /// not said, so it is trusted with any job).
    pub fn register(
        &self,
        name: &str,
        threads: u32,
        memory_bytes: Option<u64>,
        version: &str,
    ) -> Registration {
        self.workers.register(name, threads, memory_bytes, version)
    }

    /// Leases the next ready job to `worker`, if any: one its memory holds, less what it holds
    /// between jobs beyond a fresh worker's (`resident_bytes`, 0 if not said; see
    /// [`xqtb_core::memory_for_jobs`]). A quarantined worker gets none (until it registers
    /// again, as a restarted worker does).
    pub fn lease(&self, worker: &str, resident_bytes: u64) -> Result<LeaseOutcome, AppError> {
        if self.workers.is_quarantined(worker) {
            self.workers.seen(worker);
            return Ok(LeaseOutcome {
                grant: None,
                seat: None,
                retry_after_ms: 5000,
                all_done: self.all_done(),
            });
        }
        let memory = self
            .workers
            .memory_for_lease(worker, resident_bytes)
            .map(|m| xqtb_core::memory_for_jobs(m, resident_bytes));
        let now = now_ms();
        // An open seat of a shared job first: the job's other seats wait for it.
        let prefix = &self.lease_prefix;
        if let Some(g) = self
            .shares
            .take_seat(worker, memory, now, self.lease_ttl_ms, prefix)
        {
            tracing::info!(worker = %worker, job = %g.key, lease = %g.lease.id, seat = g.seat.seat, seats = g.seat.seats, "seat of a shared job leased");
            metrics::counter!("xqtb_leases_granted_total").increment(1);
            self.workers.leased(worker, &g.lease.id);
            return Ok(LeaseOutcome {
                grant: Some(Grant {
                    key: g.key,
                    lease: g.lease,
                    dependencies: g.dependencies,
                    attempt: g.attempt,
                }),
                seat: Some(g.seat),
                retry_after_ms: 500,
                all_done: false,
            });
        }
        let (grant, least_bytes, all_done) = self.jobs.change(|s| {
            let (grant, changed) = s.lease(worker, memory, now);
            let least = grant
                .as_ref()
                .and_then(|g| s.cost(&g.key))
                .map(|c| c.least_bytes());
            Ok(((grant, least.unwrap_or(0), s.all_done()), changed))
        })?;
        let mut seat = None;
        // Workers bound to the seats of sessions not yet full are not free for this one: a
        // session counting on them could wait for ever.
        let free = || {
            let waiting = self.shares.seats_of_unfilled_sessions();
            self.workers.live(least_bytes).saturating_sub(waiting)
        };
        if let Some(g) = &grant
            && let Some(s) = self.shares.seats_for(&g.key, free())
        {
            self.shares.open(g.key, &g.lease, s, least_bytes, g.attempt);
            seat = Some(s);
        }
        if let Some(g) = &grant {
            self.update_gauges();
            metrics::counter!("xqtb_leases_granted_total").increment(1);
            if g.attempt > 1 {
                metrics::counter!("xqtb_job_retries_total").increment(1);
            }
            tracing::info!(worker = %worker, job = %g.key, lease = %g.lease.id, attempt = g.attempt, seats = seat.map_or(1, |s| s.seats), "job leased");
            self.workers.leased(worker, &g.lease.id);
        }
        Ok(LeaseOutcome {
            grant,
            seat,
            retry_after_ms: 500,
            all_done,
        })
    }

    /// Renews `lease_id` and records the worker's progress; returns the new expiry. An error
    /// means the worker must stop the job.
    pub fn heartbeat(
        &self,
        worker: &str,
        lease_id: &str,
        progress: f64,
        phase: &str,
    ) -> Result<u64, AppError> {
        self.workers.progress(worker, progress, phase);
        if self.shares.is_retired(lease_id) {
            // Seat 0 of a shared job went to another worker: this one must stop.
            tracing::warn!(worker = %worker, lease = %lease_id, "heartbeat refused: its seat was given to another worker");
            self.workers.release(lease_id);
            return Err(ShareError::NoSeat(lease_id.to_string()).into());
        }
        let now = now_ms();
        // A seat's heartbeat renews its own lease; seat 0's reports the job's progress too (the
        // job's lease is the coordinator's to keep: `tick`).
        let seat = self.shares.renew(lease_id, now, self.lease_ttl_ms);
        let (job_lease, job_progress) = match &seat {
            Some(r) => (r.job_lease.as_str(), (r.seat == 0).then_some(progress)),
            None => (lease_id, Some(progress)),
        };
        // Persisting the renewed expiry lets a restarted coordinator honour the lease.
        let result = self
            .jobs
            .change(|s| match s.heartbeat(job_lease, job_progress, now, 1) {
                Ok((expires, record)) => Ok((Ok(expires), vec![record])),
                Err(e) => Ok((Err(e), Vec::new())),
            })?;
        match result {
            Ok(expires) => Ok(seat.map_or(expires, |r| r.expires_at_ms)),
            Err(e) => {
                tracing::warn!(worker = %worker, lease = %lease_id, "heartbeat refused: {e}");
                self.workers.release(lease_id);
                Err(e.into())
            }
        }
    }

    /// Records that the job of `lease_id` failed on `worker`; it goes back to the queue (up to
    /// the retry limit).
    pub fn report_failure(
        &self,
        worker: &str,
        lease_id: &str,
        message: &str,
    ) -> Result<(), AppError> {
        tracing::warn!(worker = %worker, lease = %lease_id, "job failed: {message}");
        if self.shares.is_retired(lease_id) {
            // Seat 0 of a shared job already went to another worker: the job goes on.
            self.workers.release(lease_id);
            return Ok(());
        }
        let (seat, give_up) = self.shares.vacate(lease_id, message);
        if seat {
            self.workers.release(lease_id);
            return self.give_up_shared(give_up);
        }
        self.jobs
            .change(|s| Ok(((), vec![s.fail(lease_id, message)?])))?;
        self.workers.release(lease_id);
        self.update_gauges();
        Ok(())
    }

    /// Fails the attempt of a shared job whose seats failed too often (the job's lease).
    fn give_up_shared(&self, job: Option<(JobKey, String)>) -> Result<(), AppError> {
        let Some((key, job_lease)) = job else {
            return Ok(());
        };
        let why = format!("{key}: seats of the shared job failed too often");
        self.jobs.change(|s| match s.fail(&job_lease, &why) {
            Ok(r) => Ok(((), vec![r])),
            // Its lease ended meanwhile.
            Err(_) => Ok(((), Vec::new())),
        })?;
        self.workers.release(&job_lease);
        self.update_gauges();
        Ok(())
    }

    /// Opens the seats whose leases expired by `now` and ends the sessions whose job's attempt
    /// ended; fails the attempts of jobs whose seats failed too often.
    fn expire_seats(&self, now: u64) -> Result<(), AppError> {
        let given_up = {
            let s = self.jobs.lock();
            self.shares
                .expire(now, |lease| s.leased_job(lease).is_some())
        };
        for job in given_up {
            self.give_up_shared(Some(job))?;
        }
        Ok(())
    }

    /// Returns expired leases to the queue and refreshes the gauges; the server calls it on a
    /// timer, so expiry does not depend on anyone asking for the status.
    pub fn tick(&self) -> Result<usize, AppError> {
        let now = now_ms();
        self.expire_seats(now)?;
        // A shared job keeps its attempt whoever holds its seats, even none for a while: the
        // coordinator's log holds what a worker needs to take a seat over. Its lease is
        // renewed for two TTLs once less than one is left, so that it never ends between two
        // ticks (and is written to the store about once a TTL).
        let shared = self.shares.job_leases();
        let ttl = self.lease_ttl_ms;
        let expired = self.jobs.change(|s| {
            let expired = s.expire(now);
            let mut changed = expired.clone();
            for lease in &shared {
                if s.lease_expiry(lease).is_some_and(|e| e < now + ttl)
                    && let Ok((_, record)) = s.renew(lease, None, now, 2)
                {
                    changed.push(record);
                }
            }
            Ok((expired, changed))
        })?;
        if !expired.is_empty() {
            // The sessions of the jobs whose attempt just ended go with it.
            self.expire_seats(now)?;
            metrics::counter!("xqtb_lease_expiries_total").increment(expired.len() as u64);
            for r in &expired {
                if let Some(w) = r.last_error.as_deref() {
                    tracing::warn!(job = %r.key, "{w}");
                }
            }
        }
        self.update_gauges();
        // Many threads (one per request in flight) allocate and free in glibc's per-thread
        // arenas, which keep what was freed: without a periodic trim a busy coordinator's
        // memory creeps up while its live heap stays flat.
        let mut last = self.last_trim.lock().expect("trim lock");
        if last.elapsed() >= TRIM_INTERVAL {
            *last = Instant::now();
            // Pages probes read stay in sled's cache until it is swept (see the store).
            if let Err(e) = self.store.sweep_page_cache() {
                tracing::warn!(error = %e, "sweeping the store's page cache");
            }
            release_freed_memory();
        }
        Ok(expired.len())
    }
}

#[cfg(test)]
mod tests {
    use crate::app::tests::empty_app;
    use crate::scheduler::{JobState, SchedulerConfig};
    use crate::{Access, App, Sharing};
    use std::sync::Arc;
    use storage_format::store::SledStore;
    use xqtb_core::{JobKey, RuleSet, TableId};

    /// An app whose leases last `ttl_ms`, sharing cycles-are-draws jobs of any size by two
    /// workers, with `tables` planned and every table they depend on taken as committed.
    fn sharing_app(ttl_ms: u64, tables: &[&str]) -> (tempfile::TempDir, App) {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(SledStore::open(dir.path()).unwrap());
        let config = SchedulerConfig {
            lease_ttl_ms: ttl_ms,
            ..SchedulerConfig::default()
        };
        let sharing = Sharing {
            workers: 2,
            from_entries: 0,
            max_replacements: 4,
        };
        let app = App::open(store, Access::default(), config, RuleSet::CyclesAreDraws)
            .unwrap()
            .with_sharing(sharing, None)
            .unwrap();
        let ids: Vec<TableId> = tables
            .iter()
            .map(|t| TableId::new(RuleSet::CyclesAreDraws, t.parse().unwrap()))
            .collect();
        app.submit(&ids).unwrap();
        app.jobs
            .change(|s| {
                let deps: Vec<TableId> = s
                    .jobs()
                    .map(|j| j.key.table)
                    .filter(|t| !ids.contains(t))
                    .collect();
                let changed = deps.iter().flat_map(|d| s.mark_finished(d, 0)).collect();
                Ok(((), changed))
            })
            .unwrap();
        (dir, app)
    }

    /// Only the workers free for a shared job count for its seats: not one without the memory
    /// for it, nor one bound to the open seat of another shared job. Here the second job,
    /// leased while the first waits for its seat's worker, is solved alone; counted twice, that
    /// worker would leave one of the two jobs waiting for ever.
    #[test]
    fn a_shared_job_counts_only_the_workers_free_for_it() {
        let (_dir, app) = sharing_app(30_000, &["KRAvKN", "KCvKN"]);
        let id = |t: &str| JobKey::whole(TableId::new(RuleSet::CyclesAreDraws, t.parse().unwrap()));
        let least = |t: &str| xqtb_core::JobCost::of(&id(t)).least_bytes();
        assert!(least("KCvKN") < least("KRAvKN"));
        let small = (least("KCvKN") + least("KRAvKN")) / 2;
        let a = app.register("a", 1, None, "test").worker_id;
        let b = app.register("b", 1, Some(small), "test").worker_id;
        let c = app.register("c", 1, None, "test").worker_id;
        let first = app.lease(&a, 0).unwrap();
        assert_eq!(first.grant.unwrap().key, id("KRAvKN"));
        assert_eq!(first.seat.map(|s| s.seats), Some(2), "a and c, not b");
        let second = app.lease(&b, 0).unwrap();
        assert_eq!(second.grant.unwrap().key, id("KCvKN"));
        assert_eq!(second.seat, None, "c is bound to the first job's open seat");
        let third = app.lease(&c, 0).unwrap();
        assert_eq!(third.seat.map(|s| s.seat), Some(1), "c takes the open seat");
    }

    /// A shared job whose every seat falls silent keeps its attempt: the seats open again, the
    /// coordinator keeps the job's lease while they wait, and the next workers take them over.
    #[test]
    fn a_shared_job_keeps_its_attempt_while_its_seats_wait() {
        let ttl = 200;
        let (_dir, app) = sharing_app(ttl, &["KRvKN"]);
        let krkn = TableId::new(RuleSet::CyclesAreDraws, "KRvKN".parse().unwrap());
        let a = app.register("a", 1, None, "test").worker_id;
        let b = app.register("b", 1, None, "test").worker_id;
        let first = app.lease(&a, 0).unwrap();
        let (job_lease, seat) = (first.grant.unwrap().lease.id, first.seat.unwrap());
        assert_eq!((seat.seat, seat.seats), (0, 2));
        let second = app.lease(&b, 0).unwrap();
        assert_eq!(second.seat.unwrap().seat, 1);
        // Neither worker is heard from again, for several TTLs.
        for _ in 0..8 {
            std::thread::sleep(std::time::Duration::from_millis(ttl / 2));
            app.tick().unwrap();
        }
        let attempts = |app: &App| {
            let jobs = app.jobs.lock();
            let job = jobs.jobs().find(|j| j.key == JobKey::whole(krkn)).unwrap();
            (job.state, job.attempts)
        };
        assert_eq!(attempts(&app), (JobState::Leased, 1), "the attempt goes on");
        assert!(
            app.heartbeat(&a, &job_lease, 0.5, "levels").is_err(),
            "a lost its seat"
        );
        // Two new workers take the seats over, in the same attempt.
        for (w, want) in [("c", 0), ("d", 1)] {
            let w = app.register(w, 1, None, "test").worker_id;
            let got = app.lease(&w, 0).unwrap();
            let grant = got.grant.unwrap();
            assert_eq!((got.seat.unwrap().seat, grant.attempt), (want, 1));
            assert!(app.heartbeat(&w, &grant.lease.id, 0.5, "levels").is_ok());
        }
        assert_eq!(attempts(&app), (JobState::Leased, 1));
    }

    #[test]
    fn what_a_worker_holds_between_jobs_is_not_counted_as_free_for_a_job() {
        let (_dir, app) = empty_app();
        let krk = TableId::new(RuleSet::Asian, "KRvK".parse().unwrap());
        app.submit(&[krk]).unwrap();
        let need = xqtb_core::JobCost::of(&JobKey::whole(krk)).least_bytes();
        let w = app.register("w", 1, Some(need), "test").worker_id;
        // A worker holding a megabyte more than a fresh one no longer has room for the job.
        let grown = xqtb_core::BASE_BYTES + 1_000_000;
        assert!(app.lease(&w, grown).unwrap().grant.is_none());
        // Up to a fresh worker's base, what it holds is already counted in the estimate.
        let g = app.lease(&w, xqtb_core::BASE_BYTES).unwrap().grant;
        assert_eq!(g.unwrap().key, JobKey::whole(krk));
    }
}
