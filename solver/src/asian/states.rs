//! The rule phase's view of a job: the job, and the two-byte state of each entry
//! ([`crate::state`]) that the retrograde phase's codes become.

use crate::position::Job;
use std::sync::atomic::AtomicU16;
use xiangqi::Color;

/// A job and its entries' two-byte states, per side to move.
pub(crate) struct Solver<'a> {
    job: Job<'a>,
    state: [Vec<AtomicU16>; 2],
}

impl<'a> Solver<'a> {
    /// The job with the codes the retrograde phase left ([`crate::retrograde::retrograde`]).
    pub(crate) fn new(job: Job<'a>, codes: [Vec<u16>; 2]) -> Solver<'a> {
        // The same allocation, reused in place: a code and its atomic have one layout.
        let state = codes.map(|c| c.into_iter().map(AtomicU16::new).collect());
        Solver { job, state }
    }

    /// The states of the entries with `side` to move.
    #[inline]
    pub(crate) fn states(&self, side: Color) -> &[AtomicU16] {
        &self.state[side.index()]
    }

    /// The final codes: the values, and a draw for every position still undecided.
    pub(crate) fn finish(self) -> [Vec<u16>; 2] {
        self.state.map(|v| {
            v.into_iter()
                .map(|a| crate::state::final_code(a.into_inner()))
                .collect()
        })
    }
}

impl<'a> std::ops::Deref for Solver<'a> {
    type Target = Job<'a>;

    fn deref(&self) -> &Job<'a> {
        &self.job
    }
}
