//! A run of a plan, simulated: the real [`Scheduler`] leases the jobs to simulated workers, and
//! each job takes the time its [`JobCost`] estimates. `xqtb plan --workers` prints the result,
//! so a prediction and a real run go through the same leasing policy (dependencies first, only
//! to workers that can hold the job, the longest remaining path first), and the coordinator's
//! policy of sharing a table between workers ([`Sharing`]).

use crate::scheduler::{JobState, Scheduler, SchedulerConfig};
use crate::share_policy::Sharing;
use crate::shares::Shares;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use xqtb_core::{JobCost, JobKey, TableId};

/// One simulated worker.
#[derive(Clone, Debug)]
pub struct SimWorker {
    /// Name, as it would register.
    pub name: String,
    /// Solver threads.
    pub threads: u32,
    /// Memory it can give one job (`None`: any job).
    pub memory_bytes: Option<u64>,
}

/// One job as the simulation ran it.
#[derive(Clone, Debug)]
pub struct SimulatedJob {
    /// The job.
    pub key: JobKey,
    /// Index of the worker that ran it.
    pub worker: usize,
    /// Seconds from the start of the run when it was leased.
    pub start_s: f64,
    /// Seconds from the start when it was committed.
    pub end_s: f64,
    /// Seconds it was ready (its dependencies done) before a worker took it.
    pub waited_s: f64,
    /// Its worker kept its states on local disk, short of memory to hold them
    /// ([`JobCost::keeps_states_on_disk`]), or shared it: a byte per entry of disk more, and
    /// more CPU.
    pub states_on_disk: bool,
    /// How many workers shared it (1: its worker alone); the others are `shared_with`.
    pub seats: usize,
    /// The workers that held its other seats (indexes into the workers).
    pub shared_with: Vec<usize>,
    /// Seconds from the start when its last seat was taken and it began (its start, when not
    /// shared).
    pub began_s: f64,
    /// Bytes the coordinator relayed between its seats ([`Sharing::relayed_bytes`]; 0 when
    /// not shared).
    pub relayed_bytes: f64,
}

/// The outcome of a simulated run.
#[derive(Clone, Debug)]
pub struct Simulation {
    /// Every job that ran, in the order they started.
    pub jobs: Vec<SimulatedJob>,
    /// Seconds until the last job was committed.
    pub makespan_s: f64,
    /// The chain of jobs that ends with the last one committed, first job first: each job's
    /// predecessor is its dependency committed last (indexes into `jobs`).
    pub critical_path: Vec<usize>,
    /// Jobs no worker could hold (they and the jobs waiting for them never ran).
    pub never_ran: Vec<JobKey>,
    /// Share of the workers' thread time spent on jobs' work (0..1): not the time a shared job
    /// waited on a full link.
    pub utilisation: f64,
    /// The coordinator's link, bytes a second (as given to [`simulate`]).
    pub relay_link_bytes_per_second: f64,
    /// Seconds during which the shared jobs' traffic filled the link and slowed them.
    pub relay_full_s: f64,
    /// The most bytes a second the coordinator relayed at once (at most the link).
    pub peak_relay_bytes_per_second: f64,
    /// The most bytes a second one worker received from the relay.
    pub peak_worker_bytes_per_second: f64,
}

impl Simulation {
    /// The bytes the coordinator relays in all.
    pub fn relayed_bytes(&self) -> f64 {
        self.jobs.iter().map(|j| j.relayed_bytes).sum()
    }
}

/// Fraction of a job that does not speed up with threads (Amdahl's law): on two threads a job's
/// wall time is `f + (1 - f) / 2` of its CPU time, and `f` is fitted to the large tables' times
/// at two threads, the only count measured (BENCHMARKS.md, "Cost model"). Beyond two threads
/// the law is an assumption, stated wherever a prediction is quoted.
pub const SERIAL_FRACTION: f64 = 0.08;

pub use crate::share_policy::SHARED_EFFICIENCY;

/// Wall seconds of a job costing `cpu_seconds` on `threads` threads.
pub fn wall_seconds(cpu_seconds: f64, threads: u32) -> f64 {
    let t = threads.max(1) as f64;
    cpu_seconds * (SERIAL_FRACTION + (1.0 - SERIAL_FRACTION) / t)
}

/// Simulates solving `targets` and their closure with `workers`, every table missing at the
/// start, tables with pawns of at least `slice_from_entries` entries in pawn slices, tables
/// shared as `sharing` says. A shared job has a seat per worker that can hold it (up to what
/// `sharing` allows, less the seats of other shared jobs not yet full), as the coordinator
/// counts them: the idle workers take theirs when it is leased, the others as they come free
/// (before any other job), and it runs from when the last seat is taken,
/// [`SHARED_EFFICIENCY`] times as fast per worker, its states on disk, plus a round trip for
/// each pass's barrier; the coordinator relays [`Sharing::relayed_bytes`] for it, spread over
/// its run. The shared jobs running at once share the coordinator's link of
/// `relay_link_bytes_per_second` (`f64::INFINITY`: never full): when their traffic together
/// would exceed it, they all run slower alike, so that together they relay what it carries.
///
/// # Panics
/// If `relay_link_bytes_per_second` is not above 0.
pub fn simulate(
    targets: &[TableId],
    workers: &[SimWorker],
    slice_from_entries: u64,
    sharing: Sharing,
    relay_link_bytes_per_second: f64,
) -> Simulation {
    let shares = Shares::new(sharing, None, None);
    let config = SchedulerConfig {
        // No worker dies in a simulation: leases never expire, jobs never fail.
        lease_ttl_ms: 1 << 60,
        max_attempts: 1,
        slice_from_entries,
    };
    let mut s = Scheduler::new(config, Vec::new(), "sim".into());
    s.share(sharing);
    s.plan(targets, |_| false);
    // Jobs became ready at: the plan's start, or the commit of their last dependency.
    let mut ready_at: BTreeMap<JobKey, f64> = BTreeMap::new();
    assert!(
        relay_link_bytes_per_second > 0.0,
        "a link that carries nothing never ends a shared job"
    );
    let mut run = Run {
        link: relay_link_bytes_per_second,
        ..Run::default()
    };
    // Idle workers, the largest memory first: once one gets nothing, no smaller one can.
    let mut idle: Vec<usize> = (0..workers.len()).collect();
    idle.sort_by_key(|&w| Reverse(workers[w].memory_bytes.unwrap_or(u64::MAX)));
    let mut now_ms = 0u64;
    for j in s.jobs() {
        if j.state == JobState::Ready {
            ready_at.insert(j.key, 0.0);
        }
    }
    // Commits a job; the jobs it readies became ready now.
    fn finish(s: &mut Scheduler, ready_at: &mut BTreeMap<JobKey, f64>, lease: &str, now_ms: u64) {
        for r in s.finish(lease, now_ms).expect("simulated lease is current") {
            if r.state == JobState::Ready {
                ready_at.insert(r.key, now_ms as f64 / 1e3);
            }
        }
    }
    // Shared jobs leased whose seats are not all held yet.
    let mut unfilled: Vec<Unfilled> = Vec::new();
    let fits = |w: usize, cost: &JobCost| {
        workers[w]
            .memory_bytes
            .is_none_or(|m| cost.least_bytes() <= m)
    };
    loop {
        let mut still_idle = Vec::new();
        let mut granting = true;
        let mut waiting: std::collections::VecDeque<usize> = idle.drain(..).collect();
        while let Some(w) = waiting.pop_front() {
            // An open seat of a shared job first, as the coordinator leases one.
            if let Some(u) = unfilled.iter().position(|u| fits(w, &u.cost)) {
                unfilled[u].others.push(w);
                if unfilled[u].is_full() {
                    let u = unfilled.remove(u);
                    run.start(workers, u, now_ms, &ready_at);
                }
                continue;
            }
            let grant = if granting {
                s.lease(&workers[w].name, workers[w].memory_bytes, now_ms).0
            } else {
                None
            };
            let Some(g) = grant else {
                granting = false;
                still_idle.push(w);
                continue;
            };
            let cost = s
                .cost(&g.key)
                .copied()
                .unwrap_or_else(|| JobCost::of(&g.key));
            // Its seats, as the coordinator counts them: one per worker that can hold it and
            // is not bound to the seats of another job not yet full. Idle workers take theirs
            // now, the others as they come free.
            let able = (0..workers.len()).filter(|&o| fits(o, &cost)).count();
            let bound: usize = unfilled.iter().map(|u| u.seats).sum();
            let seats = shares
                .seats_for(&g.key, able.saturating_sub(bound))
                .map_or(1, |seat| seat.seats);
            let mut u = Unfilled {
                key: g.key,
                lease: g.lease.id,
                first: w,
                others: Vec::new(),
                seats,
                cost,
                leased_ms: now_ms,
            };
            while !u.is_full() {
                let Some(i) = waiting.iter().position(|&o| fits(o, &cost)) else {
                    break;
                };
                u.others.push(waiting.remove(i).expect("a waiting worker"));
            }
            match u.is_full() {
                true => run.start(workers, u, now_ms, &ready_at),
                false => unfilled.push(u),
            }
        }
        idle = still_idle;
        // The next moment a job ends: a job alone, or a shared one at its current speed.
        let alone = run.running.peek().map(|Reverse((e, _, _))| *e);
        let Some(next_ms) = alone.into_iter().chain(run.next_shared_end_ms()).min() else {
            break;
        };
        now_ms = next_ms;
        run.advance_shared(now_ms);
        while let Some(Reverse((e, _, _))) = run.running.peek() {
            if *e != now_ms {
                break;
            }
            let Reverse((_, w, lease)) = run.running.pop().expect("peeked");
            finish(&mut s, &mut ready_at, &lease, now_ms);
            idle.push(w);
        }
        for (lease, seats) in run.end_shared(workers, now_ms) {
            finish(&mut s, &mut ready_at, &lease, now_ms);
            idle.extend(seats);
        }
        idle.sort_by_key(|&w| Reverse(workers[w].memory_bytes.unwrap_or(u64::MAX)));
    }
    let Run {
        jobs,
        index_of,
        busy_thread_s,
        full_s,
        peak_relay,
        peak_worker,
        ..
    } = run;
    let makespan_s = jobs.iter().map(|j| j.end_s).fold(0.0, f64::max);
    let never_ran = s
        .jobs()
        .filter(|j| !index_of.contains_key(&j.key))
        .map(|j| j.key)
        .collect();
    let thread_s: f64 = workers.iter().map(|w| w.threads as f64).sum::<f64>() * makespan_s;
    Simulation {
        critical_path: critical_path(&jobs, &index_of),
        utilisation: if thread_s > 0.0 {
            busy_thread_s / thread_s
        } else {
            0.0
        },
        jobs,
        makespan_s,
        never_ran,
        relay_link_bytes_per_second,
        relay_full_s: full_s,
        peak_relay_bytes_per_second: peak_relay,
        peak_worker_bytes_per_second: peak_worker,
    }
}

/// A job leased whose seats are not all held yet (one, unless shared): its first seat's worker
/// holds the job's lease, the others' workers wait with it.
struct Unfilled {
    key: JobKey,
    lease: String,
    first: usize,
    others: Vec<usize>,
    seats: usize,
    cost: JobCost,
    leased_ms: u64,
}

impl Unfilled {
    fn is_full(&self) -> bool {
        1 + self.others.len() == self.seats
    }
}

/// The jobs started so far and the seats running.
#[derive(Default)]
struct Run {
    jobs: Vec<SimulatedJob>,
    index_of: BTreeMap<JobKey, usize>,
    /// Running jobs alone: when they end, the worker, and the job's lease.
    running: BinaryHeap<Reverse<(u64, usize, String)>>,
    /// Running shared jobs, whose ends depend on how fast the link lets them all go.
    shared: Vec<SharedRun>,
    /// Seconds from the start up to which the shared jobs' progress is counted.
    shared_at_s: f64,
    /// Seconds so far during which the link was full.
    full_s: f64,
    /// The most bytes a second relayed so far, in all and to one worker.
    peak_relay: f64,
    peak_worker: f64,
    /// The coordinator's link, bytes a second.
    link: f64,
    busy_thread_s: f64,
}

/// A shared job running.
struct SharedRun {
    /// Its index in [`Run::jobs`].
    job: usize,
    lease: String,
    /// The workers of its seats.
    seats: Vec<usize>,
    /// Its wall seconds when the link is not full.
    alone_s: f64,
    /// The bytes a second it relays when the link is not full.
    demand: f64,
    /// The share of it done.
    done: f64,
}

impl Run {
    /// How fast the shared jobs go, as a share of their speed when the link is not full: all
    /// alike, so that together they relay at most what the link carries.
    fn shared_speed(&self) -> f64 {
        let demand: f64 = self.shared.iter().map(|r| r.demand).sum();
        if demand > self.link {
            self.link / demand
        } else {
            1.0
        }
    }

    /// Counts the shared jobs' progress up to `now_ms`, at the speed they went since.
    fn advance_shared(&mut self, now_ms: u64) {
        let now_s = now_ms as f64 / 1e3;
        let speed = self.shared_speed();
        for r in &mut self.shared {
            r.done += (now_s - self.shared_at_s) * speed / r.alone_s;
        }
        if now_s > self.shared_at_s {
            if speed < 1.0 {
                self.full_s += now_s - self.shared_at_s;
            }
            let relay: f64 = self.shared.iter().map(|r| r.demand * speed).sum();
            self.peak_relay = self.peak_relay.max(relay);
            for r in &self.shared {
                self.peak_worker = self
                    .peak_worker
                    .max(r.demand * speed / r.seats.len() as f64);
            }
        }
        self.shared_at_s = now_s;
    }

    /// When the first shared job running ends, at the speed they go now.
    fn next_shared_end_ms(&self) -> Option<u64> {
        let speed = self.shared_speed();
        self.shared
            .iter()
            .map(|r| self.shared_at_s + (1.0 - r.done).max(0.0) * r.alone_s / speed)
            .min_by(f64::total_cmp)
            // At least a millisecond on, as a job alone takes at least one.
            .map(|s| ((s * 1e3).ceil() as u64).max((self.shared_at_s * 1e3).round() as u64 + 1))
    }

    /// Ends the shared jobs done by `now_ms` (progress counted up to it); returns their leases
    /// and their seats' workers.
    fn end_shared(&mut self, workers: &[SimWorker], now_ms: u64) -> Vec<(String, Vec<usize>)> {
        let now_s = now_ms as f64 / 1e3;
        let mut ended = Vec::new();
        let mut i = 0;
        while i < self.shared.len() {
            // Done within a microsecond of its work (the end was rounded up to a millisecond).
            if (1.0 - self.shared[i].done) * self.shared[i].alone_s > 1e-6 {
                i += 1;
                continue;
            }
            let r = self.shared.swap_remove(i);
            let job = &mut self.jobs[r.job];
            job.end_s = now_s;
            // Busy for its work: the time it waited on a full link was not work.
            self.busy_thread_s += r.alone_s
                * r.seats
                    .iter()
                    .map(|&w| workers[w].threads as f64)
                    .sum::<f64>();
            ended.push((r.lease, r.seats));
        }
        ended
    }

    /// Starts job `u` at `now_ms`, its seats all held: alone, it takes the time its cost says
    /// on its worker's memory; shared, [`SHARED_EFFICIENCY`] times as fast per worker, its
    /// states on disk, and slower while the link is full.
    fn start(
        &mut self,
        workers: &[SimWorker],
        u: Unfilled,
        now_ms: u64,
        ready_at: &BTreeMap<JobKey, f64>,
    ) {
        let (w, seats, cost) = (u.first, u.seats, u.cost);
        let memory = workers[w].memory_bytes.unwrap_or(0);
        let (cpu, on_disk) = if seats > 1 {
            (Sharing::seat_cpu_seconds(&cost, seats, memory), true)
        } else {
            (
                cost.cpu_seconds_with(memory),
                cost.keeps_states_on_disk(memory),
            )
        };
        let mut secs = wall_seconds(cpu, workers[w].threads);
        if seats > 1 {
            secs += Sharing::barrier_seconds();
        }
        let end_ms = now_ms + (secs * 1e3).ceil().max(1.0) as u64;
        let start_s = u.leased_ms as f64 / 1e3;
        // Seats short of a seat's memory send whole words.
        let sending_words = std::iter::once(w)
            .chain(u.others.iter().copied())
            .filter(|&s| {
                let seat = cost.seat_bytes.unwrap_or(0);
                workers[s].memory_bytes.is_some_and(|m| m < seat)
            })
            .count();
        let relayed_bytes = Sharing::relayed_bytes(&cost, seats, sending_words);
        self.index_of.insert(u.key, self.jobs.len());
        if seats > 1 {
            // Its end waits on the link: counted as it goes ([`Run::end_shared`]).
            self.advance_shared(now_ms);
            self.shared.push(SharedRun {
                job: self.jobs.len(),
                lease: u.lease,
                seats: std::iter::once(w).chain(u.others.iter().copied()).collect(),
                alone_s: secs,
                demand: relayed_bytes / secs,
                done: 0.0,
            });
        } else {
            self.busy_thread_s += secs * workers[w].threads as f64;
            self.running.push(Reverse((end_ms, w, u.lease)));
        }
        self.jobs.push(SimulatedJob {
            key: u.key,
            worker: w,
            start_s,
            end_s: end_ms as f64 / 1e3,
            waited_s: start_s - ready_at.get(&u.key).copied().unwrap_or(start_s),
            states_on_disk: on_disk,
            seats,
            shared_with: u.others,
            began_s: now_ms as f64 / 1e3,
            relayed_bytes,
        });
    }
}

/// From the job committed last back to a job with no dependency, each step to the dependency
/// (a table, or a pawn slice of its own table) committed last.
fn critical_path(jobs: &[SimulatedJob], index_of: &BTreeMap<JobKey, usize>) -> Vec<usize> {
    let Some(mut at) = (0..jobs.len()).max_by(|&a, &b| jobs[a].end_s.total_cmp(&jobs[b].end_s))
    else {
        return Vec::new();
    };
    let mut path = vec![at];
    loop {
        let before = jobs[at]
            .key
            .table
            .dependencies()
            .iter()
            .flat_map(|d| {
                index_of
                    .iter()
                    .filter(move |(k, _)| k.table == *d)
                    .map(|(_, i)| *i)
            })
            .chain(
                jobs[at]
                    .key
                    .slice_dependencies()
                    .into_iter()
                    .filter_map(|slots| {
                        index_of
                            .get(&JobKey {
                                table: jobs[at].key.table,
                                slots,
                            })
                            .copied()
                    }),
            )
            .max_by(|&a, &b| jobs[a].end_s.total_cmp(&jobs[b].end_s));
        match before {
            Some(b) => {
                path.push(b);
                at = b;
            }
            None => break,
        }
    }
    path.reverse();
    path
}

#[cfg(test)]
mod tests {
    use super::*;
    use xqtb_core::RuleSet;

    fn table(s: &str) -> TableId {
        TableId::new(RuleSet::Asian, s.parse().unwrap())
    }

    fn workers(n: usize, threads: u32, memory: Option<u64>) -> Vec<SimWorker> {
        (0..n)
            .map(|i| SimWorker {
                name: format!("w{i}"),
                threads,
                memory_bytes: memory,
            })
            .collect()
    }

    #[test]
    fn one_worker_runs_every_job_back_to_back() {
        let sim = simulate(
            &[table("KRNvKR")],
            &workers(1, 2, None),
            u64::MAX,
            Sharing::default(),
            f64::INFINITY,
        );
        let closure = table("KRNvKR").signature.closure();
        assert_eq!(sim.jobs.len(), closure.len());
        let total: f64 = sim.jobs.iter().map(|j| j.end_s - j.start_s).sum();
        assert!((sim.makespan_s - total).abs() < 0.01 * closure.len() as f64);
        // Every job starts after its dependencies end.
        for j in &sim.jobs {
            for d in j.key.table.dependencies() {
                let dep = sim.jobs.iter().find(|x| x.key.table == d).unwrap();
                assert!(dep.end_s <= j.start_s, "{} before {}", j.key, dep.key);
            }
        }
        let last = &sim.jobs[*sim.critical_path.last().unwrap()];
        assert_eq!(last.key.table, table("KRNvKR"));
        assert!(sim.never_ran.is_empty());
        assert!(sim.utilisation > 0.99);
    }

    #[test]
    fn more_workers_finish_sooner_but_not_before_the_longest_chain() {
        let targets = [table("KRNvKR"), table("KRCvKR"), table("KCPvKR")];
        let one = simulate(
            &targets,
            &workers(1, 1, None),
            u64::MAX,
            Sharing::default(),
            f64::INFINITY,
        );
        let many = simulate(
            &targets,
            &workers(50, 1, None),
            u64::MAX,
            Sharing::default(),
            f64::INFINITY,
        );
        assert!(many.makespan_s < one.makespan_s / 2.0);
        let chain: f64 = many
            .critical_path
            .iter()
            .map(|&i| many.jobs[i].end_s - many.jobs[i].start_s)
            .sum();
        assert!(many.makespan_s + 1e-3 >= chain);
        // With workers to spare nothing waits for one.
        assert!(many.jobs.iter().all(|j| j.waited_s < 1e-9));
    }

    #[test]
    fn jobs_too_large_for_every_worker_never_run() {
        let big = JobCost::of(&JobKey::whole(table("KRNvKR"))).least_bytes();
        let sim = simulate(
            &[table("KRNvKR")],
            &workers(2, 1, Some(big - 1)),
            u64::MAX,
            Sharing::default(),
            f64::INFINITY,
        );
        assert_eq!(sim.never_ran, vec![JobKey::whole(table("KRNvKR"))]);
        assert_eq!(
            sim.jobs.len(),
            table("KRNvKR").signature.closure().len() - 1
        );
    }

    /// A shared job leased while the other worker is busy keeps a seat for it, as the
    /// coordinator does: the busy worker takes it when its job is done, and the shared job
    /// runs from then.
    #[test]
    fn a_busy_worker_takes_its_seat_when_it_comes_free() {
        let rules = RuleSet::CyclesAreDraws;
        let id = |s: &str| TableId::new(rules, s.parse().unwrap());
        let (krnkr, krckn) = (id("KRNvKR"), id("KRCvKN"));
        let sharing = Sharing {
            workers: 2,
            from_entries: JobKey::whole(krnkr).entries(),
            max_replacements: 1,
        };
        let sim = simulate(
            &[krnkr, krckn],
            &workers(2, 1, None),
            u64::MAX,
            sharing,
            f64::INFINITY,
        );
        let job = |t: TableId| sim.jobs.iter().find(|j| j.key.table == t).unwrap();
        // KRCvKN is leased while the other worker still solves KRNvK.
        let (shared, busy) = (job(krckn), job(id("KRNvK")));
        assert!(shared.start_s < busy.end_s, "{shared:?} {busy:?}");
        assert_eq!((shared.seats, &shared.shared_with), (2, &vec![busy.worker]));
        assert!(shared.end_s > busy.end_s);
        assert_eq!(job(krnkr).seats, 2);
    }

    /// Two shared jobs whose traffic together is twice what the link carries both run at
    /// half speed; when the first ends, the other goes at full speed again.
    #[test]
    fn shared_jobs_slow_down_alike_to_what_the_link_carries() {
        let key = JobKey::whole(table("KRNvKR"));
        let job = SimulatedJob {
            key,
            worker: 0,
            start_s: 0.0,
            end_s: 0.0,
            waited_s: 0.0,
            states_on_disk: true,
            seats: 2,
            shared_with: vec![1],
            began_s: 0.0,
            relayed_bytes: 0.0,
        };
        let shared = |job: usize, seats: Vec<usize>, alone_s: f64, demand: f64| SharedRun {
            job,
            lease: format!("l{job}"),
            seats,
            alone_s,
            demand,
            done: 0.0,
        };
        // 10 s and 20 s alone, 300 and 100 bytes a second, on a link of 200.
        let mut run = Run {
            jobs: vec![job.clone(), job],
            shared: vec![
                shared(0, vec![0, 1], 10.0, 300.0),
                shared(1, vec![2, 3], 20.0, 100.0),
            ],
            link: 200.0,
            ..Run::default()
        };
        let workers = workers(4, 3, None);
        assert_eq!(run.shared_speed(), 0.5);
        assert_eq!(run.next_shared_end_ms(), Some(20_000));
        run.advance_shared(20_000);
        // The link full, the relay at what it carries; a worker of the first job gets half of
        // its 150 bytes a second.
        assert_eq!(
            (run.full_s, run.peak_relay, run.peak_worker),
            (20.0, 200.0, 75.0)
        );
        assert_eq!(
            run.end_shared(&workers, 20_000),
            vec![("l0".into(), vec![0, 1])]
        );
        assert_eq!(run.jobs[0].end_s, 20.0);
        // Two workers of three threads busy for its 10 s of work.
        assert_eq!(run.busy_thread_s, 60.0);
        // The other did half its work; alone on the link it needs 10 s more.
        assert_eq!(run.shared_speed(), 1.0);
        assert_eq!(run.next_shared_end_ms(), Some(30_000));
        assert!(run.end_shared(&workers, 20_000).is_empty());
        run.advance_shared(30_000);
        assert_eq!(
            run.end_shared(&workers, 30_000),
            vec![("l1".into(), vec![2, 3])]
        );
        assert_eq!(
            (run.full_s, run.peak_relay, run.jobs[1].end_s),
            (20.0, 200.0, 30.0)
        );
    }

    /// A shared job on a link that carries half its traffic takes twice as long; the plan's
    /// relay then stays within the link.
    #[test]
    fn a_shared_job_on_a_full_link_takes_longer() {
        let krnkr = TableId::new(RuleSet::CyclesAreDraws, "KRNvKR".parse().unwrap());
        let sharing = Sharing {
            workers: 4,
            from_entries: JobKey::whole(krnkr).entries(),
            max_replacements: 1,
        };
        let run = |link| simulate(&[krnkr], &workers(4, 1, None), u64::MAX, sharing, link);
        let free = run(f64::INFINITY);
        let job = |sim: &Simulation| sim.jobs.iter().find(|j| j.key.table == krnkr).cloned();
        let fast = job(&free).unwrap();
        let demand = free.peak_relay_bytes_per_second;
        let half = run(demand / 2.0);
        let slow = job(&half).unwrap();
        let took = |j: &SimulatedJob| j.end_s - j.began_s;
        assert_eq!(slow.began_s, fast.began_s);
        assert!(
            (took(&slow) - 2.0 * took(&fast)).abs() < 2e-3,
            "{slow:?} {fast:?}"
        );
        assert!((half.peak_relay_bytes_per_second - demand / 2.0).abs() < 1e-6 * demand);
        assert!((half.makespan_s - free.makespan_s - took(&fast)).abs() < 2e-3);
        assert!((half.relay_full_s - took(&slow)).abs() < 2e-3);
        assert_eq!(
            (free.relay_full_s, half.relay_link_bytes_per_second),
            (0.0, demand / 2.0)
        );
    }

    /// A worker sharing a table with less memory than a seat's sends whole words: the job is
    /// shared all the same, and relays more.
    #[test]
    fn workers_short_of_a_seats_memory_share_a_table_relaying_more() {
        let krnkr = TableId::new(RuleSet::CyclesAreDraws, "KRNvKR".parse().unwrap());
        let key = JobKey::whole(krnkr);
        let cost = JobCost::of(&key);
        let sharing = Sharing {
            workers: 2,
            from_entries: key.entries(),
            max_replacements: 1,
        };
        let shared = |memory: u64| {
            let sim = simulate(
                &[krnkr],
                &workers(2, 1, Some(memory)),
                u64::MAX,
                sharing,
                f64::INFINITY,
            );
            let job = sim.jobs.iter().find(|j| j.key == key).unwrap().clone();
            assert_eq!((job.seats, job.states_on_disk), (2, true));
            job.relayed_bytes
        };
        let seat = cost.seat_bytes.unwrap();
        assert!(cost.least_bytes() < seat);
        let (entries, stored) = (cost.entries as f64, cost.stored_bytes as f64);
        let near = |a: f64, b: f64| (a - b).abs() < 1e-6 * b;
        let rate = crate::share_policy::RELAYED_BYTES_PER_ENTRY;
        assert!(near(shared(seat), rate * entries + stored));
        let rate = crate::share_policy::RELAYED_WORD_BYTES_PER_ENTRY;
        assert!(near(shared(seat - 1), rate * entries + stored));
    }

    /// A table shared as the coordinator shares it takes the idle workers when it is leased,
    /// and ends sooner than on one of them; smaller tables and asian ones are not shared.
    #[test]
    fn a_shared_table_takes_idle_workers_and_ends_sooner() {
        let rules = RuleSet::CyclesAreDraws;
        let krnkr = TableId::new(rules, "KRNvKR".parse().unwrap());
        let entries = JobKey::whole(krnkr).entries();
        let sharing = Sharing {
            workers: 4,
            from_entries: entries,
            max_replacements: 1,
        };
        let alone = simulate(
            &[krnkr],
            &workers(4, 1, None),
            u64::MAX,
            Sharing::default(),
            f64::INFINITY,
        );
        let shared = simulate(
            &[krnkr],
            &workers(4, 1, None),
            u64::MAX,
            sharing,
            f64::INFINITY,
        );
        let job = |sim: &Simulation| {
            sim.jobs
                .iter()
                .find(|j| j.key.table == krnkr)
                .cloned()
                .unwrap()
        };
        let (one, four) = (job(&alone), job(&shared));
        assert_eq!((one.seats, four.seats, four.shared_with.len()), (1, 4, 3));
        assert!(four.states_on_disk);
        assert!(four.end_s - four.start_s < (one.end_s - one.start_s) / 2.0);
        assert!(shared.makespan_s < alone.makespan_s);
        assert!(shared.jobs.iter().filter(|j| j.seats > 1).count() == 1);
        // Each of the four workers sends its words and its parts to the three others, the
        // relay's traffic spread over the job's run (only the one shared job relays).
        let cost = JobCost::of(&four.key);
        let per_worker = crate::share_policy::RELAYED_BYTES_PER_ENTRY * entries as f64
            + cost.stored_bytes as f64;
        assert_eq!(four.relayed_bytes, 3.0 * per_worker);
        assert_eq!((one.relayed_bytes, alone.relayed_bytes()), (0.0, 0.0));
        assert_eq!(shared.relayed_bytes(), four.relayed_bytes);
        let run = four.end_s - four.began_s;
        assert!(run > 0.0 && four.began_s >= four.start_s);
        let near = |a: f64, b: f64| (a - b).abs() < 1e-3 * b;
        assert!(near(
            shared.peak_relay_bytes_per_second,
            four.relayed_bytes / run
        ));
        assert!(near(
            shared.peak_worker_bytes_per_second,
            four.relayed_bytes / 4.0 / run
        ));
        assert_eq!(shared.relay_full_s, 0.0);
        let asian = TableId::new(RuleSet::Asian, krnkr.signature);
        let sim = simulate(
            &[asian],
            &workers(4, 1, None),
            u64::MAX,
            sharing,
            f64::INFINITY,
        );
        assert!(sim.jobs.iter().all(|j| j.seats == 1));
    }
}
