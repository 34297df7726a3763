//! Arbitrary bytes as a hop-by-hop header carrying ID-INT: locate, walk, decode every entry,
//! push an entry into the free space, seal it and verify the chain; nothing may panic and a
//! push must never write outside the pre-allocated stack. An entry made from the bytes after
//! the header (any hop, flags and slot lengths, valid or not) is pushed and put in place of
//! the top entry: a refused one must leave every byte as it was.
#![no_main]

use idint_wire::crypto::aes128;
use idint_wire::idint::crypto::{seal_entry_at, verify_stack};
use idint_wire::idint::entry::SlotValue;
use idint_wire::idint::{EntryRepr, IdInt, MainOptionRepr, Metadata, PushOutcome};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(Some(idint)) = IdInt::locate(data) else {
        return;
    };
    let main = MainOptionRepr::parse(&idint.main()).expect("located main option parses");
    let mut emitted = vec![0u8; main.buffer_len()];
    main.emit(&mut emitted).expect("emit");
    for (_, e) in idint.entries() {
        let _ = e
            .metadata()
            .map(|m| m.slot_len_mismatch(&main.instructions));
        if let Ok(r) = EntryRepr::parse(&e) {
            let mut b = vec![0u8; r.buffer_len()];
            r.emit(&mut b).expect("entry emits");
        }
    }
    let fully_valid = idint.check().is_ok();
    if data.len() >= idint.stack_range().end + 8 {
        let hostile = hostile_entry(&data[data.len() - 8..]);
        let mut b = data.to_vec();
        let mut s = IdInt::locate(&mut b[..])
            .expect("same bytes")
            .expect("same bytes");
        if s.push(&hostile).is_err() {
            assert_eq!(b, data, "a refused push changed the packet");
        }
        let mut b = data.to_vec();
        let mut s = IdInt::locate(&mut b[..])
            .expect("same bytes")
            .expect("same bytes");
        if s.replace_tos(&hostile).is_err() {
            assert_eq!(b, data, "a refused replacement changed the packet");
        }
    }
    let had_entries = idint.tos_entry().is_some();
    let stack = idint.stack_range();
    let mut copy = data.to_vec();
    let key = aes128(&[7; 16]);
    let mut s = IdInt::locate(&mut copy[..])
        .expect("same bytes")
        .expect("same bytes");
    let entry = EntryRepr {
        ingress: true,
        hop: 1,
        metadata: Metadata {
            node_id: Some(1),
            ..Metadata::default()
        },
        nonce: Some([1; 12]),
        ..EntryRepr::default()
    };
    let pushed = s.push(&entry);
    if !had_entries {
        // A stack without a source entry takes no router entry.
        assert!(pushed.is_err());
        return;
    }
    match pushed.expect("push on a checked stack with a source entry") {
        PushOutcome::Pushed { offset } => {
            assert!(offset >= stack.start && offset + entry.buffer_len() <= stack.end);
            let _ = seal_entry_at(&mut s, offset, &key);
            s.check_top().expect("top of stack well-formed after push");
            if fully_valid {
                s.check().expect("stack still well-formed after push");
            }
        }
        PushOutcome::StackFull => assert!(s.main().stack_full()),
    }
    let _ = verify_stack(&mut s, &key, |_, _| Some(&key));
    // After the stack nothing changed (only the stack and the main option's TOS/X may).
    assert_eq!(&copy[stack.end..], &data[stack.end..]);
});

/// An entry from eight fuzzer bytes: flags, hop (any of 0-255), nonce or not, bitmap mask and
/// four slot lengths (0-15 bytes: 3, 5, 7 and over 8 are invalid).
fn hostile_entry(t: &[u8]) -> EntryRepr {
    let slot = |b: u8, v: u8| {
        (b != 0).then_some(SlotValue {
            len: b,
            value: u64::from(v) * 0x0101_0101,
        })
    };
    EntryRepr {
        source: t[0] & 1 != 0,
        ingress: t[0] & 2 != 0,
        egress: t[0] & 4 != 0,
        aggregated: t[0] & 8 != 0,
        nonce: (t[0] & 16 != 0).then_some([t[7]; 12]),
        hop: t[1],
        metadata: Metadata {
            node_id: (t[2] & 8 != 0).then_some(u32::from(t[6])),
            node_count: (t[2] & 4 != 0).then_some(u16::from(t[6])),
            ingress_if: (t[2] & 2 != 0).then_some(u16::from(t[7])),
            egress_if: (t[2] & 1 != 0).then_some(u16::from(t[7])),
            slots: [
                slot(t[3] & 15, t[6]),
                slot(t[3] >> 4, t[7]),
                slot(t[4] & 15, t[6]),
                slot(t[4] >> 4, t[7]),
            ],
        },
        mac: [t[5]; 4],
    }
}
