//! The table model of xqtb: what a table is, independent of how it is solved, stored or served.
//!
//! - [`Signature`] and [`Material`]: which pieces each side has, in the canonical spelling, and
//!   the capture dependencies between tables ([`closure_of`]).
//! - [`TableIndex`]: the perfect-hash index between a material's placements and the slots
//!   `0..size` (mirror images folded, identical pieces combined).
//! - [`Value`]: win, draw or loss with the distance to mate in plies, and its two-byte code.
//! - [`RuleSet`]: how a game that never ends is judged.
//! - [`Table`], [`MemoryTables`] and the [`Probe`] trait: solved tables in memory and the lookup
//!   of any position; [`Orientation`] turns a position into its canonical table's orientation.
//!   [`Codes`]: a table's values for one side to move, a byte each when the table has few.
//! - [`TableId`], [`SlotRange`], [`JobKey`]: names of tables, ranges of slots and jobs.
//! - [`TableCounts`]: the counts of a table's positions by value.
//! - [`count`]: the exact number of placements of any material.
//! - [`JobCost`]: a job's memory, stored size and CPU time, estimated from its size.
//!
//! Pure: no I/O, no async, no storage format. It depends only on the rules crate (`xiangqi`);
//! everything else in the workspace depends on it.
//!
//! ```
//! use xqtb_core::{Signature, TableIndex};
//! let sig: Signature = "krnkr".parse().unwrap();
//! assert_eq!(sig.name(), "KRNvKR");
//! let names: Vec<String> = sig.closure().iter().map(|s| s.name()).collect();
//! assert_eq!(names, ["KNvK", "KRvK", "KRNvK", "KRvKN", "KRvKR", "KRNvKR"]);
//! // Every slot decodes to a placement that encodes back to it.
//! let index = TableIndex::new("KRvK".parse().unwrap());
//! let mut squares = [0u8; xqtb_core::MAX_PIECES];
//! index.decode(123, &mut squares);
//! assert_eq!(index.encode(&squares[..index.piece_count()]), Some(123));
//! ```

#![warn(missing_docs)]

mod blocks;
mod codes;
mod cost;
pub mod count;
mod counts;
mod index;
mod key;
mod rules;
mod signature;
mod table;
mod value;

pub use blocks::BlockSource;
pub use codes::{CodeSet, Codes, Narrowing, prefetch};
pub use cost::{
    BASE_BYTES, DEPENDENCY_CACHE_BYTES, GROUP_BYTES, JobCost, TABLE_BYTES_PER_ENTRY,
    memory_for_jobs, verify_cache_bytes,
};
pub use counts::{SideCounts, TableCounts};
pub use index::{
    MAX_PIECES, SCHEME_SLICED, SCHEME_WHOLE, SLICE_ALIGN, Shifts, Slice, SlotError, SlotRange,
    TableIndex,
};
pub use key::{JobKey, TableId, closure_of_tables};
pub use rules::{MoveReading, RuleSet, UnknownRuleSet};
pub use signature::{Limits, Material, Signature, SignatureError, closure_of};
pub use table::{Location, MemoryTables, Orientation, Probe, ProbeError, Table};
pub use value::{Plies, Rule, RuleValue, Value};
