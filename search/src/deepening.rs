//! The search driver: a position's own table when it has one, otherwise iterative deepening of
//! the prover two plies at a time in two sequences, one for the side to move's win (odd plies)
//! and one for its loss (even plies), so that the first proof is the shortest; then the proof's
//! check and the main line.
//!
//! The two sequences are independent: a won position cannot also be lost, so the first proof
//! in either is the answer, and it is the shortest once the shallower depths of its own
//! sequence are disproven. Threads share the deepening: each takes the next depth of the
//! sequence that has had the least (weighted) work, and all share one transposition table, so
//! a deeper search running beside a shallower one finds what that one has settled.

use crate::answer::{LineMove, Outcome, SearchResult, Source};
use crate::error::SearchError;
use crate::limits::{Control, Limits, MAX_PLIES, StopReason};
use crate::proof::{Leaf, Memo};
use crate::prover::{Prover, Shared};
use crate::transposition::Table;
use probe::{LineEnd, Tablebase};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU16, AtomicU64, Ordering::Relaxed};
use storage_format::store::TableStore;
use xiangqi::notation::{to_chinese, to_wxf};
use xiangqi::{Board, Color, Move};
use xqtb_core::{RuleSet, Value};

/// Most threads a search runs.
pub const MAX_THREADS: usize = 256;

/// Least hash a search accepts.
pub const MIN_HASH_BYTES: u64 = 1 << 16;

/// What one depth of the deepening found.
#[derive(Clone, Copy, Debug)]
enum Depth {
    Proven,
    Disproven,
    Stopped(StopReason),
}

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

/// The attacker of depth `plies`: the side to move at odd depths, its opponent at even ones.
fn attacker(us: Color, plies: u16) -> Color {
    if plies.is_multiple_of(2) {
        us.opponent()
    } else {
        us
    }
}

/// Deepens the prover until a depth is proven, both sides' wins are disproven at every depth,
/// or the limits stop it; then checks the proof and reads the main line.
fn deepen<S: TableStore>(
    shared: &Shared<'_, S>,
    board: &Board,
    result: &mut SearchResult,
) -> Result<(), SearchError> {
    let max = shared.limits.max_plies;
    let us = board.side_to_move();
    let depths: Mutex<Vec<Option<Depth>>> = Mutex::new(vec![None; max as usize + 1]);
    let error: Mutex<Option<SearchError>> = Mutex::new(None);
    // The next depth of each sequence: the side to move's wins (odd depths) and its losses
    // (even depths).
    let next = [AtomicU16::new(1), AtomicU16::new(2)];
    // A sequence no longer worth searching: its side cannot give check, or a disproof held at
    // every depth.
    let done = [
        AtomicBool::new(!gives_check(board, us)),
        AtomicBool::new(!gives_check(board, us.opponent())),
    ];
    // Positions expanded by each sequence so far, and whether a thread is searching it.
    let spent = [AtomicU64::new(0), AtomicU64::new(0)];
    let busy = [AtomicBool::new(false), AtomicBool::new(false)];
    // A sequence disproven at every depth: when both are, the position is a draw.
    let exact = [AtomicBool::new(false), AtomicBool::new(false)];
    std::thread::scope(|s| {
        for _ in 0..shared.limits.threads {
            let (next, done, exact, depths, error) = (&next, &done, &exact, &depths, &error);
            let (spent, busy) = (&spent, &busy);
            s.spawn(move || {
                let mut provers: [Option<Prover<'_, S>>; 2] = [None, None];
                loop {
                    if shared.abort.load(Relaxed) {
                        break;
                    }
                    // The sequence with the least weighted work so far goes next: the side to
                    // move's wins are what people ask for, so its losses get a third of the
                    // effort; a sequence that is done leaves all of it to the other. One
                    // thread at most works on a sequence: a second one would search its next
                    // depth before this one is settled, and crowd out what that search keeps
                    // in the transposition table.
                    let open = |t: usize| !done[t].load(Relaxed) && next[t].load(Relaxed) <= max;
                    let free = |t: usize| open(t) && !busy[t].load(Relaxed);
                    let cost = |t: usize| spent[t].load(Relaxed).saturating_mul(LOSS_WEIGHT[t]);
                    let seq = match (free(0), free(1)) {
                        (true, true) if cost(1) < cost(0) => 1,
                        (true, _) => 0,
                        (false, true) => 1,
                        (false, false) => break,
                    };
                    if busy[seq].swap(true, Relaxed) {
                        continue;
                    }
                    let p = next[seq].fetch_add(2, Relaxed);
                    if p > max {
                        continue;
                    }
                    shared.control.searching(p);
                    let prover = provers[seq]
                        .get_or_insert_with(|| Prover::new(shared, attacker(us, p), board));
                    let before = prover.expanded;
                    let proved = prover.prove(p);
                    spent[seq].fetch_add(prover.expanded - before + 1, Relaxed);
                    busy[seq].store(false, Relaxed);
                    let depth = match proved {
                        Err(e) => {
                            error.lock().expect("error lock").get_or_insert(e);
                            shared.abort.store(true, Relaxed);
                            break;
                        }
                        Ok(s) if s.is_proven() => Depth::Proven,
                        Ok(s) if s.is_disproven() => {
                            if s.exact {
                                done[seq].store(true, Relaxed);
                                exact[seq].store(true, Relaxed);
                            }
                            Depth::Disproven
                        }
                        Ok(_) => Depth::Stopped(prover.stopped.unwrap_or(StopReason::Cancelled)),
                    };
                    let mut d = depths.lock().expect("depth lock");
                    d[p as usize] = Some(depth);
                    if settled(&d, done, exact, max).is_some() {
                        shared.abort.store(true, Relaxed);
                    }
                }
            });
        }
    });
    if let Some(e) = error.into_inner().expect("error lock") {
        return Err(e);
    }
    let depths = depths.into_inner().expect("depth lock");
    result.searched_plies = searched(&depths, &done);
    match settled(&depths, &done, &exact, max) {
        Some(Settled::Proven(p)) => {
            result.searched_plies = p;
            prove_and_read(shared, board, attacker(us, p), p, result)
        }
        Some(Settled::Draw) => {
            result.outcome = Outcome::Draw;
            result.end = Some(LineEnd::Draw);
            Ok(())
        }
        Some(Settled::Stopped(reason)) => {
            // A thread stopped because another hit a limit reports "cancelled": name the limit.
            let nodes = shared.control.progress().nodes;
            result.stopped = Some(
                shared
                    .control
                    .stop_reason(shared.limits, nodes)
                    .unwrap_or(reason),
            );
            Ok(())
        }
        None => {
            result.stopped = Some(StopReason::MaxPlies);
            Ok(())
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

/// How much each sequence's work counts when choosing the next (wins, losses).
const LOSS_WEIGHT: [u64; 2] = [1, 3];

/// What the depths found so far settle.
enum Settled {
    /// The shallowest proof of its sequence, at this depth: a position won by one side cannot
    /// be won by the other, so the other sequence need not finish.
    Proven(u16),
    /// Both sides' wins disproven at every depth.
    Draw,
    /// A limit stopped the search before either sequence found a proof.
    Stopped(StopReason),
}

/// How far the sequence of `seq` (0: wins, 1: losses of the side to move) got: its first depth
/// without a disproof and what is there, `None` when every depth up to the limit is disproven.
fn first_open(depths: &[Option<Depth>], seq: usize) -> Option<(u16, Option<Depth>)> {
    (seq + 1..depths.len())
        .step_by(2)
        .map(|p| (p as u16, depths[p]))
        .find(|(_, d)| !matches!(d, Some(Depth::Disproven)))
}

fn settled(
    depths: &[Option<Depth>],
    done: &[AtomicBool; 2],
    exact: &[AtomicBool; 2],
    max: u16,
) -> Option<Settled> {
    let mut stopped = None;
    let mut finished = 0;
    for (seq, done) in done.iter().enumerate() {
        let first = first_open(depths, seq);
        if done.load(Relaxed) && !matches!(first, Some((_, Some(Depth::Proven)))) {
            finished += 1;
            continue;
        }
        match first {
            Some((p, Some(Depth::Proven))) => return Some(Settled::Proven(p)),
            Some((_, Some(Depth::Stopped(reason)))) => stopped = Some(reason),
            Some((p, None)) if p <= max => return None,
            _ => finished += 1,
        }
    }
    let exact_both = exact.iter().all(|d| d.load(Relaxed));
    match stopped {
        Some(reason) => Some(Settled::Stopped(reason)),
        None if finished == 2 && exact_both => Some(Settled::Draw),
        None => None,
    }
}

/// The depth to which every win of a side that can give check is disproven.
fn searched(depths: &[Option<Depth>], done: &[AtomicBool; 2]) -> u16 {
    let mut p = 1;
    while p < depths.len() {
        let seq = (p + 1) % 2;
        let disproven = matches!(depths[p], Some(Depth::Disproven));
        if !disproven && !done[seq].load(Relaxed) {
            break;
        }
        p += 1;
    }
    (p - 1) as u16
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
    let mut memo = Memo::new();
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
