//! An independent, deliberately simple reference solver, compared position by position with the
//! fast solver. It shares nothing with it beyond the rules crate: positions are enumerated by
//! brute force and keyed by their piece squares, the move graph is built explicitly by forward
//! move generation, materials keep their colours (no canonical flip, no mirror folding), and
//! values come from plain fixed-point sweeps, one ply per sweep.

use std::collections::HashMap;
use xiangqi::{Board, Color, Piece, PieceKind, Square, legal_squares};
use xqtb_core::{Probe, RuleSet, Signature, Value};

type Counts = [[u8; 7]; 2];

fn counts_of(board: &Board) -> Counts {
    let mut c = [[0u8; 7]; 2];
    for (_, p) in board.pieces() {
        c[p.color().index()][p.kind().index()] += 1;
    }
    c
}

/// Key of a position: side to move and, for each colour and kind in order, the sorted squares.
fn key(board: &Board) -> u128 {
    let mut sq: Vec<(usize, usize, u8)> = board
        .pieces()
        .map(|(s, p)| (p.color().index(), p.kind().index(), s.index() as u8))
        .collect();
    sq.sort();
    let mut k: u128 = board.side_to_move().index() as u128;
    for (_, _, s) in sq {
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

struct Reference {
    solved: HashMap<Counts, HashMap<u128, Value>>,
}

impl Reference {
    fn value_of(&mut self, board: &Board) -> Value {
        let counts = counts_of(board);
        if !has_attacker(&counts) {
            return Value::Draw;
        }
        if !self.solved.contains_key(&counts) {
            let t = self.solve(&counts);
            self.solved.insert(counts, t);
        }
        self.solved[&counts][&key(board)]
    }

    fn solve(&mut self, counts: &Counts) -> HashMap<u128, Value> {
        let positions = enumerate(counts);
        let ids: HashMap<u128, u32> = positions
            .iter()
            .enumerate()
            .map(|(i, b)| (key(b), i as u32))
            .collect();
        // Successors inside this material, and the values of captures leaving it.
        let mut succ: Vec<Vec<u32>> = Vec::with_capacity(positions.len());
        let mut exits: Vec<Vec<Value>> = Vec::with_capacity(positions.len());
        for b in &positions {
            let (mut inner, mut outer) = (Vec::new(), Vec::new());
            for &m in b.legal_moves().iter() {
                let mut next = b.clone();
                let captured = next.make(m);
                if captured.is_some() {
                    outer.push(self.value_of(&next));
                } else {
                    inner.push(ids[&key(&next)]);
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
        positions
            .iter()
            .zip(val)
            .map(|(b, v)| (key(b), v.unwrap_or(Value::Draw)))
            .collect()
    }
}

fn compare(name: &str) {
    let sig: Signature = name.parse().unwrap();
    let fast = solver::solve_closure_in_memory(&[sig], RuleSet::CyclesAreDraws, |_, _| {}).unwrap();
    let mut reference = Reference {
        solved: HashMap::new(),
    };
    let counts = {
        let m = sig.material();
        let mut c = [[0u8; 7]; 2];
        for col in Color::ALL {
            for k in PieceKind::ALL {
                c[col.index()][k.index()] = m.count(col, k);
            }
        }
        c
    };
    let positions = enumerate(&counts);
    assert!(!positions.is_empty());
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
}

macro_rules! reference_tests {
    ($($test:ident: $name:expr,)*) => {
        $(#[test] fn $test() { compare($name); })*
    };
}

reference_tests! {
    krvk: "KRvK",
    knvk: "KNvK",
    kcvk: "KCvK",
    kpvk: "KPvK",
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
    krvkr: "KRvKR",
    krvkn: "KRvKN",
    krvkc: "KRvKC",
    krvkp: "KRvKP",
    knvkn: "KNvKN",
    kcvkc: "KCvKC",
    kpvkp: "KPvKP",
    krnvk: "KRNvK",
    krcvk: "KRCvK",
    knnvk: "KNNvK",
    kcpvk: "KCPvK",
    kppvk: "KPPvK",
}
