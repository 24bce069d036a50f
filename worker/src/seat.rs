//! A worker's seat in a job shared by several workers (`Job.share`): it solves the levels of
//! its own groups of the table, exchanging its updates with the other seats through the
//! coordinator ([`solver::Exchange`] over the `ShareSend` and `ShareReceive` calls), then hands
//! its parts of the table to the others and takes theirs, joins the table and verifies its own
//! groups' entries of it from the table's blocks. Once every seat has verified its entries,
//! seat 0 uploads the table as any job's table.
//!
//! A seat that fails is leased again by the coordinator; the new worker starts afresh and
//! catches up from the coordinator's log, so nothing here survives a failure.

use anyhow::{Context, Result, anyhow};
use proto::v1::jobs_client::JobsClient;
use proto::v1::{ShareBatch, ShareReceiveRequest};
use solver::{Exchange, Pass, Progress, Share, StateStore, Updates};
use std::collections::BTreeMap;
use std::io;
use storage_format::codec::{self, EncodedBlocks, EncodedTable};
use storage_format::shard;
use tokio::runtime::Handle;
use xqtb_core::{JobKey, Probe};

type Jobs = JobsClient<rpc::Client>;

/// Bytes of a part's shard file per batch of the parts' pass (a batch must stay well under
/// gRPC's 4 MiB message).
const PART_CHUNK: usize = 1 << 20;

/// More bytes than any part's shard file and legal bits take (a table's shard is at most a few
/// bytes per entry): a larger length is damage, refused before anything is allocated.
const MAX_PART_BYTES: u64 = 16 << 30;

/// A seat: which of the job's workers this is, and how the job is cut into groups.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Seat {
    pub(crate) seat: usize,
    pub(crate) seats: usize,
    pub(crate) group_slots: u64,
}

impl Seat {
    /// The seat a lease grants, if its job is shared; an error for a seat that makes no sense.
    pub(crate) fn of(share: Option<&proto::v1::ShareSeat>) -> Result<Option<Seat>> {
        let Some(s) = share else {
            return Ok(None);
        };
        if s.seat >= s.seats || s.group_slots == 0 {
            return Err(anyhow!(
                "the coordinator leased seat {} of {} with groups of {} slots",
                s.seat,
                s.seats,
                s.group_slots
            ));
        }
        Ok(Some(Seat {
            seat: s.seat as usize,
            seats: s.seats as usize,
            group_slots: s.group_slots,
        }))
    }
}

/// The exchange of a seat's updates through the coordinator, from the solver's threads: each
/// call blocks on the worker's runtime.
struct CoordinatorExchange {
    client: Jobs,
    lease_id: String,
    runtime: Handle,
    /// Fault injection: stop for good (heartbeating on) at this pass of a seat other than 0.
    #[cfg(feature = "fault-injection")]
    stall_at_pass: Option<usize>,
    #[cfg(feature = "fault-injection")]
    passes: std::sync::atomic::AtomicUsize,
}

fn share_failed(e: tonic::Status) -> io::Error {
    io::Error::other(format!("the coordinator: {}", e.message()))
}

impl CoordinatorExchange {
    fn send_bytes(&self, pass: Pass, data: Vec<u8>, words: u64, resolved: u64) -> io::Result<()> {
        let (kind, level) = pass.tag();
        let batch = ShareBatch {
            lease_id: self.lease_id.clone(),
            pass_kind: kind.into(),
            level: level.into(),
            data,
            words,
            resolved,
        };
        let mut client = self.client.clone();
        self.runtime
            .block_on(client.share_send(batch))
            .map_err(share_failed)?;
        Ok(())
    }

    /// Ends `pass`, waits for the other seats to end it, and hands `take` their batches (none
    /// unless `want`).
    fn receive_bytes(
        &self,
        pass: Pass,
        want: bool,
        take: &mut dyn FnMut(Vec<u8>) -> io::Result<()>,
    ) -> io::Result<()> {
        #[cfg(feature = "fault-injection")]
        self.maybe_stall();
        let (kind, level) = pass.tag();
        let request = ShareReceiveRequest {
            lease_id: self.lease_id.clone(),
            pass_kind: kind.into(),
            level: level.into(),
            take: want,
        };
        let mut client = self.client.clone();
        let mut stream = self
            .runtime
            .block_on(client.share_receive(request))
            .map_err(share_failed)?
            .into_inner();
        while let Some(batch) = self
            .runtime
            .block_on(stream.message())
            .map_err(share_failed)?
        {
            take(batch.data)?;
        }
        Ok(())
    }

    #[cfg(feature = "fault-injection")]
    fn maybe_stall(&self) {
        let pass = self
            .passes
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if self.stall_at_pass == Some(pass) {
            tracing::warn!(lease = %self.lease_id, pass, "fault injection: this seat stops here");
            loop {
                std::thread::sleep(std::time::Duration::from_secs(3600));
            }
        }
    }
}

impl Exchange for CoordinatorExchange {
    fn send(&self, _worker: usize, batch: Updates) -> io::Result<()> {
        self.send_bytes(
            batch.pass,
            batch.encode(),
            batch.word_count(),
            batch.resolved,
        )
    }

    fn receive(
        &self,
        _worker: usize,
        pass: Pass,
        take: &mut dyn FnMut(Updates) -> io::Result<()>,
    ) -> io::Result<()> {
        self.receive_bytes(pass, true, &mut |bytes| take(Updates::decode(&bytes)?))
    }
}

/// How a seat's job runs.
pub(crate) struct SeatJob<'a> {
    pub(crate) key: JobKey,
    pub(crate) seat: Seat,
    pub(crate) lease_id: &'a str,
    pub(crate) client: Jobs,
    pub(crate) runtime: Handle,
    /// The directory of the seat's states on local disk.
    pub(crate) dir: &'a std::path::Path,
    /// What the seat sends the others of a pass: as its memory allows.
    pub(crate) sends: solver::Sends,
    #[cfg(feature = "fault-injection")]
    pub(crate) stall_at_pass: Option<usize>,
}

/// Solves seat `job.seat` of `job.key` over `deps` (on the calling thread's rayon pool) and
/// verifies its entries. Returns the table, joined and encoded, for seat 0 to upload; `None`
/// for the other seats, whose work is done.
pub(crate) fn solve_seat(
    job: SeatJob,
    deps: &dyn Probe,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<Option<EncodedTable>> {
    let exchange = CoordinatorExchange {
        client: job.client,
        lease_id: job.lease_id.to_string(),
        runtime: job.runtime,
        #[cfg(feature = "fault-injection")]
        stall_at_pass: job.stall_at_pass,
        #[cfg(feature = "fault-injection")]
        passes: Default::default(),
    };
    let scratch = crate::DirScratch::create(job.dir)?;
    let store = StateStore::Groups {
        group_slots: job.seat.group_slots,
        scratch: &scratch,
        share: Some(Share {
            worker: job.seat.seat,
            workers: job.seat.seats,
            exchange: &exchange,
            sends: job.sends,
        }),
    };
    let (id, slots) = (job.key.table, job.key.slots);
    let mut parts = Vec::new();
    let mut encode = |part: xqtb_core::Table| parts.push(codec::encode_table(&part));
    // Which entries of its own groups are legal comes with the solve; the others' come with
    // their parts (computing them from the index would take a good share of the levels' time).
    let mut legal = solver::solve_range_in_parts(id, slots, store, deps, progress, &mut encode)?;
    drop(scratch);
    for part in &parts {
        send_part(&exchange, part, &legal)?;
    }
    let mut received = PartsReceived::default();
    exchange.receive_bytes(Pass::Parts, true, &mut |bytes| {
        received.add(&bytes).map_err(io::Error::other)
    })?;
    for (part, words) in received.finish()? {
        let [red, black] = &words;
        legal
            .add_words(part.header.slots, [red, black])
            .map_err(|e| {
                anyhow!(
                    "the legal entries of the part at slot {}: {e}",
                    part.header.slots.start
                )
            })?;
        parts.push(part);
    }
    parts.sort_by_key(|p| p.header.slots.start);
    let encoded = match parts.len() {
        1 => parts.pop().expect("one part"),
        _ => codec::assemble_parts(parts, slots)?,
    };
    let started = std::time::Instant::now();
    let (seat, seats) = (job.seat.seat, job.seat.seats);
    solver::verify_blocks_of_worker(
        &EncodedBlocks::new(&encoded)?,
        &legal,
        deps,
        progress,
        (seat, seats),
        job.seat.group_slots,
    )?;
    tracing::info!(table = %id, seat, seats, secs = started.elapsed().as_secs_f64(), "verified the seat's entries from the table's blocks");
    // Every seat has verified its entries once this pass is complete.
    exchange.receive_bytes(Pass::Verified, false, &mut |_| Ok(()))?;
    Ok((seat == 0).then_some(encoded))
}

/// Sends `part` to the other seats in the parts' pass with its legal entries (`legal`), in
/// chunks, each headed by the part's first slot, the chunk's offset and the whole's length.
/// The whole: the shard file's length, the shard file, and the legal bits of both sides
/// compressed.
fn send_part(
    exchange: &CoordinatorExchange,
    part: &EncodedTable,
    legal: &solver::Legal,
) -> io::Result<()> {
    let shard = shard::write_shard(part);
    let words = legal.words(part.header.slots);
    let bits: Vec<u8> = words
        .iter()
        .flat_map(|w| w.iter().flat_map(|w| w.to_le_bytes()))
        .collect();
    let mut file = Vec::with_capacity(8 + shard.len() + bits.len() / 8);
    file.extend_from_slice(&(shard.len() as u64).to_le_bytes());
    file.extend_from_slice(&shard);
    file.extend_from_slice(&zstd::bulk::compress(&bits, 1)?);
    for (i, chunk) in file.chunks(PART_CHUNK).enumerate() {
        let mut data = Vec::with_capacity(24 + chunk.len());
        data.extend_from_slice(&part.header.slots.start.to_le_bytes());
        data.extend_from_slice(&((i * PART_CHUNK) as u64).to_le_bytes());
        data.extend_from_slice(&(file.len() as u64).to_le_bytes());
        data.extend_from_slice(chunk);
        exchange.send_bytes(Pass::Parts, data, 0, 0)?;
    }
    Ok(())
}

/// The other seats' parts as their chunks come in, by first slot.
#[derive(Default)]
struct PartsReceived {
    files: BTreeMap<u64, (Vec<u8>, u64)>,
}

impl PartsReceived {
    fn add(&mut self, bytes: &[u8]) -> Result<(), String> {
        let field = |i: usize| {
            bytes
                .get(8 * i..8 * i + 8)
                .map(|b| u64::from_le_bytes(b.try_into().expect("eight bytes")))
                .ok_or("a part's chunk cut short")
        };
        let (start, offset, len) = (field(0)?, field(1)?, field(2)?);
        if len > MAX_PART_BYTES {
            return Err(format!(
                "the part at slot {start} claims {len} bytes, more than a part can take"
            ));
        }
        let (file, filled) = self
            .files
            .entry(start)
            .or_insert_with(|| (vec![0; len as usize], 0));
        let data = &bytes[24..];
        let end = offset as usize + data.len();
        if file.len() as u64 != len || end > file.len() {
            return Err(format!(
                "a chunk of the part at slot {start} does not fit it"
            ));
        }
        file[offset as usize..end].copy_from_slice(data);
        *filled += data.len() as u64;
        Ok(())
    }

    /// The parts, each with its legal bits per side.
    fn finish(self) -> Result<Vec<(EncodedTable, [Vec<u64>; 2])>> {
        self.files
            .into_iter()
            .map(|(start, (file, filled))| {
                let what = || format!("the part at slot {start}");
                if filled != file.len() as u64 || file.len() < 8 {
                    return Err(anyhow!("{} came incomplete", what()));
                }
                let len = u64::from_le_bytes(file[..8].try_into().expect("eight bytes"));
                let rest = &file[8..];
                if len > rest.len() as u64 {
                    return Err(anyhow!("{} came cut short", what()));
                }
                let (shard, bits) = rest.split_at(len as usize);
                let part = shard::read_shard(shard).with_context(what)?;
                let words = part.header.slots.len().div_ceil(64) as usize;
                let bits = zstd::bulk::decompress(bits, 16 * words).with_context(what)?;
                if bits.len() != 16 * words {
                    return Err(anyhow!("{}: its legal bits do not fit it", what()));
                }
                let word = |i: usize| {
                    u64::from_le_bytes(bits[8 * i..8 * i + 8].try_into().expect("eight bytes"))
                };
                let red = (0..words).map(word).collect();
                let black = (words..2 * words).map(word).collect();
                Ok((part, [red, black]))
            })
            .collect()
    }
}
