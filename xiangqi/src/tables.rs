//! Move geometry computed at compile time: step targets, blocking points and legal-square masks.

use crate::types::{Color, PieceKind, Square};

/// Up to eight destinations from one square, each with the point that must be empty
/// (the elephant's eye or the horse's leg; unused for other pieces).
#[derive(Clone, Copy)]
pub(crate) struct Steps {
    pub n: u8,
    pub to: [u8; 8],
    pub via: [u8; 8],
}

impl Steps {
    const EMPTY: Steps = Steps {
        n: 0,
        to: [0; 8],
        via: [0; 8],
    };

    const fn push(mut self, to: u8, via: u8) -> Steps {
        self.to[self.n as usize] = to;
        self.via[self.n as usize] = via;
        self.n += 1;
        self
    }

    /// The (destination, blocking point) pairs.
    #[inline]
    pub fn iter(&self) -> impl Iterator<Item = (u8, u8)> + '_ {
        (0..self.n as usize).map(move |i| (self.to[i], self.via[i]))
    }
}

const fn sq(file: i32, rank: i32) -> u8 {
    (rank * 9 + file) as u8
}

const fn on_board(file: i32, rank: i32) -> bool {
    file >= 0 && file < 9 && rank >= 0 && rank < 10
}

const fn in_palace(file: i32, rank: i32) -> bool {
    file >= 3 && file <= 5 && (rank <= 2 || rank >= 7) && rank >= 0 && rank <= 9
}

const fn mask_bit(m: u128, s: u8) -> bool {
    m & (1u128 << s) != 0
}

const fn build_mask(points: &[(i32, i32)], black: bool) -> u128 {
    let mut m = 0u128;
    let mut i = 0;
    while i < points.len() {
        let (f, r) = points[i];
        let r = if black { 9 - r } else { r };
        m |= 1u128 << sq(f, r);
        i += 1;
    }
    m
}

const fn palace_mask(black: bool) -> u128 {
    let mut m = 0u128;
    let mut f = 3;
    while f <= 5 {
        let mut r = 0;
        while r <= 2 {
            m |= 1u128 << sq(f, if black { 9 - r } else { r });
            r += 1;
        }
        f += 1;
    }
    m
}

const fn pawn_mask(black: bool) -> u128 {
    let mut m = 0u128;
    let mut s = 0;
    while s < 90 {
        let f = s % 9;
        let r = s / 9;
        let r = if black { 9 - r } else { r };
        if r >= 5 || ((r == 3 || r == 4) && f % 2 == 0) {
            m |= 1u128 << s;
        }
        s += 1;
    }
    m
}

const ADVISOR_POINTS: [(i32, i32); 5] = [(3, 0), (5, 0), (4, 1), (3, 2), (5, 2)];
const ELEPHANT_POINTS: [(i32, i32); 7] = [(2, 0), (6, 0), (0, 2), (4, 2), (8, 2), (2, 4), (6, 4)];
const ALL_SQUARES: u128 = (1u128 << 90) - 1;

/// Legal-square masks indexed by `[color][kind]`.
static LEGAL: [[u128; 7]; 2] = {
    let mut t = [[0u128; 7]; 2];
    let mut c = 0;
    while c < 2 {
        let black = c == 1;
        t[c][0] = palace_mask(black);
        t[c][1] = build_mask(&ADVISOR_POINTS, black);
        t[c][2] = build_mask(&ELEPHANT_POINTS, black);
        t[c][3] = ALL_SQUARES;
        t[c][4] = ALL_SQUARES;
        t[c][5] = ALL_SQUARES;
        t[c][6] = pawn_mask(black);
        c += 1;
    }
    t
};

/// The squares `kind` of `color` can ever occupy, as a bit mask over square numbers.
#[inline]
pub fn legal_squares(color: Color, kind: PieceKind) -> u128 {
    LEGAL[color as usize][kind as usize]
}

const ORTHO: [(i32, i32); 4] = [(1, 0), (-1, 0), (0, 1), (0, -1)];
const DIAG: [(i32, i32); 4] = [(1, 1), (-1, 1), (1, -1), (-1, -1)];

pub(crate) static KING_STEPS: [Steps; 90] = {
    let mut t = [Steps::EMPTY; 90];
    let mut s = 0;
    while s < 90 {
        let (f, r) = ((s % 9) as i32, (s / 9) as i32);
        if in_palace(f, r) {
            let mut d = 0;
            while d < 4 {
                let (nf, nr) = (f + ORTHO[d].0, r + ORTHO[d].1);
                if in_palace(nf, nr) && (nr <= 2) == (r <= 2) {
                    t[s] = t[s].push(sq(nf, nr), 0);
                }
                d += 1;
            }
        }
        s += 1;
    }
    t
};

pub(crate) static ADVISOR_STEPS: [Steps; 90] = {
    let mut t = [Steps::EMPTY; 90];
    let both = LEGAL[0][1] | LEGAL[1][1];
    let mut s = 0;
    while s < 90 {
        let (f, r) = ((s % 9) as i32, (s / 9) as i32);
        if mask_bit(both, s as u8) {
            let mut d = 0;
            while d < 4 {
                let (nf, nr) = (f + DIAG[d].0, r + DIAG[d].1);
                if on_board(nf, nr) && mask_bit(both, sq(nf, nr)) {
                    t[s] = t[s].push(sq(nf, nr), 0);
                }
                d += 1;
            }
        }
        s += 1;
    }
    t
};

pub(crate) static ELEPHANT_STEPS: [Steps; 90] = {
    let mut t = [Steps::EMPTY; 90];
    let both = LEGAL[0][2] | LEGAL[1][2];
    let mut s = 0;
    while s < 90 {
        let (f, r) = ((s % 9) as i32, (s / 9) as i32);
        if mask_bit(both, s as u8) {
            let mut d = 0;
            while d < 4 {
                let (nf, nr) = (f + 2 * DIAG[d].0, r + 2 * DIAG[d].1);
                if on_board(nf, nr) && (nr <= 4) == (r <= 4) && mask_bit(both, sq(nf, nr)) {
                    t[s] = t[s].push(sq(nf, nr), sq(f + DIAG[d].0, r + DIAG[d].1));
                }
                d += 1;
            }
        }
        s += 1;
    }
    t
};

const HORSE_JUMPS: [(i32, i32, i32, i32); 8] = [
    // (file delta, rank delta, leg file delta, leg rank delta)
    (1, 2, 0, 1),
    (-1, 2, 0, 1),
    (1, -2, 0, -1),
    (-1, -2, 0, -1),
    (2, 1, 1, 0),
    (2, -1, 1, 0),
    (-2, 1, -1, 0),
    (-2, -1, -1, 0),
];

/// Horse moves from a square: destination and leg (next to the horse).
pub(crate) static HORSE_STEPS: [Steps; 90] = {
    let mut t = [Steps::EMPTY; 90];
    let mut s = 0;
    while s < 90 {
        let (f, r) = ((s % 9) as i32, (s / 9) as i32);
        let mut d = 0;
        while d < 8 {
            let (df, dr, lf, lr) = HORSE_JUMPS[d];
            if on_board(f + df, r + dr) {
                t[s] = t[s].push(sq(f + df, r + dr), sq(f + lf, r + lr));
            }
            d += 1;
        }
        s += 1;
    }
    t
};

/// Horse moves into a square: origin and the origin's leg. Serves check detection and un-moves.
pub(crate) static HORSE_FROM: [Steps; 90] = {
    let mut t = [Steps::EMPTY; 90];
    let mut s = 0;
    while s < 90 {
        let (f, r) = ((s % 9) as i32, (s / 9) as i32);
        let mut d = 0;
        while d < 8 {
            let (df, dr, lf, lr) = HORSE_JUMPS[d];
            // The origin is s - delta; its leg is origin + leg delta.
            let (of, or) = (f - df, r - dr);
            if on_board(of, or) {
                t[s] = t[s].push(sq(of, or), sq(of + lf, or + lr));
            }
            d += 1;
        }
        s += 1;
    }
    t
};

const fn pawn_steps(black: bool) -> [Steps; 90] {
    let mut t = [Steps::EMPTY; 90];
    let legal = pawn_mask(black);
    let fwd = if black { -1 } else { 1 };
    let mut s = 0;
    while s < 90 {
        let (f, r) = ((s % 9) as i32, (s / 9) as i32);
        if mask_bit(legal, s as u8) {
            if on_board(f, r + fwd) {
                t[s] = t[s].push(sq(f, r + fwd), 0);
            }
            let crossed = if black { r <= 4 } else { r >= 5 };
            if crossed {
                if f > 0 {
                    t[s] = t[s].push(sq(f - 1, r), 0);
                }
                if f < 8 {
                    t[s] = t[s].push(sq(f + 1, r), 0);
                }
            }
        }
        s += 1;
    }
    t
}

const fn invert(steps: &[Steps; 90]) -> [Steps; 90] {
    let mut t = [Steps::EMPTY; 90];
    let mut s = 0;
    while s < 90 {
        let mut i = 0;
        while i < steps[s].n as usize {
            let to = steps[s].to[i] as usize;
            t[to] = t[to].push(s as u8, 0);
            i += 1;
        }
        s += 1;
    }
    t
}

/// Pawn moves from a square, indexed by colour.
pub(crate) static PAWN_STEPS: [[Steps; 90]; 2] = [pawn_steps(false), pawn_steps(true)];
/// Pawn moves into a square, indexed by colour of the pawn.
pub(crate) static PAWN_FROM: [[Steps; 90]; 2] = [invert(&PAWN_STEPS[0]), invert(&PAWN_STEPS[1])];

/// Step deltas for the four orthogonal rays: east, west, north, south.
pub(crate) const RAY_DELTA: [i8; 4] = [1, -1, 9, -9];

/// Number of squares on each ray before the edge.
pub(crate) static RAY_LEN: [[u8; 4]; 90] = {
    let mut t = [[0u8; 4]; 90];
    let mut s = 0;
    while s < 90 {
        let (f, r) = ((s % 9) as u8, (s / 9) as u8);
        t[s] = [8 - f, f, 9 - r, r];
        s += 1;
    }
    t
};

impl Square {
    /// Whether `kind` of `color` may ever stand here (see the table in the rules).
    pub fn is_legal_for(self, color: Color, kind: PieceKind) -> bool {
        legal_squares(color, kind) & (1u128 << self.index()) != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legal_square_counts_match_the_rules() {
        for c in [Color::Red, Color::Black] {
            let count = |k| legal_squares(c, k).count_ones();
            assert_eq!(count(PieceKind::King), 9);
            assert_eq!(count(PieceKind::Advisor), 5);
            assert_eq!(count(PieceKind::Elephant), 7);
            assert_eq!(count(PieceKind::Pawn), 55);
            assert_eq!(count(PieceKind::Rook), 90);
        }
    }

    #[test]
    fn step_tables_are_consistent() {
        let horse_moves: usize = HORSE_STEPS.iter().map(|s| s.n as usize).sum();
        let horse_from: usize = HORSE_FROM.iter().map(|s| s.n as usize).sum();
        assert_eq!(horse_moves, horse_from);
        // e1 is the palace centre: four king steps and four advisor steps.
        assert_eq!(KING_STEPS[13].n, 4);
        assert_eq!(ADVISOR_STEPS[13].n, 4);
        // e2 elephant reaches c0, g0, c4, g4.
        assert_eq!(ELEPHANT_STEPS[22].n, 4);
    }
}
