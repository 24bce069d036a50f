//! Queries: a position's value and every move's value, batches of them, and main lines, through
//! the probing library over the committed tables (the reports every interface shows).

use crate::app::App;
use crate::error::AppError;
use crate::limits::check_batch_len;
use probe::{MainlineReport, ProbeReport};
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
}
