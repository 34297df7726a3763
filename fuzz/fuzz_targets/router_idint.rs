//! Arbitrary packets, or mutations of reference router cases carrying an ID-INT request,
//! through routers R and C of `router_cases.json` with the ID-INT stage (sink role on).
//! Checks: no panic; single and burst processing agree byte for byte (same nonces), for one
//! packet, and the general path (no plans) agrees with single packets, one burst and two
//! bursts for two copies (the remembered key, sealing together) and for the unmutated
//! request followed by its mutation (the flow plan the first leaves); the lower-bound aid
//! on the unmutated request, its mutation and the request again (no panic, same decisions,
//! stacks that still parse); packets
//! that leave keep their length; a packet that got an entry still holds a well-formed stack.
//!
//! Input: byte 0 = selector (bit 0 router, bits 1-2 ingress kind, bits 3-4 aggregation mode,
//! bit 5 encryption, bit 7 mutation mode), byte 1 = ingress interface; in mutation mode byte 2
//! picks a case whose ID-INT version is XORed with the remaining bytes, otherwise the
//! remaining bytes are the packet.
#![no_main]

use std::sync::OnceLock;

use idint_wire::crypto::{Aes128Enc, aes128};
use idint_wire::idint::{AggregationMode, IdInt, Instruction, RequestBuilder};
use idint_wire::{HostAddr, IsdAsn};
use libfuzzer_sys::fuzz_target;
use scion_dp::idint::{
    IdIntStage, KeyHandle, NonceSource, ReportExporter, SinkRecord, VerifierKeys,
};
use scion_dp::telemetry::{HopContext, TelemetrySource};
use scion_dp::{Disposition, Ingress, PacketSlot, Processor};
use scion_dp_replay::CaseFile;

const CASES: &str = include_str!("../../testdata/scion/router_cases.json");
const ROOM: usize = 2048;

fn cases() -> &'static CaseFile {
    static FILE: OnceLock<CaseFile> = OnceLock::new();
    FILE.get_or_init(|| CaseFile::parse(CASES).expect("router cases"))
}

/// One key for every verifier, but handed out like a tiny cache that evicts: every third
/// lookup refills the slot, so handles taken earlier in a burst go stale and the stage must
/// look their key up again (the outcome must not change).
struct Keys {
    key: Aes128Enc,
    finds: u64,
}
impl VerifierKeys for Keys {
    fn find(&mut self, _: IsdAsn, _: &HostAddr, _: u64) -> Option<KeyHandle> {
        self.finds += 1;
        Some(KeyHandle {
            index: 0,
            generation: self.finds / 3,
        })
    }
    fn key(&self, h: KeyHandle) -> Option<&Aes128Enc> {
        (h.generation == self.finds / 3).then_some(&self.key)
    }
}

struct Source;
impl TelemetrySource for Source {
    fn node_id(&self) -> Option<u32> {
        Some(3)
    }
    fn ingress_timestamp_ns(&mut self, c: &HopContext) -> Option<u64> {
        Some(c.now_ns)
    }
    fn uptime_s(&mut self) -> Option<u32> {
        Some(77)
    }
}

struct Seq(u64);
impl NonceSource for Seq {
    fn nonce(&mut self) -> [u8; 12] {
        self.0 += 1;
        let mut n = [0u8; 12];
        n[4..].copy_from_slice(&self.0.to_be_bytes());
        n
    }
}

struct Count(usize);
impl ReportExporter for Count {
    fn export(&mut self, r: &SinkRecord<'_>) -> bool {
        self.0 += r.packet.len();
        true
    }
}

fn stage() -> IdIntStage<Keys, Source, Seq, Count> {
    IdIntStage::new(
        Keys {
            key: aes128(&[7; 16]),
            finds: 0,
        },
        Source,
        Seq(0),
    )
    .with_sink(Count(0))
}

/// `input` with an ID-INT request inserted after the SCION header.
fn with_request(input: &[u8], mode: AggregationMode, encrypt: bool) -> Vec<u8> {
    let req = RequestBuilder {
        encrypt,
        infrastructure: true,
        mode,
        inst_bitmap: 0xf,
        instructions: [
            Instruction(0x82),
            Instruction(0x49),
            Instruction(0x4f),
            Instruction(0xc1),
        ],
        stack_len_words: 40,
        ..RequestBuilder::new(12345)
    };
    let hl = usize::from(input[5]) * 4;
    let mut hbh = vec![0u8; req.hbh_len()];
    req.emit_signed(&mut hbh, input[4], &aes128(&[1; 16]))
        .expect("request");
    let mut out = input[..hl].to_vec();
    out.extend_from_slice(&hbh);
    out.extend_from_slice(&input[hl..]);
    out[4] = idint_wire::ext::HBH;
    let pl = u16::from_be_bytes([out[6], out[7]]).wrapping_add(hbh.len() as u16);
    out[6..8].copy_from_slice(&pl.to_be_bytes());
    out
}

/// Burst slots over `bufs`, packet `k` of length `packets[k].len()`.
fn slots<'a>(
    bufs: &'a mut [Vec<u8>],
    packets: &[&Vec<u8>],
    ingress: Ingress,
) -> Vec<PacketSlot<'a>> {
    bufs.iter_mut()
        .zip(packets)
        .map(|(b, p)| PacketSlot {
            buf: &mut b[..],
            len: p.len(),
            ingress,
            disposition: None,
        })
        .collect()
}

/// Processes two packets one after the other through the general path (no plans): the
/// reference. The fast path must give exactly that (decisions, bytes, counters) for the two
/// as single packets (a plan the first leaves serves the second), as one burst, and as two
/// bursts of one (the plan outlives its burst).
fn pair_as_in_sequence(
    router: &scion_dp::config::Router,
    ingress: Ingress,
    now_ns: u64,
    packets: [&Vec<u8>; 2],
    what: &str,
) {
    let buffers = || {
        packets.map(|p| {
            let mut b = vec![0u8; ROOM];
            b[..p.len()].copy_from_slice(p);
            b
        })
    };
    let one_by_one = |mut st: IdIntStage<Keys, Source, Seq, Count>| {
        let mut bufs = buffers();
        let mut ds = Vec::new();
        for (b, p) in bufs.iter_mut().zip(packets) {
            ds.push(Processor::new(router).process_with(b, p.len(), ingress, now_ns, &mut st));
        }
        (ds, bufs, *st.counters())
    };
    let (ds, expected, counters) = one_by_one(stage().without_fast_path());
    let check = |how: &str, got: (Vec<Disposition>, [Vec<u8>; 2], _)| {
        assert_eq!(got.0, ds, "{what}, {how}: decisions");
        for k in 0..2 {
            assert_eq!(got.1[k], expected[k], "{what}, {how}: bytes of packet {k}");
        }
        assert_eq!(got.2, counters, "{what}, {how}: counters");
    };
    check("single packets", one_by_one(stage()));
    let decisions = |s: &[PacketSlot<'_>]| -> Vec<Disposition> {
        s.iter().map(|s| s.disposition.expect("decided")).collect()
    };
    // One burst of both.
    let mut sb = stage();
    let mut bufs = buffers();
    let mut pair = slots(&mut bufs, &packets, ingress);
    Processor::new(router).process_burst_with(&mut pair, now_ns, &mut sb);
    let d = decisions(&pair);
    drop(pair);
    check("one burst", (d, bufs, *sb.counters()));
    // Two bursts of one, the same stage.
    let mut sb = stage();
    let mut bufs = buffers();
    let mut d = Vec::new();
    for k in 0..2 {
        let mut one = slots(&mut bufs[k..k + 1], &packets[k..k + 1], ingress);
        Processor::new(router).process_burst_with(&mut one, now_ns, &mut sb);
        d.extend(decisions(&one));
    }
    check("two bursts", (d, bufs, *sb.counters()));
}

/// The lower-bound aid (`scion_dp::lower_bound`, both modes, in a burst and one by one) on the
/// unmutated request (which teaches it the template), the mutated packet and the unmutated one
/// again: no panic, the stage's decisions, and a stack that still parses wherever it did.
fn lower_bound_takes_what_fits(
    router: &scion_dp::config::Router,
    ingress: Ingress,
    now_ns: u64,
    packets: [&Vec<u8>; 3],
) {
    use scion_dp::lower_bound::{LowerBound, Mode, WithStage};
    for mode in [Mode::Sealed, Mode::Unsealed] {
        for burst in [true, false] {
            let mut bufs = packets.map(|p| {
                let mut b = vec![0u8; ROOM];
                b[..p.len()].copy_from_slice(p);
                b
            });
            let mut st = stage();
            let mut bound = LowerBound::new(mode).expect("an aid mode");
            let mut hook = WithStage {
                bound: &mut bound,
                stage: &mut st,
            };
            let mut ds = Vec::new();
            if burst {
                let mut slots = slots(&mut bufs, &packets, ingress);
                Processor::new(router).process_burst_with(&mut slots, now_ns, &mut hook);
                ds.extend(slots.iter().map(|s| s.disposition.expect("decided")));
            } else {
                for (b, p) in bufs.iter_mut().zip(packets) {
                    ds.push(Processor::new(router).process_with(
                        b,
                        p.len(),
                        ingress,
                        now_ns,
                        &mut hook,
                    ));
                }
            }
            // The real stage alone decides alike (the aid never changes a decision).
            let mut real = stage();
            for (k, p) in packets.iter().enumerate() {
                let mut b = vec![0u8; ROOM];
                b[..p.len()].copy_from_slice(p);
                let d = Processor::new(router).process_with(
                    &mut b,
                    p.len(),
                    ingress,
                    now_ns,
                    &mut real,
                );
                assert_eq!(d, ds[k], "{mode:?}, burst {burst}: decision of packet {k}");
                let parses = |buf: &mut [u8]| {
                    idint_wire::packet::Packet::parse(&buf[..p.len()])
                        .ok()
                        .and_then(|x| x.hbh_range())
                        .map(|r| IdInt::locate(&mut buf[r]).is_ok())
                };
                if parses(&mut b) == Some(true) {
                    assert_eq!(
                        parses(&mut bufs[k]),
                        Some(true),
                        "{mode:?}, burst {burst}: stack of packet {k}"
                    );
                }
            }
        }
    }
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
    let mode = AggregationMode::from_bits(sel >> 3);
    let mut unmutated = None;
    let packet: Vec<u8> = if sel & 0x80 != 0 {
        let case = &file.cases[usize::from(data[2]) % file.cases.len()];
        if case.input.len() < 12 {
            return;
        }
        let mut p = with_request(&case.input, mode, sel & 0x20 != 0);
        unmutated = Some(p.clone());
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

    // The case's request unmutated, then the mutated packet, in one burst: the first one's
    // push leaves a plan for its flow, which the second must take only if it would decide
    // exactly alike.
    if let Some(base) = unmutated.filter(|b| b.len() <= ROOM) {
        pair_as_in_sequence(
            router,
            ingress,
            file.now_ns,
            [&base, &packet],
            "unmutated, mutated",
        );
        lower_bound_takes_what_fits(router, ingress, file.now_ns, [&base, &packet, &base]);
    }
    let mut single = vec![0u8; ROOM];
    single[..len].copy_from_slice(&packet);
    let mut st = stage();
    let d = Processor::new(router).process_with(&mut single, len, ingress, file.now_ns, &mut st);

    let mut burst = vec![0u8; ROOM];
    burst[..len].copy_from_slice(&packet);
    let mut sb = stage();
    let mut slots = [PacketSlot {
        buf: &mut burst[..],
        len,
        ingress,
        disposition: None,
    }];
    Processor::new(router).process_burst_with(&mut slots, file.now_ns, &mut sb);
    assert_eq!(slots[0].disposition, Some(d), "burst and single disagree");
    assert_eq!(
        &burst[..],
        &single[..],
        "burst and single wrote different bytes"
    );
    assert_eq!(*sb.counters(), *st.counters());

    // Two copies in one burst: the second meets the verifier key and the plan the first left,
    // and both entries are sealed together at the end of the burst.
    pair_as_in_sequence(
        router,
        ingress,
        file.now_ns,
        [&packet, &packet],
        "two copies",
    );

    let mut general = vec![0u8; ROOM];
    general[..len].copy_from_slice(&packet);
    let mut sg = stage().without_fast_path();
    let dg = Processor::new(router).process_with(&mut general, len, ingress, file.now_ns, &mut sg);
    assert_eq!(dg, d, "fast push and general path disagree");
    assert_eq!(
        &general[..],
        &single[..],
        "fast push and general path wrote different bytes"
    );
    assert_eq!(*sg.counters(), *st.counters());

    if st.counters().pushed + st.counters().aggregated > 0 {
        // Entries are written only into packets that leave or are delivered, or that ended
        // at this sink with the D flag.
        assert!(matches!(
            d,
            Disposition::Forward { .. }
                | Disposition::Sibling { .. }
                | Disposition::Deliver { .. }
                | Disposition::Drop(scion_dp::DropReason::TelemetryConsumed)
        ));
        let hl = usize::from(single[5]) * 4;
        let hbh_len = (usize::from(single[hl + 1]) + 1) * 4;
        if st.counters().stripped == 0 {
            let idint = IdInt::locate(&single[hl..hl + hbh_len])
                .expect("stack still parses")
                .expect("still ID-INT");
            idint.check().expect("stack still well-formed");
        } else {
            // Stripped: no ID-INT left (options after the stack, which the router never
            // reads, may still be anything the sender put there).
            assert!(!matches!(
                IdInt::locate(&single[hl..hl + hbh_len]),
                Ok(Some(_))
            ));
        }
    }
    // Packets keep their size: nothing beyond the original length was written unless the
    // router answered with an SCMP message.
    if !matches!(d, Disposition::Reply { .. }) {
        assert!(
            single[len..].iter().all(|&b| b == 0),
            "wrote past the packet"
        );
    }
});
