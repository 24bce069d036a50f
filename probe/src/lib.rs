//! The probing library of xqtb: a position's value, every legal move's value and the main line,
//! read from any [`storage_format::store::TableStore`] (the sled store, a directory of shard
//! files) through a cache of decompressed blocks, and the serde reports every interface shows.
//!
//! It knows nothing of gRPC, HTTP or async runtimes; the coordinator's services and the command
//! line are thin shells around it.
//!
//! ```no_run
//! use probe::{ProbeReport, Tablebase};
//! use xqtb_core::RuleSet;
//! let tb = Tablebase::open_sled("./xqtb-data")?;
//! let r = tb.probe_fen(RuleSet::CyclesAreDraws, "5k3/9/9/9/9/R8/9/4n4/9/3K5 w")?;
//! println!("{}", serde_json::to_string(&ProbeReport::from(&r))?);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![warn(missing_docs)]

mod prober;
mod report;

pub use prober::{DEFAULT_CACHE_BYTES, LineEnd, MainLine, MoveInfo, ProbeResult, Tablebase};
pub use report::{Category, MainlineReport, MoveReport, ProbeReport, RuleName, Side, value_text};
