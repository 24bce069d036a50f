//! The values of the moves that leave a job: captures, into the tables below, and quiet moves
//! into slots outside the job's range (a pawn's step forward into another slice of the same
//! table, solved by an earlier job). Both are read from the dependencies, once.
//!
//! Where the captures of one table lead is worked out once per table: for each piece that can
//! be captured, the dependency table the capture enters and where each remaining piece goes in
//! that table's flat square array. The solver's first pass then values a capture with one
//! encoding, instead of locating the position from its board (material count, orientation,
//! table lookup, square gathering) millions of times. The verifier keeps the general path, so
//! the two are checked against each other on every table.

use crate::error::SolveError;
use crate::position::SlotPosition;
use xiangqi::{Color, Move, PieceKind};
use xqtb_core::{
    MAX_PIECES, Material, Orientation, Probe, ProbeError, RuleSet, Table, TableId, TableIndex,
    Value,
};

/// How the solver values the moves that leave its job: captures through their leads when the
/// dependency tables are in memory, else (and quiet moves into other slices always) by probing
/// `deps`.
pub(crate) struct ExitValues<'a> {
    leads: Option<Captures<'a>>,
    deps: &'a dyn Probe,
    rules: RuleSet,
    table: xqtb_core::Signature,
}

impl<'a> ExitValues<'a> {
    /// The values of the moves leaving a job of `index`'s table under `rules`, from `deps`.
    pub fn new(index: &TableIndex, rules: RuleSet, deps: &'a dyn Probe) -> ExitValues<'a> {
        ExitValues {
            leads: Captures::new(index, rules, deps),
            deps,
            rules,
            table: index.signature(),
        }
    }

    /// The value of the position the move `m` of the loaded position leads to, for the side
    /// to move there, as its own table (or slice) stores it; `Illegal` when that position is
    /// illegal. `m` must leave the job ([`SlotPosition::leaves`]).
    #[inline]
    pub fn after(&self, pos: &mut SlotPosition, m: Move) -> Result<Value, SolveError> {
        let capture = !pos.board.is_empty(m.to());
        match &self.leads {
            Some(c) if capture => c
                .value_after(
                    pos.squares(),
                    pos.flat_at(m.from()),
                    pos.flat_at(m.to()),
                    m.to().index() as u8,
                    pos.board.side_to_move(),
                )
                .ok_or_else(|| {
                    SolveError::Probe(
                        self.table,
                        ProbeError::Illegal(format!(
                            "the capture {m} in {} has no slot in its table",
                            pos.board.fen()
                        )),
                    )
                }),
            // Another slice of this table: its slot is known, but a `Probe` finds parts only by
            // board (exits are few next to the moves that stay).
            _ => {
                let captured = pos.board.make(m);
                let v = self.deps.probe(self.rules, &pos.board);
                pos.board.unmake(m, captured);
                match v {
                    Ok(v) => Ok(v),
                    Err(ProbeError::Illegal(_)) => Ok(Value::Illegal),
                    Err(e) => Err(SolveError::Probe(self.table, e)),
                }
            }
        }
    }
}

/// What capturing one piece leads into.
enum Lead<'a> {
    /// Neither side keeps an attacker.
    DeadDraw,
    /// A solved table; `rotated` when the material is canonical with colours swapped (then
    /// every square turns 180 degrees); `to_pos[i]` is the target flat position of this table's
    /// flat position `i` (the captured piece's entry is unused).
    Table {
        table: &'a Table,
        rotated: bool,
        to_pos: [u8; MAX_PIECES],
    },
}

/// The leads of every capturable piece of one table.
pub(crate) struct Captures<'a> {
    /// Per flat position of the captured piece; `None` for kings.
    by_victim: [Option<Lead<'a>>; MAX_PIECES],
    pieces: usize,
}

impl<'a> Captures<'a> {
    /// The leads of `index`'s captures into the tables of `rules` in `deps`, or `None` when
    /// `deps` does not hold them in memory (the caller probes captures through [`Probe::probe`]
    /// instead).
    pub fn new(index: &TableIndex, rules: RuleSet, deps: &'a dyn Probe) -> Option<Captures<'a>> {
        let pieces = index.piece_list();
        let material = *index.signature().material();
        let mut by_victim = [const { None }; MAX_PIECES];
        for (victim, p) in pieces.iter().enumerate() {
            if p.kind() == PieceKind::King {
                continue;
            }
            let after: Material = material
                .without(p.color(), p.kind())
                .expect("the table's own piece");
            let o = Orientation::of_material(&after);
            if o.signature.is_dead_draw() {
                by_victim[victim] = Some(Lead::DeadDraw);
                continue;
            }
            let table = deps.table(&TableId::new(rules, o.signature))?;
            let rotated = o.rotated;
            let survivors = || (0..pieces.len()).filter(|&i| i != victim);
            let at = table
                .index()
                .flat_positions(survivors().map(|i| pieces[i]), rotated)?;
            let mut to_pos = [0u8; MAX_PIECES];
            for (k, i) in survivors().enumerate() {
                to_pos[i] = at[k];
            }
            by_victim[victim] = Some(Lead::Table {
                table,
                rotated,
                to_pos,
            });
        }
        Some(Captures {
            by_victim,
            pieces: pieces.len(),
        })
    }

    /// The value, for the side that moves after it, of the capture in which the piece at flat
    /// position `mover` takes the piece at `victim` on square `to`; `side` is the capturing
    /// side. `None` when the capture leads off the target's slots (a bug the caller reports).
    #[inline]
    pub fn value_after(
        &self,
        squares: &[u8],
        mover: usize,
        victim: usize,
        to: u8,
        side: Color,
    ) -> Option<Value> {
        match self.by_victim[victim].as_ref()? {
            Lead::DeadDraw => Some(Value::Draw),
            Lead::Table {
                table,
                rotated,
                to_pos,
            } => {
                let mut sq = [0u8; MAX_PIECES];
                for i in (0..self.pieces).filter(|&i| i != victim) {
                    let s = if i == mover { to } else { squares[i] };
                    sq[to_pos[i] as usize] = if *rotated { 89 - s } else { s };
                }
                let slot = table.index().encode(&sq[..self.pieces - 1])?;
                let to_move = if *rotated { side } else { side.opponent() };
                Some(table.value(to_move, slot))
            }
        }
    }
}
