//! What an HTTP server answers from, and how failures become HTTP statuses.
//!
//! A [`Backend`] is blocking: the server calls it on tokio's blocking pool. Two exist: a local
//! directory of tables or shard files ([`LocalBackend`], for `xqtb serve`) and a running
//! coordinator's application layer ([`CoordinatorBackend`], for `xqtb coordinator
//! --http-listen`), which probes and searches through the same [`App`] methods as gRPC. Both
//! run their searches through an [`app::Searches`], with the same caps.

use app::scheduler::JobState;
use app::{Access, App, AppError, SearchAnswer, SearchLimits, Searches};
use axum::http::StatusCode;
use probe::{MainlineReport, ProbeReport, Tablebase};
use search::Control;
use serde::Serialize;
use std::sync::Arc;
use std::time::Duration;
use storage_format::codec::TableHeader;
use storage_format::store::{StoreError, TableStore};
use xiangqi::Color;
use xqtb_core::{ProbeError, RuleSet, TableId};

/// A failed request: its HTTP status and a message for people, sent as `{"error": message}`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// What went wrong, in words (never a backtrace).
    pub message: String,
}

impl ApiError {
    /// An error with this status and message.
    pub fn new(status: StatusCode, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            message: message.into(),
        }
    }

    /// 400: the request is malformed (bad FEN, bad or missing parameter).
    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, message)
    }

    /// 404: the table is not generated, or there is no such endpoint.
    pub fn not_found(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, message)
    }

    /// 503: the server runs as much of this work as it allows at once; try again shortly.
    pub fn busy(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::SERVICE_UNAVAILABLE, message)
    }

    /// 500: the server failed (damaged storage).
    pub fn internal(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, message)
    }

    fn missing(table: &TableId) -> ApiError {
        ApiError::not_found(format!(
            "table {} is not in this tablebase (rule set {})",
            table.signature, table.rules
        ))
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.status, self.message)
    }
}

impl From<ProbeError> for ApiError {
    fn from(e: ProbeError) -> ApiError {
        match &e {
            ProbeError::MissingTable(table) | ProbeError::NotInStore { table, .. } => {
                ApiError::missing(table)
            }
            ProbeError::Storage { .. } => ApiError::internal(e.to_string()),
            ProbeError::Illegal(_) | ProbeError::BadFen(_) | ProbeError::TooManyPieces { .. } => {
                ApiError::bad_request(e.to_string())
            }
        }
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> ApiError {
        match &e {
            StoreError::Missing { table, .. } => ApiError::missing(table),
            _ => ApiError::internal(e.to_string()),
        }
    }
}

impl From<AppError> for ApiError {
    fn from(e: AppError) -> ApiError {
        match e {
            AppError::Unauthenticated(m) => ApiError::new(StatusCode::UNAUTHORIZED, m),
            AppError::BadRequest(m) => ApiError::bad_request(m),
            AppError::Busy(m) => ApiError::busy(m),
            AppError::Probe(p) => p.into(),
            AppError::Store(s) => s.into(),
            e => ApiError::internal(e.to_string()),
        }
    }
}

/// One side to move of a table, as `/api/v1/tables` lists it.
#[derive(Clone, Debug, Serialize)]
pub struct SideSummary {
    /// Legal positions.
    pub legal: u64,
    /// Positions the side to move wins.
    pub wins: u64,
    /// Drawn positions.
    pub draws: u64,
    /// Positions the side to move loses.
    pub losses: u64,
    /// The longest win by mate in plies, `null` when the side to move never wins by mate.
    pub longest_win_plies: Option<u16>,
    /// A position with that longest win.
    pub longest_win_fen: Option<String>,
}

/// A stored table, as `/api/v1/tables` lists it.
#[derive(Clone, Debug, Serialize)]
pub struct TableSummary {
    /// The canonical signature, e.g. `KRvKN`.
    pub table: String,
    /// Its rule set.
    pub rules: String,
    /// Slots per side to move.
    pub index_size: u64,
    /// Counts with Red to move.
    pub red_to_move: SideSummary,
    /// Counts with Black to move.
    pub black_to_move: SideSummary,
    /// Bytes of compressed values.
    pub stored_bytes: u64,
    /// A position of the table worth looking at (the longest win), for the web page.
    pub example_fen: Option<String>,
}

impl TableSummary {
    /// The summary of a stored table's header.
    pub fn of(h: &TableHeader) -> TableSummary {
        // The header's own numbering (a table of an older scheme included); none, and no
        // example position, for a header this build cannot read.
        let index = h.index().ok();
        let side = |c: Color| {
            let s = &h.counts[c];
            SideSummary {
                legal: s.legal,
                wins: s.wins,
                draws: s.draws,
                losses: s.losses,
                longest_win_plies: s.longest_win.map(|(d, _)| d),
                longest_win_fen: s
                    .longest_win
                    .and_then(|(_, slot)| index.as_ref()?.board(slot, c))
                    .map(|b| b.fen()),
            }
        };
        let (red, black) = (side(Color::Red), side(Color::Black));
        let example_fen = red
            .longest_win_fen
            .clone()
            .or_else(|| black.longest_win_fen.clone());
        TableSummary {
            table: h.signature.name(),
            rules: h.rules.name().into(),
            index_size: h.index_size,
            red_to_move: red,
            black_to_move: black,
            stored_bytes: h.stored_bytes(),
            example_fen,
        }
    }
}

/// What a server answers from. Every method may block (storage, decompression): the server
/// calls them on the blocking pool.
pub trait Backend: Send + Sync + 'static {
    /// Who may read: the API requires the bearer token when [`Access::check`] refuses a read.
    fn access(&self) -> &Access;
    /// The rule set of requests that name none.
    fn default_rules(&self) -> RuleSet;
    /// A position's value and every legal move's value.
    fn probe(&self, rules: RuleSet, fen: &str) -> Result<ProbeReport, ApiError>;
    /// Every position of a batch, each answered on its own (the server refuses batches of more
    /// than [`app::MAX_PROBE_BATCH`] positions before calling this).
    fn probe_batch(
        &self,
        rules: RuleSet,
        fens: &[String],
    ) -> Result<Vec<Result<ProbeReport, ApiError>>, ApiError> {
        Ok(fens.iter().map(|fen| self.probe(rules, fen)).collect())
    }
    /// The main line from a position.
    fn mainline(&self, rules: RuleSet, fen: &str) -> Result<MainlineReport, ApiError>;
    /// A mate search from a position, within `limits` capped by the server's (see
    /// [`app::Searches::run`]); `control` stops it early. 503 when the server runs as many
    /// searches as it allows.
    fn search(
        &self,
        rules: RuleSet,
        fen: &str,
        limits: &SearchLimits,
        control: &Control,
    ) -> Result<SearchAnswer, ApiError>;
    /// Every stored table.
    fn tables(&self) -> Result<Vec<TableSummary>, ApiError>;
    /// The server's state, as `/api/v1/status` shows it; `uptime` is the HTTP server's.
    fn status(&self, uptime: Duration) -> Result<serde_json::Value, ApiError>;
}

fn summaries(store: &dyn TableStore) -> Result<Vec<TableSummary>, ApiError> {
    Ok(store.list_tables()?.iter().map(TableSummary::of).collect())
}

fn to_json(v: &impl Serialize) -> Result<serde_json::Value, ApiError> {
    serde_json::to_value(v).map_err(|e| ApiError::internal(e.to_string()))
}

/// A local directory of tables (a sled store or shard files), for `xqtb serve`.
pub struct LocalBackend {
    tablebase: Tablebase,
    access: Access,
    default_rules: RuleSet,
    searches: Searches,
}

impl LocalBackend {
    /// Serves `tablebase`; `default_rules` for requests that name no rule set.
    pub fn new(tablebase: Tablebase, access: Access, default_rules: RuleSet) -> LocalBackend {
        LocalBackend {
            tablebase,
            access,
            default_rules,
            searches: Searches::new(),
        }
    }
}

/// `/api/v1/status` of `xqtb serve`.
#[derive(Serialize)]
struct LocalStatus {
    server: &'static str,
    version: &'static str,
    uptime_seconds: f64,
    default_rules: &'static str,
    source: String,
    tables: usize,
    tables_served: Vec<TableName>,
    block_lookups: u64,
    blocks_loaded: u64,
}

#[derive(Serialize)]
struct TableName {
    table: String,
    rules: &'static str,
}

impl Backend for LocalBackend {
    fn access(&self) -> &Access {
        &self.access
    }

    fn default_rules(&self) -> RuleSet {
        self.default_rules
    }

    fn probe(&self, rules: RuleSet, fen: &str) -> Result<ProbeReport, ApiError> {
        Ok(ProbeReport::from(&self.tablebase.probe_fen(rules, fen)?))
    }

    fn mainline(&self, rules: RuleSet, fen: &str) -> Result<MainlineReport, ApiError> {
        Ok(MainlineReport::from(
            &self.tablebase.mainline_fen(rules, fen)?,
        ))
    }

    fn search(
        &self,
        rules: RuleSet,
        fen: &str,
        limits: &SearchLimits,
        control: &Control,
    ) -> Result<SearchAnswer, ApiError> {
        Ok(self
            .searches
            .run(Some(&self.tablebase), rules, fen, limits, control)?)
    }

    fn tables(&self) -> Result<Vec<TableSummary>, ApiError> {
        summaries(&**self.tablebase.store())
    }

    fn status(&self, uptime: Duration) -> Result<serde_json::Value, ApiError> {
        let store = self.tablebase.store();
        let headers = store.list_tables()?;
        to_json(&LocalStatus {
            server: "serve",
            version: env!("CARGO_PKG_VERSION"),
            uptime_seconds: uptime.as_secs_f64(),
            default_rules: self.default_rules.name(),
            source: store.describe(),
            tables: headers.len(),
            tables_served: headers
                .iter()
                .map(|h| TableName {
                    table: h.signature.name(),
                    rules: h.rules.name(),
                })
                .collect(),
            block_lookups: self.tablebase.block_lookups(),
            blocks_loaded: self.tablebase.blocks_loaded(),
        })
    }
}

/// A running coordinator's application layer, for `xqtb coordinator --http-listen`: probes and
/// searches go through [`App::probe`], [`App::mainline`] and [`App::search`] (the calls gRPC
/// makes), the status is [`App::status`].
pub struct CoordinatorBackend(pub Arc<App>);

/// `/api/v1/status` of a coordinator.
#[derive(Serialize)]
struct CoordinatorStatus {
    server: &'static str,
    version: &'static str,
    uptime_seconds: f64,
    default_rules: &'static str,
    jobs: JobCounts,
    entries_done: u64,
    entries_total: u64,
    entries_per_second: f64,
    eta_seconds: Option<f64>,
    tables: usize,
    table_list: Vec<TableJson>,
    job_list: Vec<JobJson>,
    workers: Vec<WorkerJson>,
}

/// A planned table's progress: its jobs (one, or one per pawn slice) by state.
#[derive(Serialize)]
struct TableJson {
    table: String,
    rules: &'static str,
    state: &'static str,
    jobs: u32,
    finished_jobs: u32,
    leased_jobs: u32,
    ready_jobs: u32,
    failed_jobs: u32,
    entries_total: u64,
    entries_done: u64,
}

#[derive(Serialize)]
struct JobCounts {
    waiting: u32,
    ready: u32,
    leased: u32,
    finished: u32,
    failed: u32,
}

#[derive(Serialize)]
struct JobJson {
    table: String,
    rules: &'static str,
    slots: String,
    state: &'static str,
    attempts: u32,
    worker: Option<String>,
    progress: f64,
    last_error: Option<String>,
    memory_bytes: u64,
    unholdable: Option<String>,
    share: Option<ShareJson>,
}

/// A job several workers share, as gRPC's `ShareStatus` says it.
#[derive(Serialize)]
struct ShareJson {
    seats: usize,
    seat_workers: Vec<Option<String>>,
    pass: Option<String>,
    bytes_relayed: u64,
    bytes_held: u64,
    replacements: u32,
}

#[derive(Serialize)]
struct WorkerJson {
    worker_id: String,
    name: String,
    threads: u32,
    memory_bytes: Option<u64>,
    resident_bytes: Option<u64>,
    current_job: Option<String>,
    progress: f64,
    phase: String,
    last_seen_ms_ago: u64,
    quarantined: Option<String>,
}

impl Backend for CoordinatorBackend {
    fn access(&self) -> &Access {
        self.0.access()
    }

    fn default_rules(&self) -> RuleSet {
        self.0.default_rules()
    }

    fn probe(&self, rules: RuleSet, fen: &str) -> Result<ProbeReport, ApiError> {
        Ok(self.0.probe(rules, fen)?)
    }

    fn probe_batch(
        &self,
        rules: RuleSet,
        fens: &[String],
    ) -> Result<Vec<Result<ProbeReport, ApiError>>, ApiError> {
        Ok(self
            .0
            .probe_batch(rules, fens)?
            .into_iter()
            .map(|r| r.map_err(ApiError::from))
            .collect())
    }

    fn mainline(&self, rules: RuleSet, fen: &str) -> Result<MainlineReport, ApiError> {
        Ok(self.0.mainline(rules, fen)?)
    }

    fn search(
        &self,
        rules: RuleSet,
        fen: &str,
        limits: &SearchLimits,
        control: &Control,
    ) -> Result<SearchAnswer, ApiError> {
        Ok(self.0.search(rules, fen, limits, control)?)
    }

    fn tables(&self) -> Result<Vec<TableSummary>, ApiError> {
        summaries(&**self.0.store())
    }

    fn status(&self, uptime: Duration) -> Result<serde_json::Value, ApiError> {
        let s = self.0.status();
        let tables = self.0.store().list_tables()?.len();
        to_json(&CoordinatorStatus {
            server: "coordinator",
            version: env!("CARGO_PKG_VERSION"),
            uptime_seconds: uptime.as_secs_f64(),
            default_rules: self.0.default_rules().name(),
            jobs: JobCounts {
                waiting: s.waiting,
                ready: s.ready,
                leased: s.leased,
                finished: s.finished,
                failed: s.failed,
            },
            entries_done: s.entries_done,
            entries_total: s.entries_total,
            entries_per_second: s.entries_per_second,
            eta_seconds: s.eta_seconds,
            tables,
            table_list: s
                .tables
                .iter()
                .map(|t| TableJson {
                    table: t.table.signature.name(),
                    rules: t.table.rules.name(),
                    state: t.state(),
                    jobs: t.jobs,
                    finished_jobs: t.finished,
                    leased_jobs: t.leased,
                    ready_jobs: t.ready,
                    failed_jobs: t.failed,
                    entries_total: t.entries_total,
                    entries_done: t.entries_done,
                })
                .collect(),
            job_list: s
                .jobs
                .iter()
                .map(|j| JobJson {
                    table: j.key.table.signature.name(),
                    rules: j.key.table.rules.name(),
                    slots: j.key.slots.to_string(),
                    state: j.state.name(),
                    attempts: j.attempts,
                    worker: j.worker.clone(),
                    progress: if j.state == JobState::Finished {
                        1.0
                    } else {
                        j.progress
                    },
                    last_error: j.last_error.clone(),
                    memory_bytes: j.memory_bytes,
                    unholdable: j.unholdable.clone(),
                    share: j.share.as_ref().map(|s| ShareJson {
                        seats: s.seats,
                        seat_workers: s.seat_workers.clone(),
                        pass: s.pass.map(|p| p.to_string()),
                        bytes_relayed: s.bytes_relayed,
                        bytes_held: s.bytes_held,
                        replacements: s.replacements,
                    }),
                })
                .collect(),
            workers: s
                .workers
                .iter()
                .map(|w| WorkerJson {
                    worker_id: w.worker_id.clone(),
                    name: w.name.clone(),
                    threads: w.threads,
                    memory_bytes: w.memory_bytes,
                    resident_bytes: w.resident_bytes,
                    current_job: w.current_job.map(|k| k.to_string()),
                    progress: w.progress,
                    phase: w.phase.clone(),
                    last_seen_ms_ago: w.last_seen_ms_ago,
                    quarantined: w.quarantined.clone(),
                })
                .collect(),
        })
    }
}
