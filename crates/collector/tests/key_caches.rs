//! The collector's keys: cached entries (in slots keyed by hashes of a source or a path) are
//! only ever used for the source or path they were made for, and entries written just before
//! a key epoch began verify under the previous epoch's keys (DRKey's grace period).

use collector::counters::RejectReason;
use collector::keys::source_slot;
use collector::metrics::DetectionConfig;
use collector::pipeline::{Pipeline, Shared};
use idint_report::v1;
use idint_wire::{HostAddr, IsdAsn};
use test_kit::chain::{self, Ask, Chain, ases};

/// A collector of AS A that holds A's master secret and K(B/C/D -> A) for every epoch
/// containing one of `times_s`.
fn collector(times_s: &[u64]) -> Pipeline {
    chain::collector_pipeline(Shared::new(DetectionConfig::default(), 64), times_s)
}

fn reasons(p: &Pipeline) -> Vec<(RejectReason, u64)> {
    chain::rejections(p)
}

/// An IPv6 host in `ia` whose `source_id` equals `target` (every step of the hash inverts).
fn colliding_v6(ia: IsdAsn, target: u64) -> std::net::Ipv6Addr {
    const P: u64 = 0x0000_0100_0000_01b3;
    // Inverse of P mod 2^64 (Newton).
    let mut inv: u64 = 1;
    for _ in 0..7 {
        inv = inv.wrapping_mul(2u64.wrapping_sub(P.wrapping_mul(inv)));
    }
    let unshift = |y: u64| {
        let mut x = y;
        for _ in 0..3 {
            x = y ^ (x >> 31);
        }
        x
    };
    let mut h1 = (ia.to_u64() ^ 0x9e37_79b9_7f4a_7c15).wrapping_mul(P); // first chunk 0
    h1 ^= h1 >> 31;
    let want = target ^ 3; // IPv6 nibble
    let w2 = unshift(want).wrapping_mul(inv) ^ h1;
    let mut b = [0u8; 16];
    b[8..].copy_from_slice(&w2.to_le_bytes());
    std::net::Ipv6Addr::from(b)
}

/// A report from another source host whose (IA, host) hashes to the same 64-bit cache slot
/// (the key cache is filled before the MAC is checked) must not leave its key for the
/// genuine source: the genuine source's next reports verify.
#[test]
fn another_source_cannot_poison_a_sources_cached_key() {
    let now = 1_763_800_000_000_000_000u64;
    let a = ases()[0];
    let victim = HostAddr::V4(chain::RA_HOST);
    let forged_host = colliding_v6(a, source_slot(a, &victim));
    assert_eq!(
        source_slot(a, &HostAddr::V6(forged_host)),
        source_slot(a, &victim)
    );
    let mut chain = Chain::new(now, false, Ask::Latency);
    let b = chain.batch(2, 1);
    let mut forged = b.reports[0].clone();
    forged.src_host = Some(v1::HostAddress {
        addr_type: 3,
        raw: forged_host.octets().to_vec(),
    });
    let mut p = collector(&[now / 1_000_000_000]);
    let first = v1::ReportBatch {
        reports: vec![forged],
        ..Default::default()
    };
    assert_eq!(p.process_batch(&first, now).rejected, 1);
    let genuine = v1::ReportBatch {
        reports: vec![b.reports[1].clone()],
        ..Default::default()
    };
    let out = p.process_batch(&genuine, now);
    assert_eq!(out.accepted, 1, "{:?}", reasons(&p));
}

/// A probe sent 1 ms before a DRKey epoch boundary: the source and routers RA..RC MAC with
/// epoch i keys, the sink RD (2 ms later) with epoch i+1 keys and reports its receive time.
/// SCION (doc/cryptography/drkey.rst, "Grace period"): "We define a short overlapping period
/// in which the protocol accepts packets with the key for the previous epoch i-1 and also for
/// the current one i ... GRACE_PERIOD = 5 seconds". The collector has every key it needs.
#[test]
fn a_report_crossing_an_epoch_boundary_verifies() {
    let epoch_ns = u64::from(chain::EPOCH) * 1_000_000_000;
    let boundary = (1_763_800_000_000_000_000u64 / epoch_ns + 1) * epoch_ns;
    let sent = boundary - 1_000_000;
    let mut chain = Chain::new(sent, false, Ask::Latency);
    chain.sink_delay_ns = 2_000_000;
    let b = chain.batch(1, 1);
    let mut p = collector(&[sent / 1_000_000_000, boundary / 1_000_000_000]);
    let out = p.process_batch(&b, boundary + 10_000_000);
    assert_eq!((out.accepted, out.rejected), (1, 0), "{:?}", reasons(&p));
    assert_eq!(
        p.shared()
            .counters
            .grace_accepted
            .load(std::sync::atomic::Ordering::Relaxed),
        1
    );
    // A tampered entry fails under both epochs' keys.
    let mut chain = Chain::new(sent + 1_000, false, Ask::Latency);
    chain.sink_delay_ns = 2_000_000;
    let mut b = chain.batch(1, 2);
    // The second entry's MAC (the stack ends in padding): the source entry is
    // `stack[1] + 2` bytes long, the next entry as long again by its own length byte.
    let stack = &mut b.reports[0].idint_stack;
    let second = usize::from(stack[1]) + 2;
    let mac_end = second + usize::from(stack[second + 1]) + 2;
    stack[mac_end - 1] ^= 1;
    let out = p.process_batch(&b, boundary + 20_000_000);
    assert_eq!((out.accepted, out.rejected), (0, 1));
    assert!(
        reasons(&p)
            .iter()
            .any(|(r, n)| *r == RejectReason::BadMac && *n == 1),
        "{:?}",
        reasons(&p)
    );
}

/// Same, but every router (and the sink) processed the probe in epoch i; the report carries no
/// receive time (optional field), so the collector's clock, 10 ms later and past the boundary,
/// picks epoch i+1 for every key.
#[test]
fn a_report_without_receive_time_processed_just_after_the_boundary_verifies() {
    let epoch_ns = u64::from(chain::EPOCH) * 1_000_000_000;
    let boundary = (1_763_800_000_000_000_000u64 / epoch_ns + 1) * epoch_ns;
    let sent = boundary - 1_000_000;
    let mut chain = Chain::new(sent, false, Ask::Latency);
    let mut b = chain.batch(1, 1);
    b.reports[0].receive_time_ns = 0;
    let mut p = collector(&[sent / 1_000_000_000, boundary / 1_000_000_000]);
    let out = p.process_batch(&b, boundary + 10_000_000);
    assert_eq!((out.accepted, out.rejected), (1, 0), "{:?}", reasons(&p));
}

/// The same setups away from an epoch boundary, and the genuine report alone, are accepted.
#[test]
fn the_same_setups_without_boundary_or_forgery_are_accepted() {
    let epoch_ns = u64::from(chain::EPOCH) * 1_000_000_000;
    let boundary = (1_763_800_000_000_000_000u64 / epoch_ns + 1) * epoch_ns;
    let sent = boundary - 1_000_000_000;
    let mut chain = Chain::new(sent, false, Ask::Latency);
    chain.sink_delay_ns = 2_000_000;
    let b = chain.batch(1, 1);
    let mut p = collector(&[sent / 1_000_000_000, boundary / 1_000_000_000]);
    let out = p.process_batch(&b, sent + 10_000_000);
    assert_eq!((out.accepted, out.rejected), (1, 0), "{:?}", reasons(&p));

    let now = 1_763_800_000_000_000_000u64;
    let mut chain = Chain::new(now, false, Ask::Latency);
    let b = chain.batch(2, 1);
    let mut p = collector(&[now / 1_000_000_000]);
    let genuine = v1::ReportBatch {
        reports: vec![b.reports[1].clone()],
        ..Default::default()
    };
    assert_eq!(
        p.process_batch(&genuine, now).accepted,
        1,
        "{:?}",
        reasons(&p)
    );
}

/// A chain whose clock runs on across a key epoch's start (a long test, a load run) keeps
/// sending genuine reports: the source entry of each probe is made with the key of the epoch
/// of that probe's own timestamp, not of the epoch the chain was built in.
#[test]
fn a_chain_sends_genuine_reports_across_an_epoch_start() {
    let epoch_ns = u64::from(chain::EPOCH) * 1_000_000_000;
    let boundary = (1_763_800_000_000_000_000u64 / epoch_ns + 1) * epoch_ns;
    let before = boundary - 1_000_000_000;
    // Past the grace period, in which the previous epoch's keys are still accepted.
    let after = boundary + 60 * 1_000_000_000;
    let mut p = collector(&[before / 1_000_000_000, after / 1_000_000_000]);
    let mut chain = Chain::new(before, false, Ask::Latency);
    let b = chain.batch(1, 1);
    let out = p.process_batch(&b, before + 1_000_000);
    assert_eq!((out.accepted, out.rejected), (1, 0), "{:?}", reasons(&p));
    chain.now_ns = after;
    let b = chain.batch(1, 2);
    let out = p.process_batch(&b, after + 1_000_000);
    assert_eq!((out.accepted, out.rejected), (1, 0), "{:?}", reasons(&p));
}
