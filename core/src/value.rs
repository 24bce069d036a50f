//! The value of a position for the side to move: win, draw or loss with the distance to mate in
//! plies, and its two-byte encoding.

use std::fmt;

/// The game-theoretic value of a position, from the side to move's point of view.
///
/// Distances count plies: a side with no legal move has lost in 0; a side that mates at once
/// has won in 1. Wins are always odd, losses even.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Value {
    /// No legal position has this slot.
    Illegal,
    /// Neither side can force mate (under the table's rule set).
    Draw,
    /// The side to move mates in this many plies.
    Win(u16),
    /// The side to move is mated in this many plies.
    Loss(u16),
}

/// Encoded illegal slot.
const ILLEGAL: u16 = 0xFFFF;
/// Encoded draw.
const DRAW: u16 = 0;
/// Largest distance to mate the encoding holds.
const MAX_DTM: u16 = 0x3FFE;

impl Value {
    /// The two-byte code of [`Value::Illegal`]: a slot that holds no legal position.
    pub const ILLEGAL_CODE: u16 = ILLEGAL;
    /// The two-byte code of [`Value::Draw`].
    pub const DRAW_CODE: u16 = DRAW;
    /// Largest distance to mate, in plies, that the two-byte code holds.
    pub const MAX_DTM: u16 = MAX_DTM;

    /// Two-byte encoding: 0 draw, `0xFFFF` illegal, otherwise `dtm + 1` (the parity of the
    /// distance tells win from loss).
    #[inline]
    pub const fn encode(self) -> u16 {
        match self {
            Value::Illegal => ILLEGAL,
            Value::Draw => DRAW,
            Value::Win(d) | Value::Loss(d) => d + 1,
        }
    }

    /// Inverse of [`Value::encode`]; codes above `MAX_DTM + 1` other than `ILLEGAL` are not
    /// values and decode as illegal.
    #[inline]
    pub const fn decode(code: u16) -> Value {
        match code {
            DRAW => Value::Draw,
            c if c > MAX_DTM + 1 => Value::Illegal,
            c if (c - 1) % 2 == 1 => Value::Win(c - 1),
            c => Value::Loss(c - 1),
        }
    }

    /// The value for the side that just moved into a position of value `self`: a position lost
    /// in `d` for the side to move is won in `d + 1` for the mover.
    #[inline]
    pub const fn for_mover(self) -> Value {
        match self {
            Value::Loss(d) => Value::Win(d + 1),
            Value::Win(d) => Value::Loss(d + 1),
            v => v,
        }
    }

    /// Distance to mate in plies, for decisive values.
    pub const fn dtm_plies(self) -> Option<u16> {
        match self {
            Value::Win(d) | Value::Loss(d) => Some(d),
            _ => None,
        }
    }

    /// `"win"`, `"draw"`, `"loss"` or `"illegal"`.
    pub const fn wdl(self) -> &'static str {
        match self {
            Value::Win(_) => "win",
            Value::Draw => "draw",
            Value::Loss(_) => "loss",
            Value::Illegal => "illegal",
        }
    }

    /// Ordering key for choosing moves from the mover's point of view: larger is better (fast
    /// wins, then draws, then slow losses).
    pub const fn preference(self) -> i32 {
        match self {
            Value::Win(d) => 100_000 - d as i32,
            Value::Draw => 0,
            Value::Loss(d) => -100_000 + d as i32,
            Value::Illegal => i32::MIN,
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Illegal => f.write_str("illegal"),
            Value::Draw => f.write_str("draw"),
            Value::Win(d) => write!(f, "win in {d} plies"),
            Value::Loss(d) => write!(f, "loss in {d} plies"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(Value::Loss(0).for_mover(), Value::Win(1));
        assert_eq!(Value::Win(1).for_mover(), Value::Loss(2));
    }
}
