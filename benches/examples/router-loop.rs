//! Runs router cases N times for `perf stat` / `perf record` / callgrind:
//! `cargo run --release -p benches --example router-loop -- CASE[,CASE...] N [burst]`.
//! Several cases are taken in turn (packet after packet, also within a burst).

use scion_dp::{Ingress, PacketSlot, Processor};
use scion_dp_replay::CaseFile;

/// Packets per burst in burst mode.
const BURST: usize = 32;
/// Bytes of each packet buffer.
const ROOM: usize = 2048;

fn main() {
    let mut args = std::env::args().skip(1);
    let names = args
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
    let cases: Vec<_> = names
        .split(',')
        .map(|name| file.cases.iter().find(|c| c.name == name).expect("case"))
        .collect();
    let inputs: Vec<(&[u8], Ingress)> = cases.iter().map(|c| (&c.input[..], c.ingress)).collect();
    let router = &file.routers[&cases[0].router];
    let mut p = Processor::new(router);
    let t = std::time::Instant::now();
    if burst {
        let mut bufs = vec![[0u8; ROOM]; BURST];
        for _ in 0..n / BURST {
            let mut turn = inputs.iter().cycle();
            let mut slots: Vec<PacketSlot<'_>> = bufs
                .iter_mut()
                .map(|b| {
                    let &(input, ingress) = turn.next().expect("cycle");
                    b[..input.len()].copy_from_slice(std::hint::black_box(input));
                    PacketSlot {
                        buf: &mut b[..],
                        len: input.len(),
                        ingress,
                        disposition: None,
                    }
                })
                .collect();
            p.process_burst(&mut slots, file.now_ns);
            std::hint::black_box(&slots);
        }
    } else {
        let mut buf = [0u8; ROOM];
        for &(input, ingress) in inputs.iter().cycle().take(n) {
            buf[..input.len()].copy_from_slice(std::hint::black_box(input));
            std::hint::black_box(p.process(&mut buf, input.len(), ingress, file.now_ns));
        }
    }
    let dt = t.elapsed();
    println!(
        "{names}: {:.1} ns/packet ({:?} forwarded)",
        dt.as_nanos() as f64 / n as f64,
        p.counters().forwarded
    );
}
