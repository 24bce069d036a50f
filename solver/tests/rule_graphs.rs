//! An independent brute-force solver of the repetition-rule game of `solver::rules::graph`,
//! checked on hand-made graphs, and compared node by node with the engine
//! (`solver::rules::solve_graph`) on random graphs.
//!
//! The brute force shares no code with the engine. It is a direct transcription of the
//! definition into a Muller game, solved with McNaughton/Zielonka's recursive algorithm:
//!
//! * Arena vertices are `(node, perm)` where `perm[p]` is the current slot of physical piece
//!   `p` (physical pieces are named by their slot at the start of the play, so a play from
//!   `node` starts at `(node, identity)`), one intermediate vertex per `(node, perm, edge)`
//!   carrying the move's colour, and one sink per [`Outcome`] (a self-loop coloured by it). A
//!   node without edges moves into the sink of its opponent's win.
//! * The colour of a move is `(mover, is check, set of PHYSICAL pieces chased)`, the set being
//!   read from the chase bits (numbered as after the edge) through the permutation after the
//!   edge. A check may chase too; an idle move has `check = false` and an empty set.
//! * The outcome of an infinite play depends only on the set `F` of colours seen infinitely
//!   often: side X commits perpetual check iff every X colour in `F` is a check, otherwise
//!   perpetual chase iff the chased sets of all X colours in `F` have a common piece (checks
//!   that chase it included). This is exactly "from some point on every move of X ...".
//! * Two games are solved: "Red obtains RedWins" and "Black obtains BlackWins"; nodes in
//!   neither winning region are draws.

#![allow(clippy::needless_range_loop)]

use std::collections::HashMap;

use solver::rules::{Edge, Graph, Label, NodeId, Outcome, SLOTS, Target};
use xiangqi::Color;

// ---------------------------------------------------------------------------------------------
// Brute force
// ---------------------------------------------------------------------------------------------

/// Physical piece `p` -> the slot it currently occupies.
type Perm = [u8; SLOTS];

const IDENTITY: Perm = {
    let mut p = [0u8; SLOTS];
    let mut i = 0;
    while i < SLOTS {
        p[i] = i as u8;
        i += 1;
    }
    p
};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Colour {
    /// A move by `mover`; `chased` is a set of physical pieces.
    Move {
        mover: Color,
        check: bool,
        chased: u16,
    },
    /// The self-loop of an outcome sink.
    End(Outcome),
}

struct Arena {
    /// Who chooses the successor (irrelevant for vertices with one successor).
    owner: Vec<Color>,
    succ: Vec<Vec<usize>>,
    /// Colour id, `None` for the uncoloured `(node, perm)` vertices.
    colour: Vec<Option<usize>>,
    colours: Vec<Colour>,
}

impl Arena {
    fn add_vertex(&mut self, owner: Color, colour: Option<usize>) -> usize {
        self.owner.push(owner);
        self.succ.push(Vec::new());
        self.colour.push(colour);
        self.owner.len() - 1
    }

    fn colour_id(&mut self, c: Colour) -> usize {
        if let Some(i) = self.colours.iter().position(|&x| x == c) {
            return i;
        }
        self.colours.push(c);
        assert!(self.colours.len() <= 64, "too many colours for a u64 set");
        self.colours.len() - 1
    }
}

fn sink_index(o: Outcome) -> usize {
    match o {
        Outcome::RedWins => 0,
        Outcome::BlackWins => 1,
        Outcome::Draw => 2,
    }
}

/// Builds the product arena; returns it, the vertex of `(n, identity)` for every node `n`, and
/// the vertex of every reachable `(node, perm)`.
fn build_arena(g: &Graph) -> (Arena, Vec<usize>, HashMap<(NodeId, Perm), usize>) {
    let mut ar = Arena {
        owner: Vec::new(),
        succ: Vec::new(),
        colour: Vec::new(),
        colours: Vec::new(),
    };
    for o in [Outcome::RedWins, Outcome::BlackWins, Outcome::Draw] {
        let c = ar.colour_id(Colour::End(o));
        let v = ar.add_vertex(Color::Red, Some(c));
        ar.succ[v].push(v);
        assert_eq!(v, sink_index(o));
    }
    let mut index: HashMap<(NodeId, Perm), usize> = HashMap::new();
    let mut queue: Vec<(NodeId, Perm)> = Vec::new();
    let mut get = |ar: &mut Arena, queue: &mut Vec<(NodeId, Perm)>, n: NodeId, p: Perm| {
        *index.entry((n, p)).or_insert_with(|| {
            queue.push((n, p));
            ar.add_vertex(g.side[n as usize], None)
        })
    };
    let starts: Vec<usize> = (0..g.len() as NodeId)
        .map(|n| get(&mut ar, &mut queue, n, IDENTITY))
        .collect();
    while let Some((n, perm)) = queue.pop() {
        let v = get(&mut ar, &mut queue, n, perm);
        let side = g.side[n as usize];
        let edges = &g.edges[n as usize];
        if edges.is_empty() {
            // No move: the side to move loses.
            ar.succ[v].push(sink_index(Outcome::win_for(side.opponent())));
            continue;
        }
        for e in edges {
            let mut after = [0u8; SLOTS];
            for p in 0..SLOTS {
                after[p] = e.track(perm[p]);
            }
            let mut seen = [false; SLOTS];
            for &s in &after {
                assert!(
                    (s as usize) < SLOTS && !seen[s as usize],
                    "slot map is not a permutation: {e:?}"
                );
                seen[s as usize] = true;
            }
            let mut chased = 0u16;
            for p in 0..SLOTS {
                if e.label.chase >> after[p] & 1 == 1 {
                    chased |= 1 << p;
                }
            }
            let colour = Colour::Move {
                mover: side,
                check: e.label.check,
                chased,
            };
            let cid = ar.colour_id(colour);
            let w = ar.add_vertex(side, Some(cid));
            ar.succ[v].push(w);
            let t = match e.to {
                Target::Outcome(o) => sink_index(o),
                Target::Node(m) => get(&mut ar, &mut queue, m, after),
            };
            ar.succ[w].push(t);
        }
    }
    (ar, starts, index)
}

/// Offence of `x` when exactly the colours in `f` occur infinitely often: 2 perpetual check,
/// 1 perpetual chase, 0 none. (If `x` has no colour in `f` both are vacuously true: 2.)
fn offence(colours: &[Colour], f: u64, x: Color) -> u8 {
    let mut all_check = true;
    let mut common: u16 = !0;
    for (i, c) in colours.iter().enumerate() {
        if f >> i & 1 == 0 {
            continue;
        }
        if let Colour::Move {
            mover,
            check,
            chased,
        } = *c
            && mover == x
        {
            all_check &= check;
            common &= chased;
        }
    }
    if all_check {
        2
    } else if common != 0 {
        1
    } else {
        0
    }
}

/// The result of a play whose set of colours seen infinitely often is `f`.
fn judge(colours: &[Colour], f: u64) -> Outcome {
    // A play that reaches a sink sees only the sink's colour for ever; mixed sets never occur
    // as the colours of a play, so their value does not matter.
    for (i, c) in colours.iter().enumerate() {
        if f >> i & 1 == 1
            && let Colour::End(o) = *c
        {
            return o;
        }
    }
    let red = offence(colours, f, Color::Red);
    let black = offence(colours, f, Color::Black);
    match red.cmp(&black) {
        std::cmp::Ordering::Greater => Outcome::BlackWins,
        std::cmp::Ordering::Less => Outcome::RedWins,
        std::cmp::Ordering::Equal => Outcome::Draw,
    }
}

/// `player`'s attractor to `target` inside the subarena `within`.
fn attractor(ar: &Arena, within: &[bool], target: &[bool], player: Color) -> Vec<bool> {
    let mut attr: Vec<bool> = (0..within.len()).map(|v| within[v] && target[v]).collect();
    loop {
        let mut changed = false;
        for v in 0..within.len() {
            if !within[v] || attr[v] {
                continue;
            }
            let mut succs = ar.succ[v].iter().filter(|&&u| within[u]);
            let joins = if ar.owner[v] == player {
                succs.any(|&u| attr[u])
            } else {
                succs.all(|&u| attr[u])
            };
            if joins {
                attr[v] = true;
                changed = true;
            }
        }
        if !changed {
            return attr;
        }
    }
}

/// The maximal proper subsets `d` of `c` with `wins(d) != wins(c)`, by evaluating `wins` on
/// every subset of `c`.
fn flipped_children(c: u64, wins: &dyn Fn(u64) -> bool) -> Vec<u64> {
    let bits: Vec<u64> = (0..64)
        .filter(|&i| c >> i & 1 == 1)
        .map(|i| 1u64 << i)
        .collect();
    let k = bits.len();
    let top = wins(c);
    // real[m]: the subset of `c` whose compressed form is `m`.
    let mut real = vec![0u64; 1 << k];
    let mut flipped = vec![false; 1 << k];
    for m in 0..1usize << k {
        if m > 0 {
            real[m] = real[m & (m - 1)] | bits[m.trailing_zeros() as usize];
        }
        flipped[m] = wins(real[m]) != top;
    }
    (0..1usize << k)
        .filter(|&m| flipped[m] && (0..k).all(|i| m >> i & 1 == 1 || !flipped[m | 1 << i]))
        .map(|m| real[m])
        .collect()
}

/// Zielonka's algorithm on the subarena `within` (every vertex of which keeps a successor in
/// it) for the Muller objective `wins` of player `p0`; returns `p0`'s winning region.
/// `children` caches [`flipped_children`] by colour set.
fn zielonka(
    ar: &Arena,
    within: &[bool],
    p0: Color,
    wins: &dyn Fn(u64) -> bool,
    children: &mut HashMap<u64, Vec<u64>>,
) -> Vec<bool> {
    let n = within.len();
    if !within.iter().any(|&b| b) {
        return vec![false; n];
    }
    for v in 0..n {
        if within[v] {
            assert!(
                ar.succ[v].iter().any(|&u| within[u]),
                "subarena with a dead end"
            );
        }
    }
    let mut c = 0u64;
    for v in 0..n {
        if within[v]
            && let Some(k) = ar.colour[v]
        {
            c |= 1 << k;
        }
    }
    let sigma = if wins(c) { p0 } else { p0.opponent() };
    let ds = children
        .entry(c)
        .or_insert_with(|| flipped_children(c, wins))
        .clone();
    for d in ds {
        let target: Vec<bool> = (0..n)
            .map(|v| within[v] && ar.colour[v].is_some_and(|k| d >> k & 1 == 0))
            .collect();
        let a = attractor(ar, within, &target, sigma);
        let sub: Vec<bool> = (0..n).map(|v| within[v] && !a[v]).collect();
        let w0 = zielonka(ar, &sub, p0, wins, children);
        let w_opp: Vec<bool> = (0..n).map(|v| sub[v] && (w0[v] != (sigma == p0))).collect();
        if w_opp.iter().any(|&b| b) {
            let b = attractor(ar, within, &w_opp, sigma.opponent());
            let rest: Vec<bool> = (0..n).map(|v| within[v] && !b[v]).collect();
            let mut w = zielonka(ar, &rest, p0, wins, children);
            if sigma != p0 {
                // The opponent of sigma is p0, who wins all of `b`.
                for v in 0..n {
                    w[v] |= b[v];
                }
            }
            return w;
        }
    }
    if sigma == p0 {
        within.to_vec()
    } else {
        vec![false; n]
    }
}

/// The value of every node of `g`, straight from the definition.
fn brute_force(g: &Graph) -> Vec<Outcome> {
    let (ar, starts, states) = build_arena(g);
    let all = vec![true; ar.owner.len()];
    let colours = ar.colours.clone();
    let red_wins = |f| judge(&colours, f) == Outcome::RedWins;
    let black_wins = |f| judge(&colours, f) == Outcome::BlackWins;
    let red = zielonka(&ar, &all, Color::Red, &red_wins, &mut HashMap::new());
    let black = zielonka(&ar, &all, Color::Black, &black_wins, &mut HashMap::new());
    // Sanity: the two regions are disjoint, and a node's value does not depend on how its
    // physical pieces are named (every (node, perm) vertex agrees with (node, identity)).
    let value = |v: usize| {
        assert!(!(red[v] && black[v]), "both sides win at vertex {v}");
        if red[v] {
            Outcome::RedWins
        } else if black[v] {
            Outcome::BlackWins
        } else {
            Outcome::Draw
        }
    };
    let start_values: Vec<Outcome> = starts.iter().map(|&s| value(s)).collect();
    for (&(n, _), &v) in &states {
        assert_eq!(
            value(v),
            start_values[n as usize],
            "value depends on piece naming"
        );
    }
    start_values
}

// ---------------------------------------------------------------------------------------------
// Random graphs
// ---------------------------------------------------------------------------------------------

struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n`.
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// True with probability `percent`%.
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// A random graph of 2-7 nodes, 0-3 edges per node (0 is rare), up to 3 slots. With
/// `alternate`, every edge goes to a node of the other side (as in real play).
fn random_graph(rng: &mut SplitMix64, alternate: bool) -> Graph {
    let n = 2 + rng.below(6) as usize;
    let slots = 1 + rng.below(3) as u8;
    let mut g = Graph::default();
    for i in 0..n {
        // Make sure both sides occur.
        let side = match i {
            0 => Color::Red,
            1 => Color::Black,
            _ if rng.chance(50) => Color::Red,
            _ => Color::Black,
        };
        g.add_node(side);
    }
    for from in 0..n {
        let count = if rng.chance(5) { 0 } else { 1 + rng.below(3) };
        let candidates: Vec<NodeId> = (0..n as NodeId)
            .filter(|&m| !alternate || g.side[m as usize] != g.side[from])
            .collect();
        for _ in 0..count {
            let to = if rng.chance(12) {
                Target::Outcome(match rng.below(3) {
                    0 => Outcome::RedWins,
                    1 => Outcome::BlackWins,
                    _ => Outcome::Draw,
                })
            } else {
                Target::Node(candidates[rng.below(candidates.len() as u64) as usize])
            };
            // Checks that chase chase one piece: more kinds of moves would make the brute
            // force's sets of colours, and its time, grow much faster than the engine's cases.
            let label = match rng.below(12) {
                0..=2 => Label::IDLE,
                3..=4 => Label::CHECK,
                5 => Label {
                    check: true,
                    chase: 1 << rng.below(slots as u64),
                },
                _ => Label::chase(1 + rng.below((1 << slots) - 1) as u16),
            };
            let mut edge = Edge::new(to, label);
            if slots >= 2 && rng.chance(15) {
                let a = rng.below(slots as u64) as usize;
                let b = (a + 1 + rng.below(slots as u64 - 1) as usize) % slots as usize;
                let mut map = IDENTITY;
                map.swap(a, b);
                edge.slots = Some(map);
            }
            g.add_edge(from as NodeId, edge);
        }
    }
    g
}

// ---------------------------------------------------------------------------------------------
// Hand-made graphs
// ---------------------------------------------------------------------------------------------

use Color::{Black as B, Red as R};
use Outcome::{BlackWins, Draw, RedWins};

fn node(m: NodeId) -> Target {
    Target::Node(m)
}

/// Builds a graph from node sides and `(from, to, label)` edges.
fn graph(sides: &[Color], edges: &[(NodeId, Target, Label)]) -> Graph {
    let mut g = Graph::default();
    for &s in sides {
        g.add_node(s);
    }
    for &(from, to, label) in edges {
        g.add_edge(from, Edge::new(to, label));
    }
    g
}

const fn chase(slot: u8) -> Label {
    Label::chase(1 << slot)
}

/// A check that also chases the piece in `slot`.
const fn check_chase(slot: u8) -> Label {
    Label {
        check: true,
        chase: 1 << slot,
    }
}

const IDLE: Label = Label::IDLE;
const CHECK: Label = Label::CHECK;

fn swap01(to: Target, label: Label) -> Edge {
    let mut map = IDENTITY;
    map.swap(0, 1);
    Edge {
        to,
        label,
        slots: Some(map),
    }
}

#[test]
fn red_perpetual_check_loses() {
    let g = graph(&[R, B], &[(0, node(1), CHECK), (1, node(0), IDLE)]);
    assert_eq!(brute_force(&g), vec![BlackWins, BlackWins]);
}

#[test]
fn mutual_perpetual_check_draws() {
    let g = graph(&[R, B], &[(0, node(1), CHECK), (1, node(0), CHECK)]);
    assert_eq!(brute_force(&g), vec![Draw, Draw]);
}

#[test]
fn red_checks_always_black_only_sometimes() {
    let g = graph(
        &[R, B, R, B],
        &[
            (0, node(1), CHECK),
            (1, node(2), CHECK),
            (2, node(3), CHECK),
            (3, node(0), IDLE),
        ],
    );
    assert_eq!(brute_force(&g), vec![BlackWins; 4]);
}

#[test]
fn check_and_idle_is_no_perpetual_check() {
    let g = graph(
        &[R, B, R, B],
        &[
            (0, node(1), CHECK),
            (1, node(2), IDLE),
            (2, node(3), IDLE),
            (3, node(0), IDLE),
        ],
    );
    assert_eq!(brute_force(&g), vec![Draw; 4]);
}

#[test]
fn perpetual_chase_of_one_piece_loses() {
    let g = graph(&[R, B], &[(0, node(1), chase(0)), (1, node(0), IDLE)]);
    assert_eq!(brute_force(&g), vec![BlackWins, BlackWins]);
}

#[test]
fn chasing_two_pieces_in_turn_draws() {
    let g = graph(
        &[R, B, R, B],
        &[
            (0, node(1), chase(0)),
            (1, node(2), IDLE),
            (2, node(3), chase(1)),
            (3, node(0), IDLE),
        ],
    );
    assert_eq!(brute_force(&g), vec![Draw; 4]);
}

#[test]
fn chase_of_a_common_piece_among_sets_loses() {
    // Chase sets {0,1} and {1,2}: piece 1 is chased every time.
    let g = graph(
        &[R, B, R, B],
        &[
            (0, node(1), Label::chase(0b011)),
            (1, node(2), IDLE),
            (2, node(3), Label::chase(0b110)),
            (3, node(0), IDLE),
        ],
    );
    assert_eq!(brute_force(&g), vec![BlackWins; 4]);
}

#[test]
fn swapped_identical_pieces_are_different_pieces() {
    // Red always chases slot 0, but its move swaps slots 0 and 1: the pieces in slot 0 after
    // successive moves alternate, so no single piece is chased for ever.
    let mut g = graph(&[R, B], &[(1, node(0), IDLE)]);
    g.add_edge(0, swap01(node(1), chase(0)));
    assert_eq!(brute_force(&g), vec![Draw, Draw]);
    // Without the swap it is one piece.
    let g = graph(&[R, B], &[(0, node(1), chase(0)), (1, node(0), IDLE)]);
    assert_eq!(brute_force(&g), vec![BlackWins, BlackWins]);
    // Chasing the slot the piece moves to follows the same piece: slot 1 after the first move,
    // slot 0 after the second (piece 0 is back in slot 0 after two swaps).
    let mut g = graph(&[R, B, R, B], &[(1, node(2), IDLE), (3, node(0), IDLE)]);
    g.add_edge(0, swap01(node(1), chase(1)));
    g.add_edge(2, swap01(node(3), chase(0)));
    assert_eq!(brute_force(&g), vec![BlackWins; 4]);
}

#[test]
fn check_loses_to_chase() {
    let g = graph(&[R, B], &[(0, node(1), CHECK), (1, node(0), chase(0))]);
    assert_eq!(brute_force(&g), vec![BlackWins, BlackWins]);
    let g = graph(&[R, B], &[(0, node(1), chase(0)), (1, node(0), CHECK)]);
    assert_eq!(brute_force(&g), vec![RedWins, RedWins]);
}

#[test]
fn checks_that_chase_the_piece_make_a_perpetual_chase() {
    // Red's moves all chase piece 0, one of them while checking: perpetual chase (a check
    // that chases is a chase too); under a reading that counted it only as a check it would be
    // "one check one chase", a draw.
    let g = graph(
        &[R, B, R, B],
        &[
            (0, node(1), check_chase(0)),
            (1, node(2), IDLE),
            (2, node(3), chase(0)),
            (3, node(0), IDLE),
        ],
    );
    assert_eq!(brute_force(&g), vec![BlackWins; 4]);
    assert_eq!(solver::rules::solve_graph(&g), vec![BlackWins; 4]);
    // Checks that chase nothing with chases: one check one chase, a draw.
    let g = graph(
        &[R, B, R, B],
        &[
            (0, node(1), CHECK),
            (1, node(2), IDLE),
            (2, node(3), chase(0)),
            (3, node(0), IDLE),
        ],
    );
    assert_eq!(brute_force(&g), vec![Draw; 4]);
    assert_eq!(solver::rules::solve_graph(&g), vec![Draw; 4]);
    // Every move a check, each chasing too: perpetual check, still a loss (and against a
    // perpetual chaser it is the checker who loses).
    let g = graph(
        &[R, B],
        &[(0, node(1), check_chase(0)), (1, node(0), chase(1))],
    );
    assert_eq!(brute_force(&g), vec![BlackWins, BlackWins]);
    assert_eq!(solver::rules::solve_graph(&g), vec![BlackWins, BlackWins]);
}

#[test]
fn mutual_perpetual_chase_draws() {
    let g = graph(&[R, B], &[(0, node(1), chase(0)), (1, node(0), chase(1))]);
    assert_eq!(brute_force(&g), vec![Draw, Draw]);
}

#[test]
fn leaving_to_a_draw_beats_a_losing_cycle() {
    let g = graph(
        &[R, B],
        &[
            (0, node(1), CHECK),
            (0, Target::Outcome(Draw), IDLE),
            (1, node(0), IDLE),
        ],
    );
    assert_eq!(brute_force(&g), vec![Draw, Draw]);
}

#[test]
fn outcome_edges_are_taken_when_good() {
    let g = graph(
        &[R, B],
        &[
            (0, node(1), IDLE),
            (0, Target::Outcome(RedWins), IDLE),
            (1, node(0), IDLE),
        ],
    );
    assert_eq!(brute_force(&g), vec![RedWins, RedWins]);
    // Black can avoid going back to node 0 by taking a draw.
    let g = graph(
        &[R, B],
        &[
            (0, node(1), IDLE),
            (0, Target::Outcome(RedWins), IDLE),
            (1, node(0), IDLE),
            (1, Target::Outcome(Draw), CHECK),
        ],
    );
    assert_eq!(brute_force(&g), vec![RedWins, Draw]);
}

#[test]
fn no_move_loses() {
    let g = graph(&[R, B], &[]);
    assert_eq!(brute_force(&g), vec![BlackWins, RedWins]);
    let g = graph(&[R, B], &[(0, node(1), IDLE)]);
    assert_eq!(brute_force(&g), vec![RedWins, RedWins]);
}

#[test]
fn perpetual_checker_escapes_with_an_idle_move() {
    let g = graph(
        &[R, B, B],
        &[
            (0, node(1), CHECK),
            (1, node(0), IDLE),
            (0, node(2), IDLE),
            (2, node(0), IDLE),
        ],
    );
    assert_eq!(brute_force(&g), vec![Draw; 3]);
}

#[test]
fn alternating_chases_need_memory() {
    // Red must alternate between chasing piece 0 and piece 1 (no positional strategy draws).
    let g = graph(
        &[R, B],
        &[
            (0, node(1), chase(0)),
            (0, node(1), chase(1)),
            (1, node(0), IDLE),
        ],
    );
    assert_eq!(brute_force(&g), vec![Draw, Draw]);
}

#[test]
fn brute_force_is_deterministic_and_quick_on_random_graphs() {
    let mut rng = SplitMix64(1);
    let mut tally = [0usize; 3];
    for _ in 0..500 {
        let g = random_graph(&mut rng, true);
        for o in brute_force(&g) {
            tally[sink_index(o)] += 1;
        }
    }
    // All three values occur.
    assert!(tally.iter().all(|&t| t > 0), "{tally:?}");
}

/// The graph with the sides, the outcomes and hence the values swapped.
fn flip_colours(g: &Graph) -> Graph {
    let flip = |o: Outcome| match o {
        RedWins => BlackWins,
        BlackWins => RedWins,
        Draw => Draw,
    };
    let mut h = g.clone();
    for s in &mut h.side {
        *s = s.opponent();
    }
    for e in h.edges.iter_mut().flatten() {
        if let Target::Outcome(o) = e.to {
            e.to = Target::Outcome(flip(o));
        }
    }
    h
}

#[test]
fn brute_force_is_colour_symmetric() {
    let mut rng = SplitMix64(2);
    for _ in 0..500 {
        let alternate = rng.chance(50);
        let g = random_graph(&mut rng, alternate);
        let flipped: Vec<Outcome> = brute_force(&flip_colours(&g))
            .into_iter()
            .map(|o| match o {
                RedWins => BlackWins,
                BlackWins => RedWins,
                Draw => Draw,
            })
            .collect();
        assert_eq!(brute_force(&g), flipped, "{g:#?}");
    }
}

/// With only idle moves every infinite play is a draw: plain retrograde analysis.
fn retrograde_all_idle(g: &Graph) -> Vec<Outcome> {
    let mut value: Vec<Option<Outcome>> = vec![None; g.len()];
    loop {
        let mut changed = false;
        for n in 0..g.len() {
            if value[n].is_some() {
                continue;
            }
            let side = g.side[n];
            let results: Vec<Option<Outcome>> = g.edges[n]
                .iter()
                .map(|e| match e.to {
                    Target::Outcome(o) => Some(o),
                    Target::Node(m) => value[m as usize],
                })
                .collect();
            let win = Outcome::win_for(side);
            let v = if results.contains(&Some(win)) {
                Some(win)
            } else if results
                .iter()
                .all(|&r| r == Some(Outcome::win_for(side.opponent())))
            {
                Some(Outcome::win_for(side.opponent())) // includes no moves at all
            } else {
                None
            };
            if v.is_some() {
                value[n] = v;
                changed = true;
            }
        }
        if !changed {
            return value.into_iter().map(|v| v.unwrap_or(Draw)).collect();
        }
    }
}

#[test]
fn brute_force_matches_retrograde_when_all_idle() {
    // Alternating graphs only: in a same-side cycle the idle side that never moves commits
    // both offences vacuously, so such plays are not draws.
    let mut rng = SplitMix64(3);
    for _ in 0..500 {
        let mut g = random_graph(&mut rng, true);
        for e in g.edges.iter_mut().flatten() {
            e.label = Label::IDLE;
        }
        assert_eq!(brute_force(&g), retrograde_all_idle(&g), "{g:#?}");
    }
}

// ---------------------------------------------------------------------------------------------
// Comparison with the engine
// ---------------------------------------------------------------------------------------------

/// A graph, one line per node: its side, then each move as target, label and slot map.
fn describe(g: &Graph) -> String {
    let mut out = String::new();
    for n in 0..g.len() {
        out += &format!("node {n} {:?}:", g.side[n]);
        for e in &g.edges[n] {
            let to = match e.to {
                Target::Node(m) => format!("{m}"),
                Target::Outcome(o) => format!("{o:?}"),
            };
            let label = match (e.label.check, e.label.chase) {
                (false, 0) => "idle".to_string(),
                (true, 0) => "check".to_string(),
                (false, c) => format!("chase {c:b}"),
                (true, c) => format!("check+chase {c:b}"),
            };
            let map = e
                .slots
                .map(|m| format!(" slots {:?}", &m[..4]))
                .unwrap_or_default();
            out += &format!(" -> {to} ({label}{map});");
        }
        out += "\n";
    }
    out
}

fn compare(seed: u64, graphs: usize, alternate: bool) {
    let mut rng = SplitMix64(seed);
    for i in 0..graphs {
        let g = random_graph(&mut rng, alternate);
        let expected = brute_force(&g);
        let got = solver::rules::solve_graph(&g);
        if got != expected {
            panic!(
                "graph #{i} (seed {seed}): engine and brute force disagree\n{}\n\
                 engine:      {got:?}\nbrute force: {expected:?}",
                describe(&g)
            );
        }
    }
}

#[test]
fn engine_agrees_with_brute_force_on_random_graphs() {
    compare(0x5eed_0001, 4000, true);
    compare(0x5eed_0003, 4000, true);
}
