//! The HTTP side of xqtb: a JSON API for people and programs that look positions up
//! (`/api/v1/probe`, `/api/v1/mainline`, `/api/v1/search`, `/api/v1/tables`, `/api/v1/status`)
//! and the web page at `/`, whose files are embedded in the binary. The answers are the probing
//! and search libraries' serde reports ([`probe::ProbeReport`], [`probe::MainlineReport`],
//! [`search::SearchReport`]), the same ones `xqtb probe --json`, `xqtb search --json` and the
//! gRPC service show, so every field means the same everywhere.
//!
//! - [`backend`]: what a server answers from: a local directory of tables or shard files
//!   ([`LocalBackend`]) or a running coordinator's application layer ([`CoordinatorBackend`]),
//!   and the mapping of their errors to HTTP statuses ([`ApiError`]);
//! - [`server`]: the axum router, its guards (read token, CORS, URI length, concurrency limit,
//!   timeout) and starting and stopping the server ([`HttpServer`]);
//! - [`assets`]: the web page's files.
//!
//! Probing and searching are blocking work (sled, zstd, the search's threads): they run on
//! tokio's blocking pool, never on the async executor threads. Depends on the probing and
//! search libraries, the storage and table model, and the application layer ([`app`], through
//! which the solver's sample check of uploads comes in); never on the coordinator's gRPC
//! services, tonic or the protocol crate: the HTTP API is a shell over the same libraries as
//! gRPC, beside it, not over it, and a server of a directory of tables builds without any of
//! them (`tests/crate_graph.rs` keeps it so).

#![warn(missing_docs)]

pub mod assets;
pub mod backend;
pub mod server;

pub use backend::{ApiError, Backend, CoordinatorBackend, LocalBackend, TableSummary};
pub use server::{HttpConfig, HttpServer, router};
