//! The commands that read stored tables: `probe`, `mainline`, `export`, `import`, `verify` and
//! `tables`. JSON field names carry their units: `wdl` is `win`/`draw`/`loss` for the side to
//! move, `dtm_plies` the distance to mate in plies (`null` for a draw).

use anyhow::{Context, Result, anyhow, bail};
use clap::Args;
use probe::{LineEnd, MainlineReport, ProbeReport, ProbeResult, Tablebase};
use serde_json::{Value as Json, json};
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;
use storage_format::codec::TableHeader;
use storage_format::store::StoreError;
use storage_format::{ShardDir, SledStore, TableStore, load_into_memory};
use xiangqi::Color;
use xqtb_core::{MemoryTables, Plies, ProbeError, RuleSet, TableId};

/// Default directory of the table store.
pub const DEFAULT_DATA: &str = "./xqtb-data";

/// Where tables are read from.
#[derive(Args)]
pub struct Source {
    /// Directory of the table store (default ./xqtb-data).
    #[arg(long)]
    data: Option<PathBuf>,
    /// Read the shard files of this directory in place instead of a store.
    #[arg(long, conflicts_with = "data")]
    shards: Option<PathBuf>,
}

impl Source {
    fn data_dir(&self) -> PathBuf {
        self.data.clone().unwrap_or_else(|| DEFAULT_DATA.into())
    }

    fn store(&self) -> Result<Arc<dyn TableStore>> {
        Ok(match &self.shards {
            Some(dir) => {
                if !dir.is_dir() {
                    bail!("shard directory {} does not exist", dir.display());
                }
                Arc::new(ShardDir::open(dir)?)
            }
            None => Arc::new(open_existing_store(&self.data_dir())?),
        })
    }

    fn tablebase(&self) -> Result<Tablebase> {
        Ok(Tablebase::new(self.store()?))
    }

    /// The tables to read, or `None` when no source was named and the default store does not
    /// exist (a mate search runs without tables).
    pub(crate) fn tablebase_if_any(&self) -> Result<Option<Tablebase>> {
        if self.shards.is_none() && self.data.is_none() && !self.data_dir().is_dir() {
            return Ok(None);
        }
        self.tablebase().map(Some)
    }

    /// `e` with the commands that make the table it finds missing, if it finds one: the fix is
    /// obvious, so the message says it (for the store or shard directory these commands read).
    fn with_fix(&self, e: impl Into<anyhow::Error>) -> anyhow::Error {
        let e = e.into();
        match missing_table(&e) {
            Some(table) => anyhow!("{}; {}", rpc::error_chain(e.as_ref()), self.fix(&table)),
            None => e,
        }
    }

    /// The command that puts the tables `table` needs (`count` of them missing) where this
    /// source reads them.
    fn fix_dependencies(&self, table: &TableId, count: usize) -> String {
        let them = if count == 1 { "it" } else { "them" };
        let table = table_args(table);
        match (&self.shards, &self.data) {
            (Some(dir), _) => format!(
                "fetch {them} with `xqtb download {table} -o {} --server URL`",
                shell_word(&dir.display().to_string())
            ),
            (None, Some(data)) => format!(
                "generate {them} with `xqtb generate {table} --data {}`",
                shell_word(&data.display().to_string())
            ),
            (None, None) => format!("generate {them} with `xqtb generate {table}`"),
        }
    }

    /// The commands that put `table` where this source reads it.
    fn fix(&self, table: &TableId) -> String {
        let file_name = ShardDir::file_name(table);
        let table = table_args(table);
        match (&self.shards, &self.data) {
            (Some(dir), _) => {
                let file = dir.join(file_name);
                format!(
                    "fetch it, with the tables it needs, from a coordinator with `xqtb download {table} -o {} --server URL`, or generate it with `xqtb generate {table}` and write its shard file there with `xqtb export {table} -o {}`",
                    shell_word(&dir.display().to_string()),
                    shell_word(&file.display().to_string())
                )
            }
            (None, Some(data)) => format!(
                "generate it with `xqtb generate {table} --data {}`",
                shell_word(&data.display().to_string())
            ),
            (None, None) => format!("generate it with `xqtb generate {table}`"),
        }
    }
}

/// A table as the commands that make it take it: its signature, and its rule set when that is
/// not the default.
fn table_args(table: &TableId) -> String {
    if table.rules == RuleSet::default() {
        table.signature.name()
    } else {
        format!("{} --rules {}", table.signature.name(), table.rules)
    }
}

/// The table an error (or one of its causes) reports missing.
fn missing_table(e: &anyhow::Error) -> Option<TableId> {
    e.chain().find_map(|cause| {
        if let Some(p) = cause.downcast_ref::<ProbeError>() {
            return match p {
                ProbeError::MissingTable(t) | ProbeError::NotInStore { table: t, .. } => Some(*t),
                _ => None,
            };
        }
        match cause.downcast_ref::<StoreError>() {
            Some(StoreError::Missing { table, .. }) => Some(*table),
            _ => None,
        }
    })
}

/// `word` as one word for a POSIX shell: as it is when it holds nothing a shell would
/// interpret, else single-quoted, so a printed command can be pasted as it is.
fn shell_word(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_-./+=:,@%".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// Opens the sled store in `dir`, which must exist (reading commands never create one).
fn open_existing_store(dir: &Path) -> Result<SledStore> {
    if !dir.is_dir() {
        bail!(
            "no table store at {} (solve some tables with `xqtb solve SIGNATURE --data {}`, or give --data DIR)",
            dir.display(),
            dir.display()
        );
    }
    Ok(SledStore::open(dir)?)
}

/// Arguments of `xqtb probe`.
#[derive(Args)]
pub struct ProbeArgs {
    /// Rule set of the tables to read.
    #[arg(long, default_value = "asian")]
    rules: RuleSet,
    /// Position in FEN (quote it).
    #[arg(required_unless_present = "batch", conflicts_with = "batch")]
    fen: Option<String>,
    /// Read FENs from standard input, one per line, and write one JSON object per line.
    #[arg(long)]
    batch: bool,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    source: Source,
}

/// Arguments of `xqtb mainline`.
#[derive(Args)]
pub struct MainlineArgs {
    /// Rule set of the tables to read.
    #[arg(long, default_value = "asian")]
    rules: RuleSet,
    /// Position in FEN (quote it).
    fen: String,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    source: Source,
}

/// Arguments of `xqtb export`.
#[derive(Args)]
pub struct ExportArgs {
    /// The table, e.g. KRNvKR.
    signature: String,
    /// Rule set of the table.
    #[arg(long, default_value = "asian")]
    rules: RuleSet,
    /// The shard file to write.
    #[arg(short, long)]
    output: PathBuf,
    /// Directory of the table store.
    #[arg(long, default_value = DEFAULT_DATA)]
    data: PathBuf,
}

/// Arguments of `xqtb import`.
#[derive(Args)]
pub struct ImportArgs {
    /// Shard files to import.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// Directory of the table store (created if needed).
    #[arg(long, default_value = DEFAULT_DATA)]
    data: PathBuf,
}

/// Arguments of `xqtb verify`.
#[derive(Args)]
pub struct VerifyArgs {
    /// The table, e.g. KRNvKR.
    signature: String,
    /// Rule set of the table.
    #[arg(long, default_value = "asian")]
    rules: RuleSet,
    /// Worker threads (default: all cores).
    #[arg(long)]
    threads: Option<usize>,
    #[command(flatten)]
    source: Source,
}

/// Arguments of `xqtb tables`.
#[derive(Args)]
pub struct TablesArgs {
    /// Print one JSON object per table, one per line (a table of which only some parts are
    /// stored: `table`, `rules`, `index_size`, `parts`, `slots_stored`, `stored_bytes` and
    /// `in_parts: true`).
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    source: Source,
}

fn probe_json(r: &ProbeResult) -> Json {
    serde_json::to_value(ProbeReport::from(r)).expect("a report serialises")
}

fn table_label(r: &ProbeResult) -> String {
    match r.table {
        Some(s) => format!("table {s}"),
        None => "no attacking piece on either side (no table needed)".into(),
    }
}

/// `xqtb probe`.
pub fn probe(args: ProbeArgs) -> Result<()> {
    let tb = args.source.tablebase()?;
    if args.batch {
        let stdin = std::io::stdin();
        let stdout = std::io::stdout();
        let mut out = std::io::BufWriter::new(stdout.lock());
        for line in stdin.lock().lines() {
            let line = line.context("reading standard input")?;
            let fen = line.trim();
            if fen.is_empty() || fen.starts_with('#') {
                continue;
            }
            let obj = match tb.probe_fen(args.rules, fen) {
                Ok(r) => probe_json(&r),
                Err(e) => json!({ "fen": fen, "error": e.to_string() }),
            };
            writeln!(out, "{obj}")?;
        }
        out.flush()?;
        return Ok(());
    }
    let fen = args.fen.as_deref().unwrap_or_default();
    let r = match tb.probe_fen(args.rules, fen) {
        Ok(r) => r,
        Err(e) => {
            if args.json {
                println!("{}", json!({ "fen": fen, "error": e.to_string() }));
            }
            return Err(args.source.with_fix(e));
        }
    };
    if args.json {
        println!("{}", probe_json(&r));
        return Ok(());
    }
    let us = r.board.side_to_move();
    println!("{}", r.board.fen());
    println!("{}, {us} to move: {}", table_label(&r), r.value);
    if r.moves.is_empty() {
        println!("no legal move");
        return Ok(());
    }
    println!(
        "moves, best first (value after the move, for {} to move):",
        us.opponent()
    );
    for m in &r.moves {
        println!("  {:<6}{:<8}{:<8}{}", m.iccs, m.chinese, m.wxf, m.value);
    }
    Ok(())
}

/// `xqtb mainline`.
pub fn mainline(args: MainlineArgs) -> Result<()> {
    let tb = args.source.tablebase()?;
    let board = xiangqi::parse_fen(&args.fen).map_err(|e| anyhow!("bad FEN: {e}"))?;
    let line = tb
        .mainline(args.rules, &board)
        .map_err(|e| args.source.with_fix(e))?;
    if args.json {
        println!("{}", serde_json::to_string(&MainlineReport::from(&line))?);
        return Ok(());
    }
    println!("{}", board.fen());
    println!("{} to move: {}", board.side_to_move(), line.value);
    if line.end == LineEnd::Draw && line.moves.is_empty() {
        println!("a draw: no side can force mate, so there is no main line");
        return Ok(());
    }
    let mut side = board.side_to_move();
    for (i, m) in line.moves.iter().enumerate() {
        println!(
            "  {:>3}. {side:<5} {:<6}{:<8}{:<8}then {}: {}",
            i + 1,
            m.iccs,
            m.chinese,
            m.wxf,
            side.opponent(),
            m.value
        );
        side = side.opponent();
    }
    println!(
        "{}, ends in {}: {}",
        Plies(line.moves.len() as u64),
        line.end.name(),
        line.end_board.fen()
    );
    if !line.cycle.is_empty() {
        let moves: Vec<&str> = line.cycle.iter().map(|m| m.iccs.as_str()).collect();
        println!(
            "the offence goes on until a position repeats: {}\n(judge it with: xqtb adjudicate \"{}\" {})",
            moves.join(" "),
            line.end_board.fen(),
            moves.join(" ")
        );
    }
    Ok(())
}

/// `xqtb export`.
pub fn export(args: ExportArgs) -> Result<()> {
    let sig = crate::parse_signature(&args.signature)?;
    let store = open_existing_store(&args.data)?;
    let source = Source {
        data: Some(args.data.clone()),
        shards: None,
    };
    let bytes = store
        .export_shard(&TableId::new(args.rules, sig))
        .map_err(|e| source.with_fix(e))?;
    let tmp = args.output.with_extension("tmp-export");
    std::fs::write(&tmp, &bytes).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, &args.output)
        .with_context(|| format!("renaming {} to {}", tmp.display(), args.output.display()))?;
    println!(
        "{sig}: wrote {} ({} bytes)",
        args.output.display(),
        bytes.len()
    );
    Ok(())
}

/// `xqtb import`.
pub fn import(args: ImportArgs) -> Result<()> {
    let store = SledStore::open(&args.data)?;
    let mut failed = 0;
    for file in &args.files {
        let result = std::fs::read(file)
            .map_err(anyhow::Error::from)
            .and_then(|bytes| Ok((bytes.len(), store.import_shard(&bytes)?)));
        match result {
            Ok((len, h)) => println!(
                "{}: imported {} ({len} bytes) into {}",
                file.display(),
                h.signature,
                args.data.display()
            ),
            Err(e) => {
                eprintln!("{}: refused: {e}", file.display());
                failed += 1;
            }
        }
    }
    if failed > 0 {
        bail!("{failed} of {} files refused", args.files.len());
    }
    Ok(())
}

/// `xqtb verify`.
pub fn verify(args: VerifyArgs) -> Result<()> {
    let sig = crate::parse_signature(&args.signature)?;
    let store = args.source.store()?;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(args.threads.unwrap_or(0))
        .build()?;
    let id = TableId::new(args.rules, sig);
    pool.install(|| -> Result<()> {
        let start = Instant::now();
        let table = store
            .load_decoded(&id)
            .map_err(|e| args.source.with_fix(e))?;
        let header = store
            .header(&id)?
            .ok_or_else(|| anyhow!("table {sig} vanished from the store"))?;
        let mut deps = MemoryTables::new();
        load_into_memory(&*store, &id.dependencies(), &mut deps, |_, _| {})
            .with_context(|| format!("loading the tables {sig} depends on"))
            .map_err(|e| args.source.with_fix(e))?;
        let loaded = start.elapsed().as_secs_f64();
        let start = Instant::now();
        let counts = solver::verify(&table, &deps).map_err(|e| anyhow!(e))?;
        if counts != header.counts {
            bail!("{sig}: the header's counts differ from the values");
        }
        println!(
            "{sig}: verified, every position agrees with its successors ({} legal positions; loaded and decoded in {loaded:.2} s, verified in {:.2} s)",
            counts.legal(),
            start.elapsed().as_secs_f64()
        );
        Ok(())
    })
}

fn counts_text(h: &TableHeader, side: Color) -> String {
    let c = &h.counts[side];
    let longest = match c.longest_win {
        Some((d, _)) => format!("{d}"),
        None => "-".into(),
    };
    format!("{}/{}/{}/{} {longest}", c.legal, c.wins, c.draws, c.losses)
}

fn header_json(h: &TableHeader) -> Json {
    let side = |c: Color| {
        let s = &h.counts[c];
        json!({
            "legal": s.legal,
            "wins": s.wins,
            "draws": s.draws,
            "losses": s.losses,
            "longest_win_plies": s.longest_win.map(|(d, _)| d),
        })
    };
    let legal = h.counts.legal();
    json!({
        "table": h.signature.name(),
        "rules": h.rules.name(),
        "index_size": h.index_size,
        "red_to_move": side(Color::Red),
        "black_to_move": side(Color::Black),
        "stored_bytes": h.stored_bytes(),
        "blocks": h.blocks.iter().map(Vec::len).sum::<usize>(),
        "block_values": h.block_values,
        "layout": h.layout.name(),
        "zstd_level": h.level,
        "dictionary_bytes": h.dictionary.map(|d| d.len),
        "bits_per_legal_position": h.stored_bytes() as f64 * 8.0 / legal.max(1) as f64,
    })
}

/// A table of which some parts (pawn slices solved as jobs of their own) are stored, waiting
/// for the rest.
struct InParts {
    id: TableId,
    index_size: u64,
    parts: usize,
    slots_stored: u64,
    stored_bytes: u64,
}

impl InParts {
    fn list(store: &dyn TableStore) -> Result<Vec<InParts>> {
        let mut out = Vec::new();
        for id in store.tables_in_parts()? {
            let headers = store.part_headers(&id)?;
            let Some(first) = headers.first() else {
                continue;
            };
            out.push(InParts {
                id,
                index_size: first.index_size,
                parts: headers.len(),
                slots_stored: headers.iter().map(|h| h.slots.len()).sum(),
                stored_bytes: headers.iter().map(|h| h.stored_bytes()).sum(),
            });
        }
        Ok(out)
    }

    fn json(&self) -> Json {
        json!({
            "table": self.id.signature.name(),
            "rules": self.id.rules.name(),
            "index_size": self.index_size,
            "parts": self.parts,
            "slots_stored": self.slots_stored,
            "stored_bytes": self.stored_bytes,
            "in_parts": true,
        })
    }
}

/// `xqtb tables`.
pub fn tables(args: TablesArgs) -> Result<()> {
    let store = args.source.store()?;
    let headers = store.list_tables()?;
    let in_parts = InParts::list(&*store)?;
    let lacking = missing_dependencies(&headers);
    if args.json {
        for h in &headers {
            let mut j = header_json(h);
            let needs = lacking.iter().find(|(id, _)| *id == h.id());
            j["missing_dependencies"] = needs
                .map(|(_, d)| d.iter().map(|t| t.signature.name()).collect())
                .unwrap_or_default();
            println!("{j}");
        }
        for p in &in_parts {
            println!("{}", p.json());
        }
        return Ok(());
    }
    if headers.is_empty() && in_parts.is_empty() {
        println!("no tables in {}", store.describe());
        return Ok(());
    }
    if headers.is_empty() {
        println!("no whole tables in {}", store.describe());
    } else {
        print_whole_tables(&*store, &headers);
    }
    for (id, needs) in &lacking {
        let names: Vec<String> = needs.iter().map(|t| t.signature.name()).collect();
        println!(
            "{}: probing it needs {}, not here; {}",
            id.signature.name(),
            names.join(" "),
            args.source.fix_dependencies(id, needs.len())
        );
    }
    if !in_parts.is_empty() {
        println!("tables in parts (pawn slices stored, waiting for the rest):");
        for p in &in_parts {
            println!(
                "{:<12} {:<17} {} parts, {} of {} slots ({:.1}%), {} bytes",
                p.id.signature.name(),
                p.id.rules.name(),
                p.parts,
                p.slots_stored,
                p.index_size,
                p.slots_stored as f64 * 100.0 / p.index_size.max(1) as f64,
                p.stored_bytes
            );
        }
    }
    Ok(())
}

/// The stored tables whose probing needs tables the store lacks (the tables their captures
/// lead into, and theirs), with those tables.
fn missing_dependencies(headers: &[TableHeader]) -> Vec<(TableId, Vec<TableId>)> {
    let have: std::collections::BTreeSet<TableId> = headers.iter().map(|h| h.id()).collect();
    headers
        .iter()
        .filter_map(|h| {
            let id = h.id();
            let needs: Vec<TableId> = xqtb_core::closure_of_tables(&[id])
                .into_iter()
                .filter(|t| *t != id && !have.contains(t))
                .collect();
            (!needs.is_empty()).then_some((id, needs))
        })
        .collect()
}

/// The table of whole tables of `xqtb tables`.
fn print_whole_tables(store: &dyn TableStore, headers: &[TableHeader]) {
    println!("tables in {}:", store.describe());
    println!(
        "{:<12} {:>10} {:>38} {:>38} {:>12} {:>7} {:>9}",
        "table",
        "index",
        "Red to move: legal/W/D/L longest",
        "Black to move: legal/W/D/L longest",
        "stored B",
        "blocks",
        "bits/pos"
    );
    let mut total = 0;
    for h in headers {
        let legal = h.counts.legal();
        total += h.stored_bytes();
        println!(
            "{:<12} {:>10} {:>38} {:>38} {:>12} {:>7} {:>9.3}",
            h.signature.name(),
            h.index_size,
            counts_text(h, Color::Red),
            counts_text(h, Color::Black),
            h.stored_bytes(),
            h.blocks.iter().map(Vec::len).sum::<usize>(),
            h.stored_bytes() as f64 * 8.0 / legal.max(1) as f64
        );
    }
    println!(
        "{} tables, {total} bytes of compressed values (longest wins in plies; rule set {})",
        headers.len(),
        headers
            .iter()
            .map(|h| h.rules.name())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect::<Vec<_>>()
            .join(", ")
    );
}
