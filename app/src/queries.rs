//! Queries: a position's value and every move's value, batches of them, and main lines, through
//! the probing library over the committed tables (the reports every interface shows); and mate
//! searches from positions beyond them, whose leaves are those tables.

use crate::app::App;
use crate::error::AppError;
use crate::limits::check_batch_len;
use crate::searches::{SearchAnswer, SearchLimits};
use probe::{MainlineReport, ProbeReport};
use search::Control;
use std::time::Instant;
use xqtb_core::RuleSet;

impl App {
    /// Probes every FEN of a batch under `rules`; refused as a whole when it holds more than
    /// [`MAX_PROBE_BATCH`](crate::MAX_PROBE_BATCH) positions, else one result per position.
    pub fn probe_batch(
        &self,
        rules: RuleSet,
        fens: &[String],
    ) -> Result<Vec<Result<ProbeReport, AppError>>, AppError> {
        check_batch_len(fens.len())?;
        Ok(fens.iter().map(|fen| self.probe(rules, fen)).collect())
    }

    /// Probes a FEN under `rules`.
    pub fn probe(&self, rules: RuleSet, fen: &str) -> Result<ProbeReport, AppError> {
        let started = Instant::now();
        let r = self.tablebase.probe_fen(rules, fen);
        metrics::counter!("xqtb_probes_total").increment(1);
        metrics::histogram!("xqtb_probe_seconds").record(started.elapsed().as_secs_f64());
        Ok(ProbeReport::from(&r?))
    }

    /// The main line from a FEN under `rules`.
    pub fn mainline(&self, rules: RuleSet, fen: &str) -> Result<MainlineReport, AppError> {
        Ok(MainlineReport::from(
            &self.tablebase.mainline_fen(rules, fen)?,
        ))
    }

    /// Searches the position of `fen` under `rules` for a forced win, reading the committed
    /// tables as leaves, within `requested` capped by the server's limits
    /// ([`SearchLimits::capped`]); [`AppError::Busy`] when
    /// [`MAX_SEARCHES`](crate::MAX_SEARCHES) are running. Blocks for up to the search's time
    /// limit; `control` stops it early.
    pub fn search(
        &self,
        rules: RuleSet,
        fen: &str,
        requested: &SearchLimits,
        control: &Control,
    ) -> Result<SearchAnswer, AppError> {
        self.searches
            .run(Some(&self.tablebase), rules, fen, requested, control)
    }
}
