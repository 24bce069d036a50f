//! Who may call what: the cluster token, checked the same way by every front end.

use crate::error::AppError;

/// Who may call what.
#[derive(Clone, Debug, Default)]
pub struct Access {
    /// The cluster token; `None` leaves every call open.
    pub token: Option<String>,
    /// Also require the token for probes, listings and downloads.
    pub token_for_reads: bool,
}

impl Access {
    /// Checks the bearer token a caller presented (`None`: no `authorization` header) for a call
    /// that writes (worker calls, submit) or only reads.
    pub fn check(&self, presented: Option<&str>, write: bool) -> Result<(), AppError> {
        let Some(token) = &self.token else {
            return Ok(());
        };
        if !write && !self.token_for_reads {
            return Ok(());
        }
        match presented {
            None => Err(AppError::Unauthenticated(
                "missing authorization: Bearer token",
            )),
            Some(v)
                if v.strip_prefix("Bearer ")
                    .is_some_and(|t| constant_time_eq(t, token)) =>
            {
                Ok(())
            }
            Some(_) => Err(AppError::Unauthenticated("wrong token")),
        }
    }
}

fn constant_time_eq(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}
