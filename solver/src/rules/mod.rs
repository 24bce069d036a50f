//! The repetition rules as a game on an abstract graph: the graph ([`Graph`]) and the engine
//! that decides which of its positions the rules win ([`traps`], [`solve_graph`]).

mod engine;
mod graph;

pub use engine::{Traps, solve_graph, traps};
pub use graph::{Edge, Game, Graph, Label, NodeId, Outcome, SLOTS, Target};
