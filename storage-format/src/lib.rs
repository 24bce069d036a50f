//! The storage of xqtb tables: the value codec (fixed-size blocks of values, each compressed by
//! zstd, under a header that describes and checksums everything), the self-describing shard file,
//! and the stores that hold tables ([`TableStore`]: a sled database, a directory of shard files).
//! The sled database also keeps small records for the coordinator ([`RecordTree`]).
//!
//! Depends on the table model (`xqtb-core`); knows nothing of solving, probing, gRPC or async
//! runtimes.
//!
//! ```
//! use storage_format::{decode_table, encode_table, read_shard, write_shard};
//! use xqtb_core::RuleSet;
//! let sig = "KRvK".parse().unwrap();
//! let tables = solver_free_table(sig);
//! # fn solver_free_table(sig: xqtb_core::Signature) -> xqtb_core::Table {
//! #     // A table whose every legal slot is a draw: enough to show the round trip.
//! #     let index = xqtb_core::TableIndex::new(sig);
//! #     let n = index.size() as usize;
//! #     let codes = [0, 1].map(|side| {
//! #         (0..n as u64)
//! #             .map(|slot| match index.legal_sides(slot)[side] {
//! #                 true => xqtb_core::Value::DRAW_CODE,
//! #                 false => xqtb_core::Value::ILLEGAL_CODE,
//! #             })
//! #             .collect::<Vec<u16>>()
//! #     });
//! #     xqtb_core::Table::new(index, RuleSet::CyclesAreDraws, codes)
//! # }
//! let encoded = encode_table(&tables);
//! let bytes = write_shard(&encoded);
//! let back = decode_table(&read_shard(&bytes).unwrap()).unwrap();
//! assert_eq!(back.codes(xiangqi::Color::Red), tables.codes(xiangqi::Color::Red));
//! ```

#![warn(missing_docs)]

pub mod codec;
mod io_error;
pub mod shard;
pub mod store;

pub use codec::{CodecParams, EncodedTable, TableHeader, decode_table, encode_table};
pub use shard::{ShardError, read_shard, write_shard};
pub use store::{
    IoError, RecordTree, ShardDir, SledStore, StoreError, TableStore, load_into_memory, store_name,
};
