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
//! sharing the transposition table, so what one settles the others read. A thread with nothing
//! else to do helps the deepening from the other end, settling the root moves it would try
//! last ([`help`]).

use crate::answer::{LineMove, Outcome, SearchResult, Source};
use crate::error::SearchError;
use crate::limits::{Control, Limits, MAX_PLIES, StopReason};
use crate::plan::{Plan, Settled, Work};
use crate::proof::{Leaf, Memo};
use crate::prover::{Child, Prover, Shared, Status};
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
                    let proved = match unit.work {
                        Work::Help(_) => help(prover, unit.plies, unit.budget),
                        _ => prover.prove(unit.plies, unit.budget).map(Some),
                    };
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

/// Settles, within `budget`, the root move of depth `plies` that looks least promising to the
/// deepening (the largest proof number, the last such move), or finds none open (`None`).
fn help<S: TableStore>(
    prover: &mut Prover<'_, S>,
    plies: u16,
    budget: u64,
) -> Result<Option<Status>, SearchError> {
    let mut target = None;
    for &m in prover.board.legal_moves().iter() {
        let c = prover.child(m, plies - 1)?;
        let open = !c.status.is_proven() && !c.status.is_disproven();
        if open && target.is_none_or(|t: Child| c.status.pn >= t.status.pn) {
            target = Some(c);
        }
    }
    let Some(c) = target else {
        prover.halted = None;
        return Ok(None);
    };
    prover.push(c.mv, c.key);
    let status = prover.prove(plies - 1, budget);
    prover.pop();
    status.map(Some)
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

/// The attacker of depth `plies`: the side to move at odd depths, its opponent at even ones.
fn attacker(us: Color, plies: u16) -> Color {
    if plies.is_multiple_of(2) {
        us.opponent()
    } else {
        us
    }
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
