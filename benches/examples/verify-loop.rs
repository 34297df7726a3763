//! A plain loop over ID-INT stack verification (the collector's per-report MAC work) for A/B
//! runs and profilers: the benchmark request with a source entry and five benchmark router
//! entries (every other one encrypted), verified and decrypted N times.
//!
//! `cargo run --release -p benches --example verify-loop -- [N]`

use std::hint::black_box;
use std::time::Instant;

use benches::{request, router_entry};
use idint_wire::crypto::aes128;
use idint_wire::idint::crypto::{seal_entry_at, sign_source, verify_stack};
use idint_wire::idint::{EntryRepr, IdInt, PushOutcome, RequestBuilder};

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .map(|s| s.parse().expect("N"))
        .unwrap_or(1_000_000);
    let keys: Vec<_> = (0..6u8).map(|i| aes128(&[i + 1; 16])).collect();
    let req = RequestBuilder {
        stack_len_words: 64,
        ..request()
    };
    let mut hbh = vec![0u8; req.hbh_len()];
    req.emit_hbh(&mut hbh, 17).unwrap();
    {
        let mut idint = IdInt::locate(&mut hbh[..]).unwrap().unwrap();
        sign_source(&mut idint, &keys[0]).unwrap();
        for (i, key) in keys[1..].iter().enumerate() {
            let hop = i as u8 + 1;
            let e = EntryRepr {
                nonce: (i % 2 == 0).then_some([hop; 12]),
                ..router_entry(hop)
            };
            let PushOutcome::Pushed { offset } = idint.push(&e).unwrap() else {
                panic!("stack full");
            };
            seal_entry_at(&mut idint, offset, key).unwrap();
        }
    }
    let mut buf = hbh.clone();
    let t = Instant::now();
    for _ in 0..n {
        buf.copy_from_slice(black_box(&hbh));
        let mut idint = IdInt::locate(&mut buf[..]).unwrap().unwrap();
        let k = verify_stack(&mut idint, &keys[0], |i, _| keys.get(i)).unwrap();
        black_box(k);
    }
    let ns = t.elapsed().as_nanos() as f64 / n as f64;
    println!("{n} stacks of 6 entries, {ns:.1} ns/stack");
}
