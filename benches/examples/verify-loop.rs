//! A plain loop over ID-INT stack verification (the collector's per-report MAC work) for A/B
//! runs and profilers: a request with a source entry and five router entries (node id and two
//! slots each; every other one encrypted), verified and decrypted N times.
//!
//! `cargo run --release -p benches --example verify-loop -- [N]`

use std::hint::black_box;
use std::time::Instant;

use idint_wire::HostAddr;
use idint_wire::crypto::aes128;
use idint_wire::idint::crypto::{seal_entry_at, sign_source, verify_stack};
use idint_wire::idint::entry::SlotValue;
use idint_wire::idint::{
    AggregationMode, EntryRepr, IdInt, Instruction, Metadata, PushOutcome, RequestBuilder, Verifier,
};

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .map(|s| s.parse().expect("N"))
        .unwrap_or(1_000_000);
    let keys: Vec<_> = (0..6u8).map(|i| aes128(&[i + 1; 16])).collect();
    let req = RequestBuilder {
        encrypt: true,
        mode: AggregationMode::PerBorderRouter,
        verifier: Verifier::ThirdParty {
            ia: "1-ff00:0:1".parse().unwrap(),
            host: HostAddr::V4("10.0.0.9".parse().unwrap()),
        },
        inst_bitmap: 0x8,
        instructions: [
            Instruction(0x82),
            Instruction(0x4f),
            Instruction::NOP,
            Instruction::NOP,
        ],
        stack_len_words: 64,
        source_port: 7,
        ..RequestBuilder::new(123_456_789)
    };
    let mut hbh = vec![0u8; req.hbh_len()];
    req.emit_hbh(&mut hbh, 17).unwrap();
    {
        let mut idint = IdInt::locate(&mut hbh[..]).unwrap().unwrap();
        sign_source(&mut idint, &keys[0]).unwrap();
        for (i, key) in keys[1..].iter().enumerate() {
            let hop = i as u8 + 1;
            let e = EntryRepr {
                ingress: true,
                egress: true,
                nonce: (i % 2 == 0).then_some([hop; 12]),
                hop,
                metadata: Metadata {
                    node_id: Some(u32::from(hop)),
                    slots: [
                        Some(SlotValue {
                            len: 6,
                            value: 1_000_000 + u64::from(hop),
                        }),
                        Some(SlotValue { len: 4, value: 5 }),
                        None,
                        None,
                    ],
                    ..Metadata::default()
                },
                ..EntryRepr::default()
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
