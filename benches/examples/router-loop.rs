//! Runs one router case N times for `perf stat` / `perf record`:
//! `cargo run --release -p benches --example router-loop -- CASE N [burst]`.

use scion_dp::{PacketSlot, Processor};
use scion_dp_replay::CaseFile;

fn main() {
    let mut args = std::env::args().skip(1);
    let name = args
        .next()
        .unwrap_or_else(|| "transit_parent_to_child".into());
    let n: usize = args
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10_000_000);
    let burst = args.next().is_some();
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../testdata/scion/router_cases.json"
    );
    let file = CaseFile::parse(&std::fs::read_to_string(path).unwrap()).unwrap();
    let case = file.cases.iter().find(|c| c.name == name).expect("case");
    let router = &file.routers[&case.router];
    let mut p = Processor::new(router);
    let len = case.input.len();
    let t = std::time::Instant::now();
    if burst {
        let mut bufs = vec![[0u8; 2048]; 32];
        for _ in 0..n / 32 {
            let mut slots: [PacketSlot<'_>; 32] = std::array::from_fn(|_| PacketSlot {
                buf: &mut [],
                len,
                ingress: case.ingress,
                disposition: None,
            });
            for (s, b) in slots.iter_mut().zip(bufs.iter_mut()) {
                b[..len].copy_from_slice(std::hint::black_box(&case.input));
                s.buf = &mut b[..];
            }
            p.process_burst(&mut slots, file.now_ns);
            std::hint::black_box(&slots);
        }
    } else {
        let mut buf = [0u8; 2048];
        for _ in 0..n {
            buf[..len].copy_from_slice(std::hint::black_box(&case.input));
            std::hint::black_box(p.process(&mut buf, len, case.ingress, file.now_ns));
        }
    }
    let dt = t.elapsed();
    println!(
        "{name}: {:.1} ns/packet ({:?})",
        dt.as_nanos() as f64 / n as f64,
        p.counters().forwarded
    );
}
