//! Property tests of the rules over many random legal positions.
//!
//! Positions come from three generators: sparse endgame material (kings and 1-4 more pieces),
//! dense middlegame-like material (a random subset of both full armies), and random legal walks
//! from the rows of `tests/data/perft.tsv`. Placements put every piece on a random point that is
//! legal for its kind and colour and keep only what [`xiangqi::fen::validate`] accepts; half of
//! the placements crowd pieces onto the kings' lines of fire to make pins and checks common.
//!
//! Every property runs through an explicit [`TestRunner`] so that it can report how long it took
//! and how often the interesting paths (captures, pins, checks) were hit; run with
//! `--nocapture` to see the figures. `PROPTEST_CASES` overrides the case counts.

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseResult, TestRunner};
use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::time::Instant;
use xiangqi::fen::validate;
use xiangqi::repetition::{Classifier, MoveClasses, classify};
use xiangqi::{Board, Color, Move, MoveList, Piece, PieceKind, Square, legal_squares, parse_fen};

// ---------------------------------------------------------------------------------------------
// Random positions
// ---------------------------------------------------------------------------------------------

/// SplitMix64: the placement randomness behind one proptest seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// A uniformly chosen set bit of a non-empty mask.
fn pick_square(mask: u128, rng: &mut Rng) -> Square {
    let mut m = mask;
    for _ in 0..rng.below(mask.count_ones() as usize) {
        m &= m - 1;
    }
    Square::from_index(m.trailing_zeros() as usize).unwrap()
}

/// Puts both kings and then each listed piece (skipping any beyond the game's count) on random
/// free points that are legal for it. The result may be an illegal position.
///
/// With `crowd`, each piece goes with even odds onto a point in the lines of fire around the kings
/// (their files and ranks, and the horse-leg points diagonally next to them) when it can, which
/// makes pins, cannon screens, blocked horse legs and checks common.
fn place_raw(pieces: &[(Color, PieceKind)], side: Color, crowd: bool, rng: &mut Rng) -> Board {
    let mut b = Board::empty(side);
    let mut taken = 0u128;
    let mut zone = 0u128;
    let all = [
        (Color::Red, PieceKind::King),
        (Color::Black, PieceKind::King),
    ];
    for &(color, kind) in all.iter().chain(pieces) {
        if b.count(color, kind) >= kind.max_count() as usize {
            continue;
        }
        let mut free = legal_squares(color, kind) & !taken;
        if crowd && free & zone != 0 && rng.below(2) == 0 {
            free &= zone;
        }
        if free == 0 {
            continue;
        }
        let s = pick_square(free, rng);
        if kind == PieceKind::King {
            zone |= king_zone(s);
        }
        taken |= 1u128 << s.index();
        b.put(s, Piece::new(color, kind));
    }
    b
}

/// The file and rank of `king` and the four points diagonally next to it.
fn king_zone(king: Square) -> u128 {
    Square::all()
        .filter(|s| {
            let (df, dr) = (
                s.file().abs_diff(king.file()),
                s.rank().abs_diff(king.rank()),
            );
            (df == 0 || dr == 0 || (df == 1 && dr == 1)) && *s != king
        })
        .fold(0, |m, s| m | 1u128 << s.index())
}

/// A legal position with (a prefix of) the given material: placements are redrawn until
/// `validate` accepts one, and a piece is dropped after every 100 failed draws.
fn place_legal(pieces: &[(Color, PieceKind)], side: Color, crowd: bool, seed: u64) -> Board {
    let mut rng = Rng(seed);
    let mut pieces = pieces.to_vec();
    loop {
        for _ in 0..100 {
            let b = place_raw(&pieces, side, crowd, &mut rng);
            if validate(&b).is_ok() {
                return b;
            }
        }
        pieces.pop();
    }
}

fn color() -> impl Strategy<Value = Color> {
    prop_oneof![Just(Color::Red), Just(Color::Black)]
}

fn capturable() -> impl Strategy<Value = PieceKind> {
    proptest::sample::select(PieceKind::CAPTURABLE.to_vec())
}

/// Every piece but the kings of both full armies.
fn full_armies() -> Vec<(Color, PieceKind)> {
    let mut v = Vec::new();
    for c in Color::ALL {
        for k in PieceKind::CAPTURABLE {
            for _ in 0..k.max_count() {
                v.push((c, k));
            }
        }
    }
    v
}

/// Kings and 1-4 more pieces of random kinds and colours.
fn sparse_position() -> impl Strategy<Value = Board> {
    (
        proptest::collection::vec((color(), capturable()), 1..=4),
        color(),
        any::<bool>(),
        any::<u64>(),
    )
        .prop_map(|(pieces, side, crowd, seed)| place_legal(&pieces, side, crowd, seed))
}

/// Kings and 5-30 pieces drawn from both full armies.
fn dense_position() -> impl Strategy<Value = Board> {
    (
        proptest::sample::subsequence(full_armies(), 5..=30),
        color(),
        any::<bool>(),
        any::<u64>(),
    )
        .prop_map(|(pieces, side, crowd, seed)| place_legal(&pieces, side, crowd, seed))
}

/// The distinct FENs of the perft table.
fn perft_fens() -> Vec<String> {
    let mut seen = HashSet::new();
    include_str!("data/perft.tsv")
        .lines()
        .skip(1)
        .filter_map(|l| l.split('\t').nth(1))
        .filter(|f| seen.insert(f.to_string()))
        .map(str::to_string)
        .collect()
}

/// A position reached by up to 40 random legal moves from a perft row.
fn walked_position() -> impl Strategy<Value = Board> {
    let fens = perft_fens();
    (0..fens.len(), 0..=40usize, any::<u64>()).prop_map(move |(i, plies, seed)| {
        let mut b = parse_fen(&fens[i]).unwrap();
        let mut rng = Rng(seed);
        for _ in 0..plies {
            let moves = b.legal_moves();
            if moves.is_empty() {
                break;
            }
            b.make(moves[rng.below(moves.len())]);
        }
        b
    })
}

/// A mix of all three kinds of legal position.
fn position() -> impl Strategy<Value = Board> {
    prop_oneof![
        3 => sparse_position(),
        2 => dense_position(),
        2 => walked_position(),
    ]
}

/// Kings and pieces on legal points but otherwise unchecked: either side may be in check and the
/// kings may face each other.
fn raw_placement() -> impl Strategy<Value = Board> {
    prop_oneof![
        (
            proptest::collection::vec((color(), capturable()), 1..=4),
            color(),
            any::<bool>(),
            any::<u64>()
        ),
        (
            proptest::sample::subsequence(full_armies(), 5..=30),
            color(),
            any::<bool>(),
            any::<u64>()
        ),
    ]
    .prop_map(|(pieces, side, crowd, seed)| place_raw(&pieces, side, crowd, &mut Rng(seed)))
}

// ---------------------------------------------------------------------------------------------
// Running
// ---------------------------------------------------------------------------------------------

fn run<S: Strategy>(name: &str, cases: u32, strategy: S, test: impl Fn(S::Value) -> TestCaseResult)
where
    S::Value: std::fmt::Debug,
{
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(cases);
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    let start = Instant::now();
    let result = runner.run(&strategy, test);
    eprintln!("{name}: {cases} cases in {:.2?}", start.elapsed());
    if let Err(e) = result {
        panic!("{name}: {e}");
    }
}

fn sorted(moves: &[Move]) -> Vec<Move> {
    let mut v = moves.to_vec();
    v.sort();
    v
}

fn pseudo(b: &Board) -> MoveList {
    let mut l = MoveList::new();
    b.pseudo_moves(&mut l);
    l
}

// ---------------------------------------------------------------------------------------------
// Naive reference: move geometry from scratch, on (file, rank) coordinates
// ---------------------------------------------------------------------------------------------

mod naive {
    use xiangqi::{Board, Color, Move, PieceKind, Square};

    const ORTHO: [(i32, i32); 4] = [(1, 0), (-1, 0), (0, 1), (0, -1)];
    const DIAG: [(i32, i32); 4] = [(1, 1), (-1, 1), (1, -1), (-1, -1)];

    fn square(f: i32, r: i32) -> Option<Square> {
        ((0..9).contains(&f) && (0..10).contains(&r)).then(|| Square::new(f as u8, r as u8))
    }

    fn in_palace(c: Color, f: i32, r: i32) -> bool {
        (3..=5).contains(&f)
            && match c {
                Color::Red => (0..=2).contains(&r),
                Color::Black => (7..=9).contains(&r),
            }
    }

    fn own_half(c: Color, r: i32) -> bool {
        match c {
            Color::Red => r <= 4,
            Color::Black => r >= 5,
        }
    }

    /// Points the piece on `from` can move to or capture on, own king safety ignored. With
    /// `flying`, a king also "reaches" the enemy king along an open file (the flying general,
    /// which counts as an attack but is never a move in a legal position).
    pub fn targets(b: &Board, from: Square, flying: bool) -> Vec<Square> {
        let p = b.piece_at(from).expect("a piece on the origin");
        let c = p.color();
        let (f, r) = (from.file() as i32, from.rank() as i32);
        let lands = |s: Square| b.piece_at(s).is_none_or(|q| q.color() != c);
        let mut out = Vec::new();
        match p.kind() {
            PieceKind::King => {
                for (df, dr) in ORTHO {
                    let ok = in_palace(c, f + df, r + dr);
                    out.extend(square(f + df, r + dr).filter(|&s| ok && lands(s)));
                }
                if flying {
                    for dr in [1, -1] {
                        let mut rr = r + dr;
                        while let Some(s) = square(f, rr) {
                            if let Some(q) = b.piece_at(s) {
                                if q.kind() == PieceKind::King && q.color() != c {
                                    out.push(s);
                                }
                                break;
                            }
                            rr += dr;
                        }
                    }
                }
            }
            PieceKind::Advisor => {
                for (df, dr) in DIAG {
                    let ok = in_palace(c, f + df, r + dr);
                    out.extend(square(f + df, r + dr).filter(|&s| ok && lands(s)));
                }
            }
            PieceKind::Elephant => {
                for (df, dr) in DIAG {
                    let (Some(s), Some(eye)) =
                        (square(f + 2 * df, r + 2 * dr), square(f + df, r + dr))
                    else {
                        continue;
                    };
                    if own_half(c, r + 2 * dr) && b.is_empty(eye) && lands(s) {
                        out.push(s);
                    }
                }
            }
            PieceKind::Horse => {
                for (lf, lr) in ORTHO {
                    // One step (lf, lr) to the leg, then one diagonal step further outward.
                    let Some(leg) = square(f + lf, r + lr) else {
                        continue;
                    };
                    if !b.is_empty(leg) {
                        continue;
                    }
                    let sides = if lf == 0 {
                        [(1, 0), (-1, 0)]
                    } else {
                        [(0, 1), (0, -1)]
                    };
                    for (sf, sr) in sides {
                        out.extend(square(f + 2 * lf + sf, r + 2 * lr + sr).filter(|&s| lands(s)));
                    }
                }
            }
            PieceKind::Rook => {
                for (df, dr) in ORTHO {
                    let (mut ff, mut rr) = (f + df, r + dr);
                    while let Some(s) = square(ff, rr) {
                        if lands(s) {
                            out.push(s);
                        }
                        if !b.is_empty(s) {
                            break;
                        }
                        ff += df;
                        rr += dr;
                    }
                }
            }
            PieceKind::Cannon => {
                for (df, dr) in ORTHO {
                    let (mut ff, mut rr) = (f + df, r + dr);
                    let mut screened = false;
                    while let Some(s) = square(ff, rr) {
                        match (b.piece_at(s), screened) {
                            (None, false) => out.push(s),
                            (None, true) => {}
                            (Some(_), false) => screened = true,
                            (Some(q), true) => {
                                if q.color() != c {
                                    out.push(s);
                                }
                                break;
                            }
                        }
                        ff += df;
                        rr += dr;
                    }
                }
            }
            PieceKind::Pawn => {
                let fwd = if c == Color::Red { 1 } else { -1 };
                let mut steps = vec![(0, fwd)];
                if !own_half(c, r) {
                    steps.extend([(1, 0), (-1, 0)]);
                }
                for (df, dr) in steps {
                    out.extend(square(f + df, r + dr).filter(|&s| lands(s)));
                }
            }
        }
        out
    }

    /// Whether `color`'s king (found by scanning the board) is attacked by any enemy piece.
    pub fn in_check(b: &Board, color: Color) -> bool {
        let king = b
            .pieces()
            .find(|(_, p)| p.color() == color && p.kind() == PieceKind::King)
            .map(|(s, _)| s)
            .expect("a king");
        b.pieces()
            .filter(|(_, p)| p.color() != color)
            .any(|(s, _)| targets(b, s, true).contains(&king))
    }

    /// Every move of the side to move that follows the piece geometry, own king safety ignored.
    pub fn pseudo_moves(b: &Board) -> Vec<Move> {
        let us = b.side_to_move();
        let mut out = Vec::new();
        for (s, p) in b.pieces() {
            if p.color() == us {
                out.extend(targets(b, s, false).into_iter().map(|t| Move::new(s, t)));
            }
        }
        out
    }
}

// ---------------------------------------------------------------------------------------------
// Properties
// ---------------------------------------------------------------------------------------------

/// Checks every listed un-move of `q`: the earlier position is legal, the move is a legal
/// non-capture there and leads back to `q`; no entry is listed twice.
fn check_listed_unmoves(q: &Board, listed: &[(Move, Board)]) -> TestCaseResult {
    let mut seen = HashSet::new();
    for (m, p) in listed {
        prop_assert!(seen.insert(*m), "{q:?}: un-move {m} listed twice");
        prop_assert!(
            validate(p).is_ok(),
            "{q:?}: un-move {m} gives illegal {p:?}: {:?}",
            validate(p)
        );
        prop_assert!(
            p.is_empty(m.to()),
            "{q:?}: un-move {m} is a capture in {p:?}"
        );
        prop_assert!(
            p.is_legal_move(*m),
            "{q:?}: un-move {m} is not legal in {p:?}"
        );
        let mut x = p.clone();
        prop_assert_eq!(x.make(*m), None);
        prop_assert_eq!(&x, q, "un-move {} from {:?}", m, p);
    }
    Ok(())
}

/// Checks every listed un-capture of `q` likewise.
fn check_listed_uncaptures(q: &Board, listed: &[(Move, PieceKind, Board)]) -> TestCaseResult {
    let mut seen = HashSet::new();
    let victim = q.side_to_move();
    for (m, k, p) in listed {
        prop_assert!(
            seen.insert((*m, *k)),
            "{q:?}: un-capture {m} of {k:?} listed twice"
        );
        prop_assert!(
            validate(p).is_ok(),
            "{q:?}: un-capture {m} of {k:?} gives illegal {p:?}: {:?}",
            validate(p)
        );
        prop_assert_eq!(
            p.piece_at(m.to()),
            Some(Piece::new(victim, *k)),
            "{:?}: un-capture {}",
            q,
            m
        );
        prop_assert!(
            p.is_legal_move(*m),
            "{q:?}: un-capture {m} is not legal in {p:?}"
        );
        let mut x = p.clone();
        prop_assert_eq!(x.make(*m), Some(Piece::new(victim, *k)));
        prop_assert_eq!(&x, q, "un-capture {} of {:?} from {:?}", m, k, p);
    }
    Ok(())
}

#[test]
fn unmoves_are_the_exact_inverse_of_moves() {
    static FORWARD: AtomicUsize = AtomicUsize::new(0);
    static LISTED: AtomicUsize = AtomicUsize::new(0);
    run("unmoves", 2000, position(), |p| {
        let own = p.legal_unmoves();
        LISTED.fetch_add(own.len(), Relaxed);
        check_listed_unmoves(&p, &own)?;
        for &m in p.legal_moves().iter() {
            if !p.is_empty(m.to()) {
                continue;
            }
            FORWARD.fetch_add(1, Relaxed);
            let mut q = p.clone();
            prop_assert_eq!(q.make(m), None);
            prop_assert!(
                validate(&q).is_ok(),
                "{p:?} {m} gives illegal {q:?}: {:?}",
                validate(&q)
            );
            let un = q.legal_unmoves();
            LISTED.fetch_add(un.len(), Relaxed);
            prop_assert!(
                un.iter().any(|(um, b)| *um == m && *b == p),
                "{q:?} does not list the un-move {m} back to {p:?}"
            );
            check_listed_unmoves(&q, &un)?;
        }
        Ok(())
    });
    let (f, l) = (FORWARD.load(Relaxed), LISTED.load(Relaxed));
    eprintln!("unmoves: {f} forward non-captures, {l} listed un-moves checked");
    assert!(f > 10_000 && l > 10_000);
}

#[test]
fn uncaptures_are_the_exact_inverse_of_captures() {
    static FORWARD: AtomicUsize = AtomicUsize::new(0);
    static LISTED: AtomicUsize = AtomicUsize::new(0);
    static KINDS: [AtomicUsize; 7] = [const { AtomicUsize::new(0) }; 7];
    run("uncaptures", 3000, position(), |p| {
        let own = p.legal_uncaptures();
        LISTED.fetch_add(own.len(), Relaxed);
        check_listed_uncaptures(&p, &own)?;
        for &m in p.legal_moves().iter() {
            let Some(victim) = p.piece_at(m.to()) else {
                continue;
            };
            FORWARD.fetch_add(1, Relaxed);
            KINDS[victim.kind().index()].fetch_add(1, Relaxed);
            prop_assert_ne!(
                victim.kind(),
                PieceKind::King,
                "{:?}: {} takes the king",
                p,
                m
            );
            let mut q = p.clone();
            prop_assert_eq!(q.make(m), Some(victim));
            prop_assert!(
                validate(&q).is_ok(),
                "{p:?} {m} gives illegal {q:?}: {:?}",
                validate(&q)
            );
            let un = q.legal_uncaptures();
            LISTED.fetch_add(un.len(), Relaxed);
            prop_assert!(
                un.iter()
                    .any(|(um, k, b)| *um == m && *k == victim.kind() && *b == p),
                "{q:?} does not list the un-capture {m} of {:?} back to {p:?}",
                victim.kind()
            );
            check_listed_uncaptures(&q, &un)?;
        }
        Ok(())
    });
    let (f, l) = (FORWARD.load(Relaxed), LISTED.load(Relaxed));
    let kinds: Vec<usize> = KINDS.iter().map(|k| k.load(Relaxed)).collect();
    eprintln!(
        "uncaptures: {f} forward captures (by victim kind {kinds:?}), {l} listed un-captures checked"
    );
    assert!(f > 1_000 && l > 10_000);
    assert!(
        kinds[1..].iter().all(|&n| n > 0),
        "every capturable kind captured"
    );
}

#[test]
fn make_then_unmake_restores_the_board() {
    run(
        "make_unmake",
        2000,
        (position(), any::<u64>()),
        |(p, seed)| {
            // Every pseudo-legal move, legal or not.
            for &m in pseudo(&p).iter() {
                let mut x = p.clone();
                let cap = x.make(m);
                prop_assert_eq!(cap, p.piece_at(m.to()));
                prop_assert_eq!(x.side_to_move(), p.side_to_move().opponent());
                prop_assert_eq!(x.piece_at(m.to()), p.piece_at(m.from()));
                prop_assert!(x.is_empty(m.from()));
                x.unmake(m, cap);
                prop_assert_eq!(&x, &p, "make/unmake {}", m);
            }
            // A random line of legal moves, unwound in reverse.
            let mut rng = Rng(seed);
            let mut x = p.clone();
            let mut line = Vec::new();
            for _ in 0..20 {
                let moves = x.legal_moves();
                if moves.is_empty() {
                    break;
                }
                let m = moves[rng.below(moves.len())];
                let before = x.clone();
                let cap = x.make(m);
                line.push((m, cap, before));
            }
            while let Some((m, cap, before)) = line.pop() {
                x.unmake(m, cap);
                prop_assert_eq!(&x, &before, "unmake {}", m);
            }
            prop_assert_eq!(&x, &p);
            Ok(())
        },
    );
}

#[test]
fn move_classes_on_a_lent_board_match_a_fresh_classifier_and_leave_it_as_found() {
    let (checks, chases) = (AtomicUsize::new(0), AtomicUsize::new(0));
    run("move_classes", 1000, position(), |p| {
        let mover = p.side_to_move();
        let mut lent = p.clone();
        let mut classes = MoveClasses::new(mover);
        let mut owned = Classifier::new(&p);
        for &m in p.legal_moves().iter().filter(|m| p.is_empty(m.to())) {
            // A classifier of its own for each move: nothing cached from other moves.
            let want = classify(&p, m);
            checks.fetch_add(want.check as usize, Relaxed);
            chases.fetch_add(want.is_chase() as usize, Relaxed);
            prop_assert_eq!(classes.class(&mut lent, m), want, "{} on {}", m, p.fen());
            prop_assert_eq!(&lent, &p, "the board after classifying {}", m);
            prop_assert_eq!(owned.class(m), want, "{} on {}", m, p.fen());
        }
        Ok(())
    });
    let (checks, chases) = (checks.into_inner(), chases.into_inner());
    assert!(
        checks > 500 && chases > 500,
        "{checks} checks, {chases} chases"
    );
}

#[test]
fn fen_round_trips() {
    run("fen_round_trip", 3000, position(), |b| {
        let fen = b.fen();
        let parsed = parse_fen(&fen);
        prop_assert_eq!(parsed.as_ref(), Ok(&b), "{}", fen);
        prop_assert_eq!(parsed.unwrap().fen(), fen.clone());
        prop_assert_eq!(fen.parse::<Board>(), Ok(b.clone()));
        // The placement and side alone parse to the same board.
        let short: String = fen.split(' ').take(2).collect::<Vec<_>>().join(" ");
        prop_assert_eq!(parse_fen(&short), Ok(b));
        Ok(())
    });
}

#[test]
fn symmetries_preserve_perft_and_are_involutions() {
    run("symmetries", 1000, position(), |b| {
        let m = b.mirrored();
        let r = b.rotated();
        let mr = m.rotated();
        prop_assert_eq!(&m.mirrored(), &b);
        prop_assert_eq!(&r.rotated(), &b);
        prop_assert_eq!(&mr, &r.mirrored(), "mirror and rotation commute");
        for x in [&m, &r, &mr] {
            prop_assert!(validate(x).is_ok(), "{:?} gives illegal {:?}", b, x);
        }
        // Moves map onto moves.
        let moves = b.legal_moves();
        let want_m = sorted(&moves.iter().map(|m| m.mirror()).collect::<Vec<_>>());
        let want_r = sorted(&moves.iter().map(|m| m.rotate()).collect::<Vec<_>>());
        prop_assert_eq!(sorted(&m.legal_moves()), want_m);
        prop_assert_eq!(sorted(&r.legal_moves()), want_r);
        for c in Color::ALL {
            prop_assert_eq!(m.in_check(c), b.in_check(c));
            prop_assert_eq!(r.in_check(c.opponent()), b.in_check(c));
        }
        // Perft.
        let depth = if b.pieces().count() <= 6 { 3 } else { 2 };
        let want = xiangqi::perft(&mut b.clone(), depth);
        for (name, x) in [("mirrored", &m), ("rotated", &r), ("mirrored+rotated", &mr)] {
            prop_assert_eq!(
                xiangqi::perft(&mut x.clone(), depth),
                want,
                "{} {:?} depth {}",
                name,
                b,
                depth
            );
        }
        Ok(())
    });
}

#[test]
fn in_check_matches_a_naive_reference() {
    static CHECKS: AtomicUsize = AtomicUsize::new(0);
    static POSITIONS: AtomicUsize = AtomicUsize::new(0);
    let either = prop_oneof![position(), raw_placement()];
    run("in_check", 5000, either, |b| {
        for c in Color::ALL {
            let want = naive::in_check(&b, c);
            POSITIONS.fetch_add(1, Relaxed);
            CHECKS.fetch_add(want as usize, Relaxed);
            prop_assert_eq!(b.in_check(c), want, "{:?} in_check({:?})", b, c);
        }
        prop_assert_eq!(
            b.opponent_in_check(),
            naive::in_check(&b, b.side_to_move().opponent())
        );
        Ok(())
    });
    let (n, c) = (POSITIONS.load(Relaxed), CHECKS.load(Relaxed));
    eprintln!("in_check: {c} of {n} (board, colour) pairs in check");
    assert!(c > n / 20, "too few checks to be a test");
}

#[test]
fn legal_moves_match_a_naive_reference() {
    // Why a pseudo-legal move was illegal: [in check, king move, piece leaving the king's
    // file or rank, piece entering it (a cannon screen), piece leaving a horse leg].
    static REJECTED: [AtomicUsize; 5] = [const { AtomicUsize::new(0) }; 5];
    run("legal_moves", 10000, position(), |b| {
        let us = b.side_to_move();
        let naive_pseudo = naive::pseudo_moves(&b);
        prop_assert_eq!(
            sorted(&pseudo(&b)),
            sorted(&naive_pseudo),
            "pseudo moves of {:?}",
            b
        );
        let checked = b.in_check(us);
        let king = b.king_square(us).unwrap();
        let mut scratch = b.clone();
        let mut want = Vec::new();
        for &m in &naive_pseudo {
            let cap = scratch.make(m);
            let legal = !scratch.in_check(us);
            prop_assert_eq!(legal, !naive::in_check(&scratch, us), "{:?} after {}", b, m);
            scratch.unmake(m, cap);
            if legal {
                want.push(m);
            } else {
                let (f, t) = (m.from(), m.to());
                let on_line = |s: Square| s.file() == king.file() || s.rank() == king.rank();
                let why = if checked {
                    0
                } else if f == king {
                    1
                } else if on_line(f) {
                    2
                } else if on_line(t) {
                    3
                } else {
                    let diagonal =
                        f.file().abs_diff(king.file()) == 1 && f.rank().abs_diff(king.rank()) == 1;
                    prop_assert!(
                        diagonal,
                        "{:?}: {} is illegal for no reason the shortcut knows",
                        b,
                        m
                    );
                    4
                };
                REJECTED[why].fetch_add(1, Relaxed);
            }
            prop_assert_eq!(b.is_legal_move(m), legal, "{:?} is_legal_move({})", b, m);
        }
        prop_assert_eq!(&scratch, &b);
        let got = b.legal_moves();
        prop_assert_eq!(sorted(&got), sorted(&want), "legal moves of {:?}", b);
        prop_assert_eq!(b.count_legal_moves(), want.len());
        prop_assert_eq!(b.has_legal_move(), !want.is_empty());
        let mut into = MoveList::new();
        b.legal_moves_into(&mut into);
        prop_assert_eq!(into.as_slice(), got.as_slice());
        Ok(())
    });
    let r: Vec<usize> = REJECTED.iter().map(|n| n.load(Relaxed)).collect();
    eprintln!(
        "legal_moves: illegal pseudo moves: {} while in check, {} king moves, {} leaving the king's line, \
         {} entering it, {} leaving a horse leg",
        r[0], r[1], r[2], r[3], r[4]
    );
    assert!(
        r.iter().all(|&n| n > 0),
        "every reason for an illegal move exercised: {r:?}"
    );
}
