//! Rule sets: how a game that never ends is judged. Every table is solved under one rule set,
//! which its header, its store keys and every request name.

use crate::Value;
use std::fmt;
use thiserror::Error;

/// How repetitions are judged. Stored in every table's header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub enum RuleSet {
    /// Any position retrograde analysis does not resolve is a draw: cycles never decide a game.
    /// Store names and headers written before rule sets existed mean this one, so those
    /// tables stay readable as they are.
    CyclesAreDraws,
    /// The Asian (AXF/WXF) rules: a side that can only avoid losing by checking for ever, or by
    /// chasing one piece for ever, loses (see `docs/repetition-rules.md`). The default for new
    /// tables.
    #[default]
    Asian,
}

/// A rule set name that no rule set has.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("unknown rule set '{0}'; available: asian, cycles-are-draws")]
pub struct UnknownRuleSet(pub String);

impl RuleSet {
    /// Every rule set, in id order.
    pub const ALL: [RuleSet; 2] = [RuleSet::CyclesAreDraws, RuleSet::Asian];

    /// Stable name used in headers, on the command line and in every API.
    pub const fn name(self) -> &'static str {
        match self {
            RuleSet::CyclesAreDraws => "cycles-are-draws",
            RuleSet::Asian => "asian",
        }
    }

    /// Stable numeric id used in binary headers.
    pub const fn id(self) -> u8 {
        match self {
            RuleSet::CyclesAreDraws => 1,
            RuleSet::Asian => 2,
        }
    }

    /// Whether a table with `index` is solved under this rule set one pawn slice at a time, its
    /// rule rounds counted in each slice afresh (`docs/repetition-rules.md`, round 0): the Asian
    /// rules on a table of several slices. A move from one of its slices into another (a pawn's
    /// step forward) then reads like a capture wherever the table is read one ply deep
    /// ([`MoveReading`]). So a table is the same however many jobs make it. Tables with pawns
    /// numbered before slices (index scheme 1) have one slice.
    pub fn solves_slices_apart(self, index: &crate::TableIndex) -> bool {
        self == RuleSet::Asian && index.slices().len() > 1
    }

    /// The rule set with this id.
    pub const fn from_id(id: u8) -> Option<RuleSet> {
        match id {
            1 => Some(RuleSet::CyclesAreDraws),
            2 => Some(RuleSet::Asian),
            _ => None,
        }
    }
}

/// How a position of a table reads the values of its moves one ply deep; the one definition the
/// solver, the verifier, the sample check and the prober share.
///
/// A move that stays in the part of the table solved as one (the whole table, or under
/// [`RuleSet::solves_slices_apart`] the position's pawn slice) reads the value stored for the
/// position it leads to. A move that leaves it, a capture into another table or a pawn's step
/// into another slice, reads that value as an *exit*: a rule value there is a settled fact of an
/// earlier job and counts as round 0 of the rule phase here ([`Value::as_exit`]).
#[derive(Clone, Copy, Debug)]
pub struct MoveReading {
    /// The slots of the position's slice, when the table is solved slice by slice.
    slice: Option<crate::SlotRange>,
}

impl MoveReading {
    /// How the position in slot `slot` of a table of `index`, solved under `rules`, reads its
    /// moves.
    pub fn new(rules: RuleSet, index: &crate::TableIndex, slot: u64) -> MoveReading {
        MoveReading {
            slice: rules
                .solves_slices_apart(index)
                .then(|| index.slice_span(index.slice_of(slot))),
        }
    }

    /// The value of a non-capturing move that leads to slot `to` of the same table, whose
    /// stored value is `stored` (for the side to move there).
    #[inline]
    pub fn quiet(&self, to: u64, stored: Value) -> Value {
        match self.slice {
            Some(s) if !(s.start <= to && to < s.end) => stored.as_exit(),
            _ => stored,
        }
    }

    /// The value of a move that leaves the table (a capture) or the job solving it (a pawn's
    /// step into a slice another job solved), whose position's stored value is `stored`.
    #[inline]
    pub fn leaving(stored: Value) -> Value {
        stored.as_exit()
    }
}

impl fmt::Display for RuleSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for RuleSet {
    type Err = UnknownRuleSet;

    fn from_str(s: &str) -> Result<RuleSet, UnknownRuleSet> {
        RuleSet::ALL
            .into_iter()
            .find(|r| r.name() == s)
            .ok_or_else(|| UnknownRuleSet(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_ids_round_trip() {
        for r in RuleSet::ALL {
            assert_eq!(r.name().parse::<RuleSet>(), Ok(r));
            assert_eq!(RuleSet::from_id(r.id()), Some(r));
        }
        let err = "asia".parse::<RuleSet>().unwrap_err();
        assert!(err.to_string().contains("'asia'"), "{err}");
    }
}
