//! The in-process pipeline per core (decode + verify/decrypt + map + detect) on 4-AS (5-router)
//! reports from a real scion-dp chain, against a baseline measured in the same run: the
//! MAC-chain verification alone (`verify_stack`) of the same reports.
//!
//! `cargo bench -p benches --bench pipeline`

#![allow(missing_docs)]

use std::hint::black_box;
use std::time::{Duration, Instant};

use collector_core::metrics::DetectionConfig;
use collector_core::pipeline::{Format, Pipeline, Shared, decode_batch};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use drkey::provider::LocalProvider;
use idint_report::{Message, idint_hbh, v1};
use idint_wire::HostAddr;
use idint_wire::crypto::Aes128Enc;
use idint_wire::idint::IdInt;
use idint_wire::idint::crypto::verify_stack;
use test_kit::chain::{self as chain, Ask, Chain, ases};

const NOW: u64 = 1_763_800_000_000_000_000;
const BATCH: usize = 64;
const BATCHES: usize = 16;

fn pipeline() -> Pipeline {
    chain::collector_pipeline(
        Shared::new(DetectionConfig::default(), 1024),
        &[NOW / 1_000_000_000],
    )
}

fn bench(c: &mut Criterion) {
    for encrypt in [false, true] {
        let mut chain = Chain::new(NOW, encrypt, Ask::Latency);
        let batches: Vec<Vec<u8>> = (0..BATCHES)
            .map(|i| chain.batch(BATCH, i as u64).encode_to_vec())
            .collect();
        let mut g = c.benchmark_group(if encrypt {
            "collector/encrypted"
        } else {
            "collector/plain"
        });
        g.throughput(Throughput::Elements((BATCH * BATCHES) as u64));

        // Baseline: MAC chain (and decryption) alone, keys at hand.
        let decoded: Vec<v1::ReportBatch> = batches
            .iter()
            .map(|b| decode_batch(b, Format::Protobuf).unwrap())
            .collect();
        let (src_key, hop_keys) = keys();
        let hbhs: Vec<Vec<u8>> = decoded
            .iter()
            .flat_map(|b| b.reports.iter().map(|r| idint_hbh(r).unwrap()))
            .collect();
        g.bench_function("baseline_verify_stack", |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let mut copies = hbhs.clone();
                    let t = Instant::now();
                    for h in copies.iter_mut() {
                        let mut idint = IdInt::locate(&mut h[..]).unwrap().unwrap();
                        let n = verify_stack(&mut idint, &src_key, |_, e| {
                            hop_keys.get(usize::from(e.hop()))
                        })
                        .unwrap();
                        black_box(n);
                    }
                    total += t.elapsed();
                }
                total
            })
        });

        // Protobuf decoding alone (a part of the pipeline's cost).
        g.bench_function("decode_only", |b| {
            b.iter(|| {
                for bytes in &batches {
                    let batch = decode_batch(black_box(bytes), Format::Protobuf).unwrap();
                    black_box(batch);
                }
            })
        });

        let mut p = pipeline();
        g.bench_function("pipeline_decode_verify_map_detect", |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    p.clear_replay();
                    let t = Instant::now();
                    for bytes in &batches {
                        let out = p.process_encoded(black_box(bytes), NOW).unwrap();
                        assert_eq!(out.accepted, BATCH);
                    }
                    total += t.elapsed();
                }
                total
            })
        });
        g.finish();
    }
}

/// The collector's keys for the chain, derived directly.
fn keys() -> (Aes128Enc, Vec<Aes128Enc>) {
    use drkey::provider::Level1Provider;
    let a = ases()[0];
    let now_s = NOW / 1_000_000_000;
    let col = HostAddr::V4(chain::COLLECTOR);
    let hop = (0..4)
        .map(|i| {
            let asi = ases()[i];
            let p = LocalProvider::new(asi, &chain::secret(i), chain::EPOCH).unwrap();
            let (_, l1) = p.level1(drkey::Protocol::IDINT, asi, a, now_s).unwrap();
            drkey::as_host(&l1.cipher(), &col).unwrap().cipher()
        })
        .collect();
    let p = LocalProvider::new(a, &chain::secret(0), chain::EPOCH).unwrap();
    let (_, l1) = p.level1(drkey::Protocol::IDINT, a, a, now_s).unwrap();
    let ha = drkey::host_as(&l1.cipher(), &HostAddr::V4(chain::RA_HOST)).unwrap();
    (drkey::host_host(&ha.cipher(), &col).unwrap().cipher(), hop)
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).measurement_time(Duration::from_secs(3));
    targets = bench
}
criterion_main!(benches);
