//! The numbering of one slice's placements (of the whole table for a table without pawns, or
//! under index scheme 1): see the parent module for the table-level layout.
//!
//! Each side's king, advisors and elephants together form its *home configuration*: the
//! king on a palace point, the defenders on their points, no two on one point. The pair of home
//! configurations is the leading digit, with the mirror folded in: a pair is either asymmetric
//! (two mirror images, one slot) or mirror-symmetric. Every other kind of piece of each colour
//! (pawns, horses, cannons, chariots) forms one group: its pieces are numbered combinatorially
//! over the group's legal points (identical pieces give one slot per set of points, not per
//! ordering). In a pawn slice a pawn group holds only the placements whose pawns stand on the
//! slice's ranks, numbered in the order of the full group.
//!
//! * Asymmetric home pair `c`: `c * R + Σ rank_g * stride_g` with `R = Π size_g`, every group
//!   in full, the board turned so that the home pair is the canonical member of its mirror pair.
//! * Symmetric home pair `s`: the mirror is folded into the first group whose placement is not
//!   mirror-symmetric, recursively: `P_a R + s * H_0 + half_0`, where `P_a` is the number of
//!   asymmetric home-pair classes, `H_i = (A_i / 2) R_{i+1} + S_i H_{i+1}` (`A_i` asymmetric and
//!   `S_i` symmetric placements of group `i`, `R_i` the product of sizes from group `i` on,
//!   `H_m = 1`).
//!
//! Slots whose placement puts two pieces on one point, or two uncrossed pawns of a side on one
//! file, cannot be set up; the other illegal slots (kings facing, the side not to move in check)
//! are found by [`super::TableIndex::board`] followed by the usual check test.

use crate::signature::Signature;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use strength_reduce::StrengthReducedU64;
use xiangqi::{Board, Color, Piece, PieceKind, Square, legal_squares};

pub use crate::signature::MAX_PIECES;

pub(super) const NONE: u8 = 0xFF;
const SYM_BIT: u32 = 1 << 31;
const MIRRORED_BIT: u32 = 1 << 30;
const CLASS_MASK: u32 = (1 << 30) - 1;

fn binomial(n: usize, k: usize) -> u64 {
    if k > n {
        return 0;
    }
    let mut r: u64 = 1;
    for i in 0..k {
        r = r * (n - i) as u64 / (i + 1) as u64;
    }
    r
}

/// Points a piece may stand on, numbered locally, with the mirror folded into classes.
#[derive(Clone)]
struct Group {
    color: Color,
    kind: PieceKind,
    count: usize,
    /// Offset of this group's pieces in the flat square array.
    first: usize,
    squares: Vec<u8>,
    local: [u8; 90],
    mirror_local: Vec<u8>,
    size: u64,
    /// Per rank: `SYM_BIT | sym index`, or the asymmetric class index with `MIRRORED_BIT` set
    /// when the placement is the non-canonical member of its pair.
    class: Vec<u32>,
    mirror_rank: Vec<u32>,
    sym: Vec<u32>,
    asym: Vec<u32>,
    /// `binom[n][i] = C(n, i)` for the local point count.
    binom: Vec<[u64; 6]>,
    /// The squares of every rank, `count` bytes each, when small enough to tabulate.
    placements: Vec<u8>,
    /// In a pawn slice, for a group of several pawns: the combinatorial rank of each of the
    /// group's placements, in order (empty when the group holds every placement).
    members: Vec<u32>,
    /// With `members`: the group's placements split by their ranks, shared by every slice,
    /// and which part this slice's is.
    partition: Option<Arc<Partition>>,
    profile: u32,
}

/// The placements of `count` pawns of one colour split by the ranks they stand on: for each
/// combinatorial rank its part and its place within it. Computed once per colour and count,
/// for every slice of every table: if each slice scanned all placements itself, planning many
/// tables would repeat that scan for every slice, and each slice would hold its own copy.
struct Partition {
    part_of: Vec<u32>,
    place_in_part: Vec<u32>,
    /// Each part's combinatorial ranks, in order, by its sorted pawn ranks.
    parts: HashMap<Vec<u8>, (u32, Vec<u32>)>,
}

/// The partition of the placements of `g` (a whole group of pawns) by their pawn ranks.
fn partition_of(g: &Group) -> Arc<Partition> {
    type Cache = Mutex<HashMap<(Color, usize), Arc<Partition>>>;
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let key = (g.color, g.count);
    if let Some(p) = cache.lock().expect("partition cache").get(&key) {
        return Arc::clone(p);
    }
    let mut p = Partition {
        part_of: vec![0; g.size as usize],
        place_in_part: vec![0; g.size as usize],
        parts: HashMap::new(),
    };
    let mut locals = [0u8; 8];
    for r in 0..g.size {
        g.unrank_full(r, &mut locals[..g.count]);
        let mut ranks: Vec<u8> = locals[..g.count]
            .iter()
            .map(|&l| {
                Square::from_index(g.squares[l as usize] as usize)
                    .unwrap()
                    .rank()
            })
            .collect();
        ranks.sort_unstable();
        let next = p.parts.len() as u32;
        let (id, members) = p.parts.entry(ranks).or_insert((next, Vec::new()));
        p.part_of[r as usize] = *id;
        p.place_in_part[r as usize] = members.len() as u32;
        members.push(r as u32);
    }
    let p = Arc::new(p);
    cache
        .lock()
        .expect("partition cache")
        .insert(key, Arc::clone(&p));
    p
}

/// Largest group (ranks times pieces) whose placements are tabulated for fast decoding.
const MAX_TABULATED: u64 = 1 << 24;

impl Group {
    fn new(color: Color, kind: PieceKind, count: usize, first: usize) -> Group {
        Group::build(color, kind, count, first, None)
    }

    /// The group of `count` pieces standing on exactly the ranks `ranks` (in any order), as in
    /// a pawn slice.
    fn on_ranks(color: Color, kind: PieceKind, first: usize, ranks: &[u8]) -> Group {
        Group::build(color, kind, ranks.len(), first, Some(ranks))
    }

    fn build(
        color: Color,
        kind: PieceKind,
        count: usize,
        first: usize,
        ranks: Option<&[u8]>,
    ) -> Group {
        let mask = legal_squares(color, kind);
        let rank_of = |s: u8| Square::from_index(s as usize).unwrap().rank();
        // A lone piece on given ranks is simply a piece with fewer points.
        let lone_on = |s: u8| match ranks {
            Some(r) if count == 1 => rank_of(s) == r[0],
            _ => true,
        };
        let squares: Vec<u8> = (0..90u8)
            .filter(|&s| mask & (1u128 << s) != 0 && lone_on(s))
            .collect();
        let mut local = [NONE; 90];
        for (i, &s) in squares.iter().enumerate() {
            local[s as usize] = i as u8;
        }
        let mirror_local: Vec<u8> = squares
            .iter()
            .map(|&s| local[Square::from_index(s as usize).unwrap().mirror().index()])
            .collect();
        let n = squares.len();
        let binom: Vec<[u64; 6]> = (0..=n)
            .map(|m| std::array::from_fn(|k| binomial(m, k)))
            .collect();
        let size = binomial(n, count);
        let mut g = Group {
            color,
            kind,
            count,
            first,
            squares,
            local,
            mirror_local,
            size,
            class: Vec::new(),
            mirror_rank: Vec::new(),
            sym: Vec::new(),
            asym: Vec::new(),
            binom,
            placements: Vec::new(),
            members: Vec::new(),
            partition: None,
            profile: 0,
        };
        if let Some(ranks) = ranks.filter(|_| count > 1) {
            let mut want = ranks.to_vec();
            want.sort_unstable();
            let partition = partition_of(&g);
            let (profile, members) = partition
                .parts
                .get(&want)
                .cloned()
                .expect("the ranks of a slice hold a placement");
            g.size = members.len() as u64;
            g.members = members;
            g.profile = profile;
            g.partition = Some(partition);
        }
        g.build_classes();
        g
    }

    fn build_classes(&mut self) {
        let size = self.size as usize;
        let mut mirror_rank = vec![0u32; size];
        let mut locals = [0u8; 8];
        for (r, mr) in mirror_rank.iter_mut().enumerate() {
            self.unrank(r as u64, &mut locals[..self.count]);
            let mut m = [0u8; 8];
            for i in 0..self.count {
                m[i] = self.mirror_local[locals[i] as usize];
            }
            *mr = self
                .rank(&mut m[..self.count])
                .expect("a slice's pawn ranks are the same in the mirror") as u32;
        }
        if self.size * self.count as u64 <= MAX_TABULATED || !self.members.is_empty() {
            let mut placements = vec![0u8; size * self.count];
            for (r, chunk) in placements.chunks_mut(self.count).enumerate() {
                self.unrank(r as u64, &mut locals[..self.count]);
                for (out, &l) in chunk.iter_mut().zip(&locals) {
                    *out = self.squares[l as usize];
                }
            }
            self.placements = placements;
        }
        let mut class = vec![0u32; size];
        let (mut sym, mut asym) = (Vec::new(), Vec::new());
        for r in 0..size {
            let mr = mirror_rank[r] as usize;
            if mr == r {
                class[r] = SYM_BIT | sym.len() as u32;
                sym.push(r as u32);
            } else if r < mr {
                class[r] = asym.len() as u32;
                class[mr] = MIRRORED_BIT | asym.len() as u32;
                asym.push(r as u32);
            }
        }
        self.class = class;
        self.mirror_rank = mirror_rank;
        self.sym = sym;
        self.asym = asym;
    }

    /// Rank of a set of local points (any order; sorted in place), `None` when a slice's
    /// group does not hold it.
    #[inline]
    fn rank(&self, locals: &mut [u8]) -> Option<u64> {
        locals.sort_unstable();
        let full: u64 = locals
            .iter()
            .enumerate()
            .map(|(i, &l)| self.binom[l as usize][i + 1])
            .sum();
        let Some(p) = &self.partition else {
            return Some(full);
        };
        // Two pieces on one point rank past the end: such a placement is in no slice.
        match p.part_of.get(full as usize) {
            Some(&part) if part == self.profile => Some(p.place_in_part[full as usize] as u64),
            _ => None,
        }
    }

    /// Writes the squares of rank `r` (increasing) into the group's place in the flat array.
    #[inline]
    fn write_squares(&self, r: u64, out: &mut [u8]) {
        if self.count == 1 {
            out[self.first] = self.squares[r as usize];
            return;
        }
        let dst = &mut out[self.first..self.first + self.count];
        if !self.placements.is_empty() {
            let at = r as usize * self.count;
            dst.copy_from_slice(&self.placements[at..at + self.count]);
        } else {
            let mut locals = [0u8; 8];
            self.unrank(r, &mut locals[..self.count]);
            for (d, &l) in dst.iter_mut().zip(&locals) {
                *d = self.squares[l as usize];
            }
        }
    }

    /// The sorted local points of rank `r`.
    #[inline]
    fn unrank(&self, r: u64, out: &mut [u8]) {
        match self.members.get(r as usize) {
            Some(&full) => self.unrank_full(full as u64, out),
            None => self.unrank_full(r, out),
        }
    }

    /// The sorted local points of combinatorial rank `r`.
    fn unrank_full(&self, mut r: u64, out: &mut [u8]) {
        if out.len() == 1 {
            out[0] = r as u8;
            return;
        }
        let mut top = self.squares.len();
        for i in (0..out.len()).rev() {
            let mut l = top - 1;
            while self.binom[l][i + 1] > r {
                l -= 1;
            }
            r -= self.binom[l][i + 1];
            out[i] = l as u8;
            top = l;
        }
    }
}

/// One side's king, advisors and elephants: every way to put them on distinct home points.
#[derive(Clone)]
struct Home {
    king: Group,
    advisors: Option<Group>,
    elephants: Option<Group>,
    /// Configuration id of (king rank, advisor rank, elephant rank), `u32::MAX` when two of
    /// them share a point.
    id: Vec<u32>,
    configs: Vec<(u32, u32, u32)>,
    /// The points of each configuration: king, advisors, elephants (unused entries 0).
    config_points: Vec<[u8; 5]>,
    mirror: Vec<u32>,
    a_size: u64,
    b_size: u64,
}

impl Home {
    fn new(color: Color, advisors: usize, elephants: usize, first: usize) -> (Home, usize) {
        let king = Group::new(color, PieceKind::King, 1, color.index());
        let mut next = first;
        let mut group = |kind, n: usize| {
            (n > 0).then(|| {
                let g = Group::new(color, kind, n, next);
                next += n;
                g
            })
        };
        let advisors = group(PieceKind::Advisor, advisors);
        let elephants = group(PieceKind::Elephant, elephants);
        let a_size = advisors.as_ref().map_or(1, |g| g.size);
        let b_size = elephants.as_ref().map_or(1, |g| g.size);
        let mut home = Home {
            king,
            advisors,
            elephants,
            id: vec![u32::MAX; (9 * a_size * b_size) as usize],
            configs: Vec::new(),
            config_points: Vec::new(),
            mirror: Vec::new(),
            a_size,
            b_size,
        };
        let mut sq = [0u8; MAX_PIECES];
        for k in 0..9u32 {
            for a in 0..a_size as u32 {
                for b in 0..b_size as u32 {
                    home.squares(k, a, b, &mut sq);
                    let mut used = 0u128;
                    let mut clash = false;
                    for s in home.points(&sq) {
                        clash |= used & (1u128 << s) != 0;
                        used |= 1u128 << s;
                    }
                    if !clash {
                        let key = home.key(k, a, b);
                        home.id[key] = home.configs.len() as u32;
                        home.configs.push((k, a, b));
                        let mut points = [0u8; 5];
                        for (p, s) in points.iter_mut().zip(home.points(&sq)) {
                            *p = s;
                        }
                        home.config_points.push(points);
                    }
                }
            }
        }
        let mirror: Vec<u32> = home
            .configs
            .iter()
            .map(|&(k, a, b)| {
                let mk = home.king.mirror_rank[k as usize];
                let ma = home
                    .advisors
                    .as_ref()
                    .map_or(0, |g| g.mirror_rank[a as usize]);
                let mb = home
                    .elephants
                    .as_ref()
                    .map_or(0, |g| g.mirror_rank[b as usize]);
                home.id[home.key(mk, ma, mb)]
            })
            .collect();
        home.mirror = mirror;
        (home, next)
    }

    #[inline]
    fn key(&self, k: u32, a: u32, b: u32) -> usize {
        ((k as u64 * self.a_size + a as u64) * self.b_size + b as u64) as usize
    }

    fn groups(&self) -> impl Iterator<Item = &Group> {
        std::iter::once(&self.king)
            .chain(self.advisors.iter())
            .chain(self.elephants.iter())
    }

    fn points<'a>(&'a self, sq: &'a [u8]) -> impl Iterator<Item = u8> + 'a {
        self.groups()
            .flat_map(move |g| sq[g.first..g.first + g.count].iter().copied())
    }

    fn squares(&self, k: u32, a: u32, b: u32, out: &mut [u8]) {
        let parts = [
            (Some(&self.king), k),
            (self.advisors.as_ref(), a),
            (self.elephants.as_ref(), b),
        ];
        for (g, r) in parts.into_iter().filter_map(|(g, r)| g.map(|g| (g, r))) {
            g.write_squares(r as u64, out);
        }
    }

    /// Writes the points of configuration `c` into their places in the flat array.
    #[inline]
    fn write_config(&self, c: usize, out: &mut [u8]) {
        let points = &self.config_points[c];
        out[self.king.first] = points[0];
        let mut i = 1;
        for g in self.advisors.iter().chain(self.elephants.iter()) {
            out[g.first..g.first + g.count].copy_from_slice(&points[i..i + g.count]);
            i += g.count;
        }
    }

    /// Configuration id of the home pieces in `sq`, `None` if one is off its points or two
    /// share a point.
    #[inline]
    fn config(&self, sq: &[u8]) -> Option<u32> {
        let k = group_rank(&self.king, sq, false)? as u32;
        let a = match &self.advisors {
            Some(g) => group_rank(g, sq, false)? as u32,
            None => 0,
        };
        let b = match &self.elephants {
            Some(g) => group_rank(g, sq, false)? as u32,
            None => 0,
        };
        let id = self.id[self.key(k, a, b)];
        (id != u32::MAX).then_some(id)
    }
}

/// Rank of group `g` in the flat square array, optionally mirrored; `None` if off its points.
#[inline(always)]
fn group_rank(g: &Group, squares: &[u8], flip: bool) -> Option<u64> {
    if g.count == 1 {
        // Lone pieces (kings, most free pieces) are the common case of every encoding.
        let l = g.local[squares[g.first] as usize];
        if l == NONE {
            return None;
        }
        return Some(if flip { g.mirror_local[l as usize] } else { l } as u64);
    }
    group_rank_many(g, squares, flip)
}

#[inline(never)]
fn group_rank_many(g: &Group, squares: &[u8], flip: bool) -> Option<u64> {
    let mut locals = [0u8; 8];
    for i in 0..g.count {
        let l = g.local[squares[g.first + i] as usize];
        if l == NONE {
            return None;
        }
        locals[i] = if flip { g.mirror_local[l as usize] } else { l };
    }
    g.rank(&mut locals[..g.count])
}

/// The index of one table: position <-> slot, for either side to move (both sides use the same
/// numbering, so a table holds `2 * size` entries).
#[derive(Clone)]
pub(super) struct Layout {
    homes: [Home; 2],
    /// Class of each home pair `red * black_configs + black`, as for group ranks.
    pair_class: Vec<u32>,
    pair_asym: Vec<(u32, u32)>,
    pair_sym: Vec<(u32, u32)>,
    groups: Vec<Group>,
    /// `stride[i]` = product of the sizes of groups after `i`.
    stride: Vec<u64>,
    /// `half[i]` = number of mirror classes of groups `i..`, with `half[m] = 1`.
    half: Vec<u64>,
    full: u64,
    /// The divisors of decoding, strength-reduced (decoding every slot of a table in turn is
    /// the solver's commonest operation, and a multiply and shift is much cheaper than a
    /// hardware division).
    full_div: StrengthReducedU64,
    size_div: Vec<StrengthReducedU64>,
    stride_div: Vec<StrengthReducedU64>,
    half_div: Vec<StrengthReducedU64>,
    size: u64,
    pieces: usize,
    /// Some side has two or more pawns (so a file may hold two uncrossed ones).
    has_pawn_pairs: bool,
    group_of: [[u8; 7]; 2],
    /// Free group of each flat position (`NONE` for kings and defenders).
    group_at: [u8; MAX_PIECES],
    /// As `group_at`, for groups of one piece only.
    lone_group_at: [u8; MAX_PIECES],
    /// Slots under asymmetric home pairs, which come first.
    asym_total: u64,
    /// The piece at each flat position (see [`TableIndex::piece_list`]).
    pieces_at: [Option<Piece>; MAX_PIECES],
}

/// Order of the free groups from the most significant digit: pawns first, the long-range
/// pieces last so that their moves change the index by small strides.
const GROUP_ORDER: [PieceKind; 4] = [
    PieceKind::Pawn,
    PieceKind::Horse,
    PieceKind::Cannon,
    PieceKind::Rook,
];

impl Layout {
    /// The layout of every placement of `signature`, or with `pawn_ranks` (Red's, Black's) of
    /// the placements whose pawns stand on those ranks (one pawn slice).
    pub(super) fn new(signature: Signature, pawn_ranks: Option<&[Vec<u8>; 2]>) -> Layout {
        let m = *signature.material();
        let mut first = 2;
        let mut group_of = [[NONE; 7]; 2];
        let homes = Color::ALL.map(|c| {
            let (h, next) = Home::new(
                c,
                m.count(c, PieceKind::Advisor) as usize,
                m.count(c, PieceKind::Elephant) as usize,
                first,
            );
            first = next;
            h
        });
        let mut groups = Vec::new();
        for kind in GROUP_ORDER {
            for color in Color::ALL {
                let n = m.count(color, kind) as usize;
                if n > 0 {
                    group_of[color.index()][kind.index()] = groups.len() as u8;
                    groups.push(match pawn_ranks {
                        Some(ranks) if kind == PieceKind::Pawn => {
                            Group::on_ranks(color, kind, first, &ranks[color.index()])
                        }
                        _ => Group::new(color, kind, n, first),
                    });
                    first += n;
                }
            }
        }
        let g = groups.len();
        let mut stride = vec![1u64; g];
        for i in (0..g.saturating_sub(1)).rev() {
            stride[i] = stride[i + 1] * groups[i + 1].size;
        }
        let full = groups.iter().map(|x| x.size).product::<u64>();
        let mut half = vec![1u64; g + 1];
        for i in (0..g).rev() {
            let grp = &groups[i];
            half[i] = grp.asym.len() as u64 * stride[i] + grp.sym.len() as u64 * half[i + 1];
        }
        let (nr, nb) = (homes[0].configs.len(), homes[1].configs.len());
        let mut pair_class = vec![0u32; nr * nb];
        let (mut pair_asym, mut pair_sym) = (Vec::new(), Vec::new());
        for r in 0..nr {
            for b in 0..nb {
                let code = r * nb + b;
                let mcode = homes[0].mirror[r] as usize * nb + homes[1].mirror[b] as usize;
                if mcode == code {
                    pair_class[code] = SYM_BIT | pair_sym.len() as u32;
                    pair_sym.push((r as u32, b as u32));
                } else if code < mcode {
                    pair_class[code] = pair_asym.len() as u32;
                    pair_class[mcode] = MIRRORED_BIT | pair_asym.len() as u32;
                    pair_asym.push((r as u32, b as u32));
                }
            }
        }
        let size = pair_asym.len() as u64 * full + pair_sym.len() as u64 * half[0];
        let mut group_at = [NONE; MAX_PIECES];
        for (i, g) in groups.iter().enumerate() {
            group_at[g.first..g.first + g.count].fill(i as u8);
        }
        let size_div = groups
            .iter()
            .map(|g| StrengthReducedU64::new(g.size))
            .collect();
        let lone_group_at = group_at.map(|g| {
            if g != NONE && groups[g as usize].count == 1 {
                g
            } else {
                NONE
            }
        });
        Layout {
            lone_group_at,
            asym_total: pair_asym.len() as u64 * full,
            has_pawn_pairs: groups
                .iter()
                .any(|g| g.kind == PieceKind::Pawn && g.count > 1),
            size_div,
            group_at,
            pieces_at: [None; MAX_PIECES],
            homes,
            pair_class,
            pair_asym,
            pair_sym,
            groups,
            full_div: StrengthReducedU64::new(full),
            stride_div: stride.iter().map(|&d| StrengthReducedU64::new(d)).collect(),
            half_div: half.iter().map(|&d| StrengthReducedU64::new(d)).collect(),
            stride,
            half,
            full,
            size,
            pieces: first,
            group_of,
        }
        .with_pieces()
    }

    /// Number of slots per side to move.
    #[inline]
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Number of pieces, kings included: the length of a flat square array.
    #[inline]
    pub fn piece_count(&self) -> usize {
        self.pieces
    }

    fn all_groups(&self) -> impl Iterator<Item = &Group> {
        self.homes[0]
            .groups()
            .chain(self.homes[1].groups())
            .chain(self.groups.iter())
    }

    /// Fills the cached piece of each flat position (once, at construction).
    fn with_pieces(mut self) -> Layout {
        let list = self.piece_list();
        for (slot, p) in self.pieces_at.iter_mut().zip(list) {
            *slot = Some(p);
        }
        self
    }

    /// The piece at each position of the flat square array: Red king, Black king, Red's
    /// defenders, Black's defenders, then the free groups in index order.
    pub fn piece_list(&self) -> Vec<Piece> {
        let mut v = vec![Piece::new(Color::Red, PieceKind::King); self.pieces];
        for g in self.all_groups() {
            for p in &mut v[g.first..g.first + g.count] {
                *p = Piece::new(g.color, g.kind);
            }
        }
        v
    }

    /// Slot of the placement given as a flat square array (pieces of a group in any order), or
    /// `None` if a piece stands off its legal points or two home pieces share a point.
    #[inline]
    pub fn encode(&self, squares: &[u8]) -> Option<u64> {
        let cr = self.homes[0].config(squares)? as usize;
        let cb = self.homes[1].config(squares)? as usize;
        let pclass = self.pair_class[cr * self.homes[1].configs.len() + cb];
        if pclass & SYM_BIT == 0 {
            let flip = pclass & MIRRORED_BIT != 0;
            let mut slot = (pclass & CLASS_MASK) as u64 * self.full;
            for (i, g) in self.groups.iter().enumerate() {
                slot += group_rank(g, squares, flip)? * self.stride[i];
            }
            return Some(slot);
        }
        let mut ranks = [0u64; MAX_PIECES];
        for (i, g) in self.groups.iter().enumerate() {
            ranks[i] = group_rank(g, squares, false)?;
        }
        let ng = self.groups.len();
        // The first group whose placement is not symmetric decides the orientation.
        if let Some(i) = (0..ng).find(|&i| self.groups[i].class[ranks[i] as usize] & SYM_BIT == 0)
            && self.groups[i].class[ranks[i] as usize] & MIRRORED_BIT != 0
        {
            for (j, r) in ranks[..ng].iter_mut().enumerate() {
                *r = self.groups[j].mirror_rank[*r as usize] as u64;
            }
        }
        let mut slot =
            self.pair_asym.len() as u64 * self.full + (pclass & CLASS_MASK) as u64 * self.half[0];
        for i in 0..ng {
            let g = &self.groups[i];
            let c = g.class[ranks[i] as usize];
            if c & SYM_BIT != 0 {
                slot += g.asym.len() as u64 * self.stride[i]
                    + (c & CLASS_MASK) as u64 * self.half[i + 1];
            } else {
                slot += (c & CLASS_MASK) as u64 * self.stride[i];
                slot += (i + 1..ng).map(|j| ranks[j] * self.stride[j]).sum::<u64>();
                break;
            }
        }
        Some(slot)
    }

    /// The placement in slot `slot` as a flat square array written to `out` (length at least
    /// [`TableIndex::piece_count`]); pieces of a group come in increasing square order.
    pub fn decode(&self, slot: u64, out: &mut [u8]) {
        debug_assert!(slot < self.size);
        let ng = self.groups.len();
        let mut ranks = [0u64; MAX_PIECES];
        let asym_total = self.pair_asym.len() as u64 * self.full;
        let (cr, cb);
        if slot < asym_total {
            let (pair, rest) = StrengthReducedU64::div_rem(slot, self.full_div);
            (cr, cb) = self.pair_asym[pair as usize];
            self.full_digits(rest, 0, &mut ranks);
        } else {
            let (pair, mut h) = StrengthReducedU64::div_rem(slot - asym_total, self.half_div[0]);
            (cr, cb) = self.pair_sym[pair as usize];
            for i in 0..ng {
                let g = &self.groups[i];
                let asym_block = g.asym.len() as u64 * self.stride[i];
                if h >= asym_block {
                    let (q, r) = StrengthReducedU64::div_rem(h - asym_block, self.half_div[i + 1]);
                    ranks[i] = g.sym[q as usize] as u64;
                    h = r;
                } else {
                    let (q, r) = StrengthReducedU64::div_rem(h, self.stride_div[i]);
                    ranks[i] = g.asym[q as usize] as u64;
                    self.full_digits(r, i + 1, &mut ranks);
                    break;
                }
            }
        }
        for (home, c) in self.homes.iter().zip([cr, cb]) {
            home.write_config(c as usize, out);
        }
        for (i, g) in self.groups.iter().enumerate() {
            g.write_squares(ranks[i], out);
        }
    }

    /// The slot after the piece at flat position `pos` of `squares`, the decoded placement of
    /// `slot`, moves to `to`; `None` when `to` is off that piece's points, as for
    /// [`TableIndex::encode`]. Under an asymmetric home pair (most slots), moves of chariots,
    /// horses, cannons and pawns only change their group's digit, and moves of home pieces only
    /// the pair's, unless the new pair is stored mirrored; everything else is re-encoded.
    pub fn slot_after_shift(&self, slot: u64, squares: &[u8], pos: usize, to: u8) -> Option<u64> {
        let g = self.group_at[pos];
        if g != NONE && slot < self.pair_asym.len() as u64 * self.full {
            let grp = &self.groups[g as usize];
            let (old, new) = if grp.count == 1 {
                let new = grp.local[to as usize];
                if new == NONE {
                    return None;
                }
                (grp.local[squares[pos] as usize] as u64, new as u64)
            } else {
                let mut sq = [0u8; MAX_PIECES];
                sq[..self.pieces].copy_from_slice(&squares[..self.pieces]);
                let old = group_rank(grp, &sq, false)?;
                sq[pos] = to;
                (old, group_rank(grp, &sq, false)?)
            };
            let stride = self.stride[g as usize];
            return Some(slot - old * stride + new * stride);
        }
        let mut sq = [0u8; MAX_PIECES];
        match squares.first_chunk::<MAX_PIECES>() {
            Some(all) => sq = *all,
            None => sq[..self.pieces].copy_from_slice(&squares[..self.pieces]),
        }
        sq[pos] = to;
        if g == NONE
            && slot < self.pair_asym.len() as u64 * self.full
            && let Some(piece) = self.pieces_at[pos]
        {
            // A home piece: the free groups keep their digits when the new pair of home
            // configurations is canonical without mirroring.
            let (pair, rest) = StrengthReducedU64::div_rem(slot, self.full_div);
            let (mut cr, mut cb) = self.pair_asym[pair as usize];
            let c = self.homes[piece.color().index()].config(&sq)?;
            match piece.color() {
                Color::Red => cr = c,
                Color::Black => cb = c,
            }
            let pclass = self.pair_class[cr as usize * self.homes[1].configs.len() + cb as usize];
            if pclass & (SYM_BIT | MIRRORED_BIT) == 0 {
                return Some(pclass as u64 * self.full + rest);
            }
        }
        self.encode(&sq[..self.pieces])
    }

    /// Fills, per flat position of `squares` (the placement of local slot `slot`), the slot
    /// with that piece's digit zeroed when the piece alone owns a digit (a lone piece of a free
    /// group under an asymmetric home pair), else `u64::MAX`.
    #[inline]
    pub(super) fn shift_bases(
        &self,
        slot: u64,
        squares: &[u8; MAX_PIECES],
        base: &mut [u64; MAX_PIECES],
    ) {
        let asym = slot < self.asym_total;
        let lone = self.lone_group_at.iter().zip(squares);
        for (base, (&g, &square)) in base[..self.pieces].iter_mut().zip(lone) {
            *base = if asym && g != NONE {
                let digit = self.groups[g as usize].local[square as usize] as u64;
                slot - digit * self.stride[g as usize]
            } else {
                u64::MAX
            };
        }
    }

    /// The local slot after the piece at `pos`, whose digit-less slot is `base` (from
    /// [`Layout::shift_bases`]), moves to `to`; `None` when `to` is off its points here.
    #[inline(always)]
    pub(super) fn shift_from_base(&self, pos: usize, base: u64, to: u8) -> Option<u64> {
        let g = self.group_at[pos] as usize;
        let digit = self.groups[g].local[to as usize];
        (digit != NONE).then(|| base + digit as u64 * self.stride[g])
    }

    /// Splits `rest` into the ranks of groups `from..` (every group in full).
    fn full_digits(&self, mut rest: u64, from: usize, ranks: &mut [u64; MAX_PIECES]) {
        for i in (from..self.groups.len()).rev() {
            let (q, r) = StrengthReducedU64::div_rem(rest, self.size_div[i]);
            ranks[i] = r;
            rest = q;
        }
    }

    /// Whether the placement can be set up at all: no two pieces on one point and no two
    /// uncrossed pawns of one side on one file.
    pub fn placement_is_possible(&self, squares: &[u8]) -> bool {
        let mut seen = [0u64; 2];
        for &s in &squares[..self.pieces] {
            let (word, bit) = (s as usize >> 6, 1u64 << (s & 63));
            if seen[word] & bit != 0 {
                return false;
            }
            seen[word] |= bit;
        }
        self.pawn_files_possible(squares)
    }

    /// Whether no two uncrossed pawns of one side stand on one file (the part of
    /// [`TableIndex::placement_is_possible`] that is not about shared points).
    #[inline]
    pub fn pawn_files_possible(&self, squares: &[u8]) -> bool {
        if !self.has_pawn_pairs {
            return true;
        }
        for g in self
            .groups
            .iter()
            .filter(|g| g.kind == PieceKind::Pawn && g.count > 1)
        {
            let mut files = 0u16;
            for &s in &squares[g.first..g.first + g.count] {
                let sq = Square::from_index(s as usize).unwrap();
                let uncrossed = match g.color {
                    Color::Red => sq.rank() <= 4,
                    Color::Black => sq.rank() >= 5,
                };
                if uncrossed {
                    if files & (1 << sq.file()) != 0 {
                        return false;
                    }
                    files |= 1 << sq.file();
                }
            }
        }
        true
    }

    /// The board of a flat square array, or `None` if the placement cannot be set up.
    pub fn board_of(&self, squares: &[u8], side: Color) -> Option<Board> {
        if !self.placement_is_possible(squares) {
            return None;
        }
        let mut b = Board::empty(side);
        for (p, &s) in self.pieces_at.iter().flatten().zip(squares) {
            b.put(
                Square::from_index(s as usize).expect("a square of the board"),
                *p,
            );
        }
        Some(b)
    }

    /// The flat position the next piece `piece` takes (pieces of one group fill its positions in
    /// turn; `fill` counts them), or `None` when this table has no more such pieces.
    fn next_flat_position(&self, piece: Piece, fill: &mut [u8; MAX_PIECES]) -> Option<usize> {
        let c = piece.color().index();
        if piece.kind() == PieceKind::King {
            let k = &mut fill[c];
            *k += 1;
            return (*k == 1).then_some(c);
        }
        let home = &self.homes[c];
        let g = match piece.kind() {
            PieceKind::Advisor => home.advisors.as_ref(),
            PieceKind::Elephant => home.elephants.as_ref(),
            kind => match self.group_of[c][kind.index()] {
                NONE => None,
                g => Some(&self.groups[g as usize]),
            },
        }?;
        let k = &mut fill[g.first];
        if *k as usize >= g.count {
            return None;
        }
        *k += 1;
        Some(g.first + *k as usize - 1)
    }

    /// The flat position of each of `pieces`, in the order given, as pieces of this table:
    /// identical pieces take their group's positions in turn, and with `rotated` every colour is
    /// swapped first (the canonical table of a position whose stronger side is Black). `None`
    /// unless the pieces are exactly this table's material.
    pub fn flat_positions(
        &self,
        pieces: impl IntoIterator<Item = Piece>,
        rotated: bool,
    ) -> Option<[u8; MAX_PIECES]> {
        let mut fill = [0u8; MAX_PIECES];
        let mut out = [0u8; MAX_PIECES];
        let mut n = 0;
        for p in pieces {
            let p = if rotated { p.flipped() } else { p };
            *out.get_mut(n)? = self.next_flat_position(p, &mut fill)? as u8;
            n += 1;
        }
        (n == self.pieces).then_some(out)
    }

    /// The flat square array of `board` in this table, whose material must be this table's
    /// (with colours swapped and squares turned by 180 degrees when `rotated`). `None` if the
    /// material differs.
    pub fn squares_of(&self, board: &Board, rotated: bool) -> Option<[u8; MAX_PIECES]> {
        let mut fill = [0u8; MAX_PIECES];
        let mut out = [0u8; MAX_PIECES];
        let mut n = 0;
        for (s, p) in board.pieces() {
            let (s, p) = if rotated {
                (s.rotate(), p.flipped())
            } else {
                (s, p)
            };
            out[self.next_flat_position(p, &mut fill)?] = s.index() as u8;
            n += 1;
        }
        (n == self.pieces).then_some(out)
    }
}
