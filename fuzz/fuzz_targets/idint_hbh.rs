//! Arbitrary bytes as a hop-by-hop header carrying ID-INT: locate, walk, decode every entry,
//! push an entry into the free space, seal it and verify the chain; nothing may panic and a
//! push must never write outside the pre-allocated stack.
#![no_main]

use idint_wire::crypto::aes128;
use idint_wire::idint::crypto::{seal_entry_at, verify_stack};
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
