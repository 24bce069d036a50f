//! Table stores: where encoded tables live. [`TableStore`] is the small interface the rest of
//! the project uses; [`SledStore`] keeps tables in a sled database, [`ShardDir`] in a directory
//! of shard files (probed in place, without importing).
//!
//! A table is named in the store by [`store_name`]: its signature for `cycles-are-draws` tables
//! (the first rule set, whose stores predate the others), `RULES/SIGNATURE` for the others, so
//! tables of every rule set live side by side. sled keys (one tree, `xqtb-tables`; signature
//! names are ASCII letters and `v`, rule set names letters and `-`, so `/` separates):
//!
//! | key | value |
//! |---|---|
//! | `h/` + name | the [`TableHeader`] bytes followed by their CRC-32 |
//! | `d/` + name | the zstd dictionary, if the table has one |
//! | `b/` + name + `/` + side (`0` Red, `1` Black, one byte) + block number (`u32` big-endian) | one compressed block |
//! | `p/` + name + `/` + first slot (`u64` big-endian) + `h`, or + `b` + side + block number | a part's header, or one of its blocks ([`TableStore::put_part`]) |
//! | `w/` + a key prefix | a write under way: what is under the prefix is incomplete ([`SledStore`]) |
//!
//! Block numbers are big-endian so that a prefix scan returns a table's blocks in order.

use crate::codec::{BlockInfo, CodecError, EncodedTable, TableHeader, check_values, decode_table};
pub use crate::io_error::IoError;
use crate::shard::{self, ShardError, ShardLayout};
use std::collections::HashMap;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use thiserror::Error;
use xiangqi::Color;
use xqtb_core::{MemoryTables, RuleSet, Signature, SlotRange, Table, TableId};

/// The name of table `id` in a store: the signature for `cycles-are-draws`, `RULES/SIGNATURE`
/// for any other rule set (see the module documentation).
pub fn store_name(id: &TableId) -> String {
    if id.rules == RuleSet::CyclesAreDraws {
        id.signature.name()
    } else {
        format!("{}/{}", id.rules.name(), id.signature.name())
    }
}

/// The table named `name` by [`store_name`].
pub fn parse_store_name(name: &str) -> Option<TableId> {
    let (rules, sig) = match name.split_once('/') {
        None => (RuleSet::CyclesAreDraws, name),
        Some((r, s)) => (r.parse().ok()?, s),
    };
    let signature: Signature = sig.parse().ok()?;
    let id = TableId::new(rules, signature);
    (store_name(&id) == name).then_some(id)
}

/// Why a store operation failed.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum StoreError {
    /// The table is not in the store.
    #[error("table {} is not in the store ({store}; rule set {})", table.signature, table.rules)]
    Missing {
        /// The table.
        table: TableId,
        /// The store, as [`TableStore::describe`] names it.
        store: String,
    },
    /// A block number past the table's end.
    #[error("table {table}: no block {block} for {side} to move")]
    NoSuchBlock {
        /// The table.
        table: TableId,
        /// Side to move.
        side: Color,
        /// Block number.
        block: u32,
    },
    /// The stored data is damaged.
    #[error("table {0} in the store is corrupt: {1}")]
    Corrupt(TableId, String),
    /// A shard file was refused.
    #[error("{0}")]
    Shard(#[from] ShardError),
    /// A shard file of a [`ShardDir`] was refused.
    #[error("shard file {path} refused: {error}")]
    BadFile {
        /// The file.
        path: String,
        /// What is wrong with it.
        error: ShardError,
    },
    /// The table does not fit this build (index scheme) or is inconsistent.
    #[error("{0}")]
    Codec(#[from] CodecError),
    /// The file system failed.
    #[error("store I/O error: {0}")]
    Io(#[from] IoError),
    /// The sled database failed.
    #[error("store database error while {context}: {source}")]
    Database {
        /// What was being done.
        context: String,
        /// sled's error.
        #[source]
        source: sled::Error,
    },
    /// A key in the store names no table of this build.
    #[error("the store holds a table named '{0}', which this build does not know")]
    UnknownTable(String),
    /// The store cannot do this.
    #[error("{store} cannot {what}")]
    Unsupported {
        /// The store, as [`TableStore::describe`] names it.
        store: String,
        /// What was asked.
        what: &'static str,
    },
}

/// A place that holds encoded tables. Implementations are safe to share between threads.
pub trait TableStore: Send + Sync {
    /// Names the store in messages, e.g. `sled store ./xqtb-data`.
    fn describe(&self) -> String;

    /// Stores `table`: a reader sees the whole table or none of it (when replacing, the whole
    /// old table, then possibly none while the new one is written, then the whole new one).
    /// The table is checked against its header first; a table that does not match is refused
    /// and nothing is written.
    fn put_table(&self, table: &EncodedTable) -> Result<(), StoreError>;

    /// The header of table `id`, or `None` if the table is not stored.
    fn header(&self, id: &TableId) -> Result<Option<TableHeader>, StoreError>;

    /// One compressed block of table `id`, as stored (check it against the header's block table).
    fn block(&self, id: &TableId, side: Color, block: u32) -> Result<Vec<u8>, StoreError>;

    /// The zstd dictionary of table `id`, if it has one.
    fn dictionary(&self, id: &TableId) -> Result<Option<Vec<u8>>, StoreError>;

    /// The headers of every stored table, ordered by signature name.
    fn list_tables(&self) -> Result<Vec<TableHeader>, StoreError>;

    /// Stores a part of a table (a run of its pawn slices, solved as a job of its own) until
    /// the table's other parts are in, replacing a stored part that starts at the same slot.
    /// When the parts then cover the table, they are assembled block by block
    /// ([`crate::codec::PartAssembler`]) into the table stored whole, byte for byte as if it had
    /// been stored whole, which becomes visible in the same step that removes the parts'
    /// headers. Returns whether the table is now stored whole. The part is checked against its
    /// header first.
    fn put_part(&self, _part: &EncodedTable) -> Result<bool, StoreError> {
        Err(StoreError::Unsupported {
            store: self.describe(),
            what: "hold parts of tables",
        })
    }

    /// The headers of the stored parts of table `id`, in slot order (none once it is whole).
    fn part_headers(&self, _id: &TableId) -> Result<Vec<TableHeader>, StoreError> {
        Ok(Vec::new())
    }

    /// The tables of which some parts are stored, waiting for the rest, ordered by their store
    /// names ([`store_name`]).
    fn tables_in_parts(&self) -> Result<Vec<TableId>, StoreError> {
        Ok(Vec::new())
    }

    /// The stored part of table `id` that starts at slot `start`, every block checked against
    /// its header.
    fn load_part(&self, id: &TableId, _start: u64) -> Result<EncodedTable, StoreError> {
        Err(StoreError::Missing {
            table: *id,
            store: self.describe(),
        })
    }

    /// One compressed block of the stored part of table `id` that starts at slot `start`, as
    /// stored (check it against the part's header).
    fn part_block(
        &self,
        id: &TableId,
        _start: u64,
        _side: Color,
        _block: u32,
    ) -> Result<Vec<u8>, StoreError> {
        Err(StoreError::Missing {
            table: *id,
            store: self.describe(),
        })
    }

    /// The whole table of table `id`, every block checked against the header.
    fn load_table(&self, id: &TableId) -> Result<EncodedTable, StoreError> {
        let header = self.header(id)?.ok_or_else(|| StoreError::Missing {
            table: *id,
            store: self.describe(),
        })?;
        let dictionary = match header.dictionary {
            None => None,
            Some(_) => Some(
                self.dictionary(id)?
                    .ok_or_else(|| StoreError::Corrupt(*id, "the dictionary is missing".into()))?,
            ),
        };
        let mut blocks: [Vec<Vec<u8>>; 2] = [Vec::new(), Vec::new()];
        for side in Color::ALL {
            for b in 0..header.blocks[side.index()].len() as u32 {
                blocks[side.index()].push(self.block(id, side, b)?);
            }
        }
        let table = EncodedTable {
            header,
            dictionary,
            blocks,
        };
        table
            .validate()
            .map_err(|e| StoreError::Corrupt(*id, e.to_string()))?;
        Ok(table)
    }

    /// The shard file of table `id`.
    fn export_shard(&self, id: &TableId) -> Result<Vec<u8>, StoreError> {
        Ok(shard::write_shard(&self.load_table(id)?))
    }

    /// Table `id` decoded into memory, every block and checksum checked, ready for the solver or
    /// the verifier.
    fn load_decoded(&self, id: &TableId) -> Result<Table, StoreError> {
        Ok(decode_table(&self.load_table(id)?)?)
    }

    /// Imports a shard file: every checksum is verified (the blocks' and, decompressing them, the
    /// values') and the index scheme checked before anything is written, so a refused file
    /// leaves the store untouched. Returns the header.
    fn import_shard(&self, bytes: &[u8]) -> Result<TableHeader, StoreError> {
        let table = shard::read_shard(bytes)?;
        table.header.index()?;
        check_values(&table)?;
        self.put_table(&table)?;
        Ok(table.header)
    }
}

impl<T: TableStore + ?Sized> TableStore for Arc<T> {
    fn describe(&self) -> String {
        (**self).describe()
    }
    fn put_table(&self, table: &EncodedTable) -> Result<(), StoreError> {
        (**self).put_table(table)
    }
    fn header(&self, id: &TableId) -> Result<Option<TableHeader>, StoreError> {
        (**self).header(id)
    }
    fn block(&self, id: &TableId, side: Color, block: u32) -> Result<Vec<u8>, StoreError> {
        (**self).block(id, side, block)
    }
    fn dictionary(&self, id: &TableId) -> Result<Option<Vec<u8>>, StoreError> {
        (**self).dictionary(id)
    }
    fn list_tables(&self) -> Result<Vec<TableHeader>, StoreError> {
        (**self).list_tables()
    }
    fn load_table(&self, id: &TableId) -> Result<EncodedTable, StoreError> {
        (**self).load_table(id)
    }
    fn export_shard(&self, id: &TableId) -> Result<Vec<u8>, StoreError> {
        (**self).export_shard(id)
    }
    fn import_shard(&self, bytes: &[u8]) -> Result<TableHeader, StoreError> {
        (**self).import_shard(bytes)
    }
    fn put_part(&self, part: &EncodedTable) -> Result<bool, StoreError> {
        (**self).put_part(part)
    }
    fn part_headers(&self, id: &TableId) -> Result<Vec<TableHeader>, StoreError> {
        (**self).part_headers(id)
    }
    fn tables_in_parts(&self) -> Result<Vec<TableId>, StoreError> {
        (**self).tables_in_parts()
    }
    fn load_part(&self, id: &TableId, start: u64) -> Result<EncodedTable, StoreError> {
        (**self).load_part(id, start)
    }
    fn part_block(
        &self,
        id: &TableId,
        start: u64,
        side: Color,
        block: u32,
    ) -> Result<Vec<u8>, StoreError> {
        (**self).part_block(id, start, side, block)
    }
}

/// A header's stored form: its bytes and their CRC-32.
fn header_value(h: &TableHeader) -> Vec<u8> {
    let mut v = h.to_bytes();
    let crc = crc32fast::hash(&v);
    v.extend_from_slice(&crc.to_le_bytes());
    v
}

fn parse_header_value(id: &TableId, v: &[u8]) -> Result<TableHeader, StoreError> {
    if v.len() < 4 {
        return Err(StoreError::Corrupt(*id, "header too short".into()));
    }
    let (body, crc) = v.split_at(v.len() - 4);
    if crc32fast::hash(body) != u32::from_le_bytes([crc[0], crc[1], crc[2], crc[3]]) {
        return Err(StoreError::Corrupt(*id, "header checksum mismatch".into()));
    }
    let h = TableHeader::from_bytes(body).map_err(|e| StoreError::Corrupt(*id, e.to_string()))?;
    if h.id() != *id {
        return Err(StoreError::Corrupt(
            *id,
            format!("the header is for {}", h.id()),
        ));
    }
    Ok(h)
}

fn header_key(id: &TableId) -> Vec<u8> {
    format!("h/{}", store_name(id)).into_bytes()
}

fn dictionary_key(id: &TableId) -> Vec<u8> {
    format!("d/{}", store_name(id)).into_bytes()
}

fn blocks_prefix(id: &TableId) -> Vec<u8> {
    format!("b/{}/", store_name(id)).into_bytes()
}

fn block_key(id: &TableId, side: Color, block: u32) -> Vec<u8> {
    let mut k = blocks_prefix(id);
    k.push(side.index() as u8);
    k.extend_from_slice(&block.to_be_bytes());
    k
}

/// Where the parts of a table wait for each other: `p/NAME/` then, per part, its first slot
/// (big-endian, so parts list in slot order) and `h` for the header or a side and block number.
fn parts_prefix(id: &TableId) -> Vec<u8> {
    format!("p/{}/", store_name(id)).into_bytes()
}

fn part_prefix(id: &TableId, start: u64) -> Vec<u8> {
    let mut k = parts_prefix(id);
    k.extend_from_slice(&start.to_be_bytes());
    k
}

fn part_header_key(id: &TableId, start: u64) -> Vec<u8> {
    let mut k = part_prefix(id, start);
    k.push(b'h');
    k
}

fn part_block_key(id: &TableId, start: u64, side: Color, block: u32) -> Vec<u8> {
    let mut k = part_prefix(id, start);
    k.push(b'b');
    k.push(side.index() as u8);
    k.extend_from_slice(&block.to_be_bytes());
    k
}

/// A sled failure while doing `context`.
fn db_err(context: &'static str) -> impl Fn(sled::Error) -> StoreError {
    move |source| StoreError::Database {
        context: context.to_string(),
        source,
    }
}

/// Tables in a sled database.
///
/// Atomicity: a table is visible once its header is stored, and its header is the last thing
/// written: its blocks go first, in sled batches of at most [`BATCH_BLOCKS`] blocks, then the
/// header with the dictionary in the last batch. Readers therefore see a whole table or none of
/// it, never a header without its blocks; a table being replaced is missing (its header removed
/// in the first batch) until its new header is written. A part's header is likewise written
/// after its blocks. Every write is flushed to disk before it returns.
///
/// Why batches: sled applies a batch as one operation and keeps every version of the tree's
/// pages that the batch made until it is done, so one batch per table would hold several times
/// the table in memory while it is written; in batches of [`BATCH_BLOCKS`] blocks a write holds
/// a few batches' worth, whatever the size of the table. A write cut short (a crash)
/// leaves a marker (`w/` + the prefix of the keys it was writing), and opening the store wipes
/// what the marker covers, so no half-written table or part outlives a restart.
#[derive(Clone)]
pub struct SledStore {
    db: sled::Db,
    tree: sled::Tree,
    dir: PathBuf,
    sweep: Arc<PageSweep>,
}

impl std::fmt::Debug for SledStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SledStore({})", self.dir.display())
    }
}

/// sled's own page cache. Decompressed blocks are cached by the prober, so this one only needs
/// to hold sled's tree; whatever it may hold, a coordinator fills over its first committed
/// tables and keeps (the soak test in `tests/soak.rs` watches its memory). sled applies the
/// bound lazily, and not to what was written; [`PageSweep`] makes it apply it. Each of sled's
/// 256 LRU shards gets a 256th of it (16 KiB here), and a shard keeps pages up to its share:
/// a leaf of a table's blocks (several blocks of a few kilobytes) does not fit in so little, so
/// a table's blocks leave sled's cache at a sweep, whereas with a cache a few times larger most
/// shards keep a leaf and much of every table stays in memory.
const SLED_CACHE_BYTES: u64 = 4 << 20;

/// Keys of the [`PageSweep`] tree (4 bytes each, empty values), and how often each is read per
/// sweep: enough reads spread over enough pages that every LRU shard accounts its queue, so that
/// a sweep brings a process's memory back close to where it was before the tables were written
/// (fewer reads leave part of the tables' pages behind), yet few enough that a sweep costs
/// little next to the writes that trigger it.
const SWEEP_KEYS: u32 = 4096;
const SWEEP_PASSES: usize = 8;

/// Sweep after this many blocks (and removals) have been written since the last sweep.
const SWEEP_AFTER_WRITES: usize = 256;

/// Makes sled evict the pages it holds beyond its cache capacity.
///
/// sled (0.34.7, `lru.rs`) accounts a page access only when 64 accesses have queued in the same
/// one of its 256 LRU shards (by page id), and evicts only when accounting; a shard never evicts
/// its last page. A table written keeps every page it wrote in memory until then: each shard sees
/// a handful of accesses from one table, so without sweeps a coordinator's memory grows by about
/// a table's size with each of its first tables committed, and levels off far above
/// `cache_capacity`. A sweep reads a tree of many tiny keys (pages in every shard) often
/// enough that every shard accounts its queue: the tables' large pages, older, are evicted, and
/// each shard's last page is a tiny one.
struct PageSweep {
    db: sled::Db,
    /// The tree of tiny keys, made at the first sweep (making it takes some heap, which a solve
    /// from nothing would otherwise carry into its peak).
    tree: std::sync::Mutex<Option<sled::Tree>>,
    /// Blocks and removals written since the last sweep.
    written: std::sync::atomic::AtomicUsize,
}

impl PageSweep {
    fn new(db: &sled::Db) -> PageSweep {
        PageSweep {
            db: db.clone(),
            tree: Default::default(),
            written: Default::default(),
        }
    }

    /// The sweep tree, filled.
    fn tree(&self) -> Result<sled::Tree, StoreError> {
        let mut slot = self.tree.lock().expect("page sweep lock");
        if let Some(t) = slot.as_ref() {
            return Ok(t.clone());
        }
        let tree = self
            .db
            .open_tree("xqtb-page-sweep")
            .map_err(db_err("opening the page sweep tree"))?;
        if tree.len() != SWEEP_KEYS as usize {
            for first in (0..SWEEP_KEYS).step_by(BATCH_BLOCKS) {
                let mut batch = sled::Batch::default();
                for k in first..(first + BATCH_BLOCKS as u32).min(SWEEP_KEYS) {
                    batch.insert(&k.to_be_bytes()[..], &[][..]);
                }
                tree.apply_batch(batch)
                    .map_err(db_err("filling the page sweep tree"))?;
            }
        }
        *slot = Some(tree.clone());
        Ok(tree)
    }

    /// Notes `n` writes; sweeps when enough have been made since the last sweep.
    fn wrote(&self, n: usize) -> Result<(), StoreError> {
        use std::sync::atomic::Ordering::Relaxed;
        if self.written.fetch_add(n, Relaxed) + n >= SWEEP_AFTER_WRITES {
            self.written.store(0, Relaxed);
            self.sweep()?;
        }
        Ok(())
    }

    fn sweep(&self) -> Result<(), StoreError> {
        let tree = self.tree()?;
        for _ in 0..SWEEP_PASSES {
            for k in 0..SWEEP_KEYS {
                tree.get(k.to_be_bytes())
                    .map_err(db_err("sweeping the page cache"))?;
            }
        }
        Ok(())
    }
}

/// Blocks (and removals) per sled batch when a table or part is written (see [`SledStore`]).
pub const BATCH_BLOCKS: usize = 256;

/// Writes and removals applied in sled batches of at most [`BATCH_BLOCKS`] operations.
struct Batches<'a> {
    tree: &'a sled::Tree,
    sweep: &'a PageSweep,
    batch: sled::Batch,
    pending: usize,
    /// Operations applied so far.
    applied: usize,
}

impl<'a> Batches<'a> {
    fn new(store: &'a SledStore) -> Batches<'a> {
        Batches {
            tree: &store.tree,
            sweep: &store.sweep,
            batch: sled::Batch::default(),
            pending: 0,
            applied: 0,
        }
    }

    fn insert(
        &mut self,
        key: impl Into<sled::IVec>,
        value: impl Into<sled::IVec>,
    ) -> Result<(), StoreError> {
        self.batch.insert(key, value);
        self.count()
    }

    fn remove(&mut self, key: impl Into<sled::IVec>) -> Result<(), StoreError> {
        self.batch.remove(key);
        self.count()
    }

    /// Removes every key that starts with `prefix`.
    fn remove_prefix(&mut self, prefix: &[u8]) -> Result<(), StoreError> {
        for key in self.tree.scan_prefix(prefix).keys() {
            self.remove(key.map_err(db_err("using the store"))?)?;
        }
        Ok(())
    }

    fn count(&mut self) -> Result<(), StoreError> {
        self.pending += 1;
        if self.pending >= BATCH_BLOCKS {
            self.apply()?;
        }
        Ok(())
    }

    /// Applies what is pending.
    fn apply(&mut self) -> Result<(), StoreError> {
        if self.pending > 0 {
            self.tree
                .apply_batch(std::mem::take(&mut self.batch))
                .map_err(db_err("using the store"))?;
            self.applied += self.pending;
            self.pending = 0;
        }
        Ok(())
    }

    /// Applies `last` (whatever is pending first, so that `last` lands on its own, in one
    /// batch) and flushes the tree to disk; then lets the page cache shed what was written
    /// (see [`PageSweep`]).
    fn finish(mut self, last: sled::Batch) -> Result<(), StoreError> {
        self.apply()?;
        self.tree
            .apply_batch(last)
            .map_err(db_err("using the store"))?;
        self.tree.flush().map_err(db_err("using the store"))?;
        release_sealed_buffers();
        // What was written is on disk: a failed sweep only leaves memory to a later one.
        if let Err(e) = self.sweep.wrote(self.applied + 1) {
            tracing::warn!(error = %e, "sweeping the store's page cache");
        }
        Ok(())
    }
}

/// Lets the log buffers sled sealed on this thread be freed soon.
///
/// sled (0.34.7, `iobuf.rs`) frees a sealed log buffer (512 KiB) through crossbeam-epoch's
/// deferred garbage: it waits in the sealing thread's bag, up to 64 items, and then in the global
/// queue, which a thread collects only every 128 pins of its own. A coordinator pins rarely (its
/// probes read the block cache, not sled) and over many threads, while sled's periodic flusher
/// would seal a buffer for every job record written (lease renewals): buffers would be sealed
/// faster than they are freed, and the coordinator's memory would grow for as long as it runs.
/// With the periodic flusher off ([`SledStore::open`]), the thread that flushes seals; moving
/// its bag to the global queue and collecting there frees each buffer within a few flushes.
fn release_sealed_buffers() {
    crossbeam_epoch::pin().flush();
}

/// The marker of a write under way of the keys starting with `prefix`.
fn marker_key(prefix: &[u8]) -> Vec<u8> {
    let mut k = b"w/".to_vec();
    k.extend_from_slice(prefix);
    k
}

impl SledStore {
    /// Opens (creating if needed) the store in directory `dir`.
    pub fn open(dir: impl AsRef<Path>) -> Result<SledStore, StoreError> {
        let dir = dir.as_ref().to_path_buf();
        // Every write path flushes what it wrote before it returns (records at once, tables
        // when the last batch lands), so sled's periodic flusher adds no durability; it would
        // seal log buffers on its own thread, whose deferred frees no code of ours can hasten
        // (see [`release_sealed_buffers`]).
        let config = sled::Config::new()
            .path(&dir)
            .cache_capacity(SLED_CACHE_BYTES)
            .flush_every_ms(None);
        // sled's background threads can hold the file lock for a moment after a database in
        // this process was dropped; another process holding it is reported after a few tries.
        let mut tries = 0;
        let db = loop {
            match config.open() {
                Ok(db) => break db,
                // sled wraps the lock's WouldBlock in an error of kind Other with the text.
                Err(sled::Error::Io(e))
                    if (e.kind() == std::io::ErrorKind::WouldBlock
                        || e.to_string().contains("could not acquire lock"))
                        && tries < 40 =>
                {
                    tries += 1;
                    std::thread::sleep(std::time::Duration::from_millis(50));
                }
                Err(source) => {
                    return Err(StoreError::Database {
                        context: format!(
                            "opening the store {} (is another xqtb process using it?)",
                            dir.display()
                        ),
                        source,
                    });
                }
            }
        };
        let tree = db
            .open_tree("xqtb-tables")
            .map_err(db_err("opening the table tree"))?;
        let sweep = Arc::new(PageSweep::new(&db));
        let store = SledStore {
            db,
            tree,
            dir,
            sweep,
        };
        store.wipe_interrupted_writes()?;
        Ok(store)
    }

    /// Removes what writes cut short (a crash) left: the keys under each write marker, then the
    /// marker. Returns how many writes it wiped.
    fn wipe_interrupted_writes(&self) -> Result<usize, StoreError> {
        let markers: Vec<sled::IVec> = self
            .tree
            .scan_prefix(b"w/")
            .keys()
            .collect::<Result<_, _>>()
            .map_err(db_err("using the store"))?;
        for marker in &markers {
            let prefix = &marker[2..];
            tracing::warn!(
                keys = %String::from_utf8_lossy(prefix),
                store = %self.dir.display(),
                "removing a table write that was cut short"
            );
            let mut w = Batches::new(self);
            w.remove_prefix(prefix)?;
            let mut last = sled::Batch::default();
            last.remove(marker.clone());
            w.finish(last)?;
        }
        Ok(markers.len())
    }

    /// Lets sled's page cache evict what it holds beyond its capacity (pages read since the
    /// last sweep, as a server's probes read blocks), and frees the log buffers this thread
    /// left pending (sled frees them only through deferred garbage); writes do both themselves.
    /// Cheap enough (reads of tiny keys, nothing written) for a server to call on a timer.
    pub fn sweep_page_cache(&self) -> Result<(), StoreError> {
        release_sealed_buffers();
        self.sweep.sweep()
    }

    /// The directory of the store.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Bytes the database occupies on disk.
    pub fn size_on_disk(&self) -> Result<u64, StoreError> {
        self.db
            .size_on_disk()
            .map_err(db_err("measuring the store"))
    }

    /// A named tree of small records in the same database (e.g. the coordinator's job states),
    /// kept apart from the tables.
    pub fn records(&self, name: &str) -> Result<RecordTree, StoreError> {
        Ok(RecordTree {
            tree: self
                .db
                .open_tree(format!("records/{name}"))
                .map_err(db_err("using the store"))?,
        })
    }
}

/// Small records by text key in a [`SledStore`]'s database; every write is flushed to disk
/// before it returns.
#[derive(Clone)]
pub struct RecordTree {
    tree: sled::Tree,
}

impl std::fmt::Debug for RecordTree {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RecordTree({} records)", self.tree.len())
    }
}

impl RecordTree {
    /// Sets `key` to `value`, durably.
    pub fn put(&self, key: &str, value: &[u8]) -> Result<(), StoreError> {
        self.tree
            .insert(key.as_bytes(), value)
            .map_err(db_err("using the store"))?;
        self.tree.flush().map_err(db_err("using the store"))?;
        release_sealed_buffers();
        Ok(())
    }

    /// The value of `key`.
    pub fn get(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(self
            .tree
            .get(key.as_bytes())
            .map_err(db_err("using the store"))?
            .map(|v| v.to_vec()))
    }

    /// Removes `key`, durably.
    pub fn remove(&self, key: &str) -> Result<(), StoreError> {
        self.tree
            .remove(key.as_bytes())
            .map_err(db_err("using the store"))?;
        self.tree.flush().map_err(db_err("using the store"))?;
        release_sealed_buffers();
        Ok(())
    }

    /// Every record, ordered by key.
    pub fn all(&self) -> Result<Vec<(String, Vec<u8>)>, StoreError> {
        self.tree
            .iter()
            .map(|kv| {
                let (k, v) = kv.map_err(db_err("using the store"))?;
                Ok((String::from_utf8_lossy(&k).into_owned(), v.to_vec()))
            })
            .collect()
    }
}

impl SledStore {
    /// Starts writing table `id` whole: its header and dictionary removed (a table it replaces
    /// is missing from here on), a marker set, and the blocks of an earlier version removed.
    fn begin_table(&self, id: &TableId) -> Result<Batches<'_>, StoreError> {
        let mut w = Batches::new(self);
        w.insert(marker_key(&blocks_prefix(id)), &[][..])?;
        w.remove(header_key(id))?;
        w.remove(dictionary_key(id))?;
        w.apply()?;
        w.remove_prefix(&blocks_prefix(id))?;
        Ok(w)
    }

    /// Ends writing table `id` with `header` and `dictionary`, and the operations of `last`:
    /// one batch, which makes the table visible.
    fn end_table(
        &self,
        w: Batches<'_>,
        id: &TableId,
        header: &TableHeader,
        dictionary: Option<&[u8]>,
        mut last: sled::Batch,
    ) -> Result<(), StoreError> {
        if let Some(d) = dictionary {
            last.insert(dictionary_key(id), d);
        }
        last.insert(header_key(id), header_value(header));
        last.remove(marker_key(&blocks_prefix(id)));
        w.finish(last)
    }

    /// Joins the stored parts of table `id` (`parts`: their headers, in slot order, covering
    /// the table) block by block into the whole table, then removes the parts. Memory is a
    /// batch of blocks, whatever the size of the table.
    fn assemble(&self, id: &TableId, parts: &[TableHeader]) -> Result<(), StoreError> {
        let whole = SlotRange::whole(&id.signature);
        let mut assembly = crate::codec::PartAssembler::new(parts, whole)?;
        let mut w = self.begin_table(id)?;
        let mut next = [0u32; 2];
        for h in parts {
            let start = h.slots.start;
            assembly.start_part(h);
            for side in Color::ALL {
                for b in 0..h.block_count() {
                    let corrupt = |what: &str| {
                        StoreError::Corrupt(
                            *id,
                            format!(
                                "block {b} for {side} to move of the part at slot {start} {what}"
                            ),
                        )
                    };
                    let stored = self
                        .tree
                        .get(part_block_key(id, start, side, b))
                        .map_err(db_err("using the store"))?
                        .ok_or_else(|| corrupt("is missing"))?;
                    if BlockInfo::of(&stored) != h.blocks[side.index()][b as usize] {
                        return Err(corrupt("does not match its header"));
                    }
                    let block = assembly.block(h, side, b, stored.to_vec())?;
                    w.insert(block_key(id, side, next[side.index()]), block)?;
                    next[side.index()] += 1;
                }
            }
        }
        let header = assembly.finish()?;
        // The batch that makes the table visible removes the parts' headers and marks their
        // blocks for removal, which follows.
        let mut last = sled::Batch::default();
        for h in parts {
            last.remove(part_header_key(id, h.slots.start));
        }
        last.insert(marker_key(&parts_prefix(id)), &[][..]);
        self.end_table(w, id, &header, None, last)?;
        let mut w = Batches::new(self);
        w.remove_prefix(&parts_prefix(id))?;
        let mut last = sled::Batch::default();
        last.remove(marker_key(&parts_prefix(id)));
        w.finish(last)
    }
}

impl TableStore for SledStore {
    fn describe(&self) -> String {
        format!("sled store {}", self.dir.display())
    }

    fn put_table(&self, table: &EncodedTable) -> Result<(), StoreError> {
        table.validate()?;
        if table.header.is_part() {
            return Err(StoreError::Unsupported {
                store: self.describe(),
                what: "store a part of a table as the whole table",
            });
        }
        let id = &table.header.id();
        let mut w = self.begin_table(id)?;
        for side in Color::ALL {
            for (b, data) in table.blocks[side.index()].iter().enumerate() {
                w.insert(block_key(id, side, b as u32), data.as_slice())?;
            }
        }
        let dictionary = table.dictionary.as_deref();
        self.end_table(w, id, &table.header, dictionary, sled::Batch::default())
    }

    fn put_part(&self, part: &EncodedTable) -> Result<bool, StoreError> {
        part.validate()?;
        let h = &part.header;
        let id = &h.id();
        if !h.is_part() {
            self.put_table(part)?;
            return Ok(true);
        }
        if self.header(id)?.is_some() {
            return Ok(true);
        }
        let start = h.slots.start;
        // A part's header last, as a table's: the part is stored once its header is.
        let mut w = Batches::new(self);
        w.insert(marker_key(&part_prefix(id, start)), &[][..])?;
        w.remove(part_header_key(id, start))?;
        w.apply()?;
        w.remove_prefix(&part_prefix(id, start))?;
        for side in Color::ALL {
            for (b, data) in part.blocks[side.index()].iter().enumerate() {
                w.insert(part_block_key(id, start, side, b as u32), data.as_slice())?;
            }
        }
        let mut last = sled::Batch::default();
        last.insert(part_header_key(id, start), header_value(h));
        last.remove(marker_key(&part_prefix(id, start)));
        w.finish(last)?;
        let headers = self.part_headers(id)?;
        let mut next = 0;
        for p in &headers {
            if p.slots.start != next {
                return Ok(false);
            }
            next = p.slots.end;
        }
        if next != h.index_size {
            return Ok(false);
        }
        self.assemble(id, &headers)?;
        Ok(true)
    }

    fn part_headers(&self, id: &TableId) -> Result<Vec<TableHeader>, StoreError> {
        // One seek per part, to the first key of the next one: a scan of the prefix would read
        // every block of every part, and each worker job and each commit asks, so a table in
        // many slices would read its stored slices over and over, into the page cache of every
        // worker's store.
        let prefix = parts_prefix(id);
        let mut out = Vec::new();
        let mut from = prefix.clone();
        loop {
            let Some(kv) = self.tree.range(from..).next() else {
                break;
            };
            let (k, _) = kv.map_err(db_err("using the store"))?;
            let Some(start) = k
                .strip_prefix(prefix.as_slice())
                .and_then(|rest| rest.get(..8))
                .map(|b| u64::from_be_bytes(b.try_into().expect("eight bytes")))
            else {
                break;
            };
            if let Some(v) = self
                .tree
                .get(part_header_key(id, start))
                .map_err(db_err("using the store"))?
            {
                out.push(parse_header_value(id, &v)?);
            }
            match start.checked_add(1) {
                Some(next) => from = part_prefix(id, next),
                None => break,
            }
        }
        Ok(out)
    }

    fn tables_in_parts(&self) -> Result<Vec<TableId>, StoreError> {
        // One seek per table, past its parts' keys (`p/NAME/` then a part's first slot).
        let mut out = Vec::new();
        let mut from = b"p/".to_vec();
        loop {
            let Some(kv) = self.tree.range(from..).next() else {
                break;
            };
            let (k, _) = kv.map_err(db_err("using the store"))?;
            let Some(rest) = k.strip_prefix(b"p/") else {
                break;
            };
            // A store name is a signature, or a rule set's name, `/` and a signature.
            let name_of = |rest: &[u8]| -> Option<TableId> {
                let mut segments = rest.splitn(3, |&b| b == b'/');
                let first = std::str::from_utf8(segments.next()?).ok()?;
                match first.parse::<RuleSet>() {
                    Ok(_) => {
                        let sig = std::str::from_utf8(segments.next()?).ok()?;
                        parse_store_name(&format!("{first}/{sig}"))
                    }
                    Err(_) => parse_store_name(first),
                }
            };
            let id = name_of(rest).ok_or_else(|| {
                StoreError::UnknownTable(String::from_utf8_lossy(rest).into_owned())
            })?;
            out.push(id);
            from = parts_prefix(&id);
            // Past every key of this table's parts: `/` is followed by slot bytes up to 0xFF.
            from.extend_from_slice(&[0xFF; 9]);
        }
        Ok(out)
    }

    fn load_part(&self, id: &TableId, start: u64) -> Result<EncodedTable, StoreError> {
        let missing = || StoreError::Missing {
            table: *id,
            store: self.describe(),
        };
        let get = |k: Vec<u8>| self.tree.get(k).map_err(db_err("using the store"));
        let header =
            parse_header_value(id, &get(part_header_key(id, start))?.ok_or_else(missing)?)?;
        let mut blocks: [Vec<Vec<u8>>; 2] = [Vec::new(), Vec::new()];
        for side in Color::ALL {
            for b in 0..header.block_count() {
                let v = get(part_block_key(id, start, side, b))?.ok_or_else(|| {
                    StoreError::Corrupt(
                        *id,
                        format!(
                            "block {b} for {side} to move of the part at slot {start} is missing"
                        ),
                    )
                })?;
                blocks[side.index()].push(v.to_vec());
            }
        }
        let part = EncodedTable {
            header,
            dictionary: None,
            blocks,
        };
        part.validate()
            .map_err(|e| StoreError::Corrupt(*id, e.to_string()))?;
        Ok(part)
    }

    fn part_block(
        &self,
        id: &TableId,
        start: u64,
        side: Color,
        block: u32,
    ) -> Result<Vec<u8>, StoreError> {
        self.tree
            .get(part_block_key(id, start, side, block))
            .map_err(db_err("using the store"))?
            .map(|v| v.to_vec())
            .ok_or_else(|| {
                StoreError::Corrupt(
                    *id,
                    format!(
                        "block {block} for {side} to move of the part at slot {start} is missing"
                    ),
                )
            })
    }

    fn header(&self, id: &TableId) -> Result<Option<TableHeader>, StoreError> {
        match self
            .tree
            .get(header_key(id))
            .map_err(db_err("using the store"))?
        {
            None => Ok(None),
            Some(v) => parse_header_value(id, &v).map(Some),
        }
    }

    fn block(&self, id: &TableId, side: Color, block: u32) -> Result<Vec<u8>, StoreError> {
        match self
            .tree
            .get(block_key(id, side, block))
            .map_err(db_err("using the store"))?
        {
            Some(v) => Ok(v.to_vec()),
            None => Err(
                if self
                    .tree
                    .contains_key(header_key(id))
                    .map_err(db_err("using the store"))?
                {
                    StoreError::NoSuchBlock {
                        table: *id,
                        side,
                        block,
                    }
                } else {
                    StoreError::Missing {
                        table: *id,
                        store: self.describe(),
                    }
                },
            ),
        }
    }

    /// Reads the header, dictionary and blocks in one read-only sled transaction, so the
    /// table is a consistent snapshot even while another thread replaces it.
    fn load_table(&self, id: &TableId) -> Result<EncodedTable, StoreError> {
        use sled::transaction::{ConflictableTransactionError as Tx, TransactionError};
        let missing = || StoreError::Missing {
            table: *id,
            store: self.describe(),
        };
        let result = self.tree.transaction(|tx| {
            let corrupt = |m: &str| Tx::Abort(StoreError::Corrupt(*id, m.to_string()));
            let Some(hv) = tx.get(header_key(id))? else {
                return Err(Tx::Abort(missing()));
            };
            let header = parse_header_value(id, &hv).map_err(Tx::Abort)?;
            let dictionary = match header.dictionary {
                None => None,
                Some(_) => Some(
                    tx.get(dictionary_key(id))?
                        .ok_or_else(|| corrupt("the dictionary is missing"))?
                        .to_vec(),
                ),
            };
            let mut blocks: [Vec<Vec<u8>>; 2] = [Vec::new(), Vec::new()];
            for side in Color::ALL {
                for b in 0..header.blocks[side.index()].len() as u32 {
                    let v = tx.get(block_key(id, side, b))?.ok_or_else(|| {
                        corrupt(&format!("block {b} for {side} to move is missing"))
                    })?;
                    blocks[side.index()].push(v.to_vec());
                }
            }
            Ok(EncodedTable {
                header,
                dictionary,
                blocks,
            })
        });
        let table = match result {
            Ok(t) => t,
            Err(TransactionError::Abort(e)) => return Err(e),
            Err(TransactionError::Storage(e)) => return Err(db_err("reading a table")(e)),
        };
        table
            .validate()
            .map_err(|e| StoreError::Corrupt(*id, e.to_string()))?;
        Ok(table)
    }

    fn dictionary(&self, id: &TableId) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(self
            .tree
            .get(dictionary_key(id))
            .map_err(db_err("using the store"))?
            .map(|v| v.to_vec()))
    }

    fn list_tables(&self) -> Result<Vec<TableHeader>, StoreError> {
        let mut out = Vec::new();
        for kv in self.tree.scan_prefix(b"h/") {
            let (k, v) = kv.map_err(db_err("using the store"))?;
            let name = String::from_utf8_lossy(&k[2..]).into_owned();
            let id = parse_store_name(&name).ok_or(StoreError::UnknownTable(name))?;
            out.push(parse_header_value(&id, &v)?);
        }
        out.sort_by_key(|h| (h.signature.name(), h.rules));
        Ok(out)
    }
}

/// One shard file of a [`ShardDir`].
struct ShardEntry {
    path: PathBuf,
    file: File,
    layout: ShardLayout,
}

/// A directory of shard files ([`ShardDir::file_name`]), read in place.
///
/// Opening reads and checks each file's preamble and header (a few kilobytes); blocks are read
/// with positioned reads and checked against their CRC-32 when used, so every byte a probe
/// relies on is verified without reading whole files. Writing a table writes a temporary file,
/// syncs it and renames it over `SIGNATURE.xqtb`: atomic on POSIX file systems.
pub struct ShardDir {
    dir: PathBuf,
    entries: RwLock<HashMap<TableId, Arc<ShardEntry>>>,
}

impl std::fmt::Debug for ShardDir {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ShardDir({})", self.dir.display())
    }
}

impl ShardDir {
    /// Opens directory `dir` (creating it if needed) and reads the headers of its shard files.
    /// A damaged header is an error naming the file.
    pub fn open(dir: impl AsRef<Path>) -> Result<ShardDir, StoreError> {
        let dir = dir.as_ref().to_path_buf();
        std::fs::create_dir_all(&dir)
            .map_err(|e| IoError::new(format!("creating {}", dir.display()), e))?;
        let sd = ShardDir {
            dir,
            entries: RwLock::new(HashMap::new()),
        };
        sd.rescan()?;
        Ok(sd)
    }

    /// The shard file name of table `id`: `SIGNATURE.xqtb` for `cycles-are-draws` tables,
    /// `SIGNATURE.RULES.xqtb` for the other rule sets (the header inside says which table a file
    /// holds; the name is for people).
    pub fn file_name(id: &TableId) -> String {
        if id.rules == RuleSet::CyclesAreDraws {
            format!("{}.{}", id.signature.name(), shard::EXTENSION)
        } else {
            let (sig, rules) = (id.signature.name(), id.rules.name());
            format!("{sig}.{rules}.{}", shard::EXTENSION)
        }
    }

    /// Re-reads the directory (after files were added or replaced by someone else).
    pub fn rescan(&self) -> Result<(), StoreError> {
        let mut found = HashMap::new();
        let rd = std::fs::read_dir(&self.dir)
            .map_err(|e| IoError::new(format!("reading {}", self.dir.display()), e))?;
        for entry in rd {
            let path = entry
                .map_err(|e| IoError::new(format!("reading {}", self.dir.display()), e))?
                .path();
            if path.extension().and_then(|e| e.to_str()) != Some(shard::EXTENSION) {
                continue;
            }
            let e = open_entry(&path)?;
            found.insert(e.layout.header.id(), Arc::new(e));
        }
        *self.entries.write().expect("shard directory lock") = found;
        Ok(())
    }

    fn entry(&self, id: &TableId) -> Result<Arc<ShardEntry>, StoreError> {
        self.entries
            .read()
            .expect("shard directory lock")
            .get(id)
            .cloned()
            .ok_or_else(|| StoreError::Missing {
                table: *id,
                store: self.describe(),
            })
    }

    fn read_at(e: &ShardEntry, offset: u64, len: u32) -> Result<Vec<u8>, StoreError> {
        use std::os::unix::fs::FileExt;
        let mut buf = vec![0u8; len as usize];
        e.file
            .read_exact_at(&mut buf, offset)
            .map_err(|err| IoError::new(format!("reading {}", e.path.display()), err))?;
        Ok(buf)
    }
}

fn open_entry(path: &Path) -> Result<ShardEntry, StoreError> {
    let mut file =
        File::open(path).map_err(|e| IoError::new(format!("opening {}", path.display()), e))?;
    let layout = shard::read_shard_layout(&mut file).map_err(|error| StoreError::BadFile {
        path: path.display().to_string(),
        error,
    })?;
    Ok(ShardEntry {
        path: path.to_path_buf(),
        file,
        layout,
    })
}

impl TableStore for ShardDir {
    fn describe(&self) -> String {
        format!("shard directory {}", self.dir.display())
    }

    fn put_table(&self, table: &EncodedTable) -> Result<(), StoreError> {
        table.validate()?;
        let id = table.header.id();
        let bytes = shard::write_shard(table);
        let path = self.dir.join(ShardDir::file_name(&id));
        let tmp = self.dir.join(format!(
            ".{}.tmp-{}",
            ShardDir::file_name(&id),
            std::process::id()
        ));
        let write = || -> std::io::Result<()> {
            let mut f = File::create(&tmp)?;
            f.write_all(&bytes)?;
            f.sync_all()?;
            std::fs::rename(&tmp, &path)?;
            File::open(&self.dir)?.sync_all()
        };
        if let Err(e) = write() {
            let _ = std::fs::remove_file(&tmp);
            return Err(IoError::new(format!("writing {}", path.display()), e).into());
        }
        let e = open_entry(&path)?;
        self.entries
            .write()
            .expect("shard directory lock")
            .insert(id, Arc::new(e));
        Ok(())
    }

    fn header(&self, id: &TableId) -> Result<Option<TableHeader>, StoreError> {
        Ok(self
            .entries
            .read()
            .expect("shard directory lock")
            .get(id)
            .map(|e| e.layout.header.clone()))
    }

    fn block(&self, id: &TableId, side: Color, block: u32) -> Result<Vec<u8>, StoreError> {
        let e = self.entry(id)?;
        let l = &e.layout;
        let (Some(&offset), Some(info)) = (
            l.block_offsets[side.index()].get(block as usize),
            l.header.blocks[side.index()].get(block as usize),
        ) else {
            return Err(StoreError::NoSuchBlock {
                table: *id,
                side,
                block,
            });
        };
        ShardDir::read_at(&e, offset, info.len)
    }

    fn dictionary(&self, id: &TableId) -> Result<Option<Vec<u8>>, StoreError> {
        let e = self.entry(id)?;
        match e.layout.header.dictionary {
            None => Ok(None),
            Some(BlockInfo { len, .. }) => {
                ShardDir::read_at(&e, e.layout.dictionary_offset, len).map(Some)
            }
        }
    }

    fn list_tables(&self) -> Result<Vec<TableHeader>, StoreError> {
        let mut out: Vec<TableHeader> = self
            .entries
            .read()
            .expect("shard directory lock")
            .values()
            .map(|e| e.layout.header.clone())
            .collect();
        out.sort_by_key(|h| (h.signature.name(), h.rules));
        Ok(out)
    }

    fn export_shard(&self, id: &TableId) -> Result<Vec<u8>, StoreError> {
        let e = self.entry(id)?;
        let bytes = std::fs::read(&e.path)
            .map_err(|err| IoError::new(format!("reading {}", e.path.display()), err))?;
        shard::read_shard(&bytes)?;
        Ok(bytes)
    }
}

/// Loads tables `ids` from `store` into memory, decoded and checked (the solver and the verifier
/// read dependency tables millions of times), adding them to `tables`; tables already there are
/// kept. `on_load` sees each table loaded and the seconds it took.
pub fn load_into_memory(
    store: &dyn TableStore,
    ids: &[TableId],
    tables: &mut MemoryTables,
    mut on_load: impl FnMut(&TableId, f64),
) -> Result<(), StoreError> {
    for id in ids {
        if tables.contains(id) {
            continue;
        }
        let started = std::time::Instant::now();
        let table = store.load_decoded(id)?;
        on_load(id, started.elapsed().as_secs_f64());
        tables.insert(Arc::new(table));
    }
    Ok(())
}
