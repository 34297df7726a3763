//! IPv4 next-hop MAC addresses learned from ARP, shared by all workers without locks: a fixed
//! open-addressing table whose slots are sequence-locked (a reader retries or misses while a
//! writer updates the slot; writers that collide skip, the next ARP packet retries).

use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// Linear probing distance.
const PROBE: usize = 4;

#[derive(Debug, Default)]
struct Slot {
    /// Even: stable; odd: being written.
    seq: AtomicU32,
    /// IPv4 address (0 = empty).
    ip: AtomicU32,
    /// MAC in the low 48 bits.
    mac: AtomicU64,
}

/// Learned IPv4 -> MAC entries.
#[derive(Debug)]
pub struct NeighborTable {
    slots: Box<[Slot]>,
    mask: usize,
}

#[inline]
fn hash(ip: u32) -> usize {
    (ip.wrapping_mul(0x9e37_79b1) >> 8) as usize
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

impl NeighborTable {
    /// A table of `capacity` slots (rounded up to a power of two, at least 16).
    pub fn new(capacity: usize) -> Self {
        let n = capacity.max(16).next_power_of_two();
        NeighborTable {
            slots: (0..n).map(|_| Slot::default()).collect(),
            mask: n - 1,
        }
    }

    /// The MAC learned for `ip`.
    #[inline]
    pub fn lookup(&self, ip: Ipv4Addr) -> Option<[u8; 6]> {
        let key = u32::from(ip);
        if key == 0 {
            return None;
        }
        let h = hash(key);
        for i in 0..PROBE {
            let s = &self.slots[(h + i) & self.mask];
            let seq = s.seq.load(Ordering::Acquire);
            if seq & 1 == 1 {
                continue;
            }
            let k = s.ip.load(Ordering::Acquire);
            let m = s.mac.load(Ordering::Acquire);
            if s.seq.load(Ordering::Acquire) != seq {
                continue;
            }
            if k == key {
                return Some(u64_to_mac(m));
            }
            if k == 0 {
                return None;
            }
        }
        None
    }

    /// Records `ip` -> `mac`; `false` if the slots for `ip` are full or busy.
    pub fn learn(&self, ip: Ipv4Addr, mac: [u8; 6]) -> bool {
        let key = u32::from(ip);
        if key == 0 {
            return false;
        }
        let h = hash(key);
        for i in 0..PROBE {
            let s = &self.slots[(h + i) & self.mask];
            let k = s.ip.load(Ordering::Acquire);
            if k != key && k != 0 {
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
            // We own the slot; it may have been taken by another IP meanwhile.
            let k = s.ip.load(Ordering::Acquire);
            let ok = k == key || k == 0;
            if ok {
                s.mac.store(mac_to_u64(mac), Ordering::Release);
                s.ip.store(key, Ordering::Release);
            }
            s.seq.store(seq + 2, Ordering::Release);
            if ok {
                return true;
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn learn_lookup_update() {
        let t = NeighborTable::new(16);
        let a = Ipv4Addr::new(10, 0, 0, 1);
        assert_eq!(t.lookup(a), None);
        assert!(t.learn(a, [2, 0, 0, 0, 0, 1]));
        assert_eq!(t.lookup(a), Some([2, 0, 0, 0, 0, 1]));
        assert!(t.learn(a, [2, 0, 0, 0, 0, 2]), "update in place");
        assert_eq!(t.lookup(a), Some([2, 0, 0, 0, 0, 2]));
        assert!(!t.learn(Ipv4Addr::UNSPECIFIED, [1; 6]));
        // Fill: at most PROBE entries per home slot, nothing panics, lookups stay right.
        let mut learned = Vec::new();
        for i in 0..200u32 {
            let ip = Ipv4Addr::from(0x0a01_0000 + i);
            if t.learn(ip, [(i % 251) as u8; 6]) {
                learned.push((ip, (i % 251) as u8));
            }
        }
        assert!(learned.len() >= 8);
        for (ip, b) in learned {
            assert_eq!(t.lookup(ip), Some([b; 6]));
        }
    }

    #[test]
    fn concurrent_writers_and_readers_never_see_torn_entries() {
        let t = Arc::new(NeighborTable::new(64));
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
                        t.learn(ip, [w as u8, (round >> 8) as u8, round as u8, 0, 0, last]);
                    }
                })
            })
            .collect();
        for _ in 0..50_000 {
            for ip in &ips {
                if let Some(m) = t.lookup(*ip) {
                    assert_eq!(m[5], ip.octets()[3]);
                }
            }
        }
        for w in writers {
            w.join().unwrap();
        }
    }
}
