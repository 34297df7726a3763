//! A per-worker cache of level-2 AS→host keys for the data plane.
//!
//! Each worker core owns one [`KeyCache`] (no sharing, no lock): a lookup that hits computes a
//! hash, compares one 2-entry set and returns the ready AES key schedule, allocating nothing.
//! A miss asks the shared [`Level1Provider`] for the level-1 key (cached too) and derives the
//! level-2 key. The table has a fixed number of sets chosen at construction; a full set
//! evicts its least recently used entry. [`KeyCache::prefetch_next_epoch`] derives next-epoch
//! keys ahead of an epoch change so the switch causes no misses.

use std::sync::Arc;

use idint_wire::crypto::Aes128;
use idint_wire::{HostAddr, IsdAsn};

use crate::provider::{Level1Provider, ProviderError};
use crate::{Epoch, Protocol, as_host};

/// Identity of a cached key: protocol, the key-issuing (fast side) AS, the host's AS, host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct KeyId {
    /// Protocol.
    pub protocol: Protocol,
    /// AS whose secret the key derives from (the router's own AS for ID-INT).
    pub src: IsdAsn,
    /// AS of the host.
    pub dst: IsdAsn,
    /// The host.
    pub host: HostAddr,
}

/// A cached key. The fields a hit reads or writes (id, stamp, generation) come first, in
/// declaration order, so a hit touches one cache line of the slot besides the key schedule.
#[repr(C)]
struct Slot {
    id: KeyId,
    stamp: u64,
    /// Which insertion filled the slot (unique per cache): a [`KeyHandle`] names it.
    generation: u64,
    epoch: Epoch,
    cipher: Aes128,
}

/// A key found by [`KeyCache::find`]. Several handles can be held at once and turned into
/// keys with [`KeyCache::key`] through a shared borrow, for example to seal a whole burst with
/// many keys in flight. A handle goes stale when its slot is refilled (a later miss evicted
/// it); [`KeyCache::key`] then answers `None` and the caller looks the key up again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyHandle {
    /// The slot (set * 2 + way).
    pub index: u32,
    /// The insertion that filled the slot.
    pub generation: u64,
}

/// Counters of a cache.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Lookups answered from the cache.
    pub hits: u64,
    /// Lookups that derived a key.
    pub misses: u64,
    /// Entries replaced to make room.
    pub evictions: u64,
    /// Keys derived ahead of their epoch.
    pub prefetched: u64,
}

/// What a lookup compares first: the key's hash and validity window, 16 bytes per way, so a
/// set's tags share one cache line and the large slots are touched only on a hit.
#[derive(Clone, Copy, Default)]
struct Tag {
    /// Hash of the key id (never 0; 0 marks an empty way).
    hash: u64,
    begin: u32,
    end: u32,
}

/// Per-worker level-2 key cache (2-way set associative, LRU within a set).
pub struct KeyCache {
    provider: Arc<dyn Level1Provider>,
    tags: Vec<[Tag; 2]>,
    sets: Vec<[Option<Slot>; 2]>,
    mask: usize,
    clock: u64,
    /// Insertions so far (the next slot's generation).
    generations: u64,
    stats: CacheStats,
}

#[inline]
fn hash(id: &KeyId) -> u64 {
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    let (a, b) = match id.host {
        HostAddr::V4(v) => (u64::from(u32::from(v)), 4),
        HostAddr::V6(v) => {
            let x = u128::from(v);
            ((x as u64) ^ ((x >> 64) as u64).rotate_left(29), 6)
        }
        HostAddr::Svc(v) => (u64::from(v.0), 1),
        HostAddr::Other { raw, addr_type } => {
            let x = u128::from_le_bytes(raw);
            (
                (x as u64) ^ ((x >> 64) as u64),
                u64::from(addr_type.nibble()),
            )
        }
    };
    let mut x =
        id.src.to_u64() ^ id.dst.to_u64().rotate_left(17) ^ (u64::from(id.protocol.0) << 48);
    x = (x ^ a).wrapping_mul(K);
    x = (x ^ b).wrapping_mul(K);
    (x ^ (x >> 29)) | 1
}

impl KeyCache {
    /// A cache with room for about `capacity` keys (rounded up to a power of two, at least 2).
    pub fn new(provider: Arc<dyn Level1Provider>, capacity: usize) -> Self {
        let sets = (capacity.max(2) / 2).next_power_of_two();
        KeyCache {
            provider,
            tags: vec![[Tag::default(); 2]; sets],
            sets: (0..sets).map(|_| [None, None]).collect(),
            mask: sets - 1,
            clock: 0,
            generations: 0,
            stats: CacheStats::default(),
        }
    }

    /// The counters.
    pub fn stats(&self) -> CacheStats {
        self.stats
    }

    /// Number of keys held.
    pub fn len(&self) -> usize {
        self.sets
            .iter()
            .map(|s| s.iter().filter(|x| x.is_some()).count())
            .sum()
    }

    /// Whether the cache is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The AES key schedule of K(src -> dst:host) valid at `time` (Unix seconds), deriving it
    /// on a miss.
    #[inline]
    pub fn get(&mut self, id: &KeyId, time: u64) -> Result<&Aes128, ProviderError> {
        let (set, way) = self.locate(id, time)?;
        self.sets[set][way]
            .as_ref()
            .map(|s| &s.cipher)
            .ok_or_else(|| ProviderError::Config("cache slot vanished".into()))
    }

    /// Like [`KeyCache::get`], but returns a handle to the key instead of borrowing the cache:
    /// the handles of many keys can then be resolved together with [`KeyCache::key`].
    #[inline]
    pub fn find(&mut self, id: &KeyId, time: u64) -> Result<KeyHandle, ProviderError> {
        let (set, way) = self.locate(id, time)?;
        let generation = self.sets[set][way]
            .as_ref()
            .map(|s| s.generation)
            .ok_or_else(|| ProviderError::Config("cache slot vanished".into()))?;
        Ok(KeyHandle {
            index: (set * 2 + way) as u32,
            generation,
        })
    }

    /// The key a handle from [`KeyCache::find`] names, or `None` if its slot has been refilled
    /// since (never another key).
    #[inline]
    pub fn key(&self, h: KeyHandle) -> Option<&Aes128> {
        let i = h.index as usize;
        let slot = self.sets.get(i / 2)?[i % 2].as_ref()?;
        (slot.generation == h.generation).then_some(&slot.cipher)
    }

    /// The (set, way) holding the key for `id` at `time`, deriving it on a miss.
    #[inline]
    fn locate(&mut self, id: &KeyId, time: u64) -> Result<(usize, usize), ProviderError> {
        self.clock += 1;
        let h = hash(id);
        let set = (h as usize >> 1) & self.mask;
        let tags = &self.tags[set];
        let ways = &self.sets[set];
        let hit = (0..2).find(|&w| {
            let t = tags[w];
            t.hash == h
                && u64::from(t.begin) <= time
                && time < u64::from(t.end)
                && ways[w].as_ref().is_some_and(|s| s.id == *id)
        });
        let way = match hit {
            Some(w) => {
                self.stats.hits += 1;
                w
            }
            None => {
                self.stats.misses += 1;
                self.insert(set, id, time)?
            }
        };
        if let Some(slot) = self.sets[set][way].as_mut() {
            slot.stamp = self.clock;
        }
        Ok((set, way))
    }

    /// Derives K(src -> dst:host) for `time` from the provider's level-1 key.
    fn derive(&self, id: &KeyId, time: u64) -> Result<(Epoch, Aes128), ProviderError> {
        let (epoch, l1) = self.provider.level1(id.protocol, id.src, id.dst, time)?;
        let key =
            as_host(&l1.cipher(), &id.host).map_err(|e| ProviderError::Config(e.to_string()))?;
        Ok((epoch, key.cipher()))
    }

    fn insert(&mut self, set: usize, id: &KeyId, time: u64) -> Result<usize, ProviderError> {
        let (epoch, cipher) = self.derive(id, time)?;
        let ways = &mut self.sets[set];
        // Prefer an empty way, then one holding the same id (other epoch), then the LRU one.
        let way = ways
            .iter()
            .position(Option::is_none)
            .or_else(|| {
                ways.iter().position(|s| {
                    s.as_ref().is_some_and(|s| {
                        s.id == *id && !s.epoch.contains(time) && s.epoch.end as u64 <= time
                    })
                })
            })
            .unwrap_or_else(|| {
                let a = ways[0].as_ref().map_or(0, |s| s.stamp);
                let b = ways[1].as_ref().map_or(0, |s| s.stamp);
                usize::from(b < a)
            });
        self.store(set, way, *id, epoch, cipher);
        Ok(way)
    }

    /// Puts a key into `way` of `set`, counting the eviction if the way was taken.
    fn store(&mut self, set: usize, way: usize, id: KeyId, epoch: Epoch, cipher: Aes128) {
        self.tags[set][way] = Tag {
            hash: hash(&id),
            begin: epoch.begin,
            end: epoch.end,
        };
        let slot = &mut self.sets[set][way];
        if slot.is_some() {
            self.stats.evictions += 1;
        }
        self.generations += 1;
        *slot = Some(Slot {
            id,
            epoch,
            cipher,
            stamp: self.clock,
            generation: self.generations,
        });
    }

    /// For every cached key whose epoch ends within `window` seconds after `now`, derives the
    /// next epoch's key into the other way of its set. Returns how many keys were derived.
    pub fn prefetch_next_epoch(&mut self, now: u64, window: u64) -> usize {
        let mut todo = Vec::new();
        for set in &self.sets {
            for s in set.iter().flatten() {
                if u64::from(s.epoch.end) > now && u64::from(s.epoch.end) <= now + window {
                    todo.push((s.id, u64::from(s.epoch.end)));
                }
            }
        }
        let mut n = 0;
        for (id, next_time) in todo {
            let set = (hash(&id) as usize >> 1) & self.mask;
            let have = self.sets[set]
                .iter()
                .flatten()
                .any(|s| s.id == id && s.epoch.contains(next_time));
            if !have && self.insert_beside(set, &id, next_time).is_ok() {
                n += 1;
            }
        }
        self.stats.prefetched += n as u64;
        n
    }

    fn insert_beside(&mut self, set: usize, id: &KeyId, time: u64) -> Result<(), ProviderError> {
        let (epoch, cipher) = self.derive(id, time)?;
        let ways = &mut self.sets[set];
        // Replace a way that does not hold `id`; if both do, the one with the older epoch.
        let way = ways
            .iter()
            .position(|s| s.as_ref().is_none_or(|s| s.id != *id))
            .unwrap_or_else(|| {
                let begin = |w: usize| ways[w].as_ref().map_or(0, |s| s.epoch.begin);
                usize::from(begin(1) < begin(0))
            });
        self.store(set, way, *id, epoch, cipher);
        Ok(())
    }
}
