//! Shared helpers of the router integration tests: a configuration directory from the
//! shared example topology, SCION packets with valid hop fields, pcap files, and running the
//! router binary in its own process (EAL initialises once per process).
#![allow(dead_code)]

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use drkey::Protocol;
use drkey::provider::{Level1Provider, LocalProvider};
use idint_wire::crypto::{Aes128Enc, aes128};
use idint_wire::idint::crypto::sign_source;
use idint_wire::idint::{AggregationMode, IdInt, Instruction, RequestBuilder, Verifier};
use idint_wire::path::{HopField, InfoField, PathMeta, ScionPathRepr};
use idint_wire::scion::{FlowId, NextHdr, PathType, ScionRepr};
use idint_wire::udp::UdpRepr;
use idint_wire::{HostAddr, IsdAsn};
use scion_dp::config::{Router, RouterConfig};
use scion_dp::hop_mac::HopMac;
use scion_topology::Topology;
use wire_tools::pcap::{LINKTYPE_ETHERNET, PcapReader, PcapWriter, ethernet_ipv4_udp};

/// The example topology used by every test (AS 1-ff00:0:1, router br1a).
pub fn example_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/scion/config_examples/router_benchmark")
}

/// Router id in the example topology.
pub const ROUTER: &str = "br1a";
/// br1a's internal address.
pub const INTERNAL: &str = "10.123.10.1:30042";
/// An end host in the AS.
pub const HOST: &str = "10.123.10.50:31000";
/// br1a's and its neighbour's underlay addresses on interface 2.
pub const IF2_LOCAL: &str = "10.123.2.1:50000";
/// Neighbour of interface 2.
pub const IF2_REMOTE: &str = "10.123.2.2:50000";
/// MAC configured for the neighbour of interface 2.
pub const IF2_MAC: [u8; 6] = [0x02, 0, 0, 0, 0x02, 0x02];
/// SCION destination host (in 1-ff00:0:2).
pub const DST_HOST: Ipv4Addr = Ipv4Addr::new(10, 2, 0, 9);
/// The source's ID-INT key (host-to-host; shared by source and verifier in the test).
pub const SOURCE_KEY: [u8; 16] = [0x11; 16];

/// The router's data-plane configuration as the test sees it.
pub fn router_config() -> RouterConfig {
    let topo = Topology::load(example_dir().join("topology.json")).unwrap();
    topo.router_config(ROUTER, example_dir().join("keys"))
        .unwrap()
}

/// The AS-to-host ID-INT key of AS 1-ff00:0:1 for the destination host at `now_s`.
pub fn as_key(now_s: u64) -> Aes128Enc {
    as_key_for(now_s, dst_ia(), DST_HOST)
}

/// The AS-to-host ID-INT key of AS 1-ff00:0:1 for `host` in `ia` at `now_s`.
pub fn as_key_for(now_s: u64, ia: IsdAsn, host: Ipv4Addr) -> Aes128Enc {
    let cfg = router_config();
    let keys = scion_topology::MasterKeys::load(example_dir().join("keys")).unwrap();
    let p = LocalProvider::new(cfg.local_ia, &keys.master0, 86_400).unwrap();
    let (_, l1) = p.level1(Protocol::IDINT, cfg.local_ia, ia, now_s).unwrap();
    drkey::as_host(&l1.cipher(), &HostAddr::V4(host))
        .unwrap()
        .cipher()
}

/// The neighbour AS behind interface 2.
pub fn dst_ia() -> IsdAsn {
    "1-ff00:0:2".parse().unwrap()
}

/// Unix seconds now.
pub fn now_s() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// A SCION/UDP packet from a host of 1-ff00:0:1 to 1-ff00:0:2 down one segment that leaves
/// br1a on interface `egress`; hop field 0 carries a valid MAC unless `bad_mac`. With `idint`, it
/// carries an ID-INT request (destination verifier, encrypted, ingress timestamp and node id).
pub fn packet(now_s: u64, egress: u16, bad_mac: bool, idint: bool, payload: &[u8]) -> Vec<u8> {
    let req = idint.then(|| request(now_s, false, false));
    outbound(now_s, egress, bad_mac, req, payload)
}

/// The ID-INT request the tests send (destination verifier, encrypted, ingress timestamp).
pub fn request(now_s: u64, infrastructure: bool, discard: bool) -> RequestBuilder {
    RequestBuilder {
        encrypt: true,
        infrastructure,
        discard,
        mode: AggregationMode::PerBorderRouter,
        verifier: Verifier::Destination,
        inst_bitmap: 0x8,
        instructions: [
            Instruction(0x82),
            Instruction::NOP,
            Instruction::NOP,
            Instruction::NOP,
        ],
        stack_len_words: 32,
        source_port: 7,
        ..RequestBuilder::new((now_s * 1_000_000_000) % (1 << 48))
    }
}

/// A host in the local AS that inbound packets are delivered to.
pub const LOCAL_HOST: Ipv4Addr = Ipv4Addr::new(10, 123, 10, 60);

/// A packet from 1-ff00:0:2 arriving on br1a's interface 2 (last hop of a down segment) for
/// [`LOCAL_HOST`] port 32000, with an ID-INT request `req`.
pub fn inbound(now_s: u64, req: Option<RequestBuilder>, payload: &[u8]) -> Vec<u8> {
    inbound_via(now_s, 2, req, payload)
}

/// As [`inbound`], entering the AS on interface `entry`.
pub fn inbound_via(now_s: u64, entry: u16, req: Option<RequestBuilder>, payload: &[u8]) -> Vec<u8> {
    let cfg = router_config();
    let router = Router::new(cfg.clone()).unwrap();
    let ts = (now_s - 60) as u32;
    let seg_id = 0x4321;
    let mut path = ScionPathRepr {
        meta: PathMeta {
            curr_inf: 0,
            curr_hf: 1,
            reserved: 0,
            seg_len: [2, 0, 0],
        },
        infos: [InfoField::default(); 3],
        hops: [HopField::default(); 64],
    };
    path.infos[0] = InfoField {
        peer: false,
        cons_dir: false,
        seg_id,
        timestamp: ts,
    };
    path.hops[0] = HopField {
        exp_time: 63,
        cons_ingress: 7,
        cons_egress: 0,
        mac: [0xcd; 6],
        ..Default::default()
    };
    path.hops[1] = HopField {
        exp_time: 63,
        cons_ingress: 0,
        cons_egress: entry,
        ..Default::default()
    };
    // Against construction direction the packet carries SegID ^ MAC[..2] of the hop ahead;
    // the ingress router restores SegID and verifies the MAC with it.
    let full = router
        .hop_mac()
        .compute(&path.hops[1].mac_input(seg_id, ts));
    path.hops[1].mac.copy_from_slice(&full[..6]);
    path.infos[0].seg_id = seg_id ^ u16::from_be_bytes([full[0], full[1]]);
    build(
        &path,
        dst_ia(),
        Ipv4Addr::new(10, 2, 0, 9),
        cfg.local_ia,
        LOCAL_HOST,
        req,
        payload,
    )
}

/// A packet from [`HOST`] leaving the AS on interface `egress`, with an ID-INT request `req`.
pub fn outbound(
    now_s: u64,
    egress: u16,
    bad_mac: bool,
    req: Option<RequestBuilder>,
    payload: &[u8],
) -> Vec<u8> {
    let cfg = router_config();
    let router = Router::new(cfg.clone()).unwrap();
    let ts = (now_s - 60) as u32;
    let seg_id = 0x1234;
    let mut path = ScionPathRepr {
        meta: PathMeta {
            curr_inf: 0,
            curr_hf: 0,
            reserved: 0,
            seg_len: [2, 0, 0],
        },
        infos: [InfoField::default(); 3],
        hops: [HopField::default(); 64],
    };
    path.infos[0] = InfoField {
        peer: false,
        cons_dir: true,
        seg_id,
        timestamp: ts,
    };
    path.hops[0] = HopField {
        exp_time: 63,
        cons_ingress: 0,
        cons_egress: egress,
        ..Default::default()
    };
    let block = path.hops[0].mac_input(seg_id, ts);
    let mac: &HopMac = router.hop_mac();
    let full = mac.compute(&block);
    path.hops[0].mac.copy_from_slice(&full[..6]);
    if bad_mac {
        path.hops[0].mac[0] ^= 0x80;
    }
    path.hops[1] = HopField {
        exp_time: 63,
        cons_ingress: 7,
        cons_egress: 0,
        mac: [0xab; 6],
        ..Default::default()
    };
    build(
        &path,
        cfg.local_ia,
        Ipv4Addr::new(10, 123, 10, 50),
        dst_ia(),
        DST_HOST,
        req,
        payload,
    )
}

fn build(
    path: &ScionPathRepr,
    src_ia: IsdAsn,
    src_host: Ipv4Addr,
    dst_ia: IsdAsn,
    dst_host: Ipv4Addr,
    req: Option<RequestBuilder>,
    payload: &[u8],
) -> Vec<u8> {
    let hbh_len = req.as_ref().map_or(0, |r| r.hbh_len());
    let scion = ScionRepr {
        version: 0,
        traffic_class: 0,
        flow_id: FlowId::from_u20(0xbeef),
        next_header: if req.is_some() {
            NextHdr::HopByHop
        } else {
            NextHdr::Udp
        },
        path_type: PathType::Scion,
        path_len: path.buffer_len(),
        payload_len: (hbh_len + 8 + payload.len()) as u16,
        dst_ia,
        src_ia,
        dst_host: HostAddr::V4(dst_host),
        src_host: HostAddr::V4(src_host),
    };
    let hl = scion.header_len();
    let mut pkt = vec![0u8; hl + hbh_len + 8 + payload.len()];
    scion.emit(&mut pkt).unwrap();
    path.emit(&mut pkt[scion.address_end()..]).unwrap();
    if let Some(req) = &req {
        req.emit_hbh(&mut pkt[hl..], 17).unwrap();
        let mut st = IdInt::locate(&mut pkt[hl..hl + hbh_len]).unwrap().unwrap();
        sign_source(&mut st, &aes128(&SOURCE_KEY)).unwrap();
    }
    let l4 = hl + hbh_len;
    UdpRepr {
        src_port: 31000,
        dst_port: 32000,
        payload_len: payload.len() as u16,
        checksum: 0,
    }
    .emit(&mut pkt[l4..])
    .unwrap();
    pkt[l4 + 8..].copy_from_slice(payload);
    pkt
}

/// An Ethernet/IPv4/UDP frame around `scion` from `src` to `dst`.
pub fn frame(src: &str, dst: &str, scion: &[u8]) -> Vec<u8> {
    let s: SocketAddrV4 = src.parse().unwrap();
    let d: SocketAddrV4 = dst.parse().unwrap();
    ethernet_ipv4_udp(s, d, scion)
}

/// Writes frames into a pcap file.
pub fn write_pcap(path: &Path, frames: &[Vec<u8>]) {
    let f = std::fs::File::create(path).unwrap();
    let mut w = PcapWriter::new(std::io::BufWriter::new(f), LINKTYPE_ETHERNET).unwrap();
    for (i, fr) in frames.iter().enumerate() {
        w.write(1_000_000 * i as u64, fr).unwrap();
    }
    w.finish().unwrap();
}

/// Reads every frame of a pcap file.
pub fn read_pcap(path: &Path) -> Vec<Vec<u8>> {
    let f = std::fs::File::open(path).unwrap();
    let mut r = PcapReader::new(std::io::BufReader::new(f)).unwrap();
    let mut out = Vec::new();
    while let Some(rec) = r.next_record().unwrap() {
        out.push(rec.data);
    }
    out
}

/// EAL arguments for a run without hugepages or PCI devices, with these `--vdev`s.
pub fn eal(vdevs: &[String]) -> String {
    let mut args: Vec<String> = [
        "--no-huge",
        "-m",
        "256",
        "--no-pci",
        "--no-shconf",
        "-l",
        "0-1",
        "--log-level=*:error",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.extend(vdevs.iter().map(|v| format!("--vdev={v}")));
    format!("{args:?}")
}

/// Writes `router.toml` into `dir` (topology and keys from the shared example) with one port
/// `device` carrying interfaces 2 and 3 and the internal network, BFD off (no peer answers
/// it: the links would stay down); `extra` is appended.
pub fn write_config(dir: &Path, vdevs: &[String], device: &str, extra: &str) -> PathBuf {
    let ex = example_dir();
    let text = format!(
        "topology = {:?}\nkeys = {:?}\nrouter_id = \"{ROUTER}\"\neal = {}\n\n[idint]\nnode_id = 77\n\n[bfd]\ndisable = true\n\n[[port]]\ndevice = \"{device}\"\ninterfaces = [2, 3]\ninternal = true\n\n[[neighbor]]\nip = \"10.123.2.2\"\nmac = \"02:00:00:00:02:02\"\n{extra}",
        ex.join("topology.json"),
        ex.join("keys"),
        eal(vdevs),
    );
    let p = dir.join("router.toml");
    std::fs::write(&p, text).unwrap();
    p
}

/// Runs the router binary to completion.
pub fn run_router(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_idint-router"))
        .args(args)
        .output()
        .unwrap()
}

/// What a router run on one `net_pcap` port gives back.
pub struct PcapRun {
    /// The JSON counter summary printed at exit.
    pub summary: serde_json::Value,
    /// The frames the router sent.
    pub sent: Vec<Vec<u8>>,
    /// Unix ns (whole seconds) just before the start and a second after the end: bounds for
    /// the timestamps the router wrote.
    pub t0: u64,
    /// See `t0`.
    pub t1: u64,
    /// What the router wrote to standard error.
    pub stderr: String,
}

/// Runs the router for `duration` seconds on a single `net_pcap` port that receives `frames`
/// (configuration of [`write_config`], or of [`write_config_ipv6`] if `ipv6`, whose text
/// `edit` may rewrite first); asserts a clean exit.
pub fn run_on_pcap(
    frames: &[Vec<u8>],
    ipv6: bool,
    duration: &str,
    edit: impl FnOnce(String) -> String,
) -> PcapRun {
    let dir = tempfile::tempdir().unwrap();
    let (inp, outp) = (dir.path().join("in.pcap"), dir.path().join("out.pcap"));
    write_pcap(&inp, frames);
    let vdev = format!(
        "net_pcap0,rx_pcap={},tx_pcap={}",
        inp.display(),
        outp.display()
    );
    let cfg = if ipv6 {
        write_config_ipv6(dir.path(), &[vdev], "net_pcap0", "")
    } else {
        write_config(dir.path(), &[vdev], "net_pcap0", "")
    };
    let text = edit(std::fs::read_to_string(&cfg).unwrap());
    std::fs::write(&cfg, text).unwrap();
    let t0 = now_s() * 1_000_000_000;
    let out = run_router(&["--config", cfg.to_str().unwrap(), "--duration", duration]);
    let t1 = now_s() * 1_000_000_000 + 1_000_000_000;
    assert!(
        out.status.success(),
        "router failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    PcapRun {
        summary: serde_json::from_slice(&out.stdout).unwrap(),
        sent: read_pcap(&outp),
        t0,
        t1,
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Parses an underlay frame: (src, dst, dst MAC, src MAC, UDP payload).
pub fn split(frame: &[u8]) -> (SocketAddr, SocketAddr, [u8; 6], [u8; 6], Vec<u8>) {
    let r = router_dpdk::underlay::parse(frame).expect("IPv4/UDP frame");
    let mut dmac = [0u8; 6];
    dmac.copy_from_slice(&frame[..6]);
    (
        r.src,
        r.dst,
        dmac,
        r.eth_src,
        frame[r.offset..r.offset + r.len].to_vec(),
    )
}

/// br1a's underlay address on interface 3 in the IPv6 variant of the topology.
pub const IF3_LOCAL6: &str = "[fd00:3::1]:50000";
/// Interface 3's neighbour in the IPv6 variant of the topology.
pub const IF3_REMOTE6: &str = "[fd00:3::3]:50000";

/// Writes `router.toml` as [`write_config`] does, but with a copy of the example topology
/// whose interface 3 runs over IPv6 ([`IF3_LOCAL6`] to [`IF3_REMOTE6`]).
pub fn write_config_ipv6(dir: &Path, vdevs: &[String], device: &str, extra: &str) -> PathBuf {
    let ex = example_dir().join("topology.json");
    let mut topo: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&ex).unwrap()).unwrap();
    topo["border_routers"][ROUTER]["interfaces"]["3"]["underlay"] =
        serde_json::json!({ "local": IF3_LOCAL6, "remote": IF3_REMOTE6 });
    let own = dir.join("topology.json");
    std::fs::write(&own, serde_json::to_string_pretty(&topo).unwrap()).unwrap();
    let cfg = write_config(dir, vdevs, device, extra);
    let text = std::fs::read_to_string(&cfg).unwrap();
    let (old, new) = (format!("{ex:?}"), format!("{own:?}"));
    assert!(text.contains(&old));
    std::fs::write(&cfg, text.replace(&old, &new)).unwrap();
    cfg
}

/// The ICMPv6 checksum (RFC 8200 8.1 pseudo header) of `msg`, written independently of the
/// router's code: 0 when `msg` carries a correct checksum.
pub fn icmpv6_checksum(src: Ipv6Addr, dst: Ipv6Addr, msg: &[u8]) -> u16 {
    let mut b = Vec::new();
    b.extend_from_slice(&src.octets());
    b.extend_from_slice(&dst.octets());
    b.extend_from_slice(&(msg.len() as u32).to_be_bytes());
    b.extend_from_slice(&[0, 0, 0, 58]);
    b.extend_from_slice(msg);
    if b.len() % 2 == 1 {
        b.push(0);
    }
    let mut s: u64 = b
        .chunks(2)
        .map(|c| u64::from(u16::from_be_bytes([c[0], c[1]])))
        .sum();
    while s >> 16 != 0 {
        s = (s & 0xffff) + (s >> 16);
    }
    !(s as u16)
}

/// An Ethernet/IPv6/ICMPv6 Neighbor Discovery frame from `mac`: ICMPv6 `ty` (135 or 136),
/// NA `flags`, `target`, then `opts`; hop limit `hop`; correct checksum.
pub fn nd_frame(
    ty: u8,
    flags: u8,
    mac: [u8; 6],
    (src, dst): (Ipv6Addr, Ipv6Addr),
    target: Ipv6Addr,
    opts: &[u8],
    hop: u8,
) -> Vec<u8> {
    let mut f = Vec::new();
    let o = dst.octets();
    let dmac = if dst.is_multicast() {
        [0x33, 0x33, o[12], o[13], o[14], o[15]]
    } else {
        [0xff; 6]
    };
    f.extend_from_slice(&dmac);
    f.extend_from_slice(&mac);
    f.extend_from_slice(&[0x86, 0xdd]);
    let mut msg = vec![ty, 0, 0, 0, flags, 0, 0, 0];
    msg.extend_from_slice(&target.octets());
    msg.extend_from_slice(opts);
    let c = icmpv6_checksum(src, dst, &msg);
    msg[2..4].copy_from_slice(&c.to_be_bytes());
    f.extend_from_slice(&[0x60, 0, 0, 0]);
    f.extend_from_slice(&(msg.len() as u16).to_be_bytes());
    f.extend_from_slice(&[58, hop]);
    f.extend_from_slice(&src.octets());
    f.extend_from_slice(&dst.octets());
    f.extend_from_slice(&msg);
    f
}

/// Whether `frame` is IPv6 carrying ICMPv6.
pub fn is_icmpv6(frame: &[u8]) -> bool {
    frame.len() > 54 && frame[12..14] == [0x86, 0xdd] && frame[20] == 58
}

/// The IPv6 addresses (source, destination), hop limit and ICMPv6 message of an ICMPv6 frame,
/// asserting that its checksum verifies.
pub fn icmpv6(frame: &[u8]) -> (Ipv6Addr, Ipv6Addr, u8, Vec<u8>) {
    assert!(is_icmpv6(frame));
    let len = usize::from(u16::from_be_bytes([frame[18], frame[19]]));
    let a = |i: usize| Ipv6Addr::from(<[u8; 16]>::try_from(&frame[i..i + 16]).unwrap());
    let (src, dst) = (a(22), a(38));
    let msg = frame[54..54 + len].to_vec();
    assert_eq!(icmpv6_checksum(src, dst, &msg), 0, "ICMPv6 checksum");
    (src, dst, frame[21], msg)
}
