//! Shared fixtures: a few small tables solved once per process, and a table store in memory.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock, RwLock};
use std::time::UNIX_EPOCH;
use storage_format::codec::{EncodedTable, TableHeader, decode_table, encode_table};
use storage_format::shard::{read_shard, write_shard};
use storage_format::store::{ShardDir, StoreError, TableStore};
use xiangqi::Color;
use xqtb_core::{MemoryTables, RuleSet, Signature, TableId};

/// The rule set of the fixtures (the default of new tables).
pub const RULES: RuleSet = RuleSet::Asian;

/// The solved closure: KNvK, KRvK, KRvKA, KRvKN (KRvKN has positions the repetition rules
/// decide).
pub const ROOTS: [&str; 2] = ["KRvKN", "KRvKA"];

/// The table the upload target leases (it depends on KRvK).
pub const UPLOADED: &str = "KRvKA";

pub struct Fixtures {
    /// The solved tables, the ground truth.
    pub tables: MemoryTables,
    /// Every table's id, dependencies first.
    pub ids: Vec<TableId>,
    /// Every table encoded as the store keeps it (default codec parameters).
    pub encoded: Vec<EncodedTable>,
}

impl Fixtures {
    pub fn encoded(&self, id: &TableId) -> &EncodedTable {
        self.encoded
            .iter()
            .find(|t| t.header.id() == *id)
            .expect("fixture table")
    }
}

pub fn sig(s: &str) -> Signature {
    s.parse().expect("fixture signature")
}

pub fn id(s: &str) -> TableId {
    TableId::new(RULES, sig(s))
}

static CACHE: AtomicBool = AtomicBool::new(false);

/// Keeps the solved fixtures as shard files next to the running binary, keyed by the binary,
/// and reads them from there when present. The fuzz targets turn this on: under coverage
/// instrumentation solving is slow, a start-up every fuzzing process would pay (`cmin`,
/// `-fork`, every replayed crash).
pub fn cache_next_to_binary() {
    CACHE.store(true, Ordering::Relaxed);
}

fn roots() -> Vec<Signature> {
    ROOTS.iter().map(|s| sig(s)).collect()
}

fn solve() -> MemoryTables {
    solver::solve_closure_in_memory(&roots(), RULES, |_, _| {}).expect("solve")
}

/// Where the cache of the running binary is.
fn cache_dir() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let meta = std::fs::metadata(&exe).ok()?;
    let mtime = meta.modified().ok()?.duration_since(UNIX_EPOCH).ok()?;
    Some(exe.with_file_name(format!(
        "xqtb-fuzz-fixtures-{}-{}",
        meta.len(),
        mtime.as_nanos()
    )))
}

fn load(dir: &Path, ids: &[TableId]) -> Option<MemoryTables> {
    let mut tables = MemoryTables::new();
    for id in ids {
        let bytes = std::fs::read(dir.join(ShardDir::file_name(id))).ok()?;
        let table = decode_table(&read_shard(&bytes).ok()?).ok()?;
        tables.insert(Arc::new(table));
    }
    Some(tables)
}

fn save(dir: &Path, ids: &[TableId], tables: &MemoryTables) -> std::io::Result<()> {
    let tmp = dir.with_extension(format!("tmp{}", std::process::id()));
    std::fs::create_dir_all(&tmp)?;
    for id in ids {
        let shard = write_shard(&encode_table(tables.get(id).expect("solved")));
        std::fs::write(tmp.join(ShardDir::file_name(id)), shard)?;
    }
    std::fs::rename(&tmp, dir)
}

fn solved_tables(ids: &[TableId]) -> MemoryTables {
    if !CACHE.load(Ordering::Relaxed) {
        return solve();
    }
    let Some(dir) = cache_dir() else {
        return solve();
    };
    if let Some(tables) = load(&dir, ids) {
        return tables;
    }
    let tables = solve();
    let _ = save(&dir, ids, &tables);
    tables
}

/// The fixtures, solved on first use (quick in a release build: the tables are small).
pub fn fixtures() -> &'static Fixtures {
    static F: OnceLock<Fixtures> = OnceLock::new();
    F.get_or_init(|| {
        let ids: Vec<TableId> = xqtb_core::closure_of(&roots())
            .into_iter()
            .map(|s| TableId::new(RULES, s))
            .collect();
        let tables = solved_tables(&ids);
        let encoded = ids
            .iter()
            .map(|id| encode_table(tables.get(id).expect("solved")))
            .collect();
        Fixtures {
            tables,
            ids,
            encoded,
        }
    })
}

/// A table store in memory: the contract of `TableStore` (tables checked against their
/// headers before they are stored) without a database, for the fuzz loops.
#[derive(Default)]
pub struct MemStore {
    tables: RwLock<HashMap<TableId, Arc<EncodedTable>>>,
}

impl MemStore {
    pub fn new() -> MemStore {
        MemStore::default()
    }

    pub fn with(tables: &[EncodedTable]) -> MemStore {
        let s = MemStore::new();
        for t in tables {
            s.put_table(t).expect("fixture table stores");
        }
        s
    }

    fn get(&self, id: &TableId) -> Option<Arc<EncodedTable>> {
        self.tables.read().unwrap().get(id).cloned()
    }
}

impl TableStore for MemStore {
    fn describe(&self) -> String {
        "memory store".into()
    }

    fn put_table(&self, table: &EncodedTable) -> Result<(), StoreError> {
        table.validate()?;
        self.tables
            .write()
            .unwrap()
            .insert(table.header.id(), Arc::new(table.clone()));
        Ok(())
    }

    fn header(&self, id: &TableId) -> Result<Option<TableHeader>, StoreError> {
        Ok(self.get(id).map(|t| t.header.clone()))
    }

    fn block(&self, id: &TableId, side: Color, block: u32) -> Result<Vec<u8>, StoreError> {
        let t = self.get(id).ok_or_else(|| StoreError::Missing {
            table: *id,
            store: self.describe(),
        })?;
        t.blocks[side.index()]
            .get(block as usize)
            .cloned()
            .ok_or(StoreError::NoSuchBlock {
                table: *id,
                side,
                block,
            })
    }

    fn dictionary(&self, id: &TableId) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(self.get(id).and_then(|t| t.dictionary.clone()))
    }

    fn list_tables(&self) -> Result<Vec<TableHeader>, StoreError> {
        let mut v: Vec<TableHeader> = self
            .tables
            .read()
            .unwrap()
            .values()
            .map(|t| t.header.clone())
            .collect();
        v.sort_by_key(|h| h.signature.name());
        Ok(v)
    }
}
