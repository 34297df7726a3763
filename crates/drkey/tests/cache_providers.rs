//! Key providers and the per-worker cache.
#![cfg(feature = "std")]

use std::sync::Arc;

use drkey::cache::{KeyCache, KeyId, PackedKeyId};
use drkey::provider::{Level1Provider, LocalProvider, ProviderError, StaticProvider};
use drkey::{Epoch, Protocol, as_host, level1, secret_value};
use idint_wire::crypto::cbc_mac;
use idint_wire::{AddrType, HostAddr, IsdAsn, Svc};

fn ia(s: &str) -> IsdAsn {
    s.parse().unwrap()
}

const T: u64 = 1_704_067_800;

#[test]
fn local_provider_matches_direct_derivation_and_rejects_other_ases() {
    let p = LocalProvider::new(ia("1-ff00:0:110"), &[5; 16], 3600).unwrap();
    let (epoch, k) = p
        .level1(Protocol::IDINT, ia("1-ff00:0:110"), ia("1-ff00:0:111"), T)
        .unwrap();
    assert_eq!(epoch, Epoch::containing(T, 3600).unwrap());
    let sv = secret_value(&[5; 16], Protocol::IDINT, epoch).unwrap();
    assert_eq!(k, level1(&sv, ia("1-ff00:0:111")));
    // Another protocol gives another key.
    let (_, k2) = p
        .level1(Protocol::SCMP, ia("1-ff00:0:110"), ia("1-ff00:0:111"), T)
        .unwrap();
    assert_ne!(k, k2);
    assert!(matches!(
        p.level1(Protocol::IDINT, ia("1-ff00:0:120"), ia("1-ff00:0:111"), T),
        Err(ProviderError::NotFound { .. })
    ));
    assert!(LocalProvider::new(ia("1-ff00:0:110"), &[5; 16], 60).is_err());
    assert!(LocalProvider::new(ia("1-ff00:0:110"), &[], 3600).is_err());
}

#[test]
fn local_provider_reads_master_key_files() {
    let dir = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../testdata/scion/config_examples/router_benchmark/keys/master0.key"
    );
    let p =
        LocalProvider::from_key_file(ia("1-ff00:0:1"), std::path::Path::new(dir), 86400).unwrap();
    assert!(
        p.level1(Protocol::IDINT, ia("1-ff00:0:1"), ia("1-ff00:0:2"), T)
            .is_ok()
    );
    let err = LocalProvider::from_key_file(
        ia("1-ff00:0:1"),
        std::path::Path::new("/nonexistent/master0.key"),
        86400,
    );
    assert!(err.is_err());
}

#[test]
fn static_provider_file_format_and_errors() {
    let text = r#"[{"src_ia": "1-ff00:0:111", "dst_ia": "1-ff00:0:110", "protocol": 2,
                    "epoch_begin": 1704067200, "epoch_end": 1704070800,
                    "key_hex": "000102030405060708090a0b0c0d0e0f"}]"#;
    let p = StaticProvider::from_json(text).unwrap();
    let (e, k) = p
        .level1(Protocol::IDINT, ia("1-ff00:0:111"), ia("1-ff00:0:110"), T)
        .unwrap();
    assert_eq!((e.begin, e.end), (1_704_067_200, 1_704_070_800));
    assert_eq!(k.as_bytes()[15], 0x0f);
    assert!(
        p.level1(
            Protocol::IDINT,
            ia("1-ff00:0:111"),
            ia("1-ff00:0:110"),
            1_704_070_800
        )
        .is_err()
    );
    for bad in [
        "not json",
        r#"[{"src_ia": "x", "dst_ia": "1-ff00:0:110", "protocol": 2, "epoch_begin": 1, "epoch_end": 2, "key_hex": "000102030405060708090a0b0c0d0e0f"}]"#,
        r#"[{"src_ia": "1-ff00:0:111", "dst_ia": "1-ff00:0:110", "protocol": 2, "epoch_begin": 2, "epoch_end": 2, "key_hex": "000102030405060708090a0b0c0d0e0f"}]"#,
        r#"[{"src_ia": "1-ff00:0:111", "dst_ia": "1-ff00:0:110", "protocol": 2, "epoch_begin": 1, "epoch_end": 2, "key_hex": "0001"}]"#,
    ] {
        let e = StaticProvider::from_json(bad).err().expect("rejected");
        assert!(!e.to_string().is_empty());
    }
}

fn id(host: u8) -> KeyId {
    KeyId {
        protocol: Protocol::IDINT,
        src: ia("1-ff00:0:110"),
        dst: ia("1-ff00:0:111"),
        host: HostAddr::V4([10, 0, 0, host].into()),
    }
}

#[test]
fn every_kind_of_host_has_its_own_packed_id_and_key() {
    let hosts = [
        HostAddr::V4([10, 0, 0, 1].into()),
        HostAddr::V6(std::net::Ipv6Addr::new(0, 0, 0, 0, 0, 0, 0x0a00, 1)),
        HostAddr::Svc(Svc(1)),
        HostAddr::Other {
            addr_type: AddrType::from_nibble(0x1),
            raw: {
                let mut r = [0u8; 16];
                r[..8].copy_from_slice(&[10, 0, 0, 1, 0, 0, 0, 0]);
                r
            },
        },
    ];
    let ids: Vec<KeyId> = hosts.iter().map(|&host| KeyId { host, ..id(1) }).collect();
    let packed: Vec<PackedKeyId> = ids.iter().map(KeyId::packed).collect();
    let (v4, v6) = (u128::from(0x0a00_0001u32), 0xa00_0001u128);
    assert_eq!(
        PackedKeyId::ip(Protocol::IDINT, ids[0].src, ids[0].dst, false, v4),
        packed[0]
    );
    assert_eq!(
        PackedKeyId::ip(Protocol::IDINT, ids[0].src, ids[0].dst, true, v6),
        packed[1]
    );
    for (i, p) in packed.iter().enumerate() {
        assert_eq!(p.key_id(), ids[i], "round trip of {:?}", ids[i].host);
        for q in &packed[i + 1..] {
            assert_ne!(
                p, q,
                "hosts with the same bits but of other kinds stay apart"
            );
        }
    }
    // Each is cached under its own key: the one a fresh derivation gives (a host type
    // without a derivation is refused every time and never cached).
    let provider = Arc::new(LocalProvider::new(ia("1-ff00:0:110"), &[5; 16], 3600).unwrap());
    let (_, l1) = provider
        .level1(Protocol::IDINT, ia("1-ff00:0:110"), ia("1-ff00:0:111"), T)
        .unwrap();
    let mut cache = KeyCache::new(provider, 64);
    let probe = [3u8; 16];
    let mut misses = Vec::new();
    for _round in 0..2 {
        for id in &ids {
            match as_host(&l1.cipher(), &id.host) {
                Ok(k) => {
                    let want = cbc_mac(&k.cipher(), &probe);
                    let h = cache.find_packed(&id.packed(), T).unwrap();
                    assert_eq!(
                        cbc_mac(cache.key(h).unwrap(), &probe),
                        want,
                        "{:?}",
                        id.host
                    );
                    assert_eq!(cbc_mac(cache.get(id, T).unwrap(), &probe), want);
                }
                Err(_) => {
                    assert!(matches!(id.host, HostAddr::Other { .. }));
                    assert!(cache.find_packed(&id.packed(), T).is_err());
                }
            }
        }
        misses.push(cache.stats().misses);
    }
    // Round 1: 3 derivations and the refused type; round 2: only the refused type misses
    // again.
    assert_eq!(misses, [4, 5]);
    assert_eq!(cache.len(), 3);
}

#[test]
fn cache_returns_the_derived_key_hits_and_evicts() {
    let provider = Arc::new(LocalProvider::new(ia("1-ff00:0:110"), &[5; 16], 3600).unwrap());
    let mut cache = KeyCache::new(provider.clone(), 4);
    let (_, l1) = provider
        .level1(Protocol::IDINT, ia("1-ff00:0:110"), ia("1-ff00:0:111"), T)
        .unwrap();
    let want = as_host(&l1.cipher(), &id(1).host).unwrap();
    let probe = [9u8; 16];
    let got = cbc_mac(cache.get(&id(1), T).unwrap(), &probe);
    assert_eq!(got, cbc_mac(&want.cipher(), &probe));
    cache.get(&id(1), T).unwrap();
    assert_eq!((cache.stats().hits, cache.stats().misses), (1, 1));
    for h in 2..50 {
        cache.get(&id(h), T).unwrap();
    }
    assert!(cache.len() <= 4);
    assert!(cache.stats().evictions > 0);
    // Still correct after evictions.
    assert_eq!(
        cbc_mac(cache.get(&id(1), T).unwrap(), &probe),
        cbc_mac(&want.cipher(), &probe)
    );
}

#[test]
fn a_set_holds_four_keys_and_evicts_the_least_recently_used() {
    let provider = Arc::new(LocalProvider::new(ia("1-ff00:0:110"), &[5; 16], 3600).unwrap());
    // Capacity 4: a single 4-way set, so every key competes for the same ways.
    let mut cache = KeyCache::new(provider, 4);
    let hits_misses = |c: &KeyCache| (c.stats().hits, c.stats().misses);
    for h in 1..=4 {
        cache.find(&id(h), T).unwrap();
    }
    assert_eq!(hits_misses(&cache), (0, 4));
    // Four keys used round-robin all stay.
    for _ in 0..3 {
        for h in 1..=4 {
            cache.find(&id(h), T).unwrap();
        }
    }
    assert_eq!(hits_misses(&cache), (12, 4));
    assert_eq!(cache.stats().evictions, 0);
    // A fifth key replaces the least recently used one (4), not the others.
    for h in 1..=3 {
        cache.find(&id(h), T).unwrap();
    }
    cache.find(&id(5), T).unwrap();
    assert_eq!(cache.stats().evictions, 1);
    for h in [1, 2, 3, 5] {
        cache.find(&id(h), T).unwrap();
    }
    assert_eq!(hits_misses(&cache), (19, 5));
    cache.find(&id(4), T).unwrap();
    assert_eq!(hits_misses(&cache), (19, 6));
}

#[test]
fn handles_name_their_key_until_the_slot_is_refilled() {
    let provider = Arc::new(LocalProvider::new(ia("1-ff00:0:110"), &[5; 16], 3600).unwrap());
    let mut cache = KeyCache::new(provider.clone(), 4);
    let probe = [7u8; 16];
    let direct = |h: u8| {
        let (_, l1) = provider
            .level1(Protocol::IDINT, ia("1-ff00:0:110"), ia("1-ff00:0:111"), T)
            .unwrap();
        cbc_mac(
            &as_host(&l1.cipher(), &id(h).host).unwrap().cipher(),
            &probe,
        )
    };
    // Several handles held at once resolve to their own keys through one shared borrow.
    let handles: Vec<_> = (1..=3).map(|h| cache.find(&id(h), T).unwrap()).collect();
    let keys: Vec<_> = handles.iter().map(|&h| cache.key(h)).collect();
    for (k, h) in keys.iter().zip(1..=3) {
        assert_eq!(cbc_mac(k.expect("fresh handle"), &probe), direct(h));
    }
    // A hit returns the same handle; find counts like get.
    assert_eq!(cache.find(&id(1), T).unwrap(), handles[0]);
    assert_eq!(cache.stats().hits, 1);
    // Fill the cache with other keys: every original slot is refilled sooner or later, and
    // a stale handle answers None, never another host's key.
    for h in 10..60 {
        cache.find(&id(h), T).unwrap();
    }
    let stale = handles.iter().filter(|&&h| cache.key(h).is_none()).count();
    assert_eq!(stale, 3, "all three slots were refilled");
    for &h in &handles {
        if let Some(k) = cache.key(h) {
            panic!("stale handle resolved to a key: {:?}", cbc_mac(k, &probe));
        }
    }
    let again = cache.find(&id(2), T).unwrap();
    assert_eq!(cbc_mac(cache.key(again).unwrap(), &probe), direct(2));
}

#[test]
fn epoch_change_and_prefetch() {
    let provider = Arc::new(LocalProvider::new(ia("1-ff00:0:110"), &[5; 16], 3600).unwrap());
    let mut cache = KeyCache::new(provider.clone(), 64);
    let epoch = Epoch::containing(T, 3600).unwrap();
    let probe = [1u8; 16];
    let a = cbc_mac(cache.get(&id(1), T).unwrap(), &probe);
    // Next epoch's key differs.
    let next = u64::from(epoch.end);
    assert_eq!(cache.prefetch_next_epoch(next - 10, 60), 1);
    let misses = cache.stats().misses;
    let b = cbc_mac(cache.get(&id(1), next).unwrap(), &probe);
    assert_eq!(cache.stats().misses, misses, "prefetched key is a hit");
    assert_ne!(a, b);
    // And both epochs are held side by side.
    assert_eq!(cbc_mac(cache.get(&id(1), next - 1).unwrap(), &probe), a);
}

#[test]
fn concurrent_workers_each_with_a_cache() {
    let provider: Arc<dyn Level1Provider> =
        Arc::new(LocalProvider::new(ia("1-ff00:0:110"), &[5; 16], 3600).unwrap());
    let (_, l1) = provider
        .level1(Protocol::IDINT, ia("1-ff00:0:110"), ia("1-ff00:0:111"), T)
        .unwrap();
    let want: Vec<[u8; 16]> = (0..32u8)
        .map(|h| {
            cbc_mac(
                &as_host(&l1.cipher(), &id(h).host).unwrap().cipher(),
                &[0; 16],
            )
        })
        .collect();
    let want = Arc::new(want);
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let provider = provider.clone();
            let want = want.clone();
            std::thread::spawn(move || {
                let mut cache = KeyCache::new(provider, 16);
                for i in 0..5_000u32 {
                    let h = ((i * 7 + t) % 32) as u8;
                    assert_eq!(
                        cbc_mac(cache.get(&id(h), T).unwrap(), &[0; 16]),
                        want[usize::from(h)]
                    );
                }
                cache.stats()
            })
        })
        .collect();
    for t in threads {
        let s = t.join().unwrap();
        assert_eq!(s.hits + s.misses, 5_000);
    }
}
