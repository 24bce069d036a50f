//! The I/O error every part of the storage reports: the operating system's error with what was
//! being done (its own module, so that the shard file and the stores share it without
//! depending on each other).

use std::sync::Arc;
use thiserror::Error;

/// An I/O failure, with what was being done when it happened.
#[derive(Debug, Clone, Error)]
#[error("{context}: {source}")]
pub struct IoError {
    /// What was being done, e.g. `reading ./shards/KRvK.xqtb`.
    pub context: String,
    /// The operating system's error.
    #[source]
    pub source: Arc<std::io::Error>,
}

impl IoError {
    /// `source` while doing `context`.
    pub fn new(context: impl Into<String>, source: std::io::Error) -> IoError {
        IoError {
            context: context.into(),
            source: Arc::new(source),
        }
    }
}

impl PartialEq for IoError {
    fn eq(&self, other: &IoError) -> bool {
        self.context == other.context && self.source.kind() == other.source.kind()
    }
}

impl Eq for IoError {}
