//! Job planning and scheduling for the xqtb coordinator.
