//! The collector's key caches and replay memory are keyed by hashes of a source or a path;
//! an entry is only ever used for the source or path it was made for.

mod common;

use std::sync::Arc;

use collector::counters::RejectReason;
use collector::keys::{CollectorProvider, ImportedKeys, KeyResolver, source_slot};
use collector::metrics::DetectionConfig;
use collector::pipeline::{Pipeline, ReplayConfig, Shared};
use common::chain::{self, Ask, Chain, ases};
use drkey::provider::LocalProvider;
use idint_report::v1;
use idint_wire::{HostAddr, IsdAsn};

/// A collector of AS A that holds A's master secret and K(B/C/D -> A) for every epoch
/// containing one of `times_s`.
fn collector(times_s: &[u64]) -> Pipeline {
    let shared = Shared::new(DetectionConfig::default(), 64);
    let a = ases()[0];
    let imported = Arc::new(ImportedKeys::default());
    for &t in times_s {
        imported.import(&chain::level1_imports(t)).unwrap();
    }
    let local = LocalProvider::new(a, &chain::secret(0), chain::EPOCH).unwrap();
    let provider = Arc::new(CollectorProvider::new(
        a,
        Some(local),
        imported.clone(),
        None,
    ));
    let keys =
        KeyResolver::new(a, HostAddr::V4(chain::COLLECTOR), provider).watch(imported.clone());
    let p = Pipeline::new(shared, keys, ReplayConfig::default());
    p.shared()
        .topology
        .import_path(&chain::path_description())
        .unwrap();
    p
}

fn reasons(p: &Pipeline) -> Vec<(RejectReason, u64)> {
    RejectReason::ALL
        .into_iter()
        .map(|r| (r, p.shared().counters.rejected(r)))
        .filter(|(_, n)| *n > 0)
        .collect()
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
