//! Opening a channel to a coordinator and authenticating calls on it.

use crate::error_chain;
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
use std::time::Duration;
use thiserror::Error;
use tonic::metadata::MetadataValue;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint};

/// A channel whose every call carries the bearer token.
pub type Client = InterceptedService<Channel, Auth>;

/// How long [`connect`] waits for the TCP connection (and TLS handshake).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Adds the bearer token to every call.
#[derive(Clone)]
pub struct Auth(Option<MetadataValue<tonic::metadata::Ascii>>);

impl tonic::service::Interceptor for Auth {
    fn call(&mut self, mut req: tonic::Request<()>) -> Result<tonic::Request<()>, tonic::Status> {
        if let Some(v) = &self.0 {
            req.metadata_mut().insert("authorization", v.clone());
        }
        Ok(req)
    }
}

impl Auth {
    /// The interceptor for `token` (none: calls go without an `authorization` header).
    pub fn new(token: Option<&str>) -> Result<Auth> {
        Ok(Auth(match token {
            Some(t) => Some(
                format!("Bearer {t}")
                    .parse()
                    .context("the token is not valid in a header")?,
            ),
            None => None,
        }))
    }
}

/// Why [`connect`] could not open a channel. Each message names the URL (or file) and says what
/// to change where that is clear, since it is what a person at a terminal sees.
#[derive(Debug, Error)]
pub enum ConnectError {
    /// The URL does not parse.
    #[error(
        "bad coordinator URL '{url}': {reason} (write it as http://HOST:PORT, or https://HOST:PORT with --ca)"
    )]
    BadUrl {
        /// The URL given.
        url: String,
        /// Why it does not parse.
        reason: String,
    },
    /// An `https://` URL without a CA certificate to check the coordinator's certificate with.
    #[error(
        "cannot reach the coordinator at {url}: an https:// URL needs --ca FILE, the PEM certificate of the CA that signed the coordinator's --tls-cert (or use http:// for a coordinator without TLS)"
    )]
    NoCa {
        /// The URL given.
        url: String,
    },
    /// A CA certificate given for an `http://` URL, which would be ignored: the connection would
    /// go unencrypted although TLS was asked for.
    #[error(
        "--ca is given but the coordinator URL {url} is http://: use https:// to connect with TLS"
    )]
    CaWithoutTls {
        /// The URL given.
        url: String,
    },
    /// The CA certificate file cannot be read or used.
    #[error("cannot use the CA certificate {}: {reason}", path.display())]
    BadCa {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The connection (or its TLS handshake) failed.
    #[error("cannot reach the coordinator at {url}: {reason}{hint}")]
    Unreachable {
        /// The URL given.
        url: String,
        /// The underlying error with its causes, e.g. `tcp connect error: Connection refused
        /// (os error 111)`.
        reason: String,
        /// What to check, with its leading separator (`"; is ..."`), or empty.
        hint: String,
    },
}

/// Opens a channel to `url`, with TLS when a CA file is given.
pub async fn connect(url: &str, ca: Option<&Path>) -> Result<Channel, ConnectError> {
    let bad_url = |reason: String| ConnectError::BadUrl {
        url: url.into(),
        reason,
    };
    let mut endpoint = Endpoint::from_shared(url.to_string())
        .map_err(|e| bad_url(error_chain(&e)))?
        .connect_timeout(CONNECT_TIMEOUT)
        .tcp_nodelay(true);
    // `127.0.0.1:7070` parses (as a host and port without a scheme) and would only fail on
    // connecting, with a vague "invalid URL, scheme is missing"; refuse it here, saying why.
    if endpoint.uri().scheme().is_none() || endpoint.uri().host().is_none() {
        return Err(bad_url("it has no scheme or no host".into()));
    }
    let https = endpoint.uri().scheme_str() == Some("https");
    match (ca, https) {
        (None, true) => return Err(ConnectError::NoCa { url: url.into() }),
        (Some(_), false) => return Err(ConnectError::CaWithoutTls { url: url.into() }),
        (Some(ca), true) => {
            let bad = |reason: String| ConnectError::BadCa {
                path: ca.to_path_buf(),
                reason,
            };
            let pem = std::fs::read(ca).map_err(|e| bad(e.to_string()))?;
            endpoint = endpoint
                .tls_config(ClientTlsConfig::new().ca_certificate(Certificate::from_pem(pem)))
                .map_err(|e| bad(error_chain(&e)))?;
        }
        (None, false) => {}
    }
    endpoint
        .connect()
        .await
        .map_err(|e| ConnectError::Unreachable {
            url: url.into(),
            reason: error_chain(&e),
            hint: hint(&e),
        })
}

/// What to check for a failed connection, from the kind of its deepest I/O error or, for the
/// layers that carry no error kind (name resolution, TLS), from their text.
fn hint(e: &(dyn std::error::Error + 'static)) -> String {
    let mut next = Some(e);
    let mut text = String::new();
    while let Some(err) = next {
        if let Some(io) = err.downcast_ref::<std::io::Error>() {
            use std::io::ErrorKind::*;
            let h = match io.kind() {
                ConnectionRefused => {
                    "nothing listens there: is the coordinator running, and is this its --listen port?"
                }
                TimedOut => "no answer: is the host up, and does a firewall let the port through?",
                _ => "",
            };
            if !h.is_empty() {
                return format!("; {h}");
            }
        }
        if err.downcast_ref::<tonic::TimeoutExpired>().is_some() {
            return format!(
                "; no answer within {} s: is the host up, and does a firewall let the port through?",
                CONNECT_TIMEOUT.as_secs()
            );
        }
        text.push_str(&err.to_string());
        text.push(' ');
        next = err.source();
    }
    if text.contains("dns error") || text.contains("lookup address") {
        "; the host name does not resolve: check its spelling".into()
    } else if text.contains("InvalidContentType") || text.contains("corrupt message") {
        "; the server does not speak TLS: is the coordinator running with --tls-cert? (use http:// for one without)".into()
    } else if text.contains("certificate") {
        "; is --ca the CA that signed the coordinator's --tls-cert, and does that certificate name this host?".into()
    } else {
        String::new()
    }
}
