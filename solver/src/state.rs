//! The rule phase's state of each entry (a position of the job: side to move and slot), two
//! bytes, and every meaning its bits have. Nothing else in the crate reads or writes a state's
//! bits.
//!
//! The retrograde phase keeps its states in a byte each ([`crate::level_state`]) and ends by
//! turning them into these codes: a value's code ([`Value::encode`]) where it resolved the
//! position, and for every other position an [`Undecided`] state, which holds the rule phase's
//! bookkeeping: a witness for the loss levels ([`Witness`]) and [`Flags`]. The rule phase
//! ([`crate::asian`]) writes rule values over them; what is still undecided at the end is a
//! draw ([`final_code`]). Illegal entries hold [`Value::ILLEGAL_CODE`] throughout.

use xqtb_core::Value;

/// The code of an illegal entry.
const ILLEGAL: u16 = Value::ILLEGAL_CODE;

// ---------------------------------------------------------------------------------------------
// The rule phase.

/// The first undecided code: the codes from here up to, not including, [`ILLEGAL`] are the
/// undecided states, eleven bits of bookkeeping on top of this base.
const UNDECIDED: u16 = Value::FIRST_FREE_CODE;
/// The bits of the bookkeeping: the witness (bits 0 to 3) and the flags (bits 4 to 10).
const BOOKKEEPING: u16 = 0x7FF;
const _: () = assert!(UNDECIDED & BOOKKEEPING == 0 && UNDECIDED | BOOKKEEPING == ILLEGAL);
const WITNESS_BITS: u16 = 0b1111;

/// The loss levels' witness of an undecided position: a move that keeps it from losing now.
/// A position becomes a candidate of a loss level only when a position that may be its
/// witness was just won: otherwise the witness still holds it, and its test would fail.
///
/// The witness is a hash of the job slot of one successor that is not won for the opponent:
/// 1 to 14 ([`Witness::of_slot`]). Two more values: [`Witness::NONE`] (every successor may be
/// the one: tested whenever one is won), and [`Witness::HOLDS`] (a move leaving the job does
/// not lose: the position is never lost, never a candidate).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Witness(u16);

impl Witness {
    /// No witness known.
    pub(crate) const NONE: Witness = Witness(0);
    /// A move leaving the job does not lose.
    pub(crate) const HOLDS: Witness = Witness(15);

    /// The witness of the successor in job slot `q`.
    #[inline]
    pub(crate) fn of_slot(q: u64) -> Witness {
        Witness((q % 14) as u16 + 1)
    }

    /// The witness of the successor in job slot `q`, if any.
    #[inline]
    pub(crate) fn of(q: Option<u64>) -> Witness {
        q.map_or(Witness::NONE, Witness::of_slot)
    }

    /// Whether the position may lose now that the successor in job slot `q` is won: it has no
    /// witness, or one that may be that successor.
    #[inline]
    pub(crate) fn may_be(self, q: u64) -> bool {
        self == Witness::NONE || self == Witness::of_slot(q)
    }
}

/// A flag of an undecided state (see [`Flags`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Flag(u16);

/// The flags of an undecided state.
pub(crate) struct Flags;

impl Flags {
    /// A candidate of the current loss level.
    pub(crate) const CANDIDATE: Flag = Flag(1 << 4);
    /// A successor was decided since the last trap search: whether the position is forced to
    /// offend, and the traps around it, must be looked at again.
    pub(crate) const TOUCHED: Flag = Flag(1 << 5);
    /// Its side to move is forced to offend. It stays so while the position is undecided:
    /// successors are only ever decided as wins for the other side, which keeps every move an
    /// offence or a loss.
    pub(crate) const FORCED: Flag = Flag(1 << 6);
    /// A move of a position forced to offend leads here (set when that position is marked; it
    /// may outlast that position, decided later, harmlessly: no offender position leads here
    /// then, so no trap runs through it).
    pub(crate) const REACHED: Flag = Flag(1 << 7);
    /// In the trap search's fixed point: may be the offender's position inside a trap.
    pub(crate) const OFFENDER: Flag = Flag(1 << 8);
    /// In the trap search's fixed point: may be the winner's position inside a trap.
    pub(crate) const WINNER: Flag = Flag(1 << 9);
    /// Given a role back in this round's trap search: whether it keeps it is to be checked.
    pub(crate) const REVIVED: Flag = Flag(1 << 10);
}

// The witness and the flags fill the bookkeeping bits, each bit once. All of them set would be
// the illegal code; that never happens: a position that holds is never forced to offend.
const _: () = {
    let flags = [
        Flags::CANDIDATE,
        Flags::TOUCHED,
        Flags::FORCED,
        Flags::REACHED,
        Flags::OFFENDER,
        Flags::WINNER,
        Flags::REVIVED,
    ];
    let (mut union, mut bits, mut i) = (WITNESS_BITS, WITNESS_BITS.count_ones(), 0);
    while i < flags.len() {
        assert!(union & flags[i].0 == 0);
        union |= flags[i].0;
        bits += flags[i].0.count_ones();
        i += 1;
    }
    assert!(union == BOOKKEEPING && bits == BOOKKEEPING.count_ones());
};

impl Flag {
    /// The flag's bit in a state's code.
    #[inline]
    pub(crate) const fn bit(self) -> u16 {
        self.0
    }
}

/// An undecided state of the rule phase: its witness and flags.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Undecided(u16);

impl Undecided {
    /// The state of a position the rule phase has not looked at: no flag, and the witness
    /// [`Witness::HOLDS`] when a move leaving the job does not lose, else [`Witness::NONE`].
    #[inline]
    pub(crate) const fn new(holds: bool) -> Undecided {
        Undecided(UNDECIDED | if holds { Witness::HOLDS.0 } else { 0 })
    }

    /// The undecided state `code` holds, if it holds one.
    #[inline]
    pub(crate) fn of(code: u16) -> Option<Undecided> {
        is_undecided(code).then_some(Undecided(code))
    }

    /// The state's code.
    #[inline]
    pub(crate) const fn code(self) -> u16 {
        self.0
    }

    /// The witness.
    #[inline]
    pub(crate) fn witness(self) -> Witness {
        Witness(self.0 & WITNESS_BITS)
    }

    /// Whether a move leaving the job does not lose: the position can be won, never lost.
    #[inline]
    pub(crate) fn holds(self) -> bool {
        self.witness() == Witness::HOLDS
    }

    /// The state with witness `w` (the position must not hold).
    #[inline]
    pub(crate) fn with_witness(self, w: Witness) -> Undecided {
        debug_assert!(!self.holds());
        Undecided(self.0 & !WITNESS_BITS | w.0)
    }

    /// Whether the state carries `flag`.
    #[inline]
    pub(crate) fn has(self, flag: Flag) -> bool {
        self.0 & flag.0 != 0
    }

    /// The state with `flag`.
    #[inline]
    pub(crate) fn with(self, flag: Flag) -> Undecided {
        Undecided(self.0 | flag.0)
    }

    /// The state without `flag`.
    #[inline]
    pub(crate) fn without(self, flag: Flag) -> Undecided {
        Undecided(self.0 & !flag.0)
    }
}

/// Whether `code` is an undecided state of the rule phase.
#[inline]
pub(crate) fn is_undecided(code: u16) -> bool {
    code.wrapping_sub(UNDECIDED) < BOOKKEEPING
}

/// The code a finished state is stored as: its value, or a draw for a position neither phase
/// decided.
#[inline]
pub(crate) fn final_code(code: u16) -> u16 {
    if is_undecided(code) {
        Value::DRAW_CODE
    } else {
        code
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn undecided_states_read_back() {
        for holds in [false, true] {
            let s = Undecided::new(holds);
            assert_eq!(s.holds(), holds);
            assert_eq!(Undecided::of(s.code()), Some(s));
            assert!(!s.has(Flags::FORCED));
            assert!(s.with(Flags::FORCED).has(Flags::FORCED));
            assert_eq!(s.with(Flags::TOUCHED).without(Flags::TOUCHED), s);
        }
        let s = Undecided::new(false).with_witness(Witness::of_slot(9));
        assert!(s.witness().may_be(9) && s.witness().may_be(23) && !s.witness().may_be(10));
        assert!(Witness::NONE.may_be(4));
        assert!(!is_undecided(ILLEGAL) && !is_undecided(Value::Win(3).encode()));
        assert_eq!(final_code(Undecided::new(true).code()), 0);
    }
}
