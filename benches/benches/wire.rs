//! idint-wire: parse and emit a SCION/UDP packet with a 3-segment path and an ID-INT HBH
//! header holding 4 entries. Baseline in the same run: copying the packet bytes.

use std::hint::black_box;

use benches::emit_packet;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use idint_wire::idint::IdInt;
use idint_wire::packet::{L4, Packet};

fn wire(c: &mut Criterion) {
    let mut buf = [0u8; 1500];
    let len = emit_packet(&mut buf).expect("benchmark packet");
    let pkt = buf[..len].to_vec();
    {
        let p = Packet::parse(&pkt).unwrap();
        let idint = IdInt::locate(p.hop_by_hop().unwrap().into_inner())
            .unwrap()
            .unwrap();
        assert_eq!(idint.entries().count(), 4);
        assert_eq!(p.header.path_bytes().len(), 4 + 3 * 8 + 10 * 12);
    }
    let mut g = c.benchmark_group("wire");
    g.throughput(Throughput::Elements(1));
    g.bench_function("baseline_copy_packet", |b| {
        let mut out = [0u8; 1500];
        b.iter(|| {
            out[..len].copy_from_slice(black_box(&pkt));
            black_box(&out);
        })
    });
    g.bench_function("parse_scion_layers_only", |b| {
        b.iter(|| {
            let p = Packet::parse(black_box(&pkt)).unwrap();
            black_box((p.header.dst_ia(), p.l4_offset))
        })
    });
    g.bench_function("parse_scion_udp_idint4", |b| {
        b.iter(|| {
            let p = Packet::parse(black_box(&pkt)).unwrap();
            let hbh = p.hop_by_hop().unwrap();
            let idint = IdInt::locate(hbh.into_inner()).unwrap().unwrap();
            let (_, tos) = idint.tos_entry().unwrap();
            let port = match p.l4 {
                L4::Udp(u) => u.dst_port(),
                _ => 0,
            };
            black_box((p.header.dst_ia(), tos.hop(), port))
        })
    });
    g.bench_function("emit_scion_udp_idint4", |b| {
        let mut out = [0u8; 1500];
        b.iter(|| black_box(emit_packet(black_box(&mut out)).unwrap()))
    });
    g.finish();
}

criterion_group!(benches, wire);
criterion_main!(benches);
