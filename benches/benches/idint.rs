//! ID-INT in the router: the added cost per packet of writing an authenticated entry, and an
//! authenticated + encrypted one, for 8 and 42 bytes of requested metadata, one packet per
//! call and in bursts of 32, with cached keys.
//!
//! Every variant processes the *same* packet (a transit packet of the reference router cases
//! with an ID-INT request added) in the same run; the baseline is the router without the
//! ID-INT stage (the options pass untouched), so `variant - baseline` is the ID-INT cost.
//! `burst32_32_verifiers` sends each packet of the burst to another destination host, so
//! every entry is sealed under another key (the router's usual case on a busy link).
//! `single_lower_bound` and `burst32_lower_bound` run the same packets through
//! `scion_dp::lower_bound` (template entries: no parsing, no lookup, no telemetry source; in
//! bursts the MACs interleaved): about the least an entry can cost in this processor.
//!
//! `idint_crypto_floor` measures, in the same run, only the AES work an entry needs with the
//! key schedule at hand (its CBC-MAC chain and, encrypted, its CTR keystream blocks): one
//! entry at a time (the chain's latency, which a single packet waits for) and 32 entries under
//! one key computed together (throughput). What the ID-INT cost exceeds it by is bookkeeping.

use std::hint::black_box;

use benches::idint_fixture::{request, stage, to_host, with_request};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use scion_dp::idint::VerifierKeys;
use scion_dp::lower_bound::{LowerBound, Mode, WithStage};
use scion_dp::{Disposition, Ingress, PacketSlot, Processor};
use scion_dp_replay::CaseFile;

const CASES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../testdata/scion/router_cases.json"
);
const BURST: usize = 32;
const ROOM: usize = 2048;

/// The burst's slots, packet `k` a copy of `inputs[k % inputs.len()]`.
fn fill_slots<'a>(
    bufs: &'a mut [[u8; ROOM]],
    inputs: &[Vec<u8>],
    ingress: Ingress,
) -> [PacketSlot<'a>; BURST] {
    let mut it = bufs.iter_mut().zip(inputs.iter().cycle());
    std::array::from_fn(|_| {
        let (buf, input) = it.next().expect("BURST buffers");
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
            let same = vec![input.clone()];
            // One destination (verifier) per packet of the burst, as on a busy link.
            let many: Vec<Vec<u8>> = (0..BURST as u8).map(|k| to_host(&input, 10 + k)).collect();
            // Only meaningful if the router forwards and really writes the entry.
            {
                let mut st = stage(router);
                let mut buf = vec![0u8; ROOM];
                buf[..len].copy_from_slice(&input);
                let d =
                    Processor::new(router).process_with(&mut buf, len, case.ingress, now, &mut st);
                assert!(matches!(d, Disposition::Forward { .. }), "{d:?}");
                assert_eq!(st.counters().pushed, 1);
                assert_eq!(st.counters().encrypted, u64::from(encrypt));
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
            // Criterion calls each routine once per sample: the stages (key caches, whose
            // first lookup derives a DRKey key in milliseconds) are built and warmed once,
            // outside, so that no sample pays for a derivation.
            let warm = |inputs: &[Vec<u8>]| {
                let mut st = stage(router);
                let mut p = Processor::new(router);
                let mut bufs = vec![[0u8; ROOM]; BURST];
                let mut slots = fill_slots(&mut bufs, inputs, case.ingress);
                p.process_burst_with(&mut slots, now, &mut st);
                st
            };
            let (mut st_single, mut st_burst, mut st_many) =
                (warm(&same), warm(&same), warm(&many));
            // The lower-bound aid, taught its template by a first burst (one packet through
            // the real stage, the others from the template).
            let (mut st_bound, mut bound) = {
                let mut st = stage(router);
                let mut bound = LowerBound::new(Mode::Sealed).expect("an aid mode");
                let mut bufs = vec![[0u8; ROOM]; BURST];
                let mut slots = fill_slots(&mut bufs, &same, case.ingress);
                let mut hook = WithStage {
                    bound: &mut bound,
                    stage: &mut st,
                };
                Processor::new(router).process_burst_with(&mut slots, now, &mut hook);
                assert_eq!((bound.general, bound.templated), (1, BURST as u64 - 1));
                (st, bound)
            };
            // The same, one packet at a time, taught by a first packet.
            let (mut st_single_bound, mut single_bound) = {
                let mut st = stage(router);
                let mut bound = LowerBound::new(Mode::Sealed).expect("an aid mode");
                let mut buf = vec![0u8; ROOM];
                buf[..len].copy_from_slice(&input);
                let mut hook = WithStage {
                    bound: &mut bound,
                    stage: &mut st,
                };
                Processor::new(router).process_with(&mut buf, len, case.ingress, now, &mut hook);
                assert_eq!((bound.general, bound.templated), (1, 0));
                (st, bound)
            };
            g.bench_function(BenchmarkId::new("single", &id), |b| {
                let mut p = Processor::new(router);
                let st = &mut st_single;
                let mut buf = vec![0u8; ROOM];
                b.iter(|| {
                    buf[..len].copy_from_slice(black_box(&input));
                    black_box(p.process_with(&mut buf, len, case.ingress, now, st))
                })
            });
            g.bench_function(BenchmarkId::new("single_lower_bound", &id), |b| {
                let mut p = Processor::new(router);
                let misses = st_single_bound.keys().lookups().misses;
                let mut hook = WithStage {
                    bound: &mut single_bound,
                    stage: &mut st_single_bound,
                };
                let mut buf = vec![0u8; ROOM];
                b.iter(|| {
                    buf[..len].copy_from_slice(black_box(&input));
                    black_box(p.process_with(&mut buf, len, case.ingress, now, &mut hook))
                });
                // Every packet takes the template taught above, and no sample derives a key.
                let bound = &single_bound;
                assert_eq!(bound.general, 1, "{} templated", bound.templated);
                assert_eq!(st_single_bound.keys().lookups().misses, misses);
            });
            g.throughput(Throughput::Elements(BURST as u64));
            g.bench_function(BenchmarkId::new("burst32_baseline_no_idint", &id), |b| {
                let mut p = Processor::new(router);
                let mut bufs = vec![[0u8; ROOM]; BURST];
                b.iter(|| {
                    let mut slots = fill_slots(&mut bufs, &same, case.ingress);
                    p.process_burst(&mut slots, now);
                    black_box(slots[BURST - 1].disposition)
                })
            });
            g.bench_function(BenchmarkId::new("burst32", &id), |b| {
                let mut p = Processor::new(router);
                let st = &mut st_burst;
                let mut bufs = vec![[0u8; ROOM]; BURST];
                b.iter(|| {
                    let mut slots = fill_slots(&mut bufs, &same, case.ingress);
                    p.process_burst_with(&mut slots, now, st);
                    black_box(slots[BURST - 1].disposition)
                })
            });
            g.bench_function(BenchmarkId::new("burst32_lower_bound", &id), |b| {
                let mut p = Processor::new(router);
                let mut hook = WithStage {
                    bound: &mut bound,
                    stage: &mut st_bound,
                };
                let mut bufs = vec![[0u8; ROOM]; BURST];
                b.iter(|| {
                    let mut slots = fill_slots(&mut bufs, &same, case.ingress);
                    p.process_burst_with(&mut slots, now, &mut hook);
                    black_box(slots[BURST - 1].disposition)
                })
            });
            g.bench_function(BenchmarkId::new("burst32_32_verifiers", &id), |b| {
                let mut p = Processor::new(router);
                let st = &mut st_many;
                let mut bufs = vec![[0u8; ROOM]; BURST];
                b.iter(|| {
                    let mut slots = fill_slots(&mut bufs, &many, case.ingress);
                    p.process_burst_with(&mut slots, now, st);
                    black_box(slots[BURST - 1].disposition)
                })
            });
        }
    }
    g.finish();
}

/// AES work of one entry: CBC-MAC blocks and keystream blocks for `metadata` bytes.
fn aes_blocks(metadata: usize, encrypt: bool) -> (usize, usize) {
    use idint_wire::idint::entry::{NONCE_LEN, NONCE_OFFSET, entry_len};
    let len = entry_len(encrypt, metadata);
    let stream = if encrypt {
        (len - NONCE_OFFSET - NONCE_LEN).div_ceil(16)
    } else {
        0
    };
    (len.div_ceil(16), stream)
}

fn crypto_floor(c: &mut Criterion) {
    use idint_wire::crypto::{aes128, cbc_mac_and_keystream, cbc_mac_lanes, encrypt_blocks};
    let cipher = aes128(&[7; 16]);
    let mut g = c.benchmark_group("idint_crypto_floor");
    for metadata in [8usize, 42] {
        for (label, encrypt) in [("auth", false), ("auth_enc", true)] {
            let (n_mac, n_ks) = aes_blocks(metadata, encrypt);
            let id = format!("{metadata}B_{label}");
            g.throughput(Throughput::Elements(1));
            g.bench_function(BenchmarkId::new("single", &id), |b| {
                let blocks = [[0x5au8; 16]; 4];
                let mut ks = [[0u8; 16]; 4];
                b.iter(|| {
                    black_box(cbc_mac_and_keystream(
                        &cipher,
                        &black_box(&blocks)[..n_mac],
                        &mut ks[..n_ks],
                    ))
                })
            });
            g.throughput(Throughput::Elements(BURST as u64));
            g.bench_function(BenchmarkId::new("burst32", &id), |b| {
                let blocks = [[[0x5au8; 16]; BURST]; 4];
                let n_blocks = [n_mac as u8; BURST];
                let mut macs = [[0u8; 16]; BURST];
                let mut ks = [[0u8; 16]; BURST * 4];
                b.iter(|| {
                    cbc_mac_lanes(&cipher, &black_box(&blocks)[..n_mac], &n_blocks, &mut macs);
                    encrypt_blocks(&cipher, &mut ks[..BURST * n_ks]);
                    black_box((&macs, &ks));
                })
            });
        }
    }
    g.finish();
}

criterion_group!(benches, idint, crypto_floor);
criterion_main!(benches);
