//! The bookkeeping of an exchange between the workers sharing a job, whatever carries the
//! bytes: which batches each worker sent in which pass, which workers have ended the pass (the
//! barrier), what each pass carried, and the log that lets a failed worker be replaced.
//!
//! A [`Relay`] is plain state; the exchange that owns it waits for a pass to be complete in
//! its own way (a condition variable for workers on threads of one process
//! ([`crate::share_in_process`]), a future for the coordinator that relays between machines).
//!
//! **Replacement.** With its log kept, the relay holds every complete pass's batches. A worker
//! that failed is forgotten ([`Relay::forget`]: what it sent in the pass in progress is
//! dropped) and a replacement solves its groups from the start: in each complete pass it sends
//! again what the failed worker sent, which the relay checks byte for byte instead of storing,
//! and takes the others' batches at once; then it joins the others in the pass they wait in.
//! Since a pass is a function of what came before it, a replacement that sends anything else
//! is a bug, and the relay says so.
//!
//! **The log's memory.** A complete pass's batches are needed in memory only until every worker
//! took them; after that only a replacement reads them. With a [`LogStore`] (the coordinator
//! gives one on its local disk) they move there then, so the relay holds in memory only the
//! pass in progress and the passes some worker has still to take.
//!
//! **Resuming.** With each pass it stores, the relay stores an index of its batches; from those
//! indexes [`Relay::resume`] makes the relay again (a coordinator that restarted), every stored
//! pass complete and every worker to be replaced.

use crate::level_share::Pass;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io;
use std::sync::Arc;

/// Where a relay keeps the batches of its log that every worker has taken: bytes written
/// once, read back by a replacement. `Send` so that the relay can move between threads.
pub trait LogStore: Send {
    /// Keeps `bytes`; returns where.
    fn put(&mut self, bytes: &[u8]) -> io::Result<LogRef>;
    /// The bytes kept at `at`.
    fn get(&self, at: LogRef) -> io::Result<Arc<[u8]>>;
    /// Keeps the index of a pass whose batches were all put: the indexes, read back in the
    /// order they were put, are what [`Relay::resume`] starts from.
    fn put_index(&mut self, index: &[u8]) -> io::Result<()>;
}

/// Where a [`LogStore`] kept a batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogRef {
    /// Its first byte.
    pub offset: u64,
    /// Its length.
    pub len: u64,
}

/// A batch's bytes: in memory, or in the log store.
#[derive(Clone, Debug)]
enum Held {
    Memory(Arc<[u8]>),
    Stored(LogRef),
}

impl Held {
    fn len(&self) -> u64 {
        match self {
            Held::Memory(b) => b.len() as u64,
            Held::Stored(r) => r.len,
        }
    }
}

/// A batch as the log holds it.
#[derive(Clone, Debug)]
struct Logged {
    from: usize,
    bytes: Held,
    words: u64,
    resolved: u64,
}

/// What the workers sent in one pass.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PassTraffic {
    /// The pass.
    pub pass: Pass,
    /// Words of kinds sent (each counted once, whatever the number of recipients).
    pub words: u64,
    /// Encoded bytes as they travel: a batch of a loss level's first pass goes to the owners
    /// of its entries (one recipient per word), any other batch to every other worker.
    pub bytes: u64,
    /// Entries resolved in the pass by all the workers.
    pub resolved: u64,
}

/// A batch as the relay holds it: encoded bytes, with the counts the traffic needs (the relay
/// never decodes a batch).
#[derive(Clone, Debug)]
pub struct RelayBatch {
    /// The worker that sent it.
    pub from: usize,
    /// The encoded batch.
    pub bytes: Arc<[u8]>,
    /// Words of kinds it holds.
    pub words: u64,
    /// Entries its sender resolved in the pass (counted once per pass: senders put it in one
    /// batch).
    pub resolved: u64,
}

/// Why the relay refused a call.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RelayError {
    /// The job was given up (a worker failed for good): nobody waits any more.
    #[error("the shared job was given up: {0}")]
    Abandoned(String),
    /// A worker number outside `0..workers`.
    #[error("worker {worker} of a job shared by {workers} workers")]
    NoSuchWorker {
        /// The worker named.
        worker: usize,
        /// How many share the job.
        workers: usize,
    },
    /// A replacement did not send what the worker it replaces sent.
    #[error("worker {worker}'s replacement {what} in {pass:?} than the worker it replaces")]
    Replay {
        /// The worker replaced.
        worker: usize,
        /// The pass.
        pass: Pass,
        /// What differed.
        what: String,
    },
    /// A complete pass whose batches were dropped (no log is kept): nobody can catch up on it.
    #[error("{0:?} is over and its updates were not kept")]
    NotKept(Pass),
    /// The log store failed to keep or read back a batch.
    #[error("the log of the shared job: {0}")]
    Log(String),
}

/// One pass's batches and barrier.
#[derive(Default)]
struct PassBatches {
    batches: Vec<Logged>,
    /// Workers that ended the pass (sent all their batches).
    ended: BTreeSet<usize>,
    /// Every worker ended it: its batches are final.
    complete: bool,
    /// Workers that took their share of a complete pass (without a log, its batches go once
    /// every worker took them).
    taken: BTreeSet<usize>,
    /// Per worker's replacement: how many of its batches it sent again.
    replayed: HashMap<usize, usize>,
}

/// The state of the exchange between the workers sharing one job.
pub struct Relay {
    workers: usize,
    keep_log: bool,
    /// Where the batches every worker took go (none: they stay in memory).
    store: Option<Box<dyn LogStore>>,
    passes: BTreeMap<PassKey, PassBatches>,
    traffic: BTreeMap<PassKey, PassTraffic>,
    abandoned: Option<String>,
}

/// Passes in the order they run (a loss level's two passes after the win level before it, the
/// parts and the verification last).
type PassKey = (u16, u8);

fn key(pass: Pass) -> PassKey {
    match pass {
        Pass::Start => (0, 0),
        Pass::Win(n) => (n, 0),
        Pass::Mark(n) => (n, 1),
        Pass::Resolve(n) => (n, 2),
        Pass::Parts => (u16::MAX, 3),
        Pass::Verified => (u16::MAX, 4),
    }
}

impl Relay {
    /// The relay of a job shared by `workers` workers; with `keep_log`, it keeps every pass's
    /// batches, so that a failed worker can be replaced.
    pub fn new(workers: usize, keep_log: bool) -> Relay {
        Relay {
            workers,
            keep_log,
            store: None,
            passes: BTreeMap::new(),
            traffic: BTreeMap::new(),
            abandoned: None,
        }
    }

    /// The relay of [`Relay::new`] keeping its log, whose batches every worker took go to
    /// `store` instead of staying in memory.
    pub fn with_store(workers: usize, store: Box<dyn LogStore>) -> Relay {
        Relay {
            store: Some(store),
            ..Relay::new(workers, true)
        }
    }

    /// The bytes of `b`, from memory or the log store.
    fn bytes_of(store: Option<&dyn LogStore>, b: &Logged) -> Result<Arc<[u8]>, RelayError> {
        match (&b.bytes, store) {
            (Held::Memory(bytes), _) => Ok(Arc::clone(bytes)),
            (Held::Stored(at), Some(store)) => {
                store.get(*at).map_err(|e| RelayError::Log(e.to_string()))
            }
            (Held::Stored(_), None) => Err(RelayError::Log("no log store".into())),
        }
    }

    fn check(&self, worker: usize) -> Result<(), RelayError> {
        if let Some(why) = &self.abandoned {
            return Err(RelayError::Abandoned(why.clone()));
        }
        if worker >= self.workers {
            return Err(RelayError::NoSuchWorker {
                worker,
                workers: self.workers,
            });
        }
        Ok(())
    }

    /// Takes `batch`, which worker `batch.from` sent in `pass`. In a complete pass (a
    /// replacement catching up) it is checked against the batch the replaced worker sent in the
    /// same place instead.
    pub fn send(&mut self, pass: Pass, batch: RelayBatch) -> Result<(), RelayError> {
        self.check(batch.from)?;
        let p = self.passes.entry(key(pass)).or_default();
        if !p.complete {
            p.batches.push(Logged {
                from: batch.from,
                bytes: Held::Memory(batch.bytes),
                words: batch.words,
                resolved: batch.resolved,
            });
            return Ok(());
        }
        if !self.keep_log {
            return Err(RelayError::NotKept(pass));
        }
        let from = batch.from;
        let n = p.replayed.entry(from).or_default();
        let before = p.batches.iter().filter(|b| b.from == from).nth(*n);
        *n += 1;
        let same = match before {
            Some(b) => Self::bytes_of(self.store.as_deref(), b)? == batch.bytes,
            None => false,
        };
        match same {
            true => Ok(()),
            false => Err(RelayError::Replay {
                worker: from,
                pass,
                what: "sent other updates".into(),
            }),
        }
    }

    /// Ends `worker`'s `pass`: it has sent every batch of it. Returns whether the pass is
    /// complete (every worker ended it); a replacement ending a complete pass must have sent
    /// again every batch the worker it replaces sent in it.
    pub fn end(&mut self, worker: usize, pass: Pass) -> Result<bool, RelayError> {
        self.check(worker)?;
        let workers = self.workers;
        let p = self.passes.entry(key(pass)).or_default();
        if p.complete {
            if !self.keep_log {
                return Err(RelayError::NotKept(pass));
            }
            let before = p.batches.iter().filter(|b| b.from == worker).count();
            let again = p.replayed.get(&worker).copied().unwrap_or(0);
            if again != before {
                return Err(RelayError::Replay {
                    worker,
                    pass,
                    what: format!("sent {again} batches, not {before},"),
                });
            }
            return Ok(true);
        }
        p.ended.insert(worker);
        if p.ended.len() < workers {
            return Ok(false);
        }
        p.complete = true;
        let traffic = traffic_of(pass, &p.batches, workers);
        self.traffic.insert(key(pass), traffic);
        Ok(true)
    }

    /// Whether every worker ended `pass`.
    pub fn is_complete(&self, pass: Pass) -> bool {
        self.passes.get(&key(pass)).is_some_and(|p| p.complete)
    }

    /// The batches the other workers sent in complete pass `pass`, for `worker`, in the order
    /// they were sent. Without a log, a pass's batches go once every worker took them; with a
    /// log store, they go there then.
    pub fn take(&mut self, worker: usize, pass: Pass) -> Result<Vec<Arc<[u8]>>, RelayError> {
        self.check(worker)?;
        let k = key(pass);
        let Some(p) = self.passes.get_mut(&k).filter(|p| p.complete) else {
            return Err(RelayError::NotKept(pass));
        };
        let store = self.store.as_deref();
        let theirs = p
            .batches
            .iter()
            .filter(|b| b.from != worker)
            .map(|b| Self::bytes_of(store, b))
            .collect::<Result<_, _>>()?;
        p.taken.insert(worker);
        if p.taken.len() < self.workers {
            return Ok(theirs);
        }
        if !self.keep_log {
            self.passes.remove(&k);
        } else if let Some(store) = self.store.as_deref_mut() {
            let log_error = |e: io::Error| RelayError::Log(e.to_string());
            for b in &mut p.batches {
                if let Held::Memory(bytes) = &b.bytes {
                    b.bytes = Held::Stored(store.put(bytes).map_err(log_error)?);
                }
            }
            store
                .put_index(&encode_index(pass, &p.batches))
                .map_err(log_error)?;
        }
        Ok(theirs)
    }

    /// The relay of a job shared by `workers` workers as `store` kept it: the passes of its
    /// `indexes` ([`LogStore::put_index`], in the order they were put) complete and taken, and
    /// every worker to be replaced (what was in progress is gone), as after a coordinator's
    /// restart.
    pub fn resume(
        workers: usize,
        store: Box<dyn LogStore>,
        indexes: &[Vec<u8>],
    ) -> Result<Relay, RelayError> {
        let mut relay = Relay::with_store(workers, store);
        for index in indexes {
            let (pass, batches) = decode_index(index).map_err(RelayError::Log)?;
            if relay.passes.contains_key(&key(pass)) {
                return Err(RelayError::Log(format!("{pass:?} is indexed twice")));
            }
            if let Some(b) = batches.iter().find(|b| b.from >= workers) {
                return Err(RelayError::Log(format!(
                    "a batch of {pass:?} from worker {} of {workers}",
                    b.from
                )));
            }
            relay
                .traffic
                .insert(key(pass), traffic_of(pass, &batches, workers));
            let all: BTreeSet<usize> = (0..workers).collect();
            relay.passes.insert(
                key(pass),
                PassBatches {
                    batches,
                    ended: all.clone(),
                    complete: true,
                    taken: all,
                    replayed: HashMap::new(),
                },
            );
        }
        Ok(relay)
    }

    /// Forgets what failed worker `worker` sent in the pass in progress, and that it ended it:
    /// its replacement sends it again (and catches up on the complete passes first).
    pub fn forget(&mut self, worker: usize) {
        for p in self.passes.values_mut() {
            p.replayed.remove(&worker);
            if !p.complete {
                p.batches.retain(|b| b.from != worker);
                p.ended.remove(&worker);
            }
        }
    }

    /// Gives the job up (`why`): every call from now on fails, and waiting workers should stop.
    pub fn abandon(&mut self, why: &str) {
        self.abandoned.get_or_insert_with(|| why.to_string());
    }

    /// Why the job was given up, if it was.
    pub fn abandoned(&self) -> Option<&str> {
        self.abandoned.as_deref()
    }

    /// What each complete pass carried, in the order the passes ran.
    pub fn traffic(&self) -> Vec<PassTraffic> {
        self.traffic.values().copied().collect()
    }

    /// The last pass every worker ended, if any.
    pub fn last_complete(&self) -> Option<Pass> {
        self.traffic.values().next_back().map(|t| t.pass)
    }

    /// Bytes of batches held in memory (the pass in progress, and the log but what went to
    /// the log store).
    pub fn held_bytes(&self) -> u64 {
        let batches = self.passes.values().flat_map(|p| &p.batches);
        let in_memory = batches.filter(|b| matches!(b.bytes, Held::Memory(_)));
        in_memory.map(|b| b.bytes.len()).sum()
    }

    /// Bytes of batches in the log store.
    pub fn stored_bytes(&self) -> u64 {
        let batches = self.passes.values().flat_map(|p| &p.batches);
        let stored = batches.filter(|b| matches!(b.bytes, Held::Stored(_)));
        stored.map(|b| b.bytes.len()).sum()
    }
}

/// What complete pass `pass` carried between `workers` workers.
fn traffic_of(pass: Pass, batches: &[Logged], workers: usize) -> PassTraffic {
    let mut t = PassTraffic {
        pass,
        ..PassTraffic::default()
    };
    for b in batches {
        let recipients = match pass {
            // A loss level's first pass sends each word to the one owner of its entries.
            Pass::Mark(_) => u64::from(b.words > 0),
            _ => workers as u64 - 1,
        };
        t.words += b.words;
        t.bytes += b.bytes.len() * recipients;
        t.resolved += b.resolved;
    }
    t
}

/// Bytes of one batch in a pass's index: its sender (4), where it is kept (8 + 8), its words
/// (8) and the entries its sender resolved (8).
const INDEXED_BATCH_BYTES: usize = 36;

/// The index of a stored pass: its tag ([`Pass::tag`]: 1 + 2 bytes), the number of its
/// batches (4), then each batch; little-endian.
fn encode_index(pass: Pass, batches: &[Logged]) -> Vec<u8> {
    let (kind, level) = pass.tag();
    let mut out = Vec::with_capacity(7 + batches.len() * INDEXED_BATCH_BYTES);
    out.push(kind);
    out.extend_from_slice(&level.to_le_bytes());
    out.extend_from_slice(&(batches.len() as u32).to_le_bytes());
    for b in batches {
        let Held::Stored(at) = b.bytes else {
            unreachable!("a pass is indexed once its batches are stored")
        };
        out.extend_from_slice(&(b.from as u32).to_le_bytes());
        for n in [at.offset, at.len, b.words, b.resolved] {
            out.extend_from_slice(&n.to_le_bytes());
        }
    }
    out
}

/// The pass and batches of an index [`encode_index`] wrote.
fn decode_index(bytes: &[u8]) -> Result<(Pass, Vec<Logged>), String> {
    let bad = || format!("an index of {} bytes is not one a relay wrote", bytes.len());
    let (&kind, rest) = bytes.split_first().ok_or_else(bad)?;
    let level = u16::from_le_bytes(rest.get(..2).ok_or_else(bad)?.try_into().unwrap());
    let pass = Pass::from_tag(kind, level).ok_or_else(bad)?;
    let n = u32::from_le_bytes(rest.get(2..6).ok_or_else(bad)?.try_into().unwrap()) as usize;
    let rest = &rest[6..];
    if rest.len() != n * INDEXED_BATCH_BYTES {
        return Err(bad());
    }
    let batches = rest
        .chunks_exact(INDEXED_BATCH_BYTES)
        .map(|b| {
            let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap());
            Logged {
                from: u32::from_le_bytes(b[..4].try_into().unwrap()) as usize,
                bytes: Held::Stored(LogRef {
                    offset: u64_at(4),
                    len: u64_at(12),
                }),
                words: u64_at(20),
                resolved: u64_at(28),
            }
        })
        .collect();
    Ok((pass, batches))
}

#[cfg(test)]
mod tests {
    use super::{LogRef, LogStore, Relay, RelayBatch, RelayError};
    use crate::level_share::Pass;
    use std::sync::Arc;

    /// What [`Bytes`] kept: its batches' bytes and its indexes.
    type Kept = (Vec<u8>, Vec<Vec<u8>>);

    /// A log store in memory, for the tests, shared with the test.
    #[derive(Clone, Default)]
    struct Bytes(Arc<std::sync::Mutex<Kept>>);

    impl LogStore for Bytes {
        fn put(&mut self, bytes: &[u8]) -> std::io::Result<LogRef> {
            let mut log = self.0.lock().unwrap();
            let offset = log.0.len() as u64;
            log.0.extend_from_slice(bytes);
            Ok(LogRef {
                offset,
                len: bytes.len() as u64,
            })
        }
        fn get(&self, at: LogRef) -> std::io::Result<Arc<[u8]>> {
            Ok(self.0.lock().unwrap().0[at.offset as usize..(at.offset + at.len) as usize].into())
        }
        fn put_index(&mut self, index: &[u8]) -> std::io::Result<()> {
            self.0.lock().unwrap().1.push(index.to_vec());
            Ok(())
        }
    }

    /// A relay resumed from its store's indexes holds the passes every worker took, complete:
    /// replacements of every worker catch up on them (checked against them) and go on; a pass
    /// not yet taken by all is not there, and is solved again.
    #[test]
    fn a_relay_resumes_from_its_stored_passes() {
        let store = Bytes::default();
        let mut r = Relay::with_store(2, Box::new(store.clone()));
        r.send(Pass::Start, batch(0, b"s0")).unwrap();
        r.send(Pass::Start, batch(1, b"s11")).unwrap();
        r.end(0, Pass::Start).unwrap();
        r.end(1, Pass::Start).unwrap();
        r.take(0, Pass::Start).unwrap();
        r.take(1, Pass::Start).unwrap();
        r.send(Pass::Win(1), batch(1, b"w1")).unwrap();
        r.end(0, Pass::Win(1)).unwrap();
        r.end(1, Pass::Win(1)).unwrap();
        r.take(0, Pass::Win(1)).unwrap();
        let traffic = r.traffic()[0];
        drop(r);
        let indexes = store.0.lock().unwrap().1.clone();
        assert_eq!(indexes.len(), 1, "only the start was taken by every worker");
        let mut r = Relay::resume(2, Box::new(store.clone()), &indexes).unwrap();
        assert_eq!(r.traffic(), [traffic]);
        assert_eq!(r.last_complete(), Some(Pass::Start));
        assert_eq!((r.held_bytes(), r.stored_bytes()), (0, 5));
        // Both workers are replaced: each replays the start and takes the other's batch.
        let e = r.send(Pass::Start, batch(0, b"s9")).unwrap_err();
        assert!(e.to_string().contains("sent other updates"), "{e}");
        r.forget(0);
        for (w, sent, theirs) in [(0, &b"s0"[..], &b"s11"[..]), (1, b"s11", b"s0")] {
            r.send(Pass::Start, batch(w, sent)).unwrap();
            assert!(r.end(w, Pass::Start).unwrap());
            assert_eq!(&*r.take(w, Pass::Start).unwrap()[0], theirs);
        }
        assert!(
            !r.end(0, Pass::Win(1)).unwrap(),
            "the level is solved again"
        );
        // An index that is not one is refused.
        let mut bad = indexes.clone();
        bad[0].pop();
        assert!(matches!(
            Relay::resume(2, Box::new(store.clone()), &bad),
            Err(RelayError::Log(_))
        ));
        assert!(
            Relay::resume(1, Box::new(store), &indexes).is_err(),
            "worker 1 of 1"
        );
    }

    /// With a log store, a pass every worker took leaves memory for the store; a replacement
    /// is checked against, and catches up from, the stored batches.
    #[test]
    fn the_batches_every_worker_took_go_to_the_log_store() {
        let mut r = Relay::with_store(2, Box::new(Bytes::default()));
        r.send(Pass::Start, batch(0, b"s0")).unwrap();
        r.send(Pass::Start, batch(1, b"s11")).unwrap();
        r.end(0, Pass::Start).unwrap();
        assert!(r.end(1, Pass::Start).unwrap());
        assert_eq!(&*r.take(0, Pass::Start).unwrap()[0], b"s11");
        assert_eq!(
            (r.held_bytes(), r.stored_bytes()),
            (5, 0),
            "worker 1 has not taken it"
        );
        assert_eq!(&*r.take(1, Pass::Start).unwrap()[0], b"s0");
        assert_eq!((r.held_bytes(), r.stored_bytes()), (0, 5));
        r.send(Pass::Win(1), batch(0, b"w0")).unwrap();
        assert_eq!(r.held_bytes(), 2, "the pass in progress stays in memory");
        r.forget(1);
        let e = r.send(Pass::Start, batch(1, b"s12")).unwrap_err();
        assert!(e.to_string().contains("sent other updates"), "{e}");
        r.forget(1);
        r.send(Pass::Start, batch(1, b"s11")).unwrap();
        assert!(r.end(1, Pass::Start).unwrap());
        assert_eq!(&*r.take(1, Pass::Start).unwrap()[0], b"s0");
        assert_eq!(r.traffic()[0].bytes, 5);
    }

    fn batch(from: usize, bytes: &[u8]) -> RelayBatch {
        RelayBatch {
            from,
            bytes: bytes.into(),
            words: 1,
            resolved: 10,
        }
    }

    /// A pass is complete once every worker ended it; each worker takes the others' batches;
    /// the traffic counts every batch once per recipient.
    #[test]
    fn a_pass_completes_when_every_worker_ended_it() {
        let mut r = Relay::new(3, false);
        r.send(Pass::Win(1), batch(0, b"a")).unwrap();
        r.send(Pass::Win(1), batch(2, b"cc")).unwrap();
        assert!(!r.end(0, Pass::Win(1)).unwrap());
        assert!(!r.end(1, Pass::Win(1)).unwrap());
        assert!(!r.is_complete(Pass::Win(1)));
        assert!(r.end(2, Pass::Win(1)).unwrap());
        assert_eq!(r.take(1, Pass::Win(1)).unwrap().len(), 2);
        assert_eq!(&*r.take(0, Pass::Win(1)).unwrap()[0], b"cc");
        let t = r.traffic();
        assert_eq!((t[0].words, t[0].bytes, t[0].resolved), (2, 6, 20));
        // Without a log the batches go once all took them.
        r.take(2, Pass::Win(1)).unwrap();
        assert_eq!(r.held_bytes(), 0);
        assert_eq!(
            r.take(2, Pass::Win(1)),
            Err(RelayError::NotKept(Pass::Win(1)))
        );
        assert_eq!(r.last_complete(), Some(Pass::Win(1)));
    }

    /// A forgotten worker's batches of the pass in progress are dropped; its replacement sends
    /// the complete passes again (checked byte for byte and batch for batch) and takes the
    /// others' batches from the log.
    #[test]
    fn a_replacement_replays_the_log_and_is_checked() {
        let mut r = Relay::new(2, true);
        r.send(Pass::Start, batch(1, b"s1")).unwrap();
        r.send(Pass::Start, batch(0, b"s0")).unwrap();
        r.end(0, Pass::Start).unwrap();
        assert!(r.end(1, Pass::Start).unwrap());
        r.send(Pass::Win(1), batch(1, b"w1")).unwrap();
        r.end(1, Pass::Win(1)).unwrap();
        r.forget(1);
        // Worker 0 still waits: worker 1's end of the pass in progress was forgotten.
        assert!(!r.end(0, Pass::Win(1)).unwrap());
        assert!(r.take(0, Pass::Win(1)).is_err());
        // The replacement catches up on the start, then joins.
        r.send(Pass::Start, batch(1, b"s1")).unwrap();
        assert!(r.end(1, Pass::Start).unwrap());
        assert_eq!(&*r.take(1, Pass::Start).unwrap()[0], b"s0");
        r.send(Pass::Win(1), batch(1, b"w1")).unwrap();
        assert!(r.end(1, Pass::Win(1)).unwrap());
        assert_eq!(&*r.take(0, Pass::Win(1)).unwrap()[0], b"w1");
        // A second replacement that sends something else, or less, is refused.
        r.forget(1);
        let e = r.send(Pass::Start, batch(1, b"xx")).unwrap_err();
        assert!(e.to_string().contains("sent other updates"), "{e}");
        r.forget(1);
        let e = r.end(1, Pass::Start).unwrap_err();
        assert!(e.to_string().contains("sent 0 batches, not 1"), "{e}");
        r.abandon("worker 1 failed 5 times");
        assert!(matches!(
            r.end(0, Pass::Win(2)),
            Err(RelayError::Abandoned(_))
        ));
        assert!(matches!(
            r.send(Pass::Win(1), batch(3, b"")),
            Err(RelayError::Abandoned(_))
        ));
    }
}
