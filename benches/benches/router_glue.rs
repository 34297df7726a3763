//! The router's glue around scion-dp without DPDK (`router-core`): for a burst of 32 transit
//! packets (IPv4 link in, IPv4 link out), underlay classification of each received frame, the
//! routing decision for scion-dp's forward (set here, not computed: scion-dp has its own
//! benches) and the underlay rewrite in place, as the worker loop does them per burst. Beside
//! it, the same-run baseline of restoring the 32 arrival headers the loop starts from.

use std::hint::black_box;
use std::net::{IpAddr, SocketAddr};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use router_core::classify::{self, Frame};
use router_core::counters::IoCounters;
use router_core::forward::{self, EgressMacs, PacketMeta};
use router_core::neighbor::Aging;
use router_core::tables::{IfEgress, PortNeighbors, Tables};
use router_core::underlay::{self, V4_HDR_LEN};
use scion_dp::{Disposition, Ingress};

/// Packets per burst (the worker's rx burst).
const BURST: usize = 32;
/// A frame's SCION payload length (a small transit packet).
const PAYLOAD_LEN: usize = 130;
/// Ports: 0 internal, 1 and 2 one external link each.
const PORTS: usize = 3;
/// The interface packets arrive by.
const IN_IF: u16 = 1;
/// The interface packets leave by.
const OUT_IF: u16 = 2;
/// Time of the burst (Unix s).
const NOW_S: u32 = 1_000;
/// Learned neighbours (a busy internal network; the links' next hops are among them).
const NEIGHBOURS: u32 = 256;

fn port_mac(i: usize) -> [u8; 6] {
    [2, 0, 0, 0, 0, i as u8]
}

fn addr(s: &str) -> SocketAddr {
    s.parse().expect("literal address")
}

/// Links 1 (port 1) and 2 (port 2), next-hop MACs learned, not configured.
fn tables() -> Tables {
    let links = [
        (addr("192.0.2.1:50000"), addr("192.0.2.2:50000")),
        (addr("198.51.100.1:50000"), addr("198.51.100.2:50000")),
    ];
    let mut egress = vec![None; usize::from(OUT_IF) + 1];
    let mut ingress = vec![vec![(addr("10.0.0.1:30042"), Ingress::Internal)]];
    let learned: Vec<PortNeighbors> = (0..PORTS)
        .map(|_| PortNeighbors::new(1024, Aging::default(), Vec::new(), Vec::new()))
        .collect();
    for (k, (local, remote)) in links.into_iter().enumerate() {
        let (port, ifid) = (k + 1, k as u16 + 1);
        egress[usize::from(ifid)] = Some(IfEgress::new(port, port_mac(port), local, remote, None));
        ingress.push(vec![(local, Ingress::External(ifid))]);
        let IpAddr::V4(next) = remote.ip() else {
            unreachable!("IPv4 links")
        };
        assert!(
            learned[port]
                .v4
                .learn(next, [7, 0, 0, 0, 0, port as u8], NOW_S)
        );
    }
    // Other neighbours around them (one whose slots are taken is left out).
    for i in 0..NEIGHBOURS {
        let _ = learned[1]
            .v4
            .learn(std::net::Ipv4Addr::from(0x0a00_0000 + i), [9; 6], NOW_S);
    }
    Tables {
        ports: (0..PORTS).map(port_mac).collect(),
        port_ids: (0..PORTS as u16).collect(),
        ingress,
        egress,
        internal_port: 0,
        internal_addr: addr("10.0.0.1:30042"),
        neighbors: Vec::new(),
        learned,
        default_macs: vec![None; PORTS],
        vlans: vec![None; PORTS],
        siblings: Vec::new(),
    }
}

/// A packet of the burst as the worker holds it: frame and metadata.
struct Packet {
    /// The frame (no head room needed: the headers keep their length).
    frame: Vec<u8>,
    /// What the underlay said and scion-dp decided.
    meta: PacketMeta,
}

fn bench(c: &mut Criterion) {
    let t = tables();
    let (local, remote) = (addr("192.0.2.1:50000"), addr("192.0.2.2:50000"));
    let mut arrival = vec![0xa5u8; V4_HDR_LEN + PAYLOAD_LEN];
    assert!(underlay::write(
        &mut arrival,
        [7, 0, 0, 0, 0, 1],
        port_mac(1),
        &remote,
        &local,
        PAYLOAD_LEN
    ));
    let header: [u8; V4_HDR_LEN] = arrival[..V4_HDR_LEN].try_into().expect("length");
    let mut burst: Vec<Packet> = (0..BURST)
        .map(|_| Packet {
            frame: arrival.clone(),
            meta: PacketMeta::default(),
        })
        .collect();
    let in_port = usize::from(IN_IF);

    let mut g = c.benchmark_group("router_glue");
    g.throughput(Throughput::Elements(BURST as u64));
    g.bench_function("baseline_restore_headers_32", |b| {
        b.iter(|| {
            for p in burst.iter_mut() {
                p.frame[..V4_HDR_LEN].copy_from_slice(black_box(&header));
            }
            black_box(&burst);
        })
    });
    g.bench_function("classify_route_rewrite_32_transit", |b| {
        b.iter(|| {
            let mut io = IoCounters::default();
            let view = t.port(in_port);
            let mut sent = 0usize;
            for p in burst.iter_mut() {
                p.frame[..V4_HDR_LEN].copy_from_slice(black_box(&header));
                match classify::classify(&t, &view, NOW_S, &mut p.frame, &mut io) {
                    Frame::Scion(c) => p.meta.receive(&c),
                    _ => unreachable!("transit packets are SCION for us"),
                }
                // scion-dp's decision for a transit packet.
                p.meta
                    .set_disposition(Disposition::Forward { ifid: OUT_IF });
            }
            let mut macs = EgressMacs::default();
            for p in burst.iter_mut() {
                let mut arrived = None;
                let r = forward::route(
                    &t,
                    in_port,
                    NOW_S,
                    &p.meta,
                    &p.frame,
                    &mut macs,
                    &mut arrived,
                    &mut io,
                );
                let e = r.send.expect("routed");
                let range = e.rewrite_in(&mut p.frame, 0, p.meta.offset).expect("room");
                sent += range.len();
            }
            black_box((sent, io))
        })
    });
    g.finish();
    // The packets left by the other link with its headers.
    let out = underlay::parse(&burst[0].frame).expect("rewritten frame parses");
    assert_eq!(out.dst, addr("198.51.100.2:50000"));
}

criterion_group!(benches, bench);
criterion_main!(benches);
