//! The router's whole sans-IO path per burst of 32 transit frames, as the DPDK worker runs it
//! (`router_core::burst` around scion-dp; see `benches::router_path`): classify, scion-dp
//! `process_burst`, route, underlay rewrite and egress batching, over frames in memory. Rows:
//! * `baseline_refill_32`: putting the frames back with their arrival bytes, which every
//!   other row's iteration also does (the same-run baseline);
//! * `glue_32`: the path with scion-dp's decision set, not computed (the glue alone);
//! * `path_32`: the whole path.
//!
//! Per-packet cost of the path = (`path_32` - `baseline_refill_32`) / 32.

use std::hint::black_box;

use benches::router_path::{BURST, PathRig};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use router_core::burst::FrameBuf;
use router_core::underlay;
use scion_dp_replay::CaseFile;

const CASES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../testdata/scion/router_cases.json"
);
/// The transit case (interface 1 in, interface 2 out).
const CASE: &str = "transit_parent_to_child";
/// Its egress interface (and port).
const OUT_IF: u16 = 2;

fn bench(c: &mut Criterion) {
    let text = std::fs::read_to_string(CASES).expect("shared vectors beside the checkout");
    let file = CaseFile::parse(&text).expect("case file");
    let case = file.cases.iter().find(|c| c.name == CASE).expect("case");
    let router = &file.routers[&case.router];
    let mut rig = PathRig::new(router, &case.input, file.now_ns);
    // The benchmark only means something if every packet really leaves by interface 2.
    assert_eq!(rig.path(), BURST);
    let sent = rig
        .sent(usize::from(OUT_IF))
        .expect("sent on the egress port");
    let out = underlay::parse(sent.data()).expect("rewritten frame parses");
    assert_eq!(out.dst.port(), 50000);
    rig.refill();

    let mut g = c.benchmark_group("router_path");
    g.throughput(Throughput::Elements(BURST as u64));
    g.bench_function("baseline_refill_32", |b| {
        b.iter(|| {
            rig.refill();
            black_box(&rig);
        })
    });
    g.bench_function("glue_32", |b| {
        b.iter(|| {
            rig.refill();
            black_box(rig.glue(OUT_IF))
        })
    });
    g.bench_function("path_32", |b| {
        b.iter(|| {
            rig.refill();
            black_box(rig.path())
        })
    });
    g.finish();
    assert_eq!(rig.io.unroutable + rig.io.not_for_us + rig.io.tx_full, 0);
}

criterion_group!(benches, bench);
criterion_main!(benches);
