//! The tokio service.
