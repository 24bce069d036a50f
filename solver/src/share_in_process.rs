//! Several workers sharing one job within one process, each on a thread of its own with its own
//! scratch, exchanging their updates as encoded bytes through memory: the exchange the tests
//! and the benchmarks of shared jobs use, with what it carried counted per pass. Across
//! machines the shells carry the same bytes ([`crate::Exchange`]).
//!
//! A worker that fails can be **replaced**: the exchange keeps every pass's updates once all
//! workers have taken them (its log), and a replacement with a fresh scratch solves the failed
//! worker's groups from the start, taking the others' updates of the passes already done from
//! the log without waiting, until it reaches the pass the others wait in. Since a pass is a
//! function of what came before it, the replacement sends the same updates the failed worker
//! sent (the exchange checks that it does, byte for byte), and the table is the same.

use crate::block_reader::Legal;
use crate::error::SolveError;
use crate::level_groups::{Scratch, StateStore};
use crate::level_share::{Exchange, Pass, Sends, Share, Updates};
use crate::share_relay::{PassTraffic, Relay, RelayBatch, RelayError};
use std::collections::BTreeSet;
use std::io;
use std::sync::{Condvar, Mutex};
use xiangqi::Color;
use xqtb_core::{Probe, SlotRange, Table, TableId};

/// An [`Exchange`] between workers on threads of one process: a [`Relay`] behind a lock, and a
/// condition variable to wait on for a pass to be complete.
struct InProcessExchange {
    relay: Mutex<Relay>,
    turn: Condvar,
}

/// Why a worker stopped waiting for the others.
const ABANDONED: &str = "another worker sharing the job failed";

fn relay_error(e: RelayError) -> io::Error {
    io::Error::other(e.to_string())
}

impl InProcessExchange {
    /// An exchange between `workers` workers; with `log`, it keeps every pass's updates, so
    /// that a failed worker can be replaced.
    fn new(workers: usize, log: bool) -> InProcessExchange {
        InProcessExchange {
            relay: Mutex::new(Relay::new(workers, log)),
            turn: Condvar::new(),
        }
    }

    fn relay(&self) -> std::sync::MutexGuard<'_, Relay> {
        self.relay.lock().expect("exchange")
    }

    /// What each pass carried, in the order the passes ran.
    fn traffic(&self) -> Vec<PassTraffic> {
        self.relay().traffic()
    }

    /// Lets every worker waiting for the others go with an error: one of them failed for good.
    fn abandon(&self) {
        self.relay().abandon(ABANDONED);
        self.turn.notify_all();
    }

    /// Drops what failed worker `worker` sent in the pass in progress: its replacement sends it
    /// again.
    fn forget(&self, worker: usize) {
        self.relay().forget(worker);
    }
}

impl Exchange for InProcessExchange {
    fn send(&self, worker: usize, batch: Updates) -> io::Result<()> {
        let batch_of = RelayBatch {
            from: worker,
            bytes: batch.encode().into(),
            words: batch.word_count(),
            resolved: batch.resolved,
        };
        self.relay().send(batch.pass, batch_of).map_err(relay_error)
    }

    fn receive(
        &self,
        worker: usize,
        pass: Pass,
        take: &mut dyn FnMut(Updates) -> io::Result<()>,
    ) -> io::Result<()> {
        let mut relay = self.relay();
        if relay.end(worker, pass).map_err(relay_error)? {
            self.turn.notify_all();
        }
        while !relay.is_complete(pass) {
            if relay.abandoned().is_some() {
                return Err(io::Error::other(ABANDONED));
            }
            relay = self.turn.wait(relay).expect("exchange");
        }
        let batches = relay.take(worker, pass).map_err(relay_error)?;
        drop(relay);
        batches
            .iter()
            .try_for_each(|bytes| take(Updates::decode(bytes)?))
    }
}

/// How workers share a job in one process ([`solve_shared_in_process`]).
#[derive(Clone, Copy, Debug)]
pub struct SharedRun {
    /// About how many slots each group holds ([`StateStore::Groups`]).
    pub group_slots: u64,
    /// Each worker's threads (0: as many as the machine has cores).
    pub threads: usize,
    /// How many times a failed worker is replaced before the job fails.
    pub replacements: usize,
    /// What each worker sends the others of a pass.
    pub sends: Sends,
}

/// Solves the slots `slots` of table `id` under cycles-are-draws with `workers` workers sharing
/// the job in this process, as `run` says, exchanging their updates through memory.
/// `scratch_for(worker, attempt)` gives each worker its scratch (a fresh
/// one for each replacement). Each worker hands `on_part` its parts of the table (a part per
/// group, in slot order) with its number, as soon as each is final; a replacement does not hand
/// again those handed before. Returns which entries of the job are legal, for verifying the
/// table a block at a time ([`crate::verify_blocks`]), and what each pass of the exchange
/// carried.
pub fn solve_shared_in_process(
    id: TableId,
    slots: SlotRange,
    workers: usize,
    run: SharedRun,
    scratch_for: &(dyn Fn(usize, usize) -> io::Result<Box<dyn Scratch>> + Sync),
    deps: &dyn Probe,
    on_part: &(dyn Fn(usize, Table) + Sync),
) -> Result<(Legal, Vec<PassTraffic>), SolveError> {
    let exchange = &InProcessExchange::new(workers, run.replacements > 0);
    let legal = &Mutex::new(Legal::none(slots));
    let handed = &Mutex::new(BTreeSet::new());
    let solve = |worker: usize, scratch: &dyn Scratch| -> Result<(), SolveError> {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(run.threads)
            .build()
            .map_err(|e| SolveError::Share(id.signature, e.to_string()))?;
        let store = StateStore::Groups {
            group_slots: run.group_slots,
            scratch,
            share: Some(Share {
                worker,
                workers,
                exchange,
                sends: run.sends,
            }),
        };
        let mut take = |part: Table| {
            if handed.lock().expect("handed").insert(part.slots().start) {
                let codes = Color::ALL.map(|side| part.codes(side));
                legal.lock().expect("legal").add_part(part.slots(), codes);
                on_part(worker, part)
            }
        };
        pool.install(|| crate::solve_range_in_parts(id, slots, store, deps, &|_| {}, &mut take))?;
        Ok(())
    };
    let scratch_error = |e: io::Error| SolveError::Scratch(id.signature, e.to_string());
    let results: Vec<Result<(), SolveError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|worker| {
                let solve = &solve;
                scope.spawn(move || {
                    let mut attempt = 0;
                    loop {
                        let solved = scratch_for(worker, attempt)
                            .map_err(scratch_error)
                            .and_then(|scratch| solve(worker, &*scratch));
                        match solved {
                            Err(e) if attempt < run.replacements && !is_abandoned(&e) => {
                                tracing::warn!(table = %id, worker, attempt, error = %e, "a worker sharing the table failed: replaced");
                                exchange.forget(worker);
                                attempt += 1;
                            }
                            Err(e) => {
                                exchange.abandon();
                                return Err(e);
                            }
                            Ok(()) => return Ok(()),
                        }
                    }
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
        Err(e) if !is_abandoned(e) => Some(e.clone()),
        _ => None,
    }) {
        return Err(cause);
    }
    results.into_iter().collect::<Result<Vec<()>, _>>()?;
    let legal = std::mem::replace(&mut *legal.lock().expect("legal"), Legal::none(slots));
    Ok((legal, exchange.traffic()))
}

/// Whether `e` only says that another worker failed.
fn is_abandoned(e: &SolveError) -> bool {
    e.to_string().contains(ABANDONED)
}

#[cfg(test)]
mod tests {
    use super::{Sends, SharedRun, solve_shared_in_process};
    use crate::level_groups::{MemoryScratch, Scratch};
    use crate::level_share::Pass;
    use crate::{CHUNK_SLOTS, SolveError};
    use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
    use xiangqi::Color;
    use xqtb_core::{MemoryTables, RuleSet, Signature, SlotRange, Table, TableId};

    /// `sig` solved whole in memory under cycles-are-draws, with the tables it depends on.
    fn solved(sig: &str) -> (TableId, MemoryTables, Table) {
        let sig: Signature = sig.parse().unwrap();
        let rules = RuleSet::CyclesAreDraws;
        let tables = crate::solve_closure_in_memory(&[sig], rules, |_, _| {}).unwrap();
        let id = TableId::new(rules, sig);
        let whole = Table::clone(tables.get(&id).unwrap());
        (id, tables, whole)
    }

    /// Solves the slots `slots` of table `id` (all of them, or a pawn slice's: `tables` holds
    /// the table whole, where its advances lead) with `workers` workers sharing the job as
    /// `run` says, each worker's scratch from `scratch_for`; checks that every worker handed
    /// parts, in slot order, and that they are `whole`'s, bit for bit, and cover the job.
    /// Returns the traffic.
    fn shared_equals_memory(
        id: TableId,
        slots: SlotRange,
        tables: &MemoryTables,
        whole: &Table,
        workers: usize,
        run: SharedRun,
        scratch_for: &(dyn Fn(usize, usize) -> std::io::Result<Box<dyn Scratch>> + Sync),
    ) -> Vec<crate::PassTraffic> {
        let sig = id.signature;
        let parts = std::sync::Mutex::new(vec![Vec::new(); workers]);
        let on_part = |w: usize, p| parts.lock().unwrap()[w].push(p);
        let (_, traffic) =
            solve_shared_in_process(id, slots, workers, run, scratch_for, tables, &on_part)
                .unwrap();
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
        let mut next = slots.start;
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
        traffic
    }

    /// Every slot of table `id`.
    fn all(id: TableId) -> SlotRange {
        SlotRange::whole(&id.signature)
    }

    fn memory_scratch(_: usize, _: usize) -> std::io::Result<Box<dyn Scratch>> {
        Ok(Box::new(MemoryScratch::default()))
    }

    /// A job shared by two or three workers gives the table one worker gives with the job
    /// whole in memory, bit for bit: KRvKN (mates of 25 plies, captures into two tables) and
    /// KNPvK (a pawn table, whole under cycles-are-draws), with groups of one and of five
    /// chunks, and a window of 3 levels that slides every few levels, the workers sending the
    /// entries they wrote or whole words. The exchange carried the start's and the levels'
    /// updates.
    #[test]
    fn shared_jobs_give_the_tables_memory_gives() {
        for sig in ["KRvKN", "KNPvK"] {
            let (id, tables, whole) = solved(sig);
            for (workers, group_slots, window, sends) in [
                (2, CHUNK_SLOTS, 82, Sends::WrittenEntries),
                (3, 5 * CHUNK_SLOTS, 3, Sends::WrittenWords),
            ] {
                crate::retrograde::WINDOW.store(window, Relaxed);
                let run = SharedRun {
                    group_slots,
                    threads: 1,
                    replacements: 0,
                    sends,
                };
                let traffic = shared_equals_memory(
                    id,
                    all(id),
                    &tables,
                    &whole,
                    workers,
                    run,
                    &memory_scratch,
                );
                crate::retrograde::WINDOW.store(crate::level_state::MAX_WINDOW, Relaxed);
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

    /// A pawn slice shared by two workers gives the slice the whole table has, bit for bit:
    /// the slices of KRPvKA with the most slots with and without pawn advances into other
    /// slices (read from the table solved before, as a cluster's slice job reads them), the
    /// workers sending the entries they wrote and whole words.
    #[test]
    fn a_shared_pawn_slice_gives_the_values_memory_gives() {
        let (id, tables, whole) = solved("KRPvKA");
        let index = xqtb_core::TableIndex::new(id.signature);
        let slices = index.slices();
        let widest = |advancing: bool| {
            slices
                .iter()
                .filter(|s| s.advances_into.is_empty() != advancing)
                .max_by_key(|s| s.slots.len())
                .unwrap()
                .slots
        };
        for (slots, sends) in [
            (widest(true), Sends::WrittenEntries),
            (widest(false), Sends::WrittenWords),
        ] {
            assert!(slots.len() >= 2 * CHUNK_SLOTS, "{slots}: too few groups");
            let run = SharedRun {
                group_slots: CHUNK_SLOTS,
                threads: 1,
                replacements: 0,
                sends,
            };
            shared_equals_memory(id, slots, &tables, &whole, 2, run, &memory_scratch);
        }
    }

    /// Scratch that fails at its `fail_at`-th write (never when `usize::MAX`).
    struct Failing {
        inner: MemoryScratch,
        writes: AtomicUsize,
        fail_at: usize,
    }

    impl Failing {
        fn new(fail_at: usize) -> Failing {
            Failing {
                inner: MemoryScratch::default(),
                writes: AtomicUsize::new(0),
                fail_at,
            }
        }
    }

    impl Scratch for Failing {
        fn write_at(
            &self,
            group: usize,
            side: Color,
            at: u64,
            bytes: &[u8],
        ) -> std::io::Result<()> {
            if self.writes.fetch_add(1, Relaxed) + 1 >= self.fail_at {
                return Err(std::io::Error::other("the disk is full"));
            }
            self.inner.write_at(group, side, at, bytes)
        }

        fn read_at(
            &self,
            group: usize,
            side: Color,
            at: u64,
            bytes: &mut [u8],
        ) -> std::io::Result<()> {
            self.inner.read_at(group, side, at, bytes)
        }
    }

    /// A worker that fails stops the others instead of leaving them waiting, and the error
    /// named is its own; more workers than groups is refused up front.
    #[test]
    fn a_failing_worker_stops_the_others_and_too_many_workers_are_refused() {
        let (id, tables, _) = solved("KRvKN");
        let slots = SlotRange::whole(&id.signature);
        let run = SharedRun {
            group_slots: CHUNK_SLOTS,
            threads: 1,
            replacements: 0,
            sends: Sends::WrittenEntries,
        };
        let broken = |w: usize, _: usize| -> std::io::Result<Box<dyn Scratch>> {
            Ok(Box::new(Failing::new(if w == 1 { 1 } else { usize::MAX })))
        };
        let err =
            solve_shared_in_process(id, slots, 2, run, &broken, &tables, &|_, _| {}).unwrap_err();
        assert!(
            matches!(&err, SolveError::Scratch(_, why) if why.contains("the disk is full")),
            "{err}"
        );
        // KRvKN's 328,500 slots make two groups of 262,144.
        let run = SharedRun {
            group_slots: 1 << 18,
            ..run
        };
        let err = solve_shared_in_process(id, slots, 3, run, &memory_scratch, &tables, &|_, _| {})
            .unwrap_err();
        assert!(
            matches!(&err, SolveError::Share(_, why) if why.contains("2 groups")),
            "{err}"
        );
    }

    /// A worker that fails in the middle of the levels is replaced by one with a fresh scratch,
    /// which catches up from the exchange's log (sending again, byte for byte, what the failed
    /// worker had sent) while the others wait: the table is the same bit for bit.
    #[test]
    fn a_failed_worker_is_replaced_and_the_table_is_unchanged() {
        let (id, tables, whole) = solved("KRvKN");
        let run = SharedRun {
            group_slots: CHUNK_SLOTS,
            threads: 1,
            replacements: 1,
            sends: Sends::WrittenEntries,
        };
        // Worker 1 has two of KRvKN's six groups: the start stores each (a write per side),
        // and every pass after it stores the one it leaves, so its twelfth write comes a few
        // levels in, of the 25 or more the table has, whatever the window of levels.
        let attempts = std::sync::Mutex::new(Vec::new());
        let failing = |w: usize, attempt: usize| -> std::io::Result<Box<dyn Scratch>> {
            attempts.lock().unwrap().push((w, attempt));
            let fail_at = if (w, attempt) == (1, 0) {
                12
            } else {
                usize::MAX
            };
            Ok(Box::new(Failing::new(fail_at)))
        };
        shared_equals_memory(id, all(id), &tables, &whole, 3, run, &failing);
        assert!(
            attempts.lock().unwrap().contains(&(1, 1)),
            "worker 1 was not replaced"
        );
    }
}
