//! The value of a position for the side to move: win, draw or loss, with the distance to mate in
//! plies, or, for positions the repetition rules decide, the rule and the plies until it applies;
//! and the two-byte encoding of values.

use std::fmt;

/// Which repetition rule decides a position.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Rule {
    /// The losing side can only avoid losing by checking for ever, and perpetual check loses.
    PerpetualCheck,
    /// The losing side can only avoid losing by chasing one piece for ever, and perpetual chase
    /// loses.
    PerpetualChase,
}

impl Rule {
    /// `"perpetual-check"` or `"perpetual-chase"`.
    pub const fn name(self) -> &'static str {
        match self {
            Rule::PerpetualCheck => "perpetual-check",
            Rule::PerpetualChase => "perpetual-chase",
        }
    }

    const fn id(self) -> u16 {
        match self {
            Rule::PerpetualCheck => 0,
            Rule::PerpetualChase => 1,
        }
    }
}

/// A value decided by a repetition rule (see `docs/repetition-rules.md`).
///
/// `plies` counts the plies until the losing side is to move in a position where every move
/// either keeps up the perpetual offence or leads to a position lost for it anyway (0 there); it
/// grows by one per ply away from such positions, exactly like a distance to mate, so values are
/// consistent one ply deep. `round` is the round of the rule analysis that decided the position
/// (round 0: decided through a capture into another table's rule-decided position; round `k`:
/// through offences that are forced once the positions of earlier rounds are decided); values of
/// an earlier round come first, so the winner prefers them and the loser avoids them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RuleValue {
    /// The rule.
    pub rule: Rule,
    /// The round of the rule analysis, `0..=MAX_ROUND`.
    pub round: u8,
    /// Plies until the rule applies, `0..=MAX_RULE_PLIES`.
    pub plies: u16,
}

impl RuleValue {
    /// Largest round the encoding holds.
    pub const MAX_ROUND: u8 = 22;
    /// Largest number of plies the encoding holds.
    pub const MAX_RULE_PLIES: u16 = 1023;

    /// Ordering key: smaller is better for the winner (earlier round, fewer plies, check before
    /// chase on a tie).
    const fn key(self) -> i32 {
        ((self.round as i32 * 1024 + self.plies as i32) * 2) + self.rule.id() as i32
    }

    /// The same value one ply further away (for the side that moved into it).
    const fn later(self) -> RuleValue {
        RuleValue {
            plies: self.plies + 1,
            ..self
        }
    }
}

/// The game-theoretic value of a position, from the side to move's point of view.
///
/// Distances count plies: a side with no legal move has lost in 0; a side that mates at once
/// has won in 1. Wins are always odd, losses even, for mates and rule values alike.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Value {
    /// No legal position has this slot.
    Illegal,
    /// Neither side can force a win (under the table's rule set).
    Draw,
    /// The side to move mates in this many plies.
    Win(u16),
    /// The side to move is mated in this many plies.
    Loss(u16),
    /// The side to move cannot force mate but wins by a repetition rule.
    RuleWin(RuleValue),
    /// The side to move can avoid mate but loses by a repetition rule.
    RuleLoss(RuleValue),
}

/// Encoded illegal slot.
const ILLEGAL: u16 = 0xFFFF;
/// Encoded draw.
const DRAW: u16 = 0;
/// Largest distance to mate the encoding holds.
const MAX_DTM: u16 = 0x3FFE;
/// First code of rule values: `RULE_BASE + (round * 2 + rule) * 1024 + plies`.
const RULE_BASE: u16 = 0x4000;
/// One past the last rule code; codes from here to `ILLEGAL` are not values.
const RULE_END: u16 = RULE_BASE + (RuleValue::MAX_ROUND as u16 + 1) * 2 * 1024;

impl Value {
    /// The two-byte code of [`Value::Illegal`]: a slot that holds no legal position.
    pub const ILLEGAL_CODE: u16 = ILLEGAL;
    /// The two-byte code of [`Value::Draw`].
    pub const DRAW_CODE: u16 = DRAW;
    /// Largest distance to mate, in plies, that the two-byte code holds.
    pub const MAX_DTM: u16 = MAX_DTM;
    /// Codes from this one up to [`Value::ILLEGAL_CODE`] (exclusive) are no value; solvers use
    /// them for their own intermediate states.
    pub const FIRST_FREE_CODE: u16 = RULE_END;

    /// Two-byte encoding: 0 draw, `0xFFFF` illegal, `dtm + 1` for mates (the parity of the
    /// distance tells win from loss), and from `0x4000` the rule values by round, rule and plies
    /// (parity again telling win from loss). Tables without rule values use codes below `0x4000`
    /// only, so tables written without rule values decode the same.
    #[inline]
    pub const fn encode(self) -> u16 {
        match self {
            Value::Illegal => ILLEGAL,
            Value::Draw => DRAW,
            Value::Win(d) | Value::Loss(d) => d + 1,
            Value::RuleWin(r) | Value::RuleLoss(r) => {
                RULE_BASE + (r.round as u16 * 2 + r.rule.id()) * 1024 + r.plies
            }
        }
    }

    /// Inverse of [`Value::encode`]; codes that are no value decode as illegal.
    #[inline]
    pub const fn decode(code: u16) -> Value {
        match code {
            DRAW => Value::Draw,
            c if c <= MAX_DTM + 1 => {
                if (c - 1) % 2 == 1 {
                    Value::Win(c - 1)
                } else {
                    Value::Loss(c - 1)
                }
            }
            c if c >= RULE_BASE && c < RULE_END => {
                let x = c - RULE_BASE;
                let plies = x % 1024;
                let r = RuleValue {
                    rule: if (x / 1024).is_multiple_of(2) {
                        Rule::PerpetualCheck
                    } else {
                        Rule::PerpetualChase
                    },
                    round: (x / 2048) as u8,
                    plies,
                };
                if plies % 2 == 1 {
                    Value::RuleWin(r)
                } else {
                    Value::RuleLoss(r)
                }
            }
            _ => Value::Illegal,
        }
    }

    /// The value for the side that just moved into a position of value `self`: a position lost
    /// in `d` for the side to move is won in `d + 1` for the mover.
    #[inline]
    pub const fn for_mover(self) -> Value {
        match self {
            Value::Loss(d) => Value::Win(d + 1),
            Value::Win(d) => Value::Loss(d + 1),
            Value::RuleLoss(r) => Value::RuleWin(r.later()),
            Value::RuleWin(r) => Value::RuleLoss(r.later()),
            v => v,
        }
    }

    /// The value a capture into another table's position of value `self` has here: rule values
    /// count as round 0 of this table (they are settled facts of a table solved before).
    #[inline]
    pub const fn as_exit(self) -> Value {
        match self {
            Value::RuleWin(r) => Value::RuleWin(RuleValue { round: 0, ..r }),
            Value::RuleLoss(r) => Value::RuleLoss(RuleValue { round: 0, ..r }),
            v => v,
        }
    }

    /// Distance to mate in plies, for values that end in mate.
    pub const fn dtm_plies(self) -> Option<u16> {
        match self {
            Value::Win(d) | Value::Loss(d) => Some(d),
            _ => None,
        }
    }

    /// The rule that decides the value, for rule values.
    pub const fn rule(self) -> Option<Rule> {
        match self {
            Value::RuleWin(r) | Value::RuleLoss(r) => Some(r.rule),
            _ => None,
        }
    }

    /// Plies until the rule applies, for rule values (see [`RuleValue`]).
    pub const fn rule_plies(self) -> Option<u16> {
        match self {
            Value::RuleWin(r) | Value::RuleLoss(r) => Some(r.plies),
            _ => None,
        }
    }

    /// The round of the rule analysis that decided a rule value (see `docs/repetition-rules.md`:
    /// the winner prefers earlier rounds, then fewer plies).
    pub const fn rule_round(self) -> Option<u8> {
        match self {
            Value::RuleWin(r) | Value::RuleLoss(r) => Some(r.round),
            _ => None,
        }
    }

    /// Whether the side to move wins (by mate or by rule).
    pub const fn is_win(self) -> bool {
        matches!(self, Value::Win(_) | Value::RuleWin(_))
    }

    /// Whether the side to move loses (by mate or by rule).
    pub const fn is_loss(self) -> bool {
        matches!(self, Value::Loss(_) | Value::RuleLoss(_))
    }

    /// `"win"`, `"draw"`, `"loss"` or `"illegal"`.
    pub const fn wdl(self) -> &'static str {
        match self {
            Value::Win(_) | Value::RuleWin(_) => "win",
            Value::Draw => "draw",
            Value::Loss(_) | Value::RuleLoss(_) => "loss",
            Value::Illegal => "illegal",
        }
    }

    /// Ordering key for choosing moves from the mover's point of view: larger is better. Mates
    /// come first (fastest first), then rule wins (earliest round, then fewest plies), draws,
    /// rule losses (latest round and most plies first) and mates suffered (longest first).
    pub const fn preference(self) -> i32 {
        match self {
            Value::Win(d) => 100_000 - d as i32,
            Value::RuleWin(r) => 50_000 - r.key(),
            Value::Draw => 0,
            Value::RuleLoss(r) => -50_000 + r.key(),
            Value::Loss(d) => -100_000 + d as i32,
            Value::Illegal => i32::MIN,
        }
    }
}

/// A number of plies in words for people: "1 ply", "5 plies".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Plies(pub u64);

impl fmt::Display for Plies {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.0;
        write!(f, "{n} {}", if n == 1 { "ply" } else { "plies" })
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Illegal => f.write_str("illegal"),
            Value::Draw => f.write_str("draw"),
            Value::Win(d) => write!(f, "win in {}", Plies(*d as u64)),
            Value::Loss(d) => write!(f, "loss in {}", Plies(*d as u64)),
            Value::RuleWin(r) => write!(
                f,
                "win by {} rule in {} (round {})",
                r.rule.name(),
                Plies(r.plies as u64),
                r.round
            ),
            Value::RuleLoss(r) => write!(
                f,
                "loss by {} rule in {} (round {})",
                r.rule.name(),
                Plies(r.plies as u64),
                r.round
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_read_as_words() {
        assert_eq!(Value::Win(1).to_string(), "win in 1 ply");
        assert_eq!(Value::Loss(0).to_string(), "loss in 0 plies");
        assert_eq!(Value::Win(15).to_string(), "win in 15 plies");
        let r = RuleValue {
            rule: Rule::PerpetualCheck,
            round: 2,
            plies: 1,
        };
        assert_eq!(
            Value::RuleWin(r).to_string(),
            format!(
                "win by {} rule in 1 ply (round 2)",
                Rule::PerpetualCheck.name()
            )
        );
    }

    #[test]
    fn encoding_round_trips() {
        for v in [
            Value::Illegal,
            Value::Draw,
            Value::Loss(0),
            Value::Win(1),
            Value::Loss(200),
        ] {
            assert_eq!(Value::decode(v.encode()), v);
        }
        for d in 0..=MAX_DTM {
            let v = if d % 2 == 1 {
                Value::Win(d)
            } else {
                Value::Loss(d)
            };
            assert_eq!(Value::decode(v.encode()), v);
        }
        for round in 0..=RuleValue::MAX_ROUND {
            for rule in [Rule::PerpetualCheck, Rule::PerpetualChase] {
                for plies in 0..=RuleValue::MAX_RULE_PLIES {
                    let r = RuleValue { rule, round, plies };
                    let v = if plies % 2 == 1 {
                        Value::RuleWin(r)
                    } else {
                        Value::RuleLoss(r)
                    };
                    assert!(v.encode() < Value::FIRST_FREE_CODE);
                    assert_eq!(Value::decode(v.encode()), v);
                }
            }
        }
        for c in Value::FIRST_FREE_CODE..ILLEGAL {
            assert_eq!(Value::decode(c), Value::Illegal);
        }
        assert_eq!(Value::Loss(0).for_mover(), Value::Win(1));
        assert_eq!(Value::Win(1).for_mover(), Value::Loss(2));
    }

    #[test]
    fn preferences_order_mates_rules_and_draws() {
        let r = |round, plies| RuleValue {
            rule: Rule::PerpetualCheck,
            round,
            plies,
        };
        let order = [
            Value::Win(1),
            Value::Win(79),
            Value::RuleWin(r(0, 9)),
            Value::RuleWin(r(1, 1)),
            Value::RuleWin(r(1, 3)),
            Value::Draw,
            Value::RuleLoss(r(2, 0)),
            Value::RuleLoss(r(1, 4)),
            Value::RuleLoss(r(1, 2)),
            Value::Loss(80),
            Value::Loss(0),
        ];
        for w in order.windows(2) {
            assert!(
                w[0].preference() > w[1].preference(),
                "{} vs {}",
                w[0],
                w[1]
            );
        }
        let loss = Value::RuleLoss(r(1, 2));
        assert_eq!(loss.for_mover(), Value::RuleWin(r(1, 3)));
        assert_eq!(loss.for_mover().for_mover(), Value::RuleLoss(r(1, 4)));
    }
}
