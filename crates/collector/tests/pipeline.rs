//! The pipeline against reports from a real four-AS scion-dp chain: accepted reports give the
//! exact values the routers measured; every kind of bad report is rejected with its reason.

use std::sync::Arc;

use collector::counters::RejectReason;
use collector::keys::{CollectorProvider, ImportedKeys, KeyResolver};
use collector::metrics::{DetectionConfig, Measurement, MetricKey};
use collector::pipeline::{Format, Pipeline, ReplayConfig, Shared, decode_batch};
use collector::topology::{InternalLink, PathOrigin};
use drkey::provider::LocalProvider;
use idint_report::{Message, idint_hbh, v1};
use idint_wire::HostAddr;
use idint_wire::idint::IdInt;
use test_kit::chain::{self, Ask, Chain, IFS, ROUTER_AS, ases};

const NOW: u64 = 1_763_800_000_000_000_000;

fn pipeline_with(host: std::net::Ipv4Addr, import_keys: bool) -> (Pipeline, Arc<ImportedKeys>) {
    let shared = Shared::new(
        DetectionConfig {
            latency_ns: 0.0,
            ..DetectionConfig::default()
        },
        64,
    );
    let a = ases()[0];
    let imported = Arc::new(ImportedKeys::default());
    if import_keys {
        imported
            .import(&chain::level1_imports(NOW / 1_000_000_000))
            .unwrap();
    }
    let local = LocalProvider::new(a, &chain::secret(0), chain::EPOCH).unwrap();
    let provider = Arc::new(CollectorProvider::new(
        a,
        Some(local),
        imported.clone(),
        None,
    ));
    let keys = KeyResolver::new(a, HostAddr::V4(host), provider).watch(imported.clone());
    (
        Pipeline::new(shared, keys, ReplayConfig::default()),
        imported,
    )
}

fn pipeline() -> Pipeline {
    let (p, _) = pipeline_with(chain::COLLECTOR, true);
    p.shared()
        .topology
        .import_path(&chain::path_description())
        .unwrap();
    p
}

fn value(p: &Pipeline, k: MetricKey) -> f64 {
    chain::value(p, k)
}

fn reasons(p: &Pipeline) -> Vec<(RejectReason, u64)> {
    RejectReason::ALL
        .into_iter()
        .map(|r| (r, p.shared().counters.rejected(r)))
        .filter(|(_, n)| *n > 0)
        .collect()
}

#[test]
fn accepted_reports_give_exactly_the_routers_values() {
    for encrypt in [false, true] {
        let mut p = pipeline();
        let mut chain = Chain::new(NOW, encrypt, Ask::Latency);
        let batch = chain.batch(3, 1);
        // Through the wire format, as the collector receives it.
        let bytes = batch.encode_to_vec();
        let batch = decode_batch(&bytes, Format::Protobuf).unwrap();
        let out = p.process_batch(&batch, NOW + 1_000_000);
        assert_eq!((out.accepted, out.rejected), (3, 0), "{:?}", reasons(&p));

        let path_id = chain::path_description();
        let topo = p.shared().topology.snapshot();
        let path = topo.paths.values().next().unwrap();
        assert_eq!(path.hops, path_id.hops);
        for r in 0..5 {
            let g = chain.given(r);
            let ia = ases()[ROUTER_AS[r]];
            let node = r as u32 + 1;
            assert_eq!(g.node, node);
            assert_eq!(
                value(&p, MetricKey::router(ia, node, Measurement::LatencyNs)),
                (g.egress_ts - g.ingress_ts) as f64,
                "router {r}"
            );
            let eg = IFS[r].1;
            // Queue and link utilisation come from the router sending on the interface (RB1's
            // egress is RB2's interface 3: RB1 hands the packet to RB2, its entry has no E
            // flag, and RB2's values are the link's).
            if eg != 0 && r == 1 {
                assert!(
                    p.shared()
                        .metrics
                        .get(&MetricKey::queue(ia, node, eg))
                        .is_none()
                );
            }
            if eg != 0 && r != 1 {
                assert_eq!(
                    value(&p, MetricKey::queue(ia, node, eg)),
                    f64::from(g.queue)
                );
                assert_eq!(
                    value(&p, MetricKey::link(ia, eg, Measurement::UtilisationKbps)),
                    f64::from(g.util_kbps)
                );
            }
        }
        // AS B's hop: RB1's ingress to RB2's egress; the A-B link: RA's egress to RB1's ingress.
        let (rb1, rb2, ra) = (chain.given(1), chain.given(2), chain.given(0));
        assert_eq!(
            value(&p, MetricKey::hop(path.id, 1, Measurement::LatencyNs)),
            (rb2.egress_ts - rb1.ingress_ts) as f64
        );
        assert_eq!(
            value(&p, MetricKey::link(ases()[0], 1, Measurement::LatencyNs)),
            (rb1.ingress_ts - ra.egress_ts) as f64
        );
        // One-way path latency: the sink's ingress timestamp minus the source timestamp
        // (the probe source stamps the chain's clock: 2 µs before the last probe ends).
        let rd = chain.given(4);
        let src_ts = (chain.now_ns - 1000) & 0xffff_ffff_ffff;
        assert_eq!(
            value(&p, MetricKey::path(path.id, Measurement::LatencyNs)),
            (rd.ingress_ts - src_ts) as f64
        );
        let max_util = (0..5).map(|r| chain.given(r).util_kbps).max().unwrap();
        assert_eq!(
            value(&p, MetricKey::path(path.id, Measurement::UtilisationKbps)),
            f64::from(max_util)
        );
        // Learned from the entries: routers by node id, and RB1 -> RB2 inside AS B.
        let topo = p.shared().topology.snapshot();
        assert!(topo.internal_links.contains(&InternalLink {
            ia: ases()[1],
            from_node: 2,
            to_node: 3
        }));
        assert_eq!(topo.internal_links.len(), 1);
        assert!((1..=5).all(|n| topo.has_router(ases()[ROUTER_AS[n as usize - 1]], n)));
        assert_eq!(
            p.shared()
                .counters
                .accepted
                .load(std::sync::atomic::Ordering::Relaxed),
            3
        );
    }
}

#[test]
fn energy_and_carbon_per_path_add_up_over_routers() {
    let mut p = pipeline();
    let mut chain = Chain::new(NOW, true, Ask::Carbon);
    let b = chain.batch(1, 1);
    assert_eq!(p.process_batch(&b, NOW).accepted, 1, "{:?}", reasons(&p));
    let id = p
        .shared()
        .topology
        .snapshot()
        .paths
        .keys()
        .next()
        .copied()
        .unwrap();
    let e: u32 = (0..5).map(|r| chain.given(r).energy_nj).sum();
    let c: u32 = (0..5).map(|r| chain.given(r).co2_pg).sum();
    assert!(e > 0 && c > 0);
    assert_eq!(
        value(&p, MetricKey::path(id, Measurement::EnergyNj)),
        f64::from(e)
    );
    assert_eq!(
        value(&p, MetricKey::path(id, Measurement::Co2Pg)),
        f64::from(c)
    );
}

#[test]
fn paths_are_learned_by_walking_imported_topology_files_and_unknown_ones_recorded() {
    let (mut p, _) = pipeline_with(chain::COLLECTOR, true);
    let mut chain = Chain::new(NOW, false, Ask::Latency);
    // Nothing imported: the path cannot be mapped, and is recorded as unknown.
    let out = p.process_batch(&chain.batch(2, 1), NOW);
    assert_eq!((out.accepted, out.rejected), (0, 2));
    assert_eq!(reasons(&p), [(RejectReason::UnknownPath, 2)]);
    let unknown = p.shared().topology.unknown_paths();
    assert_eq!(unknown.len(), 1);
    assert_eq!(unknown[0].reports, 2);
    assert_eq!(unknown[0].interfaces, [(0, 1), (2, 3), (4, 5), (6, 0)]);
    let q = p.shared().quarantine.list(None, 10);
    assert_eq!(q.len(), 2);
    assert_eq!(q[0].reason, RejectReason::UnknownPath);
    // Rejected before the replay record: the same reports are accepted once mappable.
    for f in chain::topology_files() {
        p.shared().topology.import_topology_json(&f).unwrap();
    }
    let out = p.process_batch(&chain.batch(2, 2), NOW);
    assert_eq!(out.accepted, 2, "{:?}", reasons(&p));
    let topo = p.shared().topology.snapshot();
    let learned: Vec<_> = topo.paths.values().collect();
    assert_eq!(learned.len(), 1);
    assert_eq!(learned[0].origin, PathOrigin::Learned);
    assert_eq!(learned[0].hops, chain::path_description().hops);
    assert_eq!(topo.router_name(ases()[1], 3), Some("rb2"));
    assert_eq!(
        p.shared()
            .counters
            .paths_learned
            .load(std::sync::atomic::Ordering::Relaxed),
        1
    );
}

/// Flips the last byte (in the MAC) of entry `index` of a report's stack.
fn flip_entry_mac(r: &mut v1::Report, index: usize) {
    let hbh = idint_hbh(r).unwrap();
    let idint = IdInt::locate(&hbh[..]).unwrap().unwrap();
    let start = idint.stack_range().start;
    let (at, e) = idint.entries().nth(index).unwrap();
    let off = at - start + e.total_len() - 1;
    r.idint_stack[off] ^= 1;
}

#[test]
fn forged_replayed_stale_and_malformed_reports_are_rejected_with_their_reason() {
    let mut p = pipeline();
    let mut chain = Chain::new(NOW, true, Ask::Latency);
    let mut b = chain.batch(8, 1);
    let genuine = v1::ReportBatch {
        reports: b.reports[..2].to_vec(),
        ..Default::default()
    };
    flip_entry_mac(&mut b.reports[0], 0);
    flip_entry_mac(&mut b.reports[1], 3);
    b.reports[2].idint_stack.truncate(5);
    b.reports[3].idint_main_option.clear();
    b.reports[4].path = None;
    b.reports[5].src_host = Some(v1::HostAddress {
        addr_type: 99,
        raw: vec![1],
    });
    let good = b.reports[6].clone();
    let out = p.process_batch(&b, NOW);
    assert_eq!((out.accepted, out.rejected), (2, 6));
    assert_eq!(
        reasons(&p),
        [
            (RejectReason::MalformedOptions, 2),
            (RejectReason::BadPath, 1),
            (RejectReason::BadHost, 1),
            (RejectReason::BadSourceMac, 1),
            (RejectReason::BadMac, 1),
        ]
    );
    // Forged reports did not burn their (timestamp, port): the genuine ones are accepted.
    assert_eq!(
        p.process_batch(&genuine, NOW).accepted,
        2,
        "{:?}",
        reasons(&p)
    );
    // An accepted report sent again is a replay.
    let replay = v1::ReportBatch {
        reports: vec![good.clone()],
        ..Default::default()
    };
    assert_eq!(p.process_batch(&replay, NOW).rejected, 1);
    assert_eq!(p.shared().counters.rejected(RejectReason::Replayed), 1);
    // Too old and too new.
    let mut later = chain.batch(1, 2);
    assert_eq!(p.process_batch(&later, NOW + 120_000_000_000).rejected, 1);
    assert_eq!(p.shared().counters.rejected(RejectReason::Stale), 1);
    later.reports[0].receive_time_ns = NOW;
    assert_eq!(p.process_batch(&later, NOW - 10_000_000_000).rejected, 1);
    assert_eq!(p.shared().counters.rejected(RejectReason::Future), 1);
    // Quarantine keeps reason, details and the report.
    let q = p.shared().quarantine.list(Some(RejectReason::BadMac), 10);
    assert_eq!(q.len(), 1);
    assert!(q[0].detail.contains("MAC"), "{}", q[0].detail);
    let back = v1::Report::decode(&hex::decode(&q[0].report_hex).unwrap()[..]).unwrap();
    assert_eq!(back.src_isd_as, ases()[0].to_u64());
    // Garbage and truncated batches do not decode.
    let bytes = chain.batch(2, 3).encode_to_vec();
    assert!(decode_batch(&bytes[..bytes.len() - 3], Format::Protobuf).is_err());
    assert!(decode_batch(&[0xff; 40], Format::Protobuf).is_err());
    assert!(decode_batch(b"{\"reports\": 1}", Format::Json).is_err());
}

#[test]
fn wrong_or_missing_keys_and_foreign_verifiers_are_rejected() {
    let mut chain = Chain::new(NOW, true, Ask::Latency);
    // No level-1 keys of B, C, D.
    let (mut p, imported) = pipeline_with(chain::COLLECTOR, false);
    p.shared()
        .topology
        .import_path(&chain::path_description())
        .unwrap();
    assert_eq!(p.process_batch(&chain.batch(1, 1), NOW).rejected, 1);
    assert_eq!(reasons(&p), [(RejectReason::NoHopKey, 1)]);
    // A wrong key for C: C's entry (and nothing before it) fails.
    let mut keys = chain::level1_imports(NOW / 1_000_000_000);
    keys[1].key_hex = "00112233445566778899aabbccddeeff".into();
    imported.import(&keys).unwrap();
    let b = chain.batch(1, 2);
    assert_eq!(p.process_batch(&b, NOW).rejected, 1);
    let q = p.shared().quarantine.list(Some(RejectReason::BadMac), 1);
    assert_eq!(q.len(), 1);
    assert!(q[0].detail.contains("entry 4"), "{}", q[0].detail);
    // The same report verifies once the right key is imported (the forged try did not
    // consume its timestamp).
    imported
        .import(&chain::level1_imports(NOW / 1_000_000_000))
        .unwrap();
    assert_eq!(p.process_batch(&b, NOW).accepted, 1, "{:?}", reasons(&p));
    // A collector at another address is not the verifier.
    let (mut other, _) = pipeline_with(std::net::Ipv4Addr::new(10, 1, 0, 101), true);
    other
        .shared()
        .topology
        .import_path(&chain::path_description())
        .unwrap();
    assert_eq!(other.process_batch(&chain.batch(1, 3), NOW).rejected, 1);
    assert_eq!(reasons(&other), [(RejectReason::NotVerifier, 1)]);
}

#[test]
fn json_batches_decode_to_the_same_reports() {
    let mut chain = Chain::new(NOW, true, Ask::Latency);
    let b = chain.batch(2, 9);
    let text = collector::json::encode(&b).to_string();
    let back = decode_batch(text.as_bytes(), Format::Json).unwrap();
    assert_eq!(back, b);
    let mut p = pipeline();
    assert_eq!(p.process_batch(&back, NOW).accepted, 2, "{:?}", reasons(&p));
}
