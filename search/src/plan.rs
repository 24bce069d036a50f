//! The deepening's plan: what each depth of the two sequences is known to be, and the units of
//! work handed to the search threads (see [`crate::deepening`] for the algorithm).
//!
//! The plan is plain data behind one lock: threads take a unit, run the prover without the
//! lock, and record what it found. A unit is a kind of work ([`Work`]), a depth and a node
//! budget; the kind with the least weighted work so far goes next.

use crate::limits::StopReason;
use crate::prover::{Halt, Status};

/// A kind of work the deepening hands to its threads, for one of the two sequences (0: the
/// side to move's wins, at odd depths; 1: its losses, at even depths).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Work {
    /// The sequence's shallowest depth not yet disproven. Its proof is the shortest mate.
    Deepen(usize),
    /// A depth beyond that one, tried within a node budget. Long quiet mates are often
    /// proven quickly at their own depth while disproving every shallower depth costs far more:
    /// a mate found here is the answer once the shallower depths are disproven, and an upper
    /// bound on the shortest mate if the limits stop the search first. Its disproofs settle
    /// every shallower depth too.
    Scout(usize),
    /// The depth being deepened, from the other end: one of its root moves, the one that looks
    /// least promising to the deepening, settled on its own within a budget. The deepening
    /// reads what it settles from the transposition table. Disproving a depth means disproving
    /// every root move, so a second thread shares that work this way where a second df-pn on the
    /// same root would follow the same path as the first.
    Help(usize),
}

impl Work {
    const ALL: [Work; 6] = [
        Work::Deepen(0),
        Work::Deepen(1),
        Work::Scout(0),
        Work::Scout(1),
        Work::Help(0),
        Work::Help(1),
    ];

    fn index(self) -> usize {
        match self {
            Work::Deepen(seq) => seq,
            Work::Scout(seq) => 2 + seq,
            Work::Help(seq) => 4 + seq,
        }
    }

    pub(crate) fn sequence(self) -> usize {
        match self {
            Work::Deepen(seq) | Work::Scout(seq) | Work::Help(seq) => seq,
        }
    }
}

/// One call of the prover: a kind of work, the depth and the node budget.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Unit {
    pub work: Work,
    pub plies: u16,
    pub budget: u64,
}

/// How much each kind of work's expanded positions count when choosing the next, in the order
/// of [`Work::index`]: the side to move's wins are what people ask for, so its losses get a
/// third of the effort.
const WEIGHT: [u64; 6] = [1, 3, 1, 3, 1, 3];

/// The least budget of a unit of work. A unit resumes its depth from what the transposition
/// table kept of the last one, so budgets only need to be large enough that the restart from
/// the root costs little.
const MIN_BUDGET: u64 = 1 << 16;

/// The first budget of a scout, doubled each time it has tried every depth of its window.
const SCOUT_BUDGET: u64 = 1 << 17;

/// How many depths beyond the one being deepened a scout tries, when it has no mate yet.
const SCOUT_DEPTHS: u16 = 3;

/// What the deepening knows, and the work it hands out; its threads lock it between units.
pub(crate) struct Plan {
    max: u16,
    /// What each depth is known to be; the sequence of a depth is its parity.
    depths: Vec<Option<Depth>>,
    /// A sequence that is no longer searched: its side cannot give check, or it was disproven
    /// at every depth.
    done: [bool; 2],
    /// A sequence disproven at every depth: when both are, the position is a draw.
    exact: [bool; 2],
    /// Positions expanded by each kind of work, and whether a thread is on it.
    spent: [u64; 6],
    busy: [bool; 6],
    /// A depth at which a helper found no open root move left: no help until it changes.
    unhelpful: [Option<u16>; 2],
    /// Each sequence's last scouted depth and the budget of its scouts.
    scouted: [u16; 2],
    scout_budget: [u64; 2],
    /// The first limit that stopped a unit.
    pub stopped: Option<StopReason>,
}

/// What one depth of the deepening found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Depth {
    /// The attacker wins within this many plies.
    Proven,
    /// It does not.
    Disproven,
}

/// What the depths found so far settle.
pub(crate) enum Settled {
    /// The shallowest proof of its sequence, at this depth: a position won by one side cannot
    /// be won by the other, so the other sequence need not finish.
    Proven(u16),
    /// Both sides' wins disproven at every depth.
    Draw,
    /// Every depth up to the limit disproven, or left out.
    Exhausted,
}

impl Plan {
    pub(crate) fn new(max: u16, done: [bool; 2]) -> Plan {
        Plan {
            max,
            depths: vec![None; max as usize + 1],
            done,
            exact: [false; 2],
            spent: [0; 6],
            busy: [false; 6],
            unhelpful: [None; 2],
            scouted: [0; 2],
            scout_budget: [SCOUT_BUDGET; 2],
            stopped: None,
        }
    }

    /// The depths of sequence `seq` up to the limit, shallowest first.
    fn sequence(&self, seq: usize) -> impl Iterator<Item = u16> + use<> {
        (seq as u16 + 1..=self.max).step_by(2)
    }

    /// The shallowest depth of `seq` not disproven, and what is known there.
    fn first_open(&self, seq: usize) -> Option<(u16, Option<Depth>)> {
        self.sequence(seq)
            .map(|p| (p, self.depths[p as usize]))
            .find(|(_, d)| *d != Some(Depth::Disproven))
    }

    /// The shallowest proven depth of `seq`, if any.
    fn proven(&self, seq: usize) -> Option<u16> {
        self.sequence(seq)
            .find(|&p| self.depths[p as usize] == Some(Depth::Proven))
    }

    /// The shallowest proven depth of either sequence, if any.
    pub(crate) fn bound(&self) -> Option<u16> {
        self.proven(0).into_iter().chain(self.proven(1)).min()
    }

    pub(crate) fn settled(&self) -> Option<Settled> {
        let mut finished = 0;
        for seq in 0..2 {
            match self.first_open(seq) {
                Some((p, Some(Depth::Proven))) => return Some(Settled::Proven(p)),
                _ if self.done[seq] => finished += 1,
                None => finished += 1,
                Some(_) => {}
            }
        }
        match finished {
            2 if self.exact.iter().all(|&e| e) => Some(Settled::Draw),
            2 => Some(Settled::Exhausted),
            _ => None,
        }
    }

    /// Whether the threads can stop: the answer is known or a limit was reached.
    pub(crate) fn finished(&self) -> bool {
        self.stopped.is_some() || self.settled().is_some()
    }

    /// The next unit of work, marked busy, or `None` when the plan is finished or every open
    /// kind of work is busy.
    pub(crate) fn take(&mut self) -> Option<Unit> {
        if self.finished() {
            return None;
        }
        let unit = Work::ALL
            .into_iter()
            .filter(|w| !self.busy[w.index()])
            .filter_map(|w| self.unit(w))
            .min_by_key(|u| self.spent[u.work.index()].saturating_mul(WEIGHT[u.work.index()]))?;
        self.busy[unit.work.index()] = true;
        Some(unit)
    }

    /// The unit `work` would do next, if there is one.
    fn unit(&self, work: Work) -> Option<Unit> {
        let seq = work.sequence();
        if self.done[seq] {
            return None;
        }
        // A win of one side settles the other's sequence: it cannot be proven any more.
        if self.proven(1 - seq).is_some() {
            return None;
        }
        let (open, _) = self.first_open(seq)?;
        match work {
            Work::Deepen(_) => Some(Unit {
                work,
                plies: open,
                budget: self.spent[work.index()].max(MIN_BUDGET),
            }),
            // Help only while the depth is being deepened, and only where it has root moves
            // that take a search (one ply has none).
            Work::Help(_)
                if self.busy[Work::Deepen(seq).index()]
                    && open >= 3
                    && self.unhelpful[seq] != Some(open) =>
            {
                Some(Unit {
                    work,
                    plies: open,
                    budget: SCOUT_BUDGET,
                })
            }
            Work::Help(_) => None,
            Work::Scout(_) => {
                let (low, high) = self.scout_window(seq, open)?;
                let next = self.scouted[seq] + 2;
                Some(Unit {
                    work,
                    plies: if (low..=high).contains(&next) {
                        next
                    } else {
                        low
                    },
                    budget: self.scout_budget[seq],
                })
            }
        }
    }

    /// The depths a scout of `seq` tries when its shallowest open depth is `open`: beyond the
    /// one being deepened, below its shallowest proof or a few depths on.
    fn scout_window(&self, seq: usize, open: u16) -> Option<(u16, u16)> {
        let low = open + 2;
        let high = match self.proven(seq) {
            Some(p) => p.checked_sub(2)?,
            None => (low + 2 * (SCOUT_DEPTHS - 1)).min(self.max),
        };
        (low <= high).then_some((low, high))
    }

    /// Takes in what a unit found.
    pub(crate) fn record(
        &mut self,
        unit: Unit,
        status: Option<Status>,
        halted: Option<Halt>,
        spent: u64,
    ) {
        let (work, plies) = (unit.work, unit.plies);
        tracing::debug!(
            work = ?work,
            plies,
            budget = unit.budget,
            spent,
            proven = status.is_some_and(|s| s.is_proven()),
            disproven = status.is_some_and(|s| s.is_disproven()),
            halted = ?halted,
            "search unit"
        );
        let seq = work.sequence();
        self.busy[work.index()] = false;
        self.spent[work.index()] += spent;
        if let Some(Halt::Limit(reason)) = halted {
            self.stopped.get_or_insert(reason);
        }
        if let Work::Help(_) = work {
            // What a helper settles is a root move's, read by the deepening from the
            // transposition table; `status` is `None` when no root move was left open.
            if status.is_none() {
                self.unhelpful[seq] = Some(plies);
            }
            return;
        }
        let status = status.expect("a status of the depth");
        if status.is_proven() {
            debug_assert!(self.proven(1 - seq).is_none(), "both sides win");
            // Proven within `plies`, and so within the depth of this sequence that its
            // distance rounds up to (a win by repetition may end on either side's move).
            let d = status.dist.max(1);
            let p = if sequence_of(d) == seq { d } else { d + 1 };
            let slot = &mut self.depths[p.min(plies) as usize];
            if slot.is_none() {
                *slot = Some(Depth::Proven);
            }
        } else if status.is_disproven() {
            // No win within `plies`, so none within fewer.
            for p in self.sequence(seq).take_while(|&p| p <= plies) {
                self.depths[p as usize] = Some(Depth::Disproven);
            }
            if status.exact {
                self.done[seq] = true;
                self.exact[seq] = true;
            }
        }
        if halted == Some(Halt::Budget) && matches!(work, Work::Scout(_)) {
            self.scouted[seq] = plies;
            if let Some((_, high)) = self
                .first_open(seq)
                .and_then(|(open, _)| self.scout_window(seq, open))
                && plies >= high
            {
                self.scout_budget[seq] = self.scout_budget[seq].saturating_mul(2);
            }
        }
    }

    /// The depth to which every win of a side that can give check is disproven.
    pub(crate) fn searched(&self) -> u16 {
        let mut p = 1;
        while p <= self.max {
            let seq = sequence_of(p);
            if self.depths[p as usize] != Some(Depth::Disproven) && !self.done[seq] {
                break;
            }
            p += 1;
        }
        p - 1
    }
}

/// The sequence of depth `plies`: 0 for odd depths, 1 for even ones.
fn sequence_of(plies: u16) -> usize {
    (plies as usize + 1) % 2
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(work: Work, plies: u16) -> Unit {
        Unit {
            work,
            plies,
            budget: MIN_BUDGET,
        }
    }

    #[test]
    fn a_scouts_proof_is_the_answer_once_the_shallower_depths_are_disproven() {
        let mut plan = Plan::new(41, [false, true]);
        // A scout proves a mate of 13 plies while the deepening is at 9.
        plan.record(
            unit(Work::Scout(0), 15),
            Some(Status::proven(13)),
            None,
            100,
        );
        assert_eq!(plan.bound(), Some(13));
        assert!(plan.settled().is_none());
        plan.record(
            unit(Work::Deepen(0), 9),
            Some(Status::disproven(false)),
            None,
            100,
        );
        assert!(plan.settled().is_none());
        assert_eq!(plan.searched(), 10);
        // The scout now tries 11 only: below its proof, beyond the depth being deepened.
        assert_eq!(plan.scout_window(0, 11), None);
        assert_eq!(plan.scout_window(0, 9), Some((11, 11)));
        plan.record(
            unit(Work::Deepen(0), 11),
            Some(Status::disproven(false)),
            None,
            100,
        );
        assert!(matches!(plan.settled(), Some(Settled::Proven(13))));
        assert!(plan.finished());
        assert!(plan.take().is_none());
    }

    #[test]
    fn a_disproof_holds_for_every_shallower_depth() {
        let mut plan = Plan::new(41, [false, false]);
        plan.record(
            unit(Work::Scout(1), 12),
            Some(Status::disproven(false)),
            None,
            1,
        );
        assert_eq!(plan.first_open(1), Some((14, None)));
        assert_eq!(plan.first_open(0), Some((1, None)));
        // An exact disproof ends its sequence; both ending so is a draw.
        plan.record(
            unit(Work::Deepen(0), 3),
            Some(Status::disproven(true)),
            None,
            1,
        );
        assert!(plan.done[0] && plan.settled().is_none());
        plan.record(
            unit(Work::Deepen(1), 14),
            Some(Status::disproven(true)),
            None,
            1,
        );
        assert!(matches!(plan.settled(), Some(Settled::Draw)));
    }

    #[test]
    fn a_win_by_repetition_counts_at_its_own_sequences_depth() {
        // A loss of the side to move that ends on its own move (an odd distance, by a cycle it
        // loses) is proven within the next even depth.
        let mut plan = Plan::new(41, [false, false]);
        plan.record(unit(Work::Scout(1), 10), Some(Status::proven(7)), None, 1);
        assert_eq!(plan.proven(1), Some(8));
        // The other side's wins are no longer searched.
        assert!(plan.unit(Work::Deepen(0)).is_none());
        assert!(plan.unit(Work::Scout(0)).is_none());
        assert!(plan.unit(Work::Deepen(1)).is_some());
    }

    #[test]
    fn work_goes_to_the_kind_with_the_least_weighted_work() {
        let mut plan = Plan::new(41, [false, false]);
        let first = plan.take().unwrap();
        assert_eq!((first.work, first.plies), (Work::Deepen(0), 1));
        // Busy kinds are not handed out twice.
        let second = plan.take().unwrap();
        assert_eq!((second.work, second.plies), (Work::Deepen(1), 2));
        let third = plan.take().unwrap();
        assert_eq!((third.work, third.plies), (Work::Scout(0), 3));
        plan.record(first, Some(Status::open(5, 5)), Some(Halt::Budget), 1000);
        plan.record(second, Some(Status::open(5, 5)), Some(Halt::Budget), 100);
        plan.record(third, Some(Status::open(5, 5)), Some(Halt::Budget), 10);
        // Wins' scout (10) before losses' deepening (3 x 100) and wins' deepening (1000); the
        // losses' scout has done nothing yet.
        assert_eq!(plan.take().unwrap().work, Work::Scout(1));
        assert_eq!(plan.take().unwrap().work, Work::Scout(0));
    }

    #[test]
    fn a_helper_works_only_beside_the_deepening_of_its_depth() {
        let mut plan = Plan::new(41, [false, true]);
        let deepening = |plan: &mut Plan| {
            let u = plan.unit(Work::Deepen(0)).unwrap();
            plan.busy[Work::Deepen(0).index()] = true;
            u
        };
        // Depth 1 has no root moves to share.
        let deepen = deepening(&mut plan);
        assert_eq!(deepen.plies, 1);
        assert!(plan.unit(Work::Help(0)).is_none());
        plan.record(deepen, Some(Status::disproven(false)), None, 1);
        // Nor is there help for a depth that no thread is deepening.
        assert!(plan.unit(Work::Help(0)).is_none());
        let deepen = deepening(&mut plan);
        assert_eq!(deepen.plies, 3);
        let help = plan.unit(Work::Help(0)).unwrap();
        assert_eq!(help.plies, 3);
        // A helper that finds no open root move waits for the next depth.
        plan.record(help, None, None, 1);
        assert!(plan.unit(Work::Help(0)).is_none());
        plan.record(deepen, Some(Status::disproven(false)), None, 1);
        let deepen = deepening(&mut plan);
        assert_eq!(deepen.plies, 5);
        let help = plan.unit(Work::Help(0)).unwrap();
        assert_eq!(help.plies, 5);
        // A helper does not settle a depth: only the deepening records it.
        plan.record(help, Some(Status::disproven(false)), None, 1);
        assert_eq!(plan.first_open(0), Some((5, None)));
    }

    #[test]
    fn a_scout_widens_its_budget_after_each_round_of_its_window() {
        let mut plan = Plan::new(41, [false, true]);
        let mut tried = Vec::new();
        for _ in 0..4 {
            let u = plan.unit(Work::Scout(0)).unwrap();
            tried.push((u.plies, u.budget));
            plan.record(u, Some(Status::open(5, 5)), Some(Halt::Budget), 1);
        }
        let b = SCOUT_BUDGET;
        assert_eq!(tried, [(3, b), (5, b), (7, b), (3, 2 * b)]);
        // A limit stops everything.
        let u = plan.unit(Work::Scout(0)).unwrap();
        plan.record(
            u,
            Some(Status::open(5, 5)),
            Some(Halt::Limit(StopReason::Time)),
            1,
        );
        assert!(plan.finished());
    }
}
