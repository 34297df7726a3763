//! Shared test fixtures of the workspace (dev-only, not published):
//!
//! * [`chain`]: a real multi-AS scion-dp chain that produces ID-INT reports, with the
//!   collector's keys, topology files and pipeline for it (tests, benchmarks, load generator).
//! * [`services`]: PostgreSQL, VictoriaMetrics and InfluxDB started by `scripts/services.sh`.
//! * [`require`]: what a test needs from the machine (root, the store binaries): skipped with
//!   the reason under a plain `cargo test`, failed under `scripts/test.sh`.
//! * `service` (feature `service`): the chain's collector service configured, started and
//!   talked to over loopback HTTP.

pub mod chain;
pub mod require;
#[cfg(feature = "service")]
pub mod service;
pub mod services;
