//! Zobrist keys: a 64-bit key per position, updated move by move, that the transposition table
//! and the repetition check on the current line compare.

use std::sync::LazyLock;
use xiangqi::{Board, Color, Move, NUM_SQUARES, Piece};

struct Keys {
    /// One key per piece (colour and kind) and square.
    pieces: [[u64; NUM_SQUARES]; 14],
    /// Added when Black is to move.
    black: u64,
}

/// SplitMix64: a fixed seed gives the same keys in every run, so searches repeat exactly.
fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

static KEYS: LazyLock<Keys> = LazyLock::new(|| {
    let mut state = 0x5851_F42D_4C95_7F2D;
    let mut pieces = [[0; NUM_SQUARES]; 14];
    for row in pieces.iter_mut() {
        for key in row.iter_mut() {
            *key = splitmix(&mut state);
        }
    }
    Keys {
        pieces,
        black: splitmix(&mut state),
    }
});

fn piece_key(piece: Piece, square: usize) -> u64 {
    KEYS.pieces[piece.color().index() * 7 + piece.kind().index()][square]
}

/// The key of `board`.
pub(crate) fn key(board: &Board) -> u64 {
    let mut k = if board.side_to_move() == Color::Black {
        KEYS.black
    } else {
        0
    };
    for (s, p) in board.pieces() {
        k ^= piece_key(p, s.index());
    }
    k
}

/// The key after `m` is played on `board` (whose key is `key`), computed before it is played.
pub(crate) fn after(key: u64, board: &Board, m: Move) -> u64 {
    let (from, to) = (m.from().index(), m.to().index());
    let mover = board.piece_at(m.from()).expect("a move starts on a piece");
    let mut k = key ^ KEYS.black ^ piece_key(mover, from) ^ piece_key(mover, to);
    if let Some(captured) = board.piece_at(m.to()) {
        k ^= piece_key(captured, to);
    }
    k
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn incremental_keys_match_keys_from_scratch() {
        let mut board = xiangqi::parse_fen(xiangqi::START_FEN).unwrap();
        let mut k = key(&board);
        // A few plies of the first legal move, captures included sooner or later.
        for _ in 0..40 {
            let moves = board.legal_moves();
            let Some(&m) = moves
                .iter()
                .find(|m| !board.is_empty(m.to()))
                .or(moves.iter().next())
            else {
                break;
            };
            k = after(k, &board, m);
            board.make(m);
            assert_eq!(k, key(&board), "{}", board.fen());
        }
    }
}
