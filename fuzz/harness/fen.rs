//! FEN parser (`xiangqi::parse_fen`): any text is parsed or refused with a reason, never a
//! panic. A position that parses is legal (`validate`), prints back with `to_fen` and reparses to
//! the same board; its legal moves lead to legal positions and unmake restores it; its legal
//! un-moves and un-captures lead to legal positions from which the move is legal and arrives
//! back here.

use xiangqi::fen::{to_fen, validate};
use xiangqi::{Board, parse_fen};

pub fn run(data: &[u8]) {
    let text = super::text(data);
    match parse_fen(&text) {
        Ok(board) => check_board(&board),
        Err(e) => assert!(!e.to_string().is_empty()),
    }
}

/// Invariants of a board that parsed.
pub fn check_board(board: &Board) {
    validate(board).unwrap_or_else(|e| panic!("parsed board is illegal: {e}"));
    let fen = to_fen(board);
    let again = parse_fen(&fen).unwrap_or_else(|e| panic!("to_fen gave '{fen}', refused: {e}"));
    assert_eq!(&again, board, "'{fen}' reparses to another board");
    assert_eq!(to_fen(&again), fen);
    for b in [board.mirrored(), board.rotated()] {
        validate(&b).unwrap_or_else(|e| panic!("a symmetric image of '{fen}' is illegal: {e}"));
    }

    let moves = board.legal_moves();
    assert_eq!(moves.len(), board.count_legal_moves());
    assert_eq!(board.has_legal_move(), !moves.is_empty());
    let mut after = board.clone();
    for &m in moves.iter() {
        let captured = after.make(m);
        if let Err(e) = validate(&after) {
            panic!("{m} from '{fen}' leads to an illegal position: {e}");
        }
        after.unmake(m, captured);
        assert_eq!(&after, board, "unmake of {m} does not restore '{fen}'");
    }

    for (m, before) in board.legal_unmoves() {
        check_predecessor(board, &fen, m, &before);
    }
    for (m, _kind, before) in board.legal_uncaptures() {
        check_predecessor(board, &fen, m, &before);
    }
}

fn check_predecessor(board: &Board, fen: &str, m: xiangqi::Move, before: &Board) {
    let prev = to_fen(before);
    if let Err(e) = validate(before) {
        panic!("un-move {m} of '{fen}' gives the illegal position '{prev}': {e}");
    }
    assert!(
        before.is_legal_move(m),
        "un-move {m} of '{fen}': {m} is not legal in '{prev}'"
    );
    let mut b = before.clone();
    b.make(m);
    assert_eq!(&b, board, "{m} from '{prev}' does not arrive at '{fen}'");
}
