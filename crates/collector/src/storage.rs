//! The collector's storage on top of `collector-store`: topology changes and quarantined
//! reports written behind to PostgreSQL ([`PgSink`]), event-detected metric values to a
//! time-series store through its buffered writer ([`TsSink`]), history queries against that
//! store ([`HistoryStore`]), and the persisted topology loaded back at start ([`restore`]).

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use collector_store::spool::{DEFAULT_SEGMENT_BYTES, SpoolConfig};
use collector_store::topology::{
    AsRecord, Change, HopRecord, InterfaceRecord, InternalLinkRecord, LinkRecord, PathRecord,
    QuarantineRecord, RouterRecord, Snapshot, TopologyDb, UnknownPathRecord, WriteBehind,
    WriteBehindStats,
};
use collector_store::ts::push_field;
use collector_store::writer::{BufferedWriter, WriterConfig};
use collector_store::{Aggregation, Line, RangeQuery, Sample, StoreError, TimeSeriesStore};
use idint_wire::IsdAsn;
use tokio::runtime::Handle;
use tracing::warn;

use crate::config::StorageConfig;

/// How long a store's queue may take to drain at shutdown.
const FLUSH_TIMEOUT: Duration = Duration::from_secs(10);
use crate::state::{Stores, now_ns};
use collector_core::counters::Quarantined;
use collector_core::metrics::{
    HistoryFuture, HistoryQuery, HistorySeries, HistoryStore, Point, PointSink, Scope, SinkFull,
};
use collector_core::topology::{
    AsInfo, InterfaceInfo, InternalLink, Link, NotPersisted, PathHop, PathInfo, PathOrigin,
    RouterInfo, TopologyChange, TopologyHandle, TopologySink, UnknownPath,
};

/// Why storage could not be set up.
#[derive(Debug)]
pub struct StorageError(pub String);

impl std::fmt::Display for StorageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for StorageError {}

/// [`HistoryStore`] over a [`TimeSeriesStore`].
struct History<S>(S);

impl<S: TimeSeriesStore> HistoryStore for History<S> {
    fn query(&self, q: HistoryQuery) -> HistoryFuture<'_> {
        Box::pin(async move {
            let rq = RangeQuery {
                measurement: scope_name(q.scope).into(),
                field: q.measurement.name().into(),
                tags: q.tags,
                start_ns: q.from_ns,
                end_ns: q.to_ns,
                step_ns: q.step_ns,
                aggregation: Aggregation::parse(&q.agg).unwrap_or_default(),
            };
            let series = self.0.query_range(&rq).await.map_err(|e| e.to_string())?;
            Ok(series
                .into_iter()
                .map(|s| HistorySeries {
                    tags: s.tags,
                    points: s.points,
                })
                .collect())
        })
    }
}

/// The measurement name of a scope in the time-series store.
pub fn scope_name(s: Scope) -> &'static str {
    match s {
        Scope::Hop => "hop",
        Scope::Router => "router",
        Scope::Link => "link",
        Scope::Queue => "queue",
        Scope::Path => "path",
    }
}

/// A metric value as a time-series sample: measurement = scope, field = measurement,
/// tags = the key's ids.
pub fn sample_of(p: &Point) -> Sample {
    Sample {
        measurement: Cow::Borrowed(scope_name(p.key.scope)),
        tags: p
            .key
            .tags()
            .into_iter()
            .map(|(k, v)| (Cow::Borrowed(k), v))
            .collect(),
        field: Cow::Borrowed(p.key.measurement.name()),
        value: p.value,
        time_ns: p.time_ns,
    }
}

/// A [`Point`] as a time-series line (the point type lives in `collector-core`, the line
/// trait in `collector-store`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PointLine(pub Point);

impl From<Point> for PointLine {
    fn from(p: Point) -> Self {
        PointLine(p)
    }
}

impl std::ops::Deref for PointLine {
    type Target = Point;

    fn deref(&self) -> &Point {
        &self.0
    }
}

/// A point is written as the line of its [`sample_of`] sample, rendered straight from the key
/// (no sample, no allocation: the pipeline hands points over by copy).
impl Line for PointLine {
    fn check(&self) -> Result<(), StoreError> {
        if self.value.is_finite() {
            Ok(())
        } else {
            Err(StoreError::Rejected(format!(
                "non-finite value for {}.{}",
                scope_name(self.key.scope),
                self.key.measurement.name()
            )))
        }
    }

    fn write_line(&self, out: &mut String) {
        use std::fmt::Write as _;
        out.push_str(scope_name(self.key.scope));
        // Tag values of ids are never empty and never need escaping.
        self.key.for_each_tag(|k, v| {
            let _ = write!(out, ",{k}={v}");
        });
        push_field(out, self.key.measurement.name(), self.value, self.time_ns);
    }
}

/// [`PointSink`] over a [`BufferedWriter`] of points.
pub struct TsSink {
    writer: Arc<BufferedWriter<PointLine>>,
    handle: Handle,
}

/// A write-behind queue metric: name, kind, help and how to read it.
type QueueMetric = (
    &'static str,
    &'static str,
    &'static str,
    fn(&WriteBehindStats) -> u64,
);

/// Appends one metric (`kind`: counter or gauge) to a Prometheus text exposition: one line
/// per (labels, value).
fn metric(out: &mut String, name: &str, kind: &str, help: &str, values: &[(&str, u64)]) {
    use std::fmt::Write as _;
    let _ = writeln!(
        out,
        "# HELP idint_collector_{name} {help}\n# TYPE idint_collector_{name} {kind}"
    );
    for (labels, v) in values {
        let _ = writeln!(out, "idint_collector_{name}{labels} {v}");
    }
}

impl PointSink for TsSink {
    fn prometheus(&self, out: &mut String) {
        let st = self.writer.stats();
        let rows: [(&str, &str, &str, u64); 9] = [
            (
                "ts_accepted_total",
                "counter",
                "Samples the time-series writer took",
                st.accepted,
            ),
            (
                "ts_written_total",
                "counter",
                "Samples written to the time-series store (durable)",
                st.written,
            ),
            (
                "ts_buffered",
                "gauge",
                "Samples waiting in memory for the time-series store",
                st.pending,
            ),
            (
                "ts_spooled",
                "gauge",
                "Samples waiting on disk for the time-series store",
                st.spooled,
            ),
            (
                "ts_spooled_bytes",
                "gauge",
                "Bytes of samples waiting on disk",
                st.spooled_bytes,
            ),
            (
                "ts_spilled_total",
                "counter",
                "Samples taken to disk because memory was full",
                st.spilled,
            ),
            (
                "ts_dropped_total",
                "counter",
                "Samples refused: memory and spool full (lost)",
                st.refused_full,
            ),
            (
                "ts_failed_total",
                "counter",
                "Samples the time-series store refused outright (not retried)",
                st.failed,
            ),
            (
                "ts_retries_total",
                "counter",
                "Time-series writes retried after a transient failure",
                st.retries,
            ),
        ];
        for (name, kind, help, v) in rows {
            metric(out, name, kind, help, &[("", v)]);
        }
    }

    fn write(&self, points: &[Point]) -> Result<(), SinkFull> {
        self.writer
            .try_write_as(points)
            .map_err(|e| SinkFull(e.to_string()))
    }

    fn flush(&self) {
        let w = self.writer.clone();
        let left = self
            .handle
            .block_on(async move { w.close(FLUSH_TIMEOUT).await });
        if left > 0 {
            warn!(
                pending = left,
                "time-series samples not written at shutdown"
            );
        }
    }
}

/// [`TopologySink`] over two [`WriteBehind`] queues to PostgreSQL: topology changes (an
/// import that does not fit fails) and quarantined reports (lossy: what does not fit is
/// dropped and counted).
pub struct PgSink {
    changes: Arc<WriteBehind>,
    quarantine: Arc<WriteBehind>,
    handle: Handle,
}

impl PgSink {
    /// The topology changes' queue.
    pub fn changes(&self) -> &WriteBehind {
        &self.changes
    }

    /// The quarantined reports' queue.
    pub fn quarantine(&self) -> &WriteBehind {
        &self.quarantine
    }
}

impl TopologySink for PgSink {
    fn prometheus(&self, out: &mut String) {
        let queues = [
            ("topology", self.changes.stats()),
            ("quarantine", self.quarantine.stats()),
        ];
        let rows: [QueueMetric; 5] = [
            (
                "store_queue_accepted_total",
                "counter",
                "Changes a PostgreSQL write-behind queue took",
                |s| s.accepted,
            ),
            (
                "store_queue_written_total",
                "counter",
                "Changes written to PostgreSQL",
                |s| s.written,
            ),
            (
                "store_queue_pending",
                "gauge",
                "Changes waiting for PostgreSQL",
                |s| s.pending,
            ),
            (
                "store_queue_refused_total",
                "counter",
                "Changes refused: queue full",
                |s| s.refused,
            ),
            (
                "store_queue_failed_total",
                "counter",
                "Changes PostgreSQL refused outright",
                |s| s.failed,
            ),
        ];
        for (name, kind, help, get) in rows {
            let values = queues.map(|(queue, st)| (queue, get(&st)));
            let values = values.map(|(queue, v)| (format!("{{queue=\"{queue}\"}}"), v));
            let values: Vec<(&str, u64)> = values.iter().map(|(l, v)| (l.as_str(), *v)).collect();
            metric(out, name, kind, help, &values);
        }
    }

    fn changed(&self, changes: &[TopologyChange]) -> Result<(), NotPersisted> {
        let records: Vec<Change> = changes.iter().filter_map(to_change).collect();
        if records.is_empty() {
            return Ok(());
        }
        self.changes.send_all(records).map_err(|e| {
            warn!("topology write-behind queue full: changes not persisted");
            NotPersisted(e.to_string())
        })
    }

    fn quarantined(&self, q: &Quarantined) {
        // Refusals are counted by the queue (`idint_collector_store_queue_refused_total`).
        let _ = self.quarantine.send(Change::Quarantine(QuarantineRecord {
            received_ns: q.time_ns,
            reason: q.reason.name().into(),
            detail: format!(
                "{} (exporter {} router {}, {} -> {})",
                q.detail, q.exporter_ia, q.exporter_router, q.src_ia, q.dst_ia
            ),
            report: hex::decode(&q.report_hex).unwrap_or_default(),
        }));
    }

    fn flush(&self) {
        for (name, wb) in [
            ("topology changes", &self.changes),
            ("quarantine", &self.quarantine),
        ] {
            let wb = wb.clone();
            let left = self
                .handle
                .block_on(async move { wb.close(FLUSH_TIMEOUT).await });
            if left > 0 {
                warn!(pending = left, "{name} not written at shutdown");
            }
        }
    }
}

/// The record of a topology change.
pub fn to_change(c: &TopologyChange) -> Option<Change> {
    Some(match c {
        TopologyChange::As { ia, info } => {
            let node_of = |name: &Option<String>| {
                name.as_ref()
                    .and_then(|n| info.routers.get(n))
                    .and_then(|r| r.node_id)
            };
            Change::As(AsRecord {
                ia: ia.to_u64(),
                core: info.core,
                mtu: None,
                routers: info
                    .routers
                    .values()
                    .map(|r| RouterRecord {
                        node_id: r.node_id,
                        name: r.name.clone(),
                    })
                    .collect(),
                interfaces: info
                    .interfaces
                    .values()
                    .map(|i| InterfaceRecord {
                        ifid: i.ifid,
                        node_id: node_of(&i.router),
                        router: i.router.clone(),
                        link_type: i.link_type.clone().unwrap_or_default(),
                        neighbor_ia: i.neighbor_ia.map(|n| n.to_u64()),
                        neighbor_ifid: i.neighbor_if,
                    })
                    .collect(),
            })
        }
        TopologyChange::Link(l) => Change::Link(
            LinkRecord {
                a: (l.a.to_u64(), l.a_if),
                b: (l.b.to_u64(), l.b_if),
            }
            .canonical(),
        ),
        TopologyChange::InternalLink(l) => Change::InternalLink(InternalLinkRecord {
            ia: l.ia.to_u64(),
            from_node: l.from_node,
            to_node: l.to_node,
        }),
        TopologyChange::Path(p) => Change::Path(PathRecord {
            fingerprint: p.id,
            hops: p
                .hops
                .iter()
                .map(|h| HopRecord {
                    ia: h.ia.to_u64(),
                    ingress: h.ingress,
                    egress: h.egress,
                })
                .collect(),
            first_seen_ns: now_ns(),
            learned: p.origin == PathOrigin::Learned,
        }),
        TopologyChange::UnknownPath(u) => Change::UnknownPath(UnknownPathRecord {
            fingerprint: u.id,
            detail: serde_json::to_string(u).ok()?,
            first_seen_ns: now_ns(),
        }),
    })
}

/// The changes that rebuild a stored topology (see
/// [`collector_core::topology::TopologyHandle::restore`]). Stored paths come back with the origin
/// they were stored with.
pub fn restore(s: &Snapshot) -> Vec<TopologyChange> {
    let mut out = Vec::new();
    for a in &s.ases {
        let ia = IsdAsn::from_u64(a.ia);
        let mut info = AsInfo {
            core: a.core,
            ..AsInfo::default()
        };
        for r in &a.routers {
            info.routers.insert(
                r.name.clone(),
                RouterInfo {
                    name: r.name.clone(),
                    node_id: r.node_id,
                    interfaces: Vec::new(),
                },
            );
        }
        for i in &a.interfaces {
            // By name; rows written before interfaces named their router, by node id.
            let router = i
                .router
                .clone()
                .filter(|n| info.routers.contains_key(n))
                .or_else(|| {
                    let n = i.node_id?;
                    a.routers
                        .iter()
                        .find(|r| r.node_id == Some(n))
                        .map(|r| r.name.clone())
                });
            if let Some(r) = router.as_ref().and_then(|n| info.routers.get_mut(n)) {
                r.interfaces.push(i.ifid);
            }
            info.interfaces.insert(
                i.ifid,
                InterfaceInfo {
                    ifid: i.ifid,
                    router,
                    neighbor_ia: i.neighbor_ia.map(IsdAsn::from_u64),
                    neighbor_if: i.neighbor_ifid,
                    link_type: (!i.link_type.is_empty()).then(|| i.link_type.clone()),
                },
            );
        }
        out.push(TopologyChange::As { ia, info });
    }
    for l in &s.links {
        out.push(TopologyChange::Link(Link::new(
            (IsdAsn::from_u64(l.a.0), l.a.1),
            (IsdAsn::from_u64(l.b.0), l.b.1),
        )));
    }
    for l in &s.internal_links {
        out.push(TopologyChange::InternalLink(InternalLink {
            ia: IsdAsn::from_u64(l.ia),
            from_node: l.from_node,
            to_node: l.to_node,
        }));
    }
    for p in &s.paths {
        let hops: Vec<PathHop> = p
            .hops
            .iter()
            .map(|h| PathHop {
                ia: IsdAsn::from_u64(h.ia),
                ingress: h.ingress,
                egress: h.egress,
            })
            .collect();
        let (Some(f), Some(l)) = (hops.first(), hops.last()) else {
            continue;
        };
        // The id is recomputed from the hops: rows written before ids covered every hop's AS
        // come back under the id a new import of the same path gets.
        out.push(TopologyChange::Path(PathInfo {
            id: collector_core::topology::path_id_of(&hops),
            src: f.ia,
            dst: l.ia,
            hops: hops.clone(),
            origin: if p.learned {
                PathOrigin::Learned
            } else {
                PathOrigin::Imported
            },
        }));
    }
    for u in &s.unknown_paths {
        if let Ok(u) = serde_json::from_str::<UnknownPath>(&u.detail) {
            out.push(TopologyChange::UnknownPath(u));
        }
    }
    out
}

/// Follows topology changes that other collector instances commit to the database: after
/// each announcement (several within [`RELOAD_DEBOUNCE`] count as one) the stored topology is
/// loaded and merged into `topology`. Runs until `stop` turns true.
pub async fn follow_topology(
    db: TopologyDb,
    topology: Arc<TopologyHandle>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    let mut listener = loop {
        match db.listen().await {
            Ok(l) => break l,
            Err(e) => {
                warn!(error = %e, "cannot listen for topology changes; retrying");
                tokio::select! {
                    _ = tokio::time::sleep(RELOAD_RETRY) => {}
                    _ = stop.changed() => return,
                }
            }
        }
    };
    loop {
        tokio::select! {
            r = listener.changed() => {
                if let Err(e) = r {
                    warn!(error = %e, "topology listener failed");
                    tokio::time::sleep(RELOAD_RETRY).await;
                    continue;
                }
            }
            _ = stop.changed() => return,
        }
        tokio::time::sleep(RELOAD_DEBOUNCE).await;
        match db.load().await {
            Ok(snap) => topology.restore(restore(&snap).iter()),
            Err(e) => warn!(error = %e, "loading the topology other instances changed failed"),
        }
    }
}

/// Announcements within this time after the first cause one reload.
const RELOAD_DEBOUNCE: Duration = Duration::from_millis(200);
/// Wait before listening again after a failure.
const RELOAD_RETRY: Duration = Duration::from_secs(1);

/// Connects the configured stores (on the current tokio runtime): PostgreSQL with migrations
/// applied and the stored topology loaded, the time-series store with its buffered writer.
pub async fn connect(cfg: &StorageConfig) -> Result<Stores, StorageError> {
    let handle = Handle::current();
    let mut stores = Stores::default();
    if let Some(url) = &cfg.postgres_url {
        let db = TopologyDb::connect(url, cfg.quarantine_rows)
            .await
            .map_err(|e| StorageError(format!("PostgreSQL: {e}")))?;
        let snap = db
            .load()
            .await
            .map_err(|e| StorageError(format!("PostgreSQL load: {e}")))?;
        stores.restore = restore(&snap);
        stores.topology_db = Some(db.clone());
        stores.topology = Some(Arc::new(PgSink {
            changes: Arc::new(WriteBehind::spawn(db.clone(), cfg.topology_queue)),
            quarantine: Arc::new(WriteBehind::spawn(db, cfg.quarantine_queue)),
            handle: handle.clone(),
        }));
    }
    let wcfg = WriterConfig {
        capacity: cfg.buffer_samples,
        spool: cfg.spool_dir.as_ref().map(|dir| SpoolConfig {
            dir: dir.clone(),
            max_bytes: cfg.spool_bytes,
            segment_bytes: DEFAULT_SEGMENT_BYTES,
        }),
        ..WriterConfig::default()
    };
    let spawn_error = |e: std::io::Error| StorageError(format!("time-series spool: {e}"));
    let url = || {
        cfg.timeseries_url
            .clone()
            .ok_or_else(|| StorageError("storage.timeseries_url missing".into()))
    };
    match cfg.timeseries.as_str() {
        "none" => {}
        "victoria" => {
            let cluster = cfg
                .victoria_cluster()
                .map_err(|e| StorageError(e.to_string()))?;
            let v = match cluster {
                Some(c) => collector_store::victoria::Victoria::cluster(
                    &c.insert_url,
                    &c.select_url,
                    c.tenant,
                ),
                None => collector_store::victoria::Victoria::new(&url()?, false),
            }
            .map_err(|e| StorageError(format!("VictoriaMetrics: {e}")))?;
            stores.history = Some(Arc::new(History(v.clone())));
            stores.points = Some(Arc::new(TsSink {
                writer: Arc::new(BufferedWriter::spawn(v, wcfg).map_err(spawn_error)?),
                handle,
            }));
        }
        "influx" => {
            let i = collector_store::influx::Influx::connect(&url()?, &cfg.influx_db)
                .await
                .map_err(|e| StorageError(format!("InfluxDB: {e}")))?;
            stores.history = Some(Arc::new(History(i.clone())));
            stores.points = Some(Arc::new(TsSink {
                writer: Arc::new(BufferedWriter::spawn(i, wcfg).map_err(spawn_error)?),
                handle,
            }));
        }
        o => {
            return Err(StorageError(format!(
                "storage.timeseries {o:?}: victoria, influx or none"
            )));
        }
    }
    stores.wait_ms = cfg.wait_ms;
    Ok(stores)
}

#[cfg(test)]
mod tests {
    use super::*;
    use collector_core::metrics::{Measurement, MetricKey};
    use collector_store::ts::line_protocol;

    #[test]
    fn a_point_renders_as_its_sample() {
        let ia: IsdAsn = "1-ff00:0:110".parse().unwrap();
        let keys = [
            MetricKey::hop(0x00ab_cdef_0123_4567, 3, Measurement::LatencyNs),
            MetricKey::router(ia, 7, Measurement::EnergyNj),
            MetricKey::link(ia, 41, Measurement::UtilisationKbps),
            MetricKey::queue(ia, 7, 41),
            MetricKey::path(u64::MAX, Measurement::Co2Pg),
        ];
        for (i, key) in keys.into_iter().enumerate() {
            let p = Point {
                key,
                value: 1.25 + i as f64 * 1e9,
                time_ns: 1_700_000_000_123_456_789,
            };
            let (mut direct, mut via_sample) = (String::new(), String::new());
            line_protocol(&mut direct, &[PointLine(p)]).unwrap();
            line_protocol(&mut via_sample, &[sample_of(&p)]).unwrap();
            assert_eq!(direct, via_sample);
            assert!(direct.ends_with(" 1700000000123456789\n"), "{direct}");
        }
        let bad = Point {
            key: keys[0],
            value: f64::INFINITY,
            time_ns: 0,
        };
        let mut out = String::new();
        assert!(line_protocol(&mut out, &[PointLine(bad)]).is_err());
        assert!(out.is_empty());
    }
}
