//! A per-worker cache of level-2 AS→host keys for the data plane.
//!
//! Each worker core owns one [`KeyCache`] (no sharing, no lock): a lookup that hits computes a
//! hash, compares the ways of one set (a cache line each: key id, epoch, generation, LRU
//! stamp) and returns the ready AES key schedule, allocating nothing.
//! A miss asks the shared [`Level1Provider`] for the level-1 key (cached too) and derives the
//! level-2 key. The table has a fixed number of sets chosen at construction; a full set
//! evicts its least recently used entry. [`KeyCache::prefetch_next_epoch`] derives next-epoch
//! keys ahead of an epoch change so the switch causes no misses.

use core::net::{Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

use idint_wire::crypto::{Aes128Enc, aes128};
use idint_wire::{AddrType, HostAddr, IsdAsn, Svc};

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

/// A [`KeyId`] as integers, as lookups hash and compare it: no enum, so that a lookup inlined
/// into its caller keeps the id in registers (an id stored in pieces and read back in other
/// widths costs a store-forwarding stall per lookup).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PackedKeyId {
    /// [`KeyId::src`].
    pub src: u64,
    /// [`KeyId::dst`].
    pub dst: u64,
    /// The host address bits (IPv4 and service addresses in the low bits).
    pub host: [u64; 2],
    /// [`KeyId::protocol`].
    pub protocol: u16,
    /// The host's kind: 1 IPv4, 2 IPv6, 3 service, `0x10 | type nibble` for other types.
    pub kind: u8,
}

impl PackedKeyId {
    /// The id of an IPv4 (`v6 == false`; `addr` is the 32-bit address) or IPv6 host: what
    /// [`KeyId::packed`] gives for the same host, without building a [`HostAddr`].
    #[inline(always)]
    pub fn ip(protocol: Protocol, src: IsdAsn, dst: IsdAsn, v6: bool, addr: u128) -> Self {
        PackedKeyId {
            src: src.to_u64(),
            dst: dst.to_u64(),
            host: [(addr >> 64) as u64, addr as u64],
            protocol: protocol.0,
            kind: if v6 { 2 } else { 1 },
        }
    }

    /// The [`KeyId`] this packs.
    pub fn key_id(&self) -> KeyId {
        let bits = (u128::from(self.host[0]) << 64) | u128::from(self.host[1]);
        let host = match self.kind {
            1 => HostAddr::V4(Ipv4Addr::from(bits as u32)),
            2 => HostAddr::V6(Ipv6Addr::from(bits)),
            3 => HostAddr::Svc(Svc(bits as u16)),
            k => HostAddr::Other {
                addr_type: AddrType::from_nibble(k),
                raw: bits.to_le_bytes(),
            },
        };
        KeyId {
            protocol: Protocol(self.protocol),
            src: IsdAsn::from_u64(self.src),
            dst: IsdAsn::from_u64(self.dst),
            host,
        }
    }
}

impl KeyId {
    /// This id as integers.
    #[inline(always)]
    pub fn packed(&self) -> PackedKeyId {
        let (bits, kind) = match self.host {
            HostAddr::V4(v) => (u128::from(u32::from(v)), 1),
            HostAddr::V6(v) => (u128::from(v), 2),
            HostAddr::Svc(v) => (u128::from(v.0), 3),
            HostAddr::Other { raw, addr_type } => {
                (u128::from_le_bytes(raw), 0x10 | addr_type.nibble())
            }
        };
        PackedKeyId {
            src: self.src.to_u64(),
            dst: self.dst.to_u64(),
            host: [(bits >> 64) as u64, bits as u64],
            protocol: self.protocol.0,
            kind,
        }
    }
}

/// One way of a set: everything a lookup reads or writes, in one cache line (the key
/// schedules live apart, in [`KeyCache`]'s `ciphers`, touched only when a key is used).
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Way {
    id: PackedKeyId,
    /// Validity window of the key (its epoch): `begin <= time < end`.
    begin: u32,
    end: u32,
    /// Which insertion filled the way (unique per cache, never 0): a [`KeyHandle`] names it.
    /// 0 marks an empty way.
    generation: u64,
    /// Lookup clock of the last hit (LRU).
    stamp: u64,
}

// A lookup must cost one cache line per way.
const _: () = assert!(core::mem::size_of::<Way>() == 64);

const EMPTY: Way = Way {
    id: PackedKeyId {
        src: 0,
        dst: 0,
        host: [0; 2],
        protocol: 0,
        kind: 0,
    },
    begin: 0,
    end: 0,
    generation: 0,
    stamp: 0,
};

impl Way {
    #[inline(always)]
    fn holds(&self, id: &PackedKeyId, time: u64) -> bool {
        self.generation != 0
            && u64::from(self.begin) <= time
            && time < u64::from(self.end)
            && self.id.src == id.src
            && self.id.dst == id.dst
            && self.id.host == id.host
            && self.id.protocol == id.protocol
            && self.id.kind == id.kind
    }

    fn epoch(&self) -> Epoch {
        Epoch {
            begin: self.begin,
            end: self.end,
        }
    }
}

/// A key found by [`KeyCache::find`]. Several handles can be held at once and turned into
/// keys with [`KeyCache::key`] through a shared borrow, for example to seal a whole burst with
/// many keys in flight. A handle goes stale when its slot is refilled (a later miss evicted
/// it); [`KeyCache::key`] then answers `None` and the caller looks the key up again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyHandle {
    /// The slot (set * ways per set + way).
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

/// Ways per set.
const WAYS: usize = 4;

/// Per-worker level-2 key cache (4-way set associative, LRU within a set).
pub struct KeyCache {
    provider: Arc<dyn Level1Provider>,
    /// The ways of set `s` at `WAYS * s ..` (one cache line each).
    ways: Vec<Way>,
    /// The key schedule of each way (same index); meaningless while the way is empty.
    ciphers: Vec<Aes128Enc>,
    mask: usize,
    clock: u64,
    /// Insertions so far (the last slot's generation).
    generations: u64,
    stats: CacheStats,
}

#[inline(always)]
fn hash(id: &PackedKeyId) -> u64 {
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut x = id.src ^ id.dst.rotate_left(17) ^ (u64::from(id.protocol) << 48);
    x = (x ^ id.host[1] ^ id.host[0].rotate_left(29)).wrapping_mul(K);
    x = (x ^ u64::from(id.kind)).wrapping_mul(K);
    (x ^ (x >> 29)) | 1
}

impl KeyCache {
    /// A cache with room for about `capacity` keys (rounded up to a power of two of 4-way
    /// sets, at least one).
    pub fn new(provider: Arc<dyn Level1Provider>, capacity: usize) -> Self {
        let sets = capacity.div_ceil(WAYS).max(1).next_power_of_two();
        let unused = aes128(&[0; 16]);
        KeyCache {
            provider,
            ways: vec![EMPTY; WAYS * sets],
            ciphers: vec![unused; WAYS * sets],
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
        self.ways.iter().filter(|w| w.generation != 0).count()
    }

    /// Whether the cache is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The AES key schedule of K(src -> dst:host) valid at `time` (Unix seconds), deriving it
    /// on a miss.
    #[inline]
    pub fn get(&mut self, id: &KeyId, time: u64) -> Result<&Aes128Enc, ProviderError> {
        let i = self.locate(&id.packed(), time)?;
        Ok(&self.ciphers[i])
    }

    /// Like [`KeyCache::get`], but returns a handle to the key instead of borrowing the cache:
    /// the handles of many keys can then be resolved together with [`KeyCache::key`].
    #[inline(always)]
    pub fn find(&mut self, id: &KeyId, time: u64) -> Result<KeyHandle, ProviderError> {
        self.find_packed(&id.packed(), time)
    }

    /// [`KeyCache::find`] for an id already in its integer form (the data plane's: it never
    /// builds a [`KeyId`] on the hit path).
    #[inline(always)]
    pub fn find_packed(&mut self, id: &PackedKeyId, time: u64) -> Result<KeyHandle, ProviderError> {
        let i = self.locate(id, time)?;
        Ok(KeyHandle {
            index: i as u32,
            generation: self.ways[i].generation,
        })
    }

    /// The key a handle from [`KeyCache::find`] names, or `None` if its slot has been refilled
    /// since (never another key).
    #[inline]
    pub fn key(&self, h: KeyHandle) -> Option<&Aes128Enc> {
        let i = h.index as usize;
        let w = self.ways.get(i)?;
        (w.generation == h.generation && h.generation != 0).then(|| &self.ciphers[i])
    }

    /// The index of the way holding the key for `id` at `time`, deriving it on a miss.
    #[inline(always)]
    fn locate(&mut self, id: &PackedKeyId, time: u64) -> Result<usize, ProviderError> {
        self.clock += 1;
        let set = (hash(id) as usize >> 1) & self.mask;
        let ways = &self.ways[WAYS * set..WAYS * set + WAYS];
        // A plain loop, not `Iterator::position`: that stayed a call, which read the caller's
        // freshly built `id` back through memory in pieces (store-forwarding stalls on every
        // lookup).
        let mut w = 0;
        while w < WAYS && !ways[w].holds(id, time) {
            w += 1;
        }
        if w == WAYS {
            self.stats.misses += 1;
            return self.insert(set, id, time);
        }
        let i = WAYS * set + w;
        self.stats.hits += 1;
        self.ways[i].stamp = self.clock;
        Ok(i)
    }

    /// Derives K(src -> dst:host) for `time` from the provider's level-1 key.
    fn derive(&self, id: &KeyId, time: u64) -> Result<(Epoch, Aes128Enc), ProviderError> {
        let (epoch, l1) = self.provider.level1(id.protocol, id.src, id.dst, time)?;
        let key =
            as_host(&l1.cipher(), &id.host).map_err(|e| ProviderError::Config(e.to_string()))?;
        Ok((epoch, key.cipher()))
    }

    /// Derives the key for `id` at `time` into a way of `set` and returns that way's index.
    #[cold]
    #[inline(never)]
    fn insert(&mut self, set: usize, id: &PackedKeyId, time: u64) -> Result<usize, ProviderError> {
        let (epoch, cipher) = self.derive(&id.key_id(), time)?;
        let ways = &self.ways[WAYS * set..WAYS * set + WAYS];
        // Prefer an empty way, then one holding the same id (an expired epoch), then the LRU
        // one.
        let way = ways
            .iter()
            .position(|w| w.generation == 0)
            .or_else(|| {
                ways.iter().position(|w| {
                    w.id == *id && !w.epoch().contains(time) && u64::from(w.end) <= time
                })
            })
            .unwrap_or_else(|| lru(ways, |_| true));
        Ok(self.store(WAYS * set + way, *id, epoch, cipher))
    }

    /// Puts a key into way `i`, counting the eviction if the way was taken; returns `i`.
    fn store(&mut self, i: usize, id: PackedKeyId, epoch: Epoch, cipher: Aes128Enc) -> usize {
        if self.ways[i].generation != 0 {
            self.stats.evictions += 1;
        }
        self.generations += 1;
        self.ways[i] = Way {
            id,
            begin: epoch.begin,
            end: epoch.end,
            generation: self.generations,
            stamp: self.clock,
        };
        self.ciphers[i] = cipher;
        i
    }

    /// For every cached key whose epoch ends within `window` seconds after `now` (the sum
    /// saturates: a huge `window` means every key whose epoch ends after `now`), derives the
    /// next epoch's key into the other way of its set. Returns how many keys were derived.
    pub fn prefetch_next_epoch(&mut self, now: u64, window: u64) -> usize {
        let until = now.saturating_add(window);
        let todo: Vec<(PackedKeyId, u64)> = self
            .ways
            .iter()
            .filter(|w| w.generation != 0 && u64::from(w.end) > now && u64::from(w.end) <= until)
            .map(|w| (w.id, u64::from(w.end)))
            .collect();
        let mut n = 0;
        for (id, next_time) in todo {
            let set = (hash(&id) as usize >> 1) & self.mask;
            let have = self.ways[WAYS * set..WAYS * set + WAYS]
                .iter()
                .any(|w| w.generation != 0 && w.id == id && w.epoch().contains(next_time));
            if !have && self.insert_beside(set, &id, next_time).is_ok() {
                n += 1;
            }
        }
        self.stats.prefetched += n as u64;
        n
    }

    fn insert_beside(
        &mut self,
        set: usize,
        id: &PackedKeyId,
        time: u64,
    ) -> Result<(), ProviderError> {
        let (epoch, cipher) = self.derive(&id.key_id(), time)?;
        let ways = &self.ways[WAYS * set..WAYS * set + WAYS];
        // An empty way, else the least recently used one that does not hold `id` (the current
        // epoch's key stays), else (every way holds `id`) the one with the oldest epoch.
        let way = ways
            .iter()
            .position(|w| w.generation == 0)
            .or_else(|| {
                ways.iter()
                    .any(|w| w.id != *id)
                    .then(|| lru(ways, |w| w.id != *id))
            })
            .unwrap_or_else(|| (0..WAYS).min_by_key(|&k| ways[k].begin).unwrap_or(0));
        self.store(WAYS * set + way, *id, epoch, cipher);
        Ok(())
    }
}

/// The least recently used of the `ways` that satisfy `eligible` (0 if none does).
fn lru(ways: &[Way], eligible: impl Fn(&Way) -> bool) -> usize {
    (0..ways.len())
        .filter(|&k| eligible(&ways[k]))
        .min_by_key(|&k| ways[k].stamp)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::LocalProvider;

    #[test]
    fn prefetch_with_a_huge_window_saturates() {
        let ia: IsdAsn = "1-ff00:0:110".parse().unwrap();
        let p = Arc::new(LocalProvider::new(ia, &[7u8; 16], 3600).unwrap());
        let mut c = KeyCache::new(p, 8);
        let id = KeyId {
            protocol: Protocol::IDINT,
            src: ia,
            dst: ia,
            host: HostAddr::V4(Ipv4Addr::new(1, 2, 3, 4)),
        };
        c.get(&id, 1_700_000_000).unwrap();
        assert_eq!(c.prefetch_next_epoch(1_700_000_000, u64::MAX), 1);
        assert_eq!(c.prefetch_next_epoch(u64::MAX, u64::MAX), 0);
        let next = Epoch::containing(1_700_000_000, 3600).unwrap().end;
        c.get(&id, u64::from(next)).unwrap();
        assert_eq!(c.stats().misses, 1);
    }
}
