//! What the pipeline's metrics are attributed to: links measured by the router that sends on
//! them, link latency only across one link between its two routers, aggregated entries not
//! taken for one router's, and report times bounded by the collector's clock.

use std::sync::{Arc, Mutex};

use collector::metrics::{DetectionConfig, Measurement, MetricKey, Point, PointSink, SinkFull};
use collector::pipeline::{Pipeline, Shared};
use idint_wire::idint::{AggregationMode, IdInt};
use test_kit::chain::{self, Ask, Chain, ases};

const NOW: u64 = 1_763_800_000_000_000_000;

#[derive(Default)]
struct Capture(Mutex<Vec<Point>>);

impl PointSink for Capture {
    fn write(&self, points: &[Point]) -> Result<(), SinkFull> {
        self.0.lock().unwrap().extend_from_slice(points);
        Ok(())
    }
}

/// A pipeline as `tests/pipeline.rs` builds it (default detection thresholds), with a sink
/// that records every point handed to the time-series store.
fn pipeline() -> (Pipeline, Arc<Capture>) {
    let mut shared = Shared::new(DetectionConfig::default(), 64);
    let cap = Arc::new(Capture::default());
    shared.sink = Some(cap.clone());
    (
        chain::collector_pipeline(shared, &[NOW / 1_000_000_000]),
        cap,
    )
}

fn value(p: &Pipeline, k: MetricKey) -> f64 {
    chain::value(p, k)
}

fn path_id(p: &Pipeline) -> u64 {
    *p.shared().topology.snapshot().paths.keys().next().unwrap()
}

/// Entry flags (S, I, E, A) and node id of each entry of a report, for the failure messages.
fn entries(r: &idint_report::v1::Report) -> Vec<String> {
    let hbh = idint_report::idint_hbh(r).unwrap();
    let idint = IdInt::locate(&hbh[..]).unwrap().unwrap();
    idint
        .entries()
        .map(|(_, e)| {
            format!(
                "hop {} S{} I{} E{} A{}",
                e.hop(),
                u8::from(e.is_source()),
                u8::from(e.ingress()),
                u8::from(e.egress()),
                u8::from(e.aggregated())
            )
        })
        .collect()
}

/// AS B has two border routers: RB1 (node 2) receives the packet on interface 2 and hands it
/// to its sibling RB2 (node 3), which owns interface 3 and sends it to AS C. Only RB2 transmits
/// on the B-C link; RB1's entry (E flag clear) carries egress interface 3 and RB1's own
/// measurement of the port the packet left RB1 by (the internal network).
///
/// Expected: the utilisation of link (B, 3) is RB2's measurement, written once per change.
#[test]
fn link_utilisation_of_a_sibling_handover_is_not_attributed_to_the_ingress_router() {
    let (mut p, cap) = pipeline();
    let mut chain = Chain::new(NOW, false, Ask::Latency);
    let batch = chain.batch(3, 1);
    println!("entries: {:?}", entries(&batch.reports[0]));
    let out = p.process_batch(&batch, NOW + 1_000_000);
    assert_eq!(out.accepted, 3);
    let key = MetricKey::link(ases()[1], 3, Measurement::UtilisationKbps);
    let written: Vec<f64> = cap
        .0
        .lock()
        .unwrap()
        .iter()
        .filter(|x| x.key == key)
        .map(|x| x.value)
        .collect();
    let (rb1, rb2) = (chain.given(1), chain.given(2));
    println!(
        "RB1 (node 2, E=0) util {} kbit/s, RB2 (node 3, E=1) util {} kbit/s",
        rb1.util_kbps, rb2.util_kbps
    );
    println!("points written for link 1-ff00:0:b#3 utilisation_kbps: {written:?}");
    let hist: Vec<f64> = p
        .shared()
        .metrics
        .get(&key)
        .unwrap()
        .history
        .iter()
        .map(|x| x.1)
        .collect();
    println!("in-memory history of that key: {hist:?}");
    assert!(
        written
            .iter()
            .all(|v| (*v - f64::from(rb2.util_kbps)).abs() < 100.0),
        "link (B,3) utilisation written from RB1 (which does not own interface 3) as well as RB2: {written:?}"
    );
}

/// AS C's router forwards without writing an entry (no key yet, or ID-INT off: `idint.md`
/// §9 step 2, "forward unchanged"). The next entry is AS D's.
///
/// Expected: no inter-AS link latency is derived between B's egress and D's ingress, or at
/// least none attributed to the B-C link (B's interface 3): the difference spans AS C's
/// transit and two links.
#[test]
fn link_latency_is_not_derived_across_an_as_without_entries() {
    let (mut p, _) = pipeline();
    let mut chain = Chain::new(NOW, false, Ask::Latency);
    chain.no_idint = vec![3]; // RC writes nothing
    let batch = chain.batch(1, 1);
    println!("entries: {:?}", entries(&batch.reports[0]));
    let out = p.process_batch(&batch, NOW + 1_000_000);
    assert_eq!(out.accepted, 1);
    let (rb2, rd) = (chain.given(2), chain.given(4));
    let key = MetricKey::link(ases()[1], 3, Measurement::LatencyNs);
    let got = p.shared().metrics.get(&key).map(|l| l.value);
    println!(
        "link 1-ff00:0:b#3 (B-C) latency_ns = {got:?}; RB2 egress {} .. RD (AS D) ingress {} = {}",
        rb2.egress_ts,
        rd.ingress_ts,
        rd.ingress_ts - rb2.egress_ts
    );
    assert_eq!(
        got, None,
        "B-C link latency derived from B's egress and D's ingress"
    );
}

/// Aggregation mode 1 (one entry per AS): AS B's entry is pushed by RB1 and aggregated by
/// RB2 (A flag, node count 2); the node id is RB2's (the newer), the ingress timestamp is
/// RB1's (AF1 = first), the egress timestamp RB2's (AF2 = last).
///
/// Expected: an aggregated entry is not taken as the measurement of the single router whose
/// node id it carries; router 3's latency is RB2's own transit time (or nothing), not AS B's.
#[test]
fn aggregated_entries_are_not_attributed_to_one_router() {
    let (mut p, _) = pipeline();
    let mut chain = Chain::with_request(NOW, false, Ask::Latency, |r| {
        r.mode = AggregationMode::PerAs;
        r.inst_bitmap = 0xf; // node id, node count, ingress and egress interface
    });
    let batch = chain.batch(1, 1);
    println!("entries: {:?}", entries(&batch.reports[0]));
    let out = p.process_batch(&batch, NOW + 1_000_000);
    assert_eq!(out.accepted, 1);
    let (rb1, rb2) = (chain.given(1), chain.given(2));
    let metrics = &p.shared().metrics;
    for node in [2, 3] {
        assert!(
            metrics
                .get(&MetricKey::router(ases()[1], node, Measurement::LatencyNs))
                .is_none(),
            "AS B's aggregated entry taken as router {node}'s latency"
        );
    }
    // AS B's transit time is the AS hop's latency (hop 1 of the path).
    let hop = value(&p, MetricKey::hop(path_id(&p), 1, Measurement::LatencyNs));
    assert_eq!(hop, (rb2.egress_ts - rb1.ingress_ts) as f64);
}

/// A report whose `receive_time_ns` (set by the exporting router, not covered by any MAC) is
/// ahead by 30 minutes. Later reports with correct times carry other values.
///
/// Expected: the current value of a key follows the newest report; the skewed one does not
/// freeze it (and the periodic refresh keeps working).
#[test]
fn one_report_with_a_skewed_receive_time_freezes_current_values() {
    let (mut p, cap) = pipeline();
    let mut chain = Chain::new(NOW, false, Ask::Latency);
    let mut first = chain.batch(1, 1);
    first.reports[0].receive_time_ns = NOW + 1_800_000_000_000;
    assert_eq!(p.process_batch(&first, NOW).accepted, 1);
    let id = path_id(&p);
    let key = MetricKey::path(id, Measurement::QueueLen);
    let before = value(&p, key);
    let mut vals = Vec::new();
    // 60 s of reports, one per second, with correct receive times.
    for s in 1..=60u64 {
        chain.now_ns = NOW + s * 1_000_000_000;
        let mut b = chain.batch(1, 1 + s);
        b.reports[0].receive_time_ns = chain.now_ns;
        let out = p.process_batch(&b, chain.now_ns);
        assert_eq!(out.accepted, 1);
        vals.push(f64::from(
            (0..5).map(|r| chain.given(r).queue).max().unwrap(),
        ));
    }
    let l = p.shared().metrics.get(&key).unwrap();
    let writes = cap
        .0
        .lock()
        .unwrap()
        .iter()
        .filter(|x| x.key == key)
        .count();
    println!(
        "path queue_len: value of the skewed report {before}, current value now {} (time_ns {}), \
         samples {}, values of the last reports {:?}, points written for the key in 61 s: {writes}",
        l.value,
        l.time_ns,
        l.samples,
        &vals[vals.len() - 3..]
    );
    assert_eq!(
        l.value,
        *vals.last().unwrap(),
        "current value frozen by the skewed report"
    );
}

/// AS B's egress router RB2 forwards without writing an entry (no key yet: `idint.md` §9
/// step 2). AS B's only entry is RB1's (I set, E clear): RB1 did not send the packet over the
/// B-C link, it handed it to RB2 over the internal network.
///
/// Expected: the B-C link latency is not derived from RB1's egress timestamp (that would
/// include the internal network and RB2's processing).
#[test]
fn link_latency_is_not_derived_from_an_entry_that_did_not_leave_the_as() {
    let (mut p, _) = pipeline();
    let mut chain = Chain::new(NOW, false, Ask::Latency);
    chain.no_idint = vec![2]; // RB2 writes nothing
    let batch = chain.batch(1, 1);
    println!("entries: {:?}", entries(&batch.reports[0]));
    let out = p.process_batch(&batch, NOW + 1_000_000);
    assert_eq!(out.accepted, 1);
    let (rb1, rc) = (chain.given(1), chain.given(3));
    let key = MetricKey::link(ases()[1], 3, Measurement::LatencyNs);
    let got = p.shared().metrics.get(&key).map(|l| l.value);
    println!(
        "link 1-ff00:0:b#3 latency_ns = {got:?} = RC ingress {} - RB1 (E=0) egress {}",
        rc.ingress_ts, rb1.egress_ts
    );
    let hop = p
        .shared()
        .metrics
        .get(&MetricKey::hop(path_id(&p), 1, Measurement::LatencyNs))
        .map(|l| l.value);
    println!("AS B hop latency_ns = {hop:?} (RB1's transit only)");
    assert_eq!(
        got, None,
        "B-C link latency measured from RB1, which did not use the link"
    );
}
