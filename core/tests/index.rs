//! The index is a bijection between legal placements (mirror images identified) and slots.

use xiangqi::{Color, Square};
use xqtb_core::MAX_PIECES;
use xqtb_core::TableIndex;

fn index(name: &str) -> TableIndex {
    TableIndex::new(name.parse().unwrap())
}

fn mirrored(sq: &[u8]) -> Vec<u8> {
    sq.iter()
        .map(|&s| Square::from_index(s as usize).unwrap().mirror().index() as u8)
        .collect()
}

/// Sorts each run of identical pieces so placements compare as sets.
fn normalised(ix: &TableIndex, sq: &[u8]) -> Vec<u8> {
    let pieces = ix.piece_list();
    let mut v = sq.to_vec();
    let mut i = 0;
    while i < v.len() {
        let j = (i..v.len())
            .find(|&j| pieces[j] != pieces[i])
            .unwrap_or(v.len());
        v[i..j].sort_unstable();
        i = j;
    }
    v
}

/// Whether `slot` lies in the padding after a pawn slice (it holds no placement).
fn is_padding(ix: &TableIndex, slot: u64) -> bool {
    slot >= ix.slices()[ix.slice_of(slot)].slots.end
}

fn check_slot(ix: &TableIndex, slot: u64) {
    if is_padding(ix, slot) {
        return;
    }
    let n = ix.piece_count();
    let mut sq = [0u8; MAX_PIECES];
    ix.decode(slot, &mut sq);
    assert_eq!(
        ix.encode(&sq[..n]),
        Some(slot),
        "{} slot {slot}",
        ix.signature()
    );
    assert_eq!(
        ix.encode(&mirrored(&sq[..n])),
        Some(slot),
        "{} mirror of {slot}",
        ix.signature()
    );
    // Any order of identical pieces gives the same slot.
    let mut rev = sq;
    rev[..n].reverse();
    let pieces = ix.piece_list();
    let mut sq2 = [0u8; MAX_PIECES];
    for (i, p) in pieces.iter().enumerate() {
        let same: Vec<u8> = (0..n).filter(|&j| pieces[j] == *p).map(|j| sq[j]).collect();
        let k = (0..i).filter(|&j| pieces[j] == *p).count();
        sq2[i] = same[same.len() - 1 - k];
    }
    assert_eq!(ix.encode(&sq2[..n]), Some(slot));
}

#[test]
fn exhaustive_round_trip_up_to_a_few_million_slots() {
    for name in [
        "KRvKR", "KRNvK", "KRvKAN", "KPPvKA", "KCPvKB", "KNNvKAA", "KRvKABB", "KPPPvK",
    ] {
        let ix = index(name);
        assert!(
            ix.size() <= 4_000_000,
            "{name} too big for the exhaustive test"
        );
        for slot in 0..ix.size() {
            check_slot(&ix, slot);
        }
    }
}

#[test]
fn sampled_round_trip_of_large_tables() {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for name in ["KRNvKR", "KRCvKR", "KCPABvKAABB", "KRNPvKRAB", "KPPPvKPP"] {
        let ix = index(name);
        for _ in 0..200_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            check_slot(&ix, x % ix.size());
        }
        // The symmetric region at the end is sampled too.
        for slot in ix.size().saturating_sub(50_000)..ix.size() {
            check_slot(&ix, slot);
        }
    }
}

/// Every legal placement maps to exactly one slot, and that slot decodes to it or its mirror.
#[test]
fn every_placement_has_exactly_one_slot() {
    for name in ["KRvK", "KAvKB", "KPvKA", "KNvKAB", "KPPvK"] {
        let ix = index(name);
        let n = ix.piece_count();
        let pieces = ix.piece_list();
        let mut hits = vec![0u32; ix.size() as usize];
        let mut sq = vec![0u8; n];
        fn place(
            ix: &TableIndex,
            pieces: &[xiangqi::Piece],
            i: usize,
            sq: &mut Vec<u8>,
            hits: &mut Vec<u32>,
        ) {
            if i == pieces.len() {
                if !ix.placement_is_possible(sq) {
                    return;
                }
                let slot = ix.encode(sq).expect("legal placement has a slot");
                let mut back = vec![0u8; sq.len()];
                ix.decode(slot, &mut back);
                let (a, b, c) = (
                    normalised(ix, sq),
                    normalised(ix, &back),
                    normalised(ix, &mirrored(sq)),
                );
                assert!(b == a || b == c, "{sq:?} -> {slot} -> {back:?}");
                if a == c || b == a {
                    hits[slot as usize] += 1;
                }
                return;
            }
            let p = pieces[i];
            let mask = xiangqi::legal_squares(p.color(), p.kind());
            let min = if i > 0 && pieces[i - 1] == p {
                sq[i - 1] + 1
            } else {
                0
            };
            for s in min..90 {
                if mask & (1u128 << s) != 0 {
                    sq[i] = s;
                    place(ix, pieces, i + 1, sq, hits);
                }
            }
        }
        place(&ix, &pieces, 0, &mut sq, &mut hits);
        // A placement and its mirror share a slot; counting only the one the slot decodes to,
        // each possible slot is hit exactly once.
        for (slot, &h) in hits.iter().enumerate() {
            let possible = ix.board(slot as u64, Color::Red).is_some();
            assert_eq!(h, possible as u32, "{name} slot {slot} hit {h} times");
        }
    }
}

/// Calls `check(index, slot, squares, piece, point)` for every piece of 3,000 scattered slots of
/// a few tables (lone pieces, pairs, pawns, defenders), moved to every point.
fn for_every_shift(mut x: u64, mut check: impl FnMut(&TableIndex, u64, &[u8], usize, u8)) {
    for name in ["KRNvKR", "KPPvKA", "KCPABvKAABB", "KNNvKR", "KRvK"] {
        let ix = index(name);
        let n = ix.piece_count();
        let mut sq = [0u8; MAX_PIECES];
        for _ in 0..3_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let slot = x % ix.size();
            if is_padding(&ix, slot) {
                continue;
            }
            ix.decode(slot, &mut sq);
            for pos in 0..n {
                for to in 0..90u8 {
                    check(&ix, slot, &sq[..n], pos, to);
                }
            }
        }
    }
}

/// The incremental slot of a shifted piece equals a full re-encoding, for every piece moved to
/// every point (on and off its points, onto other pieces included).
#[test]
fn shifted_piece_slot_equals_encoding() {
    for_every_shift(0x2545_F491_4F6C_DD1D, |ix, slot, sq, pos, to| {
        // Off-point targets must fail alike; a placement with two pieces on one point has no
        // defined slot, so only its success matters.
        if sq.contains(&to) && to != sq[pos] {
            return;
        }
        let mut moved = sq.to_vec();
        moved[pos] = to;
        let got = ix.slot_after_shift(slot, sq, pos, to);
        let name = ix.signature();
        assert_eq!(
            got,
            ix.encode(&moved),
            "{name} slot {slot}, piece {pos} to {to}"
        );
    });
}

/// The slot arithmetic of a decoded slot agrees with the general shift for every piece and point.
#[test]
fn shifts_agree_with_the_general_shift() {
    for_every_shift(0x1234_5678_9ABC_DEF1, |ix, slot, sq, pos, to| {
        assert_eq!(
            ix.shifts(slot, sq).slot_after(pos, to),
            ix.slot_after_shift(slot, sq, pos, to),
            "{} slot {slot}, piece {pos} to {to}",
            ix.signature()
        );
    });
}
