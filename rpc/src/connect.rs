//! Opening a channel to a coordinator and authenticating calls on it.

use anyhow::{Context, Result};
use std::path::Path;
use std::time::Duration;
use tonic::metadata::MetadataValue;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint};

/// A channel whose every call carries the bearer token.
pub type Client = InterceptedService<Channel, Auth>;

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

/// Opens a channel to `url`, with TLS when a CA file is given.
pub async fn connect(url: &str, ca: Option<&Path>) -> Result<Channel> {
    let mut endpoint = Endpoint::from_shared(url.to_string())
        .with_context(|| format!("bad coordinator URL '{url}'"))?
        .connect_timeout(Duration::from_secs(5))
        .tcp_nodelay(true);
    if let Some(ca) = ca {
        let pem = std::fs::read(ca).with_context(|| format!("cannot read {}", ca.display()))?;
        endpoint = endpoint
            .tls_config(ClientTlsConfig::new().ca_certificate(Certificate::from_pem(pem)))?;
    }
    endpoint
        .connect()
        .await
        .with_context(|| format!("cannot reach the coordinator at {url}"))
}
