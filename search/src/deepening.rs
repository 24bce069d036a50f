//! The search driver: a position's own table when it has one, otherwise iterative deepening of
//! the prover, one ply at a time, alternately for the side to move's win (odd plies) and its
//! loss (even plies), so that the first proof is the shortest; then the proof's check and the
//! main line.
//!
//! Threads share the deepening: each takes the next depth not yet taken, all share one
//! transposition table, and the answer is the shallowest proof once every shallower depth is
//! disproven. With two threads, one looks for the side to move's win while the other looks for
//! its loss one ply deeper, and each reuses what the other has settled.

use crate::answer::{LineMove, Outcome, SearchResult, Source};
use crate::error::SearchError;
use crate::limits::{Control, Limits, MAX_PLIES, StopReason};
use crate::proof::{Leaf, Memo};
use crate::prover::{Prover, Shared};
use crate::transposition::Table;
use probe::{LineEnd, Tablebase};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU16, Ordering::Relaxed};
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
    Disproven { exact: bool },
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
        rule_wins: false,
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
        if rules == RuleSet::Asian && result.stopped == Some(StopReason::MaxPlies) {
            // No mate within the plies: look again for wins by the repetition rules too.
            let abort = AtomicBool::new(false);
            let shared = Shared {
                abort: &abort,
                rule_wins: true,
                ..shared
            };
            deepen(&shared, board, &mut result)?;
        }
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
    if plies % 2 == 1 { us } else { us.opponent() }
}

/// Deepens the prover until a depth is proven, both sides' wins are disproven at every depth,
/// or the limits stop it; then checks the proof and reads the main line.
///
/// Mates are searched for first, a repetition counting as no win, so that distances mean what
/// the tables' mate distances mean (a defender that may escape into a cycle is not mated);
/// [`Shared::rule_wins`] is the second pass of the Asian rules, in which a cycle the defender
/// loses is a win.
fn deepen<S: TableStore>(
    shared: &Shared<'_, S>,
    board: &Board,
    result: &mut SearchResult,
) -> Result<(), SearchError> {
    let max = shared.limits.max_plies;
    let us = board.side_to_move();
    let depths: Mutex<Vec<Option<Depth>>> = Mutex::new(vec![None; max as usize + 1]);
    let error: Mutex<Option<SearchError>> = Mutex::new(None);
    // Whether the side to move's win (0) or loss (1) is disproven at every depth.
    let exact = [AtomicBool::new(false), AtomicBool::new(false)];
    let next = AtomicU16::new(1);
    std::thread::scope(|s| {
        for _ in 0..shared.limits.threads {
            s.spawn(|| {
                let mut provers: [Option<Prover<'_, S>>; 2] = [None, None];
                while !shared.abort.load(Relaxed) {
                    let p = next.fetch_add(1, Relaxed);
                    if p > max {
                        break;
                    }
                    let test = (p % 2 == 0) as usize;
                    let depth = if exact[test].load(Relaxed) {
                        Depth::Disproven { exact: true }
                    } else {
                        shared.control.searching(p);
                        let prover = provers[test]
                            .get_or_insert_with(|| Prover::new(shared, attacker(us, p), board));
                        match prover.prove(p) {
                            Err(e) => {
                                error.lock().expect("error lock").get_or_insert(e);
                                shared.abort.store(true, Relaxed);
                                break;
                            }
                            Ok(s) if s.is_proven() => Depth::Proven,
                            Ok(s) if s.is_disproven() => Depth::Disproven { exact: s.exact },
                            Ok(_) => {
                                Depth::Stopped(prover.stopped.unwrap_or(StopReason::Cancelled))
                            }
                        }
                    };
                    if let Depth::Disproven { exact: true } = depth {
                        exact[test].store(true, Relaxed);
                    }
                    let mut d = depths.lock().expect("depth lock");
                    d[p as usize] = Some(depth);
                    if settled(&d).is_some() {
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
    match settled(&depths) {
        Some(Settled::Proven(p)) => {
            result.searched_plies = p;
            prove_and_read(shared, board, attacker(us, p), p, result)
        }
        Some(Settled::Draw(p)) => {
            result.searched_plies = p;
            result.outcome = Outcome::Draw;
            result.end = Some(LineEnd::Draw);
            Ok(())
        }
        Some(Settled::Stopped(p, reason)) => {
            result.searched_plies = p - 1;
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
            result.searched_plies = max;
            result.stopped = Some(StopReason::MaxPlies);
            Ok(())
        }
    }
}

/// What the depths found so far settle.
enum Settled {
    /// The shallowest proof, at this depth.
    Proven(u16),
    /// Both sides' wins disproven at every depth, known at this one.
    Draw(u16),
    /// A limit stopped this depth before anything shallower was proven.
    Stopped(u16, StopReason),
}

fn settled(depths: &[Option<Depth>]) -> Option<Settled> {
    let mut exact = [false; 2];
    for (p, d) in depths.iter().enumerate().skip(1) {
        match (*d)? {
            Depth::Proven => return Some(Settled::Proven(p as u16)),
            Depth::Stopped(reason) => return Some(Settled::Stopped(p as u16, reason)),
            Depth::Disproven { exact: e } => {
                exact[p % 2] |= e;
                if exact[0] && exact[1] {
                    return Some(Settled::Draw(p as u16));
                }
            }
        }
    }
    None
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
    let limits = Limits {
        nodes: Some(CHECK_NODES),
        time: None,
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
    let checked = checker
        .check(plies, &mut memo)?
        .map_err(SearchError::ProofRejected)?;
    let (mut moves, leaf) = checker
        .main_line(checked.dist, &mut memo)?
        .map_err(SearchError::ProofRejected)?;
    checker.flush();
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
