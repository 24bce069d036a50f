//! The rule engine: which positions of a [`Graph`] the repetition rules decide.
//!
//! A side wins by rule when the other side, to avoid losing otherwise, must offend for ever while
//! it does not (see the game's definition in [`super::graph`]). Such positions form *traps*:
//! sets of nodes where every move of the offender either loses outright (leads to a position
//! already won for the winner) or is an offence that stays in the trap, and where the winner can
//! stay in the trap without committing an offence as great. [`traps`] finds the greatest traps
//! of one round against the positions decided so far; [`solve_graph`] alternates them with plain
//! retrograde propagation (a node is won with one move into a position lost for its opponent,
//! lost when every move leads to a position won for the opponent) until nothing changes, which
//! computes the least fixed point `W = μX. Attr(X ∪ Traps(X))` of the winning regions.
//!
//! The fixed points, written as in the μ-calculus (Pre is "the winner can force the next step"):
//! - perpetual-check trap for winner `W`: `νY. μZ.` winner nodes with a non-checking move into
//!   `Y` or any move into `Z`; offender nodes whose every move is a win for `W` or a check into
//!   `Z` (a Büchi condition: the winner plays non-checking moves infinitely often);
//! - perpetual-chase trap for winner `W` and a followed victim `v` of `W`: the same over nodes
//!   paired with `v`'s slot, the offender's moves being chases of `v`, and the winner's condition
//!   generalised: infinitely often a non-check, and for every followed piece `u` of the offender,
//!   infinitely often a move that does not chase `u` (so the winner is neither a perpetual
//!   checker nor a perpetual chaser).

use super::graph::{Edge, Graph, Label, NodeId, Outcome, SLOTS, Target};
use std::collections::HashMap;
use xiangqi::Color;

/// What a round of [`traps`] decided: the offender's nodes, which lose by rule.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Traps {
    /// Offender nodes that lose by perpetual check (the offender is the side to move there).
    pub check: Vec<NodeId>,
    /// Offender nodes that lose by perpetual chase (and are in no perpetual-check trap).
    pub chase: Vec<NodeId>,
}

/// The value of a target for `side`: `Some(true)` when it is won for `side`, `Some(false)` when
/// lost, `None` when drawn or not decided.
fn value_for(decided: &[Option<Outcome>], to: Target, side: Color) -> Option<bool> {
    let o = match to {
        Target::Outcome(o) => o,
        Target::Node(n) => decided[n as usize]?,
    };
    o.winner().map(|w| w == side)
}

fn is_undecided(decided: &[Option<Outcome>], to: Target) -> Option<NodeId> {
    match to {
        Target::Node(n) if decided[n as usize].is_none() => Some(n),
        _ => None,
    }
}

/// The slots that can hold a piece chased by `side`'s moves: the chase bits of its moves (which
/// number pieces as after the move) closed under the slot maps in both directions, since a state
/// pairs a node with the slot its followed piece has *there*.
fn chased_slots(g: &Graph, side: Color) -> u16 {
    let mut bits = 0u16;
    for (n, edges) in g.edges.iter().enumerate() {
        if g.side[n] == side {
            for e in edges {
                if let Label::Chase(b) = e.label {
                    bits |= b;
                }
            }
        }
    }
    loop {
        let before = bits;
        for e in g.edges.iter().flatten() {
            for i in 0..SLOTS as u8 {
                let j = e.track(i);
                if bits & (1 << j) != 0 {
                    bits |= 1 << i;
                }
                if bits & (1 << i) != 0 {
                    bits |= 1 << j;
                }
            }
        }
        if bits == before {
            return bits;
        }
    }
}

/// Every undecided node whose offender moves allow it in a trap for `winner`, where `offence`
/// says which offender moves stay in the trap (given the followed victim's slot before the
/// move), with the victim's slot after each move.
struct Product<'a> {
    g: &'a Graph,
    decided: &'a [Option<Outcome>],
    winner: Color,
}

impl Product<'_> {
    /// Whether an offender move is a loss for the offender (a win for the winner) without more.
    fn wins(&self, e: &Edge) -> bool {
        value_for(self.decided, e.to, self.winner) == Some(true)
    }
}

/// A state of the trap computation: a node and the slot of the followed victim (`NONE` when no
/// victim is followed).
type State = (NodeId, u8);

const NONE: u8 = 0xFF;

/// One Büchi-style greatest fixed point over `states`: keeps the states from which the winner
/// can stay within the set for ever while, for each condition, making a move that satisfies it
/// infinitely often. `offender_ok(e, slot)` says whether an offender move stays in the trap and
/// gives the successor's slot; `conditions` are predicates on winner moves (with the followed
/// offender-piece slot for the ones that follow a piece).
fn greatest_trap(
    p: &Product,
    mut states: Vec<State>,
    offender_ok: &dyn Fn(&Edge, u8) -> Option<u8>,
    conditions: &[Condition],
) -> Vec<State> {
    loop {
        let index: HashMap<State, usize> =
            states.iter().enumerate().map(|(i, &s)| (s, i)).collect();
        let in_y = |s: &State| index.contains_key(s);
        let mut keep = vec![true; states.len()];
        for cond in conditions {
            // The attractor, within the current set, to a winner move satisfying `cond` that
            // stays in the set. States are paired with the followed offender piece `u` when the
            // condition follows one; every `u` must reach its good move.
            let us: Vec<u8> = match cond {
                Condition::NotCheck => vec![NONE],
                Condition::NotChasing(slots) => {
                    (0..SLOTS as u8).filter(|u| slots & (1 << u) != 0).collect()
                }
            };
            for &u0 in &us {
                let z = attractor(p, &states, &in_y, offender_ok, cond, u0);
                for (i, ok) in z.iter().enumerate() {
                    keep[i] &= *ok;
                }
            }
        }
        if keep.iter().all(|k| *k) {
            return states;
        }
        states = states
            .into_iter()
            .zip(keep)
            .filter_map(|(s, k)| k.then_some(s))
            .collect();
        if states.is_empty() {
            return states;
        }
    }
}

/// A condition the winner's moves must meet infinitely often.
#[derive(Clone, Copy)]
enum Condition {
    /// A move that is not a check.
    NotCheck,
    /// For each followed offender piece among these slots, a move that does not chase it.
    NotChasing(u16),
}

/// Which of `states` can force a winner move satisfying `cond` (for the offender piece followed
/// from slot `u0` at each state) into the set `in_y`, staying in the set meanwhile. Returns one
/// flag per state.
fn attractor(
    p: &Product,
    states: &[State],
    in_y: &dyn Fn(&State) -> bool,
    offender_ok: &dyn Fn(&Edge, u8) -> Option<u8>,
    cond: &Condition,
    u0: u8,
) -> Vec<bool> {
    let g = p.g;
    // Extended states: (node, victim slot, followed piece slot).
    let mut z: HashMap<(NodeId, u8, u8), bool> = HashMap::new();
    let start: Vec<(NodeId, u8, u8)> = states.iter().map(|&(n, v)| (n, v, u0)).collect();
    // Explore the extended states reachable within the set.
    let mut all = Vec::new();
    let mut seen: HashMap<(NodeId, u8, u8), usize> = HashMap::new();
    let mut stack = start.clone();
    while let Some(x) = stack.pop() {
        if seen.contains_key(&x) {
            continue;
        }
        seen.insert(x, all.len());
        all.push(x);
        let (n, v, u) = x;
        for e in &g.edges[n as usize] {
            let Target::Node(q) = e.to else { continue };
            let v2 = if v == NONE { NONE } else { e.track(v) };
            let u2 = if u == NONE { NONE } else { e.track(u) };
            if in_y(&(q, v2)) {
                stack.push((q, v2, u2));
            }
        }
    }
    let mut win = vec![false; all.len()];
    let mut changed = true;
    while changed {
        changed = false;
        for (i, &(n, v, u)) in all.iter().enumerate() {
            if win[i] {
                continue;
            }
            let edges = &g.edges[n as usize];
            let succ = |e: &Edge, v2: u8| -> Option<usize> {
                let Target::Node(q) = e.to else { return None };
                let u2 = if u == NONE { NONE } else { e.track(u) };
                seen.get(&(q, v2, u2)).copied()
            };
            let ok = if g.side[n as usize] == p.winner {
                edges.iter().any(|e| {
                    let v2 = if v == NONE { NONE } else { e.track(v) };
                    let Target::Node(q) = e.to else { return false };
                    if !in_y(&(q, v2)) {
                        return false;
                    }
                    let good = match cond {
                        Condition::NotCheck => e.label != Label::Check,
                        Condition::NotChasing(_) => {
                            !matches!(e.label, Label::Chase(b) if b & (1 << e.track(u)) != 0)
                        }
                    };
                    good || succ(e, v2).is_some_and(|j| win[j])
                })
            } else {
                !edges.is_empty()
                    && edges.iter().all(|e| {
                        if p.wins(e) {
                            return true;
                        }
                        match offender_ok(e, v) {
                            Some(v2) => succ(e, v2).is_some_and(|j| win[j]),
                            None => false,
                        }
                    })
            };
            if ok {
                win[i] = true;
                changed = true;
            }
        }
    }
    for (i, x) in all.iter().enumerate() {
        z.insert(*x, win[i]);
    }
    start.iter().map(|x| z[x]).collect()
}

/// The offender nodes that lose by rule in this round: the traps of both winners against the
/// positions `decided` so far (`None`: undecided).
pub fn traps(g: &Graph, decided: &[Option<Outcome>]) -> Traps {
    let mut out = Traps::default();
    let mut check_nodes = vec![false; g.len()];
    for winner in Color::ALL {
        let offender = winner.opponent();
        let p = Product { g, decided, winner };
        let undecided = |n: usize| decided[n].is_none();
        // Perpetual check: offender nodes whose every move wins for the winner or is a check
        // into an undecided node.
        let check_ok = |e: &Edge, _v: u8| -> Option<u8> {
            (e.label == Label::Check && is_undecided(decided, e.to).is_some()).then_some(NONE)
        };
        let mut states: Vec<State> = Vec::new();
        for n in 0..g.len() {
            if !undecided(n) {
                continue;
            }
            let candidate = g.side[n] == winner
                || (!g.edges[n].is_empty()
                    && g.edges[n]
                        .iter()
                        .all(|e| p.wins(e) || check_ok(e, NONE).is_some()));
            if candidate {
                states.push((n as NodeId, NONE));
            }
        }
        let t = greatest_trap(&p, states, &check_ok, &[Condition::NotCheck]);
        for &(n, _) in &t {
            if g.side[n as usize] == offender {
                check_nodes[n as usize] = true;
                out.check.push(n);
            }
        }
        // Perpetual chase of a followed victim of the winner.
        let victims = chased_slots(g, offender);
        let chasers = chased_slots(g, winner);
        let chase_ok = |e: &Edge, v: u8| -> Option<u8> {
            match e.label {
                Label::Chase(b) if b & (1 << e.track(v)) != 0 => {
                    is_undecided(decided, e.to).map(|_| e.track(v))
                }
                _ => None,
            }
        };
        let mut states: Vec<State> = Vec::new();
        for v in (0..SLOTS as u8).filter(|v| victims & (1 << v) != 0) {
            for n in 0..g.len() {
                if !undecided(n) {
                    continue;
                }
                let candidate = g.side[n] == winner
                    || (!g.edges[n].is_empty()
                        && g.edges[n]
                            .iter()
                            .all(|e| p.wins(e) || chase_ok(e, v).is_some()));
                if candidate {
                    states.push((n as NodeId, v));
                }
            }
        }
        let t = greatest_trap(
            &p,
            states,
            &chase_ok,
            &[Condition::NotCheck, Condition::NotChasing(chasers)],
        );
        let mut chased: Vec<NodeId> = t
            .iter()
            .filter(|&&(n, _)| g.side[n as usize] == offender && !check_nodes[n as usize])
            .map(|&(n, _)| n)
            .collect();
        chased.sort_unstable();
        chased.dedup();
        out.chase.extend(chased);
    }
    out.check.sort_unstable();
    out.chase.sort_unstable();
    out
}

/// Plain retrograde propagation on `g` from the positions `decided`: a node is won for its side
/// to move when a move leads to a position lost for the opponent (or an outcome it wins), lost
/// when every move leads to a position won for the opponent (a node without moves is lost).
fn propagate(g: &Graph, decided: &mut [Option<Outcome>]) {
    let mut changed = true;
    while changed {
        changed = false;
        for n in 0..g.len() {
            if decided[n].is_some() {
                continue;
            }
            let side = g.side[n];
            let edges = &g.edges[n];
            if edges
                .iter()
                .any(|e| value_for(decided, e.to, side) == Some(true))
            {
                decided[n] = Some(Outcome::win_for(side));
                changed = true;
            } else if edges
                .iter()
                .all(|e| value_for(decided, e.to, side) == Some(false))
            {
                decided[n] = Some(Outcome::win_for(side.opponent()));
                changed = true;
            }
        }
    }
}

/// The value of every node of `g` under the repetition rules: rounds of retrograde
/// propagation and [`traps`] until nothing changes; what is left is drawn.
pub fn solve_graph(g: &Graph) -> Vec<Outcome> {
    let mut decided: Vec<Option<Outcome>> = vec![None; g.len()];
    loop {
        propagate(g, &mut decided);
        let t = traps(g, &decided);
        if t.check.is_empty() && t.chase.is_empty() {
            break;
        }
        for &n in t.check.iter().chain(&t.chase) {
            let loser = g.side[n as usize];
            decided[n as usize] = Some(Outcome::win_for(loser.opponent()));
        }
    }
    decided
        .into_iter()
        .map(|d| d.unwrap_or(Outcome::Draw))
        .collect()
}
