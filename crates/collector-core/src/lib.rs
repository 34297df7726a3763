//! The ID-INT telemetry collector's pure part: everything between report bytes and knowledge
//! hosts and operators can query, without an async runtime, network or database.
//!
//! * [`wire`]: the in-place protobuf decoder of report batches.
//! * [`pipeline`]: decode -> verify/decrypt (DRKey) -> replay -> map hops to ASes -> metrics
//!   and event detection, per worker, in memory.
//! * [`keys`]: level-1 key sources (local master secret, imported keys, any further
//!   [`drkey::provider::Level1Provider`] such as a control service client) and the per-worker
//!   key caches.
//! * [`remote_keys`]: keys fetched from a slow remote provider off the pipeline (non-blocking
//!   lookups, remembered failures, a bounded and rate-limited fetch queue).
//! * [`replay`]: replay suppression per source.
//! * [`topology`]: ASes, routers, interfaces, links and paths (imported and learned), behind
//!   a [`topology::TopologySink`] for persistence.
//! * [`metrics`]: INTCollector-style metric keys, thresholds and refresh, behind a
//!   [`metrics::PointSink`] for a time-series store and a [`metrics::HistoryStore`] for
//!   history queries.
//! * [`counters`]: ingest and rejection counters, the quarantine.
//!
//! The service (`collector` crate) implements the sinks and stores and runs the pipeline.

pub mod counters;
/// The JSON form of report batches (moved to `idint-report`, feature `json`).
pub use idint_report::json;
pub mod keys;
pub mod metrics;
pub mod pipeline;
pub mod remote_keys;
pub mod replay;
pub mod topology;
pub mod wire;
