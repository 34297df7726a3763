//! Reports crafted by an outsider who knows how the collector maps paths: a genuine report
//! whose path is replaced by made-up hop fields, with the destination solved so that the
//! path's interface fingerprint equals an imported path's. Such a report must never be taken
//! for the imported path, and must never stop the pipeline.

use collector_core::counters::RejectReason;
use collector_core::metrics::DetectionConfig;
use collector_core::pipeline::{DEFAULT_SOURCE_SHARE, Pipeline, ReplayConfig, Shared};
use collector_core::topology::PathDescription;
use idint_report::{idint_hbh, v1};
use idint_wire::IsdAsn;
use idint_wire::idint::IdInt;
use test_kit::chain::{self, Ask, Chain};

const NOW: u64 = 1_763_800_000_000_000_000;
/// Hop fields of the forged path (the imported path has 4 AS hops).
const FORGED_HOPS: usize = 12;

/// The published (unkeyed) fingerprint the collector used to find known paths, as an attacker
/// reimplements it: a chain of `mix` steps over source, destination and interfaces.
mod unkeyed {
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    const SEED: u64 = 0xcbf2_9ce4_8422_2325;
    const HOP_TAG: u64 = 1 << 40;

    fn mix(h: u64, v: u64) -> u64 {
        let x = (h ^ v).wrapping_mul(K);
        x ^ (x >> 29)
    }

    /// `x` such that `mix(0, x) == h`, i.e. the inverse of the multiply-xorshift step.
    fn unmix(h: u64) -> u64 {
        let y = h ^ (h >> 29) ^ (h >> 58);
        // K's inverse modulo 2^64 by Newton's iteration (K is odd).
        let mut inv = K;
        for _ in 0..6 {
            inv = inv.wrapping_mul(2u64.wrapping_sub(K.wrapping_mul(inv)));
        }
        y.wrapping_mul(inv)
    }

    fn hop(i: u16, e: u16) -> u64 {
        (u64::from(i) << 16) | u64::from(e) | HOP_TAG
    }

    pub fn fingerprint(src: u64, dst: u64, ifs: &[(u16, u16)]) -> u64 {
        let mut h = mix(mix(SEED, src), dst);
        for &(i, e) in ifs {
            h = mix(h, hop(i, e));
        }
        h
    }

    /// The destination that makes `fingerprint(src, dst, ifs) == target`.
    pub fn solve_dst(src: u64, ifs: &[(u16, u16)], target: u64) -> u64 {
        let mut h = target;
        for &(i, e) in ifs.iter().rev() {
            h = unmix(h) ^ hop(i, e);
        }
        unmix(h) ^ mix(SEED, src)
    }
}

fn imported_fingerprint(p: &PathDescription) -> u64 {
    let ifs: Vec<_> = p.hops.iter().map(|h| (h.ingress, h.egress)).collect();
    let (src, dst) = (p.hops[0].ia, p.hops[p.hops.len() - 1].ia);
    unkeyed::fingerprint(src.to_u64(), dst.to_u64(), &ifs)
}

/// `report` with its path replaced by [`FORGED_HOPS`] made-up hop fields in one segment and
/// its destination solved so that the unkeyed fingerprint equals the imported path's.
fn forge(report: &v1::Report) -> v1::Report {
    let imported = chain::path_description();
    let ifs: Vec<(u16, u16)> = (0..FORGED_HOPS as u16)
        .map(|k| {
            let ingress = if k == 0 { 0 } else { 100 + 2 * k };
            let egress = if k + 1 == FORGED_HOPS as u16 {
                0
            } else {
                101 + 2 * k
            };
            (ingress, egress)
        })
        .collect();
    let src = report.src_isd_as;
    let dst = unkeyed::solve_dst(src, &ifs, imported_fingerprint(&imported));
    assert_eq!(
        unkeyed::fingerprint(src, dst, &ifs),
        imported_fingerprint(&imported),
        "the attacker's forgery itself works"
    );
    let mut forged = report.clone();
    forged.dst_isd_as = dst;
    let path = forged.path.as_mut().expect("a genuine report has a path");
    path.seg_lens = vec![FORGED_HOPS as u32];
    path.info_fields.truncate(1);
    path.info_fields[0].cons_dir = true;
    path.hop_fields = ifs
        .iter()
        .map(|&(i, e)| v1::HopField {
            cons_ingress: u32::from(i),
            cons_egress: u32::from(e),
            exp_time: 63,
        })
        .collect();
    forged
}

/// Sets the hop index of stack entry `index` (the byte after the flags; 6 bits, shifted by 2).
fn set_entry_hop(r: &mut v1::Report, index: usize, hop: u8) {
    let hbh = idint_hbh(r).unwrap();
    let idint = IdInt::locate(&hbh[..]).unwrap().unwrap();
    let start = idint.stack_range().start;
    let (at, _) = idint.entries().nth(index).unwrap();
    let byte = &mut r.idint_stack[at - start + 3];
    *byte = (*byte & 0b11) | (hop << 2);
}

fn pipeline() -> Pipeline {
    let shared = Shared::new(
        DetectionConfig {
            latency_ns: 0.0,
            ..DetectionConfig::default()
        },
        64,
    );
    chain::collector_pipeline(shared, &[NOW / 1_000_000_000])
}

fn batch(reports: Vec<v1::Report>) -> v1::ReportBatch {
    v1::ReportBatch {
        reports,
        ..Default::default()
    }
}

#[test]
fn a_path_forged_to_collide_with_a_known_path_is_not_taken_for_it() {
    let mut p = pipeline();
    let mut chain = Chain::new(NOW, false, Ask::Latency);
    let genuine = chain.batch(3, 1);

    // As sent: the made-up hops verify nothing.
    let forged = forge(&genuine.reports[0]);
    // With an entry claiming hop field 10 (the imported path has 4 AS hops): the key lookup
    // must not index past the imported path's keys.
    let mut far = forge(&genuine.reports[1]);
    set_entry_hop(&mut far, 1, 10);
    let out = p.process_batch(&batch(vec![forged]), NOW);
    assert_eq!(
        (out.accepted, out.rejected),
        (0, 1),
        "the forged path was taken for the imported one"
    );
    let out = p.process_batch(&batch(vec![far]), NOW);
    assert_eq!((out.accepted, out.rejected), (0, 1));
    assert_eq!(
        p.shared().counters.rejected(RejectReason::UnknownPath),
        2,
        "{:?}",
        chain::rejections(&p)
    );
    // Nothing was measured.
    assert!(
        p.shared().metrics.is_empty(),
        "the forged reports produced values"
    );

    // The pipeline still works: the genuine report is accepted.
    let out = p.process_batch(&batch(vec![genuine.reports[2].clone()]), NOW);
    assert_eq!(
        (out.accepted, out.rejected),
        (1, 0),
        "{:?}",
        chain::rejections(&p)
    );
    let dst: IsdAsn = chain::ases()[3];
    assert_eq!(genuine.reports[2].dst_isd_as, dst.to_u64());
}

/// Flips the last byte (in the MAC) of entry `index` of a report's stack.
fn flip_entry_mac(r: &mut v1::Report, index: usize) {
    let hbh = idint_hbh(r).unwrap();
    let idint = IdInt::locate(&hbh[..]).unwrap().unwrap();
    let start = idint.stack_range().start;
    let (at, e) = idint.entries().nth(index).unwrap();
    r.idint_stack[at - start + e.total_len() - 1] ^= 1;
}

fn shared() -> Shared {
    Shared::new(DetectionConfig::default(), 64)
}

#[test]
fn unknown_paths_are_recorded_only_from_reports_whose_source_verified() {
    let mut p = chain::collector_pipeline_without_paths(shared(), &[NOW / 1_000_000_000]);
    let mut chain = Chain::new(NOW, false, Ask::Latency);
    let mut b = chain.batch(3, 1);
    // Forged: any path, a source MAC that does not verify.
    flip_entry_mac(&mut b.reports[0], 0);
    let mut elsewhere = b.reports[1].clone();
    elsewhere.dst_isd_as = IsdAsn::from_u64(0x0002_ff00_0000_0999).to_u64();
    flip_entry_mac(&mut elsewhere, 0);
    let out = p.process_batch(&batch(vec![b.reports[0].clone(), elsewhere]), NOW);
    assert_eq!((out.accepted, out.rejected), (0, 2));
    assert_eq!(p.shared().counters.rejected(RejectReason::BadSourceMac), 2);
    assert!(p.shared().topology.unknown_paths().is_empty());
    // Genuine: recorded, once per report; the same report again is a replay.
    let out = p.process_batch(&batch(b.reports[1..].to_vec()), NOW);
    assert_eq!((out.accepted, out.rejected), (0, 2));
    let unknown = p.shared().topology.unknown_paths();
    assert_eq!(unknown.len(), 1);
    assert_eq!(unknown[0].reports, 2);
    p.process_batch(&batch(vec![b.reports[2].clone()]), NOW);
    assert_eq!(p.shared().counters.rejected(RejectReason::Replayed), 1);
    assert_eq!(p.shared().topology.unknown_paths()[0].reports, 2);
}

#[test]
fn walked_paths_are_learned_only_when_every_as_on_them_vouched() {
    let mut p = chain::collector_pipeline_without_paths(shared(), &[NOW / 1_000_000_000]);
    for f in chain::topology_files() {
        p.shared().topology.import_topology_json(&f).unwrap();
    }
    let learned = |p: &Pipeline| p.shared().topology.snapshot().paths.len();
    // Only the first and last AS write entries: the report verifies, the path is not learned.
    let mut chain = Chain::new(NOW, false, Ask::Latency);
    chain.no_idint = vec![1, 2, 3];
    let out = p.process_batch(&chain.batch(2, 1), NOW);
    assert_eq!(
        (out.accepted, out.rejected),
        (2, 0),
        "{:?}",
        chain::rejections(&p)
    );
    assert_eq!(
        learned(&p),
        0,
        "learned from a report B and C never wrote to"
    );
    // Every AS wrote: learned.
    chain.no_idint.clear();
    let out = p.process_batch(&chain.batch(1, 2), NOW);
    assert_eq!(out.accepted, 1);
    assert_eq!(learned(&p), 1);
}

#[test]
fn learned_paths_are_capped_and_the_refusals_counted() {
    let mut shared = shared();
    shared.max_learned_paths = 0;
    let mut p = chain::collector_pipeline_without_paths(shared, &[NOW / 1_000_000_000]);
    for f in chain::topology_files() {
        p.shared().topology.import_topology_json(&f).unwrap();
    }
    let mut chain = Chain::new(NOW, false, Ask::Latency);
    let out = p.process_batch(&chain.batch(2, 1), NOW);
    assert_eq!(out.accepted, 2);
    assert!(p.shared().topology.snapshot().paths.is_empty());
    let c = &p.shared().counters;
    assert_eq!(
        c.paths_learned.load(std::sync::atomic::Ordering::Relaxed),
        0
    );
    assert_eq!(
        c.paths_not_learned
            .load(std::sync::atomic::Ordering::Relaxed),
        1
    );
}

#[test]
fn one_source_cannot_fill_the_replay_memory_and_lock_the_others_out() {
    const CAPACITY: usize = 16;
    // A small replay memory, shared as by default.
    let replay = ReplayConfig {
        capacity: CAPACITY,
        per_source: CAPACITY / DEFAULT_SOURCE_SHARE,
        ..ReplayConfig::default()
    };
    let mut p = chain::collector_pipeline_with(shared(), &[NOW / 1_000_000_000], replay);
    let path = chain::path_description();
    p.shared().topology.import_path(&path).unwrap();
    let mut busy = Chain::new(NOW, false, Ask::Latency);
    // One source sends as many genuine reports as the memory holds.
    let out = p.process_batch(&busy.batch(CAPACITY, 1), NOW);
    assert_eq!(out.accepted, CAPACITY / DEFAULT_SOURCE_SHARE);
    assert_eq!(
        p.shared().counters.rejected(RejectReason::SourceQuota) as usize,
        CAPACITY - CAPACITY / DEFAULT_SOURCE_SHARE
    );
    // Another source is still heard.
    let mut other = Chain::from_source(
        std::net::Ipv4Addr::new(10, 0, 0, 77),
        NOW,
        false,
        Ask::Latency,
        |_| {},
    );
    let out = p.process_batch(&other.batch(1, 2), NOW);
    assert_eq!(
        (out.accepted, out.rejected),
        (1, 0),
        "{:?}",
        chain::rejections(&p)
    );
}

#[test]
fn the_quarantine_keeps_the_reason_and_a_prefix_of_a_large_report() {
    use collector_core::counters::QUARANTINE_REPORT_BYTES;
    let mut p = chain::collector_pipeline(shared(), &[NOW / 1_000_000_000]);
    let mut chain = Chain::new(NOW, false, Ask::Latency);
    let mut b = chain.batch(1, 1);
    // An outsider decides the size: a stack of 60 KB of garbage.
    b.reports[0].idint_stack = vec![0xee; 60_000];
    let out = p.process_batch(&b, NOW);
    assert_eq!(out.rejected, 1);
    let q = p.shared().quarantine.list(None, 10);
    assert_eq!(q.len(), 1);
    assert_eq!(q[0].reason, RejectReason::MalformedOptions);
    assert_eq!(q[0].report_hex.len(), 2 * QUARANTINE_REPORT_BYTES);
    assert!(q[0].report_len > 60_000, "{}", q[0].report_len);
}

/// The chain's pipeline with its path and the four ASes' topology files imported (so that
/// paths can also be walked over the imported interfaces).
fn pipeline_with_topology() -> Pipeline {
    let p = pipeline();
    for t in chain::topology_files() {
        p.shared().topology.import_topology_json(&t).unwrap();
    }
    p
}

/// Found by the `pipeline` fuzz target: a genuine report whose path names an interface no
/// AS has at one of its ends (the destination's egress 9, the source's ingress 7) was walked
/// over the imported interfaces, accepted and learned as a path with made-up interfaces.
#[test]
fn a_walk_takes_no_interface_the_topology_does_not_know() {
    let mut chain = Chain::new(NOW, false, Ask::Latency);
    let genuine = chain.batch(3, 1);
    let mut p = pipeline_with_topology();
    let mut made_up_egress = genuine.reports[0].clone();
    made_up_egress.path.as_mut().unwrap().hop_fields[3].cons_egress = 9;
    let mut made_up_ingress = genuine.reports[1].clone();
    made_up_ingress.path.as_mut().unwrap().hop_fields[0].cons_ingress = 7;
    for (what, r) in [("egress", made_up_egress), ("ingress", made_up_ingress)] {
        let out = p.process_batch(&batch(vec![r]), NOW);
        assert_eq!(
            (out.accepted, out.rejected),
            (0, 1),
            "a made-up {what} was walked: {:?}",
            chain::rejections(&p)
        );
    }
    let topo = p.shared().topology.snapshot();
    assert!(
        topo.paths
            .values()
            .all(|path| path.hops.iter().all(|h| h.ingress != 7 && h.egress != 9)),
        "a path with made-up interfaces was learned"
    );
    let out = p.process_batch(&batch(vec![genuine.reports[2].clone()]), NOW);
    assert_eq!(
        (out.accepted, out.rejected),
        (1, 0),
        "{:?}",
        chain::rejections(&p)
    );
}

/// The chain's four `topology.json` files without `remote_interface_id` (as scionproto writes
/// them): no interface names its far end's id. `skip` leaves those ASes (index) out.
fn topology_files_without_far_ends(skip: &[usize]) -> Vec<String> {
    let [a, b, c, d] = chain::ases().map(|x| x.to_string());
    [
        chain::topology_json(&a, true, &[("ra", Some(1), &[(1, &b, None)])]),
        chain::topology_json(
            &b,
            true,
            &[
                ("rb1", Some(2), &[(2, &a, None)]),
                ("rb2", Some(3), &[(3, &c, None)]),
            ],
        ),
        chain::topology_json(
            &c,
            true,
            &[("rc", Some(4), &[(4, &b, None), (5, &d, None)])],
        ),
        chain::topology_json(&d, true, &[("rd", Some(5), &[(6, &c, None)])]),
    ]
    .into_iter()
    .enumerate()
    .filter(|(i, _)| !skip.contains(i))
    .map(|(_, f)| f)
    .collect()
}

/// A pipeline knowing the chain only from these topology files (no imported path).
fn pipeline_with_files(files: &[String]) -> Pipeline {
    let p = chain::collector_pipeline_without_paths(shared(), &[NOW / 1_000_000_000]);
    for f in files {
        p.shared().topology.import_topology_json(f).unwrap();
    }
    p
}

/// Whether some known path or link names interface `ifid` of AS `as_index`.
fn knows_interface(p: &Pipeline, as_index: usize, ifid: u16) -> bool {
    let ia = chain::ases()[as_index];
    let topo = p.shared().topology.snapshot();
    let in_paths = topo.paths.values().any(|path| {
        path.hops
            .iter()
            .any(|h| h.ia == ia && (h.ingress == ifid || h.egress == ifid))
    });
    let in_links = topo
        .links
        .iter()
        .any(|l| (l.a, l.a_if) == (ia, ifid) || (l.b, l.b_if) == (ia, ifid));
    in_paths || in_links
}

/// Found by the `pipeline` fuzz target: a genuine report whose path names a made-up ingress
/// interface at a middle hop (B's 77 instead of 2, C's 99 instead of 4) where the interface
/// before it does not name its far end (no `remote_interface_id`) was walked, accepted (the
/// entries verify: ID-INT does not authenticate the hop fields' interfaces), measured and
/// learned as a path with a made-up interface and a made-up link.
#[test]
fn a_walk_checks_a_middle_hops_ingress_where_the_far_end_is_not_named() {
    let mut p = pipeline_with_files(&topology_files_without_far_ends(&[]));
    let mut chain = Chain::new(NOW, false, Ask::Latency);
    let genuine = chain.batch(3, 1);
    let mut at_b = genuine.reports[0].clone();
    at_b.path.as_mut().unwrap().hop_fields[1].cons_ingress = 77;
    let mut at_c = genuine.reports[1].clone();
    at_c.path.as_mut().unwrap().hop_fields[2].cons_ingress = 99;
    for (what, r) in [("B's ingress 77", at_b), ("C's ingress 99", at_c)] {
        let out = p.process_batch(&batch(vec![r]), NOW);
        assert_eq!(
            (out.accepted, out.rejected),
            (0, 1),
            "{what} was walked: {:?}",
            chain::rejections(&p)
        );
    }
    assert_eq!(p.shared().counters.rejected(RejectReason::UnknownPath), 2);
    assert!(
        p.shared().metrics.is_empty(),
        "the made-up paths produced values"
    );
    assert!(!knows_interface(&p, 1, 77), "learned B's made-up 77");
    assert!(!knows_interface(&p, 2, 99), "learned C's made-up 99");
    // The genuine path walks: every ingress is an interface of its AS leading back.
    let out = p.process_batch(&batch(vec![genuine.reports[2].clone()]), NOW);
    assert_eq!(
        (out.accepted, out.rejected),
        (1, 0),
        "{:?}",
        chain::rejections(&p)
    );
    let topo = p.shared().topology.snapshot();
    let learned: Vec<_> = topo.paths.values().map(|x| x.hops.clone()).collect();
    assert_eq!(learned, vec![chain::path_description().hops]);
}

/// The destination's ingress when the destination's topology is not imported: only the far
/// end (the previous AS's interface naming its `remote_interface_id`) can vouch for it.
#[test]
fn a_walk_into_an_as_not_imported_takes_its_ingress_only_from_the_far_end() {
    let mut p = pipeline_with_files(&topology_files_without_far_ends(&[3]));
    let mut chain = Chain::new(NOW, false, Ask::Latency);
    let genuine = chain.batch(4, 1);
    let mut made_up = genuine.reports[0].clone();
    made_up.path.as_mut().unwrap().hop_fields[3].cons_ingress = 66;
    // Neither D's file nor C's interface 5 says which interface of D the link ends at.
    for r in [made_up, genuine.reports[1].clone()] {
        let out = p.process_batch(&batch(vec![r]), NOW);
        assert_eq!(
            (out.accepted, out.rejected),
            (0, 1),
            "{:?}",
            chain::rejections(&p)
        );
    }
    assert!(!knows_interface(&p, 3, 66), "learned D's made-up 66");
    assert!(p.shared().topology.snapshot().paths.is_empty());
    // C's file names the far end of its interface 5: D's 6.
    let [_, _, c, d] = chain::ases().map(|x| x.to_string());
    p.shared()
        .topology
        .import_topology_json(&chain::topology_json(
            &c,
            true,
            &[(
                "rc",
                Some(4),
                &[(4, &chain::ases()[1].to_string(), None), (5, &d, Some(6))],
            )],
        ))
        .unwrap();
    let mut made_up = genuine.reports[2].clone();
    made_up.path.as_mut().unwrap().hop_fields[3].cons_ingress = 66;
    let out = p.process_batch(&batch(vec![made_up]), NOW);
    assert_eq!((out.accepted, out.rejected), (0, 1));
    assert!(!knows_interface(&p, 3, 66), "learned D's made-up 66");
    let out = p.process_batch(&batch(vec![genuine.reports[3].clone()]), NOW);
    assert_eq!(
        (out.accepted, out.rejected),
        (1, 0),
        "{:?}",
        chain::rejections(&p)
    );
}
