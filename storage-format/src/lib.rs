//! Material signatures, the perfect-hash index over each table's positions, exact position
//! counting, the value encoding, and solved tables with position lookup.

pub mod count;
pub mod index;
pub mod signature;
pub mod table;
pub mod value;

pub use index::TableIndex;
pub use signature::{Limits, Material, Signature, SignatureError, closure_of};
pub use table::{MemoryTables, Probe, ProbeError, Table};
pub use value::{RuleSet, Value};
