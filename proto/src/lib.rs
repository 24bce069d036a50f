//! The xqtb gRPC protocol (package `xqtb.v1`), compiled from `proto/xqtb.proto` with the
//! vendored `protoc`. Generated code only: it depends on tonic and prost, never on the domain
//! crates (the `rpc` crate maps messages to domain types).

/// Generated messages, clients and servers.
#[allow(clippy::all, missing_docs)]
pub mod v1 {
    tonic::include_proto!("xqtb.v1");
}

/// The encoded file descriptor set, for gRPC server reflection.
pub const FILE_DESCRIPTOR_SET: &[u8] = tonic::include_file_descriptor_set!("xqtb_descriptor");
