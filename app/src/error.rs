//! Why a request was refused or failed: one error type for every operation, which each front
//! end maps to its own statuses (gRPC codes, HTTP statuses).

use crate::scheduler::LeaseError;
use storage_format::store::StoreError;
use thiserror::Error;
use xqtb_core::ProbeError;

/// Why a request was refused or failed.
#[derive(Debug, Error)]
pub enum AppError {
    /// No token, or the wrong one.
    #[error("{0}")]
    Unauthenticated(&'static str),
    /// The request is malformed (bad signature, rule set, job key, size).
    #[error("{0}")]
    BadRequest(String),
    /// The lease is not current, or is for another job.
    #[error(transparent)]
    Lease(#[from] LeaseError),
    /// An upload failed its checks; the job was handed back to the queue.
    #[error("{0}")]
    UploadRefused(String),
    /// A probe failed (bad FEN, missing table, damaged storage).
    #[error(transparent)]
    Probe(#[from] ProbeError),
    /// The store failed or lacks a table.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Persisting the job records failed.
    #[error("cannot save job state: {0}")]
    Persist(String),
    /// The server runs as much of this kind of work as it allows at once (searches); the
    /// request was not queued and may be sent again shortly.
    #[error("{0}")]
    Busy(String),
    /// A search found a proof that did not survive its check: nothing is claimed. A fault of
    /// the server (or its tables), not of the request.
    #[error("{0}")]
    SearchFailed(String),
    /// A call about a shared job was refused (no such seat, the job given up, a replacement
    /// that sent other updates).
    #[error(transparent)]
    Share(#[from] crate::shares::ShareError),
}
