//! ID-INT in the router: the added cost per packet of writing an authenticated entry, and an
//! authenticated + encrypted one, for 8 and 42 bytes of requested metadata, one packet per
//! call and in bursts of 32, with cached keys.
//!
//! Every variant processes the *same* packet (a transit packet of the reference router cases
//! with an ID-INT request added) in the same run; the baseline is the router without the
//! ID-INT stage (the options pass untouched), so `variant - baseline` is the ID-INT cost.

use std::hint::black_box;
use std::net::Ipv6Addr;
use std::sync::Arc;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use drkey::cache::KeyCache;
use drkey::provider::LocalProvider;
use idint_wire::idint::{AggregationFunction, AggregationMode, Instruction, RequestBuilder};
use scion_dp::config::Router;
use scion_dp::idint::{CtrDrbg, DrkeyKeys, IdIntStage};
use scion_dp::telemetry::{HopContext, TelemetrySource};
use scion_dp::{Disposition, Ingress, PacketSlot, Processor};
use scion_dp_replay::CaseFile;

const CASES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../shared/vectors/scion/router_cases.json"
);
const BURST: usize = 32;
const ROOM: usize = 2048;

/// A source with a clock and a node address, as a router has.
struct Source;
impl TelemetrySource for Source {
    fn node_id(&self) -> Option<u32> {
        Some(7)
    }
    fn ingress_timestamp_ns(&mut self, c: &HopContext) -> Option<u64> {
        Some(c.now_ns)
    }
    fn node_ipv6(&self) -> Option<Ipv6Addr> {
        Some(Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 7))
    }
}

/// The request: 8 bytes (node count 2 + ingress timestamp 6) or 42 bytes (all four bitmap
/// items, 10, and four 8-byte slots).
fn request(metadata: usize, encrypt: bool, now_ns: u64) -> RequestBuilder {
    let (bitmap, ins) = if metadata == 8 {
        (
            0x4,
            [
                Instruction(0x82),
                Instruction::NOP,
                Instruction::NOP,
                Instruction::NOP,
            ],
        )
    } else {
        (
            0xf,
            [
                Instruction(0xc1),
                Instruction(0xc2),
                Instruction(0xc1),
                Instruction(0xc2),
            ],
        )
    };
    RequestBuilder {
        encrypt,
        mode: AggregationMode::PerBorderRouter,
        inst_bitmap: bitmap,
        aggregation: [AggregationFunction::Last; 4],
        instructions: ins,
        stack_len_words: 64,
        ..RequestBuilder::new(now_ns % (1 << 48))
    }
}

/// The case packet with the request's hop-by-hop header inserted after the SCION header.
fn with_request(input: &[u8], req: &RequestBuilder) -> Vec<u8> {
    let hl = usize::from(input[5]) * 4;
    let mut hbh = vec![0u8; req.hbh_len()];
    req.emit_signed(&mut hbh, input[4], &idint_wire::crypto::aes128(&[1; 16]))
        .unwrap();
    let mut out = input[..hl].to_vec();
    out.extend_from_slice(&hbh);
    out.extend_from_slice(&input[hl..]);
    out[4] = idint_wire::ext::HBH;
    let pl = u16::from_be_bytes([out[6], out[7]]) + hbh.len() as u16;
    out[6..8].copy_from_slice(&pl.to_be_bytes());
    out
}

fn stage(router: &Router) -> IdIntStage<DrkeyKeys, Source, CtrDrbg> {
    let provider = Arc::new(LocalProvider::new(router.local_ia(), &[3; 16], 86_400).unwrap());
    let keys = DrkeyKeys {
        cache: KeyCache::new(provider, 64),
        local: router.local_ia(),
    };
    IdIntStage::new(keys, Source, CtrDrbg::new([5; 32]))
}

fn fill_slots<'a>(
    bufs: &'a mut [[u8; ROOM]],
    input: &[u8],
    ingress: Ingress,
) -> [PacketSlot<'a>; BURST] {
    let mut it = bufs.iter_mut();
    std::array::from_fn(|_| {
        let buf = it.next().expect("BURST buffers");
        buf[..input.len()].copy_from_slice(black_box(input));
        PacketSlot {
            buf: &mut buf[..],
            len: input.len(),
            ingress,
            disposition: None,
        }
    })
}

fn idint(c: &mut Criterion) {
    let text = std::fs::read_to_string(CASES).expect("shared vectors beside the checkout");
    let file = CaseFile::parse(&text).unwrap();
    let case = file
        .cases
        .iter()
        .find(|c| c.name == "transit_parent_to_child")
        .unwrap();
    let router = &file.routers[&case.router];
    let now = file.now_ns;
    let mut g = c.benchmark_group("idint");
    for metadata in [8usize, 42] {
        for (label, encrypt) in [("auth", false), ("auth_enc", true)] {
            let input = with_request(&case.input, &request(metadata, encrypt, now));
            let len = input.len();
            // Only meaningful if the router forwards and really writes the entry.
            {
                let mut st = stage(router);
                let mut buf = vec![0u8; ROOM];
                buf[..len].copy_from_slice(&input);
                let d =
                    Processor::new(router).process_with(&mut buf, len, case.ingress, now, &mut st);
                assert!(matches!(d, Disposition::Forward { .. }), "{d:?}");
                assert_eq!(st.counters.pushed, 1);
                assert_eq!(st.counters.encrypted, u64::from(encrypt));
            }
            let id = format!("{metadata}B_{label}");
            g.throughput(Throughput::Elements(1));
            g.bench_function(BenchmarkId::new("single_baseline_no_idint", &id), |b| {
                let mut p = Processor::new(router);
                let mut buf = vec![0u8; ROOM];
                b.iter(|| {
                    buf[..len].copy_from_slice(black_box(&input));
                    black_box(p.process(&mut buf, len, case.ingress, now))
                })
            });
            g.bench_function(BenchmarkId::new("single", &id), |b| {
                let mut p = Processor::new(router);
                let mut st = stage(router);
                let mut buf = vec![0u8; ROOM];
                b.iter(|| {
                    buf[..len].copy_from_slice(black_box(&input));
                    black_box(p.process_with(&mut buf, len, case.ingress, now, &mut st))
                })
            });
            g.throughput(Throughput::Elements(BURST as u64));
            g.bench_function(BenchmarkId::new("burst32_baseline_no_idint", &id), |b| {
                let mut p = Processor::new(router);
                let mut bufs = vec![[0u8; ROOM]; BURST];
                b.iter(|| {
                    let mut slots = fill_slots(&mut bufs, &input, case.ingress);
                    p.process_burst(&mut slots, now);
                    black_box(slots[BURST - 1].disposition)
                })
            });
            g.bench_function(BenchmarkId::new("burst32", &id), |b| {
                let mut p = Processor::new(router);
                let mut st = stage(router);
                let mut bufs = vec![[0u8; ROOM]; BURST];
                b.iter(|| {
                    let mut slots = fill_slots(&mut bufs, &input, case.ingress);
                    p.process_burst_with(&mut slots, now, &mut st);
                    black_box(slots[BURST - 1].disposition)
                })
            });
        }
    }
    g.finish();
}

criterion_group!(benches, idint);
criterion_main!(benches);
