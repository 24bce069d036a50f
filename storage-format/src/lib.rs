//! storage-format
