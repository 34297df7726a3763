//! scion-dp: per-packet processing cost for the main traffic classes, one packet per call and
//! in bursts of 32, on the reference router cases (router R of `router_cases.json`).
//! Baselines in the same run: copying the packet into the work buffer, which every single-packet
//! iteration also does (processing rewrites the packet in place), and building the 32 slots
//! with their copies, which every burst iteration does. Processing cost = measured - baseline.
//! One more burst row alternates two transit packets on different paths.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use scion_dp::{Disposition, PacketSlot, Processor};
use scion_dp_replay::CaseFile;

const CASES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../testdata/scion/router_cases.json"
);

/// (label, case name) of the benchmarked traffic classes.
const CLASSES: [(&str, &str); 6] = [
    ("transit_1mac", "transit_parent_to_child"),
    ("xover_2mac", "xover_child_to_child_shortcut"),
    ("inbound_deliver", "inbound_from_parent"),
    ("outbound", "outbound_up_to_parent"),
    ("epic_last_hop", "epic_inbound_last_hop"),
    ("core_transit", "core_transit_core_to_core"),
];

/// (label, case names) of bursts that cycle through several transit cases: consecutive
/// packets on different paths (the fast path keeps the path layout of the packet before, and
/// here it never applies).
const MIXED: (&str, [&str; 2]) = (
    "transit_alternating",
    ["transit_parent_to_child", "transit_child_to_parent"],
);

const BURST: usize = 32;
const ROOM: usize = 2048;

fn router(c: &mut Criterion) {
    let text = std::fs::read_to_string(CASES).expect("shared vectors beside the checkout");
    let file = CaseFile::parse(&text).unwrap();
    let mut g = c.benchmark_group("router");
    for (label, name) in CLASSES {
        let case = file.cases.iter().find(|c| c.name == name).unwrap();
        let router = &file.routers[&case.router];
        let input = case.input.clone();
        let len = input.len();
        let now = file.now_ns;
        // The benchmark only means something if the packet is really forwarded/delivered.
        {
            let mut p = Processor::new(router);
            let mut buf = vec![0u8; ROOM];
            buf[..len].copy_from_slice(&input);
            let d = p.process(&mut buf, len, case.ingress, now);
            assert!(
                matches!(d, Disposition::Forward { .. } | Disposition::Deliver { .. }),
                "{name}: {d:?}"
            );
        }
        g.throughput(Throughput::Elements(1));
        g.bench_function(BenchmarkId::new("baseline_copy", label), |b| {
            let mut buf = vec![0u8; ROOM];
            b.iter(|| {
                buf[..len].copy_from_slice(black_box(&input));
                black_box(&buf);
            })
        });
        g.bench_function(BenchmarkId::new("single", label), |b| {
            let mut p = Processor::new(router);
            let mut buf = vec![0u8; ROOM];
            b.iter(|| {
                buf[..len].copy_from_slice(black_box(&input));
                black_box(p.process(&mut buf, len, case.ingress, now))
            })
        });
        g.throughput(Throughput::Elements(BURST as u64));
        bursts(&mut g, label, router, &[(&input, case.ingress)], now);
    }
    let (label, names) = MIXED;
    let cases: Vec<_> = names
        .iter()
        .map(|n| file.cases.iter().find(|c| &c.name == n).unwrap())
        .collect();
    let router = &file.routers[&cases[0].router];
    let inputs: Vec<_> = cases.iter().map(|c| (&c.input[..], c.ingress)).collect();
    bursts(&mut g, label, router, &inputs, file.now_ns);
    g.finish();
}

/// The burst rows of one class: bursts of [`BURST`] packets cycling through `inputs`, and
/// their setup alone (the baseline).
fn bursts(
    g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    label: &str,
    router: &scion_dp::config::Router,
    inputs: &[(&[u8], scion_dp::Ingress)],
    now: u64,
) {
    g.throughput(Throughput::Elements(BURST as u64));
    g.bench_function(BenchmarkId::new("baseline_burst32_setup", label), |b| {
        let mut bufs = vec![[0u8; ROOM]; BURST];
        b.iter(|| {
            let mut slots = fill_slots(&mut bufs, inputs);
            black_box(&mut slots);
            black_box(slots[BURST - 1].disposition)
        })
    });
    g.bench_function(BenchmarkId::new("burst32", label), |b| {
        let mut p = Processor::new(router);
        let mut bufs = vec![[0u8; ROOM]; BURST];
        b.iter(|| {
            let mut slots = fill_slots(&mut bufs, inputs);
            p.process_burst(&mut slots, now);
            black_box(slots[BURST - 1].disposition)
        })
    });
}

/// Copies the `inputs`, in turn, into the buffers and wraps them as burst slots (what a burst
/// iteration and its baseline both do).
fn fill_slots<'a>(
    bufs: &'a mut [[u8; ROOM]],
    inputs: &[(&[u8], scion_dp::Ingress)],
) -> [PacketSlot<'a>; BURST] {
    let mut it = bufs.iter_mut().zip(inputs.iter().cycle());
    std::array::from_fn(|_| {
        let (buf, &(input, ingress)) = it.next().expect("BURST buffers");
        buf[..input.len()].copy_from_slice(black_box(input));
        PacketSlot {
            buf: &mut buf[..],
            len: input.len(),
            ingress,
            disposition: None,
        }
    })
}

criterion_group!(benches, router);
criterion_main!(benches);
