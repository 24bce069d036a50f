//! The limits that keep one client from holding the server: the longest upload a table's shard
//! can be, the largest probe batch, deadlines and stream limits ([`Limits`]), and how much of
//! every upload is checked again before it is committed.

use crate::error::AppError;
use solver::sample::SamplePolicy;
use std::time::Duration;

/// Largest upload accepted for any table: an upload is held in memory until it is committed.
pub const MAX_UPLOAD_BYTES: u64 = 4 << 30;

/// Largest batch of a shared job's exchange: a batch of [`solver::BATCH_WORDS`] words encoded
/// takes at most about 2.3 MiB, and a message must stay under gRPC's 4 MiB.
pub const MAX_SHARE_BATCH_BYTES: usize = 3 << 20;

/// Bytes a shard may take per entry (slot and side to move): three for the value uncompressed
/// (two in two-byte layouts; an indexed block of `n` values lists up to `n` two-byte codes
/// before its `n` one-byte indices; zstd stores a block that does not compress as it is, plus a
/// few bytes of framing), and two more for each block's framing (its zstd frame header and its
/// line in the block table), which covers every block of 32 values or more (the codec writes
/// 16,384).
const SHARD_BYTES_PER_ENTRY: u64 = 5;

/// Bytes a shard may take beside its blocks: preamble, header, checksums and a compression
/// dictionary.
const SHARD_FIXED_BYTES: u64 = 1 << 20;

/// The longest upload accepted for a table of `index_size` slots per side: more than its shard
/// file can take with any value layout and any block size of 32 values or more, and at most
/// [`MAX_UPLOAD_BYTES`]. An upload that announces more is refused before a byte of it is held.
pub fn max_shard_bytes(index_size: u64) -> u64 {
    index_size
        .saturating_mul(2 * SHARD_BYTES_PER_ENTRY)
        .saturating_add(SHARD_FIXED_BYTES)
        .min(MAX_UPLOAD_BYTES)
}

/// Most positions one probe batch may hold (gRPC `ProbeBatch`, HTTP `POST
/// /api/v1/probe-batch`): few enough that a full batch is answered well within the request
/// timeout, and that its answer (a few kilobytes per position: every legal move's value) stays
/// far below the 16 MiB message limit.
pub const MAX_PROBE_BATCH: usize = 1000;

/// Refuses a probe batch of `n` positions if it holds more than [`MAX_PROBE_BATCH`].
pub fn check_batch_len(n: usize) -> Result<(), AppError> {
    if n > MAX_PROBE_BATCH {
        return Err(AppError::BadRequest(format!(
            "a probe batch holds at most {MAX_PROBE_BATCH} positions; this one has {n} (split it)"
        )));
    }
    Ok(())
}

/// Longest time a search may run, and how long it runs when the request names no time: a
/// proof that takes longer is not what an interactive request is for (`xqtb search` runs without
/// these caps). It fits within the gRPC request timeout, and the HTTP server allows a search
/// this long beyond its own request timeout.
pub const MAX_SEARCH_TIME: Duration = Duration::from_secs(10);

/// Most positions one search may expand: bounds the work of a request on a machine fast enough
/// to expand more than that within [`MAX_SEARCH_TIME`].
pub const MAX_SEARCH_NODES: u64 = 20_000_000;

/// Most threads one search may run: two searches of two threads each keep at most four cores
/// busy, and leave the server's other work (probes, uploads) room on a larger machine.
pub const MAX_SEARCH_THREADS: usize = 2;

/// Threads a search runs when the request names none.
pub const DEFAULT_SEARCH_THREADS: usize = 1;

/// Largest transposition table of one search, in MiB: with [`MAX_SEARCHES`] at once, what
/// searches may hold stays a small part of a server's memory.
pub const MAX_SEARCH_HASH_MIB: u64 = 256;

/// The transposition table of a search whose request names none, in MiB.
pub const DEFAULT_SEARCH_HASH_MIB: u64 = 64;

/// Longest win a search may look for, in plies: a search runs out of [`MAX_SEARCH_TIME`] long
/// before it could prove anything deeper, except where the tables' distances carry it.
pub const MAX_SEARCH_PLIES: u16 = 63;

/// The longest win looked for when the request names none, in plies (as `xqtb search`).
pub const DEFAULT_SEARCH_PLIES: u16 = 41;

/// Searches one server runs at once. A search keeps its threads busy for up to
/// [`MAX_SEARCH_TIME`]; a request beyond these is refused at once as busy, to be tried again,
/// rather than queued behind them (a queue would only make every waiting request slower).
pub const MAX_SEARCHES: usize = 2;

/// What keeps one client from holding the server, and how much of every upload is checked
/// again before it is committed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Limits {
    /// Longest time a call may take until its answer starts (then DEADLINE_EXCEEDED). An
    /// upload is answered only after its last chunk, so uploads are bounded by
    /// `stream_idle_timeout` instead.
    pub request_timeout: Duration,
    /// Longest wait for the next chunk of an upload (then the job is handed back), and for a
    /// download's reader to take the next chunk (then the download ends).
    pub stream_idle_timeout: Duration,
    /// Size of the chunks a shard download is streamed in (well under tonic's 4 MiB message
    /// limit). With the reader's HTTP/2 window it bounds what a stalled download holds.
    pub download_chunk_bytes: usize,
    /// Calls one connection may have in progress at once; more wait for a free place.
    pub calls_per_connection: usize,
    /// Interval of HTTP/2 keepalive pings to each client; a connection whose client does not
    /// answer one within [`Limits::keepalive_timeout`] is closed, with its calls.
    pub keepalive_interval: Duration,
    /// How long to wait for the answer to a keepalive ping.
    pub keepalive_timeout: Duration,
    /// How much of every uploaded table is checked one ply deep before it is committed. Each
    /// upload's sample is drawn from a seed made of its lease id, so a retried job is checked on
    /// other positions, and the seed in a refusal's message reproduces the sample.
    pub sample: SamplePolicy,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            request_timeout: Duration::from_secs(30),
            stream_idle_timeout: Duration::from_secs(30),
            download_chunk_bytes: 512 * 1024,
            calls_per_connection: 256,
            keepalive_interval: Duration::from_secs(30),
            keepalive_timeout: Duration::from_secs(20),
            sample: SamplePolicy::DEFAULT,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use storage_format::shard;
    use xqtb_core::{RuleSet, TableId};

    #[test]
    fn real_shards_fit_the_upload_bound_with_any_layout_and_block_size() {
        use storage_format::codec::{CodecParams, LayoutChoice, ValueLayout, encode_table_with};
        let sig: xqtb_core::Signature = "KRvKA".parse().unwrap();
        let tables = solver::solve_closure_in_memory(&[sig], RuleSet::Asian, |_, _| {}).unwrap();
        let table = tables.get(&TableId::new(RuleSet::Asian, sig)).unwrap();
        let size = table.index().size();
        let params = [
            CodecParams::default(),
            // The widest layout in the smallest blocks the bound allows for.
            CodecParams {
                block_values: 32,
                layout: LayoutChoice::Fixed(ValueLayout::Wide),
                ..CodecParams::default()
            },
            CodecParams {
                block_values: 32,
                layout: LayoutChoice::Fixed(ValueLayout::Indexed),
                ..CodecParams::default()
            },
            CodecParams {
                block_values: 1 << 20,
                dictionary: Some(16 << 10),
                ..CodecParams::default()
            },
        ];
        for p in &params {
            let len = shard::write_shard(&encode_table_with(table, p)).len() as u64;
            // Within the allowance per entry alone, without the fixed allowance for
            // dictionaries.
            assert!(
                len <= size * 2 * SHARD_BYTES_PER_ENTRY + 4096,
                "{len} bytes with {p:?}"
            );
            assert!(len < max_shard_bytes(size));
        }
        assert_eq!(max_shard_bytes(u64::MAX), MAX_UPLOAD_BYTES);
        // The worst case of indexed blocks (values need not be consistent for the codec, nor
        // illegal slots be marked): every value of every block different and scattered, so
        // that each block lists as many codes as it holds values, and hardly compresses.
        let mut worst = (**table).clone();
        worst.map_codes(|_, i, _| {
            xqtb_core::Value::Win(2 * (i * 2_654_435_761 % 4096) as u16 + 1).encode()
        });
        let p = CodecParams {
            block_values: 32,
            layout: LayoutChoice::Fixed(ValueLayout::Indexed),
            ..CodecParams::default()
        };
        let encoded = encode_table_with(&worst, &p);
        assert_eq!(encoded.header.layout, ValueLayout::Indexed);
        let len = shard::write_shard(&encoded).len() as u64;
        assert!(
            len <= size * 2 * SHARD_BYTES_PER_ENTRY + 4096,
            "{len} bytes"
        );
    }

    #[test]
    fn batches_longer_than_the_maximum_are_refused_naming_it() {
        assert!(check_batch_len(MAX_PROBE_BATCH).is_ok());
        let e = check_batch_len(MAX_PROBE_BATCH + 1)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("at most 1000 positions; this one has 1001"),
            "{e}"
        );
    }
}
