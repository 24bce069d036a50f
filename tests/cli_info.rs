//! `xqtb info` answers at once from the signature alone, shows a store's counts of a table it
//! holds, and counts legal positions only when asked.

mod common;

use common::{TempDir, xqtb};

#[test]
fn info_answers_from_the_signature_and_counts_only_when_asked() {
    let dir = TempDir::new("info");
    let out = xqtb(&["info", "krvkn", "--data", &dir.arg("none")], "");
    assert!(out.contains("signature: KRvKN"), "{out}");
    assert!(
        out.contains("index size: 328500 slots per side to move (657000 entries)"),
        "{out}"
    );
    assert!(out.contains("placements: 620136 on the board"), "{out}");
    assert!(out.contains("captures lead into: KNvK KRvK"), "{out}");
    assert!(
        out.contains("closure (3 tables, dependencies first): KNvK KRvK KRvKN"),
        "{out}"
    );
    assert!(
        !out.contains("legal positions"),
        "counted without --count: {out}"
    );
    assert!(!out.contains("stored in"), "{out}");
    // A table of 3.2 billion entries answers as fast (nothing is counted).
    let big = xqtb(&["info", "KRCPvKR", "--data", &dir.arg("none")], "");
    assert!(big.contains("(3247847408 entries)"), "{big}");
    assert!(
        big.contains(
            "pawn slices: 7 (by the ranks of the pawns; the largest holds 265725000 slots)"
        ),
        "{big}"
    );

    let data = dir.arg("data");
    xqtb(&["solve", "KRvKN", "--data", &data, "--threads", "2"], "");
    let out = xqtb(&["info", "KRvKN", "--count", "--data", &data], "");
    // The counts the solver stored and the slot-by-slot count agree.
    assert!(out.contains("Red to move: 174105 legal"), "{out}");
    assert!(out.contains("Black to move: 206220 legal"), "{out}");
    assert!(
        out.contains("legal positions, Red to move: 174105"),
        "{out}"
    );
    assert!(
        out.contains("legal positions, Black to move: 206220"),
        "{out}"
    );
}
