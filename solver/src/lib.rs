//! The retrograde solver of xqtb and its independent verifier.
//!
//! [`solve`] computes win/draw/loss and the distance to mate of every slot of a table by
//! retrograde analysis, level by level, on all threads of the current rayon pool; the result is
//! identical bit for bit for any thread count. [`verify`] re-derives every value from its
//! successors by forward move generation, sharing nothing with the solver's backward step. A
//! table is only ever handed on verified ([`solve_and_verify`]).
//!
//! A table with pawns can also be solved a pawn slice at a time ([`solve_range`],
//! [`solve_and_verify_range`]): each slice is a job of its own whose pawn advances, like its
//! captures, are read from the slices solved before. [`solve_by_slices`] does that for a whole
//! table in a given order and gives the same table as [`solve`].
//!
//! A job too large for memory keeps its retrograde states on local disk a group at a time
//! ([`solve_range_in`] with [`StateStore::Groups`]), and under `cycles-are-draws` hands its
//! table on in parts ([`solve_range_in_parts`]; under `asian` as one part, the rule phase
//! taking the job whole). A table can be verified from its encoded blocks ([`verify_blocks`])
//! under either rule set, with the verdict of the whole table. Several workers can share such a job under
//! `cycles-are-draws`, each solving its own groups level by level and exchanging what crosses
//! between them ([`Share`], [`Exchange`]).
//!
//! Pure computation: depends on the rules (`xiangqi`) and the table model (`xqtb-core`) only,
//! never on storage, async runtimes or the network (local disk is behind the [`Scratch`]
//! trait, which the shells implement).
//!
//! The modules, lowest first (each uses only those before it):
//! - `position`: a job's slots, and a position of it as a board and as index squares, its
//!   moves' slots;
//! - `state` and `level_state`: the state of each position during a solve, every code named:
//!   two bytes through the rule phase, one through the retrograde levels; `level_share`: what
//!   the workers sharing a job exchange, `share_relay` the bookkeeping of their exchange
//!   (batches, barrier, log); `level_groups`: the level states of a job whole in
//!   memory or in groups on local disk, all of them or a sharing worker's;
//! - `capture`: the values of the moves that leave a job (captures, pawn advances into other
//!   slices);
//! - `retrograde`: the retrograde phase (values that end in mate);
//! - [`rules`] and `asian`: the repetition rules as a game on graphs, and the rule phase that
//!   applies them to a table (Asian rule set only);
//! - `table_codes` and `block_reader`: the table's codes as the verifier reads them, decoded
//!   whole or a block at a time;
//! - `solve`: one job, both phases; `share_in_process`: workers sharing a job on threads of
//!   one process; `verify` and `verify_rules`: the independent verifier;
//!   [`sample`]: spot checks of stored tables;
//! - `job`: solve-and-verify, and solving many jobs in memory.
//!
//! ```
//! use xqtb_core::{Probe, RuleSet, Signature, Value};
//! let sig: Signature = "KRvK".parse().unwrap();
//! let tables = solver::solve_closure_in_memory(&[sig], RuleSet::CyclesAreDraws, |_, _| {}).unwrap();
//! let board = xiangqi::parse_fen("3k5/9/9/9/9/9/9/9/9/R3K4 w").unwrap();
//! assert!(matches!(tables.probe(RuleSet::CyclesAreDraws, &board), Ok(Value::Win(_))));
//! ```

#![warn(missing_docs)]

mod asian;
mod block_reader;
mod capture;
mod error;
mod job;
mod level_groups;
mod level_share;
mod level_state;
mod position;
mod progress;
mod retrograde;
pub mod rules;
pub mod sample;
mod share_in_process;
mod share_relay;
mod slices;
mod solve;
mod state;
mod table_codes;
mod verify;
mod verify_rules;

pub use block_reader::Legal;
pub use error::{JobError, SolveError, VerifyError};
pub use job::{solve_and_verify, solve_and_verify_range, solve_by_slices, solve_closure_in_memory};
pub use level_groups::{Scratch, StateStore, group_count};
pub use level_share::{BATCH_WORDS, Exchange, Pass, Sends, Share, Updates};
pub use progress::Progress;
pub use share_in_process::{SharedRun, solve_shared_in_process};
pub use share_relay::{LogRef, LogStore, PassTraffic, Relay, RelayBatch, RelayError};
pub use slices::SliceDeps;
pub use solve::{solve, solve_range, solve_range_in, solve_range_in_parts};
pub use verify::{verify, verify_blocks, verify_blocks_of_worker, verify_reporting};

/// Slots handed to one parallel task by the solver and the verifier: large enough to amortise
/// scheduling, small enough to balance two threads on the smallest tables.
pub const CHUNK_SLOTS: u64 = 1 << 13;
