//! What the solver and the verifier report while they work.

/// What the solver reports while it works.
#[derive(Clone, Copy, Debug)]
pub enum Progress {
    /// Scanning captures and mates.
    Init {
        /// Entries scanned so far.
        done: u64,
        /// Entries of the table (slots times both sides to move).
        total: u64,
    },
    /// A level of the retrograde analysis is finished.
    Level {
        /// The level: positions won or lost in this many plies were resolved.
        level: u16,
        /// Entries resolved so far.
        resolved: u64,
        /// Entries of the table.
        total: u64,
    },
    /// A round of the repetition rules' analysis is finished.
    Rules {
        /// The round (0: captures into rule-decided positions of other tables).
        round: u8,
        /// Positions the rules decided so far.
        decided: u64,
    },
    /// Verifying the solved table against its successors.
    Verify {
        /// Entries verified so far.
        done: u64,
        /// Entries of the table.
        total: u64,
    },
}
