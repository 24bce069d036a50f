//! Signature parser (`Signature::from_str`, and `Material::from_str` under it): any text is
//! parsed or refused with a reason. A signature that parses is canonical (its name reparses to
//! it and names the same material as the text), has at most `MAX_PIECES` pieces, and names a
//! table whose index can be built; its capture targets are canonical signatures with one piece
//! less.

use xiangqi::{Color, PieceKind, legal_squares};
use xqtb_core::{MAX_PIECES, Material, Signature, TableIndex};

pub fn run(data: &[u8]) {
    let text = super::text(data);
    let material = text.parse::<Material>();
    let sig = match text.parse::<Signature>() {
        Ok(sig) => sig,
        Err(e) => {
            assert!(!e.to_string().is_empty());
            return;
        }
    };
    let material =
        material.unwrap_or_else(|e| panic!("'{text}' is a signature but not a material: {e}"));
    assert_eq!(Signature::new(material), sig, "'{text}'");
    let m = *sig.material();
    assert_eq!(m.piece_count(), material.piece_count());
    let letters = text
        .chars()
        .filter(|c| !matches!(c, 'v' | 'V') && !c.is_whitespace());
    assert_eq!(
        letters.count(),
        m.piece_count() as usize,
        "'{text}' parsed as {sig}: the piece count differs from the text's letters"
    );
    assert_eq!(m.canonical(), m, "'{text}' gave a non-canonical signature");
    for c in Color::ALL {
        assert_eq!(m.count(c, PieceKind::King), 1);
        for k in PieceKind::ALL {
            assert!(m.count(c, k) <= k.max_count(), "'{text}': too many {k:?}");
        }
    }
    let name = sig.name();
    assert_eq!(
        name.parse::<Signature>().as_ref(),
        Ok(&sig),
        "'{name}' does not reparse"
    );
    assert_eq!(sig.to_string(), name);
    assert!(
        m.piece_count() as usize <= MAX_PIECES,
        "'{text}' parsed with {} pieces, more than an index holds ({MAX_PIECES})",
        m.piece_count()
    );
    for t in sig.capture_targets() {
        assert_eq!(t.material().piece_count() + 1, m.piece_count());
        assert_eq!(t.name().parse::<Signature>().as_ref(), Ok(&t));
        assert!(!t.is_dead_draw());
    }
    // Building an index costs about the largest group's placements; build it where that is
    // small (every table anyone solves), where it must not overflow or panic.
    if cheap_index(&sig) {
        let index = TableIndex::new(sig);
        assert!(index.size() > 0, "'{name}': empty index");
        assert_eq!(index.signature(), sig);
    }
}

/// Whether building the index of `sig` is cheap: no group of identical pieces has more than
/// 5,000 placements (two chariots have 4,005, three pawns 26,235).
pub fn cheap_index(sig: &Signature) -> bool {
    let m = sig.material();
    m.piece_count() as usize <= MAX_PIECES
        && Color::ALL.iter().all(|&c| {
            PieceKind::ALL.iter().all(|&k| {
                let points = legal_squares(c, k).count_ones() as u64;
                binomial(points, m.count(c, k) as u64) <= 5_000
            })
        })
}

fn binomial(n: u64, k: u64) -> u64 {
    (0..k).fold(1u64, |r, i| r.saturating_mul(n - i) / (i + 1))
}
