//! The probing library: a position's value, every legal move's value and the main line, read
//! from a [`TableStore`] through a cache of decompressed blocks.
//!
//! A position is looked up in its canonical table: when Black holds the stronger side the board
//! is rotated with the colours swapped, and the index folds left-right mirror images into one
//! slot. Values are always from the side to move's point of view; a move's value is the value
//! of the position it leads to, for the side then to move (as common tablebase APIs report it).
//! Positions outside the tables and illegal positions are errors, never a guess.

use quick_cache::Weighter;
use quick_cache::sync::Cache;
use std::cell::RefCell;
use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{
    AtomicU32, AtomicU64, Ordering::Acquire, Ordering::Relaxed, Ordering::Release,
};
use std::sync::{Arc, RwLock};
use storage_format::codec::{BlockDecoder, TableHeader};
use storage_format::store::{ShardDir, SledStore, StoreError, TableStore};
use xiangqi::notation::{to_chinese, to_wxf};
use xiangqi::{Board, Color, Move};
use xqtb_core::{
    MAX_PIECES, Material, MoveReading, Orientation, Probe, ProbeError, Rule, RuleSet, Signature,
    TableId, TableIndex, Value,
};

/// Bytes of decompressed blocks the cache holds unless told otherwise.
pub const DEFAULT_CACHE_BYTES: u64 = 256 << 20;

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
struct BlockKey {
    table: TableId,
    /// The [`Loaded::generation`] the block belongs to: a table reloaded after it was replaced
    /// in the store never sees the old version's blocks.
    generation: u32,
    side: u8,
    block: u32,
}

#[derive(Clone)]
struct BlockWeight;

impl Weighter<BlockKey, Arc<[u8]>> for BlockWeight {
    fn weight(&self, _key: &BlockKey, val: &Arc<[u8]>) -> u64 {
        val.len() as u64 + 64
    }
}

/// A table ready for probing: header, index and block decoder.
struct Loaded {
    id: TableId,
    generation: u32,
    header: TableHeader,
    index: TableIndex,
    decoder: BlockDecoder,
}

/// Tables read from a store, with a cache of decompressed blocks shared by all threads.
///
/// Generic over the store (`Tablebase<SledStore>`, `Tablebase<Arc<SledStore>>` to share one
/// store, or the default `Tablebase<Arc<dyn TableStore>>` to choose at run time).
pub struct Tablebase<S: TableStore = Arc<dyn TableStore>> {
    store: S,
    tables: RwLock<HashMap<TableId, Arc<Loaded>>>,
    cache: Cache<BlockKey, Arc<[u8]>, BlockWeight>,
    loads: AtomicU64,
    lookups: AtomicU64,
    generations: AtomicU32,
    /// Identifies this tablebase in the threads' recent lists.
    id: u64,
    /// Bumped when a table is dropped from `tables`; older recent-list entries are stale.
    epoch: AtomicU64,
}

/// A position's table and canonical placement, for the values of its quiet moves.
struct MoveContext {
    table: Arc<Loaded>,
    /// How the position is turned into its table's orientation.
    orientation: Orientation,
    /// Canonical side to move after a move.
    side_after: Color,
    squares: [u8; MAX_PIECES],
    /// Flat position of the piece on each canonical square.
    pos_of: [u8; 90],
    /// How the position reads its moves (a move into another pawn slice of a table solved
    /// slice by slice reads like a capture).
    reading: MoveReading,
}

impl MoveContext {
    /// The value after the quiet (non-capturing) legal move `m`.
    fn value_after<S: TableStore>(&self, tb: &Tablebase<S>, m: Move) -> Result<Value, ProbeError> {
        let o = &self.orientation;
        let (from, to) = (
            o.square(m.from().index() as u8),
            o.square(m.to().index() as u8),
        );
        let index = &self.table.index;
        let mut sq = self.squares;
        sq[self.pos_of[from as usize] as usize] = to;
        let slot = index
            .encode(&sq[..index.piece_count()])
            .ok_or_else(|| ProbeError::Illegal("a piece stands off its legal points".into()))?;
        Ok(self
            .reading
            .quiet(slot, tb.value_at(&self.table, self.side_after, slot)?))
    }
}

thread_local! {
    /// Per thread, the tables recently probed, by tablebase.
    static RECENT: RefCell<Vec<Recent>> = const { RefCell::new(Vec::new()) };
}

/// Most tables a thread keeps in its recent list.
const RECENT_MAX: usize = 16;

/// A table in a thread's recent list.
struct Recent {
    /// [`Tablebase::id`] of the owner.
    owner: u64,
    /// The owner's [`Tablebase::epoch`] when the entry was made.
    epoch: u64,
    table: Arc<Loaded>,
}

/// Source of [`Tablebase::id`].
static NEXT_ID: AtomicU64 = AtomicU64::new(0);

/// Why a block could not be read.
enum BlockError {
    /// The block does not match the header's checksum: damaged, or the table was replaced in
    /// the store since its header was read.
    Mismatch(ProbeError),
    /// Anything else.
    Other(ProbeError),
}

impl BlockError {
    fn into_inner(self) -> ProbeError {
        match self {
            BlockError::Mismatch(e) | BlockError::Other(e) => e,
        }
    }
}

impl<S: TableStore> std::fmt::Debug for Tablebase<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Tablebase({})", self.store.describe())
    }
}

/// A legal move and the value of the position it leads to, from the next side to move's view.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MoveInfo {
    /// The move.
    pub mv: Move,
    /// ICCS coordinates, e.g. `h2e2`.
    pub iccs: String,
    /// Chinese notation, e.g. `炮二平五`.
    pub chinese: String,
    /// WXF notation, e.g. `C2.5`.
    pub wxf: String,
    /// The value after the move for the side then to move.
    pub value: Value,
}

impl MoveInfo {
    /// The move's value for the side playing it.
    pub fn for_mover(&self) -> Value {
        self.value.for_mover()
    }
}

/// A probed position: its value and every legal move's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProbeResult {
    /// The position's FEN, normalised (`- - 0 1` after the side to move).
    pub fen: String,
    /// The position.
    pub board: Board,
    /// Its canonical table, `None` when neither side has an attacking piece (a draw without a
    /// table).
    pub table: Option<Signature>,
    /// The rule set the value is under.
    pub rules: RuleSet,
    /// The value for the side to move.
    pub value: Value,
    /// Every legal move, best first for the side to move (fastest win, then draws, then the
    /// longest loss; ties by ICCS).
    pub moves: Vec<MoveInfo>,
}

/// How a main line ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LineEnd {
    /// The side to move is in check with no legal move.
    Mate,
    /// The side to move has no legal move without being in check (also a loss in Xiangqi).
    Stalemate,
    /// The position is drawn: no side can force mate.
    Draw,
    /// The side to move can only keep up this perpetual offence (which loses) or walk into a
    /// loss.
    Rule(Rule),
}

impl LineEnd {
    /// `"mate"`, `"stalemate"`, `"draw"`, `"perpetual-check"` or `"perpetual-chase"`.
    pub const fn name(self) -> &'static str {
        match self {
            LineEnd::Mate => "mate",
            LineEnd::Stalemate => "stalemate",
            LineEnd::Draw => "draw",
            LineEnd::Rule(r) => r.name(),
        }
    }
}

/// A best line: the winner's fastest mate against the loser's longest defence.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MainLine {
    /// The starting position's FEN, normalised.
    pub fen: String,
    /// The starting position.
    pub board: Board,
    /// The rule set the values are under.
    pub rules: RuleSet,
    /// The value of the starting position for its side to move.
    pub value: Value,
    /// The moves; each value is the position after the move, for the side then to move.
    pub moves: Vec<MoveInfo>,
    /// The position at the end of the line.
    pub end_board: Board,
    /// How the line ends.
    pub end: LineEnd,
    /// For a line that ends by a rule: the offence played on from the end, the loser keeping it
    /// up and the winner keeping it trapped, until a position repeats.
    pub cycle: Vec<MoveInfo>,
}

fn storage(table: TableId, e: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> ProbeError {
    ProbeError::storage(table, e)
}

impl Tablebase<SledStore> {
    /// A tablebase over the sled store in `dir`.
    pub fn open_sled(dir: impl AsRef<Path>) -> Result<Tablebase<SledStore>, StoreError> {
        Ok(Tablebase::new(SledStore::open(dir)?))
    }
}

impl Tablebase<ShardDir> {
    /// A tablebase over the shard files in `dir`, read in place.
    pub fn open_shards(dir: impl AsRef<Path>) -> Result<Tablebase<ShardDir>, StoreError> {
        Ok(Tablebase::new(ShardDir::open(dir)?))
    }
}

impl<S: TableStore> Tablebase<S> {
    /// A tablebase over `store` with the default cache size.
    pub fn new(store: S) -> Tablebase<S> {
        Tablebase::with_cache_bytes(store, DEFAULT_CACHE_BYTES)
    }

    /// A tablebase over `store` caching up to `bytes` of decompressed blocks.
    pub fn with_cache_bytes(store: S, bytes: u64) -> Tablebase<S> {
        let items = (bytes / 16_384).clamp(16, 1 << 20) as usize;
        Tablebase {
            store,
            tables: RwLock::new(HashMap::new()),
            cache: Cache::with_weighter(items, bytes.max(1), BlockWeight),
            loads: AtomicU64::new(0),
            lookups: AtomicU64::new(0),
            generations: AtomicU32::new(0),
            id: NEXT_ID.fetch_add(1, Relaxed),
            epoch: AtomicU64::new(0),
        }
    }

    /// The store probed.
    pub fn store(&self) -> &S {
        &self.store
    }

    /// Empties the block cache (the next probes read and decompress blocks again).
    pub fn clear_cache(&self) {
        self.cache.clear();
    }

    /// Blocks read from the store and decompressed so far (cache misses).
    pub fn blocks_loaded(&self) -> u64 {
        self.loads.load(Relaxed)
    }

    /// Block lookups so far (cache hits are `block_lookups() - blocks_loaded()`).
    pub fn block_lookups(&self) -> u64 {
        self.lookups.load(Relaxed)
    }

    /// Decompressed bytes currently cached.
    pub fn cached_bytes(&self) -> u64 {
        self.cache.weight()
    }

    /// Tables whose header and index are held (loaded by a probe, not yet replaced).
    pub fn tables_open(&self) -> usize {
        self.tables.read().expect("table map lock").len()
    }

    /// The header of table `id`, loading the table if needed.
    pub fn header(&self, id: &TableId) -> Result<TableHeader, ProbeError> {
        Ok(self.table(id)?.header.clone())
    }

    /// The table `id` from the shared map, loading it from the store if needed.
    fn table(&self, id: &TableId) -> Result<Arc<Loaded>, ProbeError> {
        if let Some(t) = self.tables.read().expect("table map lock").get(id) {
            return Ok(Arc::clone(t));
        }
        let header = self
            .store
            .header(id)
            .map_err(|e| storage(*id, e))?
            .ok_or_else(|| ProbeError::NotInStore {
                table: *id,
                store: self.store.describe(),
            })?;
        let index = header.index().map_err(|e| storage(*id, e))?;
        let dictionary = match &header.dictionary {
            None => None,
            Some(info) => {
                let d = self
                    .store
                    .dictionary(id)
                    .map_err(|e| storage(*id, e))?
                    .ok_or_else(|| storage(*id, "the compression dictionary is missing"))?;
                if !info.matches(&d) {
                    return Err(storage(*id, "the compression dictionary is corrupt"));
                }
                Some(d)
            }
        };
        let loaded = Arc::new(Loaded {
            id: *id,
            generation: self.generations.fetch_add(1, Relaxed),
            decoder: BlockDecoder::new(dictionary.as_deref()),
            header,
            index,
        });
        let mut map = self.tables.write().expect("table map lock");
        Ok(Arc::clone(map.entry(*id).or_insert(loaded)))
    }

    /// Runs `f` on the table `id`. The thread's own list of recent tables is tried first, so
    /// a probe normally touches no lock and no reference count shared with other threads.
    /// `f` must not probe (it runs while the thread's list is borrowed; a nested probe would
    /// only miss the list, never panic).
    fn with_table<R>(
        &self,
        id: &TableId,
        f: impl FnOnce(&Arc<Loaded>) -> R,
    ) -> Result<R, ProbeError> {
        let epoch = self.epoch.load(Acquire);
        let mine = |e: &Recent| e.owner == self.id && e.epoch == epoch && e.table.id == *id;
        let mut f = Some(f);
        let hit = RECENT.with(|c| {
            let list = c.try_borrow().ok()?;
            let e = list.iter().find(|e| mine(e))?;
            Some((f.take().expect("called once"))(&e.table))
        });
        if let Some(r) = hit {
            return Ok(r);
        }
        let t = self.table(id)?;
        let r = (f.take().expect("called once"))(&t);
        RECENT.with(|c| {
            if let Ok(mut list) = c.try_borrow_mut() {
                list.retain(|e| e.owner != self.id || (e.epoch == epoch && e.table.id != *id));
                if list.len() >= RECENT_MAX {
                    list.remove(0);
                }
                list.push(Recent {
                    owner: self.id,
                    epoch,
                    table: t,
                });
            }
        });
        Ok(r)
    }

    /// After a block failed its checksum: whether the table was replaced in the store (then it
    /// is dropped, to be read again) rather than damaged.
    fn replaced(&self, t: &Loaded) -> Result<bool, ProbeError> {
        let id = t.id;
        match self.store.header(&id).map_err(|e| storage(id, e))? {
            Some(h) if h != t.header => {
                let mut map = self.tables.write().expect("table map lock");
                if map.get(&id).is_some_and(|x| x.generation == t.generation) {
                    map.remove(&id);
                }
                self.epoch.fetch_add(1, Release);
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    fn load_block(&self, t: &Loaded, side: Color, block: u32) -> Result<Arc<[u8]>, BlockError> {
        self.loads.fetch_add(1, Relaxed);
        let h = &t.header;
        let id = t.id;
        let other = |e: String| BlockError::Other(storage(id, e));
        let info = h.blocks[side.index()]
            .get(block as usize)
            .ok_or_else(|| other(format!("no block {block} for {side} to move")))?;
        let data = match self.store.block(&id, side, block) {
            Ok(d) => d,
            Err(StoreError::NoSuchBlock { .. }) => {
                return Err(BlockError::Mismatch(storage(
                    id,
                    format!("block {block} for {side} to move is missing"),
                )));
            }
            Err(e) => return Err(BlockError::Other(storage(id, e))),
        };
        if !info.matches(&data) {
            return Err(BlockError::Mismatch(storage(
                id,
                format!("block {block} for {side} to move is corrupt (checksum mismatch)"),
            )));
        }
        let bytes = t
            .decoder
            .decompress_block(h, block, &data)
            .map_err(|e| other(format!("block {block} for {side} to move: {e}")))?;
        Ok(bytes.into())
    }

    /// The stored value of `slot` with `side` to move. A block that does not match the cached
    /// header is read again with a fresh header if the table was replaced in the store;
    /// otherwise it is corrupt, and that is the error.
    fn value_at(&self, t: &Loaded, side: Color, slot: u64) -> Result<Value, ProbeError> {
        match self.value_in(t, side, slot) {
            Ok(v) => Ok(v),
            Err(BlockError::Other(e)) => Err(e),
            Err(BlockError::Mismatch(e)) => {
                if !self.replaced(t)? {
                    return Err(e);
                }
                let fresh = self.table(&t.id)?;
                self.value_in(&fresh, side, slot)
                    .map_err(BlockError::into_inner)
            }
        }
    }

    fn value_in(&self, t: &Loaded, side: Color, slot: u64) -> Result<Value, BlockError> {
        let h = &t.header;
        let bv = h.block_values as u64;
        let block = (slot / bv) as u32;
        let key = BlockKey {
            table: t.id,
            generation: t.generation,
            side: side.index() as u8,
            block,
        };
        self.lookups.fetch_add(1, Relaxed);
        let bytes = self
            .cache
            .get_or_insert_with(&key, || self.load_block(t, side, block))?;
        let code = h
            .layout
            .code_at(&bytes, h.values_in_block(block), (slot % bv) as usize);
        match Value::decode(code) {
            Value::Illegal => Err(BlockError::Other(storage(
                t.id,
                format!("slot {slot} for {side} to move holds no value for a legal position"),
            ))),
            v => Ok(v),
        }
    }

    /// The value of `board` under `rules`, checked to be a position that can occur;
    /// [`Probe::probe`].
    fn value_of(
        &self,
        rules: RuleSet,
        board: &Board,
    ) -> Result<(Option<Signature>, Value), ProbeError> {
        let pieces = Material::of_board(board).piece_count();
        if pieces as usize > MAX_PIECES {
            return Err(ProbeError::TooManyPieces {
                pieces,
                max: MAX_PIECES as u32,
            });
        }
        if board.king_square(Color::Red).is_none() || board.king_square(Color::Black).is_none() {
            return Err(ProbeError::Illegal("a king is missing".into()));
        }
        if board.opponent_in_check() {
            let them = board.side_to_move().opponent();
            return Err(ProbeError::Illegal(format!(
                "{them} is in check but it is not {them}'s turn"
            )));
        }
        self.value_of_legal(rules, board)
    }

    /// The value of `board`, known to be legal (the result of a legal move, or checked).
    fn value_of_legal(
        &self,
        rules: RuleSet,
        board: &Board,
    ) -> Result<(Option<Signature>, Value), ProbeError> {
        let o = Orientation::of_board(board);
        if o.signature.is_dead_draw() {
            return Ok((None, Value::Draw));
        }
        let id = TableId::new(rules, o.signature);
        let side = o.side(board.side_to_move());
        let (slot, v) = self
            .with_table(&id, |t| {
                t.index
                    .slot_of(board, o.rotated)
                    .map(|slot| (slot, self.value_in(t, side, slot)))
            })?
            .map_err(|e| ProbeError::Illegal(e.to_string()))?;
        match v {
            Ok(v) => Ok((Some(o.signature), v)),
            Err(BlockError::Other(e)) => Err(e),
            Err(BlockError::Mismatch(_)) => {
                let t = self.with_table(&id, Arc::clone)?;
                Ok((Some(o.signature), self.value_at(&t, side, slot)?))
            }
        }
    }

    /// What the moves of `board` need: its table and its canonical placement, so that a quiet
    /// move's slot is one re-encoding away. `None` for material without a table.
    fn context(&self, rules: RuleSet, board: &Board) -> Result<Option<MoveContext>, ProbeError> {
        let o = Orientation::of_board(board);
        if o.signature.is_dead_draw() || board.pieces().count() > MAX_PIECES {
            return Ok(None);
        }
        let table = self.with_table(&TableId::new(rules, o.signature), Arc::clone)?;
        let squares = table
            .index
            .squares_of(board, o.rotated)
            .ok_or_else(|| ProbeError::Illegal("material does not match the table".into()))?;
        let mut pos_of = [0xFFu8; 90];
        for (i, &s) in squares[..table.index.piece_count()].iter().enumerate() {
            pos_of[s as usize] = i as u8;
        }
        let slot = table
            .index
            .encode(&squares[..table.index.piece_count()])
            .ok_or_else(|| ProbeError::Illegal("a piece stands off its legal points".into()))?;
        Ok(Some(MoveContext {
            reading: MoveReading::new(rules, &table.index, slot),
            orientation: o,
            side_after: o.side(board.side_to_move()).opponent(),
            squares,
            pos_of,
            table,
        }))
    }

    /// Probes a FEN under `rules`: the value and every legal move's value. The FEN must describe
    /// a legal position; fields after the side to move are ignored.
    pub fn probe_fen(&self, rules: RuleSet, fen: &str) -> Result<ProbeResult, ProbeError> {
        let board = xiangqi::parse_fen(fen).map_err(|e| ProbeError::BadFen(e.to_string()))?;
        self.probe_board(rules, &board)
    }

    /// Probes a position under `rules`: the value and every legal move's value, best first.
    pub fn probe_board(&self, rules: RuleSet, board: &Board) -> Result<ProbeResult, ProbeError> {
        let (table, value) = self.value_of(rules, board)?;
        let moves = self.move_values(rules, board)?;
        let expected = moves.first().map_or(Value::Loss(0), |m| m.for_mover());
        // A position lost by rule 0 plies away takes its value from the rule, not its moves.
        let rule_terminal = matches!(value, Value::RuleLoss(r) if r.plies == 0);
        if expected != value && !rule_terminal {
            let sig = table.unwrap_or_else(|| Signature::new(Material::of_board(board)));
            return Err(storage(
                TableId::new(rules, sig),
                format!(
                    "inconsistent tables at {}: stored {value}, the moves give {expected}",
                    board.fen()
                ),
            ));
        }
        Ok(ProbeResult {
            fen: board.fen(),
            board: board.clone(),
            table,
            rules,
            value,
            moves,
        })
    }

    /// Every legal move of `board` with the value it leads to under `rules`, best first for the
    /// mover.
    pub fn move_values(&self, rules: RuleSet, board: &Board) -> Result<Vec<MoveInfo>, ProbeError> {
        let ctx = self.context(rules, board)?;
        let moves = board.legal_moves();
        let mut out = Vec::with_capacity(moves.len());
        let mut after = board.clone();
        for &m in moves.iter() {
            let value = match &ctx {
                Some(c) if board.is_empty(m.to()) => c.value_after(self, m)?,
                _ => {
                    let captured = after.make(m);
                    let v = self.value_of_legal(rules, &after);
                    after.unmake(m, captured);
                    // A capture leaves the table: the move list then agrees with the stored
                    // value one ply deep, as the solver and the verifier read it.
                    if captured.is_some() {
                        MoveReading::leaving(v?.1)
                    } else {
                        v?.1
                    }
                }
            };
            out.push(MoveInfo {
                mv: m,
                iccs: m.iccs(),
                chinese: to_chinese(board, m),
                wxf: to_wxf(board, m),
                value,
            });
        }
        out.sort_by(|a, b| {
            b.for_mover()
                .preference()
                .cmp(&a.for_mover().preference())
                .then_with(|| a.iccs.cmp(&b.iccs))
        });
        Ok(out)
    }

    /// The main line from `board` under `rules`: the side that wins plays its fastest mate, the
    /// side that loses its longest defence, until mate (or stalemate, also a loss). A drawn
    /// position gives an empty line ending in a draw. The line's length in plies equals the
    /// stored distance.
    pub fn mainline(&self, rules: RuleSet, board: &Board) -> Result<MainLine, ProbeError> {
        let start = self.probe_board(rules, board)?;
        let mut line = Vec::new();
        let mut current = start.clone();
        let end = loop {
            match current.value {
                Value::Draw => break LineEnd::Draw,
                Value::Loss(0) if current.board.in_check(current.board.side_to_move()) => {
                    break LineEnd::Mate;
                }
                Value::Loss(0) => break LineEnd::Stalemate,
                Value::RuleLoss(r) if r.plies == 0 => break LineEnd::Rule(r.rule),
                _ => {}
            }
            // probe_board checked that the best move keeps the value, one ply shorter, so the
            // line gets one ply closer to mate at every step and ends.
            let best = current.moves[0].clone();
            let mut next = current.board.clone();
            next.make(best.mv);
            line.push(best);
            current = self.probe_board(rules, &next)?;
        };
        let cycle = match (end, current.value) {
            (LineEnd::Rule(rule), Value::RuleLoss(r)) => {
                self.rule_cycle(rules, &current, rule, r.round)?
            }
            _ => Vec::new(),
        };
        Ok(MainLine {
            fen: start.fen,
            board: start.board,
            rules,
            value: start.value,
            moves: line,
            end_board: current.board,
            end,
            cycle,
        })
    }

    /// From a position lost by `rule` 0 plies away, the offence played on until a position
    /// repeats, in a cycle that the adjudicator ([`xiangqi::repetition::adjudicate`]) rules a
    /// loss by `rule` for the side to move at the start. The loser plays offences that keep the
    /// position won for the other side, the winner moves back into positions lost by a rule 0
    /// plies away; both prefer the moves of the start's trap (see [`CycleSearch::candidates`]),
    /// the winner non-offences next, so that the cycle shown is one in which the winner does not
    /// offend as much: a greedy choice can repeat a position in a cycle of the winner's checks
    /// only, which the rule would rule against the winner. The search deepens two plies at a
    /// time, so the shortest such cycle is found first. Falls back to the first repetition found
    /// when no cycle ruled against the loser is found within the search's bounds.
    fn rule_cycle(
        &self,
        rules: RuleSet,
        start: &ProbeResult,
        rule: Rule,
        round: u8,
    ) -> Result<Vec<MoveInfo>, ProbeError> {
        let mut search = CycleSearch {
            rules,
            rule,
            round,
            loser: start.board.side_to_move(),
            boards: vec![start.board.clone()],
            path: Vec::new(),
            first: None,
            probed: HashMap::new(),
            max_plies: 0,
            steps: 0,
        };
        while search.max_plies < CycleSearch::MAX_PLIES
            && search.probed.len() < CycleSearch::MAX_POSITIONS
            && search.steps < CycleSearch::MAX_STEPS
        {
            search.max_plies += 2;
            if let Some(cycle) = search.run(self, start, 0)? {
                return Ok(cycle);
            }
        }
        Ok(search.first.unwrap_or_default())
    }

    /// The main line from a FEN.
    pub fn mainline_fen(&self, rules: RuleSet, fen: &str) -> Result<MainLine, ProbeError> {
        let board = xiangqi::parse_fen(fen).map_err(|e| ProbeError::BadFen(e.to_string()))?;
        self.mainline(rules, &board)
    }
}

impl<S: TableStore> Probe for Tablebase<S> {
    fn probe(&self, rules: RuleSet, board: &Board) -> Result<Value, ProbeError> {
        self.value_of(rules, board).map(|(_, v)| v)
    }

    fn has_table(&self, id: &TableId) -> bool {
        self.with_table(id, |_| ()).is_ok()
    }
}

/// The search behind [`Tablebase::rule_cycle`]: depth first to `max_plies`, deepened by the
/// caller.
struct CycleSearch {
    rules: RuleSet,
    rule: Rule,
    /// The round of the start's rule value: its trap's.
    round: u8,
    loser: Color,
    /// The positions of the current path, from the start.
    boards: Vec<Board>,
    path: Vec<MoveInfo>,
    /// The first repetition found, whatever its verdict.
    first: Option<Vec<MoveInfo>>,
    /// The positions probed so far (each deepening meets the last one's again).
    probed: HashMap<Board, ProbeResult>,
    /// Longest path of this deepening, in plies.
    max_plies: usize,
    /// Moves tried so far, over all deepenings.
    steps: usize,
}

impl CycleSearch {
    /// Longest path searched, in plies.
    const MAX_PLIES: usize = 40;
    /// Most positions probed.
    const MAX_POSITIONS: usize = 4000;
    /// Most moves tried: positions already probed cost nothing to probe again, and paths that
    /// meet them by transposition could otherwise be walked exponentially often.
    const MAX_STEPS: usize = 200_000;

    /// The moves searched from `current`, in the order tried. The loser: offences that keep the
    /// position won for the other side, those that stay in the trap of the start (the winner
    /// wins by the same rule, in the same round, one ply later) first: another offence can lead
    /// into another rule's trap, where the loser no longer has to commit this offence. The
    /// winner: moves back into positions lost by a rule 0 plies away, those of the start's trap
    /// first, then non-offences.
    fn candidates(&self, current: &ProbeResult) -> Vec<MoveInfo> {
        use xiangqi::repetition::{MoveClass, classify};
        let offence = |c: MoveClass| match self.rule {
            Rule::PerpetualCheck => c.check,
            Rule::PerpetualChase => c.is_chase(),
        };
        let same_trap = |v: Value, plies: u16| {
            matches!(v, Value::RuleWin(r) | Value::RuleLoss(r)
                if r.plies == plies && r.rule == self.rule && r.round == self.round)
        };
        let loser_to_move = current.board.side_to_move() == self.loser;
        let mut out: Vec<(bool, bool, &MoveInfo)> = current
            .moves
            .iter()
            .filter(|m| current.board.is_empty(m.mv.to()))
            .filter(|m| {
                if loser_to_move {
                    m.value.is_win()
                } else {
                    matches!(m.value, Value::RuleLoss(r) if r.plies == 0)
                }
            })
            .map(|m| {
                let o = offence(classify(&current.board, m.mv));
                let trap = same_trap(m.value, if loser_to_move { 1 } else { 0 });
                (o, trap, m)
            })
            .filter(|(o, _, _)| !loser_to_move || *o)
            .collect();
        out.sort_by(|a, b| {
            b.1.cmp(&a.1)
                .then_with(|| {
                    if loser_to_move {
                        std::cmp::Ordering::Equal
                    } else {
                        a.0.cmp(&b.0)
                    }
                })
                .then_with(|| a.2.iccs.cmp(&b.2.iccs))
        });
        out.into_iter().map(|(_, _, m)| m.clone()).collect()
    }

    fn run(
        &mut self,
        tb: &Tablebase<impl TableStore>,
        current: &ProbeResult,
        ply: usize,
    ) -> Result<Option<Vec<MoveInfo>>, ProbeError> {
        if ply >= self.max_plies {
            return Ok(None);
        }
        for m in self.candidates(current) {
            if self.steps >= Self::MAX_STEPS {
                return Ok(None);
            }
            self.steps += 1;
            let mut next = current.board.clone();
            next.make(m.mv);
            self.path.push(m);
            if let Some(i) = self.boards.iter().position(|b| *b == next) {
                if self.first.is_none() {
                    self.first = Some(self.path.clone());
                }
                let moves: Vec<Move> = self.path[i..].iter().map(|m| m.mv).collect();
                let ruled =
                    xiangqi::repetition::adjudicate(&self.boards[i], &moves).is_ok_and(|a| {
                        matches!(a.verdict, xiangqi::repetition::Verdict::Loses { loser, offence }
                            if loser == self.loser && offence.name() == self.rule.name())
                    });
                if ruled {
                    return Ok(Some(self.path.clone()));
                }
            } else {
                let probed = match self.probed.get(&next) {
                    Some(p) => p.clone(),
                    None if self.probed.len() >= Self::MAX_POSITIONS => {
                        self.path.pop();
                        return Ok(None);
                    }
                    None => {
                        let p = tb.probe_board(self.rules, &next)?;
                        self.probed.insert(next.clone(), p.clone());
                        p
                    }
                };
                self.boards.push(next);
                let found = self.run(tb, &probed, ply + 1)?;
                self.boards.pop();
                if found.is_some() {
                    return Ok(found);
                }
            }
            self.path.pop();
        }
        Ok(None)
    }
}
