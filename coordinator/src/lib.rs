//! The xqtb coordinator's transport: the gRPC services and the server that runs them, over the
//! application layer ([`app`], which plans, leases, checks uploads and answers queries).
//!
//! - [`grpc`]: the gRPC services, thin shells over [`app::App`]: each call authenticates,
//!   parses the message through [`rpc`], calls one method and maps the result;
//! - [`server`]: starting and stopping the server with health, reflection and the expiry tick.
//!
//! Depends on the application layer, the protocol and its mapping ([`rpc`]) and tonic; the
//! application layer depends on none of these.

#![warn(missing_docs)]

pub mod grpc;
pub mod server;

pub use server::{Coordinator, CoordinatorConfig};
