//! Pings built by `send`'s code cross real scion-dp border routers with ID-INT stages (the
//! chain's telemetry source, `test_kit::chain::Recorder`), `serve`'s code verifies and
//! decrypts them, and its reply crosses the routers back on the reversed path.
//!
//! ```text
//! host 10.111.0.5 ── ra [41] ─── [1] rb [2] ─── [3] rc ── host 10.211.0.9
//!      1-ff00:0:111            1-ff00:0:112          2-ff00:0:211
//! ```

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;

use drkey::cache::KeyCache;
use drkey::provider::LocalProvider;
use idint_host::fixture::segment_path;
use idint_host::keys::HostKeys;
use idint_host::packet::{Endpoint, PING_INSTRUCTIONS};
use idint_host::paths::{PathEntry, PathHop};
use idint_host::payload::entry_flags;
use idint_host::pinger::{Pinger, summarise};
use idint_host::reason::Reason;
use idint_host::responder::Responder;
use idint_wire::path::ScionPathRepr;
use idint_wire::{HostAddr, IsdAsn};
use scion_dp::config::{DispatchedPorts, InterfaceConfig, LinkType, Owner, Router, RouterConfig};
use scion_dp::idint::{CtrDrbg, DrkeyKeys, IdIntStage};
use scion_dp::{Disposition, Ingress, Processor};
use test_kit::chain::{Given, Recorder};

const EPOCH: u32 = 3600;
const NOW_S: u64 = 1_763_800_000;
const NOW_NS: u64 = NOW_S * 1_000_000_000;
const SRC_HOST: Ipv4Addr = Ipv4Addr::new(10, 111, 0, 5);
const DST_HOST: Ipv4Addr = Ipv4Addr::new(10, 211, 0, 9);
const DST_PORT: u16 = 31_000;
const SRC_PORT: u16 = 40_000;

fn ases() -> [IsdAsn; 3] {
    ["1-ff00:0:111", "1-ff00:0:112", "2-ff00:0:211"].map(|s| s.parse().unwrap())
}

fn master(i: usize) -> [u8; 16] {
    [0x21 + i as u8; 16]
}

type Stage = IdIntStage<DrkeyKeys, Recorder, CtrDrbg>;

/// One AS's border router with its ID-INT stage.
struct Br {
    router: Router,
    stage: Stage,
}

fn br(i: usize, addr: u8, ifs: &[(u16, usize)]) -> Br {
    let ia = ases()[i];
    let interfaces = ifs
        .iter()
        .map(|&(id, n)| InterfaceConfig {
            id,
            link_type: LinkType::Core,
            neighbor_ia: ases()[n],
            owner: Owner::Local,
        })
        .collect();
    let router = Router::new(RouterConfig {
        local_ia: ia,
        core: true,
        internal_addr: SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 0, addr)), 30042),
        interfaces,
        services: vec![],
        dispatched_ports: DispatchedPorts::All,
        forwarding_key: scion_dp::hop_mac::forwarding_key(&master(i)),
    })
    .unwrap();
    let provider = Arc::new(LocalProvider::new(ia, &master(i), EPOCH).unwrap());
    let keys = DrkeyKeys {
        cache: KeyCache::new(provider, 16),
        local: ia,
    };
    let source = Recorder {
        node: u32::from(addr),
        seq: 3,
        last: Given::default(),
    };
    Br {
        router,
        stage: IdIntStage::new(keys, source, CtrDrbg::new([addr; 32])),
    }
}

struct Net {
    brs: Vec<Br>,
}

impl Net {
    fn new() -> Self {
        Net {
            brs: vec![
                br(0, 1, &[(41, 1)]),
                br(1, 2, &[(1, 0), (2, 2)]),
                br(2, 3, &[(3, 1)]),
            ],
        }
    }

    /// Sends `pkt` through routers `order` with these ingresses; the final disposition.
    fn cross(&mut self, pkt: &mut [u8], hops: &[(usize, Ingress)], now: u64) -> Disposition {
        let len = pkt.len();
        let mut d = None;
        for &(r, ing) in hops {
            let b = &mut self.brs[r];
            let out = Processor::new(&b.router).process_with(pkt, len, ing, now, &mut b.stage);
            if !matches!(
                out,
                Disposition::Forward { .. } | Disposition::Deliver { .. }
            ) {
                return out;
            }
            d = Some(out);
        }
        d.expect("at least one router")
    }

    fn forward(&mut self, pkt: &mut [u8], now: u64) -> Disposition {
        self.cross(
            pkt,
            &[
                (0, Ingress::Internal),
                (1, Ingress::External(1)),
                (2, Ingress::External(3)),
            ],
            now,
        )
    }

    fn back(&mut self, pkt: &mut [u8], now: u64) -> Disposition {
        self.cross(
            pkt,
            &[
                (2, Ingress::Internal),
                (1, Ingress::External(2)),
                (0, Ingress::External(41)),
            ],
            now,
        )
    }

    fn given(&self, r: usize) -> Given {
        self.brs[r].stage.source().last
    }
}

fn keys() -> HostKeys {
    let mut k = HostKeys::new(EPOCH);
    for (i, ia) in ases().into_iter().enumerate() {
        k.insert(ia, &master(i));
    }
    k
}

fn path() -> PathEntry {
    let [a, b, c] = ases();
    let hops = [
        PathHop {
            ia: a,
            ingress: 0,
            egress: 41,
        },
        PathHop {
            ia: b,
            ingress: 1,
            egress: 2,
        },
        PathHop {
            ia: c,
            ingress: 3,
            egress: 0,
        },
    ];
    let first = "10.0.0.1:30042".parse().unwrap();
    segment_path(&mut keys(), "111-211", &hops, first, (NOW_S - 600) as u32).unwrap()
}

fn pinger(encrypt: bool) -> Pinger {
    let src = Endpoint {
        ia: ases()[0],
        host: HostAddr::V4(SRC_HOST),
        port: SRC_PORT,
    };
    let dst = Endpoint {
        ia: ases()[2],
        host: HostAddr::V4(DST_HOST),
        port: DST_PORT,
    };
    Pinger::new(src, dst, path(), encrypt, keys())
}

fn responder() -> Responder {
    Responder::new(ases()[2], HostAddr::V4(DST_HOST), keys())
}

fn delivered_to(d: Disposition, host: Ipv4Addr, port: u16) {
    assert_eq!(
        d,
        Disposition::Deliver {
            addr: SocketAddr::new(IpAddr::V4(host), port)
        }
    );
}

#[test]
fn pings_cross_the_routers_verify_and_the_reply_comes_back() {
    for encrypt in [false, true] {
        let mut net = Net::new();
        let mut p = pinger(encrypt);
        let mut r = responder();
        let mut pkt = Vec::new();
        p.build(7, NOW_NS, &mut pkt).unwrap();
        delivered_to(net.forward(&mut pkt, NOW_NS + 1000), DST_HOST, DST_PORT);
        let h = r.handle(&pkt, NOW_NS + 2000);
        assert_eq!(h.failure, None, "encrypt {encrypt}");
        assert!(h.report.is_some(), "a host report for the collector");
        // The source entry and one entry per router, each with the values its telemetry
        // source handed out.
        assert_eq!(h.entries.len(), 4);
        assert!(h.entries[0].flags & entry_flags::SOURCE != 0);
        for (k, e) in h.entries[1..].iter().enumerate() {
            let g = net.given(k);
            let m = &e.metadata;
            assert_eq!(e.ia, Some(ases()[k]));
            assert_eq!(m.node_id, Some(g.node));
            assert_eq!(
                m.slots[0].map(|s| s.value),
                Some(g.ingress_ts),
                "ingress ts"
            );
            assert_eq!(
                m.slots[1].map(|s| s.value),
                Some(u64::from(g.queue)),
                "queue"
            );
            assert_eq!(
                m.slots[2].map(|s| s.value),
                Some(u64::from(g.util_kbps)),
                "util"
            );
            assert_eq!(
                m.slots[3].map(|s| s.value),
                Some(u64::from(g.energy_nj)),
                "energy"
            );
            assert_eq!(e.flags & entry_flags::ENCRYPTED != 0, encrypt);
        }
        assert_eq!(h.entries[1].metadata.egress_if, Some(41));
        assert_eq!(h.entries[2].metadata.ingress_if, Some(1));
        assert_eq!(h.entries[3].metadata.ingress_if, Some(3));
        // The reply crosses the routers in the other direction on the reversed path.
        let mut reply = h.reply.expect("a reply");
        delivered_to(net.back(&mut reply, NOW_NS + 3000), SRC_HOST, SRC_PORT);
        let decoded = p.reply(&reply).unwrap();
        assert_eq!(decoded.seq, 7);
        assert_eq!(decoded.instructions, PING_INSTRUCTIONS);
        let s = summarise(&decoded, 5000);
        assert!(s.verified);
        assert_eq!(s.hops.len(), 3);
        assert_eq!(s.hops[0].ia.as_deref(), Some("1-ff00:0:111"));
        assert_eq!(s.hops[2].energy_nj, Some(u64::from(net.given(2).energy_nj)));
        // Latency: the first router's ingress timestamp minus the source timestamp.
        let src_ts = NOW_NS % (1 << 48);
        assert_eq!(s.hops[0].latency_ns, Some(net.given(0).ingress_ts - src_ts));
        assert_eq!(r.stats.verified, 1);
    }
}

#[test]
fn tampering_replays_and_missing_keys_fail_with_their_reason() {
    let mut net = Net::new();
    let mut p = pinger(true);
    let mut pkt = Vec::new();
    p.build(1, NOW_NS, &mut pkt).unwrap();
    net.forward(&mut pkt, NOW_NS);
    let mut r = responder();
    assert_eq!(r.handle(&pkt, NOW_NS).failure, None);
    assert_eq!(r.handle(&pkt, NOW_NS).failure, Some(Reason::Replayed));
    // Tamper with one metadata byte of the second router's entry (in a fresh responder):
    // the MAC chain refuses it.
    let range = idint_wire::packet::Packet::parse(&pkt)
        .unwrap()
        .hbh_range()
        .unwrap();
    let mut bad = pkt.clone();
    let at = {
        let hbh = &mut bad[range.clone()];
        let st = idint_wire::idint::IdInt::locate(&mut hbh[..])
            .unwrap()
            .unwrap();
        let (off, e) = st.entries().nth(2).unwrap();
        range.start + off + e.metadata_offset()
    };
    bad[at] ^= 0x01;
    let mut fresh = responder();
    let h = fresh.handle(&bad, NOW_NS);
    assert_eq!(h.failure, Some(Reason::BadMac));
    assert!(h.reply.is_some(), "the sender learns why");
    // A destination without the transit AS's secret cannot verify its entry.
    let mut partial = HostKeys::new(EPOCH);
    partial.insert(ases()[0], &master(0));
    partial.insert(ases()[2], &master(2));
    let mut r2 = Responder::new(ases()[2], HostAddr::V4(DST_HOST), partial);
    assert_eq!(r2.handle(&pkt, NOW_NS).failure, Some(Reason::MissingKey));
    // A wrong clock: an hour later the timestamp is stale.
    let mut r3 = responder();
    assert_eq!(
        r3.handle(&pkt, NOW_NS + 3_600_000_000_000).failure,
        Some(Reason::Stale)
    );
    // Junk never panics and is counted.
    let mut r4 = responder();
    assert_eq!(r4.handle(&[1, 2, 3], NOW_NS).failure, Some(Reason::Parse));
    assert_eq!(r4.stats.failed.get("parse"), Some(&1));
}

#[test]
fn reversal_round_trips_and_the_reversed_path_is_accepted_backwards() {
    let raw = path().raw;
    let fwd = ScionPathRepr::parse(&raw).unwrap();
    assert_eq!(fwd.reversed().unwrap().reversed().unwrap(), fwd);
    // A packet at its destination, reversed, crosses ra..rc in the other direction.
    let mut net = Net::new();
    let mut p = pinger(false);
    let mut pkt = Vec::new();
    p.build(2, NOW_NS, &mut pkt).unwrap();
    net.forward(&mut pkt, NOW_NS);
    let mut r = responder();
    let mut reply = r.handle(&pkt, NOW_NS).reply.unwrap();
    let rev = ScionPathRepr::parse(
        idint_wire::scion::ScionHeader::new_checked(&reply[..])
            .unwrap()
            .path_bytes(),
    )
    .unwrap();
    assert_eq!((rev.meta.curr_inf, rev.meta.curr_hf), (0, 0));
    assert!(!rev.infos[0].cons_dir);
    assert_eq!(rev.hops()[0].cons_ingress, 3);
    delivered_to(net.back(&mut reply, NOW_NS), SRC_HOST, SRC_PORT);
    // A forged reversed path (one MAC bit flipped) is dropped by the first router.
    let mut reply2 = responder().handle(&pkt, NOW_NS).reply.unwrap();
    let at = idint_wire::scion::ScionHeader::new_checked(&reply2[..])
        .unwrap()
        .path_offset()
        + 4
        + 8
        + 11;
    reply2[at] ^= 1;
    assert!(!matches!(
        net.back(&mut reply2, NOW_NS),
        Disposition::Deliver { .. }
    ));
}

/// The collector: host 10.111.0.100 of AS 1-ff00:0:111, with its master secret and the
/// level-1 keys K(112 -> 111), K(211 -> 111) imported, as `idint-collector` runs.
fn collector() -> collector_core::pipeline::Pipeline {
    use collector_core::keys::{CollectorProvider, ImportedKey, ImportedKeys, KeyResolver};
    use collector_core::metrics::DetectionConfig;
    use collector_core::pipeline::{Pipeline, ReplayConfig, Shared};
    use drkey::Protocol;
    use drkey::provider::Level1Provider;
    let a = ases()[0];
    let imported = Arc::new(ImportedKeys::default());
    let keys: Vec<ImportedKey> = (1..3)
        .map(|i| {
            let ia = ases()[i];
            let p = LocalProvider::new(ia, &master(i), EPOCH).unwrap();
            let (epoch, key) = p.level1(Protocol::IDINT, ia, a, NOW_S).unwrap();
            ImportedKey {
                src_ia: ia.to_string(),
                dst_ia: a.to_string(),
                protocol: Protocol::IDINT.0,
                epoch_begin: epoch.begin,
                epoch_end: epoch.end,
                key_hex: keys_hex(key.as_bytes()),
            }
        })
        .collect();
    imported.import(&keys).unwrap();
    let local = LocalProvider::new(a, &master(0), EPOCH).unwrap();
    let provider = Arc::new(CollectorProvider::new(
        a,
        Some(local),
        imported.clone(),
        None,
    ));
    let resolver = KeyResolver::new(a, HostAddr::V4(COLLECTOR), provider).watch(imported);
    let shared = Shared::new(DetectionConfig::default(), 16);
    let pipeline = Pipeline::new(shared, resolver, ReplayConfig::default());
    // The paths file's hops are the collector's path description.
    let hops = path()
        .hops
        .iter()
        .map(|h| collector_core::topology::PathHop {
            ia: h.ia,
            ingress: h.ingress,
            egress: h.egress,
        })
        .collect();
    let description = collector_core::topology::PathDescription { hops };
    pipeline
        .shared()
        .topology
        .import_path(&description)
        .unwrap();
    pipeline
}

fn keys_hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

const COLLECTOR: Ipv4Addr = Ipv4Addr::new(10, 111, 0, 100);

#[test]
fn host_reports_are_accepted_by_the_collector_it_names_as_verifier() {
    for (third_party, accepted) in [(true, 1), (false, 0)] {
        let mut net = Net::new();
        let mut p = pinger(true);
        if third_party {
            p.verifier = Some((ases()[0], HostAddr::V4(COLLECTOR)));
        }
        let mut pkt = Vec::new();
        p.build(4, NOW_NS, &mut pkt).unwrap();
        delivered_to(net.forward(&mut pkt, NOW_NS), DST_HOST, DST_PORT);
        let h = responder().handle(&pkt, NOW_NS);
        assert_eq!(h.failure, None, "the destination verifies either way");
        let report = h.report.expect("a host report");
        let mut c = collector();
        let out = c.process_encoded(&report, NOW_NS).unwrap();
        let why = test_kit::chain::rejections(&c);
        // The collector only takes reports it is the verifier of.
        if !third_party {
            let not_verifier = collector_core::counters::RejectReason::NotVerifier;
            assert_eq!(why, [(not_verifier, 1)]);
        }
        assert_eq!(
            (out.accepted, out.rejected),
            (accepted, 1 - accepted),
            "{third_party} {why:?}"
        );
    }
}
