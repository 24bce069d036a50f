//! Jobs shared by several workers at once: each shared job's seats, the workers holding them,
//! and the relay of their updates (docs/scaling.md, "One table on several workers").
//!
//! The scheduler knows a shared job as one job under one lease, the *job's lease*: the lease
//! it granted the worker that took seat 0 first. The coordinator keeps that lease current
//! while the job's session goes on, whoever holds its seats, since its log holds what a worker
//! needs to take a seat over: its upload or its failure past the replacements allowed end the
//! attempt, and the session with it. The seats are leases kept here (seat 0's first lease is
//! the job's): a seat whose worker fails or goes silent, seat 0's included, is opened again,
//! and the next worker to ask for a job takes it under a lease of its own and catches up from
//! the session's log ([`solver::Relay`]), while the others wait in the pass they reached.
//! After the levels each seat hands its parts of the table to the others
//! ([`solver::Pass::Parts`]), joins the table and verifies its own groups' entries of it
//! ([`solver::Pass::Verified`]); its seat is then done, and seat 0's worker uploads the table
//! under the job's lease.
//!
//! With the log on disk each session is also recorded in the store, and a restarted
//! coordinator resumes it ([`Shares::resume`]): the seats open, the relay rebuilt from the
//! log's index.

use crate::scheduler::{JobRecord, Lease};
use crate::share_log::FileLog;
use crate::share_policy::Sharing;
use futures_channel::oneshot;
use serde::{Deserialize, Serialize};
use solver::{Pass, Relay, RelayBatch, RelayError};
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use storage_format::store::RecordTree;
use xqtb_core::{JobKey, TableId};

/// A worker's seat in a shared job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Seat {
    /// Which seat, `0..seats`; seat 0 joins the parts and uploads the table.
    pub seat: usize,
    /// How many workers share the job.
    pub seats: usize,
    /// Slots per group of the job's states (every seat cuts the job alike).
    pub group_slots: u64,
}

/// What renewing a seat's lease gives ([`Shares::renew`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SeatRenewal {
    /// The seat lease's new expiry.
    pub(crate) expires_at_ms: u64,
    /// The seat.
    pub(crate) seat: usize,
    /// The scheduler's lease of the job, which the seat keeps alive.
    pub(crate) job_lease: String,
}

/// A seat granted to a worker, as a lease.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SeatGrant {
    /// The job.
    pub key: JobKey,
    /// The seat's lease.
    pub lease: Lease,
    /// The seat.
    pub seat: Seat,
    /// The finished tables the job depends on.
    pub dependencies: Vec<TableId>,
    /// The job's attempt (its seats share it).
    pub attempt: u32,
}

/// A shared job in progress, for the status.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShareReport {
    /// How many workers share it.
    pub seats: usize,
    /// The worker holding each seat, `None` while it waits for one or once it is done.
    pub seat_workers: Vec<Option<String>>,
    /// The last pass every seat ended.
    pub pass: Option<Pass>,
    /// Bytes relayed so far (once per recipient), and held in the log.
    pub bytes_relayed: u64,
    /// Bytes of batches the coordinator holds in memory: the passes some seat has still to
    /// take (the rest of its log is on its local disk).
    pub bytes_held: u64,
    /// Seats leased again after their worker failed.
    pub replacements: u32,
}

/// Why a call about a shared job was refused.
#[derive(Debug, thiserror::Error)]
pub enum ShareError {
    /// The lease is no seat of a shared job in progress (expired, re-leased, given up, done).
    #[error("lease {0} holds no seat of a shared job in progress")]
    NoSeat(String),
    /// The relay refused it.
    #[error(transparent)]
    Relay(#[from] RelayError),
}

/// Who holds a seat.
enum Holder {
    /// Nobody: waiting for a worker (at first, or after one failed).
    Open,
    /// A worker, under a lease.
    Held(Lease),
    /// Nobody any more: its parts went to the others and it verified its entries.
    Done,
}

/// One shared job in progress.
struct Session {
    /// The scheduler's lease of the job (seat 0's first lease).
    job_lease: String,
    seat: Seat,
    /// The estimated memory of the job, which each seat's worker must have.
    least_bytes: u64,
    attempt: u32,
    holders: Vec<Holder>,
    relay: Relay,
    /// Calls waiting for a pass to be complete.
    waiters: Vec<(Pass, oneshot::Sender<()>)>,
    replacements: u32,
    /// The number of its log's files ([`FileLog`]).
    log: u64,
}

/// What a restarted coordinator needs of a session besides its log: kept in the store while
/// the session goes on, under the job's record name.
#[derive(Serialize, Deserialize)]
struct SessionRecord {
    #[serde(with = "crate::scheduler::key_serde")]
    key: JobKey,
    job_lease: String,
    seats: usize,
    group_slots: u64,
    least_bytes: u64,
    attempt: u32,
    replacements: u32,
    log: u64,
}

impl SessionRecord {
    fn of(key: JobKey, s: &Session) -> SessionRecord {
        SessionRecord {
            key,
            job_lease: s.job_lease.clone(),
            seats: s.seat.seats,
            group_slots: s.seat.group_slots,
            least_bytes: s.least_bytes,
            attempt: s.attempt,
            replacements: s.replacements,
            log: s.log,
        }
    }
}

impl Session {
    /// Wakes the calls waiting for `pass` (all of them with `None`).
    fn wake(&mut self, pass: Option<Pass>) {
        let (woken, waiting) = std::mem::take(&mut self.waiters)
            .into_iter()
            .partition(|(p, _)| pass.is_none_or(|pass| *p == pass));
        self.waiters = waiting;
        for (_, w) in woken {
            let _ = w.send(());
        }
    }
}

/// The shared jobs in progress.
#[derive(Default)]
struct State {
    sessions: BTreeMap<JobKey, Session>,
    /// Each seat lease (seat 0's included): its job and seat.
    seats: HashMap<String, (JobKey, usize)>,
    next_lease: u64,
    /// Sessions opened so far: each numbers its log file.
    sessions_opened: u64,
}

/// The coordinator's shared jobs. Where the scheduler's lock is also taken, it is taken first.
pub(crate) struct Shares {
    sharing: Sharing,
    /// Where each session's log goes once every seat took a pass ([`FileLog`]); none: it stays
    /// in memory.
    log_dir: Option<PathBuf>,
    /// Where the sessions are recorded for a restarted coordinator (with a log on disk only).
    records: Option<RecordTree>,
    state: Mutex<State>,
}

/// What ending a pass found.
pub enum PassEnd {
    /// Every seat has ended it: its batches can be taken.
    Complete,
    /// Some seat has not: the receiver is woken when every one has (or the job is given up).
    Waiting(oneshot::Receiver<()>),
}

impl Shares {
    /// The shared jobs under `sharing`, their logs in `log_dir` or in memory, and the sessions
    /// recorded in `records` (with a log on disk), none of them resumed yet
    /// ([`Shares::resume`]).
    pub(crate) fn new(
        sharing: Sharing,
        log_dir: Option<PathBuf>,
        records: Option<RecordTree>,
    ) -> Shares {
        Shares {
            sharing,
            records: records.filter(|_| log_dir.is_some()),
            log_dir,
            state: Mutex::new(State::default()),
        }
    }

    /// Resumes the sessions a coordinator that stopped recorded, whose job's lease is still
    /// current (`is_current`), from their logs: every seat open, to be taken over by the next
    /// workers, which catch up from the log. Drops the other records and logs. Returns the
    /// job's leases resumed.
    pub(crate) fn resume(&self, is_current: impl Fn(&str) -> bool) -> Vec<String> {
        let Some(dir) = &self.log_dir else {
            return Vec::new();
        };
        let mut state = self.lock();
        let recorded = match &self.records {
            Some(tree) => tree.all().unwrap_or_else(|e| {
                tracing::warn!("reading the shared jobs' records: {e}");
                Vec::new()
            }),
            None => Vec::new(),
        };
        let mut resumed = Vec::new();
        for (name, bytes) in recorded {
            let session = serde_json::from_slice::<SessionRecord>(&bytes)
                .map_err(|e| e.to_string())
                .and_then(|r| {
                    if !is_current(&r.job_lease) {
                        return Err("its job's attempt ended".into());
                    }
                    let (log, indexes) = FileLog::open(dir, r.log).map_err(|e| e.to_string())?;
                    let relay = Relay::resume(r.seats, Box::new(log), &indexes)
                        .map_err(|e| e.to_string())?;
                    Ok((r, relay))
                });
            let (r, relay) = match session {
                Ok(s) => s,
                Err(why) => {
                    tracing::info!(record = %name, "a shared job's session is not resumed: {why}");
                    self.forget_record(&name);
                    continue;
                }
            };
            tracing::info!(job = %r.key, seats = r.seats, pass = ?relay.last_complete(), "a shared job's session resumed: its seats wait for workers");
            state.sessions_opened = state.sessions_opened.max(r.log);
            resumed.push(r.job_lease.clone());
            state.sessions.insert(
                r.key,
                Session {
                    job_lease: r.job_lease,
                    seat: Seat {
                        seat: 0,
                        seats: r.seats,
                        group_slots: r.group_slots,
                    },
                    least_bytes: r.least_bytes,
                    attempt: r.attempt,
                    holders: (0..r.seats).map(|_| Holder::Open).collect(),
                    relay,
                    waiters: Vec::new(),
                    replacements: r.replacements,
                    log: r.log,
                },
            );
        }
        let keep: Vec<u64> = state.sessions.values().map(|s| s.log).collect();
        FileLog::remove_stale(dir, &keep);
        resumed
    }

    /// Records session `key` for a restarted coordinator (a warning if it cannot).
    fn record(&self, key: JobKey, session: &Session) {
        let Some(tree) = &self.records else { return };
        let bytes = serde_json::to_vec(&SessionRecord::of(key, session)).expect("a record");
        if let Err(e) = tree.put(&JobRecord::record_name(&key), &bytes) {
            tracing::warn!(job = %key, "recording a shared job's session: {e}");
        }
    }

    /// Drops the record `name` of a session that ended.
    fn forget_record(&self, name: &str) {
        if let Some(tree) = &self.records
            && let Err(e) = tree.remove(name)
        {
            tracing::warn!(record = %name, "dropping a shared job's record: {e}");
        }
    }

    /// The relay of a new session of `seats` seats, numbered `n`: its log on disk when there is
    /// a directory for it (in memory if the file cannot be made, with a warning).
    fn relay(&self, n: u64, seats: usize) -> Relay {
        let Some(dir) = &self.log_dir else {
            return Relay::new(seats, true);
        };
        match FileLog::create(dir, n) {
            Ok(log) => Relay::with_store(seats, Box::new(log)),
            Err(e) => {
                tracing::warn!(dir = %dir.display(), "a shared job's log stays in memory: {e}");
                Relay::new(seats, true)
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().expect("shares lock")
    }

    /// The seats of the sessions still waiting for a worker to take one: the workers that
    /// take those (or hold them) are not there for another session until these are full.
    pub(crate) fn seats_of_unfilled_sessions(&self) -> usize {
        let state = self.lock();
        let unfilled = state
            .sessions
            .values()
            .filter(|s| s.holders.iter().any(|h| matches!(h, Holder::Open)));
        unfilled.map(|s| s.seat.seats).sum()
    }

    /// How job `key` is to be shared when `live_workers` workers that can hold it are free
    /// for it (every seat waits for one), or `None` to solve it on one: a `cycles-are-draws`
    /// job (a whole table or a pawn slice) of at least the entries asked, on as many workers
    /// as asked and free, each with four groups or more (fewer where the job has fewer groups:
    /// at least one each).
    pub(crate) fn seats_for(&self, key: &JobKey, live_workers: usize) -> Option<Seat> {
        let seats = self.sharing.workers.min(live_workers);
        if !self.sharing.shares(key) || seats < 2 {
            return None;
        }
        let len = key.slots.len();
        let group_slots = (len.div_ceil(4 * seats as u64)).min(xqtb_core::GROUP_BYTES / 2);
        let seats = seats.min(solver::group_count(len, group_slots));
        (seats >= 2).then_some(Seat {
            seat: 0,
            seats,
            group_slots,
        })
    }

    /// Starts sharing job `key`, leased as `job_lease` (seat 0's first lease) for its attempt
    /// `attempt`; any earlier session of the job ends.
    pub(crate) fn open(
        &self,
        key: JobKey,
        job_lease: &Lease,
        seat: Seat,
        least_bytes: u64,
        attempt: u32,
    ) {
        let mut state = self.lock();
        // Dropping an earlier session wakes its waiting calls, which then find no seat.
        if state.sessions.remove(&key).is_some() {
            state.seats.retain(|_, (k, _)| *k != key);
        }
        state.sessions_opened += 1;
        let log = state.sessions_opened;
        let relay = self.relay(log, seat.seats);
        let mut holders: Vec<Holder> = (0..seat.seats).map(|_| Holder::Open).collect();
        holders[0] = Holder::Held(job_lease.clone());
        state.seats.insert(job_lease.id.clone(), (key, 0));
        let session = Session {
            job_lease: job_lease.id.clone(),
            seat,
            least_bytes,
            attempt,
            holders,
            relay,
            waiters: Vec::new(),
            replacements: 0,
            log,
        };
        self.record(key, &session);
        state.sessions.insert(key, session);
    }

    /// Leases to `worker` an open seat of a shared job it can hold (`memory`: what it can give
    /// a job, `None` when not said), if there is one; `lease_prefix` and `ttl_ms` as the
    /// scheduler's leases.
    pub(crate) fn take_seat(
        &self,
        worker: &str,
        memory: Option<u64>,
        now_ms: u64,
        ttl_ms: u64,
        lease_prefix: &str,
    ) -> Option<SeatGrant> {
        let mut state = self.lock();
        let state = &mut *state;
        let (key, session) = state.sessions.iter_mut().find(|(_, s)| {
            memory.is_none_or(|m| s.least_bytes <= m)
                && s.relay.abandoned().is_none()
                && s.holders.iter().any(|h| matches!(h, Holder::Open))
                && !s
                    .holders
                    .iter()
                    .any(|h| matches!(h, Holder::Held(l) if l.worker == worker))
        })?;
        let seat = session
            .holders
            .iter()
            .position(|h| matches!(h, Holder::Open))
            .expect("an open seat");
        state.next_lease += 1;
        let lease = Lease {
            id: format!("{lease_prefix}-seat-{}", state.next_lease),
            worker: worker.to_string(),
            expires_at_ms: now_ms + ttl_ms,
        };
        session.holders[seat] = Holder::Held(lease.clone());
        state.seats.insert(lease.id.clone(), (*key, seat));
        Some(SeatGrant {
            key: *key,
            lease,
            seat: Seat {
                seat,
                ..session.seat
            },
            dependencies: key.table.dependencies(),
            attempt: session.attempt,
        })
    }

    /// Renews seat lease `lease_id` (seat 0's first lease, the job's, included): `None` when
    /// it is no current seat's lease, else the seat's new expiry, its seat, and the job's lease,
    /// which the scheduler is to renew too.
    pub(crate) fn renew(&self, lease_id: &str, now_ms: u64, ttl_ms: u64) -> Option<SeatRenewal> {
        let mut state = self.lock();
        let &(key, seat) = state.seats.get(lease_id)?;
        let session = state.sessions.get_mut(&key)?;
        match &mut session.holders[seat] {
            Holder::Held(l) => {
                l.expires_at_ms = now_ms + ttl_ms;
                Some(SeatRenewal {
                    expires_at_ms: l.expires_at_ms,
                    seat,
                    job_lease: session.job_lease.clone(),
                })
            }
            _ => None,
        }
    }

    /// The job's leases of the shared jobs in progress, which the coordinator keeps current
    /// ([`crate::App::tick`]) while their sessions go on.
    pub(crate) fn job_leases(&self) -> Vec<String> {
        let state = self.lock();
        state
            .sessions
            .values()
            .filter(|s| s.relay.abandoned().is_none())
            .map(|s| s.job_lease.clone())
            .collect()
    }

    /// Whether `lease_id` is the job's lease of a shared job in progress whose seat 0 its
    /// worker lost (it failed or went silent, and the seat was opened again): the scheduler
    /// still holds the lease for the seats, but that worker must not act on it.
    pub(crate) fn is_retired(&self, lease_id: &str) -> bool {
        let state = self.lock();
        !state.seats.contains_key(lease_id)
            && state.sessions.values().any(|s| s.job_lease == lease_id)
    }

    /// Under which lease an upload by seat lease `lease_id` is the job's: the job's lease and
    /// the uploading worker, when `lease_id` holds seat 0 of a shared job after its first
    /// worker lost it; `None` for any other lease (which uploads under its own).
    pub(crate) fn upload_lease(&self, lease_id: &str) -> Option<(String, String)> {
        let state = self.lock();
        let &(key, seat) = state.seats.get(lease_id).filter(|(_, s)| *s == 0)?;
        let session = state.sessions.get(&key)?;
        match &session.holders[seat] {
            Holder::Held(l) if session.job_lease != lease_id => {
                Some((session.job_lease.clone(), l.worker.clone()))
            }
            _ => None,
        }
    }

    /// Opens the seat of lease `lease_id` again because its worker failed (`why`): what it
    /// sent in the pass in progress is dropped and the next worker to ask takes the seat.
    /// Returns whether it was a seat; past the replacements allowed, the session is given up
    /// and its job returned with the job's lease, to fail its attempt.
    pub(crate) fn vacate(&self, lease_id: &str, why: &str) -> (bool, Option<(JobKey, String)>) {
        let mut state = self.lock();
        let Some(&(key, seat)) = state.seats.get(lease_id) else {
            return (false, None);
        };
        state.seats.remove(lease_id);
        let max = self.sharing.max_replacements;
        let Some(session) = state.sessions.get_mut(&key) else {
            return (true, None);
        };
        session.relay.forget(seat);
        session.holders[seat] = Holder::Open;
        session.replacements += 1;
        self.record(key, session);
        tracing::warn!(job = %key, seat, replacements = session.replacements, "a seat of a shared job is open again: {why}");
        if session.replacements > max {
            let why = format!(
                "seats of the shared job failed {} times (the last: {why})",
                session.replacements
            );
            session.relay.abandon(&why);
            session.wake(None);
            return (true, Some((key, session.job_lease.clone())));
        }
        (true, None)
    }

    /// Ends the sessions whose job's lease is no longer current (`is_current`), and opens again
    /// the seats whose leases expired by `now_ms`. Returns the jobs given up for too many
    /// replacements, with the job's lease.
    pub(crate) fn expire(
        &self,
        now_ms: u64,
        is_current: impl Fn(&str) -> bool,
    ) -> Vec<(JobKey, String)> {
        let expired: Vec<(String, String)> = {
            let mut state = self.lock();
            let ended: Vec<JobKey> = state
                .sessions
                .iter()
                .filter(|(_, s)| !is_current(&s.job_lease))
                .map(|(k, _)| *k)
                .collect();
            for key in ended {
                let mut s = state.sessions.remove(&key).expect("a session");
                s.relay.abandon("the job's lease ended");
                s.wake(None);
                state.seats.retain(|_, (k, _)| *k != key);
                self.forget_record(&JobRecord::record_name(&key));
            }
            state
                .sessions
                .values()
                .flat_map(|s| s.holders.iter())
                .filter_map(|h| match h {
                    Holder::Held(l) if l.expires_at_ms <= now_ms => {
                        Some((l.id.clone(), l.worker.clone()))
                    }
                    _ => None,
                })
                .collect()
        };
        expired
            .into_iter()
            .filter_map(|(lease, worker)| {
                self.vacate(&lease, &format!("its lease, held by {worker}, expired"))
                    .1
            })
            .collect()
    }

    /// The session and seat of `lease_id`.
    fn seat_of<'a>(
        state: &'a mut State,
        lease_id: &str,
    ) -> Result<(&'a mut Session, usize), ShareError> {
        let no_seat = || ShareError::NoSeat(lease_id.to_string());
        let &(key, seat) = state.seats.get(lease_id).ok_or_else(no_seat)?;
        let session = state.sessions.get_mut(&key).ok_or_else(no_seat)?;
        Ok((session, seat))
    }

    /// Takes a batch seat lease `lease_id` sent in `pass`.
    pub(crate) fn send(
        &self,
        lease_id: &str,
        pass: Pass,
        bytes: Vec<u8>,
        words: u64,
        resolved: u64,
    ) -> Result<(), ShareError> {
        let mut state = self.lock();
        let (session, seat) = Self::seat_of(&mut state, lease_id)?;
        let batch = RelayBatch {
            from: seat,
            bytes: bytes.into(),
            words,
            resolved,
        };
        Ok(session.relay.send(pass, batch)?)
    }

    /// Ends seat lease `lease_id`'s `pass`. Once the verification's pass is complete, every
    /// seat but seat 0 is done.
    pub(crate) fn end(&self, lease_id: &str, pass: Pass) -> Result<PassEnd, ShareError> {
        let mut state = self.lock();
        let (session, seat) = Self::seat_of(&mut state, lease_id)?;
        if session.relay.end(seat, pass)? {
            session.wake(Some(pass));
            if pass == Pass::Verified {
                let done: Vec<String> = session.holders[1..]
                    .iter_mut()
                    .filter_map(|h| match std::mem::replace(h, Holder::Done) {
                        Holder::Held(l) => Some(l.id),
                        _ => None,
                    })
                    .collect();
                for id in done {
                    state.seats.remove(&id);
                }
            }
            return Ok(PassEnd::Complete);
        }
        let (tx, rx) = oneshot::channel();
        session.waiters.push((pass, tx));
        Ok(PassEnd::Waiting(rx))
    }

    /// The batches the other seats sent in complete pass `pass`, for seat lease `lease_id`
    /// (seat 0's still, or a seat's whose parts are not sent yet).
    pub(crate) fn take(&self, lease_id: &str, pass: Pass) -> Result<Vec<Arc<[u8]>>, ShareError> {
        let mut state = self.lock();
        let (session, seat) = Self::seat_of(&mut state, lease_id)?;
        if let Some(why) = session.relay.abandoned() {
            return Err(RelayError::Abandoned(why.to_string()).into());
        }
        Ok(session.relay.take(seat, pass)?)
    }

    /// Whether `pass` of the job of seat lease `lease_id` is complete: for a call woken from
    /// waiting, `false` when the job was given up instead.
    pub(crate) fn is_complete(&self, lease_id: &str, pass: Pass) -> bool {
        let state = self.lock();
        let Some(&(key, _)) = state.seats.get(lease_id) else {
            // A seat done with the verification's pass.
            return pass == Pass::Verified;
        };
        state
            .sessions
            .get(&key)
            .is_some_and(|s| s.relay.abandoned().is_none() && s.relay.is_complete(pass))
    }

    /// The shared job `key` in progress, if it is one.
    pub(crate) fn report(&self, key: &JobKey) -> Option<ShareReport> {
        let state = self.lock();
        let s = state.sessions.get(key)?;
        Some(ShareReport {
            seats: s.seat.seats,
            seat_workers: s
                .holders
                .iter()
                .map(|h| match h {
                    Holder::Held(l) => Some(l.worker.clone()),
                    _ => None,
                })
                .collect(),
            pass: s.relay.last_complete(),
            bytes_relayed: s.relay.traffic().iter().map(|t| t.bytes).sum(),
            bytes_held: s.relay.held_bytes(),
            replacements: s.replacements,
        })
    }

    /// The job and worker of seat lease `lease_id`, if current.
    pub(crate) fn seat_holder(&self, lease_id: &str) -> Option<(JobKey, String)> {
        let state = self.lock();
        let &(key, seat) = state.seats.get(lease_id)?;
        match &state.sessions.get(&key)?.holders[seat] {
            Holder::Held(l) => Some((key, l.worker.clone())),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use xqtb_core::RuleSet;

    fn key(sig: &str, rules: RuleSet) -> JobKey {
        JobKey::whole(TableId::new(rules, sig.parse().unwrap()))
    }

    fn lease(id: &str, worker: &str) -> Lease {
        Lease {
            id: id.into(),
            worker: worker.into(),
            expires_at_ms: 0,
        }
    }

    fn shares(workers: usize) -> Shares {
        Shares::new(
            Sharing {
                workers,
                from_entries: 0,
                max_replacements: 1,
            },
            None,
            None,
        )
    }

    /// Only cycles-are-draws jobs of the size asked are shared (whole tables and pawn slices),
    /// by no more workers than asked, registered, or groups allow.
    #[test]
    fn the_policy_shares_large_cycles_are_draws_tables_only() {
        let krkn = key("KRvKN", RuleSet::CyclesAreDraws);
        assert_eq!(shares(1).seats_for(&krkn, 8), None);
        assert_eq!(shares(4).seats_for(&key("KRvKN", RuleSet::Asian), 8), None);
        assert_eq!(shares(4).seats_for(&krkn, 1), None);
        let seat = shares(4).seats_for(&krkn, 3).unwrap();
        assert_eq!((seat.seat, seat.seats), (0, 3));
        assert!(solver::group_count(krkn.slots.len(), seat.group_slots) >= 3);
        let big = Shares::new(
            Sharing {
                workers: 4,
                from_entries: krkn.entries() + 1,
                max_replacements: 1,
            },
            None,
            None,
        );
        assert_eq!(big.seats_for(&krkn, 8), None);
        // A pawn slice of KRPvKA (145,830 slots: three groups) by as many workers.
        let id = TableId::new(RuleSet::CyclesAreDraws, "KRPvKA".parse().unwrap());
        let slices = JobKey::jobs_of(id, 0);
        let widest = slices.iter().max_by_key(|k| k.slots.len()).unwrap();
        assert!(!widest.is_whole_table());
        let seat = shares(4).seats_for(widest, 8).unwrap();
        assert_eq!(seat.seats, 3);
        assert_eq!(solver::group_count(widest.slots.len(), seat.group_slots), 3);
    }

    /// A seat goes to a worker that holds none of the job's; a failed seat opens again and
    /// the next worker takes it; past the replacements allowed the job is given up, and the
    /// waiting seats are woken; a session whose seat 0 lease ended goes.
    #[test]
    fn seats_are_leased_replaced_and_given_up() {
        let s = shares(2);
        let k = key("KRvKN", RuleSet::CyclesAreDraws);
        let seat = s.seats_for(&k, 2).unwrap();
        s.open(k, &lease("L0", "a"), seat, 100, 1);
        assert!(
            s.take_seat("a", None, 0, 1000, "p").is_none(),
            "a holds seat 0"
        );
        assert!(
            s.take_seat("b", Some(99), 0, 1000, "p").is_none(),
            "too little memory"
        );
        let g = s.take_seat("b", Some(100), 0, 1000, "p").unwrap();
        assert_eq!((g.seat.seat, g.seat.seats, g.attempt), (1, 2, 1));
        assert!(
            s.take_seat("c", None, 0, 1000, "p").is_none(),
            "no seat open"
        );
        let renewed = s.renew(&g.lease.id, 500, 1000).unwrap();
        assert_eq!((renewed.expires_at_ms, renewed.seat), (1500, 1));
        assert_eq!(
            renewed.job_lease, "L0",
            "a seat keeps the job's lease alive"
        );
        let renewed = s.renew("L0", 600, 1000).unwrap();
        assert_eq!((renewed.expires_at_ms, renewed.seat), (1600, 0));
        assert_eq!(
            s.upload_lease("L0"),
            None,
            "the job's lease uploads as itself"
        );
        // Seat 0 waits for seat 1 in the start.
        s.send("L0", Pass::Start, vec![1], 1, 0).unwrap();
        let PassEnd::Waiting(mut woken) = s.end("L0", Pass::Start).unwrap() else {
            panic!("seat 1 has not ended the start")
        };
        // Seat 1 goes silent: its seat opens and c takes it.
        assert!(s.expire(1500, |_| true).is_empty());
        assert!(s.renew(&g.lease.id, 1600, 1000).is_none());
        let g2 = s.take_seat("c", None, 1600, 1000, "p").unwrap();
        assert_eq!(g2.seat.seat, 1);
        assert_eq!(s.report(&k).unwrap().replacements, 1);
        assert!(matches!(
            s.end(&g2.lease.id, Pass::Start),
            Ok(PassEnd::Complete)
        ));
        assert_eq!(woken.try_recv(), Ok(Some(())));
        assert_eq!(s.take(&g2.lease.id, Pass::Start).unwrap().len(), 1);
        // It fails too, past the one replacement allowed: the job is given up.
        let (was_seat, given_up) = s.vacate(&g2.lease.id, "the disk is full");
        assert!(was_seat);
        assert_eq!(given_up, Some((k, "L0".to_string())));
        assert!(s.take("L0", Pass::Start).is_err());
        // Seat 0's lease ended: the session goes.
        assert!(s.expire(2000, |_| false).is_empty());
        assert!(s.report(&k).is_none());
        assert!(matches!(
            s.send("L0", Pass::Win(1), vec![], 0, 0),
            Err(ShareError::NoSeat(_))
        ));
    }

    /// Seat 0's worker fails: the seat opens again without ending the job's attempt, the job's
    /// lease is retired for that worker, and the worker that takes the seat uploads under the
    /// job's lease.
    #[test]
    fn seat_0_is_replaced_like_any_seat() {
        let s = shares(2);
        let k = key("KRvKN", RuleSet::CyclesAreDraws);
        s.open(k, &lease("L0", "a"), s.seats_for(&k, 2).unwrap(), 0, 1);
        let g1 = s.take_seat("b", None, 0, 1000, "p").unwrap();
        s.send("L0", Pass::Start, vec![1], 1, 0).unwrap();
        assert!(!s.is_retired("L0"));
        assert_eq!(s.vacate("L0", "out of disk"), (true, None));
        assert!(s.is_retired("L0"), "a's heartbeats and uploads are refused");
        assert!(s.renew("L0", 10, 1000).is_none());
        assert!(matches!(
            s.send("L0", Pass::Start, vec![1], 1, 0),
            Err(ShareError::NoSeat(_))
        ));
        let g0 = s.take_seat("c", None, 10, 1000, "p").unwrap();
        assert_eq!((g0.seat.seat, g0.attempt), (0, 1));
        assert_eq!(s.report(&k).unwrap().replacements, 1);
        assert_eq!(s.renew(&g0.lease.id, 20, 1000).unwrap().job_lease, "L0");
        assert_eq!(
            s.upload_lease(&g0.lease.id),
            Some(("L0".to_string(), "c".to_string()))
        );
        assert_eq!(s.upload_lease(&g1.lease.id), None, "seat 1 uploads nothing");
        // c replays seat 0's start; the pass completes with seat 1's.
        s.send(&g0.lease.id, Pass::Start, vec![1], 1, 0).unwrap();
        assert!(matches!(
            s.end(&g0.lease.id, Pass::Start),
            Ok(PassEnd::Waiting(_))
        ));
        assert!(matches!(
            s.end(&g1.lease.id, Pass::Start),
            Ok(PassEnd::Complete)
        ));
        assert_eq!(s.seat_holder(&g0.lease.id), Some((k, "c".to_string())));
    }

    /// A session recorded with its log on disk is resumed by a coordinator that starts again
    /// while its job's lease is current: every seat open in the same attempt, the passes every
    /// seat took complete (a replacement catches up on them); a session whose job's lease ended
    /// is dropped with its files.
    #[test]
    fn a_restarted_coordinator_resumes_its_sessions() {
        let dir = tempfile::tempdir().unwrap();
        let store = storage_format::store::SledStore::open(dir.path()).unwrap();
        let logs = dir.path().join("share-logs");
        let with_log = || {
            let records = store.records("share-sessions").unwrap();
            Shares::new(shares(2).sharing, Some(logs.clone()), Some(records))
        };
        let s = with_log();
        let (k, other) = (
            key("KRvKN", RuleSet::CyclesAreDraws),
            key("KRvKR", RuleSet::CyclesAreDraws),
        );
        s.open(k, &lease("L0", "a"), s.seats_for(&k, 2).unwrap(), 7, 3);
        let g = s.take_seat("b", None, 0, 1000, "p").unwrap();
        s.open(
            other,
            &lease("M0", "a"),
            s.seats_for(&other, 2).unwrap(),
            7,
            1,
        );
        s.send("L0", Pass::Start, vec![1, 2], 1, 0).unwrap();
        s.send(&g.lease.id, Pass::Start, vec![3], 1, 0).unwrap();
        s.end("L0", Pass::Start).unwrap();
        s.end(&g.lease.id, Pass::Start).unwrap();
        s.take("L0", Pass::Start).unwrap();
        s.take(&g.lease.id, Pass::Start).unwrap();
        std::mem::forget(s); // Stopped: its files stay.
        let s = with_log();
        assert_eq!(s.resume(|lease| lease == "L0"), ["L0"]);
        assert!(s.report(&other).is_none(), "its job's lease ended");
        assert_eq!(
            std::fs::read_dir(&logs).unwrap().count(),
            2,
            "one log's two files"
        );
        let report = s.report(&k).unwrap();
        assert_eq!(report.seat_workers, [None, None]);
        assert_eq!(report.pass, Some(Pass::Start));
        assert!(s.is_retired("L0"), "the seats' workers ask again");
        let g0 = s.take_seat("c", Some(7), 0, 1000, "q").unwrap();
        assert_eq!((g0.key, g0.seat.seat, g0.attempt), (k, 0, 3));
        s.send(&g0.lease.id, Pass::Start, vec![1, 2], 1, 0).unwrap();
        assert!(matches!(
            s.end(&g0.lease.id, Pass::Start),
            Ok(PassEnd::Complete)
        ));
        assert_eq!(&*s.take(&g0.lease.id, Pass::Start).unwrap()[0], &[3]);
        assert_eq!(
            s.upload_lease(&g0.lease.id),
            Some(("L0".into(), "c".into()))
        );
    }

    /// Once the verification's pass is complete the seats but the first are done: they hold
    /// no lease.
    #[test]
    fn seats_are_done_after_the_verification() {
        let s = shares(2);
        let k = key("KRvKN", RuleSet::CyclesAreDraws);
        s.open(k, &lease("L0", "a"), s.seats_for(&k, 2).unwrap(), 0, 1);
        let g = s.take_seat("b", None, 0, 1000, "p").unwrap();
        s.send(&g.lease.id, Pass::Parts, vec![7; 10], 0, 0).unwrap();
        assert!(matches!(
            s.end(&g.lease.id, Pass::Parts),
            Ok(PassEnd::Waiting(_))
        ));
        assert!(matches!(s.end("L0", Pass::Parts), Ok(PassEnd::Complete)));
        assert_eq!(&*s.take("L0", Pass::Parts).unwrap()[0], &[7; 10]);
        assert!(s.seat_holder(&g.lease.id).is_some());
        assert!(matches!(
            s.end("L0", Pass::Verified),
            Ok(PassEnd::Waiting(_))
        ));
        assert!(matches!(
            s.end(&g.lease.id, Pass::Verified),
            Ok(PassEnd::Complete)
        ));
        assert!(s.is_complete(&g.lease.id, Pass::Verified));
        assert!(s.seat_holder(&g.lease.id).is_none());
        let report = s.report(&k).unwrap();
        assert_eq!(report.seat_workers, [Some("a".to_string()), None]);
        assert_eq!(report.pass, Some(Pass::Verified));
        assert_eq!(report.bytes_relayed, 10);
    }
}
