//! The router's underlay work without DPDK (`router-core`): parsing a received Ethernet/IPv4/
//! UDP frame, writing the headers of a forwarded one (template and generic writer), and a
//! neighbour-table lookup, beside a same-run baseline (copying the 64-byte header block).

use std::hint::black_box;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use router_core::neighbor::{Aging, NeighborTable};
use router_core::underlay::{self, V4_HDR_LEN, V4Header};

/// A frame's SCION payload length (a small transit packet).
const PAYLOAD_LEN: usize = 130;
const SRC_MAC: [u8; 6] = [2, 0, 0, 0, 0, 1];
const DST_MAC: [u8; 6] = [2, 0, 0, 0, 0, 2];
/// Learned neighbours in the table (a busy internal network).
const NEIGHBOURS: u32 = 256;

fn endpoints() -> (SocketAddrV4, SocketAddrV4) {
    (
        SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 1), 30042),
        SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 2), 30042),
    )
}

fn bench(c: &mut Criterion) {
    let (src, dst) = endpoints();
    let mut frame = vec![0u8; V4_HDR_LEN + PAYLOAD_LEN];
    let (s, d) = (SocketAddr::V4(src), SocketAddr::V4(dst));
    assert!(underlay::write(
        &mut frame,
        SRC_MAC,
        DST_MAC,
        &s,
        &d,
        PAYLOAD_LEN
    ));
    let template = V4Header::new(SRC_MAC, src, dst);
    let table = NeighborTable::new(1024, Aging::default());
    for i in 0..NEIGHBOURS {
        assert!(table.learn(Ipv4Addr::from(0x0a00_0000 + i), DST_MAC, 1_000));
    }

    let mut g = c.benchmark_group("underlay");
    g.throughput(Throughput::Elements(1));
    g.bench_function("baseline_copy_header_block", |b| {
        let mut out = [0u8; 64];
        b.iter(|| {
            out.copy_from_slice(&black_box(&frame)[..64]);
            black_box(&out);
        })
    });
    g.bench_function("parse_ipv4_udp", |b| {
        b.iter(|| black_box(underlay::parse(black_box(&frame))))
    });
    g.bench_function("write_ipv4_template", |b| {
        let mut out = frame.clone();
        b.iter(|| black_box(template.write(black_box(&mut out), DST_MAC, PAYLOAD_LEN)))
    });
    g.bench_function("write_ipv4_generic", |b| {
        let mut out = frame.clone();
        b.iter(|| {
            black_box(underlay::write(
                black_box(&mut out),
                SRC_MAC,
                DST_MAC,
                &s,
                &d,
                PAYLOAD_LEN,
            ))
        })
    });
    g.bench_function("neighbour_lookup", |b| {
        let mut i = 0u32;
        b.iter(|| {
            i = (i + 1) % NEIGHBOURS;
            black_box(table.lookup(Ipv4Addr::from(0x0a00_0000 + i), 1_010))
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
