//! An independent, deliberately simple reference solver, compared position by position with the
//! fast solver. It shares nothing with it beyond the rules crate: positions are enumerated by
//! brute force and keyed by their piece squares, the move graph is built explicitly by forward
//! move generation, materials keep their colours (no canonical flip, no mirror folding), and
//! values come from plain fixed-point sweeps, one ply per sweep.
//!
//! Under the Asian rule set the same explicit move graph, its moves labelled by the rules
//! crate's check/chase classification, is handed to the rule engine's graph solver
//! (`solver::rules::solve_graph`, itself checked against a brute-force Muller-game solver in
//! `rule_graphs.rs`), which gives each position's win/draw/loss; the fast solver's Asian tables
//! must agree with it and with the cycles-are-draws values wherever those are not draws.

use solver::rules::{Edge, Graph, Label, Outcome, SLOTS, Target, solve_graph};
use std::collections::HashMap;
use xiangqi::repetition::Classifier;
use xiangqi::{Board, Color, Move, Piece, PieceKind, Square, legal_squares};
use xqtb_core::{Material, MemoryTables, Probe, Rule, RuleSet, Signature, TableId, Value};

type Counts = [[u8; 7]; 2];

fn counts_of(board: &Board) -> Counts {
    let mut c = [[0u8; 7]; 2];
    for (_, p) in board.pieces() {
        c[p.color().index()][p.kind().index()] += 1;
    }
    c
}

/// The squares of the pieces, for each colour and kind in order, sorted.
fn squares(board: &Board) -> Vec<u8> {
    let mut sq: Vec<(usize, usize, u8)> = board
        .pieces()
        .map(|(s, p)| (p.color().index(), p.kind().index(), s.index() as u8))
        .collect();
    sq.sort();
    sq.into_iter().map(|(_, _, s)| s).collect()
}

/// Key of a position: side to move and, for each colour and kind in order, the sorted squares.
fn key(board: &Board) -> u128 {
    let mut k: u128 = board.side_to_move().index() as u128;
    for s in squares(board) {
        k = (k << 7) | s as u128;
    }
    k
}

fn has_attacker(c: &Counts) -> bool {
    c.iter().any(|side| {
        [
            PieceKind::Rook,
            PieceKind::Horse,
            PieceKind::Cannon,
            PieceKind::Pawn,
        ]
        .iter()
        .any(|k| side[k.index()] > 0)
    })
}

fn uncrossed_pawns_share_a_file(board: &Board) -> bool {
    let mut files = [[false; 9]; 2];
    for (s, p) in board.pieces() {
        if p.kind() != PieceKind::Pawn {
            continue;
        }
        let uncrossed = match p.color() {
            Color::Red => s.rank() <= 4,
            Color::Black => s.rank() >= 5,
        };
        if uncrossed {
            if files[p.color().index()][s.file() as usize] {
                return true;
            }
            files[p.color().index()][s.file() as usize] = true;
        }
    }
    false
}

/// Every legal position of the material, both sides to move.
fn enumerate(counts: &Counts) -> Vec<Board> {
    let mut pieces = Vec::new();
    for c in Color::ALL {
        for k in PieceKind::ALL {
            for _ in 0..counts[c.index()][k.index()] {
                pieces.push(Piece::new(c, k));
            }
        }
    }
    let mut out = Vec::new();
    let mut board = Board::empty(Color::Red);
    place(&pieces, 0, 0, &mut board, &mut out);
    out
}

fn place(pieces: &[Piece], i: usize, min_sq: usize, board: &mut Board, out: &mut Vec<Board>) {
    if i == pieces.len() {
        if uncrossed_pawns_share_a_file(board) {
            return;
        }
        for side in Color::ALL {
            let mut b = board.clone();
            b.set_side_to_move(side);
            if xiangqi::fen::validate(&b).is_ok() {
                out.push(b);
            }
        }
        return;
    }
    let p = pieces[i];
    let mask = legal_squares(p.color(), p.kind());
    let start = if i > 0 && pieces[i - 1] == p {
        min_sq
    } else {
        0
    };
    for s in start..90 {
        let sq = Square::from_index(s).unwrap();
        if mask & (1u128 << s) != 0 && board.is_empty(sq) {
            board.put(sq, p);
            place(pieces, i + 1, s + 1, board, out);
            board.remove(sq);
        }
    }
}

/// One material solved by the reference.
struct Solved {
    /// Every legal position, both sides to move.
    positions: Vec<Board>,
    /// Index in `positions` by [`key`].
    ids: HashMap<u128, u32>,
    /// Values under cycles-are-draws.
    values: Vec<Value>,
    /// Outcomes under the Asian rule set (empty unless asked for).
    outcomes: Vec<Outcome>,
    /// Edges between positions of the Asian graph that are idle, checks and chases.
    labels: [usize; 3],
}

struct Reference {
    /// Whether to solve every material under the Asian rule set too.
    asian: bool,
    solved: HashMap<Counts, Solved>,
}

impl Reference {
    fn new(asian: bool) -> Reference {
        Reference {
            asian,
            solved: HashMap::new(),
        }
    }

    /// The material of `board` solved, or `None` when it is a dead draw.
    fn table(&mut self, board: &Board) -> Option<(&Solved, usize)> {
        let counts = counts_of(board);
        if !has_attacker(&counts) {
            return None;
        }
        if !self.solved.contains_key(&counts) {
            let t = self.solve(&counts);
            self.solved.insert(counts, t);
        }
        let t = &self.solved[&counts];
        Some((t, t.ids[&key(board)] as usize))
    }

    /// The value under cycles-are-draws.
    fn value_of(&mut self, board: &Board) -> Value {
        self.table(board).map_or(Value::Draw, |(t, i)| t.values[i])
    }

    /// The outcome under the Asian rule set.
    fn outcome_of(&mut self, board: &Board) -> Outcome {
        assert!(self.asian);
        self.table(board)
            .map_or(Outcome::Draw, |(t, i)| t.outcomes[i])
    }

    fn solve(&mut self, counts: &Counts) -> Solved {
        let positions = enumerate(counts);
        let ids: HashMap<u128, u32> = positions
            .iter()
            .enumerate()
            .map(|(i, b)| (key(b), i as u32))
            .collect();
        // Successors inside this material, and the values of captures leaving it.
        let mut succ: Vec<Vec<u32>> = Vec::with_capacity(positions.len());
        let mut exits: Vec<Vec<Value>> = Vec::with_capacity(positions.len());
        // The same moves as a game graph of the Asian rules (see `asian_edge`).
        let mut graph = Graph::default();
        let mut labels = [0; 3];
        for b in &positions {
            let (mut inner, mut outer) = (Vec::new(), Vec::new());
            let node = graph.add_node(b.side_to_move());
            let mut classifier = self.asian.then(|| Classifier::new(b));
            for &m in b.legal_moves().iter() {
                let mut next = b.clone();
                let captured = next.make(m);
                let to = if captured.is_some() {
                    outer.push(self.value_of(&next));
                    self.asian.then(|| Target::Outcome(self.outcome_of(&next)))
                } else {
                    let id = ids[&key(&next)];
                    inner.push(id);
                    self.asian.then_some(Target::Node(id))
                };
                if let (Some(to), Some(c)) = (to, classifier.as_mut()) {
                    let edge = asian_edge(b, m, &next, to, c);
                    if let Target::Node(_) = to {
                        labels[if edge.label.chase != 0 {
                            2
                        } else {
                            edge.label.check as usize
                        }] += 1;
                    }
                    graph.add_edge(node, edge);
                }
            }
            succ.push(inner);
            exits.push(outer);
        }
        let longest_exit = exits
            .iter()
            .flatten()
            .filter_map(|v| v.dtm_plies())
            .max()
            .unwrap_or(0);
        let mut val: Vec<Option<Value>> = vec![None; positions.len()];
        for (i, b) in positions.iter().enumerate() {
            if succ[i].is_empty() && exits[i].is_empty() {
                debug_assert!(b.legal_moves().is_empty());
                val[i] = Some(Value::Loss(0));
            }
        }
        let mut n: u16 = 1;
        let mut quiet = 0;
        loop {
            let mut updates = Vec::new();
            for i in 0..positions.len() {
                if val[i].is_some() {
                    continue;
                }
                let mut all = succ[i]
                    .iter()
                    .map(|&j| val[j as usize])
                    .chain(exits[i].iter().map(|&v| Some(v)));
                if n % 2 == 1 {
                    if succ[i]
                        .iter()
                        .any(|&j| val[j as usize] == Some(Value::Loss(n - 1)))
                        || exits[i].contains(&Value::Loss(n - 1))
                    {
                        updates.push((i, Value::Win(n)));
                    }
                } else if all.all(|v| matches!(v, Some(Value::Win(d)) if d < n)) {
                    updates.push((i, Value::Loss(n)));
                }
            }
            quiet = if updates.is_empty() { quiet + 1 } else { 0 };
            for (i, v) in updates {
                val[i] = Some(v);
            }
            if quiet >= 2 && n > longest_exit + 1 {
                break;
            }
            n += 1;
        }
        drop((succ, exits));
        let outcomes = if self.asian {
            solve_graph(&graph)
        } else {
            Vec::new()
        };
        Solved {
            positions,
            ids,
            values: val.into_iter().map(|v| v.unwrap_or(Value::Draw)).collect(),
            outcomes,
            labels,
        }
    }
}

/// Pieces are named by slots in the order of [`squares`]: slot `i` holds the `i`-th square.
const IDENTITY: [u8; SLOTS] = {
    let mut p = [0u8; SLOTS];
    let mut i = 0;
    while i < SLOTS {
        p[i] = i as u8;
        i += 1;
    }
    p
};

/// The legal move `m` from `before` to `after` as an edge of the Asian rules' game graph,
/// leading to `to`. A non-capturing move is labelled by the rules crate's classification; its
/// chased pieces and its slot map come from following the pieces by square through the order
/// of [`squares`] (the moved piece from `m.from()` to `m.to()`, the others staying). A
/// capture leaves the graph (to the outcome of the smaller material), so only whether it
/// checks is recorded and its slots do not matter.
fn asian_edge(
    before: &Board,
    m: Move,
    after: &Board,
    to: Target,
    classifier: &mut Classifier,
) -> Edge {
    if let Target::Outcome(_) = to {
        let label = if after.in_check(before.side_to_move().opponent()) {
            Label::CHECK
        } else {
            Label::IDLE
        };
        return Edge::new(to, label);
    }
    let after = squares(after);
    let slot = |s: Square| after.iter().position(|&t| t == s.index() as u8).unwrap() as u8;
    let class = classifier.class(m);
    let label = Label {
        check: class.check,
        chase: class.chased.iter().fold(0, |bits, s| bits | 1 << slot(s)),
    };
    let mut map = IDENTITY;
    for (k, s) in squares(before).into_iter().enumerate() {
        let s = Square::from_index(s as usize).unwrap();
        map[k] = slot(if s == m.from() { m.to() } else { s });
    }
    Edge {
        to,
        label,
        slots: (map != IDENTITY).then_some(map),
    }
}

/// Compares the fast solver with the reference under cycles-are-draws, position by position;
/// with `asian`, also under the Asian rule set ([`compare_asian`]). For a table where only one
/// side has attacking pieces, checks that both rule sets give the same codes.
fn compare(name: &str, asian: bool) {
    let sig: Signature = name.parse().unwrap();
    let fast = solver::solve_closure_in_memory(&[sig], RuleSet::CyclesAreDraws, |_, _| {}).unwrap();
    let mut reference = Reference::new(asian);
    let counts = counts_of_material(sig.material());
    let positions = enumerate(&counts);
    assert!(!positions.is_empty());
    let started = std::time::Instant::now();
    reference.value_of(&positions[0]);
    let reference_secs = started.elapsed().as_secs_f64();
    let mut mismatches = Vec::new();
    for b in &positions {
        let want = reference.value_of(b);
        let got = fast.probe(RuleSet::CyclesAreDraws, b).unwrap();
        if got != want && mismatches.len() < 10 {
            mismatches.push(format!("{}: fast {got}, reference {want}", b.fen()));
        }
        // The Black-stronger orientation probes the same table.
        let flipped = b.rotated();
        assert_eq!(
            fast.probe(RuleSet::CyclesAreDraws, &flipped).unwrap(),
            got,
            "{} rotated",
            b.fen()
        );
    }
    assert!(
        mismatches.is_empty(),
        "{name}: {} positions, mismatches:\n{}",
        positions.len(),
        mismatches.join("\n")
    );
    if asian {
        compare_asian(sig, &reference, reference_secs, &fast);
    } else if one_sided(sig.material()) {
        let fast_asian =
            solver::solve_closure_in_memory(&[sig], RuleSet::Asian, |_, _| {}).unwrap();
        compare_one_sided_codes(&fast, &fast_asian, &[sig]);
    }
}

// ---------------------------------------------------------------------------------------------
// The Asian rule set
// ---------------------------------------------------------------------------------------------

/// Whether no side can be forced to offend: one side has only its king, so it can neither
/// check nor chase, and it can never win, so nothing forces the other side either. Then, in
/// this material and every material a capture leads to, the Asian rules must decide nothing.
fn one_sided(m: &Material) -> bool {
    let bare = |c: Color| {
        PieceKind::ALL
            .iter()
            .all(|&k| k == PieceKind::King || m.count(c, k) == 0)
    };
    !m.is_dead_draw() && (bare(Color::Red) || bare(Color::Black))
}

/// Checks that the one-sided tables of the closure of `sigs` have the same codes under both
/// rule sets, slot by slot; returns how many there are.
fn compare_one_sided_codes(cad: &MemoryTables, asian: &MemoryTables, sigs: &[Signature]) -> usize {
    let mut checked = 0;
    for s in xqtb_core::closure_of(sigs) {
        if !one_sided(s.material()) {
            continue;
        }
        let a = asian.get(&TableId::new(RuleSet::Asian, s)).unwrap();
        let c = cad.get(&TableId::new(RuleSet::CyclesAreDraws, s)).unwrap();
        for side in Color::ALL {
            let (a, c) = (a.codes(side), c.codes(side));
            assert_eq!(a.len(), c.len(), "{s} {side:?}");
            let differ = a.iter().zip(c.iter()).filter(|(x, y)| x != y).count();
            assert_eq!(
                differ, 0,
                "{s}: {differ} codes of {side:?} to move differ by rule set"
            );
        }
        checked += 1;
    }
    checked
}

fn counts_of_material(m: &Material) -> Counts {
    let mut c = [[0u8; 7]; 2];
    for col in Color::ALL {
        for k in PieceKind::ALL {
            c[col.index()][k.index()] = m.count(col, k);
        }
    }
    c
}

/// Compares the fast solver's tables under the Asian rule set with the reference, position by
/// position, for `sig` and every material its captures lead to (`reference` has solved them
/// under both rule sets; `cad` holds the fast tables under cycles-are-draws):
/// 1. win/draw/loss equal to the reference graph's outcome;
/// 2. a position the cycles-are-draws reference does not draw keeps exactly that value (same
///    distance to mate);
/// 3. a position holds a rule value exactly when the cycles-are-draws reference draws it and
///    the Asian outcome is not a draw.
///
/// Also checks that the one-sided tables of the closure have the same codes under both rule
/// sets.
fn compare_asian(sig: Signature, reference: &Reference, reference_secs: f64, cad: &MemoryTables) {
    let started = std::time::Instant::now();
    let fast = solver::solve_closure_in_memory(&[sig], RuleSet::Asian, |_, _| {}).unwrap();
    let fast_secs = started.elapsed().as_secs_f64();
    let one_sided_tables = compare_one_sided_codes(cad, &fast, &[sig]);
    let mut materials: Vec<&Counts> = reference.solved.keys().collect();
    materials.sort();
    let (mut mismatches, mut wrong_positions) = (Vec::new(), 0usize);
    let mut report = Vec::new();
    for counts in materials {
        let t = &reference.solved[counts];
        let (mut decisive, mut rule_check, mut rule_chase) = (0usize, 0usize, 0usize);
        for ((b, &cad_value), &want) in t.positions.iter().zip(&t.values).zip(&t.outcomes) {
            let side = b.side_to_move();
            let got = fast.probe(RuleSet::Asian, b).unwrap();
            let got_outcome = match got {
                Value::Win(_) | Value::RuleWin(_) => Outcome::win_for(side),
                Value::Loss(_) | Value::RuleLoss(_) => Outcome::win_for(side.opponent()),
                _ => Outcome::Draw,
            };
            let rule = got.rule();
            match rule {
                Some(Rule::PerpetualCheck) => rule_check += 1,
                Some(Rule::PerpetualChase) => rule_chase += 1,
                None => {}
            }
            if want != Outcome::Draw {
                decisive += 1;
            }
            let mut wrong = Vec::new();
            if got_outcome != want {
                wrong.push(format!("the reference's outcome is {want:?}"));
            }
            if cad_value != Value::Draw && got != cad_value {
                wrong.push(format!("cycles-are-draws gives {cad_value}"));
            }
            let rule_decided = cad_value == Value::Draw && want != Outcome::Draw;
            if rule.is_some() != rule_decided {
                wrong.push(format!(
                    "a rule value is {}expected (cycles-are-draws gives {cad_value}, the \
                     reference's outcome is {want:?})",
                    if rule_decided { "" } else { "not " }
                ));
            }
            if !wrong.is_empty() {
                if mismatches.len() < 10 {
                    mismatches.push(format!("{}: fast {got}; {}", b.fen(), wrong.join("; ")));
                }
                wrong_positions += 1;
            }
            assert_eq!(
                fast.probe(RuleSet::Asian, &b.rotated()).unwrap(),
                got,
                "{} rotated",
                b.fen()
            );
        }
        report.push(format!(
            "{}: {} positions, {decisive} decisive, rule-decided {rule_check} by perpetual \
             check and {rule_chase} by perpetual chase; moves {} idle, {} checks, {} chases",
            Material::of_board(&t.positions[0]).name(),
            t.positions.len(),
            t.labels[0],
            t.labels[1],
            t.labels[2],
        ));
    }
    println!(
        "{} under asian (reference under both rule sets {reference_secs:.1} s, fast solver \
         {fast_secs:.1} s, comparison {:.1} s; {one_sided_tables} one-sided tables with the \
         same codes):\n  {}",
        sig.name(),
        started.elapsed().as_secs_f64() - fast_secs,
        report.join("\n  ")
    );
    assert!(
        mismatches.is_empty(),
        "{} under asian: {wrong_positions} positions disagree, among them:\n{}",
        sig.name(),
        mismatches.join("\n")
    );
}

macro_rules! reference_tests {
    ($($test:ident: $name:expr,)*) => {
        $(#[test] fn $test() { compare($name, false); })*
    };
}

macro_rules! reference_tests_both_rule_sets {
    ($($test:ident: $name:expr,)*) => {
        $(#[test] fn $test() { compare($name, true); })*
    };
}

// Compared under cycles-are-draws only: one side has nothing but its king, so no side can be
// forced to offend and the Asian rules cannot decide anything; the fast solver's Asian tables of
// these (and of their closures) are checked to hold the same codes as under cycles-are-draws.
reference_tests! {
    krvk: "KRvK",
    knvk: "KNvK",
    kcvk: "KCvK",
    kpvk: "KPvK",
    krnvk: "KRNvK",
    krcvk: "KRCvK",
    knnvk: "KNNvK",
    kcpvk: "KCPvK",
    kppvk: "KPPvK",
}

// Compared under both rule sets: the tables of the 36 with defenders. Advisors and elephants
// chase like other pieces, so the side with them can be forced to offend.
reference_tests_both_rule_sets! {
    krvka: "KRvKA",
    knvka: "KNvKA",
    kcvka: "KCvKA",
    kpvka: "KPvKA",
    krvkb: "KRvKB",
    knvkb: "KNvKB",
    kcvkb: "KCvKB",
    kpvkb: "KPvKB",
    krvkaa: "KRvKAA",
    knvkaa: "KNvKAA",
    kcvkaa: "KCvKAA",
    kpvkaa: "KPvKAA",
    krvkbb: "KRvKBB",
    knvkbb: "KNvKBB",
    kcvkbb: "KCvKBB",
    kpvkbb: "KPvKBB",
    krvkab: "KRvKAB",
    knvkab: "KNvKAB",
    kcvkab: "KCvKAB",
    kpvkab: "KPvKAB",
}

// Compared under both rule sets: every table of the 36 where both sides have an attacking
// piece (all the four-piece ones, each under a million positions). Under the Asian rules the
// reference builds the whole move graph with every move classified and solves it with
// `solve_graph`, which is slow; the five-piece two-sided tables (KRAvKR, KRvKNA, ...: millions
// of positions each) would make the suite too slow to run every time, so they are left out.
reference_tests_both_rule_sets! {
    krvkr: "KRvKR",
    krvkn: "KRvKN",
    krvkc: "KRvKC",
    krvkp: "KRvKP",
    knvkn: "KNvKN",
    kcvkc: "KCvKC",
    kpvkp: "KPvKP",
}
