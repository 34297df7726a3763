//! ID-INT vectors (`vectors/idint/idint.json`) and stack/request/MAC-chain behaviour.

use idint_wire::ext::{ExtHeader, opt_type};
use idint_wire::idint::entry::{SlotValue, flags as eflags};
use idint_wire::idint::{
    AggregationFunction, AggregationMode, Entry, EntryRepr, IdInt, Instruction, MainOptionRepr,
    Metadata, PushOutcome, RequestBuilder, Verifier,
};
use idint_wire::{HostAddr, Layer};

fn vectors() -> serde_json::Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../testdata/idint/idint.json"
    );
    serde_json::from_str(&std::fs::read_to_string(path).expect("vectors beside the checkout"))
        .unwrap()
}

fn hbh_example() -> Vec<u8> {
    hex::decode(vectors()["hbh_example"]["hex"].as_str().unwrap()).unwrap()
}

#[test]
fn hbh_example_decodes_as_the_reference_test_expects() {
    let hbh = hbh_example();
    assert_eq!(hbh.len(), 168);
    let h = ExtHeader::new_checked(&hbh[..], Layer::HopByHop).unwrap();
    assert_eq!(h.next_header(), 0x11);
    assert_eq!(h.ext_len(), 41);
    let opts: Vec<u8> = h.options().map(|o| o.unwrap().opt_type).collect();
    assert_eq!(opts, [opt_type::IDINT_MAIN, 254, 254, 254, opt_type::PADN]);

    let idint = IdInt::locate(&hbh[..]).unwrap().expect("ID-INT present");
    let main = MainOptionRepr::parse(&idint.main()).unwrap();
    assert!(main.encrypt && !main.infrastructure && !main.discard && !main.stack_full);
    assert_eq!(main.mode, AggregationMode::PerBorderRouter);
    let Verifier::ThirdParty { ia, host } = main.verifier else {
        panic!("third-party verifier")
    };
    assert_eq!(ia.to_string(), "1-ff00:0:1");
    assert_eq!(host, HostAddr::V6("fd00::1".parse().unwrap()));
    assert_eq!(
        (main.stack_len_words, main.tos_words, main.delay_hops),
        (30, 14, 0)
    );
    assert_eq!(main.inst_bitmap, 0x8);
    assert_eq!(main.aggregation, [AggregationFunction::Last; 4]);
    assert_eq!(
        main.instructions,
        [
            Instruction(0x82),
            Instruction(0x03),
            Instruction::NOP,
            Instruction::NOP
        ]
    );
    assert_eq!((main.source_timestamp, main.source_port), (1000, 10));

    let entries: Vec<_> = idint.entries().collect();
    assert_eq!(entries.len(), 3);
    assert!(entries[0].1.is_source());
    let (tos_off, tos) = idint.tos_entry().unwrap();
    assert_eq!(tos_off - idint.stack_range().start, 14 * 4);
    assert_eq!(tos.hop(), 2);
    assert_eq!(tos.slot_lens(), [4, 2, 0, 0]);
    assert_eq!(tos.metadata_len(), 10);
    assert_eq!(tos.nonce().unwrap()[11], 3);
    // Slot 1 holds 4 bytes although Inst1 (0x82) is a 6-byte instruction: tolerated, reported.
    let md = tos.metadata().unwrap();
    assert_eq!(md.slot_len_mismatch(&main.instructions), Some(1));
    assert_eq!(idint.free_len(), 32);

    // Re-emitting the main option and entries from reprs gives the same bytes.
    let mut out = hbh.clone();
    main.emit(&mut out[2..]).unwrap();
    for (off, e) in idint.entries() {
        EntryRepr::parse(&e).unwrap().emit(&mut out[off..]).unwrap();
    }
    assert_eq!(out, hbh);
}

#[cfg(feature = "crypto")]
mod crypto {
    use super::*;
    use idint_wire::crypto::aes128;
    use idint_wire::idint::crypto::{
        VerifyError, open_entry, seal_entry, seal_entry_at, sign_source, source_mac, verify_stack,
        verify_stack_with,
    };
    use idint_wire::idint::verify::{decode_entries, decode_entry};

    #[test]
    fn entry_mac_and_encryption_vectors() {
        let v = vectors();
        let s = &v["stack_entry_crypto"];
        let key: [u8; 16] = hex::decode(s["key_hex"].as_str().unwrap())
            .unwrap()
            .try_into()
            .unwrap();
        let key = aes128(&key);
        let prev: [u8; 4] = hex::decode(s["previous_mac_hex"].as_str().unwrap())
            .unwrap()
            .try_into()
            .unwrap();
        let cases = s["vectors"].as_array().unwrap();
        assert_eq!(cases.len(), 2);
        for c in cases {
            let name = c["name"].as_str().unwrap();
            let plain = hex::decode(c["plaintext_with_mac_hex"].as_str().unwrap()).unwrap();
            let wire = hex::decode(c["on_wire_hex"].as_str().unwrap()).unwrap();
            // Seal: start from the plaintext with a garbage MAC field.
            let mut buf = plain.clone();
            let n = buf.len();
            buf[n - 4..].copy_from_slice(&[0xde, 0xad, 0xbe, 0xef]);
            let mut e = Entry::new_checked(&mut buf[..]).unwrap();
            let on_wire_mac = seal_entry(&key, &mut e, prev);
            assert_eq!(buf, wire, "{name}: seal");
            assert_eq!(on_wire_mac.as_slice(), &wire[n - 4..]);
            // Open: decrypt and verify gives the plaintext back.
            let mut e = Entry::new_checked(&mut buf[..]).unwrap();
            assert_eq!(open_entry(&key, &mut e, prev), Some(on_wire_mac));
            assert_eq!(buf, plain, "{name}: open");
            // A wrong previous MAC fails.
            let mut buf = wire.clone();
            let mut e = Entry::new_checked(&mut buf[..]).unwrap();
            assert_eq!(open_entry(&key, &mut e, [0, 0, 0, 0]), None);
        }
    }

    fn request() -> RequestBuilder {
        RequestBuilder {
            encrypt: true,
            mode: AggregationMode::PerBorderRouter,
            verifier: Verifier::ThirdParty {
                ia: "1-ff00:0:1".parse().unwrap(),
                host: HostAddr::V4("10.0.0.9".parse().unwrap()),
            },
            delay_hops: 0,
            inst_bitmap: 0x8,
            instructions: [
                Instruction(0x82),
                Instruction(0x4f),
                Instruction::NOP,
                Instruction::NOP,
            ],
            stack_len_words: 32,
            source_port: 7,
            ..RequestBuilder::new(123_456_789)
        }
    }

    fn router_entry(hop: u8, encrypt: bool) -> EntryRepr {
        EntryRepr {
            ingress: true,
            egress: true,
            nonce: encrypt.then_some([hop; 12]),
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
        }
    }

    /// Builds a request, signs it, and lets three "routers" push sealed entries.
    fn build_stack(keys: &[idint_wire::crypto::Aes128Enc]) -> Vec<u8> {
        build_stack_of(keys, request())
    }

    /// Like [`build_stack`], with one router per key after the first and the request `req`.
    fn build_stack_of(keys: &[idint_wire::crypto::Aes128Enc], req: RequestBuilder) -> Vec<u8> {
        let mut hbh = vec![0u8; req.hbh_len()];
        req.emit_hbh(&mut hbh, 17).unwrap();
        let mut idint = IdInt::locate(&mut hbh[..]).unwrap().unwrap();
        sign_source(&mut idint, &keys[0]).unwrap();
        for (i, key) in keys[1..].iter().enumerate() {
            let PushOutcome::Pushed { offset } =
                idint.push(&router_entry(i as u8 + 1, i % 2 == 0)).unwrap()
            else {
                panic!("stack full too early");
            };
            seal_entry_at(&mut idint, offset, key).unwrap();
            idint.check().unwrap();
        }
        hbh
    }

    #[test]
    fn request_push_seal_verify_round_trip() {
        let keys: Vec<_> = (0..4u8).map(|i| aes128(&[i + 1; 16])).collect();
        let hbh = build_stack(&keys);
        let mut copy = hbh.clone();
        let mut idint = IdInt::locate(&mut copy[..]).unwrap().unwrap();
        let n = verify_stack(&mut idint, &keys[0], |i, _| keys.get(i)).unwrap();
        assert_eq!(n, 4);
        // Decrypted in place: the metadata reads back.
        let entries: Vec<_> = idint
            .entries()
            .map(|(_, e)| e.metadata().unwrap())
            .collect();
        assert_eq!(entries[1], router_entry(1, true).metadata);
        assert_eq!(entries[3], router_entry(3, true).metadata);
        // A wrong key for one hop is reported for that hop.
        let mut copy = hbh.clone();
        let mut idint = IdInt::locate(&mut copy[..]).unwrap().unwrap();
        let err = verify_stack(&mut idint, &keys[0], |i, _| {
            keys.get(if i == 2 { 3 } else { i })
        });
        assert_eq!(err, Err(VerifyError::BadMac { index: 2 }));
        let mut copy = hbh.clone();
        let mut idint = IdInt::locate(&mut copy[..]).unwrap().unwrap();
        assert_eq!(
            verify_stack(&mut idint, &keys[0], |_, _| None),
            Err(VerifyError::MissingKey { index: 1 })
        );
    }

    #[test]
    fn verify_with_hands_over_each_verified_plaintext_entry_once() {
        let keys: Vec<_> = (0..4u8).map(|i| aes128(&[i + 1; 16])).collect();
        let hbh = build_stack(&keys);
        let mut copy = hbh.clone();
        let mut idint = IdInt::locate(&mut copy[..]).unwrap().unwrap();
        let ins = idint.main().instructions();
        let mut seen = Vec::new();
        let n = verify_stack_with(
            &mut idint,
            &keys[0],
            |i, _| keys.get(i),
            |i, e| seen.push(decode_entry(i, e, &ins).unwrap()),
        )
        .unwrap();
        assert_eq!((n, seen.len()), (4, 4));
        // Same as decoding the decrypted stack afterwards.
        let after: Vec<_> = decode_entries(&idint).map(|e| e.unwrap()).collect();
        assert_eq!(seen, after);
        assert_eq!(seen[3].metadata, router_entry(3, true).metadata);
        // A bad MAC at entry 2: entries 0 and 1 were handed over, nothing after.
        let mut copy = hbh.clone();
        let mut idint = IdInt::locate(&mut copy[..]).unwrap().unwrap();
        let mut count = 0;
        let err = verify_stack_with(
            &mut idint,
            &keys[0],
            |i, _| keys.get(if i == 2 { 3 } else { i }),
            |_, _| count += 1,
        );
        assert_eq!((err, count), (Err(VerifyError::BadMac { index: 2 }), 2));
        // The offsets check_entries finds are where the entries start.
        let idint = IdInt::locate(&hbh[..]).unwrap().unwrap();
        let mut offs = [0u16; 8];
        assert_eq!(idint.check_entries(&mut offs), Ok(4));
        let walked: Vec<u16> = idint.entries().map(|(at, _)| at as u16).collect();
        assert_eq!(&offs[..4], &walked[..]);
        assert!(idint.check_entries(&mut [0u16; 3]).is_err(), "too small");
    }

    /// Stacks longer than the group of entries verified together: failures are reported at
    /// the right entry, with exactly the entries before it handed over.
    #[test]
    fn long_stacks_verify_in_order_and_stop_at_the_first_failure() {
        let keys: Vec<_> = (0..13u8).map(|i| aes128(&[i + 1; 16])).collect();
        let req = RequestBuilder {
            stack_len_words: 200,
            ..request()
        };
        let hbh = build_stack_of(&keys, req);
        let run = |key_for: &dyn Fn(usize) -> Option<usize>, bytes: &mut Vec<u8>| {
            let mut idint = IdInt::locate(&mut bytes[..]).unwrap().unwrap();
            let mut handed = Vec::new();
            let r = verify_stack_with(
                &mut idint,
                &keys[0],
                |i, _| key_for(i).and_then(|k| keys.get(k)),
                |i, _| handed.push(i),
            );
            (r, handed)
        };
        let (r, handed) = run(&|i| Some(i), &mut hbh.clone());
        assert_eq!(r, Ok(13));
        assert_eq!(handed, (0..13).collect::<Vec<_>>());
        for bad in 1..13 {
            let (r, handed) = run(&|i| Some(if i == bad { 0 } else { i }), &mut hbh.clone());
            assert_eq!(r, Err(VerifyError::BadMac { index: bad }));
            assert_eq!(handed, (0..bad).collect::<Vec<_>>(), "wrong key at {bad}");
            let (r, handed) = run(&|i| (i != bad).then_some(i), &mut hbh.clone());
            assert_eq!(r, Err(VerifyError::MissingKey { index: bad }));
            assert_eq!(handed.len(), bad, "missing key at {bad}");
        }
        // A flipped bit in the on-wire MAC of entry k breaks entry k itself.
        let idint = IdInt::locate(&hbh[..]).unwrap().unwrap();
        let ends: Vec<usize> = idint
            .entries()
            .map(|(at, e)| at + e.as_bytes().len())
            .collect();
        for (k, end) in ends.iter().enumerate() {
            let mut copy = hbh.clone();
            copy[end - 1] ^= 0x10;
            let (r, handed) = run(&|i| Some(i), &mut copy);
            assert_eq!(r, Err(VerifyError::BadMac { index: k }), "entry {k}");
            assert_eq!(handed.len(), k);
        }
    }

    #[test]
    fn any_flipped_bit_in_the_authenticated_region_breaks_verification() {
        let keys: Vec<_> = (0..4u8).map(|i| aes128(&[i + 1; 16])).collect();
        let hbh = build_stack(&keys);
        let idint = IdInt::locate(&hbh[..]).unwrap().unwrap();
        let main = idint.main_offset();
        let used_end = idint.stack_range().start + idint.used_len();
        for byte in main..used_end {
            // Mutable fields the source MAC excludes: X flag, TOS, DelayHops bytes.
            let rel = byte - main;
            for bit in 0..8u8 {
                if (rel == 2 && bit == 1) || rel == 5 || rel == 6 || rel == 7 {
                    continue;
                }
                let mut copy = hbh.clone();
                copy[byte] ^= 1 << bit;
                let Ok(Some(mut idint)) = IdInt::locate(&mut copy[..]) else {
                    continue;
                };
                let r = verify_stack(&mut idint, &keys[0], |i, _| keys.get(i));
                assert!(r.is_err(), "flip of byte {byte} bit {bit} verified");
            }
        }
    }

    #[test]
    fn full_stack_sets_x_and_writes_nothing() {
        let mut req = request();
        req.stack_len_words = 3 + 6; // source entry (12 B) + one 24-byte entry
        let mut hbh = vec![0u8; req.hbh_len()];
        req.emit_hbh(&mut hbh, 17).unwrap();
        let key = aes128(&[9; 16]);
        let mut idint = IdInt::locate(&mut hbh[..]).unwrap().unwrap();
        sign_source(&mut idint, &key).unwrap();
        let e = router_entry(1, false);
        assert_eq!(e.buffer_len(), 24);
        assert!(matches!(
            idint.push(&e).unwrap(),
            PushOutcome::Pushed { .. }
        ));
        assert_eq!(idint.free_len(), 0);
        let before = hbh.clone();
        let mut idint = IdInt::locate(&mut hbh[..]).unwrap().unwrap();
        assert_eq!(
            idint.push(&router_entry(2, false)).unwrap(),
            PushOutcome::StackFull
        );
        assert!(idint.main().stack_full());
        // Only the X bit changed.
        let diff: Vec<usize> = (0..hbh.len()).filter(|&i| hbh[i] != before[i]).collect();
        assert_eq!(diff, vec![2 + 2]);
        // X is excluded from the source MAC: the source entry still verifies.
        let idint = IdInt::locate(&hbh[..]).unwrap().unwrap();
        let src = idint.entries().next().unwrap().1;
        assert_eq!(
            source_mac(&key, idint.main().as_bytes(), src.as_bytes()),
            src.mac()
        );
        assert_ne!(src.flags() & eflags::S, 0);
    }
}

#[test]
fn request_builder_output_re_parses() {
    let req = RequestBuilder {
        infrastructure: true,
        discard: true,
        mode: AggregationMode::PerAs,
        verifier: Verifier::Source,
        delay_hops: 3,
        inst_bitmap: 0xf,
        instructions: [
            Instruction(0x82),
            Instruction(0x83),
            Instruction(0x4f),
            Instruction(0xc1),
        ],
        aggregation: [
            AggregationFunction::First,
            AggregationFunction::Max,
            AggregationFunction::Sum,
            AggregationFunction::Min,
        ],
        stack_len_words: 200,
        ..RequestBuilder::new((1 << 48) - 1)
    };
    let mut hbh = vec![0u8; req.hbh_len()];
    assert_eq!(req.emit_hbh(&mut hbh, 202).unwrap(), 2 + 22 + 800);
    let idint = IdInt::locate(&hbh[..]).unwrap().unwrap();
    assert_eq!(
        MainOptionRepr::parse(&idint.main()).unwrap(),
        req.main_option()
    );
    assert_eq!(idint.entries().count(), 1);
    assert_eq!(idint.free_len(), 800 - 12);
    // Too large for an HBH header (1024 bytes max).
    let big = RequestBuilder {
        stack_len_words: 255,
        verifier: Verifier::ThirdParty {
            ia: "1-ff00:0:1".parse().unwrap(),
            host: HostAddr::V6("fd00::1".parse().unwrap()),
        },
        ..req
    };
    assert!(big.emit_hbh(&mut vec![0u8; 2048], 17).is_err());
    // Output buffer too small.
    assert!(req.emit_hbh(&mut [0u8; 100], 17).is_err());
}

#[test]
fn malformed_stacks_are_rejected() {
    let hbh = hbh_example();
    let mut bad = hbh.clone();
    bad[2 + 5] = 13; // TOS not at the newest entry
    assert!(IdInt::locate(&bad[..]).is_err());
    let mut bad = hbh.clone();
    bad[2 + 4] = 40; // stack runs past the HBH header
    assert!(IdInt::locate(&bad[..]).is_err());
    let mut bad = hbh.clone();
    bad[2 + 2] |= 0xe0; // version 7
    assert!(IdInt::locate(&bad[..]).is_err());
    let mut bad = hbh.clone();
    bad[2 + 46 + 2] &= !eflags::S; // first entry is not a source entry
    // locate() checks only the top of the stack (what a router touches); the full check
    // (run by verifiers) walks every entry.
    let top_only = IdInt::locate(&bad[..]).unwrap().unwrap();
    assert!(top_only.check().is_err());
    let mut bad = hbh.clone();
    bad[2 + 46 + 24 + 32 + 2] |= eflags::S; // TOS entry claims to be the source entry
    assert!(IdInt::locate(&bad[..]).is_err());
    let mut bad = hbh.clone();
    bad[168 - 32] = 0x1e; // garbage option in the free space after TOS
    assert!(IdInt::locate(&bad[..]).is_err());
    for cut in 0..hbh.len() {
        let mut b = hbh[..cut].to_vec();
        if b.len() >= 2 {
            b[1] = (cut / 4).saturating_sub(1) as u8;
        }
        let _ = IdInt::locate(&b[..]);
    }
}

#[test]
fn push_enforces_source_entry_position() {
    // Found by fuzzing: a stack without a source entry must not take a router entry.
    let mut hbh = hbh_example();
    let mut idint = IdInt::locate(&mut hbh[..]).unwrap().unwrap();
    let mut src = EntryRepr {
        source: true,
        ..EntryRepr::default()
    };
    assert!(idint.push(&src).is_err(), "second source entry");
    src.source = false;
    let before = hbh.clone();
    let req = RequestBuilder {
        stack_len_words: 3,
        ..RequestBuilder::new(0)
    };
    let mut fresh = vec![0u8; req.hbh_len()];
    req.emit_hbh(&mut fresh, 17).unwrap();
    // Turn the source entry into padding: an empty stack.
    idint_wire::ext::write_padding(&mut fresh[2 + 22..]);
    let mut idint = IdInt::locate(&mut fresh[..]).unwrap().unwrap();
    assert!(idint.push(&src).is_err());
    assert_eq!(hbh, before);
}
