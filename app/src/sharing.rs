//! What the workers sharing a job call about it: sending a batch of a pass, ending a pass and
//! waiting for the others, taking their batches. Leasing seats, renewing them and opening
//! them again after a failure go with the other leases (`leases.rs`).

use crate::app::App;
use crate::error::AppError;
use crate::shares::PassEnd;
use solver::Pass;
use std::sync::Arc;

/// The pass a message names by its kind and level ([`Pass::tag`]).
pub fn pass_of(kind: u32, level: u32) -> Result<Pass, AppError> {
    let level = u16::try_from(level)
        .map_err(|_| AppError::BadRequest(format!("pass level {level} is past 65535")))?;
    u8::try_from(kind)
        .ok()
        .and_then(|k| Pass::from_tag(k, level))
        .ok_or_else(|| {
            AppError::BadRequest(format!(
                "pass kind {kind} is none of 0 (start), 1 (win), 2 (mark), 3 (resolve), 4 (parts), \
                 5 (verified)"
            ))
        })
}

impl App {
    /// Takes a batch of `pass` from the worker holding seat lease `lease_id`: `data` as it
    /// encoded it, with the words of kinds it holds and the entries its sender resolved.
    pub fn share_send(
        &self,
        lease_id: &str,
        pass: Pass,
        data: Vec<u8>,
        words: u64,
        resolved: u64,
    ) -> Result<(), AppError> {
        let max = crate::limits::MAX_SHARE_BATCH_BYTES;
        if data.len() > max {
            return Err(AppError::BadRequest(format!(
                "a batch of {} bytes is past the {max} bytes a batch may hold",
                data.len()
            )));
        }
        Ok(self.shares.send(lease_id, pass, data, words, resolved)?)
    }

    /// Ends `pass` for the worker holding seat lease `lease_id`: complete, or a receiver to
    /// await until it is (or until the job is given up: check with
    /// [`App::share_pass_complete`]).
    pub fn share_end(&self, lease_id: &str, pass: Pass) -> Result<PassEnd, AppError> {
        Ok(self.shares.end(lease_id, pass)?)
    }

    /// Whether `pass` of seat lease `lease_id`'s job is complete (`false` once it was given
    /// up).
    pub fn share_pass_complete(&self, lease_id: &str, pass: Pass) -> bool {
        self.shares.is_complete(lease_id, pass)
    }

    /// The batches the other seats sent in complete `pass`, for seat lease `lease_id`.
    pub fn share_take(&self, lease_id: &str, pass: Pass) -> Result<Vec<Arc<[u8]>>, AppError> {
        Ok(self.shares.take(lease_id, pass)?)
    }
}
