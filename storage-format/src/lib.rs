//! Material signatures, the perfect-hash index over each table's positions, exact position
//! counting, the value encoding, solved tables with position lookup, and their storage: the
//! block codec, shard files, the sled store and the probing library.

pub mod codec;
pub mod count;
pub mod index;
pub mod probe;
pub mod shard;
pub mod signature;
pub mod store;
pub mod table;
pub mod value;

pub use codec::{CodecParams, EncodedTable, TableHeader, decode_table, encode_table};
pub use index::TableIndex;
pub use probe::{MainLine, MoveInfo, ProbeResult, Tablebase};
pub use shard::{ShardError, read_shard, write_shard};
pub use signature::{Limits, Material, Signature, SignatureError, closure_of};
pub use store::{RecordTree, ShardDir, SledStore, StoreError, TableStore};
pub use table::{MemoryTables, Probe, ProbeError, Table};
pub use value::{RuleSet, Value};
