//! The xqtb gRPC protocol (compiled from xqtb.proto).
