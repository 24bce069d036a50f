//! Fault injection, for tests only: knobs that make a worker misbehave on purpose, so that the
//! cluster tests can show the coordinator copes with a worker that uploads late (its lease
//! expires, another worker takes the job), uploads a table with wrong values (the sample
//! check refuses it and quarantines the worker) or hangs in a shared job (its seat is leased
//! again).
//!
//! The knobs exist only with this crate's `fault-injection` feature, which the `xqtb` package
//! turns on for its own tests alone (it is a dev-dependency feature). Without it, [`Faults`] and
//! [`FaultArgs`] are empty, the worker has no code that injects a fault, and `xqtb worker` has
//! no such flags: a release build refuses them as unknown arguments.

#[cfg(feature = "fault-injection")]
use std::time::Duration;
#[cfg(feature = "fault-injection")]
use xiangqi::Color;
#[cfg(feature = "fault-injection")]
use xqtb_core::{JobKey, Table, Value};

/// The faults a worker injects: none by default, and none at all without the `fault-injection`
/// feature.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Faults {
    /// Wait this long (heartbeating) between solving a job and uploading it.
    #[cfg(feature = "fault-injection")]
    pub delay_upload: Duration,
    /// Give this many values of every table a wrong value after verifying it and before
    /// uploading it, as a worker with bad memory or a bug would, so that tests can show that the
    /// coordinator's sample check refuses the table and quarantines the worker.
    #[cfg(feature = "fault-injection")]
    pub corrupt_values: u64,
    /// Holding this seat of a shared job (the first of the pair), stop for good (heartbeating
    /// on) when about to end the pass of this number (the second; 0 for the first pass), as a
    /// worker that hangs in the middle of a table: the tests kill it there. Only in the first
    /// shared job the worker takes a seat of: one that took another seat since (after a
    /// restarted coordinator resumed the job, say) goes on as any worker.
    #[cfg(feature = "fault-injection")]
    pub stall_seat_at_pass: Option<(usize, usize)>,
}

/// The hidden command-line flags that ask for [`Faults`], for a command's arguments to flatten
/// (`#[command(flatten)]`): none without the `fault-injection` feature.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct FaultArgs {
    /// Fault injection for tests: wait this long (heartbeating) before each upload.
    #[cfg(feature = "fault-injection")]
    #[arg(long, hide = true, default_value_t = 0)]
    debug_delay_upload_ms: u64,
    /// Fault injection for tests, never for production: give this many values of every table
    /// a wrong value after verifying it (the coordinator's sample check must refuse it).
    #[cfg(feature = "fault-injection")]
    #[arg(long, hide = true, default_value_t = 0)]
    debug_corrupt_values: u64,
    /// Fault injection for tests: holding seat SEAT of the first shared job this worker takes
    /// a seat of, stop for good at pass PASS (`SEAT:PASS`, both counted from 0).
    #[cfg(feature = "fault-injection")]
    #[arg(long, hide = true, value_parser = seat_and_pass, value_name = "SEAT:PASS")]
    debug_stall_seat_at_pass: Option<(usize, usize)>,
}

/// Reads `SEAT:PASS` ([`FaultArgs`]'s `--debug-stall-seat-at-pass`).
#[cfg(feature = "fault-injection")]
fn seat_and_pass(s: &str) -> Result<(usize, usize), String> {
    let parsed = s
        .split_once(':')
        .and_then(|(seat, pass)| Some((seat.parse().ok()?, pass.parse().ok()?)));
    parsed.ok_or_else(|| format!("'{s}' is not SEAT:PASS (two numbers, such as 1:5)"))
}

impl FaultArgs {
    /// The faults the flags ask for.
    pub fn faults(&self) -> Faults {
        Faults {
            #[cfg(feature = "fault-injection")]
            delay_upload: Duration::from_millis(self.debug_delay_upload_ms),
            #[cfg(feature = "fault-injection")]
            corrupt_values: self.debug_corrupt_values,
            #[cfg(feature = "fault-injection")]
            stall_seat_at_pass: self.debug_stall_seat_at_pass,
        }
    }
}

#[cfg(feature = "fault-injection")]
impl Faults {
    /// The verified `table` of job `key`, corrupted as [`Faults::corrupt_values`] asks.
    pub(crate) fn corrupt(&self, key: &JobKey, mut table: Table) -> Table {
        if self.corrupt_values > 0 {
            let changed = corrupt_values(&mut table, self.corrupt_values);
            tracing::warn!(
                job = %key,
                "--debug-corrupt-values: {changed} values changed after verification (a \
                 test of the coordinator's checks; never use it in production)"
            );
        }
        table
    }

    /// For the seat of a shared job this worker is taking: the seat that stops for good, and
    /// the pass at which it does, if asked and this is the worker's first seat.
    pub(crate) fn stall_seat_at_pass(&self) -> Option<(usize, usize)> {
        static SEATED_BEFORE: std::sync::atomic::AtomicBool =
            std::sync::atomic::AtomicBool::new(false);
        let first = !SEATED_BEFORE.swap(true, std::sync::atomic::Ordering::Relaxed);
        self.stall_seat_at_pass.filter(|_| first)
    }

    /// Waits [`Faults::delay_upload`] before an upload; whether it waited at all.
    pub(crate) async fn delay_upload(&self) -> bool {
        if self.delay_upload.is_zero() {
            return false;
        }
        tokio::time::sleep(self.delay_upload).await;
        true
    }
}

/// Gives `n` entries of `table`, spread evenly over its legal entries that no repetition rule
/// decides, a wrong value: a draw becomes a win in 1 ply, anything else a draw (the table was
/// verified, so any other value is wrong). Returns how many were changed.
#[cfg(feature = "fault-injection")]
fn corrupt_values(table: &mut Table, n: u64) -> u64 {
    let plain = |c: u16| {
        let v = Value::decode(c);
        v != Value::Illegal && v.rule().is_none()
    };
    let total: u64 = Color::ALL
        .iter()
        .map(|&side| table.codes(side).iter().filter(|&c| plain(c)).count() as u64)
        .sum();
    let step = (total / n.max(1)).max(1);
    let (mut seen, mut changed) = (0u64, 0u64);
    table.map_codes(|_, _, code| {
        if changed == n || !plain(code) {
            return code;
        }
        let pick = seen % step == 0;
        seen += 1;
        if !pick {
            return code;
        }
        changed += 1;
        match Value::decode(code) {
            Value::Draw => Value::Win(1),
            _ => Value::Draw,
        }
        .encode()
    });
    changed
}

#[cfg(feature = "fault-injection")]
#[cfg(test)]
mod tests {
    use super::*;
    use xqtb_core::{RuleSet, TableId};

    /// As many values as asked change, each to a wrong one, and nothing else does.
    #[test]
    fn corrupting_a_table_changes_as_many_values_as_asked() {
        let sig = "KRvK".parse().unwrap();
        let rules = RuleSet::CyclesAreDraws;
        let tables = solver::solve_closure_in_memory(&[sig], rules, |_, _| {}).unwrap();
        let table = tables.get(&TableId::new(rules, sig)).unwrap();
        let mut bad = (**table).clone();
        assert_eq!(corrupt_values(&mut bad, 20), 20);
        let changed: Vec<(u16, u16)> = Color::ALL
            .iter()
            .flat_map(|&side| table.codes(side).iter().zip(bad.codes(side).iter()))
            .filter(|(a, b)| a != b)
            .collect();
        assert_eq!(changed.len(), 20);
        for (good, wrong) in changed {
            assert_ne!(good, Value::ILLEGAL_CODE);
            let expected = match Value::decode(good) {
                Value::Draw => Value::Win(1),
                _ => Value::Draw,
            };
            assert_eq!(wrong, expected.encode());
        }
    }
}
