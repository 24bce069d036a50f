//! The xqtb application layer: everything the coordinator does, with typed results and errors
//! and no transport types. It plans the dependency graph of tables, leases jobs to workers,
//! checks and commits their uploads, and answers queries, listings, downloads and the status.
//! The gRPC services (`coordinator`) and the HTTP API (`xqtb-http`) are thin shells over it:
//! they authenticate, parse, call one [`App`] method and map the result or the [`AppError`].
//!
//! Its modules, from the bottom up (a module imports only those above it in this list):
//!
//! - [`scheduler`]: the pure job scheduler (jobs keyed by table or pawn slice, leases, retries;
//!   time passed in, records to persist handed back); [`simulate`]: a run of a plan with that
//!   scheduler and estimated job times (`xqtb plan --workers`);
//! - `error.rs` ([`AppError`]), `access.rs` ([`Access`], the token), `limits.rs` ([`Limits`],
//!   the longest upload a table's shard can be, the largest probe batch, the caps of a search),
//!   `telemetry.rs` (the metrics' descriptions), `memory.rs` (handing freed memory back);
//! - `searches.rs`: mate searches as a server runs them ([`Searches`]: the caps of a request,
//!   at most [`MAX_SEARCHES`] at once), for the coordinator and `xqtb serve` alike;
//! - `jobs.rs`: the scheduler behind its lock, with its records persisted in the store;
//!   `workers.rs`: the worker registry and quarantine; `shares.rs`: the jobs shared by several
//!   workers at once (their seats, and the relay of their updates), as `share_policy.rs` says
//!   which jobs are shared and how long they take;
//! - `app.rs`: the [`App`] type, its state and how it is opened on a store;
//! - the operations, each an `impl App` block in the module of its concern: `leases.rs`
//!   (planning, registering, leasing, heartbeats, failures, expiry), `sharing.rs` (what the
//!   workers sharing a job send and wait for), `uploads.rs` (the checks of
//!   an upload and its commit), `catalog.rs` (listing committed tables, their shard files),
//!   `queries.rs` (probes, main lines and searches), `status.rs` (the status report and the
//!   gauges).
//!
//! [`App`] stays one type: every front end holds one `Arc<App>` and calls its operations, which
//! share one lock order (the scheduler's, then the registry's) and persist job records the same
//! way. What has invariants of its own is a type of its own beneath it (the job records and the
//! scheduler, the worker registry), so that the operations read as the steps they take.
//!
//! Depends on the table model, the storage, probing and search libraries, and on the solver only
//! for its one-ply check of a sample of every upload ([`solver::sample`]) and the bookkeeping of
//! a shared job's exchange ([`solver::Relay`]): workers solve, the coordinator checks, relays
//! and stores. Never on gRPC, the protocol crate, an HTTP stack or an async runtime (a call
//! waiting for a shared job's pass gets a runtime-free one-shot receiver to await).

#![warn(missing_docs)]

mod access;
mod app;
mod catalog;
mod error;
mod jobs;
mod leases;
mod limits;
mod memory;
mod queries;
pub mod scheduler;
mod searches;
mod share_log;
pub mod share_policy;
mod shares;
mod sharing;
pub mod simulate;
mod status;
mod telemetry;
mod uploads;
mod workers;

pub use access::Access;
pub use app::App;
pub use catalog::{ShardFile, ShardSummary};
pub use error::AppError;
pub use leases::LeaseOutcome;
pub use limits::{
    DEFAULT_SEARCH_HASH_MIB, DEFAULT_SEARCH_PLIES, DEFAULT_SEARCH_THREADS, Limits, MAX_PROBE_BATCH,
    MAX_SEARCH_HASH_MIB, MAX_SEARCH_NODES, MAX_SEARCH_PLIES, MAX_SEARCH_THREADS, MAX_SEARCH_TIME,
    MAX_SEARCHES, MAX_SHARE_BATCH_BYTES, MAX_UPLOAD_BYTES, check_batch_len, max_shard_bytes,
};
pub use searches::{AppliedLimits, CancelOnDrop, SearchAnswer, SearchLimits, Searches};
pub use share_policy::Sharing;
pub use shares::{PassEnd, Seat, ShareError, ShareReport};
pub use sharing::pass_of;
pub use solver::{Pass, RelayError};
pub use status::{JobReport, StatusReport, TableReport, human_bytes};
pub use telemetry::register_metrics;
pub use workers::{Registration, WorkerReport};
