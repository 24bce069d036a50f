//! The xqtb coordinator: plans the dependency graph of tables, leases jobs to workers, commits
//! their uploads, and serves queries and downloads.
//!
//! - [`app`]: the application layer, every operation with typed results and errors, no
//!   transport types;
//! - [`scheduler`]: the pure job scheduler (time passed in, records to persist handed back);
//! - [`grpc`]: the gRPC services, thin shells over the application layer;
//! - [`server`]: starting and stopping the server with health, reflection and the expiry tick;
//! - [`simulate`]: a run of a plan with the real scheduler and estimated job times.
//!
//! Depends on the table model, the storage and probing libraries and the protocol, and on the
//! solver only for its one-ply check of a sample of every upload ([`solver::sample`]): workers
//! solve, the coordinator checks and stores.

#![warn(missing_docs)]

pub mod app;
pub mod grpc;
pub mod scheduler;
pub mod server;
pub mod simulate;

pub use app::{
    Access, App, AppError, Limits, MAX_PROBE_BATCH, StatusReport, TableReport, human_bytes,
};
pub use scheduler::{
    DEFAULT_SLICE_FROM_ENTRIES, Grant, JobRecord, JobState, Lease, LeaseError, Scheduler,
    SchedulerConfig,
};
pub use server::{Coordinator, CoordinatorConfig};
