//! What can go wrong in a search.

use xqtb_core::ProbeError;

/// Why a search gave no answer. Running out of limits is not an error: the answer is then
/// `unknown`.
#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    /// The FEN does not parse or describes a position that cannot occur.
    #[error("bad FEN: {0}")]
    BadFen(String),
    /// The limits asked for cannot be met.
    #[error("invalid limits: {0}")]
    Limits(String),
    /// A table could not be read, or its values contradict their own moves.
    #[error(transparent)]
    Probe(#[from] ProbeError),
    /// The proof the search found did not survive being replayed against the move generator and
    /// the tables, so it is not reported.
    #[error("the proof found could not be confirmed ({0}); nothing is claimed")]
    ProofRejected(String),
}
