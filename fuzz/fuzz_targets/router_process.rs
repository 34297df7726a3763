//! Arbitrary packets (or mutations of the reference router cases) through the processor of
//! routers R and C of `router_cases.json`, arriving from every kind of link. Checks: no panic;
//! single and burst processing agree (the packet alone, and in a burst after a case packet and
//! after itself), and so do the transit fast path and the general pipeline; whatever leaves is
//! well-formed (forwarded packets parse, SCMP replies parse, fit 1232 bytes and carry a correct
//! checksum).
//!
//! Input: byte 0 = selector (bit 0 router, bits 1-2 ingress kind, bit 7 mutation mode),
//! byte 1 = ingress interface; in mutation mode byte 2 picks a case whose input is XORed with
//! the remaining bytes, otherwise the remaining bytes are the packet.
#![no_main]

use std::sync::OnceLock;

use idint_wire::packet::{L4, Packet};
use idint_wire::scion::ScionHeader;
use idint_wire::scmp::ScmpPacket;
use libfuzzer_sys::fuzz_target;
use scion_dp::{Disposition, Ingress, PacketSlot, Processor};
use scion_dp_replay::CaseFile;

const CASES: &str = include_str!("../../testdata/scion/router_cases.json");
const ROOM: usize = 2048;

fn cases() -> &'static CaseFile {
    static FILE: OnceLock<CaseFile> = OnceLock::new();
    FILE.get_or_init(|| CaseFile::parse(CASES).expect("router cases"))
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 3 {
        return;
    }
    let file = cases();
    let (sel, ifid) = (data[0], u16::from(data[1]));
    let router = &file.routers[if sel & 1 == 0 { "R" } else { "C" }];
    let ingress = match (sel >> 1) & 3 {
        0 => Ingress::Internal,
        1 => Ingress::Sibling(ifid),
        _ => Ingress::External(ifid),
    };
    let packet: Vec<u8> = if sel & 0x80 != 0 {
        let case = &file.cases[usize::from(data[2]) % file.cases.len()];
        let mut p = case.input.clone();
        for (i, x) in data[3..].iter().enumerate() {
            let n = p.len();
            p[i % n] ^= x;
        }
        p
    } else {
        data[2..].to_vec()
    };
    if packet.len() > ROOM {
        return;
    }
    let len = packet.len();

    let mut single = vec![0u8; ROOM];
    single[..len].copy_from_slice(&packet);
    let mut p = Processor::new(router);
    let d = p.process(&mut single, len, ingress, file.now_ns);

    // In a burst: after a case packet and then after itself (the fast path takes the path
    // layout from the packet before when the bytes that decide it are the same).
    let base = &file.cases[usize::from(data[2]) % file.cases.len()].input;
    let mut base_single = vec![0u8; ROOM];
    base_single[..base.len()].copy_from_slice(base);
    let base_d = p.process(&mut base_single, base.len(), ingress, file.now_ns);
    let mut bufs = [base.as_slice(), &packet, &packet].map(|input| {
        let mut b = vec![0u8; ROOM];
        b[..input.len()].copy_from_slice(input);
        (b, input.len())
    });
    let mut slots = bufs.each_mut().map(|(buf, len)| PacketSlot {
        buf: &mut buf[..],
        len: *len,
        ingress,
        disposition: None,
    });
    p.process_burst(&mut slots, file.now_ns);
    assert_eq!(
        slots[0].disposition,
        Some(base_d),
        "burst and single disagree"
    );
    for s in &slots[1..] {
        assert_eq!(s.disposition, Some(d), "burst and single disagree");
    }
    assert_eq!(
        bufs[0].0, base_single,
        "burst and single wrote different bytes"
    );
    for (b, _) in &bufs[1..] {
        assert_eq!(b, &single, "burst and single wrote different bytes");
    }

    let mut general = vec![0u8; ROOM];
    general[..len].copy_from_slice(&packet);
    let mut g = Processor::new(router).without_fast_path();
    let dg = g.process(&mut general, len, ingress, file.now_ns);
    assert_eq!(dg, d, "fast path and general pipeline disagree");
    assert_eq!(
        &general[..],
        &single[..],
        "fast path and general pipeline wrote different bytes"
    );

    match d {
        Disposition::Forward { .. } | Disposition::Sibling { .. } | Disposition::Deliver { .. } => {
            assert!(
                ScionHeader::new_checked(&single[..len]).is_ok(),
                "{d:?} unparsable"
            );
        }
        Disposition::Reply { len, .. } => {
            assert!(len <= 1232, "SCMP reply of {len} bytes");
            let p = Packet::parse(&single[..len]).expect("SCMP reply parses");
            assert!(p.payload_len_matches(), "SCMP reply PayloadLen");
            let L4::Scmp(m) = p.l4 else {
                panic!("reply without SCMP")
            };
            let m = ScmpPacket::new_unchecked(m.into_inner());
            assert!(m.verify_checksum(&p.header), "SCMP reply checksum");
        }
        _ => {}
    }
});
