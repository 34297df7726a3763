//! The JSON summary of a run, printed at exit.

use std::sync::Arc;

use crate::config::Config;
use crate::distribute::DistStats;
use crate::export::ExportStats;
use crate::stats::{Snapshot, WorkerStats};
use dpdk::Port;

/// What the JSON summary at exit is made of.
pub(super) struct SummaryParts<'a> {
    /// The configuration.
    pub config: &'a Config,
    /// The ports.
    pub ports: &'a [Port],
    /// Every worker's counters.
    pub stats: &'a [Arc<WorkerStats>],
    /// Number of workers.
    pub workers: usize,
    /// Whether software distribution ran.
    pub software: bool,
    /// The distributor's counters.
    pub dist_stats: &'a DistStats,
    /// The exporter's counters.
    pub export_stats: &'a ExportStats,
    /// How long the router ran.
    pub elapsed_s: f64,
    /// Whether a signal stopped it.
    pub signalled: bool,
}

/// The JSON summary at exit: counters of every worker summed, ports, distributor, export.
pub(super) fn summary_json(p: &SummaryParts<'_>) -> serde_json::Value {
    let elapsed = p.elapsed_s;
    let snap = Snapshot::sum(p.stats.iter().map(|s| &**s));
    let mut port_json = Vec::new();
    for (plan, port) in p.config.ports.iter().zip(p.ports.iter()) {
        let st = port.stats().unwrap_or_default();
        port_json.push(serde_json::json!({
            "device": plan.device,
            "driver": port.caps().driver,
            "interfaces": plan.interfaces.iter().map(|i| i.id).collect::<Vec<_>>(),
            "internal": plan.internal,
            "stats": st,
        }));
    }
    let mut summary = snap.to_json();
    summary["router_id"] = p.config.router_id.clone().into();
    summary["workers"] = p.workers.into();
    summary["distribution"] = if p.software { "software" } else { "queues" }.into();
    if p.software {
        let mut d = serde_json::Map::new();
        for (k, v) in p.dist_stats.named() {
            d.insert(k.into(), v.into());
        }
        summary["distributor"] = d.into();
    }
    summary["elapsed_s"] = elapsed.into();
    summary["stopped_by_signal"] = p.signalled.into();
    summary["rx_mpps"] = (snap.io.rx_frames as f64 / elapsed.max(1e-9) / 1e6).into();
    let passed = snap.dp.forwarded + snap.dp.delivered + snap.dp.to_sibling;
    summary["forwarded_mpps"] = (passed as f64 / elapsed.max(1e-9) / 1e6).into();
    summary["ports"] = port_json.into();
    let mut ex = serde_json::Map::new();
    for (k, v) in p.export_stats.named() {
        ex.insert(k.into(), v.into());
    }
    summary["export"] = ex.into();
    summary
}
