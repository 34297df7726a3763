//! `verify_stack_with` (entries verified several at a time, AES interleaved) against a
//! straightforward entry-by-entry verifier built from the public pieces (`source_mac`,
//! `open_entry`): same result, same entries handed over in the same order, same decrypted
//! bytes, for stacks of every entry shape (plain and encrypted, 12 to 64 bytes, more entries
//! than one group of lanes), tampered bytes and missing keys.
#![cfg(feature = "crypto")]

use idint_wire::crypto::{Aes128Enc, aes128, ct_eq};
use idint_wire::idint::crypto::{
    LANES, VerifyError, open_entry, seal_entry_at, source_mac, verify_stack_with,
};
use idint_wire::idint::entry::SlotValue;
use idint_wire::idint::{Entry, EntryRepr, IdInt, Metadata, PushOutcome, RequestBuilder};
use proptest::prelude::*;

/// What a verifier produced: its result and every (index, entry bytes) it handed over.
type Outcome = (Result<usize, VerifyError>, Vec<(usize, Vec<u8>)>);

/// Entry by entry, as the specification reads: source MAC, then each entry decrypted and
/// checked against the previous entry's on-wire MAC.
fn reference(
    hbh: &mut [u8],
    source_key: &Aes128Enc,
    key_for: &dyn Fn(usize) -> Option<Aes128Enc>,
) -> Outcome {
    let mut seen = Vec::new();
    let mut idint = match IdInt::locate(&mut *hbh) {
        Ok(Some(v)) => v,
        _ => unreachable!("the caller located it already"),
    };
    let mut offs = [0u16; idint_wire::idint::stack::MAX_ENTRIES];
    let n = match idint.check_entries(&mut offs) {
        Ok(n) => n,
        Err(e) => return (Err(VerifyError::Malformed(e)), seen),
    };
    if n == 0 {
        return (Err(VerifyError::NoSourceEntry), seen);
    }
    let start = usize::from(offs[0]);
    let src = idint.entry_at(start).unwrap();
    let want = source_mac(source_key, idint.main().as_bytes(), src.as_bytes());
    if !ct_eq(&want, &src.mac()) {
        return (Err(VerifyError::BadMac { index: 0 }), seen);
    }
    seen.push((0, src.as_bytes().to_vec()));
    let mut prev = src.mac();
    for (index, &at) in offs[..n].iter().enumerate().skip(1) {
        let Some(key) = key_for(index) else {
            return (Err(VerifyError::MissingKey { index }), seen);
        };
        let mut e = idint.entry_at_mut(usize::from(at)).unwrap();
        match open_entry(&key, &mut e, prev) {
            Some(on_wire) => prev = on_wire,
            None => return (Err(VerifyError::BadMac { index }), seen),
        }
        seen.push((index, e.as_bytes().to_vec()));
    }
    (Ok(n), seen)
}

fn under_test(
    hbh: &mut [u8],
    source_key: &Aes128Enc,
    key_for: &dyn Fn(usize) -> Option<Aes128Enc>,
) -> Outcome {
    let keys: Vec<Option<Aes128Enc>> = (0..64).map(key_for).collect();
    let mut seen = Vec::new();
    let mut idint = IdInt::locate(hbh).unwrap().unwrap();
    let r = verify_stack_with(
        &mut idint,
        source_key,
        |index, _| keys.get(index).and_then(Option::as_ref),
        |index, e: &Entry<&[u8]>| seen.push((index, e.as_bytes().to_vec())),
    );
    (r, seen)
}

fn key(i: usize) -> Aes128Enc {
    aes128(&[i as u8 ^ 0x5a; 16])
}

/// One router entry: (encrypt, node id?, ingress if?, slot lengths in 2-byte units, value).
type EntryShape = (bool, bool, bool, [u8; 4], u64);

fn entry(shape: &EntryShape, index: usize) -> EntryRepr {
    let (enc, node, ifs, ml, value) = *shape;
    let slot = |k: usize| {
        (ml[k] > 0).then_some(SlotValue {
            len: 2 * ml[k],
            value: value.rotate_left(k as u32 * 13),
        })
    };
    EntryRepr {
        ingress: !index.is_multiple_of(2),
        egress: !index.is_multiple_of(3),
        nonce: enc.then_some([index as u8 ^ value as u8; 12]),
        hop: index as u8 & 0x3f,
        metadata: Metadata {
            node_id: node.then_some(value as u32),
            node_count: None,
            ingress_if: ifs.then_some(index as u16),
            egress_if: None,
            slots: [slot(0), slot(1), slot(2), slot(3)],
        },
        ..EntryRepr::default()
    }
}

/// A signed request (the source entry with the metadata of `source`) with these router
/// entries pushed and sealed (as far as they fit).
fn stack(source: &EntryShape, shapes: &[EntryShape], source_key: &Aes128Enc) -> Vec<u8> {
    let mut req = RequestBuilder::new(0x1234_5678_9abc);
    req.stack_len_words = 240;
    // Up to 38 bytes: short and long source-MAC inputs alike.
    req.source_metadata = entry(source, 0).metadata;
    let mut hbh = vec![0u8; req.hbh_len()];
    req.emit_signed(&mut hbh, 17, source_key).unwrap();
    let mut idint = IdInt::locate(&mut hbh[..]).unwrap().unwrap();
    for (i, s) in shapes.iter().enumerate() {
        match idint.push(&entry(s, i + 1)).unwrap() {
            PushOutcome::Pushed { offset } => {
                seal_entry_at(&mut idint, offset, &key(i + 1)).unwrap();
            }
            PushOutcome::StackFull => break,
        }
    }
    hbh
}

fn shape() -> impl Strategy<Value = EntryShape> {
    (
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        [0u8..=4, 0u8..=4, 0u8..=4, 0u8..=4],
        any::<u64>(),
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn lanes_agree_with_entry_by_entry(
        source in shape(),
        shapes in prop::collection::vec(shape(), 0..2 * LANES + 3),
        flip in prop::option::of((any::<prop::sample::Index>(), 1u8..)),
        missing in prop::option::of(1usize..2 * LANES + 4),
    ) {
        let source_key = key(0);
        let mut hbh = stack(&source, &shapes, &source_key);
        if let Some((at, x)) = flip {
            // Anywhere after the HBH header's two bytes and the main option's type byte.
            let i = 3 + at.index(hbh.len() - 3);
            hbh[i] ^= x;
        }
        if IdInt::locate(&mut hbh[..]).ok().flatten().is_none() {
            return Ok(());
        }
        let key_for = |i: usize| (Some(i) != missing).then(|| key(i));
        let mut a = hbh.clone();
        let mut b = hbh.clone();
        let want = reference(&mut a, &source_key, &key_for);
        let got = under_test(&mut b, &source_key, &key_for);
        prop_assert_eq!(&got, &want);
        if want.0.is_ok() {
            prop_assert_eq!(a, b, "decrypted stacks differ");
        }
        if flip.is_none() && missing.is_none_or(|m| m > shapes.len()) {
            prop_assert!(want.0.is_ok(), "an untouched stack verifies: {:?}", want.0);
        }
    }
}
