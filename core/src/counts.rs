//! Counts of a table's positions by value: the one statistics type of the project, gathered by
//! the verifier, recorded in every table header and merged from parts of a table.

use crate::value::Value;
use xiangqi::Color;

/// Counts of one side to move's positions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SideCounts {
    /// Legal positions.
    pub legal: u64,
    /// Positions the side to move wins.
    pub wins: u64,
    /// Drawn positions.
    pub draws: u64,
    /// Positions the side to move loses.
    pub losses: u64,
    /// The longest win by mate: plies and the lowest slot that has it.
    pub longest_win: Option<(u16, u64)>,
    /// Wins decided by a repetition rule (counted in `wins` too).
    pub rule_wins: u64,
    /// Losses decided by a repetition rule (counted in `losses` too).
    pub rule_losses: u64,
    /// The rule win with the most plies until the rule applies, and the lowest slot that has it.
    pub longest_rule_win: Option<(u16, u64)>,
}

impl SideCounts {
    /// Counts the value of `slot` (slots may come in any order; illegal slots are skipped).
    #[inline]
    pub fn add(&mut self, slot: u64, value: Value) {
        match value {
            Value::Illegal => return,
            Value::Win(d) => {
                self.wins += 1;
                self.note_win(d, slot);
            }
            Value::Draw => self.draws += 1,
            Value::Loss(_) => self.losses += 1,
            Value::RuleWin(r) => {
                self.wins += 1;
                self.rule_wins += 1;
                longer(&mut self.longest_rule_win, r.plies, slot);
            }
            Value::RuleLoss(_) => {
                self.losses += 1;
                self.rule_losses += 1;
            }
        }
        self.legal += 1;
    }

    fn note_win(&mut self, d: u16, slot: u64) {
        longer(&mut self.longest_win, d, slot);
    }

    /// The counts of two disjoint sets of slots together. The longest win is the longer one, the
    /// lower slot on a tie, so merging in any order gives the same result.
    pub fn merge(mut self, other: SideCounts) -> SideCounts {
        self.legal += other.legal;
        self.wins += other.wins;
        self.draws += other.draws;
        self.losses += other.losses;
        self.rule_wins += other.rule_wins;
        self.rule_losses += other.rule_losses;
        if let Some((d, slot)) = other.longest_win {
            longer(&mut self.longest_win, d, slot);
        }
        if let Some((d, slot)) = other.longest_rule_win {
            longer(&mut self.longest_rule_win, d, slot);
        }
        self
    }
}

/// Keeps the longer of `best` and (`d`, `slot`), the lower slot on a tie.
fn longer(best: &mut Option<(u16, u64)>, d: u16, slot: u64) {
    if best.is_none_or(|(l, s)| d > l || (d == l && slot < s)) {
        *best = Some((d, slot));
    }
}

/// Counts of a table (or of part of its slots) for both sides to move.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TableCounts(pub [SideCounts; 2]);

impl TableCounts {
    /// The counts of `side` to move.
    #[inline]
    pub fn side(&self, side: Color) -> &SideCounts {
        &self.0[side.index()]
    }

    /// Counts the value of `slot` with `side` to move.
    #[inline]
    pub fn add(&mut self, side: Color, slot: u64, value: Value) {
        self.0[side.index()].add(slot, value);
    }

    /// Both parts together (see [`SideCounts::merge`]).
    pub fn merge(self, other: TableCounts) -> TableCounts {
        TableCounts([self.0[0].merge(other.0[0]), self.0[1].merge(other.0[1])])
    }

    /// Legal positions of both sides to move.
    pub fn legal(&self) -> u64 {
        self.0.iter().map(|c| c.legal).sum()
    }
}

impl std::ops::Index<Color> for TableCounts {
    type Output = SideCounts;
    fn index(&self, side: Color) -> &SideCounts {
        &self.0[side.index()]
    }
}

impl std::ops::IndexMut<Color> for TableCounts {
    fn index_mut(&mut self, side: Color) -> &mut SideCounts {
        &mut self.0[side.index()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merging_in_any_order_keeps_the_lowest_slot_of_the_longest_win() {
        let mut a = SideCounts::default();
        a.add(7, Value::Win(5));
        a.add(3, Value::Loss(4));
        let mut b = SideCounts::default();
        b.add(2, Value::Win(5));
        b.add(9, Value::Draw);
        b.add(1, Value::Illegal);
        let ab = a.merge(b);
        assert_eq!(ab, b.merge(a));
        assert_eq!(ab.longest_win, Some((5, 2)));
        assert_eq!((ab.legal, ab.wins, ab.draws, ab.losses), (4, 2, 1, 1));
    }
}
