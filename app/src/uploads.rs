//! Uploads: the checks of a worker's shard, from its first chunk (the lease, the announced
//! length) to the whole file (every checksum, the header, and a sample of its values checked one
//! ply deep against the table and its stored dependencies), and the atomic commit of a shard
//! that passes. A shard that fails hands its job back to the queue; a worker whose values are
//! wrong is quarantined.

use crate::app::App;
use crate::error::AppError;
use crate::jobs::now_ms;
use crate::limits::max_shard_bytes;
use crate::memory::release_freed_memory;
use crate::scheduler::Scheduler;
use probe::Tablebase;
use std::sync::Arc;
use std::time::Instant;
use storage_format::codec::{self, EncodedTable};
use storage_format::shard;
use storage_format::store::{SledStore, TableStore};
use xiangqi::Color;
use xqtb_core::{JobKey, RuleSet, SlotRange, TableIndex};

/// A committed part of a table (pawn slices) read from the store a block at a time, for the
/// sample check of a slice whose pawn advances lead into it.
struct StoredPart<'a> {
    store: &'a SledStore,
    header: codec::TableHeader,
    index: TableIndex,
    decoder: codec::BlockDecoder,
}

impl xqtb_core::BlockSource for StoredPart<'_> {
    fn index(&self) -> &TableIndex {
        &self.index
    }
    fn rules(&self) -> RuleSet {
        self.header.rules
    }
    fn slots(&self) -> SlotRange {
        self.header.slots
    }
    fn block_slots(&self) -> u64 {
        self.header.block_values as u64
    }
    fn block(&self, side: Color, block: u64) -> Result<Vec<u16>, String> {
        let h = &self.header;
        let block = u32::try_from(block).map_err(|_| format!("no block {block}"))?;
        let stored = self
            .store
            .part_block(&h.id(), h.slots.start, side, block)
            .map_err(|e| e.to_string())?;
        codec::decode_stored_block(h, &self.decoder, side, block, &stored)
            .map_err(|e| e.to_string())
    }
}

/// Why an upload is refused after it arrived whole.
struct Refusal {
    reason: String,
    /// The shard is well formed but its values are wrong: the worker is faulty.
    wrong_values: bool,
}

impl Refusal {
    fn malformed(reason: impl ToString) -> Refusal {
        Refusal {
            reason: reason.to_string(),
            wrong_values: false,
        }
    }
}

/// FNV-1a of `s`: a fixed hash, so that a lease id means the same sample seed everywhere.
fn fnv1a(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    })
}

impl App {
    /// The lease an upload under `lease_id` is the job's under, and the worker that holds
    /// `lease_id` when that is not the job's own lease's worker: a shared job's seat 0 taken
    /// over by another worker uploads under its seat lease for the job's. A job's lease whose
    /// seat 0 went to another worker uploads nothing.
    fn job_lease_of(&self, lease_id: &str) -> Result<(String, Option<String>), AppError> {
        if self.shares.is_retired(lease_id) {
            return Err(crate::shares::ShareError::NoSeat(lease_id.to_string()).into());
        }
        Ok(match self.shares.upload_lease(lease_id) {
            Some((job_lease, worker)) => (job_lease, Some(worker)),
            None => (lease_id.to_string(), None),
        })
    }

    /// Checks the first chunk of an upload before anything more of it is received: the lease
    /// must be current and for `key`, and the `announced` length must fit a shard of the table
    /// ([`max_shard_bytes`]); an upload too long for its table is refused and its job handed
    /// back. Returns the longest upload accepted.
    pub fn begin_upload(
        &self,
        lease_id: &str,
        key: &JobKey,
        announced: u64,
    ) -> Result<u64, AppError> {
        let slots = TableIndex::size_of(&key.table.signature);
        let bound = max_shard_bytes(slots);
        let (lease, _) = self.job_lease_of(lease_id)?;
        let lease_id = lease.as_str();
        let mut s = self.jobs.lock();
        s.check_upload(lease_id, key, now_ms())?;
        if announced > bound {
            let reason = format!(
                "it announces {announced} bytes, but a shard of {} ({slots} slots per side) has \
                 at most {bound} bytes",
                key.table
            );
            return Err(self.refuse(&mut s, lease_id, key, &reason));
        }
        Ok(bound)
    }

    /// Hands back the job of an upload that did not arrive whole (`why`: it stalled, broke off
    /// or ran past its announced length). A lease that is no longer current is left alone.
    pub fn abandon_upload(&self, lease_id: &str, key: &JobKey, why: &str) -> Result<(), AppError> {
        let Ok((lease, _)) = self.job_lease_of(lease_id) else {
            return Ok(());
        };
        let lease_id = lease.as_str();
        let mut s = self.jobs.lock();
        if s.check_upload(lease_id, key, now_ms()).is_ok() {
            match self.refuse(&mut s, lease_id, key, why) {
                AppError::UploadRefused(_) => {}
                e => return Err(e),
            }
        }
        Ok(())
    }

    /// Refuses the upload under `lease_id` for `reason`: the job goes back to the queue (up to
    /// the retry limit) and the worker is marked idle. Returns the error to answer with.
    fn refuse(&self, s: &mut Scheduler, lease_id: &str, key: &JobKey, reason: &str) -> AppError {
        let worker = s.lease_holder(lease_id).unwrap_or("?").to_string();
        let msg = format!("upload of {key} by {worker} refused: {reason}");
        tracing::warn!(lease = lease_id, job = %key, worker = %worker, "{msg}");
        metrics::counter!("xqtb_uploads_total", "result" => "refused").increment(1);
        let failed = s.fail(lease_id, &msg).map_err(AppError::from);
        if let Err(e) = failed.and_then(|r| self.jobs.persist(&[r])) {
            return e;
        }
        self.workers.release(lease_id);
        AppError::UploadRefused(msg)
    }

    /// Checks an uploaded shard for job `key` under `lease_id` and commits it atomically: the
    /// lease must be current, the shard whole (every checksum, the header, the index scheme),
    /// and a sample of its values right one ply deep against the table itself and its stored
    /// dependencies ([`Limits::sample`](crate::Limits::sample)). A shard that fails hands the
    /// job back to the queue; a worker whose values are wrong is quarantined (it gets no more
    /// jobs) and counted in `xqtb_sample_check_failures_total`.
    ///
    /// The checks run without the scheduler lock (the sample takes seconds on large tables, and
    /// heartbeats, leases and status calls must not wait for it); the lease is checked again
    /// under the lock, which is then held until the job is marked finished, so the lease cannot
    /// expire between that check and the commit.
    pub fn commit_upload(
        &self,
        lease_id: &str,
        key: &JobKey,
        bytes: &[u8],
    ) -> Result<String, AppError> {
        let seat_lease = lease_id;
        let (lease, uploader) = self.job_lease_of(lease_id)?;
        let lease_id = lease.as_str();
        // A stale upload is refused before the work of checking it.
        let worker = {
            let mut s = self.jobs.lock();
            s.check_upload(lease_id, key, now_ms())?;
            let holder = || s.lease_holder(lease_id).unwrap_or("?").to_string();
            uploader.unwrap_or_else(holder)
        };
        let checked = self.check_shard(key, bytes, lease_id);
        let mut s = self.jobs.lock();
        let now = now_ms();
        s.check_upload(lease_id, key, now)?;
        let table = match checked {
            Ok(t) => t,
            Err(refusal) => {
                if refusal.wrong_values {
                    self.workers.quarantine(&worker, key, &refusal.reason);
                }
                return Err(self.refuse(&mut s, lease_id, key, &refusal.reason));
            }
        };
        if key.is_whole_table() {
            self.store.put_table(&table)?;
        } else if self.store.put_part(&table)? {
            tracing::info!(table = %key.table, "every slice committed: the table is stored whole");
        }
        let changed = s.finish(lease_id, now)?;
        self.jobs.persist(&changed)?;
        drop(s);
        self.workers.release(lease_id);
        self.workers.release(seat_lease);
        self.update_gauges();
        // The upload's blocks, and the pages the store let go of after writing them, are free
        // now: hand them back rather than keep them in the allocator's arenas.
        drop(table);
        release_freed_memory();
        metrics::counter!("xqtb_uploads_total", "result" => "accepted").increment(1);
        metrics::counter!("xqtb_upload_bytes_total").increment(bytes.len() as u64);
        tracing::info!(lease = lease_id, job = %key, bytes = bytes.len(), "table committed");
        Ok(format!("{key} committed ({} bytes)", bytes.len()))
    }

    /// The checks of [`App::commit_upload`] on the bytes of an upload (no lock held).
    fn check_shard(
        &self,
        key: &JobKey,
        bytes: &[u8],
        lease_id: &str,
    ) -> Result<EncodedTable, Refusal> {
        let t = shard::read_shard(bytes).map_err(Refusal::malformed)?;
        if t.header.id() != key.table || t.header.slots != key.slots {
            return Err(Refusal::malformed(format!(
                "the shard holds {} slots {}, not {key}",
                t.header.id(),
                t.header.slots,
            )));
        }
        // Every block decompressed, the values' checksums and the header's counts: one pass, a
        // few blocks at a time, whatever the size of the table.
        let started = Instant::now();
        codec::check_table(&t).map_err(Refusal::malformed)?;
        let decode_secs = started.elapsed().as_secs_f64();
        let policy = self.limits().sample;
        if policy.is_off() {
            return Ok(t);
        }
        // A missing dependency is the store's fault, not the worker's: refused, the job handed
        // back, but nobody quarantined.
        for dep in key.table.dependencies() {
            if !matches!(self.store.header(&dep), Ok(Some(_))) {
                return Err(Refusal::malformed(format!(
                    "cannot check it: its dependency {dep} is not in the store"
                )));
            }
        }
        let checked = self.sample_check(key, &t, lease_id, started, decode_secs);
        // The check's scratch (the codes each round needs) was freed by many threads; glibc
        // keeps such memory in its arenas, and a coordinator would hold it from its largest
        // check on (the soak test watches the coordinator's memory across commits).
        release_freed_memory();
        checked.map(|()| t)
    }

    /// The sample check of an upload's table `t` (see
    /// [`Limits::sample`](crate::Limits::sample)), reading it a block at a time; `t` has passed
    /// [`codec::check_table`].
    fn sample_check(
        &self,
        key: &JobKey,
        t: &EncodedTable,
        lease_id: &str,
        started: Instant,
        decode_secs: f64,
    ) -> Result<(), Refusal> {
        let policy = self.limits().sample;
        let blocks = codec::EncodedBlocks::new(t).map_err(Refusal::malformed)?;
        // Dependencies through a block cache of their own, so that the check neither evicts
        // the blocks users probe nor loads whole dependency tables into memory; a pawn slice's
        // also the committed slices its pawn advances lead into, read a block at a time like
        // the upload (their worker held them decoded; the coordinator holds what a round of the
        // sample needs).
        let tables = Tablebase::new(Arc::clone(&self.store));
        let stored = self
            .store
            .part_headers(&key.table)
            .map_err(Refusal::malformed)?;
        let mut parts = Vec::new();
        for slots in key.slice_dependencies() {
            let header = stored
                .iter()
                .find(|h| h.slots == slots)
                .cloned()
                .ok_or_else(|| {
                    Refusal::malformed(format!(
                        "cannot check it: the slices {slots} it reads are not in the store"
                    ))
                })?;
            parts.push(StoredPart {
                store: &self.store,
                index: header.index().map_err(Refusal::malformed)?,
                header,
                decoder: codec::BlockDecoder::new(None),
            });
        }
        let slices: Vec<&dyn xqtb_core::BlockSource> = parts
            .iter()
            .map(|p| p as &dyn xqtb_core::BlockSource)
            .collect();
        let seed = fnv1a(lease_id);
        let legal = t.header.counts.legal();
        let report =
            solver::sample::check_sample_blocks(&blocks, &slices, legal, &tables, policy, seed)
                .map_err(|e| match e {
                    solver::sample::SampleError::Wrong(e) => Refusal {
                        reason: format!(
                            "the sample check ({}% of the positions, at least {}, seed {seed:#x}) \
                         found a wrong value: {e}",
                            policy.percent, policy.minimum
                        ),
                        wrong_values: true,
                    },
                    e @ solver::sample::SampleError::Block { .. } => Refusal::malformed(e),
                })?;
        let secs = started.elapsed().as_secs_f64();
        metrics::histogram!("xqtb_sample_check_seconds").record(secs);
        tracing::info!(
            job = %key,
            checked = report.checked,
            legal = report.legal,
            seed = format_args!("{seed:#x}"),
            decode_secs,
            check_secs = secs - decode_secs,
            "sample check passed"
        );
        Ok(())
    }
}
