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
//!   paired with `v`'s slot, the offender's moves being chases of `v` (checks that chase `v`
//!   included), and the winner's condition generalised: infinitely often a non-check, and for every
//!   followed piece `u` of the offender, infinitely often a move that does not chase `u` (so the
//!   winner is neither a perpetual checker nor a perpetual chaser).

use super::graph::{Edge, Game, Graph, Label, NodeId, Outcome, SLOTS, Target};
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
fn chased_slots<G: Game>(g: &G, side: Color) -> u16 {
    let mut bits = 0u16;
    for n in 0..g.nodes() {
        if g.side(n) == side {
            for e in g.edges(n) {
                bits |= e.label.chase;
            }
        }
    }
    let mut maps: Vec<[u8; SLOTS]> = Vec::new();
    for n in 0..g.nodes() {
        for e in g.edges(n) {
            if let Some(m) = e.slots
                && !maps.contains(&m)
            {
                maps.push(m);
            }
        }
    }
    loop {
        let before = bits;
        for m in &maps {
            let e = Edge {
                to: Target::Outcome(Outcome::Draw),
                label: Label::IDLE,
                slots: Some(*m),
            };
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

/// The part of the graph one trap computation works on: the states are (node, followed victim
/// slot), indexed `node * victims.len() + victim`; `preds` lists for each node the (node,
/// edge) pairs leading to it.
struct Arena<'a, G: Game> {
    g: &'a G,
    decided: &'a [Option<Outcome>],
    winner: Color,
    /// The slots of the followed victims; empty for perpetual check (one state per node).
    victims: Vec<u8>,
    preds: &'a Preds,
}

/// For each node, the (node, edge index) pairs of the moves leading to it, in one array.
struct Preds {
    start: Vec<u32>,
    list: Vec<(NodeId, u32)>,
}

impl Preds {
    fn of<G: Game>(g: &G) -> Preds {
        let n = g.nodes();
        let mut count = vec![0u32; n + 1];
        for p in 0..n {
            for e in g.edges(p) {
                if let Target::Node(q) = e.to {
                    count[q as usize + 1] += 1;
                }
            }
        }
        for i in 0..n {
            count[i + 1] += count[i];
        }
        let mut fill = count.clone();
        let mut list = vec![(0, 0); count[n] as usize];
        for p in 0..n {
            for (i, e) in g.edges(p).enumerate() {
                if let Target::Node(q) = e.to {
                    list[fill[q as usize] as usize] = (p as NodeId, i as u32);
                    fill[q as usize] += 1;
                }
            }
        }
        Preds { start: count, list }
    }

    fn of_node(&self, q: usize) -> &[(NodeId, u32)] {
        &self.list[self.start[q] as usize..self.start[q + 1] as usize]
    }
}

/// What an offender move must be to stay in the trap.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Offence {
    Check,
    Chase,
}

/// A condition the winner's moves must meet infinitely often.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Condition {
    /// A move that is not a check.
    NotCheck,
    /// A move that does not chase the followed offender piece.
    NotChasing,
}

impl<G: Game> Arena<'_, G> {
    fn nv(&self) -> usize {
        self.victims.len().max(1)
    }

    fn wins(&self, e: &Edge) -> bool {
        value_for(self.decided, e.to, self.winner) == Some(true)
    }

    /// The victim index after edge `e` of the victim with index `vi` before it.
    fn follow(&self, e: &Edge, vi: usize) -> Option<usize> {
        if self.victims.is_empty() {
            return Some(vi);
        }
        let after = e.track(self.victims[vi]);
        self.victims.iter().position(|&v| v == after)
    }

    /// The state an edge leads to from victim index `vi`, if it leads to an undecided node.
    fn next(&self, e: &Edge, vi: usize) -> Option<usize> {
        let q = is_undecided(self.decided, e.to)?;
        Some(q as usize * self.nv() + self.follow(e, vi)?)
    }

    /// Whether an offender move stays in the trap for the victim with index `vi`.
    fn offends(&self, e: &Edge, vi: usize, offence: Offence) -> bool {
        match offence {
            Offence::Check => e.label.check,
            Offence::Chase => e.label.chases(e.track(self.victims[vi])),
        }
    }

    /// The greatest trap within `y` (states): repeatedly, only states from which the winner can
    /// force, for every condition (and every followed offender piece among `pieces`), a move
    /// meeting it, staying in the set.
    fn greatest(
        &self,
        mut y: Vec<bool>,
        offence: Offence,
        conditions: &[Condition],
        pieces: &[u8],
    ) -> Vec<bool> {
        loop {
            let mut keep = y.clone();
            for &cond in conditions {
                let us: Vec<Option<u8>> = match cond {
                    Condition::NotCheck => vec![None],
                    Condition::NotChasing => pieces.iter().map(|&u| Some(u)).collect(),
                };
                for u in us {
                    let z = self.condition(&y, offence, cond, u, pieces);
                    for (k, z) in keep.iter_mut().zip(z) {
                        *k &= z;
                    }
                }
            }
            if keep == y {
                return y;
            }
            y = keep;
        }
    }

    /// The states of `y` from which the winner can meet `cond` (for the followed offender piece
    /// `u`) while the play stays in `y`: force a move meeting it into `y`. In a chase trap the
    /// offender may also check (a check that chases the victim); an offender that from some
    /// point on only checks is a perpetual checker, against whom the winner may chase for ever,
    /// so there `cond` = not chasing `u` is met too when the winner can keep the offender to
    /// checks from some point on and make a move that is no check again and again.
    fn condition(
        &self,
        y: &[bool],
        offence: Offence,
        cond: Condition,
        u: Option<u8>,
        pieces: &[u8],
    ) -> Vec<bool> {
        let ext = Extended::new(self, y, u.map(|_| pieces));
        let good = |e: &Edge, ui: usize| match cond {
            Condition::NotCheck => !e.label.check,
            Condition::NotChasing => !e.label.chases(e.track(ext.slot(ui))),
        };
        // States with a move meeting the condition into `y`, and what the winner can force
        // from there on.
        let seeds = ext.winner_moves(|e, ui, next| good(e, ui) && next.is_some());
        let offends = |e: &Edge, vi: usize| self.offends(e, vi, offence);
        let mut won = ext.force(seeds, |e, vi, _, _| offends(e, vi));
        // Only an offender that can check may be held to checks.
        let offender_checks = || {
            let nv = self.nv();
            (0..y.len()).any(|s| {
                let n = s / nv;
                y[s] && self.g.side(n) != self.winner && self.g.edges(n).any(|e| e.label.check)
            })
        };
        if offence == Offence::Chase && cond == Condition::NotChasing && offender_checks() {
            loop {
                let checks = ext.held_to_checks(&won, &offends);
                if checks.iter().zip(&won).all(|(c, w)| !c || *w) {
                    break;
                }
                for (w, c) in won.iter_mut().zip(checks) {
                    *w |= c;
                }
                won = ext.force(won, |e, vi, _, _| offends(e, vi));
            }
        }
        ext.project(&won, u)
    }
}

/// The states of a trap computation extended with the slot of one followed offender piece
/// (when a condition concerns one): a winner's move may chase the piece after it moves.
struct Extended<'x, 'a, G: Game> {
    arena: &'x Arena<'a, G>,
    y: &'x [bool],
    /// The slots the followed piece can be in, or none.
    pieces: Option<&'x [u8]>,
    nu: usize,
}

impl<'x, 'a, G: Game> Extended<'x, 'a, G> {
    fn new(arena: &'x Arena<'a, G>, y: &'x [bool], pieces: Option<&'x [u8]>) -> Self {
        let nu = pieces.map_or(1, |p| p.len());
        Extended {
            arena,
            y,
            pieces,
            nu,
        }
    }

    /// The slot of the followed piece at index `ui`.
    fn slot(&self, ui: usize) -> u8 {
        self.pieces.map_or(0, |p| p[ui])
    }

    /// The index of the followed piece's slot after edge `e`, from index `ui` before it.
    fn follow_u(&self, e: &Edge, ui: usize) -> Option<usize> {
        match self.pieces {
            None => Some(0),
            Some(p) => {
                let after = e.track(p[ui]);
                p.iter().position(|&x| x == after)
            }
        }
    }

    /// The extended state edge `e` leads to from extended state `x`, if it leads to an
    /// undecided node's state in `y`.
    fn next(&self, e: &Edge, x: usize) -> Option<usize> {
        let (s, ui) = (x / self.nu, x % self.nu);
        let vi = s % self.arena.nv();
        let sn = self.arena.next(e, vi)?;
        if !self.y[sn] {
            return None;
        }
        Some(sn * self.nu + self.follow_u(e, ui)?)
    }

    /// The winner's extended states of `y` with a move `ok(e, ui, next)` accepts.
    fn winner_moves(&self, ok: impl Fn(&Edge, usize, Option<usize>) -> bool) -> Vec<bool> {
        let a = self.arena;
        let nv = a.nv();
        let mut out = vec![false; self.y.len() * self.nu];
        for s in (0..self.y.len()).filter(|&s| self.y[s]) {
            let n = s / nv;
            if a.g.side(n) != a.winner {
                continue;
            }
            for ui in 0..self.nu {
                let x = s * self.nu + ui;
                out[x] = a.g.edges(n).any(|e| ok(&e, ui, self.next(&e, x)));
            }
        }
        out
    }

    /// Extends `won` by what the winner can force into it, staying in `y`: a winner state with
    /// a move into a won state; an offender state each of whose moves wins for the winner, or
    /// is one that `ok(e, victim index, next, won)` accepts (`next` being the extended state
    /// it leads to in `y`, if any).
    fn force(
        &self,
        mut won: Vec<bool>,
        ok: impl Fn(&Edge, usize, usize, &[bool]) -> bool,
    ) -> Vec<bool> {
        let a = self.arena;
        let g = a.g;
        let nv = a.nv();
        let nu = self.nu;
        let mut work: Vec<usize> = (0..won.len()).filter(|&x| won[x]).collect();
        while let Some(x) = work.pop() {
            let (s, uq) = (x / nu, x % nu);
            let (q, vq) = (s / nv, s % nv);
            for &(p, ei) in a.preds.of_node(q) {
                let e = &g.edge(p as usize, ei as usize);
                for vp in 0..nv {
                    if a.follow(e, vp) != Some(vq) {
                        continue;
                    }
                    let sp = p as usize * nv + vp;
                    if !self.y[sp] {
                        continue;
                    }
                    for up in 0..nu {
                        if self.follow_u(e, up) != Some(uq) {
                            continue;
                        }
                        let xp = sp * nu + up;
                        if won[xp] {
                            continue;
                        }
                        let node = p as usize;
                        let in_now = g.side(node) == a.winner
                            || (g.degree(node) > 0
                                && !g.escapes(node)
                                && g.edges(node).all(|e| {
                                    a.wins(&e)
                                        || self
                                            .next(&e, xp)
                                            .is_some_and(|xn| won[xn] && ok(&e, vp, xn, &won))
                                }));
                        if in_now {
                            won[xp] = true;
                            work.push(xp);
                        }
                    }
                }
            }
        }
        won
    }

    /// The extended states from which the winner can keep the offender to checks, its other
    /// offences leading only into `won`, and make a move that is no check again and again:
    /// `νZ.` the winner forces, staying in `y`, into `won` or to a winner's move that is no
    /// check into `Z`, every offender move winning for the winner, or a check into the forced
    /// set, or another offence into `won`.
    fn held_to_checks(&self, won: &[bool], offends: &impl Fn(&Edge, usize) -> bool) -> Vec<bool> {
        let mut z: Vec<bool> = (0..won.len()).map(|x| self.y[x / self.nu]).collect();
        loop {
            let mut seeds = self.winner_moves(|e, _, next| {
                !e.label.check && next.is_some_and(|xn| z[xn] || won[xn])
            });
            for (s, w) in seeds.iter_mut().zip(won) {
                *s |= *w;
            }
            let forced = self.force(seeds, |e, vi, xn, now| {
                offends(e, vi) && if e.label.check { now[xn] } else { won[xn] }
            });
            if forced == z {
                return z;
            }
            z = forced;
        }
    }

    /// The base states whose extension with the followed piece `u` (in slot `u` at the state)
    /// is in `won`.
    fn project(&self, won: &[bool], u: Option<u8>) -> Vec<bool> {
        (0..self.y.len())
            .map(|s| {
                self.y[s]
                    && match (u, self.pieces) {
                        (Some(u), Some(p)) => p
                            .iter()
                            .position(|&x| x == u)
                            .is_some_and(|ui| won[s * self.nu + ui]),
                        _ => won[s * self.nu],
                    }
            })
            .collect()
    }
}

/// The offender nodes that lose by rule in this round: the traps of both winners against the
/// positions `decided` so far (`None`: undecided).
pub fn traps<G: Game>(g: &G, decided: &[Option<Outcome>]) -> Traps {
    let preds = Preds::of(g);
    let mut out = Traps::default();
    let len = g.nodes();
    let mut check_nodes = vec![false; len];
    for winner in Color::ALL {
        let offender = winner.opponent();
        // Perpetual check: offender nodes whose every move wins for the winner or is a check
        // into an undecided node; every undecided winner node.
        let a = Arena {
            g,
            decided,
            winner,
            victims: Vec::new(),
            preds: &preds,
        };
        let y: Vec<bool> = (0..len)
            .map(|n| {
                decided[n].is_none()
                    && (g.side(n) == winner
                        || (g.degree(n) > 0
                            && !g.escapes(n)
                            && g.edges(n)
                                .all(|e| a.wins(&e) || (e.label.check && a.next(&e, 0).is_some()))))
            })
            .collect();
        let t = a.greatest(y, Offence::Check, &[Condition::NotCheck], &[]);
        for n in 0..len {
            if t[n] && g.side(n) == offender {
                check_nodes[n] = true;
                out.check.push(n as NodeId);
            }
        }
        // Perpetual chase of a followed victim of the winner.
        let slots =
            |bits: u16| -> Vec<u8> { (0..SLOTS as u8).filter(|v| bits & (1 << v) != 0).collect() };
        let victims = slots(chased_slots(g, offender));
        if victims.is_empty() {
            continue;
        }
        let pieces = slots(chased_slots(g, winner));
        let a = Arena {
            g,
            decided,
            winner,
            victims,
            preds: &preds,
        };
        let nv = a.nv();
        let y: Vec<bool> = (0..len * nv)
            .map(|s| {
                let (n, vi) = (s / nv, s % nv);
                decided[n].is_none()
                    && (g.side(n) == winner
                        || (g.degree(n) > 0
                            && !g.escapes(n)
                            && g.edges(n).all(|e| {
                                a.wins(&e)
                                    || (a.offends(&e, vi, Offence::Chase)
                                        && a.next(&e, vi).is_some())
                            })))
            })
            .collect();
        let t = a.greatest(
            y,
            Offence::Chase,
            &[Condition::NotCheck, Condition::NotChasing],
            &pieces,
        );
        for n in 0..len {
            if g.side(n) == offender && !check_nodes[n] && (0..nv).any(|vi| t[n * nv + vi]) {
                out.chase.push(n as NodeId);
            }
        }
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
