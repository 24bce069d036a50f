//! Receiving a shard file streamed in chunks (`FetchTable`, `DownloadShard`).

use proto::v1::ShardChunk;
use storage_format::shard;
use xqtb_core::TableId;

/// Why a streamed shard was not accepted.
#[derive(Debug, thiserror::Error)]
pub enum ShardReceiveError {
    /// The stream broke off.
    #[error("download failed: {}: {}", .0.code(), .0.message())]
    Transport(#[from] tonic::Status),
    /// Nothing arrived.
    #[error("empty download of {0}")]
    Empty(TableId),
    /// The length differs from the announced one.
    #[error("download of {table} has {got} bytes, expected {want}")]
    Length {
        /// The table.
        table: TableId,
        /// Bytes received.
        got: u64,
        /// Bytes announced.
        want: u64,
    },
    /// The bytes fail the announced checksum.
    #[error("download of {0} fails its checksum")]
    Checksum(TableId),
}

/// Collects a streamed shard file (from `FetchTable` or `DownloadShard`) and checks it against the
/// length and CRC-32 announced in its first chunk. `progress(received, total)` sees each chunk.
pub async fn receive_shard(
    stream: &mut tonic::Streaming<ShardChunk>,
    table: &TableId,
    mut progress: impl FnMut(u64, u64),
) -> Result<Vec<u8>, ShardReceiveError> {
    let mut bytes = Vec::new();
    let mut expected = None;
    while let Some(chunk) = stream.message().await? {
        let (total, _) = *expected.get_or_insert((chunk.total_bytes, chunk.file_checksum));
        if bytes.is_empty() {
            bytes.reserve(total as usize);
        }
        bytes.extend_from_slice(&chunk.data);
        progress(bytes.len() as u64, total);
    }
    let (want, sum) = expected.ok_or(ShardReceiveError::Empty(*table))?;
    if bytes.len() as u64 != want {
        return Err(ShardReceiveError::Length {
            table: *table,
            got: bytes.len() as u64,
            want,
        });
    }
    if shard::file_checksum(&bytes) != sum {
        return Err(ShardReceiveError::Checksum(*table));
    }
    Ok(bytes)
}
