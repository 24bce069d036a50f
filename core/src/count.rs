//! Exact counting of placements: in how many ways a material can stand on the board.
//!
//! # What is counted
//!
//! A *placement* of a [`Material`] is a set of its pieces on distinct points, identical pieces
//! indistinguishable, with both kings present and every piece on its legal squares
//! ([`xiangqi::legal_squares`]: kings on the 9 palace points, advisors on 5, elephants on 7, pawns
//! on 55, chariots, horses and cannons anywhere) and at most one *uncrossed* pawn (a pawn still on
//! its own side of the river) per file and side. Kings facing each other and a side in check are
//! counted; the side to move is not part of a placement (a position count with the side to move
//! is twice the placement count).
//!
//! # Method
//!
//! This is the dynamic programming count of Wei Yinfu and Li Zhoujun ("A method for calculating
//! the total number of states of Chinese chess on the basis of dynamic programming", CAAI
//! Transactions on Intelligent Systems 14(1), 2019): pieces are placed hardest first (kings,
//! advisors, elephants, pawns, then chariots, horses and cannons on whatever points are left),
//! and the sub-problems are memoised. The structure that makes it exact and cheap, checked from
//! the legal-square masks when the tables are built:
//!
//! 1. A side's king, advisors, elephants and uncrossed pawns (its *home pieces*) all stand in its
//!    own half of the board (45 points). They interact only with each other: the king shares the
//!    advisor points and the elephant point in the palace, the elephants share two points with
//!    the uncrossed pawns, and the pawns obey the one-per-file rule.
//! 2. The points a pawn reaches after crossing the river are exactly the whole enemy half, so an
//!    enemy crossed pawn may stand on any point of a half that the half's home pieces left
//!    empty, whatever those points are (palace, elephant or pawn points alike).
//! 3. Chariots, horses and cannons stand anywhere.
//!
//! So for each side and each count of advisors `a`, elephants `b` and uncrossed pawns `u`, one
//! memoised number `H[a][b][u]` (placements of the home pieces in the home half, computed once by
//! placing the king, then the advisors, then the elephants, then the uncrossed pawns file by file
//! with a generating polynomial) is all the rest of the count needs to know; the home pieces then
//! occupy exactly `1 + a + b + u` points of the half. With `x = p - u` crossed pawns per side:
//!
//! ```text
//! count = Σ_{u_R, u_B} H_R[a_R][b_R][u_R] · C(45 - 1 - a_R - b_R - u_R, x_B)
//!                    · H_B[a_B][b_B][u_B] · C(45 - 1 - a_B - b_B - u_B, x_R)
//!                    · F(90 - n; r_R, n_R, c_R, r_B, n_B, c_B)
//! ```
//!
//! where `n` counts the kings, advisors, elephants and pawns of both sides and
//! `F(m; k_1..k_6) = m! / ((m - Σk)! · Π k_i!)` places the free pieces (chariots, horses, cannons)
//! on the `m` points left. The total over all materials ([`count_all`]) shares everything further:
//! `F` summed over every free-piece subset depends only on `m`.
//!
//! # The published figure
//!
//! Wei and Li report about 7.54 · 10^39 states. Their published program
//! (github.com/weiyinfu/ChessStateCount, `104-中国象棋状态总数4.py`) gives exactly
//! 7,547,040,878,332,418,571,694,532,043,654,081,760,159 and uses the same definition as here,
//! except for one slip: when both of a side's elephants stand on the two points they share with
//! the uncrossed pawns (c4 and g4 for Red) and exactly one uncrossed pawn stands on those two
//! files, it counts one way instead of two (`place_zu` lacks a factor `C(used, i)`). With that
//! factor it gives exactly [`count_all`]'s 7,583,767,311,308,936,928,441,671,793,917,387,439,659.
//! The smallest material that shows the difference is KPBBvK: 87,984 placements (confirmed by
//! brute force), 87,903 by the published program.
//!
//! # Sizes
//!
//! The total over all materials is about 7.58 · 10^39, above `u128::MAX` (about 3.40 · 10^38),
//! and so are the counts of three single materials (the full armies, and full armies less one
//! advisor of either side). Exact values are therefore given as [`U256`]; [`count_placements`]
//! returns `u128` for the everyday (endgame) use and panics on those three materials, and
//! [`checked_count_placements`] returns `None` for them.

use std::fmt;
use std::sync::OnceLock;

use xiangqi::{Color, NUM_SQUARES, PieceKind, legal_squares};

use crate::signature::{Material, Signature};

// ---------------------------------------------------------------------------------------------
// A small exact 256-bit unsigned integer for the counts that do not fit u128.
// ---------------------------------------------------------------------------------------------

/// An unsigned 256-bit integer: exact placement counts too large for `u128`.
///
/// Only what counting needs is provided: building from `u128`, the full product of two `u128`s,
/// checked addition, conversion back to `u128` when it fits, comparison and decimal display.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct U256 {
    // Field order matters: the derived ordering compares `hi` first.
    hi: u128,
    lo: u128,
}

impl U256 {
    /// Zero.
    pub const ZERO: U256 = U256 { hi: 0, lo: 0 };

    /// The largest value, `2^256 - 1`.
    pub const MAX: U256 = U256 {
        hi: u128::MAX,
        lo: u128::MAX,
    };

    /// The value `x`.
    pub const fn from_u128(x: u128) -> U256 {
        U256 { hi: 0, lo: x }
    }

    /// The value `hi · 2^128 + lo`.
    pub const fn from_parts(hi: u128, lo: u128) -> U256 {
        U256 { hi, lo }
    }

    /// The high and low 128 bits.
    pub const fn parts(self) -> (u128, u128) {
        (self.hi, self.lo)
    }

    /// The exact product `a · b`, which always fits in 256 bits.
    pub const fn widening_mul(a: u128, b: u128) -> U256 {
        const M: u128 = u64::MAX as u128;
        let (a1, a0) = (a >> 64, a & M);
        let (b1, b0) = (b >> 64, b & M);
        let p00 = a0 * b0;
        let p01 = a0 * b1;
        let p10 = a1 * b0;
        let p11 = a1 * b1;
        // Each summand is below 2^64, so `mid` is below 3 · 2^64 and cannot overflow.
        let mid = (p00 >> 64) + (p01 & M) + (p10 & M);
        let lo = (p00 & M) | (mid << 64);
        // The true product is below 2^256, so the high half cannot overflow.
        let hi = p11 + (p01 >> 64) + (p10 >> 64) + (mid >> 64);
        U256 { hi, lo }
    }

    /// `self + other`, or `None` on overflow.
    pub const fn checked_add(self, other: U256) -> Option<U256> {
        let (lo, carry) = self.lo.overflowing_add(other.lo);
        let Some(hi) = self.hi.checked_add(other.hi) else {
            return None;
        };
        let Some(hi) = hi.checked_add(carry as u128) else {
            return None;
        };
        Some(U256 { hi, lo })
    }

    /// The value as `u128`, if it fits.
    pub const fn to_u128(self) -> Option<u128> {
        if self.hi == 0 { Some(self.lo) } else { None }
    }

    /// The value rounded to the nearest `f64` (for logarithms and ratios).
    pub fn to_f64(self) -> f64 {
        self.hi as f64 * 2f64.powi(128) + self.lo as f64
    }

    /// Whether the value is zero.
    pub const fn is_zero(self) -> bool {
        self.hi == 0 && self.lo == 0
    }

    /// Quotient and remainder by a non-zero `d`.
    fn div_rem_u64(self, d: u64) -> (U256, u64) {
        const M: u128 = u64::MAX as u128;
        let limbs = [self.hi >> 64, self.hi & M, self.lo >> 64, self.lo & M];
        let mut q = [0u128; 4];
        let mut rem: u128 = 0;
        for (i, &limb) in limbs.iter().enumerate() {
            // rem < d < 2^64, so `cur` < 2^128.
            let cur = (rem << 64) | limb;
            q[i] = cur / d as u128;
            rem = cur % d as u128;
        }
        (
            U256 {
                hi: (q[0] << 64) | q[1],
                lo: (q[2] << 64) | q[3],
            },
            rem as u64,
        )
    }
}

impl From<u128> for U256 {
    fn from(x: u128) -> U256 {
        U256::from_u128(x)
    }
}

impl fmt::Display for U256 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(x) = self.to_u128() {
            return fmt::Display::fmt(&x, f);
        }
        // Nineteen decimal digits at a time, least significant chunk first.
        const CHUNK: u64 = 10_000_000_000_000_000_000;
        let mut chunks = Vec::new();
        let mut v = *self;
        while !v.is_zero() {
            let (q, r) = v.div_rem_u64(CHUNK);
            chunks.push(r);
            v = q;
        }
        let mut s = String::new();
        for (i, c) in chunks.iter().rev().enumerate() {
            if i == 0 {
                s.push_str(&c.to_string());
            } else {
                s.push_str(&format!("{c:019}"));
            }
        }
        f.pad_integral(true, "", &s)
    }
}

impl fmt::Debug for U256 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

// ---------------------------------------------------------------------------------------------
// Memoised tables.
// ---------------------------------------------------------------------------------------------

const MAX_ADVISORS: usize = PieceKind::Advisor.max_count() as usize;
const MAX_ELEPHANTS: usize = PieceKind::Elephant.max_count() as usize;
const MAX_PAWNS: usize = PieceKind::Pawn.max_count() as usize;
const MAX_FREE: usize = 2;
/// The kinds that may stand on any point, in the order used for free-piece counts.
const FREE_KINDS: [PieceKind; 3] = [PieceKind::Rook, PieceKind::Horse, PieceKind::Cannon];

/// `H[a][b][u]`: placements of a side's king, `a` advisors, `b` elephants and `u` uncrossed
/// pawns in its own half.
type HomeTable = [[[u128; MAX_PAWNS + 1]; MAX_ELEPHANTS + 1]; MAX_ADVISORS + 1];

struct Tables {
    /// Binomial coefficients `C(n, k)` for `n, k <= 90`; `C(90, 45)` < 2^87.
    binom: Vec<[u128; NUM_SQUARES + 1]>,
    /// Per colour: the home-piece table.
    home: [HomeTable; 2],
    /// Per colour: the number of points in the colour's half, all of which the enemy's crossed
    /// pawns can reach.
    half_points: [usize; 2],
    /// `G[m]`: the ways to place any subset of both sides' full free pieces (0-2 each of R N C
    /// per side) on `m` empty points.
    free_any: [u128; NUM_SQUARES + 1],
}

const ALL_POINTS: u128 = (1u128 << NUM_SQUARES) - 1;

/// The points of `color`'s half of the board: ranks 0-4 for Red, 5-9 for Black.
fn half_mask(color: Color) -> u128 {
    let red = (1u128 << 45) - 1;
    match color {
        Color::Red => red,
        Color::Black => ALL_POINTS & !red,
    }
}

fn file_mask(file: u32) -> u128 {
    (0..10).fold(0u128, |m, rank| m | 1u128 << (rank * 9 + file))
}

/// Every subset of `mask` with exactly `size` points.
fn subsets_of_size(mask: u128, size: usize) -> Vec<u128> {
    fn go(points: &[u32], size: usize, acc: u128, out: &mut Vec<u128>) {
        if size == 0 {
            out.push(acc);
            return;
        }
        for (i, &p) in points.iter().enumerate() {
            go(&points[i + 1..], size - 1, acc | 1u128 << p, out);
        }
    }
    let points: Vec<u32> = (0..128).filter(|&s| mask >> s & 1 != 0).collect();
    let mut out = Vec::new();
    go(&points, size, 0, &mut out);
    out
}

/// Checks the board structure the formula relies on (see the module documentation).
fn check_structure() {
    for color in Color::ALL {
        let half = half_mask(color);
        let enemy_half = half_mask(color.opponent());
        assert_eq!(half & enemy_half, 0);
        assert_eq!(half | enemy_half, ALL_POINTS);
        let pawn = legal_squares(color, PieceKind::Pawn);
        for kind in [PieceKind::King, PieceKind::Advisor, PieceKind::Elephant] {
            assert_eq!(
                legal_squares(color, kind) & !half,
                0,
                "{kind:?} leaves its half"
            );
        }
        assert_eq!(
            pawn & !half,
            enemy_half,
            "crossed pawns must reach the whole enemy half"
        );
        for kind in FREE_KINDS {
            assert_eq!(
                legal_squares(color, kind),
                ALL_POINTS,
                "{kind:?} must go anywhere"
            );
        }
    }
}

/// Places a side's home pieces: king, then advisors, then elephants, then the uncrossed pawns
/// file by file (at most one a file) through the polynomial `Π_files (1 + free_points · x)`.
fn home_table(color: Color) -> HomeTable {
    let half = half_mask(color);
    let kings = legal_squares(color, PieceKind::King);
    let advisors = legal_squares(color, PieceKind::Advisor);
    let elephants = legal_squares(color, PieceKind::Elephant);
    let uncrossed = legal_squares(color, PieceKind::Pawn) & half;
    let files: Vec<u128> = (0..9)
        .map(|f| uncrossed & file_mask(f))
        .filter(|&m| m != 0)
        .collect();

    let mut table: HomeTable = [[[0; MAX_PAWNS + 1]; MAX_ELEPHANTS + 1]; MAX_ADVISORS + 1];
    for king in subsets_of_size(kings, 1) {
        for (a, row) in table.iter_mut().enumerate() {
            for adv in subsets_of_size(advisors & !king, a) {
                for (b, cell) in row.iter_mut().enumerate() {
                    for ele in subsets_of_size(elephants & !king & !adv, b) {
                        let occupied = king | adv | ele;
                        let mut poly = [0u128; MAX_PAWNS + 1];
                        poly[0] = 1;
                        for &file in &files {
                            let free = (file & !occupied).count_ones() as u128;
                            for u in (1..=MAX_PAWNS).rev() {
                                poly[u] += poly[u - 1] * free;
                            }
                        }
                        // Each cell is at most 9 · C(5,2) · C(7,2) · 2^5 = 60480.
                        for (c, p) in cell.iter_mut().zip(poly) {
                            *c += p;
                        }
                    }
                }
            }
        }
    }
    table
}

fn binomials() -> Vec<[u128; NUM_SQUARES + 1]> {
    let mut c = vec![[0u128; NUM_SQUARES + 1]; NUM_SQUARES + 1];
    for n in 0..=NUM_SQUARES {
        c[n][0] = 1;
        for k in 1..=n {
            // Largest is C(90, 45) ≈ 1.06 · 10^26 < 2^87.
            c[n][k] = c[n - 1][k - 1] + c[n - 1][k];
        }
    }
    c
}

fn tables() -> &'static Tables {
    static TABLES: OnceLock<Tables> = OnceLock::new();
    TABLES.get_or_init(|| {
        check_structure();
        let binom = binomials();
        let home = [home_table(Color::Red), home_table(Color::Black)];
        let half_points = Color::ALL.map(|c| half_mask(c).count_ones() as usize);
        let mut free_any = [0u128; NUM_SQUARES + 1];
        for (m, g) in free_any.iter_mut().enumerate() {
            for code in 0..(MAX_FREE + 1).pow(6) {
                let mut counts = [0usize; 6];
                let mut rest = code;
                for c in &mut counts {
                    *c = rest % (MAX_FREE + 1);
                    rest /= MAX_FREE + 1;
                }
                // Σ over 729 subsets of at most 88^12 < 2^78 each: below 2^88.
                *g += free_arrangements(&binom, m, &counts);
            }
        }
        Tables {
            binom,
            home,
            half_points,
            free_any,
        }
    })
}

/// `m! / ((m - Σk)! · Π k_i!)`: the ways to put groups of identical pieces of sizes `counts` on
/// `m` empty points, 0 when they do not fit.
fn free_arrangements(binom: &[[u128; NUM_SQUARES + 1]], m: usize, counts: &[usize]) -> u128 {
    let mut left = m;
    let mut ways: u128 = 1;
    for &k in counts {
        if k > left {
            return 0;
        }
        ways = ways
            .checked_mul(binom[left][k])
            .expect("free-piece arrangements overflow u128");
        left -= k;
    }
    ways
}

/// A side's advisors, elephants and pawns.
#[derive(Clone, Copy)]
struct Constrained {
    advisors: usize,
    elephants: usize,
    pawns: usize,
}

impl Constrained {
    fn points(&self) -> usize {
        1 + self.advisors + self.elephants + self.pawns
    }
}

/// Placements of both kings, advisors, elephants and pawns (no free pieces).
///
/// Bound: each `H` is below 2^16 and each binomial `C(44 - .., x)` with `x <= 5` below 2^21, so
/// a term is below 2^74 and the at most 36 terms sum below 2^80.
fn constrained_placements(t: &Tables, red: Constrained, black: Constrained) -> u128 {
    let mut total: u128 = 0;
    for u_red in 0..=red.pawns.min(MAX_PAWNS) {
        let x_red = red.pawns - u_red;
        let red_left = t.half_points[0] - (1 + red.advisors + red.elephants + u_red);
        let h_red = t.home[0][red.advisors][red.elephants][u_red];
        for u_black in 0..=black.pawns.min(MAX_PAWNS) {
            let x_black = black.pawns - u_black;
            let black_left = t.half_points[1] - (1 + black.advisors + black.elephants + u_black);
            let h_black = t.home[1][black.advisors][black.elephants][u_black];
            let ways_x_black = if x_black <= red_left {
                t.binom[red_left][x_black]
            } else {
                0
            };
            let ways_x_red = if x_red <= black_left {
                t.binom[black_left][x_red]
            } else {
                0
            };
            let term = [ways_x_black, h_black, ways_x_red]
                .iter()
                .try_fold(h_red, |acc, &f| acc.checked_mul(f))
                .expect("constrained placement term overflows u128");
            total = total
                .checked_add(term)
                .expect("constrained placements overflow u128");
        }
    }
    total
}

fn side_of(material: &Material, color: Color) -> Constrained {
    let n = |kind: PieceKind| material.count(color, kind) as usize;
    assert_eq!(n(PieceKind::King), 1, "{color} must have exactly one king");
    for kind in PieceKind::CAPTURABLE {
        assert!(
            material.count(color, kind) <= kind.max_count(),
            "{color} has more {}s than a side has in a game",
            kind.name()
        );
    }
    Constrained {
        advisors: n(PieceKind::Advisor),
        elephants: n(PieceKind::Elephant),
        pawns: n(PieceKind::Pawn),
    }
}

// ---------------------------------------------------------------------------------------------
// Public API.
// ---------------------------------------------------------------------------------------------

/// The exact number of placements of exactly this material, colours as given (not
/// canonicalised). See the module documentation for the definition.
///
/// # Panics
///
/// If a side does not have exactly one king or has more pieces of a kind than a side has in a
/// game (2 A, B, N, R, C and 5 P).
pub fn count_placements_exact(material: &Material) -> U256 {
    let t = tables();
    let red = side_of(material, Color::Red);
    let black = side_of(material, Color::Black);
    let constrained = constrained_placements(t, red, black);
    let occupied = red.points() + black.points();
    let free_counts: Vec<usize> = Color::ALL
        .iter()
        .flat_map(|&c| {
            FREE_KINDS
                .iter()
                .map(move |&k| material.count(c, k) as usize)
        })
        .collect();
    let free = free_arrangements(&t.binom, NUM_SQUARES - occupied, &free_counts);
    // Both factors are below 2^128, so the product fits in 256 bits.
    U256::widening_mul(constrained, free)
}

/// The number of placements of exactly this material, or `None` when it exceeds `u128::MAX`
/// (only the full armies and the full armies less one advisor of either side do).
///
/// # Panics
///
/// As [`count_placements_exact`].
pub fn checked_count_placements(material: &Material) -> Option<u128> {
    count_placements_exact(material).to_u128()
}

/// The number of placements of exactly this material, colours as given (not canonicalised):
/// sets of its pieces on distinct legal points, identical pieces indistinguishable, at most one
/// uncrossed pawn per file and side; facing kings and checks included, side to move not part of
/// a placement. Every endgame material fits comfortably (KRNvKR has 53,331,696).
///
/// # Panics
///
/// If the count exceeds `u128::MAX`, which happens for exactly three materials: the full armies
/// (about 4.8 · 10^38) and the full armies less one advisor of either side (about 3.7 · 10^38).
/// Use [`checked_count_placements`] or [`count_placements_exact`] for those. Also panics as
/// [`count_placements_exact`] for materials outside the game's piece limits.
pub fn count_placements(material: &Material) -> u128 {
    checked_count_placements(material).unwrap_or_else(|| {
        panic!(
            "{material:?} has {} placements, more than u128 holds; use count_placements_exact",
            count_placements_exact(material)
        )
    })
}

/// The number of placements of a canonical signature's material (stronger side as Red; the
/// count of the colour-swapped material is the same).
///
/// # Panics
///
/// As [`count_placements`].
pub fn count_signature(sig: &Signature) -> u128 {
    count_placements(sig.material())
}

/// The total over every material: the state-space size of Xiangqi in placements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StateSpace {
    /// Placements summed over every material subset of the two full armies (each side a king,
    /// 0-2 advisors, elephants, horses, chariots and cannons, 0-5 pawns).
    pub placements: U256,
    /// How many materials were summed: (3^5 · 6)^2 = 2,125,764.
    pub materials: u64,
}

impl StateSpace {
    /// Positions with a side to move: twice the placements.
    pub fn positions_with_side_to_move(&self) -> U256 {
        self.placements
            .checked_add(self.placements)
            .expect("cannot overflow: below 2^134")
    }
}

/// The exact number of placements summed over every material subset of the two full armies
/// (see [`StateSpace`]), with the definition of [`count_placements`].
///
/// Sub-problems are shared across materials: the constrained part (kings, advisors, elephants,
/// pawns) is counted once per pair of sides (54 · 54 pairs), and the free pieces summed over all
/// 3^6 subsets once per number of empty points. So the sum over millions of materials is a
/// few thousand products of memoised numbers, cheap once the tables are built.
pub fn count_all() -> StateSpace {
    let t = tables();
    let mut sides = Vec::new();
    for advisors in 0..=MAX_ADVISORS {
        for elephants in 0..=MAX_ELEPHANTS {
            for pawns in 0..=MAX_PAWNS {
                sides.push(Constrained {
                    advisors,
                    elephants,
                    pawns,
                });
            }
        }
    }
    let mut total = U256::ZERO;
    for &red in &sides {
        for &black in &sides {
            let constrained = constrained_placements(t, red, black);
            let free = t.free_any[NUM_SQUARES - red.points() - black.points()];
            // Each product is below 2^80 · 2^88 = 2^168 and there are 2916 of them, so the sum
            // stays below 2^180; the checked addition is belt and braces.
            total = total
                .checked_add(U256::widening_mul(constrained, free))
                .expect("state-space total overflows 256 bits");
        }
    }
    let free_subsets = ((MAX_FREE + 1) as u64).pow(FREE_KINDS.len() as u32);
    let per_side = sides.len() as u64 * free_subsets;
    StateSpace {
        placements: total,
        materials: per_side * per_side,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mat(s: &str) -> Material {
        s.parse().unwrap()
    }

    #[test]
    fn u256_arithmetic() {
        let m = U256::widening_mul(u128::MAX, u128::MAX);
        assert_eq!(m.parts(), (u128::MAX - 1, 1));
        assert_eq!(U256::widening_mul(1 << 64, 1 << 64).parts(), (1, 0));
        assert_eq!(U256::widening_mul(1 << 100, 1 << 100).parts(), (1 << 72, 0));
        assert_eq!(
            U256::from(5u128).checked_add(U256::from(7u128)),
            Some(U256::from(12u128))
        );
        assert_eq!(
            U256::from(u128::MAX).checked_add(U256::from(1u128)),
            Some(U256::from_parts(1, 0))
        );
        assert_eq!(U256::MAX.checked_add(U256::from(1u128)), None);
        assert_eq!(U256::from_parts(1, 0).to_u128(), None);
        assert!(U256::from_parts(1, 0) > U256::from(u128::MAX));
        assert_eq!(
            U256::from_parts(1, 0).to_string(),
            "340282366920938463463374607431768211456"
        );
        assert_eq!(
            U256::MAX.to_string(),
            "115792089237316195423570985008687907853269984665640564039457584007913129639935"
        );
        assert_eq!(
            U256::widening_mul(10u128.pow(20), 10u128.pow(20)).to_string(),
            format!("1{}", "0".repeat(40))
        );
        assert_eq!(format!("{:>5}", U256::from(42u128)), "   42");
    }

    #[test]
    fn count_small_by_hand() {
        // Kings: 9 · 9, facing kings included.
        assert_eq!(count_placements(&mat("KvK")), 81);
        // An advisor shares 5 of the king's 9 points: 9 · 5 - 5 = 40.
        assert_eq!(count_placements(&mat("KAvK")), 40 * 9);
        // A red pawn has 55 points, one of which the black king takes.
        assert_eq!(count_placements(&mat("KPvK")), 9 * 9 * 54);
        assert_eq!(count_placements(&mat("KRvK")), 9 * 9 * 88);
        assert_eq!(count_placements(&mat("KRRvK")), 81 * 88 * 87 / 2);
        assert_eq!(tables().home[0][0][0][0], 9);
        assert_eq!(tables().home[0][0][0][1], 9 * 10);
    }

    #[test]
    fn count_three_materials_exceed_u128() {
        let full = mat("KRRNNCCPPPPPAABBvKRRNNCCPPPPPAABB");
        assert_eq!(checked_count_placements(&full), None);
        assert_eq!(
            count_placements_exact(&full).to_string(),
            "483488746376439688493059395008064000000"
        );
        let less = mat("KRRNNCCPPPPPABBvKRRNNCCPPPPPAABB");
        assert_eq!(checked_count_placements(&less), None);
        assert_eq!(checked_count_placements(&less.flipped()), None);
        assert!(checked_count_placements(&mat("KRRNNCCPPPPAABBvKRRNNCCPPPPPAABB")).is_some());
    }
}
