//! Next-hop MAC addresses learned from ARP (IPv4) and NDP (IPv6), shared by all workers
//! without locks: fixed open-addressing tables whose slots are sequence-locked (a reader
//! retries or misses while a writer updates the slot; writers that collide skip, the next
//! ARP/NDP packet retries). [`NeighborTable`] keys on IPv4 addresses, [`Neighbor6Table`] on
//! IPv6 addresses; both share one implementation, specialised by key width.
//!
//! Entries age: each records when it was last learned (Unix seconds, from the caller). An entry
//! older than the table's refresh time is still used but reported stale, so the router asks
//! the neighbour again (a reply refreshes it); one older than the expiry time is gone (a next
//! hop that stopped answering is not used forever, and its slot can be taken by another).
//!
//! The slot of an address comes from a hash keyed with a per-table secret seed (drawn from the
//! standard library's randomly keyed hasher when the table is made): an outsider who may make
//! the router learn addresses of its choice cannot compute which ones share a victim's slots,
//! so it cannot fill them ahead of the victim.

use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// Linear probing distance.
const PROBE: usize = 4;

/// One slot; the key is `W` 64-bit words (all zero = empty).
#[derive(Debug)]
struct Slot<const W: usize> {
    /// Even: stable; odd: being written.
    seq: AtomicU32,
    /// The address, big-endian words.
    key: [AtomicU64; W],
    /// MAC in the low 48 bits.
    mac: AtomicU64,
    /// When the entry was last learned (Unix seconds).
    learned_s: AtomicU32,
}

impl<const W: usize> Default for Slot<W> {
    fn default() -> Self {
        Slot {
            seq: AtomicU32::new(0),
            key: std::array::from_fn(|_| AtomicU64::new(0)),
            mac: AtomicU64::new(0),
            learned_s: AtomicU32::new(0),
        }
    }
}

fn mac_to_u64(m: [u8; 6]) -> u64 {
    let mut b = [0u8; 8];
    b[2..].copy_from_slice(&m);
    u64::from_be_bytes(b)
}

fn u64_to_mac(v: u64) -> [u8; 6] {
    let b = v.to_be_bytes();
    let mut m = [0u8; 6];
    m.copy_from_slice(&b[2..]);
    m
}

/// A learned next-hop MAC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Learned {
    /// The MAC address.
    pub mac: [u8; 6],
    /// Older than the refresh time: still valid, but the neighbour should be asked again.
    pub stale: bool,
}

/// How entries age, in seconds since they were last learned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Aging {
    /// From this age on an entry is stale (used, and re-resolved).
    pub refresh_s: u32,
    /// From this age on an entry is gone.
    pub expire_s: u32,
}

impl Default for Aging {
    /// Refresh after a minute, expire after five (a neighbour that answers keeps its entry
    /// fresh; one that stopped answering is dropped four minutes after the first re-ask).
    fn default() -> Self {
        Aging {
            refresh_s: 60,
            expire_s: 300,
        }
    }
}

/// A secret hash seed: two 64-bit keys.
pub type Seed = [u64; 2];

/// A fresh secret seed, from the standard library's randomly keyed hasher (keys from the OS
/// once per process, then varied per hasher).
pub fn random_seed() -> Seed {
    use std::hash::{BuildHasher, Hasher};
    let mut seed = [0u64; 2];
    for (i, s) in seed.iter_mut().enumerate() {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_usize(i);
        *s = h.finish();
    }
    seed
}

/// Multiplier of the seeded mix (an odd constant with well-spread bits).
const MIX_MUL: u64 = 0x9e37_79b9_7f4a_7c15;

/// Keyed 64x64 -> 128-bit multiply, folded: every bit of `x` and of the key reaches every
/// output bit.
#[inline(always)]
fn folded_mul(x: u64, key: u64) -> u64 {
    let p = u128::from(x ^ key) * u128::from(MIX_MUL ^ key.rotate_left(17) | 1);
    (p as u64) ^ ((p >> 64) as u64)
}

/// The sequence-locked table behind both public tables.
#[derive(Debug)]
struct Table<const W: usize> {
    slots: Box<[Slot<W>]>,
    mask: usize,
    aging: Aging,
    /// The secret hash seed.
    seed: Seed,
}

impl<const W: usize> Table<W> {
    fn new(capacity: usize, aging: Aging, seed: Seed) -> Self {
        let n = capacity.max(16).next_power_of_two();
        Table {
            slots: (0..n).map(|_| Slot::default()).collect(),
            mask: n - 1,
            aging,
            seed,
        }
    }

    /// Whether slot contents learned at `learned_s` have expired at `now_s`.
    #[inline]
    fn expired(&self, learned_s: u32, now_s: u32) -> bool {
        now_s.saturating_sub(learned_s) >= self.aging.expire_s
    }

    /// The home slot of `key` (before masking), keyed with the table's seed.
    #[inline]
    fn hash(&self, key: &[u64; W]) -> usize {
        let x = key
            .iter()
            .fold(self.seed[0], |h, k| folded_mul(h ^ k, self.seed[1]));
        folded_mul(x, self.seed[0]) as usize
    }

    #[inline]
    fn key_is(s: &Slot<W>, key: &[u64; W]) -> bool {
        s.key
            .iter()
            .zip(key)
            .all(|(a, k)| a.load(Ordering::Acquire) == *k)
    }

    #[inline]
    fn key_is_empty(s: &Slot<W>) -> bool {
        s.key.iter().all(|a| a.load(Ordering::Acquire) == 0)
    }

    #[inline(always)]
    fn lookup(&self, key: [u64; W], now_s: u32) -> Option<Learned> {
        if key.iter().all(|k| *k == 0) {
            return None;
        }
        let h = self.hash(&key);
        for i in 0..PROBE {
            let s = &self.slots[(h + i) & self.mask];
            let seq = s.seq.load(Ordering::Acquire);
            if seq & 1 == 1 {
                continue;
            }
            let hit = Self::key_is(s, &key);
            let empty = !hit && Self::key_is_empty(s);
            let m = s.mac.load(Ordering::Acquire);
            let learned_s = s.learned_s.load(Ordering::Acquire);
            if s.seq.load(Ordering::Acquire) != seq {
                continue;
            }
            if hit {
                if self.expired(learned_s, now_s) {
                    return None;
                }
                return Some(Learned {
                    mac: u64_to_mac(m),
                    stale: now_s.saturating_sub(learned_s) >= self.aging.refresh_s,
                });
            }
            if empty {
                return None;
            }
        }
        None
    }

    fn learn(&self, key: [u64; W], mac: [u8; 6], now_s: u32) -> bool {
        if key.iter().all(|k| *k == 0) {
            return false;
        }
        let h = self.hash(&key);
        let reusable = |s: &Slot<W>| {
            Self::key_is_empty(s) || self.expired(s.learned_s.load(Ordering::Acquire), now_s)
        };
        // The address's own slot if it has one, else the first free or expired one.
        let mine = (0..PROBE).find(|&i| Self::key_is(&self.slots[(h + i) & self.mask], &key));
        for i in mine.map_or(0..PROBE, |i| i..i + 1) {
            let s = &self.slots[(h + i) & self.mask];
            if !Self::key_is(s, &key) && !reusable(s) {
                continue;
            }
            let seq = s.seq.load(Ordering::Acquire);
            if seq & 1 == 1
                || s.seq
                    .compare_exchange(seq, seq + 1, Ordering::AcqRel, Ordering::Acquire)
                    .is_err()
            {
                return false;
            }
            // We own the slot; it may have been taken by another address meanwhile.
            let ok = Self::key_is(s, &key) || reusable(s);
            if ok {
                s.mac.store(mac_to_u64(mac), Ordering::Release);
                s.learned_s.store(now_s, Ordering::Release);
                for (a, k) in s.key.iter().zip(key) {
                    a.store(k, Ordering::Release);
                }
            }
            s.seq.store(seq + 2, Ordering::Release);
            if ok {
                return true;
            }
        }
        false
    }
}

/// Learned IPv4 -> MAC entries (from ARP).
#[derive(Debug)]
pub struct NeighborTable(Table<1>);

impl NeighborTable {
    /// A table of `capacity` slots (rounded up to a power of two, at least 16), its hash keyed
    /// with a fresh random seed.
    pub fn new(capacity: usize, aging: Aging) -> Self {
        Self::with_seed(capacity, aging, random_seed())
    }

    /// A table as [`Self::new`] with the hash seed `seed` (tests; a router uses `new`).
    pub fn with_seed(capacity: usize, aging: Aging, seed: Seed) -> Self {
        NeighborTable(Table::new(capacity, aging, seed))
    }

    /// The MAC learned for `ip`, unless it expired by `now_s` (Unix seconds).
    #[inline]
    pub fn lookup(&self, ip: Ipv4Addr, now_s: u32) -> Option<Learned> {
        self.0.lookup([u64::from(u32::from(ip))], now_s)
    }

    /// Records `ip` -> `mac` learned at `now_s`; `false` if the slots for `ip` are full (with
    /// live entries) or busy.
    pub fn learn(&self, ip: Ipv4Addr, mac: [u8; 6], now_s: u32) -> bool {
        self.0.learn([u64::from(u32::from(ip))], mac, now_s)
    }
}

/// Learned IPv6 -> MAC entries (from NDP).
#[derive(Debug)]
pub struct Neighbor6Table(Table<2>);

#[inline]
fn words6(ip: Ipv6Addr) -> [u64; 2] {
    let v = u128::from(ip);
    [(v >> 64) as u64, v as u64]
}

impl Neighbor6Table {
    /// A table of `capacity` slots (rounded up to a power of two, at least 16), its hash keyed
    /// with a fresh random seed.
    pub fn new(capacity: usize, aging: Aging) -> Self {
        Self::with_seed(capacity, aging, random_seed())
    }

    /// A table as [`Self::new`] with the hash seed `seed` (tests; a router uses `new`).
    pub fn with_seed(capacity: usize, aging: Aging, seed: Seed) -> Self {
        Neighbor6Table(Table::new(capacity, aging, seed))
    }

    /// The MAC learned for `ip`, unless it expired by `now_s` (Unix seconds).
    #[inline]
    pub fn lookup(&self, ip: Ipv6Addr, now_s: u32) -> Option<Learned> {
        self.0.lookup(words6(ip), now_s)
    }

    /// Records `ip` -> `mac` learned at `now_s`; `false` if the slots for `ip` are full (with
    /// live entries) or busy (or `ip` is `::`).
    pub fn learn(&self, ip: Ipv6Addr, mac: [u8; 6], now_s: u32) -> bool {
        self.0.learn(words6(ip), mac, now_s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// A time for tests that do not age entries.
    const T: u32 = 1_000;

    #[test]
    fn learn_lookup_update() {
        let t = NeighborTable::new(16, Aging::default());
        let a = Ipv4Addr::new(10, 0, 0, 1);
        assert_eq!(t.lookup(a, T).map(|l| l.mac), None);
        assert!(t.learn(a, [2, 0, 0, 0, 0, 1], T));
        assert_eq!(t.lookup(a, T).map(|l| l.mac), Some([2, 0, 0, 0, 0, 1]));
        assert!(t.learn(a, [2, 0, 0, 0, 0, 2], T), "update in place");
        assert_eq!(t.lookup(a, T).map(|l| l.mac), Some([2, 0, 0, 0, 0, 2]));
        assert!(!t.learn(Ipv4Addr::UNSPECIFIED, [1; 6], T));
        // Fill: at most PROBE entries per home slot, nothing panics, lookups stay right.
        let mut learned = Vec::new();
        for i in 0..200u32 {
            let ip = Ipv4Addr::from(0x0a01_0000 + i);
            if t.learn(ip, [(i % 251) as u8; 6], T) {
                learned.push((ip, (i % 251) as u8));
            }
        }
        assert!(learned.len() >= 8);
        for (ip, b) in learned {
            assert_eq!(t.lookup(ip, T).map(|l| l.mac), Some([b; 6]));
        }
    }

    #[test]
    fn entries_go_stale_then_expire_and_free_their_slot() {
        let aging = Aging {
            refresh_s: 60,
            expire_s: 300,
        };
        let t = NeighborTable::new(16, aging);
        let a = Ipv4Addr::new(10, 0, 0, 1);
        let m = [2, 0, 0, 0, 0, 1];
        assert!(t.learn(a, m, T));
        let fresh = Some(Learned {
            mac: m,
            stale: false,
        });
        let stale = Some(Learned {
            mac: m,
            stale: true,
        });
        assert_eq!(t.lookup(a, T), fresh);
        assert_eq!(t.lookup(a, T + 59), fresh);
        assert_eq!(t.lookup(a, T + 60), stale);
        assert_eq!(t.lookup(a, T + 299), stale);
        assert_eq!(t.lookup(a, T + 300), None);
        // A clock that went backwards does not age an entry.
        assert_eq!(t.lookup(a, T - 5), fresh);
        // Learning again (a reply to the router's re-ask) makes it fresh.
        assert!(t.learn(a, m, T + 120));
        assert_eq!(t.lookup(a, T + 150), fresh);
        // Expired entries give their slots to new addresses: a table filled at time T
        // learns as many other addresses once all of them expired.
        let v6 = Neighbor6Table::new(16, aging);
        let ip = |i: u128| Ipv6Addr::from((0xfd00u128 << 112) + i + 1);
        let first = (0..64).filter(|&i| v6.learn(ip(i), [1; 6], T)).count();
        assert!(first >= 8);
        assert!(
            !(64..512).all(|i| v6.learn(ip(i), [2; 6], T + 10)),
            "full while live"
        );
        let later = (1000..1064)
            .filter(|&i| v6.learn(ip(i), [3; 6], T + 400))
            .count();
        assert!(later >= first, "{later} < {first}");
        assert_eq!(v6.lookup(ip(0), T + 400), None);
    }

    #[test]
    fn concurrent_writers_and_readers_never_see_torn_entries() {
        let t = Arc::new(NeighborTable::new(64, Aging::default()));
        let ips: Vec<Ipv4Addr> = (1..=8u32)
            .map(|i| Ipv4Addr::from(0x0a00_0000 + i))
            .collect();
        // Each IP's MAC always ends with the IP's last byte: a torn read would break that.
        let writers: Vec<_> = (0..2)
            .map(|w| {
                let (t, ips) = (t.clone(), ips.clone());
                std::thread::spawn(move || {
                    for round in 0..20_000u32 {
                        let ip = ips[(round as usize + w) % ips.len()];
                        let last = ip.octets()[3];
                        t.learn(
                            ip,
                            [w as u8, (round >> 8) as u8, round as u8, 0, 0, last],
                            T,
                        );
                    }
                })
            })
            .collect();
        for _ in 0..50_000 {
            for ip in &ips {
                if let Some(m) = t.lookup(*ip, T).map(|l| l.mac) {
                    assert_eq!(m[5], ip.octets()[3]);
                }
            }
        }
        for w in writers {
            w.join().unwrap();
        }
    }

    /// The slot the unseeded multiplicative hash gave an IPv4 address in a table of
    /// `slots` slots: what an outsider can compute without the table's seed.
    fn unseeded_home(ip: Ipv4Addr, slots: usize) -> usize {
        ((u32::from(ip).wrapping_mul(0x9e37_79b1) >> 8) as usize) & (slots - 1)
    }

    #[test]
    fn an_outsider_cannot_fill_a_victims_slots() {
        const SLOTS: usize = 4096;
        let victim = Ipv4Addr::new(10, 0, 0, 2);
        let home = unseeded_home(victim, SLOTS);
        // Addresses of the victim's subnet whose unseeded home is the victim's slot or one
        // of the next few: learning them first would leave the victim no slot.
        let attack: Vec<Ipv4Addr> = (0..1u32 << 16)
            .map(|i| Ipv4Addr::from(0x0a00_0000 + i))
            .filter(|&ip| {
                ip != victim && (unseeded_home(ip, SLOTS).wrapping_sub(home) & (SLOTS - 1)) < PROBE
            })
            .take(32)
            .collect();
        assert_eq!(attack.len(), 32);
        for _ in 0..8 {
            let t = NeighborTable::new(SLOTS, Aging::default());
            for ip in &attack {
                t.learn(*ip, [9; 6], T);
            }
            assert!(t.learn(victim, [1; 6], T), "the victim's slots were filled");
            assert_eq!(t.lookup(victim, T).map(|l| l.mac), Some([1; 6]));
        }
    }

    #[test]
    fn ipv6_learn_lookup_update() {
        let t = Neighbor6Table::new(16, Aging::default());
        let a: Ipv6Addr = "fd00:3::3".parse().unwrap();
        let b: Ipv6Addr = "fd00:4::3".parse().unwrap();
        assert_eq!(t.lookup(a, T).map(|l| l.mac), None);
        assert!(t.learn(a, [2, 0, 0, 0, 0, 1], T));
        assert_eq!(t.lookup(a, T).map(|l| l.mac), Some([2, 0, 0, 0, 0, 1]));
        assert_eq!(
            t.lookup(b, T).map(|l| l.mac),
            None,
            "same low 64 bits, other prefix"
        );
        assert!(t.learn(a, [2, 0, 0, 0, 0, 2], T), "update in place");
        assert_eq!(t.lookup(a, T).map(|l| l.mac), Some([2, 0, 0, 0, 0, 2]));
        assert!(!t.learn(Ipv6Addr::UNSPECIFIED, [1; 6], T));
        assert_eq!(t.lookup(Ipv6Addr::UNSPECIFIED, T).map(|l| l.mac), None);
        let mut learned = Vec::new();
        for i in 0..200u128 {
            let ip = Ipv6Addr::from((0xfd00u128 << 112) + (i << 70) + i + 1);
            if t.learn(ip, [(i % 251) as u8; 6], T) {
                learned.push((ip, (i % 251) as u8));
            }
        }
        assert!(learned.len() >= 8);
        for (ip, b) in learned {
            assert_eq!(t.lookup(ip, T).map(|l| l.mac), Some([b; 6]));
        }
    }

    #[test]
    fn ipv6_concurrent_writers_and_readers_never_see_torn_entries() {
        let t = Arc::new(Neighbor6Table::new(64, Aging::default()));
        // Addresses differing in both halves: a torn key or MAC would break the MAC's tag.
        let ips: Vec<Ipv6Addr> = (1..=8u128)
            .map(|i| Ipv6Addr::from((0xfd00u128 << 112) | (i << 64) | i))
            .collect();
        let writers: Vec<_> = (0..2)
            .map(|w| {
                let (t, ips) = (t.clone(), ips.clone());
                std::thread::spawn(move || {
                    for round in 0..20_000u32 {
                        let ip = ips[(round as usize + w) % ips.len()];
                        let last = ip.octets()[15];
                        t.learn(
                            ip,
                            [w as u8, (round >> 8) as u8, round as u8, 0, last, last],
                            T,
                        );
                    }
                })
            })
            .collect();
        for _ in 0..50_000 {
            for ip in &ips {
                if let Some(m) = t.lookup(*ip, T).map(|l| l.mac) {
                    assert_eq!((m[4], m[5]), (ip.octets()[15], ip.octets()[15]));
                }
            }
        }
        for w in writers {
            w.join().unwrap();
        }
    }
}
