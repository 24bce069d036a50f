//! Mate search beyond the tables: proves forced wins from positions with more pieces than any
//! stored table, reading every position whose material is stored as a leaf with its exact value
//! and distance.
//!
//! The search is a depth-first proof-number search (df-pn, module `prover`) bounded
//! by a number of plies and deepened one ply at a time, so the first win proven is the shortest
//! (module `deepening`). Proof and disproof numbers live in a transposition table
//! of fixed size keyed by Zobrist keys (module `transposition`). Repetitions on
//! a line are judged by [`xiangqi::repetition`] under the rule set, so a line that wins by the
//! Asian repetition rules is a win here too. Before a win is reported its proof is replayed
//! against the move generator and the tables (module `proof`); the answer's distance
//! is the replayed one. A position whose own material is stored is answered from its table.
//!
//! ```no_run
//! use search::{Control, Limits, search};
//! let tb = probe::Tablebase::open_sled("xqtb-data").unwrap();
//! let board = xiangqi::parse_fen("3k5/9/9/9/9/9/9/9/4R4/4K4 w").unwrap();
//! let r = search(Some(&tb), xqtb_core::RuleSet::Asian, &board, &Limits::default(), &Control::new())
//!     .unwrap();
//! println!("{} in {:?} plies", r.outcome.name(), r.plies);
//! ```

#![warn(missing_docs)]

mod answer;
mod deepening;
mod error;
mod limits;
mod plan;
mod proof;
mod prover;
mod report;
mod transposition;
mod zobrist;

pub use answer::{LineMove, Outcome, SearchResult, Source};
pub use deepening::{MAX_THREADS, MIN_HASH_BYTES, search};
pub use error::SearchError;
pub use limits::{Control, Limits, MAX_PLIES, Progress, StopReason};
pub use report::{LineMoveReport, SearchReport};
