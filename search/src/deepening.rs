//! The search driver: a position's own table when it has one, otherwise iterative deepening of
//! the prover two plies at a time in two sequences, one for the side to move's win (odd plies)
//! and one for its loss (even plies), so that the first proof is the shortest; then the proof's
//! check and the main line.
//!
//! The two sequences are independent: a won position cannot also be lost, so the first proof
//! in either is the answer, and it is the shortest once the shallower depths of its own
//! sequence are disproven. Beside each sequence's deepening runs a scout, which tries the next
//! few depths within a node budget: a long quiet mate is often proven quickly at its own depth
//! while disproving the shallower ones costs far more, so a scout's proof waits for the
//! deepening to reach it, and is reported as an upper bound (`shortest: false`) if the limits
//! stop the search first.
//!
//! Work goes out in units of a budget of positions ([`Plan::take`]), each resuming its depth
//! from what the transposition table kept, to the kind of work with the least (weighted) work
//! so far: one thread interleaves the kinds and more threads run them side by side, all
//! sharing the transposition table, so what one settles the others read.

use crate::answer::{LineMove, Outcome, SearchResult, Source};
use crate::error::SearchError;
use crate::limits::{Control, Limits, MAX_PLIES, StopReason};
use crate::proof::{Leaf, Memo};
use crate::prover::{Halt, Prover, Shared, Status};
use crate::transposition::Table;
use probe::{LineEnd, Tablebase};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::Duration;
use storage_format::store::TableStore;
use xiangqi::notation::{to_chinese, to_wxf};
use xiangqi::{Board, Color, Move};
use xqtb_core::{RuleSet, Value};

/// Most threads a search runs.
pub const MAX_THREADS: usize = 256;

/// Least hash a search accepts.
pub const MIN_HASH_BYTES: u64 = 1 << 16;

/// Searches `board` for a forced win of either side under `rules`, reading the positions whose
/// material is stored in `tables` (when given) as leaves with their exact values. Runs within
/// `limits` and stops early when `control` is cancelled; a position that is not settled in
/// time is `unknown`, never a guess.
pub fn search<S: TableStore>(
    tables: Option<&Tablebase<S>>,
    rules: RuleSet,
    board: &Board,
    limits: &Limits,
    control: &Control,
) -> Result<SearchResult, SearchError> {
    check_limits(limits)?;
    xiangqi::fen::validate(board).map_err(|e| SearchError::BadFen(e.to_string()))?;
    if board.opponent_in_check() {
        let them = board.side_to_move().opponent();
        return Err(SearchError::BadFen(format!(
            "{them} is in check but it is not {them}'s turn"
        )));
    }
    let tt = Table::new(limits.hash_bytes);
    let abort = AtomicBool::new(false);
    let shared = Shared {
        tt: &tt,
        tables,
        rules,
        limits,
        control,
        abort: &abort,
        rule_wins: rules == RuleSet::Asian,
    };
    let mut result = SearchResult {
        fen: board.fen(),
        rules,
        outcome: Outcome::Unknown,
        plies: None,
        shortest: false,
        line: Vec::new(),
        end: None,
        source: Source::Search,
        searched_plies: 0,
        nodes: 0,
        table_hits: 0,
        elapsed: Default::default(),
        stopped: None,
    };
    let us = board.side_to_move();
    if !board.has_legal_move() {
        // Mate or stalemate on the board: lost either way in Xiangqi.
        result.outcome = Outcome::Loss;
        result.plies = Some(0);
        result.shortest = true;
        result.end = Some(if board.in_check(us) {
            LineEnd::Mate
        } else {
            LineEnd::Stalemate
        });
    } else if let Some(value) = Prover::new(&shared, us, board).table_value()? {
        from_tables(tables, rules, board, value, &mut result)?;
    } else {
        deepen(&shared, board, &mut result)?;
    }
    let progress = control.progress();
    result.nodes = progress.nodes;
    result.table_hits = progress.table_hits;
    result.elapsed = progress.elapsed;
    Ok(result)
}

fn check_limits(limits: &Limits) -> Result<(), SearchError> {
    if limits.max_plies == 0 || limits.max_plies > MAX_PLIES {
        return Err(SearchError::Limits(format!(
            "max plies {} is outside 1..={MAX_PLIES}",
            limits.max_plies
        )));
    }
    if limits.threads == 0 || limits.threads > MAX_THREADS {
        return Err(SearchError::Limits(format!(
            "{} threads is outside 1..={MAX_THREADS}",
            limits.threads
        )));
    }
    if limits.hash_bytes < MIN_HASH_BYTES {
        return Err(SearchError::Limits(format!(
            "a hash of {} bytes is below the least, {MIN_HASH_BYTES} bytes (64 KiB)",
            limits.hash_bytes
        )));
    }
    Ok(())
}

/// The answer for a position whose own material is stored: the table's value and main line.
fn from_tables<S: TableStore>(
    tables: Option<&Tablebase<S>>,
    rules: RuleSet,
    board: &Board,
    value: Value,
    result: &mut SearchResult,
) -> Result<(), SearchError> {
    result.source = Source::Tables;
    result.outcome = outcome_of(value);
    result.plies = value.dtm_plies().or(value.rule_plies());
    result.shortest = result.plies.is_some();
    match tables {
        Some(tb) if value != Value::Draw => {
            let line = tb.mainline(rules, board)?;
            result.line = notate(board, line.moves.iter().map(|m| m.mv));
            result.end = Some(line.end);
        }
        _ => result.end = Some(LineEnd::Draw),
    }
    Ok(())
}

fn outcome_of(value: Value) -> Outcome {
    if value.is_win() {
        Outcome::Win
    } else if value.is_loss() {
        Outcome::Loss
    } else {
        Outcome::Draw
    }
}

/// The moves `moves` played from `board`, in the three notations.
fn notate(board: &Board, moves: impl IntoIterator<Item = Move>) -> Vec<LineMove> {
    let mut b = board.clone();
    moves
        .into_iter()
        .map(|m| {
            let lm = LineMove {
                mv: m,
                iccs: m.iccs(),
                chinese: to_chinese(&b, m),
                wxf: to_wxf(&b, m),
            };
            b.make(m);
            lm
        })
        .collect()
}

/// Deepens the prover until a depth is proven, both sides' wins are disproven at every depth,
/// or the limits stop it; then checks the proof and reads the main line.
fn deepen<S: TableStore>(
    shared: &Shared<'_, S>,
    board: &Board,
    result: &mut SearchResult,
) -> Result<(), SearchError> {
    let us = board.side_to_move();
    let plan = Mutex::new(Plan::new(
        shared.limits.max_plies,
        [!gives_check(board, us), !gives_check(board, us.opponent())],
    ));
    let error: Mutex<Option<SearchError>> = Mutex::new(None);
    std::thread::scope(|s| {
        for _ in 0..shared.limits.threads {
            let (plan, error) = (&plan, &error);
            s.spawn(move || {
                // One prover per attacker, kept between units of work for its counters.
                let mut provers: [Option<Prover<'_, S>>; 2] = [None, None];
                while !shared.abort.load(Relaxed) {
                    let (unit, finished) = {
                        let mut plan = plan.lock().expect("plan lock");
                        (plan.take(), plan.finished())
                    };
                    let Some(unit) = unit else {
                        let nodes = shared.control.progress().nodes;
                        if finished || shared.control.stop_reason(shared.limits, nodes).is_some() {
                            break;
                        }
                        // Every open kind of work is on another thread: wait for one to end.
                        std::thread::sleep(Duration::from_millis(1));
                        continue;
                    };
                    if let Work::Deepen(_) = unit.work {
                        shared.control.searching(unit.plies);
                    }
                    let seq = unit.work.sequence();
                    let prover = provers[seq].get_or_insert_with(|| {
                        Prover::new(shared, attacker(us, seq as u16 + 1), board)
                    });
                    let before = prover.expanded;
                    let proved = prover.prove(unit.plies, unit.budget);
                    let spent = prover.expanded - before + 1;
                    let mut plan = plan.lock().expect("plan lock");
                    match proved {
                        Err(e) => {
                            error.lock().expect("error lock").get_or_insert(e);
                            shared.abort.store(true, Relaxed);
                        }
                        Ok(status) => plan.record(unit, status, prover.halted, spent),
                    }
                    if plan.finished() {
                        shared.abort.store(true, Relaxed);
                    }
                }
            });
        }
    });
    if let Some(e) = error.into_inner().expect("error lock") {
        return Err(e);
    }
    let plan = plan.into_inner().expect("plan lock");
    result.searched_plies = plan.searched();
    match plan.settled() {
        Some(Settled::Proven(p)) => {
            result.searched_plies = p;
            prove_and_read(shared, board, attacker(us, p), p, result)?;
            result.shortest = result.plies.is_some();
            Ok(())
        }
        Some(Settled::Draw) => {
            result.outcome = Outcome::Draw;
            result.end = Some(LineEnd::Draw);
            Ok(())
        }
        Some(Settled::Exhausted) => {
            result.stopped = Some(StopReason::MaxPlies);
            Ok(())
        }
        None => {
            // A thread stopped because another hit a limit reports "cancelled": name the limit.
            let nodes = shared.control.progress().nodes;
            result.stopped = shared
                .control
                .stop_reason(shared.limits, nodes)
                .or(plan.stopped)
                .or(Some(StopReason::Cancelled));
            match plan.bound() {
                // A mate was proven at a depth whose shallower ones are not all disproven: it
                // is reported, and said not to be known to be the shortest.
                Some(p) => prove_and_read(shared, board, attacker(us, p), p, result),
                None => Ok(()),
            }
        }
    }
}

/// Whether `side` has a piece that can give check. A side without one (only its king,
/// advisors and elephants) can win only by stalemating the other, and disproving its mates
/// costs the full width of the tree at every depth: the search leaves such wins out, so it may
/// answer `unknown` where one exists, never a wrong value.
fn gives_check(board: &Board, side: Color) -> bool {
    board
        .pieces()
        .any(|(_, p)| p.color() == side && p.kind().is_attacker())
}

/// A kind of work the deepening hands to its threads, for one of the two sequences (0: the
/// side to move's wins, at odd depths; 1: its losses, at even depths).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Work {
    /// The sequence's shallowest depth not yet disproven. Its proof is the shortest mate.
    Deepen(usize),
    /// A depth beyond that one, tried within a node budget. Long quiet mates are often
    /// proven quickly at their own depth while disproving every shallower depth costs far more:
    /// a mate found here is the answer once the shallower depths are disproven, and an upper
    /// bound on the shortest mate if the limits stop the search first. Its disproofs settle
    /// every shallower depth too.
    Scout(usize),
}

impl Work {
    const ALL: [Work; 4] = [
        Work::Deepen(0),
        Work::Deepen(1),
        Work::Scout(0),
        Work::Scout(1),
    ];

    fn index(self) -> usize {
        match self {
            Work::Deepen(seq) => seq,
            Work::Scout(seq) => 2 + seq,
        }
    }

    fn sequence(self) -> usize {
        match self {
            Work::Deepen(seq) | Work::Scout(seq) => seq,
        }
    }
}

/// One call of the prover: a kind of work, the depth and the node budget.
#[derive(Clone, Copy, Debug)]
struct Unit {
    work: Work,
    plies: u16,
    budget: u64,
}

/// How much each kind of work's expanded positions count when choosing the next, in the order
/// of [`Work::index`]: the side to move's wins are what people ask for, so its losses get a
/// third of the effort.
const WEIGHT: [u64; 4] = [1, 3, 1, 3];

/// The least budget of a unit of work. A unit resumes its depth from what the transposition
/// table kept of the last one, so budgets only need to be large enough that the restart from
/// the root costs little.
const MIN_BUDGET: u64 = 1 << 16;

/// The first budget of a scout, doubled each time it has tried every depth of its window.
const SCOUT_BUDGET: u64 = 1 << 17;

/// How many depths beyond the one being deepened a scout tries, when it has no mate yet.
const SCOUT_DEPTHS: u16 = 3;

/// What the deepening knows, and the work it hands out; its threads lock it between units.
struct Plan {
    max: u16,
    /// What each depth is known to be; the sequence of a depth is its parity.
    depths: Vec<Option<Depth>>,
    /// A sequence that is no longer searched: its side cannot give check, or it was disproven
    /// at every depth.
    done: [bool; 2],
    /// A sequence disproven at every depth: when both are, the position is a draw.
    exact: [bool; 2],
    /// Positions expanded by each kind of work, and whether a thread is on it.
    spent: [u64; 4],
    busy: [bool; 4],
    /// Each sequence's last scouted depth and the budget of its scouts.
    scouted: [u16; 2],
    scout_budget: [u64; 2],
    /// The first limit that stopped a unit.
    stopped: Option<StopReason>,
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
enum Settled {
    /// The shallowest proof of its sequence, at this depth: a position won by one side cannot
    /// be won by the other, so the other sequence need not finish.
    Proven(u16),
    /// Both sides' wins disproven at every depth.
    Draw,
    /// Every depth up to the limit disproven, or left out.
    Exhausted,
}

impl Plan {
    fn new(max: u16, done: [bool; 2]) -> Plan {
        Plan {
            max,
            depths: vec![None; max as usize + 1],
            done,
            exact: [false; 2],
            spent: [0; 4],
            busy: [false; 4],
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
    fn bound(&self) -> Option<u16> {
        self.proven(0).into_iter().chain(self.proven(1)).min()
    }

    fn settled(&self) -> Option<Settled> {
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
    fn finished(&self) -> bool {
        self.stopped.is_some() || self.settled().is_some()
    }

    /// The next unit of work, marked busy, or `None` when the plan is finished or every open
    /// kind of work is busy.
    fn take(&mut self) -> Option<Unit> {
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
    fn record(&mut self, unit: Unit, status: Status, halted: Option<Halt>, spent: u64) {
        let (work, plies) = (unit.work, unit.plies);
        tracing::debug!(
            work = ?work,
            plies,
            budget = unit.budget,
            spent,
            proven = status.is_proven(),
            disproven = status.is_disproven(),
            halted = ?halted,
            "search unit"
        );
        let seq = work.sequence();
        self.busy[work.index()] = false;
        self.spent[work.index()] += spent;
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
        match halted {
            Some(Halt::Limit(reason)) => {
                self.stopped.get_or_insert(reason);
            }
            Some(Halt::Budget) if matches!(work, Work::Scout(_)) => {
                self.scouted[seq] = plies;
                if let Some((_, high)) = self
                    .first_open(seq)
                    .and_then(|(open, _)| self.scout_window(seq, open))
                    && plies >= high
                {
                    self.scout_budget[seq] = self.scout_budget[seq].saturating_mul(2);
                }
            }
            _ => {}
        }
    }

    /// The depth to which every win of a side that can give check is disproven.
    fn searched(&self) -> u16 {
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

/// The attacker of depth `plies`: the side to move at odd depths, its opponent at even ones.
fn attacker(us: Color, plies: u16) -> Color {
    if plies.is_multiple_of(2) {
        us.opponent()
    } else {
        us
    }
}

/// The sequence of depth `plies`: 0 for odd depths, 1 for even ones.
fn sequence_of(plies: u16) -> usize {
    (plies as usize + 1) % 2
}

/// Most positions the check of a proof may expand when it has to prove again what the
/// transposition table lost.
const CHECK_NODES: u64 = 50_000_000;

/// Checks the proof of `attacker`'s win within `plies` and reads its main line into `result`.
fn prove_and_read<S: TableStore>(
    shared: &Shared<'_, S>,
    board: &Board,
    attacker: Color,
    plies: u16,
    result: &mut SearchResult,
) -> Result<(), SearchError> {
    // The check gets a node budget of its own and the search's time limit again.
    let limits = Limits {
        nodes: Some(CHECK_NODES),
        ..shared.limits.clone()
    };
    let control = Control::new();
    let abort = AtomicBool::new(false);
    let check = Shared {
        limits: &limits,
        control: &control,
        abort: &abort,
        ..*shared
    };
    let mut checker = Prover::new(&check, attacker, board);
    // The check's memo of checked positions gets a quarter of the hash again.
    let mut memo = Memo::within(shared.limits.hash_bytes / 4);
    let checked = match checker.check(plies, &mut memo)? {
        Ok(checked) => checker
            .main_line(checked.dist, &mut memo)?
            .map(|line| (checked, line)),
        Err(why) => Err(why),
    };
    checker.flush();
    let (checked, (mut moves, leaf)) = match checked {
        Ok(c) => c,
        Err(why) => {
            // A check cut short by its limits has not refuted the proof: nothing is claimed.
            let progress = control.progress();
            if let Some(reason) = control.stop_reason(&limits, progress.nodes) {
                result.stopped = Some(reason);
                shared.control.add(progress.nodes, progress.table_hits);
                return Ok(());
            }
            return Err(SearchError::ProofRejected(why));
        }
    };
    let end = match leaf {
        Leaf::Table(_) => {
            let tb = shared.tables.expect("a table leaf has tables");
            let line = tb.mainline(shared.rules, &checker.board)?;
            moves.extend(line.moves.iter().map(|m| m.mv));
            line.end
        }
        other => other.end(),
    };
    result.outcome = if attacker == board.side_to_move() {
        Outcome::Win
    } else {
        Outcome::Loss
    };
    result.plies = Some(checked.dist);
    result.line = notate(board, moves);
    result.end = Some(end);
    let progress = control.progress();
    shared.control.add(progress.nodes, progress.table_hits);
    Ok(())
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
        plan.record(unit(Work::Scout(0), 15), Status::proven(13), None, 100);
        assert_eq!(plan.bound(), Some(13));
        assert!(plan.settled().is_none());
        plan.record(
            unit(Work::Deepen(0), 9),
            Status::disproven(false),
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
            Status::disproven(false),
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
        plan.record(unit(Work::Scout(1), 12), Status::disproven(false), None, 1);
        assert_eq!(plan.first_open(1), Some((14, None)));
        assert_eq!(plan.first_open(0), Some((1, None)));
        // An exact disproof ends its sequence; both ending so is a draw.
        plan.record(unit(Work::Deepen(0), 3), Status::disproven(true), None, 1);
        assert!(plan.done[0] && plan.settled().is_none());
        plan.record(unit(Work::Deepen(1), 14), Status::disproven(true), None, 1);
        assert!(matches!(plan.settled(), Some(Settled::Draw)));
    }

    #[test]
    fn a_win_by_repetition_counts_at_its_own_sequences_depth() {
        // A loss of the side to move that ends on its own move (an odd distance, by a cycle it
        // loses) is proven within the next even depth.
        let mut plan = Plan::new(41, [false, false]);
        plan.record(unit(Work::Scout(1), 10), Status::proven(7), None, 1);
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
        plan.record(first, Status::open(5, 5), Some(Halt::Budget), 1000);
        plan.record(second, Status::open(5, 5), Some(Halt::Budget), 100);
        plan.record(third, Status::open(5, 5), Some(Halt::Budget), 10);
        // Wins' scout (10) before losses' deepening (3 x 100) and wins' deepening (1000); the
        // losses' scout has done nothing yet.
        assert_eq!(plan.take().unwrap().work, Work::Scout(1));
        assert_eq!(plan.take().unwrap().work, Work::Scout(0));
    }

    #[test]
    fn a_scout_widens_its_budget_after_each_round_of_its_window() {
        let mut plan = Plan::new(41, [false, true]);
        let mut tried = Vec::new();
        for _ in 0..4 {
            let u = plan.unit(Work::Scout(0)).unwrap();
            tried.push((u.plies, u.budget));
            plan.record(u, Status::open(5, 5), Some(Halt::Budget), 1);
        }
        let b = SCOUT_BUDGET;
        assert_eq!(tried, [(3, b), (5, b), (7, b), (3, 2 * b)]);
        // A limit stops everything.
        let u = plan.unit(Work::Scout(0)).unwrap();
        plan.record(
            u,
            Status::open(5, 5),
            Some(Halt::Limit(StopReason::Time)),
            1,
        );
        assert!(plan.finished());
    }
}
