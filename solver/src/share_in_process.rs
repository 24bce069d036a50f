//! Several workers sharing one job within one process, each on a thread of its own with its own
//! scratch, exchanging their updates as encoded bytes through memory: the exchange the tests
//! and the benchmarks of shared jobs use, with what it carried counted per pass. Across
//! machines the shells carry the same bytes ([`crate::Exchange`]).

use crate::block_reader::Legal;
use crate::error::SolveError;
use crate::level_groups::{Scratch, StateStore};
use crate::level_share::{Exchange, Pass, Share, Updates};
use std::collections::BTreeMap;
use std::io;
use std::sync::{Condvar, Mutex};
use xiangqi::Color;
use xqtb_core::{Probe, SlotRange, Table, TableId};

/// What the workers sent in one pass.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PassTraffic {
    /// The pass.
    pub pass: Pass,
    /// Words of kinds sent (each counted once, whatever the number of recipients).
    pub words: u64,
    /// Encoded bytes as they travel: a batch of a loss level's first pass goes to the owners
    /// of its entries (one recipient per word), any other to every other worker.
    pub bytes: u64,
    /// Entries resolved in the pass by all the workers.
    pub resolved: u64,
}

/// An [`Exchange`] between workers on threads of one process.
pub struct InProcessExchange {
    workers: usize,
    /// Batches sent and not yet taken by everyone: sender, pass, bytes.
    sent: Mutex<Vec<(usize, Pass, Vec<u8>)>>,
    barrier: Barrier,
    traffic: Mutex<BTreeMap<PassKey, PassTraffic>>,
}

/// Passes in the order they run (a loss level's two passes after the win level before it).
type PassKey = (u16, u8);

fn key(pass: Pass) -> PassKey {
    match pass {
        Pass::Start => (0, 0),
        Pass::Win(n) => (n, 0),
        Pass::Mark(n) => (n, 1),
        Pass::Resolve(n) => (n, 2),
    }
}

impl InProcessExchange {
    /// An exchange between `workers` workers.
    pub fn new(workers: usize) -> InProcessExchange {
        InProcessExchange {
            workers,
            sent: Mutex::new(Vec::new()),
            barrier: Barrier::new(workers),
            traffic: Mutex::new(BTreeMap::new()),
        }
    }

    /// What each pass carried, in the order the passes ran.
    pub fn traffic(&self) -> Vec<PassTraffic> {
        self.traffic
            .lock()
            .expect("traffic")
            .values()
            .copied()
            .collect()
    }

    /// Lets every worker waiting for the others go with an error: one of them failed.
    fn abandon(&self) {
        self.barrier.abandon();
    }
}

impl Exchange for InProcessExchange {
    fn send(&self, worker: usize, batch: Updates) -> io::Result<()> {
        let bytes = batch.encode();
        let words = (batch.words[0].len() + batch.words[1].len()) as u64;
        let recipients = match batch.pass {
            Pass::Mark(_) => u64::from(words > 0),
            _ => self.workers as u64 - 1,
        };
        {
            let mut traffic = self.traffic.lock().expect("traffic");
            let t = traffic.entry(key(batch.pass)).or_insert(PassTraffic {
                pass: batch.pass,
                ..PassTraffic::default()
            });
            t.words += words;
            t.bytes += bytes.len() as u64 * recipients;
            t.resolved += batch.resolved;
        }
        self.sent
            .lock()
            .expect("sent")
            .push((worker, batch.pass, bytes));
        Ok(())
    }

    fn receive(
        &self,
        worker: usize,
        pass: Pass,
        take: &mut dyn FnMut(Updates) -> io::Result<()>,
    ) -> io::Result<()> {
        // Everyone has sent this pass's batches.
        self.barrier.wait()?;
        let theirs: Vec<Vec<u8>> = self
            .sent
            .lock()
            .expect("sent")
            .iter()
            .filter(|(from, p, _)| *from != worker && *p == pass)
            .map(|(_, _, bytes)| bytes.clone())
            .collect();
        let taken = theirs
            .iter()
            .try_for_each(|bytes| take(Updates::decode(bytes)?));
        // Everyone has read them: the last one out drops them (the next pass's batches are
        // told apart by their pass).
        let last = self.barrier.wait()?;
        if last {
            self.sent
                .lock()
                .expect("sent")
                .retain(|(_, p, _)| *p != pass);
        }
        taken
    }
}

/// Why a worker stopped waiting for the others.
const ABANDONED: &str = "another worker sharing the job failed";

/// A barrier that a failing worker can abandon, so that the others return an error instead of
/// waiting for ever.
struct Barrier {
    parties: usize,
    state: Mutex<(usize, u64, bool)>,
    turn: Condvar,
}

impl Barrier {
    fn new(parties: usize) -> Barrier {
        Barrier {
            parties,
            state: Mutex::new((0, 0, false)),
            turn: Condvar::new(),
        }
    }

    /// Waits for every party; `true` for the last one to arrive.
    fn wait(&self) -> io::Result<bool> {
        let abandoned = || io::Error::other(ABANDONED);
        let mut s = self.state.lock().expect("barrier");
        if s.2 {
            return Err(abandoned());
        }
        s.0 += 1;
        if s.0 == self.parties {
            s.0 = 0;
            s.1 += 1;
            self.turn.notify_all();
            return Ok(true);
        }
        let generation = s.1;
        while s.1 == generation && !s.2 {
            s = self.turn.wait(s).expect("barrier");
        }
        if s.1 == generation {
            return Err(abandoned());
        }
        Ok(false)
    }

    fn abandon(&self) {
        self.state.lock().expect("barrier").2 = true;
        self.turn.notify_all();
    }
}

/// Solves the slots `slots` of table `id` under cycles-are-draws with `scratches.len()` workers
/// sharing the job in this process, each with a pool of `threads` threads of its own (0: as
/// many as the machine has cores) and groups of about `group_slots` slots in its own scratch,
/// exchanging their updates through an [`InProcessExchange`]. Each worker hands `on_part` its
/// parts of the table (a part per group, in slot order) with its number, as soon as each is
/// final. Returns which entries of the job are legal, for verifying the table a block at a time
/// ([`crate::verify_blocks`]), and what each pass of the exchange carried.
pub fn solve_shared_in_process(
    id: TableId,
    slots: SlotRange,
    group_slots: u64,
    threads: usize,
    scratches: &[&dyn Scratch],
    deps: &dyn Probe,
    on_part: &(dyn Fn(usize, Table) + Sync),
) -> Result<(Legal, Vec<PassTraffic>), SolveError> {
    let workers = scratches.len();
    let exchange = &InProcessExchange::new(workers);
    let legal = &Mutex::new(Legal::none(slots));
    let solve = |worker: usize, scratch: &dyn Scratch| -> Result<(), SolveError> {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .map_err(|e| SolveError::Share(id.signature, e.to_string()))?;
        let store = StateStore::Groups {
            group_slots,
            scratch,
            share: Some(Share {
                worker,
                workers,
                exchange,
            }),
        };
        let mut take = |part: Table| {
            let codes = Color::ALL.map(|side| part.codes(side));
            legal.lock().expect("legal").add_part(part.slots(), codes);
            on_part(worker, part)
        };
        pool.install(|| crate::solve_range_in_parts(id, slots, store, deps, &|_| {}, &mut take))?;
        Ok(())
    };
    let results: Vec<Result<(), SolveError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = scratches
            .iter()
            .enumerate()
            .map(|(worker, &scratch)| {
                let solve = &solve;
                scope.spawn(move || {
                    let solved = solve(worker, scratch);
                    if solved.is_err() {
                        exchange.abandon();
                    }
                    solved
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a worker's thread"))
            .collect()
    });
    // One worker's failure is the cause; the others failed waiting for it.
    if let Some(cause) = results.iter().find_map(|r| match r {
        Err(e) if !e.to_string().contains(ABANDONED) => Some(e.clone()),
        _ => None,
    }) {
        return Err(cause);
    }
    results.into_iter().collect::<Result<Vec<()>, _>>()?;
    let legal = std::mem::replace(&mut *legal.lock().expect("legal"), Legal::none(slots));
    Ok((legal, exchange.traffic()))
}

#[cfg(test)]
mod tests {
    use super::solve_shared_in_process;
    use crate::level_groups::{MemoryScratch, Scratch};
    use crate::level_share::Pass;
    use crate::{CHUNK_SLOTS, SolveError};
    use std::sync::atomic::Ordering::Relaxed;
    use xiangqi::Color;
    use xqtb_core::{RuleSet, Signature, SlotRange, TableId};

    /// A job shared by two or three workers gives the table one worker gives with the job
    /// whole in memory, bit for bit: KRvKN (mates of 25 plies, captures into two tables) and
    /// KNPvK (a pawn table, whole under cycles-are-draws), with groups of one and of five
    /// chunks, and a window of 3 levels that slides every few levels. Every part comes from
    /// its owner, the parts cover the job, and the exchange carried the start's and the
    /// levels' updates.
    #[test]
    fn shared_jobs_give_the_tables_memory_gives() {
        for sig in ["KRvKN", "KNPvK"] {
            let sig: Signature = sig.parse().unwrap();
            let rules = RuleSet::CyclesAreDraws;
            let tables = crate::solve_closure_in_memory(&[sig], rules, |_, _| {}).unwrap();
            let id = TableId::new(rules, sig);
            let whole = tables.get(&id).unwrap().clone();
            let slots = SlotRange::whole(&sig);
            for (workers, group_slots, window) in [(2, CHUNK_SLOTS, 82), (3, 5 * CHUNK_SLOTS, 3)] {
                crate::retrograde::WINDOW.store(window, Relaxed);
                let scratches: Vec<MemoryScratch> =
                    (0..workers).map(|_| MemoryScratch::default()).collect();
                let refs: Vec<&dyn Scratch> = scratches.iter().map(|s| s as _).collect();
                let parts = std::sync::Mutex::new(vec![Vec::new(); workers]);
                let on_part = |w: usize, p| parts.lock().unwrap()[w].push(p);
                let solved =
                    solve_shared_in_process(id, slots, group_slots, 1, &refs, &tables, &on_part)
                        .unwrap();
                crate::retrograde::WINDOW.store(crate::level_state::MAX_WINDOW, Relaxed);
                let parts = parts.into_inner().unwrap();
                for (w, parts) in parts.iter().enumerate() {
                    assert!(!parts.is_empty(), "{sig}: worker {w} solved no part");
                    assert!(
                        parts.is_sorted_by_key(|p| p.slots().start),
                        "{sig}: slot order"
                    );
                }
                let mut parts: Vec<_> = parts.into_iter().flatten().collect();
                parts.sort_by_key(|p| p.slots().start);
                let mut next = 0;
                for part in &parts {
                    let r = part.slots();
                    assert_eq!(r.start, next, "{sig}: the parts follow each other");
                    next = r.end;
                    for side in Color::ALL {
                        let at = r.start as usize..r.end as usize;
                        assert!(
                            part.codes(side).to_vec() == whole.codes(side).slice(at).to_vec(),
                            "{sig}: {workers} workers, part {r} differs"
                        );
                    }
                }
                assert_eq!(next, slots.end, "{sig}: the parts cover the job");
                let traffic = solved.1;
                let start = traffic.iter().find(|t| t.pass == Pass::Start).unwrap();
                assert!(start.words > 0 && start.bytes > 0, "{sig}: {start:?}");
                assert!(
                    traffic
                        .iter()
                        .any(|t| matches!(t.pass, Pass::Win(_)) && t.words > 0),
                    "{sig}: no win level sent updates"
                );
            }
        }
    }

    /// Scratch that cannot be written.
    struct Broken;

    impl Scratch for Broken {
        fn write_at(&self, _: usize, _: Color, _: u64, _: &[u8]) -> std::io::Result<()> {
            Err(std::io::Error::other("the disk is full"))
        }

        fn read_at(&self, _: usize, _: Color, _: u64, _: &mut [u8]) -> std::io::Result<()> {
            Err(std::io::Error::other("nothing was written"))
        }
    }

    /// A worker that fails stops the others instead of leaving them waiting, and the error
    /// named is its own; more workers than groups is refused up front.
    #[test]
    fn a_failing_worker_stops_the_others_and_too_many_workers_are_refused() {
        let sig: Signature = "KRvKN".parse().unwrap();
        let rules = RuleSet::CyclesAreDraws;
        let tables = crate::solve_closure_in_memory(&[sig], rules, |_, _| {}).unwrap();
        let id = TableId::new(rules, sig);
        let slots = SlotRange::whole(&sig);
        let good = MemoryScratch::default();
        let refs: Vec<&dyn Scratch> = vec![&good, &Broken];
        let err = solve_shared_in_process(id, slots, CHUNK_SLOTS, 1, &refs, &tables, &|_, _| {})
            .unwrap_err();
        assert!(
            matches!(&err, SolveError::Scratch(_, why) if why.contains("the disk is full")),
            "{err}"
        );
        let scratches: Vec<MemoryScratch> = (0..3).map(|_| MemoryScratch::default()).collect();
        let refs: Vec<&dyn Scratch> = scratches.iter().map(|s| s as _).collect();
        // KRvKN's 328,500 slots make two groups of 262,144.
        let err =
            solve_shared_in_process(id, slots, 1 << 18, 1, &refs, &tables, &|_, _| {}).unwrap_err();
        assert!(
            matches!(&err, SolveError::Share(_, why) if why.contains("2 groups")),
            "{err}"
        );
    }
}
