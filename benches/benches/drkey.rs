//! DRKey: level-2 derivation from a cached level-1 key and a per-worker cache hit, with one
//! AES block encryption as the same-run baseline.

use std::hint::black_box;
use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use drkey::cache::{KeyCache, KeyId};
use drkey::provider::LocalProvider;
use drkey::{Key, Protocol, as_host};
use idint_wire::crypto::{aes128, cbc_mac};
use idint_wire::{HostAddr, IsdAsn};

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("drkey");
    let l1 = Key::from_bytes([7; 16]).cipher();
    let host = HostAddr::V4([10, 0, 0, 9].into());
    g.bench_function("baseline_aes_block_cbc_mac", |b| {
        let k = aes128(&[3; 16]);
        b.iter(|| black_box(cbc_mac(&k, black_box(&[1u8; 16]))))
    });
    g.bench_function("level2_as_host_from_cached_level1", |b| {
        b.iter(|| black_box(as_host(black_box(&l1), black_box(&host)).unwrap()))
    });
    let local: IsdAsn = "1-ff00:0:110".parse().unwrap();
    let provider = Arc::new(LocalProvider::new(local, &[9; 16], 3600).unwrap());
    let mut cache = KeyCache::new(provider, 1024);
    let ids: Vec<KeyId> = (0..64u8)
        .map(|i| KeyId {
            protocol: Protocol::IDINT,
            src: local,
            dst: "1-ff00:0:111".parse().unwrap(),
            host: HostAddr::V4([10, 0, 1, i].into()),
        })
        .collect();
    let now = 1_704_067_800;
    for id in &ids {
        cache.get(id, now).unwrap();
    }
    let mut i = 0;
    g.bench_function("cache_hit_level2_schedule", |b| {
        b.iter(|| {
            i = (i + 1) & 63;
            let k = cache.get(black_box(&ids[i]), now).unwrap();
            black_box(k as *const _);
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
