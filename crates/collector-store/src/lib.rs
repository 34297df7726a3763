//! Storage behind the ID-INT collector, independent of ID-INT itself (plain data in, plain
//! data out):
//!
//! - [`topology`]: the topology (ISD-ASes, routers, interfaces, links, paths, unmapped paths)
//!   and the report quarantine in PostgreSQL, with migrations applied at connect and a
//!   [`topology::WriteBehind`] queue that writes changes in batches off the caller's path,
//!   retrying through database restarts without losing what it accepted;
//! - [`ts`]: a [`ts::TimeSeriesStore`] trait with the VictoriaMetrics ([`victoria`]) and
//!   InfluxDB 1.x ([`influx`]) backends, and [`writer::BufferedWriter`]: batches with a
//!   bounded delay, retries with exponential backoff, a bounded memory buffer that spills to
//!   a bounded on-disk [`spool::Spool`] and pushes back when both are full, no retry of
//!   requests the store refuses outright, and counters that account for every accepted
//!   sample.
//!
//! The services themselves run on loopback through `scripts/services.sh`.

mod drain;
pub mod influx;
pub mod spool;
pub mod topology;
pub mod ts;
pub mod victoria;
pub mod writer;

pub use ts::{Aggregation, Line, Name, RangeQuery, Sample, Series, StoreError, TimeSeriesStore};
