//! An abstract game graph for the repetition rules: positions as nodes with a side to move, moves
//! as edges labelled by what they do (a check, a chase of some pieces, both, or neither). The rule
//! engine ([`super::solve_graph`], [`super::traps`]) works on this graph only, so it can be checked
//! against a brute-force solver of the same definition on small random graphs, and the table solver
//! feeds it the part of a table where the rules can decide something.
//!
//! # The game
//! A play starts at a node; the side to move picks an edge. An edge to an [`Outcome`] ends the game
//! with that result; a node without edges is lost for its side to move. A play that never ends is
//! judged by what each side does from some point on for ever: a side whose every move from some
//! point on is a check commits *perpetual check*; otherwise, a side whose every move from some
//! point on chases one and the same piece (followed through the edges' slot maps; a check that also
//! chases it counts) commits *perpetual chase*. The side with the greater offence (check > chase >
//! none) loses; equal offences are a draw. A node is won for a side that can force a win whatever
//! the other does, lost when the other side can, and drawn otherwise.
//!
//! Moves alternate: every edge between nodes leads to a node of the other side to move (as moves
//! do on a board), and slot maps are permutations.

use xiangqi::Color;

/// Index of a node.
pub type NodeId = u32;

/// How a game that leaves the graph ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// Red wins.
    RedWins,
    /// Black wins.
    BlackWins,
    /// A draw.
    Draw,
}

impl Outcome {
    /// The outcome in which `side` wins.
    pub const fn win_for(side: Color) -> Outcome {
        match side {
            Color::Red => Outcome::RedWins,
            Color::Black => Outcome::BlackWins,
        }
    }

    /// The side that wins, if any.
    pub const fn winner(self) -> Option<Color> {
        match self {
            Outcome::RedWins => Some(Color::Red),
            Outcome::BlackWins => Some(Color::Black),
            Outcome::Draw => None,
        }
    }
}

/// Where an edge leads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Target {
    /// Another node of the graph.
    Node(NodeId),
    /// Out of the graph, with a known result (a capture into a solved table, a decided
    /// position).
    Outcome(Outcome),
}

/// What a move does: a check, a chase of some pieces, both, or neither (idle). Pieces are named
/// by *slots* `0..16`; [`Edge::slots`] says where each slot's piece is after the move, so a piece
/// can be followed through a play.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Label {
    /// The move checks.
    pub check: bool,
    /// The pieces the move chases, by slot as after the move (bit `i` = slot `i`).
    pub chase: u16,
}

impl Label {
    /// Neither a check nor a chase.
    pub const IDLE: Label = Label {
        check: false,
        chase: 0,
    };
    /// A check that chases nothing.
    pub const CHECK: Label = Label {
        check: true,
        chase: 0,
    };

    /// A chase of the pieces in slots `bits` (numbered as after the move), not a check.
    pub const fn chase(bits: u16) -> Label {
        Label {
            check: false,
            chase: bits,
        }
    }

    /// Whether the move chases the piece in `slot` (numbered as after the move).
    #[inline]
    pub fn chases(self, slot: u8) -> bool {
        self.chase & (1 << slot) != 0
    }
}

/// Number of piece slots.
pub const SLOTS: usize = 16;

/// One move.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Edge {
    /// Where it leads.
    pub to: Target,
    /// What it does.
    pub label: Label,
    /// The slot after the move of the piece in each slot before it; `None` when every piece
    /// keeps its slot.
    pub slots: Option<[u8; SLOTS]>,
}

impl Edge {
    /// An edge to `to` doing `label`, every piece keeping its slot.
    pub const fn new(to: Target, label: Label) -> Edge {
        Edge {
            to,
            label,
            slots: None,
        }
    }

    /// The slot after this move of the piece in `slot` before it.
    #[inline]
    pub fn track(&self, slot: u8) -> u8 {
        match &self.slots {
            None => slot,
            Some(map) => map[slot as usize],
        }
    }
}

/// Read access to a game graph: the engine works on any representation (the explicit
/// [`Graph`], or the table solver's compact one).
pub trait Game: Sync {
    /// Number of nodes.
    fn nodes(&self) -> usize;
    /// The side to move at node `n`.
    fn side(&self, n: usize) -> Color;
    /// Number of moves of node `n`.
    fn degree(&self, n: usize) -> usize;
    /// Move `i` of node `n`.
    fn edge(&self, n: usize, i: usize) -> Edge;
    /// Whether the side to move at node `n` has, besides its edges, moves out of the graph to
    /// positions that are not lost for it (as if an edge to [`Outcome::Draw`]): such a node
    /// is never trapped as an offender.
    fn escapes(&self, n: usize) -> bool {
        let _ = n;
        false
    }
    /// The moves of node `n`.
    fn edges(&self, n: usize) -> impl Iterator<Item = Edge> + '_ {
        (0..self.degree(n)).map(move |i| self.edge(n, i))
    }
}

/// A game graph.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Graph {
    /// The side to move at each node.
    pub side: Vec<Color>,
    /// The moves of each node.
    pub edges: Vec<Vec<Edge>>,
}

impl Graph {
    /// Adds a node with `side` to move and no edges yet; returns its id.
    pub fn add_node(&mut self, side: Color) -> NodeId {
        self.side.push(side);
        self.edges.push(Vec::new());
        (self.side.len() - 1) as NodeId
    }

    /// Adds a move from `from`.
    pub fn add_edge(&mut self, from: NodeId, edge: Edge) {
        self.edges[from as usize].push(edge);
    }

    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.side.len()
    }

    /// Whether the graph has no node.
    pub fn is_empty(&self) -> bool {
        self.side.is_empty()
    }
}

impl Game for Graph {
    fn nodes(&self) -> usize {
        self.len()
    }
    fn side(&self, n: usize) -> Color {
        self.side[n]
    }
    fn degree(&self, n: usize) -> usize {
        self.edges[n].len()
    }
    fn edge(&self, n: usize, i: usize) -> Edge {
        self.edges[n][i]
    }
}
