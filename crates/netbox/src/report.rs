//! What the box reports: the collector's API asked as a user would, and the human summary.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::api::Collector;
use crate::checks::Checks;
use crate::paths::{BoxPath, PathKind};
use crate::plan::Network;

/// Asks the collector what a user would: the paths of each AS pair the hosts used, the
/// ranking, one path's per-hop latency history, an SLA check.
pub fn query_api(c: &Collector, net: &Network, paths: &[BoxPath], checks: &mut Checks) -> Value {
    let mut pairs = BTreeMap::new();
    let mut answers = serde_json::Map::new();
    for p in paths {
        let (s, d) = (
            net.ases[p.src].ia.to_string(),
            net.ases[p.dst].ia.to_string(),
        );
        *pairs.entry((s, d)).or_insert(0usize) += 1;
    }
    let mut measured_pairs = 0;
    let mut pair_answers = Vec::new();
    for ((s, d), n) in &pairs {
        let got = c.get(&format!("/api/v1/paths?src={s}&dst={d}"));
        let listed = got
            .as_ref()
            .ok()
            .and_then(|v| v["paths"].as_array().map(Vec::len))
            .unwrap_or(0);
        let measured = got
            .as_ref()
            .ok()
            .and_then(|v| v["paths"].as_array().cloned())
            .map(|ps| {
                ps.iter()
                    .filter(|p| p["telemetry"].as_array().is_some_and(|t| !t.is_empty()))
                    .count()
            })
            .unwrap_or(0);
        if measured > 0 {
            measured_pairs += 1;
        }
        pair_answers.push(
            json!({"src": s, "dst": d, "paths": listed, "measured": measured, "expected": n}),
        );
    }
    checks.add(
        "the API lists every AS pair's paths with telemetry",
        measured_pairs == pairs.len(),
        format!("{measured_pairs} of {} pairs measured", pairs.len()),
    );
    answers.insert("pairs".into(), json!(pair_answers));

    // The peering pair has two paths: the ranking orders them.
    let peering = paths.iter().find(|p| p.kind == PathKind::Peering).map(|p| {
        (
            net.ases[p.src].ia.to_string(),
            net.ases[p.dst].ia.to_string(),
        )
    });
    if let Some((s, d)) = peering {
        let rank = c.get(&format!(
            "/api/v1/paths/rank?src={s}&dst={d}&objective=latency"
        ));
        let ranked: Vec<Value> = rank
            .as_ref()
            .ok()
            .and_then(|v| v["paths"].as_array().cloned())
            .unwrap_or_default();
        let valued = ranked.iter().filter(|p| p["value"].is_number()).count();
        checks.add(
            &format!("ranking {s} -> {d} by latency orders both paths"),
            ranked.len() == 2 && valued == 2,
            format!("{} ranked, {valued} with a value", ranked.len()),
        );
        answers.insert(
            "ranking".into(),
            rank.unwrap_or_else(|e| json!({"error": e})),
        );
        if let Some(best) = ranked.first().and_then(|p| p["path"].as_str()) {
            let hist = c.get(&format!(
                "/api/v1/telemetry/history?scope=hop&measurement=latency_ns&path={best}"
            ));
            let points: usize = hist
                .as_ref()
                .ok()
                .and_then(|v| v["series"].as_array().cloned())
                .map(|ss| {
                    ss.iter()
                        .map(|s| s["points"].as_array().map_or(0, Vec::len))
                        .sum()
                })
                .unwrap_or(0);
            checks.add(
                "per-hop latency history of the best path",
                points > 0,
                format!("{points} points"),
            );
            answers.insert("history_points".into(), json!(points));
            let sla = c.get(&format!(
                "/api/v1/sla?path={best}&objective=latency&max=1000000000&window_s=60"
            ));
            let ok = sla.as_ref().is_ok_and(|v| {
                v["samples"].as_u64().is_some_and(|n| n > 0) && v["compliant"].is_boolean()
            });
            checks.add(
                "SLA check of the best path (latency <= 1 s over 60 s)",
                ok,
                format!(
                    "{:?}",
                    sla.as_ref().map(|v| (&v["samples"], &v["compliant"]))
                ),
            );
            answers.insert("sla".into(), sla.unwrap_or_else(|e| json!({"error": e})));
        }
    }
    Value::Object(answers)
}

/// The human part of the summary.
pub fn print_summary(s: &Value) {
    if let Some(t) = s["timings_ms"].as_object() {
        let line: Vec<String> = t
            .iter()
            .map(|(k, v)| format!("{k} {:.1} s", v.as_f64().unwrap_or(0.0) / 1000.0))
            .collect();
        println!("timings: {}", line.join(", "));
    }
    println!(
        "routers' CPU with only probes running: {:.1}% of one CPU (all routers together)",
        s["routers_idle_cpu_percent"].as_f64().unwrap_or(0.0)
    );
    println!(
        "collector: {} reports accepted, {} points written, rejected {}",
        s["collector"]["accepted"], s["collector"]["points_written"], s["collector"]["rejected"]
    );
    if let Some(pairs) = s["api"]["pairs"].as_array() {
        let measured = pairs
            .iter()
            .filter(|p| p["measured"].as_u64() > Some(0))
            .count();
        println!(
            "API: {measured} of {} AS pairs with measured paths",
            pairs.len()
        );
    }
    if let Some(r) = s["api"]["ranking"]["paths"].as_array() {
        for p in r {
            let hops: Vec<String> = p["hops"]
                .as_array()
                .map(|hs| {
                    hs.iter()
                        .map(|h| h["ia"].as_str().unwrap_or("?").to_string())
                        .collect()
                })
                .unwrap_or_default();
            println!(
                "  rank {} path {} latency {} ns: {}",
                p["rank"],
                p["path"],
                p["value"],
                hops.join(" > ")
            );
        }
    }
    if let Some(checks) = s["checks"].as_array() {
        for c in checks.iter().filter(|c| c["passed"] == false) {
            println!("FAILED {}: {}", c["name"], c["detail"]);
        }
    }
}
