//! Checks the placement counts against a brute-force enumeration written independently of the
//! dynamic programming, and the state-space total against the sum over all materials.

use std::time::Instant;

use xiangqi::{Color, PieceKind, legal_squares};
use xqtb_core::count::{
    U256, checked_count_placements, count_all, count_placements, count_placements_exact,
    count_signature,
};
use xqtb_core::{Material, Signature};

fn mat(s: &str) -> Material {
    s.parse().unwrap()
}

/// Enumerates every placement: pieces in a fixed order, identical pieces on increasing squares,
/// every piece on its legal squares, no two on one point, and no two uncrossed pawns of one
/// side on one file (a pawn is uncrossed while on its own side of the river: ranks 0-4 for Red,
/// 5-9 for Black).
fn brute_force(material: &Material) -> u64 {
    let mut pieces = Vec::new();
    for color in Color::ALL {
        // Pawns first, so that the last piece is never a pawn (see the shortcut below).
        let mut kinds = PieceKind::ALL;
        kinds.rotate_right(1);
        assert_eq!(kinds[0], PieceKind::Pawn);
        for kind in kinds {
            for _ in 0..material.count(color, kind) {
                pieces.push((color, kind));
            }
        }
    }

    fn place(
        pieces: &[(Color, PieceKind)],
        i: usize,
        occupied: u128,
        previous: usize,
        uncrossed_files: [u16; 2],
    ) -> u64 {
        let Some(&(color, kind)) = pieces.get(i) else {
            return 1;
        };
        let first = if i > 0 && pieces[i - 1] == (color, kind) {
            previous + 1
        } else {
            0
        };
        let legal = legal_squares(color, kind);
        let candidates = legal & !occupied & !((1u128 << first) - 1);
        if i + 1 == pieces.len() && kind != PieceKind::Pawn {
            // The last piece, with no file rule: every candidate point completes a placement.
            return candidates.count_ones() as u64;
        }
        let mut total = 0;
        let mut rest = candidates;
        while rest != 0 {
            let sq = rest.trailing_zeros() as usize;
            rest &= rest - 1;
            let mut files = uncrossed_files;
            if kind == PieceKind::Pawn {
                let (file, rank) = (sq % 9, sq / 9);
                let uncrossed = match color {
                    Color::Red => rank <= 4,
                    Color::Black => rank >= 5,
                };
                if uncrossed {
                    let bit = 1u16 << file;
                    if files[color.index()] & bit != 0 {
                        continue;
                    }
                    files[color.index()] |= bit;
                }
            }
            total += place(pieces, i + 1, occupied | 1u128 << sq, sq, files);
        }
        total
    }

    place(&pieces, 0, 0, 0, [0, 0])
}

const BRUTE_FORCE_CASES: &[&str] = &[
    // Kings and defenders: the palace and elephant points interact.
    "KvK",
    "KAvK",
    "KAAvK",
    "KBvK",
    "KBBvK",
    "KAvKA",
    "KABvK",
    "KAABBvK",
    "KABvKAB",
    "KAAvKAA",
    "KBBvKBB",
    "KAABvKABB",
    // Pawns: the file rule, elephants on pawn points, crossed pawns in the enemy camp.
    "KPvK",
    "KvKP",
    "KPPvK",
    "KPPPvK",
    "KPPPPvK",
    "KvKPPP",
    "KPvKP",
    "KPPvKP",
    "KPPvKPP",
    "KPPPvKP",
    "KPPvKA",
    "KPvKB",
    "KPvKAB",
    "KPPvKBB",
    "KPPvKAA",
    "KPAvKB",
    "KPBvKPA",
    // Both elephants on the points they share with pawns (c4, g4) and one pawn on either file:
    // the case the published program of Wei and Li undercounts (87,903 instead of 87,984).
    "KPBBvK",
    "KPPBBvKP",
    "KPPvKPBB",
    "KPAABBvKAABB",
    // Free pieces, alone and with the others.
    "KRvK",
    "KRRvK",
    "KNNvK",
    "KRNvK",
    "KRvKA",
    "KRvKB",
    "KCvKAB",
    "KNvKP",
    "KRPvKP",
    "KCPvKB",
    "KRvKR",
    "KRNvKR",
    "KNvKC",
    "KRCvKAB",
    "KRPvKA",
    "KNNvKCC",
    "KRPvKPP",
];

#[test]
fn count_matches_brute_force() {
    let start = Instant::now();
    for name in BRUTE_FORCE_CASES {
        let m = mat(name);
        let t = Instant::now();
        let want = brute_force(&m) as u128;
        let got = count_placements(&m);
        println!("{name:>14}: {got:>14}  (brute force {:?})", t.elapsed());
        assert_eq!(got, want, "{name}");
        // Colours swapped count the same (the board rotated by 180 degrees).
        assert_eq!(count_placements(&m.flipped()), got, "{name} flipped");
    }
    println!(
        "{} materials in {:?}",
        BRUTE_FORCE_CASES.len(),
        start.elapsed()
    );
}

#[test]
fn count_signature_is_the_canonical_material_count() {
    for name in ["KvKR", "KPPvKRA", "KAABBvKNP"] {
        let sig: Signature = name.parse().unwrap();
        assert_eq!(
            count_signature(&sig),
            count_placements(&mat(name)),
            "{name}"
        );
    }
}

/// Every material subset of the two full armies.
fn all_materials() -> Vec<Material> {
    let mut sides = Vec::new();
    let kinds = [
        PieceKind::Advisor,
        PieceKind::Elephant,
        PieceKind::Horse,
        PieceKind::Rook,
        PieceKind::Cannon,
        PieceKind::Pawn,
    ];
    let mut counts = [0u8; 6];
    loop {
        sides.push(counts);
        let mut i = 0;
        loop {
            if i == kinds.len() {
                break;
            }
            counts[i] += 1;
            if counts[i] <= kinds[i].max_count() {
                break;
            }
            counts[i] = 0;
            i += 1;
        }
        if i == kinds.len() {
            break;
        }
    }
    let mut out = Vec::with_capacity(sides.len() * sides.len());
    for red in &sides {
        for black in &sides {
            let mut m = Material::kings_only();
            for (k, kind) in kinds.iter().enumerate() {
                m.set_count(Color::Red, *kind, red[k]);
                m.set_count(Color::Black, *kind, black[k]);
            }
            out.push(m);
        }
    }
    out
}

#[test]
fn count_all_is_the_sum_over_materials() {
    let t = Instant::now();
    let all = count_all();
    let elapsed = t.elapsed();
    println!(
        "count_all: {} placements over {} materials in {elapsed:?}",
        all.placements, all.materials
    );
    assert_eq!(count_all(), all, "deterministic");

    let t = Instant::now();
    let materials = all_materials();
    assert_eq!(materials.len() as u64, all.materials);
    let mut sum = U256::ZERO;
    let mut beyond_u128 = Vec::new();
    for m in &materials {
        let n = count_placements_exact(m);
        if checked_count_placements(m).is_none() {
            beyond_u128.push(m.name());
        }
        sum = sum.checked_add(n).unwrap();
    }
    println!(
        "sum over {} materials in {:?}; beyond u128: {beyond_u128:?}",
        materials.len(),
        t.elapsed()
    );
    assert_eq!(sum, all.placements);
    assert_eq!(beyond_u128.len(), 3);

    // Regression value, cross-checked by an independent arbitrary-precision (Python) evaluation
    // of the same decomposition.
    assert_eq!(
        all.placements.to_string(),
        "7583767311308936928441671793917387439659"
    );
}
