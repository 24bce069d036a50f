//! The xqtb coordinator: plans the dependency graph of tables, leases jobs to workers, commits
//! their uploads, and serves queries and downloads.

pub mod scheduler;
pub mod server;
pub mod service;

pub use scheduler::{Grant, JobRecord, JobState, Lease, LeaseError, Scheduler, SchedulerConfig};
pub use server::{Coordinator, CoordinatorConfig};
pub use service::Access;
