//! Every generated packet goes through scion-dp's processor for the configured router: valid
//! packets must be forwarded on the expected interface, handed to the expected sibling or
//! delivered to the expected host; malformed ones must not be. Covers the example
//! configurations and synthetic ones with parent, child, peer and IPv6 links.

mod common;

use std::path::{Path, PathBuf};

use idint_pktgen::{
    Expect, Generator, Kind, Malformation, Options, PacketInfo, Size, VerifierChoice,
};
use idint_wire::HostAddr;
use idint_wire::idint::IdInt;
use idint_wire::idint::crypto::verify_stack;
use idint_wire::packet::Packet;
use idint_wire::scion::ScionHeader;
use scion_dp::config::Router;
use scion_dp::{Disposition, Ingress, Processor};
use scion_topology::Topology;
use wire_tools::pcap::{LINKTYPE_ETHERNET, PcapReader, scion_payload};

const NOW_NS: u64 = 1_763_800_000_123_000_000;

fn examples() -> PathBuf {
    common::config_examples()
}

/// A temporary config directory with `topology.json` and a fresh `keys/master0.key`.
fn temp_config(name: &str, topology: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("idint-pktgen-{name}-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("keys")).unwrap();
    std::fs::write(dir.join("topology.json"), topology).unwrap();
    std::fs::write(dir.join("keys/master0.key"), "ASNFZ4mrze8BI0VniavN7w==\n").unwrap();
    dir
}

/// Non-core AS: parent 1, child 2, child 3 (sibling-owned), peer 4, all IPv4.
const NONCORE: &str = r#"{
  "isd_as": "1-ff00:0:110", "mtu": 1472, "dispatched_ports": "31000-39999",
  "border_routers": {
    "br1-ff00_0_110-1": { "internal_addr": "10.10.0.1:30042", "interfaces": {
      "1": { "underlay": {"local": "192.0.2.1:50000", "remote": "192.0.2.2:50000"},
             "isd_as": "1-ff00:0:100", "link_to": "parent", "mtu": 1472 },
      "2": { "underlay": {"local": "192.0.2.5:50000", "remote": "192.0.2.6:50000"},
             "isd_as": "1-ff00:0:111", "link_to": "child", "mtu": 1472 },
      "4": { "underlay": {"local": ":50004", "remote": "192.0.2.10:50000"},
             "isd_as": "2-ff00:0:210", "link_to": "peer", "remote_interface_id": 17 } } },
    "br1-ff00_0_110-2": { "internal_addr": "10.10.0.2:30042", "interfaces": {
      "3": { "underlay": {"local": "192.0.2.13:50000", "remote": "192.0.2.14:50000"},
             "isd_as": "1-ff00:0:112", "link_to": "child" } } } },
  "control_service": { "cs1": { "addr": "10.10.0.9:30252" } }
}"#;

/// Core AS over IPv6: core 1 and 2 on this router, child 3 on the sibling.
const CORE_V6: &str = r#"{
  "isd_as": "1-ff00:0:1", "attributes": ["core"], "dispatched_ports": "all",
  "border_routers": {
    "br1-ff00_0_1-1": { "internal_addr": "[fd00::1]:30042", "interfaces": {
      "1": { "underlay": {"local": "[2001:db8:1::1]:50000", "remote": "[2001:db8:1::2]:50000"},
             "isd_as": "1-ff00:0:2", "link_to": "core" },
      "2": { "underlay": {"local": "[2001:db8:2::1]:50000", "remote": "[2001:db8:2::2]:50000"},
             "isd_as": "2-ff00:0:3", "link_to": "core" } } },
    "br1-ff00_0_1-2": { "internal_addr": "[fd00::2]:30042", "interfaces": {
      "3": { "underlay": {"local": "[2001:db8:3::1]:50000", "remote": "[2001:db8:3::2]:50000"},
             "isd_as": "1-ff00:0:4", "link_to": "child" } } } }
}"#;

fn opts(count: u64) -> Options {
    let mut o = Options::new(NOW_NS);
    o.count = count;
    o.flows = 5;
    o.idint.percent = 50;
    o
}

/// Runs `count` packets of router `id` through its processor; returns the infos.
fn run(topo_path: &Path, id: &str, keys: &Path, o: Options) -> Vec<PacketInfo> {
    let topo = Topology::load(topo_path).unwrap();
    let router = Router::new(topo.router_config(id, keys).unwrap()).unwrap();
    let count = o.count;
    let mut g = Generator::new(&topo, id, keys, o).unwrap();
    let mut p = Processor::new(&router);
    let mut frame = Vec::new();
    let mut buf = vec![0u8; 4096];
    let mut infos = Vec::new();
    for i in 0..count {
        let info = g.frame(i, &mut frame).unwrap();
        let (underlay, scion) = scion_payload(LINKTYPE_ETHERNET, &frame).unwrap();
        assert_eq!(underlay.src, Some(info.underlay_src), "packet {i}");
        assert_eq!(underlay.dst, Some(info.underlay_dst), "packet {i}");
        // The underlay matches the topology: the interface's remote -> local endpoints.
        if let Ingress::External(ifid) = info.ingress {
            let u = topo.router(id).unwrap().interface(ifid).unwrap().underlay;
            assert_eq!(info.underlay_src, u.remote);
            assert_eq!(info.underlay_dst.port(), u.local.port());
        } else {
            assert_eq!(info.underlay_dst, router.config().internal_addr);
        }
        if info.malformed.is_none() {
            let parsed = Packet::parse(scion).unwrap();
            assert!(parsed.payload_len_matches(), "packet {i}");
            assert_eq!(parsed.hbh_range().is_some(), info.idint, "packet {i}");
        }
        buf[..scion.len()].copy_from_slice(scion);
        let d = p.process(&mut buf, scion.len(), info.ingress, NOW_NS);
        assert!(
            info.expect.matches(&d),
            "packet {i} ({}, {:?}): expected {}, router said {d:?}",
            g.shape_label(info.shape).unwrap(),
            info.malformed,
            info.expect
        );
        infos.push(info);
    }
    infos
}

#[test]
fn example_configs_every_router() {
    for (dir, ids) in [
        ("router_benchmark", &["br1a", "br1b"][..]),
        ("router_control_testdata", &["br1-ff00_0_110-1"][..]),
    ] {
        let d = examples().join(dir);
        for id in ids {
            let infos = run(&d.join("topology.json"), id, &d.join("keys"), opts(400));
            assert!(infos.iter().all(|i| i.malformed.is_none()));
            assert!(infos.iter().any(|i| i.idint) && infos.iter().any(|i| !i.idint));
        }
    }
    // The other router of router_control_testdata has the same local and remote address on
    // its interface 2: it cannot run, so there is no traffic to generate for it.
    let d = examples().join("router_control_testdata");
    let topo = Topology::load(d.join("topology.json")).unwrap();
    let e = Generator::new(&topo, "br1-ff00_0_110-2", d.join("keys"), opts(10)).unwrap_err();
    assert!(
        matches!(
            e,
            idint_pktgen::GenError::Topology(scion_topology::TopologyError::Unusable { .. })
        ),
        "{e}"
    );
    // br1a: crossovers (child/child and to/from the sibling's core link), in, out, EPIC.
    let d = examples().join("router_benchmark");
    let infos = run(&d.join("topology.json"), "br1a", &d.join("keys"), opts(200));
    for k in [Kind::Crossover, Kind::In, Kind::Out, Kind::Epic] {
        assert!(infos.iter().any(|i| i.kind == k), "{k}");
    }
    assert!(
        infos
            .iter()
            .any(|i| matches!(i.expect, Expect::Sibling { ifid: 4, .. }))
    );
    assert!(infos.iter().any(|i| i.ingress == Ingress::Sibling(4)));
}

#[test]
fn noncore_with_parent_child_peer_and_sibling() {
    let dir = temp_config("noncore", NONCORE);
    let mut o = opts(600);
    o.malformed = 60;
    let infos = run(
        &dir.join("topology.json"),
        "br1-ff00_0_110-1",
        &dir.join("keys"),
        o,
    );
    for k in Kind::ALL {
        assert!(
            infos.iter().any(|i| i.kind == k && i.malformed.is_none()),
            "{k}"
        );
    }
    // Peering both ways, transit up and down, delivery honours the dispatched range.
    assert!(
        infos
            .iter()
            .any(|i| i.kind == Kind::Peering && i.expect == Expect::Forward { ifid: 4 })
    );
    assert!(
        infos
            .iter()
            .any(|i| i.kind == Kind::Peering && i.expect == Expect::Forward { ifid: 2 })
    );
    for i in &infos {
        if let Expect::Deliver { addr } = i.expect {
            assert_eq!(addr.port(), 30041, "ports 30100.. are outside 31000-39999");
        }
    }
    let bad: Vec<_> = infos.iter().filter_map(|i| i.malformed).collect();
    assert_eq!(bad.len(), 60);
    for m in [
        Malformation::Truncated,
        Malformation::BadMac,
        Malformation::Expired,
    ] {
        assert_eq!(bad.iter().filter(|&&b| b == m).count(), 20, "{m}");
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn core_ipv6_with_ipv6_hosts_and_frame_size() {
    let dir = temp_config("core6", CORE_V6);
    let mut o = opts(300);
    o.ipv6_hosts = true;
    o.size = Size::Frame(400);
    let infos = run(
        &dir.join("topology.json"),
        "br1-ff00_0_1-1",
        &dir.join("keys"),
        o,
    );
    assert!(infos.iter().all(|i| i.underlay_dst.is_ipv6()));
    assert!(infos.iter().any(|i| i.kind == Kind::Transit));
    assert!(
        infos
            .iter()
            .any(|i| matches!(i.expect, Expect::Sibling { ifid: 3, .. }))
    );
    // Frames are exactly the requested size.
    let topo = Topology::load(dir.join("topology.json")).unwrap();
    let mut o = opts(50);
    o.ipv6_hosts = true;
    o.size = Size::Frame(400);
    let mut g = Generator::new(&topo, "br1-ff00_0_1-1", dir.join("keys"), o).unwrap();
    let mut f = Vec::new();
    for i in 0..50 {
        g.frame(i, &mut f).unwrap();
        assert_eq!(f.len(), 400);
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn transit_172_byte_frames_and_too_small_sizes() {
    let d = examples().join("router_control_testdata");
    let topo = Topology::load(d.join("topology.json")).unwrap();
    let mut o = Options::new(NOW_NS);
    o.kinds = vec![Kind::Transit];
    o.size = Size::Frame(172);
    let mut g = Generator::new(&topo, "br1-ff00_0_110-1", d.join("keys"), o).unwrap();
    let mut f = Vec::new();
    for i in 0..20 {
        let info = g.frame(i, &mut f).unwrap();
        assert_eq!(f.len(), 172);
        assert_eq!(info.kind, Kind::Transit);
    }
    let mut o = Options::new(NOW_NS);
    o.size = Size::Frame(100);
    let e = Generator::new(&topo, "br1-ff00_0_110-1", d.join("keys"), o).unwrap_err();
    assert!(e.to_string().contains("frame size 100 too small"), "{e}");
    let mut o = Options::new(NOW_NS);
    o.kinds = vec![Kind::Peering];
    let e = Generator::new(&topo, "br1-ff00_0_110-1", d.join("keys"), o).unwrap_err();
    assert!(
        e.to_string().contains("allow none of the kinds peering"),
        "{e}"
    );
    let e = Generator::new(&topo, "nope", d.join("keys"), Options::new(NOW_NS)).unwrap_err();
    assert!(e.to_string().contains("no border router \"nope\""), "{e}");
}

/// The ID-INT source entry verifies with the host-to-host key derived independently from
/// the source AS's secret (deterministic for neighbours, master0.key for the local AS).
#[test]
fn idint_source_entries_verify() {
    let d = examples().join("router_benchmark");
    let topo = Topology::load(d.join("topology.json")).unwrap();
    let own = scion_topology::MasterKeys::load(d.join("keys")).unwrap();
    for verifier in [VerifierChoice::Destination, VerifierChoice::Source] {
        let mut o = opts(60);
        o.idint.percent = 100;
        o.idint.encrypt = true;
        o.idint.verifier = verifier;
        let mut g = Generator::new(&topo, "br1a", d.join("keys"), o).unwrap();
        let mut pkt = Vec::new();
        for i in 0..60 {
            let info = g.scion_packet(i, &mut pkt).unwrap();
            assert!(info.idint);
            let h = ScionHeader::new_checked(&pkt[..]).unwrap();
            let (src_ia, src_host, dst_ia, dst_host) =
                (h.src_ia(), h.src_host(), h.dst_ia(), h.dst_host());
            let (ver_ia, ver_host) = match verifier {
                VerifierChoice::Destination => (dst_ia, dst_host),
                VerifierChoice::Source => (src_ia, src_host),
            };
            let (key, ha) = common::source_key(
                &topo,
                &own.master0,
                (src_ia, src_host),
                (ver_ia, ver_host),
                NOW_NS / 1_000_000_000,
            );
            let range = Packet::parse(&pkt).unwrap().hbh_range().unwrap();
            let mut idint = IdInt::locate(&mut pkt[range.clone()]).unwrap().unwrap();
            assert_eq!(verify_stack(&mut idint, &key, |_, _| None).unwrap(), 1);
            // A wrong key fails.
            let wrong = drkey::host_host(&ha, &HostAddr::V4([9, 9, 9, 9].into()))
                .unwrap()
                .cipher();
            let mut copy = pkt[range].to_vec();
            let mut idint = IdInt::locate(&mut copy[..]).unwrap().unwrap();
            assert!(verify_stack(&mut idint, &wrong, |_, _| None).is_err());
        }
    }
}

#[test]
fn pcap_round_trip_and_per_ingress_files() {
    let d = examples().join("router_benchmark");
    let topo = Topology::load(d.join("topology.json")).unwrap();
    let mut g = Generator::new(&topo, "br1a", d.join("keys"), opts(100)).unwrap();
    let mut seen = 0;
    let (bytes, sum) = g.write_pcap(Vec::new(), |_| seen += 1).unwrap();
    assert_eq!((seen, sum.packets), (100, 100));
    let mut r = PcapReader::new(&bytes[..]).unwrap();
    let mut n = 0;
    let mut last_ts = 0;
    while let Some(rec) = r.next_record().unwrap() {
        assert!(rec.timestamp_ns >= NOW_NS && rec.timestamp_ns >= last_ts);
        last_ts = rec.timestamp_ns;
        scion_payload(r.link_type(), &rec.data).unwrap();
        n += 1;
    }
    assert_eq!(n, 100);
    let out = std::env::temp_dir().join(format!("idint-pktgen-split-{}", std::process::id()));
    let sum = g.write_pcaps_by_ingress(&out, |_| {}).unwrap();
    assert_eq!(sum.packets, 100);
    let mut names: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "ext-2.pcap",
            "ext-3.pcap",
            "internal.pcap",
            "sibling-4.pcap"
        ]
    );
    std::fs::remove_dir_all(out).unwrap();
}

#[test]
fn disposition_sanity_of_expectations() {
    // A packet processed at the wrong time (paths expired) is rejected, so the
    // expectations above are not vacuous.
    let d = examples().join("router_benchmark");
    let topo = Topology::load(d.join("topology.json")).unwrap();
    let router = Router::new(topo.router_config("br1a", d.join("keys")).unwrap()).unwrap();
    let mut g = Generator::new(&topo, "br1a", d.join("keys"), opts(20)).unwrap();
    let mut p = Processor::new(&router);
    let mut pkt = Vec::new();
    let late = NOW_NS + 2 * 86_400 * 1_000_000_000;
    for i in 0..20 {
        let info = g.scion_packet(i, &mut pkt).unwrap();
        let mut buf = pkt.clone();
        buf.resize(4096, 0);
        let d = p.process(&mut buf, pkt.len(), info.ingress, late);
        assert!(
            !matches!(
                d,
                Disposition::Forward { .. }
                    | Disposition::Deliver { .. }
                    | Disposition::Sibling { .. }
            ),
            "packet {i}: {d:?}"
        );
    }
}

/// The router's ID-INT stage for tests: one fixed AS-to-host key for every verifier.
struct FixedKey(idint_wire::crypto::Aes128Enc);

impl scion_dp::idint::VerifierKeys for FixedKey {
    fn find(
        &mut self,
        _ia: idint_wire::IsdAsn,
        _host: &HostAddr,
        _now_ns: u64,
    ) -> Option<scion_dp::idint::KeyHandle> {
        Some(scion_dp::idint::KeyHandle {
            index: 0,
            generation: 0,
        })
    }
    fn key(&self, _: scion_dp::idint::KeyHandle) -> Option<&idint_wire::crypto::Aes128Enc> {
        Some(&self.0)
    }
}

/// ID-INT requests pass the router's ID-INT stage: none is malformed or unsupported, the
/// router adds its entry, and the stack (source entry + router entry) verifies afterwards.
#[test]
fn idint_requests_pass_the_router_stage() {
    use scion_dp::idint::{CtrDrbg, IdIntStage};
    use scion_dp::telemetry::NoTelemetry;
    let d = examples().join("router_benchmark");
    let topo = Topology::load(d.join("topology.json")).unwrap();
    let own = scion_topology::MasterKeys::load(d.join("keys")).unwrap();
    let router = Router::new(topo.router_config("br1a", d.join("keys")).unwrap()).unwrap();
    let router_key = idint_wire::crypto::aes128(&[0x42; 16]);
    for encrypt in [false, true] {
        let mut o = opts(112);
        o.idint.percent = 100;
        o.idint.encrypt = encrypt;
        o.kinds = vec![Kind::Crossover, Kind::Out, Kind::Epic];
        let mut g = Generator::new(&topo, "br1a", d.join("keys"), o).unwrap();
        let mut stage = IdIntStage::new(
            FixedKey(router_key.clone()),
            NoTelemetry,
            CtrDrbg::new([7; 32]),
        );
        let mut p = Processor::new(&router);
        let mut pkt = Vec::new();
        let mut with_entry = 0;
        for i in 0..112 {
            let info = g.scion_packet(i, &mut pkt).unwrap();
            let len = pkt.len();
            pkt.resize(4096, 0);
            let disp = p.process_with(&mut pkt, len, info.ingress, NOW_NS, &mut stage);
            assert!(info.expect.matches(&disp), "packet {i}: {disp:?}");
            pkt.truncate(len);
            let key = common::packet_source_key(&topo, &own.master0, &pkt, NOW_NS / 1_000_000_000);
            let range = Packet::parse(&pkt).unwrap().hbh_range().unwrap();
            let mut idint = IdInt::locate(&mut pkt[range]).unwrap().unwrap();
            let n = verify_stack(&mut idint, &key, |_, _| Some(&router_key)).unwrap();
            assert!((1..=2).contains(&n), "packet {i}: {n} entries");
            with_entry += usize::from(n == 2);
        }
        let c = *stage.counters();
        assert_eq!(
            (c.packets, c.malformed, c.unsupported),
            (112, 0, 0),
            "{c:?}"
        );
        assert!(c.pushed > 0 && with_entry > 0, "{c:?}");
        assert_eq!(c.encrypted > 0, encrypt, "{c:?}");
    }
}

/// Appliance-format topology (seed 002 §4.1.1): non-core AS, IPv4 parent link and IPv6 child
/// link, IPv4 internal network.
#[test]
fn appliance_format_topology() {
    let dir = temp_config(
        "appliance",
        r#"{ "isd_as": { "64-2:0:9": {
          "internal_scion_mtu": 1472,
          "control": { "address": "10.0.0.2:30252" },
          "router": { "internal_address": "10.0.0.1:30042", "interfaces": {
            "1": { "address": "192.0.2.1:50000", "remote_address": "192.0.2.2:50000",
                   "remote_isd_as": "64-559", "link_type": "parent", "scion_mtu": 1452 },
            "7": { "address": "[2001:db8::1]:50000", "remote_address": "[2001:db8::2]:50000",
                   "remote_isd_as": "64-2:0:13", "link_type": "child" } } } } } }"#,
    );
    let infos = run(
        &dir.join("topology.json"),
        "br64-2_0_9-1",
        &dir.join("keys"),
        opts(200),
    );
    assert!(
        infos
            .iter()
            .any(|i| i.ingress == Ingress::External(7) && i.underlay_src.is_ipv6())
    );
    assert!(
        infos
            .iter()
            .any(|i| i.ingress == Ingress::Internal && i.underlay_src.is_ipv4())
    );
    for k in [Kind::Transit, Kind::In, Kind::Out, Kind::Epic] {
        assert!(infos.iter().any(|i| i.kind == k), "{k}");
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn bad_idint_options_are_errors() {
    let d = examples().join("router_benchmark");
    let topo = Topology::load(d.join("topology.json")).unwrap();
    let mut o = opts(10);
    o.idint.stack_words = 0;
    let e = Generator::new(&topo, "br1a", d.join("keys"), o).unwrap_err();
    assert!(
        e.to_string().contains("0-word stack cannot be built"),
        "{e}"
    );
    let mut o = opts(10);
    o.path_age_secs = 100_000;
    o.exp_time = 255;
    let e = Generator::new(&topo, "br1a", d.join("keys"), o).unwrap_err();
    assert!(e.to_string().contains("already expired"), "{e}");
    let mut o = opts(10);
    o.idint.percent = 101;
    assert!(Generator::new(&topo, "br1a", d.join("keys"), o).is_err());
}
