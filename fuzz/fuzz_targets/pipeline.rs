//! The whole collector pipeline (`Pipeline::process_encoded`: wire decoder, verifier check,
//! freshness and replay, path mapping, DRKey keys, MAC verification and decryption, metrics,
//! learning) against the real 4-AS chain of `test_kit::chain`: its topology files and path
//! imported, the collector's real keys, and genuine reports the chain's routers filled.
//!
//! Input: byte 0 is the mode.
//! * bit 0 clear: the remaining bytes are a report batch as sent (arbitrary bytes);
//! * bit 0 set: a genuine batch (bits 1-2 pick plain latency, encrypted latency, carbon or a
//!   mix of reports; bits 3-4 how many, 1 to 4) mutated by the rest of the input, read as
//!   5-byte records `[op, report, a, b, c]` that change one field each: path hop fields, info
//!   fields, segment lengths, ISD-ASes, host addresses, the main option, stack bytes, receive
//!   time, exporter, whole reports; records with `op` bit 4 set flip a byte of the encoded
//!   batch instead (framing).
//!
//! Properties, besides "never a panic":
//! 1. the batch as a whole (one pipeline): if it accepts `n` reports, the batch decodes and at
//!    least `n` of its reports verify independently (see below);
//! 2. report by report (the same pipeline with its replay memory cleared, each report in a
//!    batch of its own, so that every verdict is known): every report the pipeline accepts
//!    verifies independently.
//!
//! "Verifies independently" uses nothing of the collector's key resolution or topology: the
//! stack is checked with `idint_wire::idint::verify_stack` under keys derived here from the
//! chain's DRKey master secrets: the source entry under K(src AS:src host -> A:collector), and
//! each router entry under K(AS -> A:collector) of the AS that owns the interfaces of the hop
//! field the entry names, by the chain's real interface ownership (1 in A; 2, 3 in B; 4, 5 in
//! C; 6 in D). An entry naming a hop no single AS owns has no key and fails. The path's own
//! hop fields are not authenticated to the collector (their MACs are for the routers), so
//! the property is about what ID-INT authenticates: every value accepted was written by the
//! AS it is attributed to, for this collector.
#![no_main]

use std::sync::OnceLock;

use collector_core::metrics::DetectionConfig;
use collector_core::pipeline::{Pipeline, Shared};
use collector_core::topology::HopLayout;
use drkey::provider::{Level1Provider, LocalProvider};
use drkey::{Protocol, as_host, host_as, host_host};
use idint_report::{idint_hbh, v1};
use idint_wire::HostAddr;
use idint_wire::addr::AddrType;
use idint_wire::crypto::Aes128Enc;
use idint_wire::idint::IdInt;
use idint_wire::idint::crypto::verify_stack;
use libfuzzer_sys::fuzz_target;
use prost::Message;
use test_kit::chain::{self, Ask, COLLECTOR, Chain, EPOCH};

/// The chain's and the collector's clock, ns: well inside a key epoch (no grace period).
const NOW_NS: u64 = 1_763_800_000_000_000_000;
/// [`NOW_NS`] in seconds.
const NOW_S: u64 = NOW_NS / 1_000_000_000;
/// Genuine reports per kind.
const GENUINE: usize = 4;
/// Bytes of one mutation record.
const RECORD: usize = 5;
/// Quarantine capacity of the fuzzed pipelines.
const QUARANTINE: usize = 16;
/// The AS (index into `chain::ases()`) owning each interface id of the chain.
const IF_OWNER: [(u16, usize); 6] = [(1, 0), (2, 1), (3, 1), (4, 2), (5, 2), (6, 3)];

/// Genuine reports: plain latency, encrypted latency, carbon; keys of the chain's ASes.
struct Fixture {
    kinds: [Vec<v1::Report>; 3],
    /// Level-1 keys K(AS -> A) of the chain's ASes at [`NOW_S`].
    level1: Vec<Aes128Enc>,
}

fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        let gen_reports = |encrypt, ask| {
            let mut c = Chain::new(NOW_NS, encrypt, ask);
            (0..GENUINE).map(|_| c.probe()).collect::<Vec<_>>()
        };
        let a = chain::ases()[0];
        let level1 = (0..4)
            .map(|i| {
                let ia = chain::ases()[i];
                let p = LocalProvider::new(ia, &chain::secret(i), EPOCH).unwrap();
                p.level1(Protocol::IDINT, ia, a, NOW_S).unwrap().1.cipher()
            })
            .collect();
        Fixture {
            kinds: [
                gen_reports(false, Ask::Latency),
                gen_reports(true, Ask::Latency),
                gen_reports(false, Ask::Carbon),
            ],
            level1,
        }
    })
}

/// A fresh collector pipeline of the chain: its topology files, path and keys.
fn pipeline() -> Pipeline {
    let p = chain::collector_pipeline(
        Shared::new(DetectionConfig::default(), QUARANTINE),
        &[NOW_S],
    );
    for t in chain::topology_files() {
        p.shared().topology.import_topology_json(&t).unwrap();
    }
    p
}

/// The chain AS (index) owning hop `(ingress, egress)`: the owner of its nonzero interfaces,
/// if there is one and only one.
fn hop_owner((ingress, egress): (u16, u16)) -> Option<usize> {
    let owner = |i: u16| IF_OWNER.iter().find(|(id, _)| *id == i).map(|&(_, o)| o);
    match (ingress, egress) {
        (0, 0) => None,
        (0, e) => owner(e),
        (i, 0) => owner(i),
        (i, e) => owner(i).filter(|&o| owner(e) == Some(o)),
    }
}

fn host(h: &Option<v1::HostAddress>) -> Option<HostAddr> {
    let h = h.as_ref()?;
    let t = u8::try_from(h.addr_type).ok().filter(|t| *t < 16)?;
    HostAddr::parse(AddrType::from_nibble(t), &h.raw).ok()
}

/// Whether `r`'s ID-INT stack verifies under the chain's real keys (see the module docs).
fn verifies(f: &Fixture, r: &v1::Report) -> bool {
    let ases = chain::ases();
    let collector = HostAddr::V4(COLLECTOR);
    let Some(src_as) = ases.iter().position(|a| a.to_u64() == r.src_isd_as) else {
        return false;
    };
    let Some(src_host) = host(&r.src_host) else {
        return false;
    };
    let Ok(ha) = host_as(&f.level1[src_as], &src_host) else {
        return false;
    };
    let Ok(source_key) = host_host(&ha.cipher(), &collector) else {
        return false;
    };
    let source_key = source_key.cipher();
    let Ok(layout) = HopLayout::of(r.path.as_ref()) else {
        return false;
    };
    let as_keys: Vec<Aes128Enc> = f
        .level1
        .iter()
        .map(|l1| as_host(l1, &collector).unwrap().cipher())
        .collect();
    let Ok(mut hbh) = idint_hbh(r) else {
        return false;
    };
    let Ok(Some(mut idint)) = IdInt::locate(&mut hbh[..]) else {
        return false;
    };
    verify_stack(&mut idint, &source_key, |_, e| {
        let j = usize::from(e.hop());
        (j < layout.hop_fields)
            .then(|| hop_owner(layout.ifs[usize::from(layout.hop_of[j])]))
            .flatten()
            .map(|o| &as_keys[o])
    })
    .is_ok()
}

/// `x` shifted into byte `b % 8` of a u64.
fn spread(x: u8, b: u8) -> u64 {
    u64::from(x) << (8 * (b % 8))
}

/// Applies one mutation record to report `r` (not a framing record).
fn mutate(r: &mut v1::Report, [op, a, b, c]: [u8; 4]) {
    let at = |len: usize| (usize::from(a) << 8 | usize::from(b)) % len.max(1);
    match op % 16 {
        0 | 15 => {
            if let Some(p) = r.path.as_mut()
                && !p.hop_fields.is_empty()
            {
                let n = p.hop_fields.len();
                let h = &mut p.hop_fields[usize::from(a) % n];
                let v = if op % 16 == 15 {
                    u32::from(c) << (8 * (b % 4))
                } else {
                    u32::from(c)
                };
                match b % 3 {
                    0 => h.cons_ingress = v,
                    1 => h.cons_egress = v,
                    _ => h.exp_time = v,
                }
            }
        }
        1 => {
            if let Some(p) = r.path.as_mut()
                && !p.info_fields.is_empty()
            {
                let n = p.info_fields.len();
                let i = &mut p.info_fields[usize::from(a) % n];
                match b % 4 {
                    0 => i.cons_dir ^= true,
                    1 => i.peer ^= true,
                    2 => i.seg_id ^= u32::from(c),
                    _ => i.timestamp ^= u32::from(c),
                }
            }
        }
        2 => {
            if let Some(p) = r.path.as_mut() {
                match b % 4 {
                    0 => p.seg_lens.push(u32::from(c % 8)),
                    1 => {
                        p.seg_lens.pop();
                    }
                    2 => p.info_fields.push(v1::InfoField {
                        cons_dir: c & 1 != 0,
                        ..Default::default()
                    }),
                    _ => {
                        if let Some(l) = p.seg_lens.get_mut(usize::from(a) % 4) {
                            *l = u32::from(c);
                        }
                    }
                }
            }
        }
        3 => r.src_isd_as ^= spread(c, b),
        4 => r.dst_isd_as ^= spread(c, b),
        5 => {
            let n = r.idint_stack.len();
            if n > 0 {
                r.idint_stack[at(n)] ^= c;
            }
        }
        6 => {
            let n = r.idint_main_option.len();
            if n > 0 {
                r.idint_main_option[at(n)] ^= c;
            }
        }
        7 | 8 => {
            let h = if op % 16 == 7 {
                &mut r.src_host
            } else {
                &mut r.dst_host
            };
            match (b % 4, h.as_mut()) {
                (0, _) => *h = None,
                (1, Some(h)) => h.addr_type = u32::from(c),
                (2, Some(h)) if !h.raw.is_empty() => {
                    let n = h.raw.len();
                    h.raw[usize::from(a) % n] ^= c;
                }
                (_, Some(h)) => h.raw.truncate(usize::from(c) % 20),
                (_, None) => {
                    *h = Some(v1::HostAddress {
                        addr_type: u32::from(c >> 4),
                        raw: vec![a; usize::from(c % 17)],
                    })
                }
            }
        }
        9 => r.receive_time_ns ^= spread(c, b),
        10 => {
            if let Some(p) = r.path.as_mut()
                && !p.hop_fields.is_empty()
            {
                let i = usize::from(a) % p.hop_fields.len();
                if b & 1 == 0 {
                    let h = p.hop_fields[i].clone();
                    p.hop_fields.insert(i, h);
                } else {
                    p.hop_fields.remove(i);
                }
            }
        }
        11 => {
            let s = &mut r.idint_stack;
            if b & 1 == 0 {
                s.truncate(s.len().saturating_sub(4 * usize::from(c % 8)));
            } else {
                s.extend_from_slice(&[c; 4]);
            }
        }
        13 => {
            r.exporter = (b & 1 == 0).then(|| v1::Exporter {
                isd_as: spread(c, a),
                router_id: u32::from(b),
                name: String::new(),
            })
        }
        _ => match (b % 3, r.path.as_mut()) {
            (0, _) => r.path = None,
            (1, Some(p)) => p.curr_hf = u32::from(c),
            (_, Some(p)) => p.curr_inf = u32::from(c),
            (_, None) => {}
        },
    }
}

/// The batch the input describes, encoded.
fn batch_bytes(f: &Fixture, mode: u8, rest: &[u8]) -> Vec<u8> {
    if mode & 1 == 0 {
        return rest.to_vec();
    }
    let n = 1 + usize::from(mode >> 3 & 3);
    let mut reports: Vec<v1::Report> = match mode >> 1 & 3 {
        k @ 0..=2 => f.kinds[usize::from(k)][..n].to_vec(),
        _ => (0..n).map(|i| f.kinds[i % 3][i].clone()).collect(),
    };
    let mut framing = Vec::new();
    for rec in rest.chunks_exact(RECORD) {
        let [op, who, a, b, c] = [rec[0], rec[1], rec[2], rec[3], rec[4]];
        if op & 0x10 != 0 {
            framing.push((usize::from(a) << 8 | usize::from(b), c));
            continue;
        }
        if reports.is_empty() {
            continue;
        }
        let i = usize::from(who) % reports.len();
        if op % 16 == 12 {
            // Whole reports: duplicate (a replay) or drop one.
            if b & 1 == 0 {
                let r = reports[i].clone();
                reports.push(r);
            } else {
                reports.remove(i);
            }
        } else {
            mutate(&mut reports[i], [op, a, b, c]);
        }
    }
    let mut bytes = v1::ReportBatch {
        exporter: None,
        sequence: 1,
        reports,
    }
    .encode_to_vec();
    let len = bytes.len();
    if len > 0 {
        for (at, x) in framing {
            bytes[at % len] ^= x;
        }
    }
    bytes
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let f = fixture();
    let bytes = batch_bytes(f, mode, rest);

    // 1. The batch as a whole.
    let mut whole = pipeline();
    let accepted = whole
        .process_encoded(&bytes, NOW_NS)
        .map_or(0, |o| o.accepted);
    let decoded = v1::ReportBatch::decode(&bytes[..]);
    if accepted > 0 {
        let b = decoded
            .as_ref()
            .expect("a batch the pipeline accepted reports of decodes");
        let genuine = b.reports.iter().filter(|r| verifies(f, r)).count();
        assert!(
            accepted <= genuine,
            "{accepted} accepted, only {genuine} verify under the real keys"
        );
    }

    // 2. Report by report.
    let Ok(b) = decoded else {
        return;
    };
    // The same pipeline (what it learned stays), its replay memory cleared so that the
    // genuine reports are not all replays now.
    let mut single = whole;
    single.clear_replay();
    for r in b.reports {
        let one = v1::ReportBatch {
            exporter: b.exporter.clone(),
            sequence: b.sequence,
            reports: vec![r],
        };
        let out = single
            .process_encoded(&one.encode_to_vec(), NOW_NS)
            .expect("a re-encoded batch decodes");
        if out.accepted > 0 {
            assert!(
                verifies(f, &one.reports[0]),
                "accepted a report that does not verify under the real keys: {:?}",
                one.reports[0]
            );
        }
    }
});
