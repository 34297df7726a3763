//! The dashboard's own answers (`/dashboard/...`): a summary of the collector's state and the
//! recent events of event detection.

use std::collections::BTreeMap;

use serde::Serialize;
use utoipa::ToSchema;

use super::{MeasurementName, ScopeName};

/// `GET /dashboard/summary`: what the collector holds and has counted since it started.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct DashboardSummary {
    /// Reports accepted (verified and applied).
    pub accepted: u64,
    /// ISD-ASes known (with a record or only named by links and paths).
    pub ases: usize,
    /// AS-internal links.
    pub internal_links: usize,
    /// Inter-AS links.
    pub links: usize,
    /// The collector's ISD-AS.
    pub local_ia: String,
    /// Malformed batches (HTTP and UDP).
    pub malformed: u64,
    /// Metric keys in memory.
    pub metric_keys: usize,
    /// Unix time of this answer, ns.
    pub now_ns: u64,
    /// Known paths.
    pub paths: usize,
    /// Points handed to the time-series store.
    pub points_written: u64,
    /// Rejected reports by reason (only reasons with a count).
    pub rejected: BTreeMap<String, u64>,
    /// Rejected reports in all.
    pub rejected_total: u64,
    /// Reports taken by the pipeline.
    pub reports: u64,
    /// When this process started, Unix ns.
    pub started_ns: u64,
    /// Paths seen in reports that map to no known ASes.
    pub unknown_paths: usize,
    /// Pipeline workers running, of `workers`.
    pub workers_ready: usize,
    /// Pipeline workers started.
    pub workers: usize,
}

/// Why event detection wrote a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    /// The key's first value.
    New,
    /// The value moved beyond the measurement's threshold since the last written one.
    Change,
}

/// One detected event: a value written because it was new or changed.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct EventBody {
    /// New key or change.
    pub kind: EventKind,
    /// What is measured.
    pub measurement: MeasurementName,
    /// The value written before (null for a new key).
    #[schema(required = true)]
    pub previous: Option<f64>,
    /// What it describes.
    pub scope: ScopeName,
    /// The key's tags.
    pub tags: BTreeMap<String, String>,
    /// When the value was measured, Unix ns.
    pub time_ns: u64,
    /// The value written.
    pub value: f64,
}

/// `GET /dashboard/events`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct EventList {
    /// The most recent events, newest first.
    pub events: Vec<EventBody>,
}

/// One AS hop of a path with its current values: the hop's latency, and the values of the
/// routers that handle it (those owning its ingress or egress interface) and of its egress
/// link.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct HopValues {
    /// CO2 per packet of the hop's routers, summed, pg (null: not measured).
    #[schema(required = true)]
    pub co2_pg: Option<f64>,
    /// Interface the packet leaves the AS by (0 at the destination).
    pub egress: u16,
    /// Energy per packet of the hop's routers, summed, nJ (null: not measured).
    #[schema(required = true)]
    pub energy_nj: Option<f64>,
    /// The AS.
    pub ia: String,
    /// Interface the packet enters the AS by (0 at the source).
    pub ingress: u16,
    /// The AS hop's latency (first ingress to last egress), ns (null: not measured).
    #[schema(required = true)]
    pub latency_ns: Option<f64>,
    /// The longest egress queue of the hop's routers on the egress interface, packets.
    #[schema(required = true)]
    pub queue_len: Option<f64>,
    /// Node ids of the routers counted.
    pub routers: Vec<u32>,
    /// Utilisation of the egress link, kbit/s (null: not measured).
    #[schema(required = true)]
    pub utilisation_kbps: Option<f64>,
}

/// `GET /dashboard/hops`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct PathHops {
    /// AS hops in travel direction.
    pub hops: Vec<HopValues>,
    /// Path id (16 hex digits).
    pub path: String,
}
