//! The API's response bodies, each with its OpenAPI schema.
//!
//! `collector-core` stays free of web dependencies: what its types serialise as is mirrored
//! here, with `From` conversions. Fields are declared in alphabetical order, the order the
//! answers have always had on the wire (they were `serde_json` maps, which sort their keys).
//! An `Option` field is always present, `null` when unknown: its schema marks it required.

use std::collections::BTreeMap;

use serde::Serialize;
use utoipa::ToSchema;

use collector_core::counters::Quarantined;
use collector_core::metrics::{Latest, Measurement, MetricKey, Scope};

mod dashboard;
mod topology;

pub use dashboard::*;
pub use topology::*;

/// A path id as JSON has it: 16 hex digits.
pub(crate) fn hex_id(id: u64) -> String {
    format!("{id:016x}")
}

/// `/health`'s and `/ready`'s state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// The process answers (`/health`).
    Ok,
    /// Every pipeline worker runs (`/ready`).
    Ready,
}

/// `GET /health`, `GET /ready`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct StatusBody {
    /// `ok` or `ready`.
    pub status: Status,
}

/// `POST /api/v1/reports` (202).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Queued {
    /// Reports of the batch queued for verification.
    pub queued_reports: usize,
}

/// What a metric describes (mirrors `collector_core::metrics::Scope`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ScopeName {
    /// One AS hop of one path.
    Hop,
    /// A border router.
    Router,
    /// An interface's link (egress side).
    Link,
    /// An egress queue of a router.
    Queue,
    /// A path.
    Path,
}

impl From<Scope> for ScopeName {
    fn from(s: Scope) -> Self {
        match s {
            Scope::Hop => ScopeName::Hop,
            Scope::Router => ScopeName::Router,
            Scope::Link => ScopeName::Link,
            Scope::Queue => ScopeName::Queue,
            Scope::Path => ScopeName::Path,
        }
    }
}

/// What is measured (mirrors `collector_core::metrics::Measurement`, named as
/// `Measurement::name` names it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
pub enum MeasurementName {
    /// Latency, ns.
    #[serde(rename = "latency_ns")]
    LatencyNs,
    /// Link utilisation, kbit/s.
    #[serde(rename = "utilisation_kbps")]
    UtilisationKbps,
    /// Queue length, packets.
    #[serde(rename = "queue_len")]
    QueueLen,
    /// Forwarding energy per packet, nJ.
    #[serde(rename = "energy_nj")]
    EnergyNj,
    /// CO2 per packet, pg.
    #[serde(rename = "co2_pg")]
    Co2Pg,
}

impl From<Measurement> for MeasurementName {
    fn from(m: Measurement) -> Self {
        match m {
            Measurement::LatencyNs => MeasurementName::LatencyNs,
            Measurement::UtilisationKbps => MeasurementName::UtilisationKbps,
            Measurement::QueueLen => MeasurementName::QueueLen,
            Measurement::EnergyNj => MeasurementName::EnergyNj,
            Measurement::Co2Pg => MeasurementName::Co2Pg,
        }
    }
}

/// The tags of a metric key (`ia`, `node`, `ifid`, `path`, `hop`: those its scope has).
fn tags_of(k: &MetricKey) -> BTreeMap<String, String> {
    k.tags()
        .into_iter()
        .map(|(t, v)| (t.to_owned(), v))
        .collect()
}

/// The current value of one metric key.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct LatestValue {
    /// What is measured.
    pub measurement: MeasurementName,
    /// Values seen.
    pub samples: u64,
    /// What it describes.
    pub scope: ScopeName,
    /// The key's tags.
    pub tags: BTreeMap<String, String>,
    /// When the value was measured, Unix ns.
    pub time_ns: u64,
    /// The latest value (null if not finite).
    pub value: f64,
}

impl LatestValue {
    /// A key's latest value.
    pub fn new(k: &MetricKey, l: &Latest) -> Self {
        LatestValue {
            measurement: k.measurement.into(),
            samples: l.samples,
            scope: k.scope.into(),
            tags: tags_of(k),
            time_ns: l.time_ns,
            value: l.value,
        }
    }
}

/// `GET /api/v1/telemetry`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TelemetryList {
    /// Current values of the matching keys.
    pub telemetry: Vec<LatestValue>,
    /// Items matching in all (this page may hold fewer).
    pub total: usize,
    /// The `offset` of the next page, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_offset: Option<usize>,
}

/// Where a history answer comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
pub enum HistorySource {
    /// The values memory keeps.
    #[serde(rename = "memory (values written by event detection)")]
    Memory,
    /// The time-series store.
    #[serde(rename = "time-series store")]
    Store,
}

/// The values of one metric key over time.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Series {
    /// What is measured.
    pub measurement: MeasurementName,
    /// `[Unix ns, value]` pairs in time order.
    #[schema(value_type = Vec<Vec<f64>>)]
    pub points: Vec<(u64, f64)>,
    /// What it describes.
    pub scope: ScopeName,
    /// The key's tags.
    pub tags: BTreeMap<String, String>,
}

impl Series {
    /// A key's series from memory.
    pub fn of_key(k: &MetricKey, points: Vec<(u64, f64)>) -> Self {
        Series {
            measurement: k.measurement.into(),
            points,
            scope: k.scope.into(),
            tags: tags_of(k),
        }
    }
}

/// `GET /api/v1/telemetry/history`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct History {
    /// Start, Unix ns.
    pub from: u64,
    /// One series per matching key.
    pub series: Vec<Series>,
    /// Series matching in all (this page may hold fewer).
    pub total: usize,
    /// The `offset` of the next page of series, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_offset: Option<usize>,
    /// Where the values come from.
    pub source: HistorySource,
    /// End, Unix ns.
    pub to: u64,
}

/// Where an SLA check took values from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
pub enum SlaSource {
    /// The time-series store (before what memory keeps).
    #[serde(rename = "time-series store")]
    Store,
    /// Memory (since the process started).
    #[serde(rename = "memory")]
    Memory,
}

/// A value above the bound.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Violation {
    /// When, Unix ns.
    pub time_ns: u64,
    /// The value.
    pub value: f64,
}

/// A time window, Unix ns.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Window {
    /// Start.
    pub from: u64,
    /// End.
    pub to: u64,
}

/// `GET /api/v1/sla`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SlaCheck {
    /// Whether values were seen over the whole window (`covered_from` is its start).
    pub complete: bool,
    /// No violation, and the current value (if measured in the window) within the bound.
    pub compliant: bool,
    /// Values from here on (Unix ns) were seen; before it nothing is known.
    pub covered_from: u64,
    /// The latest value, if any.
    #[schema(required = true)]
    pub current: Option<f64>,
    /// The bound.
    pub max: f64,
    /// The measurement the objective names.
    pub measurement: MeasurementName,
    /// Path id (16 hex digits).
    pub path: String,
    /// Values judged.
    pub samples: usize,
    /// Where they came from, oldest first.
    pub sources: Vec<SlaSource>,
    /// Values above the bound.
    pub violations: Vec<Violation>,
    /// The window judged.
    pub window: Window,
}

/// A rejected report kept for operators (mirrors `Quarantined`).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct QuarantinedBody {
    /// Details.
    pub detail: String,
    /// Destination ISD-AS.
    pub dst_ia: String,
    /// Exporter ISD-AS.
    pub exporter_ia: String,
    /// Exporter router id.
    pub exporter_router: u32,
    /// Why it was rejected (a reject reason name).
    pub reason: String,
    /// The report, protobuf-encoded, hex: its first bytes (see `report_len`).
    pub report_hex: String,
    /// The report's encoded length, bytes (more than `report_hex` holds if it was cut).
    pub report_len: usize,
    /// Source ISD-AS.
    pub src_ia: String,
    /// When it was rejected, Unix ns.
    pub time_ns: u64,
}

impl From<&Quarantined> for QuarantinedBody {
    fn from(q: &Quarantined) -> Self {
        QuarantinedBody {
            detail: q.detail.clone(),
            dst_ia: q.dst_ia.clone(),
            exporter_ia: q.exporter_ia.clone(),
            exporter_router: q.exporter_router,
            reason: q.reason.name().to_owned(),
            report_hex: q.report_hex.clone(),
            report_len: q.report_len,
            src_ia: q.src_ia.clone(),
            time_ns: q.time_ns,
        }
    }
}

/// `GET /api/v1/quarantine`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct QuarantineList {
    /// Quarantined reports pushed out by newer ones.
    pub evicted: u64,
    /// Rejected reports by reason.
    pub rejected: BTreeMap<String, u64>,
    /// Quarantined reports, newest first.
    pub reports: Vec<QuarantinedBody>,
}

/// `POST /api/v1/admin/topology`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TopologyImported {
    /// Topology records added or changed.
    pub changes: usize,
}

/// `POST /api/v1/admin/paths`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct PathsImported {
    /// Ids of the imported paths (16 hex digits), in the order given.
    pub paths: Vec<String>,
}

/// `POST /api/v1/admin/keys`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct KeysImported {
    /// Keys imported.
    pub imported: usize,
    /// This collector's ISD-AS (the keys' destination).
    pub local_ia: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use collector_core::counters::RejectReason;
    use collector_core::topology::{InterfaceInfo, PathHop, PathInfo, PathOrigin, UnknownPath};

    /// The mirrors name what the core types' serde names them.
    #[test]
    fn mirrors_serialise_as_the_core_types() {
        let same = |a: serde_json::Value, b: serde_json::Value| assert_eq!(a, b);
        for s in [
            Scope::Hop,
            Scope::Router,
            Scope::Link,
            Scope::Queue,
            Scope::Path,
        ] {
            same(json(&ScopeName::from(s)), json(&s));
        }
        for m in Measurement::ALL {
            same(json(&MeasurementName::from(m)), m.name().into());
        }
        for o in [PathOrigin::Imported, PathOrigin::Learned] {
            same(json(&PathOriginName::from(o)), json(&o));
        }
        for r in RejectReason::ALL {
            same(r.name().into(), json(&r));
        }
        let ia: idint_wire::IsdAsn = "1-ff00:0:110".parse().unwrap();
        let p = PathInfo {
            id: 0x0123_4567_89ab_cdef,
            src: ia,
            dst: ia,
            hops: vec![PathHop {
                ia,
                ingress: 0,
                egress: 2,
            }],
            origin: PathOrigin::Learned,
        };
        let mut want = json(&p);
        want["telemetry"] = serde_json::json!([]);
        same(json(&PathBody::new(&p, Vec::new())), want);
        let i = InterfaceInfo {
            ifid: 3,
            router: Some("br1".into()),
            neighbor_ia: Some(ia),
            neighbor_if: None,
            link_type: None,
        };
        same(json(&InterfaceBody::from(&i)), json(&i));
        let u = UnknownPath {
            id: 7,
            src: ia,
            dst: ia,
            interfaces: vec![(1, 2)],
            reports: 4,
        };
        same(json(&UnknownPathBody::from(&u)), json(&u));
    }

    fn json(v: &impl Serialize) -> serde_json::Value {
        serde_json::to_value(v).unwrap()
    }
}
