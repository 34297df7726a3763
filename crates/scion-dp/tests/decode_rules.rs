//! Decode rules the golden router cases do not reach, checked against
//! the SCION data-plane specification and the reference (Go) router: malformed extension headers,
//! router alerts on what is not a whole traceroute request, cut SCMP messages for local hosts.

use idint_wire::path::scion::{HopField, InfoField, PathMeta, ScionPathRepr};
use idint_wire::scion::{FlowId, NextHdr, PathType, ScionHeader, ScionRepr};
use idint_wire::{HostAddr, IsdAsn};
use scion_dp::config::Router;
use scion_dp::{Disposition, Ingress, Processor, ScmpReason};
use scion_dp_replay::CaseFile;
use std::net::Ipv4Addr;

const CASES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../testdata/scion/router_cases.json"
);
const ROOM: usize = 2048;

fn file() -> &'static CaseFile {
    static FILE: std::sync::OnceLock<CaseFile> = std::sync::OnceLock::new();
    FILE.get_or_init(|| CaseFile::parse(&std::fs::read_to_string(CASES).unwrap()).unwrap())
}

fn ia(s: &str) -> IsdAsn {
    s.parse().unwrap()
}

fn case_input(name: &str) -> (Vec<u8>, Ingress, String) {
    let c = file().cases.iter().find(|c| c.name == name).unwrap();
    (c.input.clone(), c.ingress, c.router.clone())
}

fn run_on(router: &Router, input: &[u8], ingress: Ingress, now_ns: u64) -> (Disposition, Vec<u8>) {
    let mut p = Processor::new(router);
    let mut buf = vec![0u8; ROOM];
    buf[..input.len()].copy_from_slice(input);
    let d = p.process(&mut buf, input.len(), ingress, now_ns);
    let n = match d {
        Disposition::Reply { len, .. } => len,
        _ => input.len(),
    };
    buf.truncate(n);
    (d, buf)
}

fn run(router: &str, input: &[u8], ingress: Ingress) -> (Disposition, Vec<u8>) {
    let f = file();
    run_on(&f.routers[router], input, ingress, f.now_ns)
}

/// A SCION packet: common + address header, `path` bytes, NextHdr `next`, `payload`.
fn packet(src_ia: IsdAsn, dst_ia: IsdAsn, path: &[u8], next: u8, payload: &[u8]) -> Vec<u8> {
    let repr = ScionRepr {
        version: 0,
        traffic_class: 0,
        flow_id: FlowId::new(1).unwrap(),
        next_header: NextHdr::from(next),
        path_type: PathType::Scion,
        path_len: path.len(),
        payload_len: payload.len() as u16,
        dst_ia,
        src_ia,
        dst_host: HostAddr::V4(Ipv4Addr::new(10, 0, 0, 2)),
        src_host: HostAddr::V4(Ipv4Addr::new(10, 0, 0, 1)),
    };
    let hl = repr.header_len();
    let mut v = vec![0u8; hl + payload.len()];
    repr.emit(&mut v).unwrap();
    v[repr.address_end()..hl].copy_from_slice(path);
    v[hl..].copy_from_slice(payload);
    v
}

/// Router R (1-ff00:0:110): C=1 down segment 100 -> 110 -> 111, packet at R's hop
/// (ConsIngress 1 = parent link, ConsEgress 2 = child link), R's MAC valid.
fn transit_path(router: &Router, ts: u32, exp_time: u8) -> Vec<u8> {
    let seg_id = 0x1234;
    let mut hops = [HopField::default(); 64];
    hops[0] = HopField {
        exp_time: 63,
        cons_ingress: 0,
        cons_egress: 13,
        ..HopField::default()
    };
    hops[1] = HopField {
        exp_time,
        cons_ingress: 1,
        cons_egress: 2,
        ..HopField::default()
    };
    hops[2] = HopField {
        exp_time: 63,
        cons_ingress: 7,
        cons_egress: 0,
        ..HopField::default()
    };
    let mac = router.hop_mac().compute(&hops[1].mac_input(seg_id, ts));
    hops[1].mac.copy_from_slice(&mac[..6]);
    let mut infos = [InfoField::default(); 3];
    infos[0] = InfoField {
        peer: false,
        cons_dir: true,
        seg_id,
        timestamp: ts,
    };
    let path = ScionPathRepr {
        meta: PathMeta {
            curr_inf: 0,
            curr_hf: 1,
            reserved: 0,
            seg_len: [3, 0, 0],
        },
        infos,
        hops,
    };
    let mut b = vec![0u8; path.buffer_len()];
    path.emit(&mut b).unwrap();
    b
}

fn ts0() -> u32 {
    (file().now_ns / 1_000_000_000) as u32 - 600
}

/// Sanity: the hand-built transit packet is forwarded parent -> child.
#[test]
fn sanity_hand_built_transit_is_forwarded() {
    let r = &file().routers["R"];
    let udp = [0x75, 0x30, 0x75, 0x31, 0, 8, 0, 0];
    let pkt = packet(
        ia("1-ff00:0:100"),
        ia("1-ff00:0:111"),
        &transit_path(r, ts0(), 63),
        17,
        &udp,
    );
    let (d, _) = run("R", &pkt, Ingress::External(1));
    assert_eq!(d, Disposition::Forward { ifid: 2 });
}

/// NextHdr is HBH, an E2E whose NextHdr is E2E/HBH are decode errors -> drop.
#[test]
fn extension_header_longer_than_the_packet_is_dropped() {
    let r = &file().routers["R"];
    let path = transit_path(r, ts0(), 63);
    // HBH with ExtLen 255 (1024 bytes) in a 8-byte payload.
    let pkt = packet(
        ia("1-ff00:0:100"),
        ia("1-ff00:0:111"),
        &path,
        200,
        &[17, 255, 0, 0, 0, 0, 0, 0],
    );
    let (d, _) = run("R", &pkt, Ingress::External(1));
    assert!(matches!(d, Disposition::Drop(_)), "truncated HBH: {d:?}");
}

#[test]
fn hop_by_hop_header_after_hop_by_hop_is_dropped() {
    let r = &file().routers["R"];
    let path = transit_path(r, ts0(), 63);
    // HBH(next HBH) | HBH(next UDP) | UDP
    let mut pl = vec![200, 0, 1, 0, 17, 0, 1, 0];
    pl.extend_from_slice(&[0x75, 0x30, 0x75, 0x31, 0, 8, 0, 0]);
    let pkt = packet(ia("1-ff00:0:100"), ia("1-ff00:0:111"), &path, 200, &pl);
    let (d, _) = run("R", &pkt, Ingress::External(1));
    assert!(matches!(d, Disposition::Drop(_)), "HBH after HBH: {d:?}");
}

#[test]
fn end_to_end_header_after_end_to_end_is_dropped() {
    let r = &file().routers["R"];
    let path = transit_path(r, ts0(), 63);
    let mut pl = vec![201, 0, 1, 0, 17, 0, 1, 0];
    pl.extend_from_slice(&[0x75, 0x30, 0x75, 0x31, 0, 8, 0, 0]);
    let pkt = packet(ia("1-ff00:0:100"), ia("1-ff00:0:111"), &path, 201, &pl);
    let (d, _) = run("R", &pkt, Ingress::External(1));
    assert!(matches!(d, Disposition::Drop(_)), "E2E after E2E: {d:?}");
}

/// Go checks TypeCode == (130, 0) and decodes the 20-byte block, else no reply.
#[test]
fn router_alert_on_traceroute_request_with_code_1_is_dropped() {
    let (mut input, ingress, router) = case_input("traceroute_ingress_alert");
    let hl = ScionHeader::new_checked(&input[..]).unwrap().header_len();
    assert_eq!(input[hl], 130, "L4 is a traceroute request");
    let (d, _) = run(&router, &input, ingress);
    assert!(matches!(
        d,
        Disposition::Reply {
            scmp: ScmpReason::TracerouteReply,
            ..
        }
    ));
    input[hl + 1] = 1; // code 1: not a (130, 0) traceroute request
    let (d, _) = run(&router, &input, ingress);
    assert!(matches!(d, Disposition::Drop(_)), "code 1: {d:?}");
}

#[test]
fn router_alert_on_cut_traceroute_request_is_dropped() {
    let (input, ingress, router) = case_input("traceroute_ingress_alert");
    let hl = ScionHeader::new_checked(&input[..]).unwrap().header_len();
    // Keep type, code, checksum, identifier, sequence (8 bytes); drop IA and interface.
    let mut cut = input[..hl + 8].to_vec();
    cut[6..8].copy_from_slice(&8u16.to_be_bytes());
    let (d, _) = run(&router, &cut, ingress);
    assert!(
        matches!(d, Disposition::Drop(_)),
        "8-byte traceroute request: {d:?}"
    );
}

/// -> drop". Go decodes the quoted UDP header (8 bytes) and drops if it cannot.
#[test]
fn scmp_error_quoting_a_cut_udp_header_is_dropped() {
    let (input, ingress, router) = case_input("inbound_from_parent");
    let h = ScionHeader::new_checked(&input[..]).unwrap();
    let hl = h.header_len();
    assert_eq!(input[4], 17);
    // Quote: a minimal SCION header (HdrLen 9 = 36 bytes, NextHdr UDP) + 4 UDP bytes.
    let mut quote = vec![0u8; 36];
    quote[4] = 17;
    quote[5] = 9;
    quote.extend_from_slice(&[0x75, 0x30, 0x9c, 0x40]); // src port 30000, dst port, no length
    let mut scmp = vec![4, 51, 0, 0, 0, 0, 0, 40]; // Parameter Problem 4/51, pointer
    scmp.extend_from_slice(&quote);
    let mut pkt = input[..hl].to_vec();
    pkt[4] = 202;
    pkt[6..8].copy_from_slice(&(scmp.len() as u16).to_be_bytes());
    pkt.extend_from_slice(&scmp);
    let (d, _) = run(&router, &pkt, ingress);
    assert!(matches!(d, Disposition::Drop(_)), "{d:?}");
}

/// drops a message shorter than 8 bytes.
#[test]
fn cut_echo_reply_is_dropped() {
    let (input, ingress, router) = case_input("inbound_from_parent");
    let hl = ScionHeader::new_checked(&input[..]).unwrap().header_len();
    let scmp = [129, 0, 0, 0, 0x75, 0x30]; // identifier only, no sequence
    let mut pkt = input[..hl].to_vec();
    pkt[4] = 202;
    pkt[6..8].copy_from_slice(&(scmp.len() as u16).to_be_bytes());
    pkt.extend_from_slice(&scmp);
    let (d, _) = run(&router, &pkt, ingress);
    assert!(matches!(d, Disposition::Drop(_)), "{d:?}");
}
