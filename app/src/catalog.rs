//! The catalog of committed tables: their listing, and their shard files (whole tables, and the
//! committed slices of a table still solved slice by slice) for downloads and for workers'
//! dependencies.

use crate::app::App;
use crate::error::AppError;
use serde::Serialize;
use storage_format::shard;
use storage_format::store::{StoreError, TableStore};
use xqtb_core::{SlotRange, TableCounts, TableId};

/// A committed table's shard file.
#[derive(Clone, Debug)]
pub struct ShardFile {
    /// The file's bytes.
    pub bytes: Vec<u8>,
    /// Its CRC-32 ([`shard::file_checksum`]).
    pub checksum: u32,
}

/// A finished table, as listings show it.
#[derive(Clone, Debug, Serialize)]
pub struct ShardSummary {
    /// The table.
    #[serde(serialize_with = "ser_table")]
    pub table: TableId,
    /// Slots per side to move.
    pub index_size: u64,
    /// Counts per side to move.
    #[serde(skip)]
    pub counts: TableCounts,
    /// Length of the shard file in bytes.
    pub shard_bytes: u64,
    /// CRC-32 of the shard file (0 when it could not be read).
    pub file_checksum: u32,
}

fn ser_table<S: serde::Serializer>(t: &TableId, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&t.signature.name())
}

impl App {
    /// The shard file of a committed table.
    pub fn shard(&self, table: &TableId) -> Result<ShardFile, AppError> {
        let bytes = self.store.export_shard(table)?;
        let checksum = shard::file_checksum(&bytes);
        self.checksums
            .lock()
            .expect("lock")
            .insert(*table, checksum);
        Ok(ShardFile { bytes, checksum })
    }

    /// The part shard of the committed slices `slots` of a table still being solved slice by
    /// slice (what a worker's slice job reads).
    pub fn part_shard(&self, table: &TableId, slots: SlotRange) -> Result<ShardFile, AppError> {
        let part = self.store.load_part(table, slots.start)?;
        if part.header.slots != slots {
            return Err(AppError::from(StoreError::Missing {
                table: *table,
                store: format!("{} (no part of slots {slots})", self.store.describe()),
            }));
        }
        let bytes = shard::write_shard(&part);
        let checksum = shard::file_checksum(&bytes);
        Ok(ShardFile { bytes, checksum })
    }

    /// The shard-file checksum of a committed table, computed once.
    fn shard_checksum(&self, table: &TableId) -> Result<u32, AppError> {
        if let Some(c) = self.checksums.lock().expect("lock").get(table) {
            return Ok(*c);
        }
        Ok(self.shard(table)?.checksum)
    }

    /// Every committed table.
    pub fn list_shards(&self) -> Result<Vec<ShardSummary>, AppError> {
        let headers = self.store.list_tables()?;
        Ok(headers
            .iter()
            .map(|h| ShardSummary {
                table: h.id(),
                index_size: h.index_size,
                counts: h.counts,
                shard_bytes: shard::shard_len_of(h),
                file_checksum: self.shard_checksum(&h.id()).unwrap_or(0),
            })
            .collect())
    }
}
