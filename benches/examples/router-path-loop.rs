//! Runs the router's whole sans-IO path (`benches::router_path`) over N bursts of 32 transit
//! frames, for callgrind (instructions per packet) or `perf`:
//! `cargo run --release -p benches --example router-path-loop -- [path|glue|refill] [BURSTS]`.
//! `refill` is the baseline every mode includes; `glue` sets scion-dp's decision instead of
//! computing it. Per packet: (Ir(mode) - Ir(refill)) / (32 * BURSTS).

use benches::router_path::{BURST, PathRig};
use scion_dp_replay::CaseFile;

/// The transit case (interface 1 in, interface 2 out) and its egress interface.
const CASE: &str = "transit_parent_to_child";
const OUT_IF: u16 = 2;

fn main() {
    let mut args = std::env::args().skip(1);
    let mode = args.next().unwrap_or_else(|| "path".into());
    let bursts: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(100_000);
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../testdata/scion/router_cases.json"
    );
    let file = CaseFile::parse(&std::fs::read_to_string(path).unwrap()).unwrap();
    let case = file.cases.iter().find(|c| c.name == CASE).expect("case");
    let router = &file.routers[&case.router];
    let mut rig = PathRig::new(router, &case.input, file.now_ns);
    let t = std::time::Instant::now();
    let mut sent = 0usize;
    for _ in 0..bursts {
        rig.refill();
        sent += match mode.as_str() {
            "path" => rig.path(),
            "glue" => rig.glue(OUT_IF),
            _ => BURST,
        };
        std::hint::black_box(&rig);
    }
    let dt = t.elapsed();
    assert_eq!(sent, bursts * BURST, "every packet sent");
    println!(
        "{mode}: {:.1} ns/packet over {} packets",
        dt.as_nanos() as f64 / (bursts * BURST) as f64,
        bursts * BURST
    );
}
