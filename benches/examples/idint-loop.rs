//! Bursts of the ID-INT benchmark packet through the transit router, with or without the
//! ID-INT stage, for `perf record` and `valgrind --tool=callgrind` (deterministic
//! instruction counts): `cargo run --release -p benches --example idint-loop -- 8|42 auth|enc
//! N [plain|many|single|lower_bound]` (`many`: each packet of a burst to another destination
//! host, so every entry has another verifier key; `single`: one packet per call instead of
//! bursts; `lower_bound`: through `scion_dp::lower_bound`).

use benches::idint_fixture::{request, stage, to_host, with_request};
use scion_dp::lower_bound::{LowerBound, Mode, WithStage};
use scion_dp::{PacketSlot, Processor};
use scion_dp_replay::CaseFile;

fn main() {
    let mut args = std::env::args().skip(1);
    let metadata: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(8);
    let encrypt = args.next().is_some_and(|s| s == "enc");
    let n: usize = args
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let variant = args.next();
    let plain = variant.as_deref() == Some("plain");
    let many = variant.as_deref() == Some("many");
    let single = variant.as_deref() == Some("single");
    let lower = variant.as_deref() == Some("lower_bound");
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../testdata/scion/router_cases.json"
    );
    let file = CaseFile::parse(&std::fs::read_to_string(path).unwrap()).unwrap();
    let case = file
        .cases
        .iter()
        .find(|c| c.name == "transit_parent_to_child")
        .expect("case");
    let router = &file.routers[&case.router];
    let input = with_request(&case.input, &request(metadata, encrypt, file.now_ns));
    let len = input.len();
    let inputs: Vec<Vec<u8>> = if many {
        (0..32u8).map(|k| to_host(&input, 10 + k)).collect()
    } else {
        vec![input]
    };
    let mut p = Processor::new(router);
    let mut st = stage(router);
    let mut bound = LowerBound::new(Mode::Sealed).expect("an aid mode");
    let mut bufs = vec![[0u8; 2048]; 32];
    let t = std::time::Instant::now();
    for _ in 0..n / 32 {
        let mut slots: [PacketSlot<'_>; 32] = std::array::from_fn(|_| PacketSlot {
            buf: &mut [],
            len,
            ingress: case.ingress,
            disposition: None,
        });
        for ((s, b), input) in slots
            .iter_mut()
            .zip(bufs.iter_mut())
            .zip(inputs.iter().cycle())
        {
            b[..len].copy_from_slice(std::hint::black_box(input));
            s.buf = &mut b[..];
        }
        if single {
            for s in slots.iter_mut() {
                let d = p.process_with(s.buf, len, case.ingress, file.now_ns, &mut st);
                s.disposition = Some(d);
            }
        } else if plain {
            p.process_burst(&mut slots, file.now_ns);
        } else if lower {
            let mut hook = WithStage {
                bound: &mut bound,
                stage: &mut st,
            };
            p.process_burst_with(&mut slots, file.now_ns, &mut hook);
        } else {
            p.process_burst_with(&mut slots, file.now_ns, &mut st);
        }
        std::hint::black_box(&slots);
    }
    let dt = t.elapsed();
    println!(
        "{} packets, {:.1} ns/packet, ID-INT entries written: {}, key cache {:?}",
        n / 32 * 32,
        dt.as_nanos() as f64 / (n / 32 * 32) as f64,
        st.counters().pushed,
        st.keys().cache.stats()
    );
}
