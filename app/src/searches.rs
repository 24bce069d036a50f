//! Mate searches as a server runs them: what a request asks to spend ([`SearchLimits`]), capped
//! by the server's limits, at most [`MAX_SEARCHES`] at once ([`Searches`]), and the answer
//! every front end shows ([`SearchAnswer`]: the search's report and the limits it ran under).
//! Both the coordinator's [`App`](crate::App) and `xqtb serve`'s directory of tables run their
//! searches through a [`Searches`], so the caps and the refusal when busy are the same
//! everywhere.

use crate::error::AppError;
use crate::limits::{
    DEFAULT_SEARCH_HASH_MIB, DEFAULT_SEARCH_PLIES, DEFAULT_SEARCH_THREADS, MAX_SEARCH_HASH_MIB,
    MAX_SEARCH_NODES, MAX_SEARCH_PLIES, MAX_SEARCH_THREADS, MAX_SEARCH_TIME, MAX_SEARCHES,
};
use probe::Tablebase;
use search::{Control, Limits, SearchError, SearchReport};
use serde::Serialize;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use storage_format::store::TableStore;
use xqtb_core::{ProbeError, RuleSet};

/// What a search request asks to spend; `None` takes the server's default. Whatever is asked,
/// the search runs within the server's caps ([`SearchLimits::capped`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SearchLimits {
    /// Longest win looked for, in plies (default [`DEFAULT_SEARCH_PLIES`], at most
    /// [`MAX_SEARCH_PLIES`]).
    pub max_plies: Option<u64>,
    /// Most positions expanded (at most [`MAX_SEARCH_NODES`], also the default).
    pub nodes: Option<u64>,
    /// Longest time spent (at most [`MAX_SEARCH_TIME`], also the default).
    pub time: Option<Duration>,
    /// Threads searching at once (default [`DEFAULT_SEARCH_THREADS`], at most
    /// [`MAX_SEARCH_THREADS`]).
    pub threads: Option<u64>,
    /// MiB of the transposition table (default [`DEFAULT_SEARCH_HASH_MIB`], at most
    /// [`MAX_SEARCH_HASH_MIB`]).
    pub hash_mib: Option<u64>,
}

/// The limits a search ran under, after the server's caps, as the answers show them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct AppliedLimits {
    /// Longest win looked for, in plies.
    pub max_plies: u16,
    /// Most positions expanded.
    pub nodes: u64,
    /// Longest time spent, in milliseconds.
    pub time_ms: u64,
    /// Threads searching at once.
    pub threads: usize,
    /// MiB of the transposition table.
    pub hash_mib: u64,
}

impl SearchLimits {
    /// The limits to search with: each asked-for limit, or its default, capped by the server's
    /// own. A limit of zero is refused (it could not let the search do anything), naming it.
    pub fn capped(&self) -> Result<AppliedLimits, AppError> {
        let zero = |name: &str, what: &str| {
            AppError::BadRequest(format!(
                "{name} must be at least 1 ({what}); leave it out for the server's default"
            ))
        };
        if self.max_plies == Some(0) {
            return Err(zero("max_plies", "the longest win looked for, in plies"));
        }
        if self.nodes == Some(0) {
            return Err(zero("nodes", "the most positions expanded"));
        }
        if self.time == Some(Duration::ZERO) {
            return Err(zero("time_ms", "the longest time spent, in milliseconds"));
        }
        if self.threads == Some(0) {
            return Err(zero("threads", "threads searching at once"));
        }
        if self.hash_mib == Some(0) {
            return Err(zero("hash_mib", "MiB of the transposition table"));
        }
        let time = self.time.unwrap_or(MAX_SEARCH_TIME).min(MAX_SEARCH_TIME);
        Ok(AppliedLimits {
            max_plies: self
                .max_plies
                .unwrap_or(DEFAULT_SEARCH_PLIES.into())
                .min(MAX_SEARCH_PLIES.into()) as u16,
            nodes: self.nodes.unwrap_or(MAX_SEARCH_NODES).min(MAX_SEARCH_NODES),
            time_ms: time.as_millis().max(1) as u64,
            threads: self
                .threads
                .unwrap_or(DEFAULT_SEARCH_THREADS as u64)
                .min(MAX_SEARCH_THREADS as u64) as usize,
            hash_mib: self
                .hash_mib
                .unwrap_or(DEFAULT_SEARCH_HASH_MIB)
                .min(MAX_SEARCH_HASH_MIB),
        })
    }
}

impl AppliedLimits {
    /// The search library's form of these limits.
    pub fn to_search(self) -> Limits {
        Limits {
            max_plies: self.max_plies,
            nodes: Some(self.nodes),
            time: Some(Duration::from_millis(self.time_ms)),
            threads: self.threads,
            hash_bytes: self.hash_mib << 20,
        }
    }
}

/// A search's answer as every front end shows it: the search library's report (the same object
/// as `xqtb search --json`), and the limits it ran under once the server had capped them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SearchAnswer {
    /// The search's report.
    #[serde(flatten)]
    pub report: SearchReport,
    /// The limits the search ran under.
    pub limits: AppliedLimits,
}

/// The searches a server runs: at most [`MAX_SEARCHES`] at once; one more is refused as
/// [`AppError::Busy`] at once.
#[derive(Debug, Default)]
pub struct Searches {
    running: AtomicUsize,
}

/// A place among the running searches, given back when dropped.
struct Place<'a>(&'a AtomicUsize);

impl Drop for Place<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Searches {
    /// No search running.
    pub fn new() -> Searches {
        Searches::default()
    }

    /// Searches running now.
    pub fn running(&self) -> usize {
        self.running.load(Ordering::Acquire)
    }

    fn take_place(&self) -> Result<Place<'_>, AppError> {
        self.running
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < MAX_SEARCHES).then_some(n + 1)
            })
            .map_err(|_| {
                AppError::Busy(format!(
                    "the server is busy: {MAX_SEARCHES} searches are running, the most it runs \
                     at once; try again in a few seconds"
                ))
            })?;
        Ok(Place(&self.running))
    }

    /// Searches the position of `fen` under `rules` for a forced win, reading the positions
    /// whose material is in `tables` (when given) as leaves, within `requested` capped by the
    /// server's limits. Blocks for up to [`MAX_SEARCH_TIME`] and the proof's check: call it off
    /// any async executor. `control` stops it early (a front end cancels it when its client
    /// goes away). A bad FEN or limit is refused before a place is taken; with
    /// [`MAX_SEARCHES`] running, [`AppError::Busy`].
    pub fn run<S: TableStore>(
        &self,
        tables: Option<&Tablebase<S>>,
        rules: RuleSet,
        fen: &str,
        requested: &SearchLimits,
        control: &Control,
    ) -> Result<SearchAnswer, AppError> {
        let limits = requested.capped()?;
        let board = xiangqi::parse_fen(fen).map_err(|e| ProbeError::BadFen(e.to_string()))?;
        let place = match self.take_place() {
            Ok(p) => p,
            Err(e) => {
                metrics::counter!("xqtb_searches_total", "result" => "busy").increment(1);
                return Err(e);
            }
        };
        let started = Instant::now();
        let result = search::search(tables, rules, &board, &limits.to_search(), control);
        drop(place);
        metrics::histogram!("xqtb_search_seconds").record(started.elapsed().as_secs_f64());
        let outcome = result.as_ref().map_or("failed", |r| r.outcome.name());
        metrics::counter!("xqtb_searches_total", "result" => outcome).increment(1);
        let report = SearchReport::from(&result.map_err(search_error)?);
        Ok(SearchAnswer { report, limits })
    }
}

/// The application error of a failed search.
fn search_error(e: SearchError) -> AppError {
    match e {
        SearchError::BadFen(m) => AppError::Probe(ProbeError::BadFen(m)),
        SearchError::Limits(m) => AppError::BadRequest(format!("invalid search limits: {m}")),
        SearchError::Probe(p) => AppError::Probe(p),
        e @ SearchError::ProofRejected(_) => AppError::SearchFailed(e.to_string()),
    }
}

/// Cancels a search's [`Control`] when dropped: a front end holds one while it waits for the
/// search, so that a client that goes away (or a request that times out, whose future is
/// dropped) stops the search instead of leaving it to run out its limits for nobody.
#[derive(Debug)]
pub struct CancelOnDrop(pub Arc<Control>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_capped_and_defaults_filled_in() {
        let defaults = SearchLimits::default().capped().unwrap();
        assert_eq!(
            defaults,
            AppliedLimits {
                max_plies: 41,
                nodes: 20_000_000,
                time_ms: 10_000,
                threads: 1,
                hash_mib: 64,
            }
        );
        let greedy = SearchLimits {
            max_plies: Some(100_000),
            nodes: Some(1_000_000_000_000),
            time: Some(Duration::from_secs(3600)),
            threads: Some(100),
            hash_mib: Some(1 << 20),
        };
        assert_eq!(
            greedy.capped().unwrap(),
            AppliedLimits {
                max_plies: 63,
                nodes: 20_000_000,
                time_ms: 10_000,
                threads: 2,
                hash_mib: 256,
            }
        );
        let modest = SearchLimits {
            max_plies: Some(5),
            nodes: Some(1000),
            time: Some(Duration::from_millis(250)),
            threads: Some(2),
            hash_mib: Some(1),
        };
        let l = modest.capped().unwrap().to_search();
        assert_eq!(
            (l.max_plies, l.nodes, l.time, l.threads, l.hash_bytes),
            (5, Some(1000), Some(Duration::from_millis(250)), 2, 1 << 20)
        );
        let e = SearchLimits {
            threads: Some(0),
            ..SearchLimits::default()
        }
        .capped()
        .unwrap_err()
        .to_string();
        assert!(e.contains("threads must be at least 1"), "{e}");
    }

    #[test]
    fn mates_are_found_bad_fens_refused_and_extra_searches_turned_away() {
        let searches = Searches::new();
        let none: Option<&Tablebase> = None;
        let run = |fen: &str| {
            searches.run(
                none,
                RuleSet::Asian,
                fen,
                &SearchLimits::default(),
                &Control::new(),
            )
        };
        let a = run("3k5/9/9/9/9/9/9/9/4R4/4K4 w").unwrap();
        assert_eq!(
            (a.report.result.as_str(), a.report.dtm_plies),
            ("win", Some(1))
        );
        assert_eq!(a.report.best_move.as_deref(), Some("e1d1"));
        let e = run("3k5/9/9 w").unwrap_err();
        assert!(matches!(e, AppError::Probe(ProbeError::BadFen(_))), "{e}");
        let e = run("3k5/9/9/9/9/9/9/9/9/3K5 w").unwrap_err().to_string();
        assert!(e.starts_with("bad FEN: "), "{e}");
        // With every place taken, the next search is refused at once, and runs once one frees.
        let places: Vec<_> = (0..MAX_SEARCHES)
            .map(|_| searches.take_place().unwrap())
            .collect();
        let e = run("3k5/9/9/9/9/9/9/9/4R4/4K4 w").unwrap_err();
        assert!(matches!(e, AppError::Busy(_)), "{e}");
        assert!(e.to_string().contains("try again"), "{e}");
        drop(places);
        assert_eq!(searches.running(), 0);
        assert!(run("3k5/9/9/9/9/9/9/9/4R4/4K4 w").is_ok());
    }
}
