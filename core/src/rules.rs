//! Rule sets: how a game that never ends is judged. Every table is solved under one rule set,
//! which its header, its store keys and every request name.

use std::fmt;
use thiserror::Error;

/// How repetitions are judged. Stored in every table's header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub enum RuleSet {
    /// Any position retrograde analysis does not resolve is a draw: cycles never decide a game.
    #[default]
    CyclesAreDraws,
}

/// A rule set name that no rule set has.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error(
    "unknown rule set '{0}'; available: cycles-are-draws (the Asian rules on perpetual check and chase are not implemented yet)"
)]
pub struct UnknownRuleSet(pub String);

impl RuleSet {
    /// Every rule set, in id order.
    pub const ALL: [RuleSet; 1] = [RuleSet::CyclesAreDraws];

    /// Stable name used in headers, on the command line and in every API.
    pub const fn name(self) -> &'static str {
        match self {
            RuleSet::CyclesAreDraws => "cycles-are-draws",
        }
    }

    /// Stable numeric id used in binary headers.
    pub const fn id(self) -> u8 {
        match self {
            RuleSet::CyclesAreDraws => 1,
        }
    }

    /// The rule set with this id.
    pub const fn from_id(id: u8) -> Option<RuleSet> {
        match id {
            1 => Some(RuleSet::CyclesAreDraws),
            _ => None,
        }
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
