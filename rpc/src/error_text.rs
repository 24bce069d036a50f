//! Errors as one line of text for people: what the command line prints, the worker logs and
//! reports to the coordinator, and connection errors carry.

/// An error and its causes as one line, for messages to people: what every command, the worker's
/// logs and its failure reports print (anyhow's `{:#}` would repeat causes). Errors often repeat
/// their cause: the transport stack ("transport error: tcp connect error: tcp connect error:
/// Connection refused"), and error types whose text includes the cause they also return as their
/// source (kept so that callers can find it, e.g. a missing table under a probe error). A cause
/// whose text the line already ends with is left out, and tonic's generic "transport error" is
/// dropped when a more specific cause follows.
pub fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut next = Some(e);
    while let Some(err) = next {
        let text = err.to_string();
        if !text.is_empty() && !parts.last().is_some_and(|last| last.ends_with(&text)) {
            parts.push(text);
        }
        next = err.source();
    }
    if parts.len() > 1 && parts[0] == "transport error" {
        parts.remove(0);
    }
    parts.join(": ")
}

#[cfg(test)]
mod tests {
    use super::error_chain;

    #[derive(Debug, thiserror::Error)]
    #[error("illegal position: {0}")]
    struct Outer(#[source] Inner);

    #[derive(Debug, thiserror::Error)]
    #[error("Black is in check but it is not Black's turn")]
    struct Inner;

    /// A cause the line already ends with is said once; a context that does not include its
    /// cause keeps it.
    #[test]
    fn causes_are_said_once() {
        let e = anyhow::Error::new(Outer(Inner)).context("bad FEN 'x'");
        assert_eq!(
            error_chain(e.as_ref()),
            "bad FEN 'x': illegal position: Black is in check but it is not Black's turn"
        );
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "no such file");
        let e = anyhow::Error::new(io).context("reading a.xqtb");
        assert_eq!(error_chain(e.as_ref()), "reading a.xqtb: no such file");
    }
}
