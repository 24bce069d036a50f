//! What crosses the wire between xqtb processes: the conversions between the gRPC messages of
//! [`proto`] and the domain types (tables, job keys, probe and search reports), and the client
//! side of a connection (TLS, the bearer token, receiving streamed shard files).
//!
//! The coordinator's services and every client (the worker, the command line) map messages
//! through this one crate, so a field means the same on both ends. Depends on the protocol, the
//! table model and the reports of the probing and search libraries; holds no state and starts
//! no runtime.

#![warn(missing_docs)]

mod connect;
mod convert;
mod error_text;
mod shard;

pub use connect::{Auth, CONNECT_TIMEOUT, Client, ConnectError, connect};
pub use convert::{
    ConvertError, job_key, mainline_report, mainline_response, parse_job_key, parse_rules,
    parse_table, probe_report, probe_response, search_report, search_response, table_ref,
};
pub use error_text::error_chain;
pub use shard::{ShardReceiveError, receive_shard};
