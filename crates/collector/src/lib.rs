//! The ID-INT telemetry collector: turns verified telemetry reports into knowledge hosts and
//! operators can query.
//!
//! * [`pipeline`]: decode -> verify/decrypt (DRKey) -> replay -> map hops to ASes -> metrics
//!   and event detection, per worker, in memory.
//! * [`topology`]: ASes, routers, interfaces, links and paths (imported and learned), behind
//!   a [`topology::TopologySink`] for PostgreSQL.
//! * [`metrics`]: INTCollector-style metric keys, thresholds and refresh, behind a
//!   [`metrics::PointSink`] for the time-series store.
//! * [`service`]: the tokio service (UDP and HTTP ingest with bounded queues, REST API).

pub mod api;
pub mod config;
pub mod counters;
/// The JSON form of report batches (moved to `idint-report`, feature `json`).
pub use idint_report::json;
pub mod keys;
pub mod metrics;
pub mod pipeline;
pub mod replay;
pub mod service;
pub mod storage;
pub mod topology;
pub mod wire;
