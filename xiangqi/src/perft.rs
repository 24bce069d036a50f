//! Perft: counting the leaves of the legal move tree, the standard check of a move generator.

use crate::board::Board;
use crate::moves::{Move, MoveList};

/// Number of leaf positions `depth` plies below `board`.
pub fn perft(board: &mut Board, depth: u32) -> u64 {
    if depth == 0 {
        return 1;
    }
    let mut moves = MoveList::new();
    board.legal_moves_into(&mut moves);
    if depth == 1 {
        return moves.len() as u64;
    }
    let mut total = 0;
    for &m in moves.iter() {
        let cap = board.make(m);
        total += perft(board, depth - 1);
        board.unmake(m, cap);
    }
    total
}

/// Leaf counts below each legal root move, in move generation order.
pub fn perft_divide(board: &mut Board, depth: u32) -> Vec<(Move, u64)> {
    let moves = board.legal_moves();
    moves
        .iter()
        .map(|&m| {
            let cap = board.make(m);
            let n = perft(board, depth.saturating_sub(1));
            board.unmake(m, cap);
            (m, n)
        })
        .collect()
}
