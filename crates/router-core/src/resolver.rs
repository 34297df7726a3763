//! Asking next hops for their MAC: ARP requests (IPv4) and neighbour solicitations (IPv6) for
//! next hops without a MAC (the packet that needed it is dropped; later ones find the learned
//! MAC) or with a stale one, at most one per address every [`ASK_INTERVAL_MS`] per worker.
//! The rate limit and the request frames are here; the I/O shell allocates and sends them.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::counters::IoCounters;
use crate::{ndp, underlay};

/// Shortest time between two requests for the same address from one worker (ms).
pub const ASK_INTERVAL_MS: u64 = 100;
/// Milliseconds per second (for converting TSC rates).
const MS_PER_S: u64 = 1_000;
/// Bits of the address hash that pick a slot.
const SLOT_BITS: u32 = 6;
/// Addresses remembered (by hash; a colliding address takes the slot over).
pub const SLOTS: usize = 1 << SLOT_BITS;
/// Fibonacci hashing multiplier (2^64 / golden ratio).
const HASH_MUL: u64 = 0x9e37_79b9_7f4a_7c15;

/// The per-worker rate limit of requests: when each address was last asked for (TSC ticks).
#[derive(Debug, Clone)]
pub struct Resolver {
    /// TSC ticks between two requests for the same address.
    interval: u64,
    /// (address as IPv6, IPv4 mapped; TSC of the last request), by address hash.
    asked: [(u128, u64); SLOTS],
}

/// A request found due by [`Resolver::due`], to be recorded by [`Resolver::asked`] once sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Due {
    slot: usize,
    key: u128,
}

impl Resolver {
    /// A rate limit for a TSC running at `tsc_hz`.
    pub fn new(tsc_hz: u64) -> Self {
        Resolver {
            interval: tsc_hz / (MS_PER_S / ASK_INTERVAL_MS),
            asked: [(0, 0); SLOTS],
        }
    }

    /// Whether asking for `target` at `now` (TSC) is due: not asked for within the interval.
    #[inline]
    pub fn due(&self, target: IpAddr, now: u64) -> Option<Due> {
        let key = match target {
            IpAddr::V4(v4) => u128::from(v4.to_ipv6_mapped()),
            IpAddr::V6(v6) => u128::from(v6),
        };
        let h = ((key >> 64) as u64 ^ key as u64).wrapping_mul(HASH_MUL);
        let slot = (h >> (u64::BITS - SLOT_BITS)) as usize;
        let (k, at) = self.asked[slot];
        (k != key || now.wrapping_sub(at) >= self.interval).then_some(Due { slot, key })
    }

    /// Records that the request found `due` was sent at `now` (TSC).
    #[inline]
    pub fn asked(&mut self, due: Due, now: u64) {
        self.asked[due.slot] = (due.key, now);
    }
}

/// A request for a next hop's MAC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Solicitation {
    /// An ARP request.
    Arp {
        /// The router's address.
        me: Ipv4Addr,
        /// The address asked for.
        target: Ipv4Addr,
    },
    /// An NDP neighbour solicitation.
    Ndp {
        /// The router's address.
        me: Ipv6Addr,
        /// The address asked for.
        target: Ipv6Addr,
    },
}

impl Solicitation {
    /// The request from `me` for `target`; `None` across address families.
    pub fn new(me: IpAddr, target: IpAddr) -> Option<Self> {
        match (me, target) {
            (IpAddr::V4(me), IpAddr::V4(target)) => Some(Solicitation::Arp { me, target }),
            (IpAddr::V6(me), IpAddr::V6(target)) => Some(Solicitation::Ndp { me, target }),
            _ => None,
        }
    }

    /// Length of the request frame.
    pub fn frame_len(&self) -> usize {
        match self {
            Solicitation::Arp { .. } => underlay::ARP_FRAME_LEN,
            Solicitation::Ndp { .. } => ndp::NS_FRAME_LEN,
        }
    }

    /// Writes the request from the port MAC `mac` into `frame[..frame_len()]`.
    pub fn write(&self, frame: &mut [u8], mac: [u8; 6]) -> bool {
        match *self {
            Solicitation::Arp { me, target } => underlay::write_arp_request(frame, mac, me, target),
            Solicitation::Ndp { me, target } => ndp::write_solicitation(frame, mac, me, target),
        }
    }

    /// Counts the request as sent.
    pub fn count(&self, io: &mut IoCounters) {
        match self {
            Solicitation::Arp { .. } => io.arp_requests += 1,
            Solicitation::Ndp { .. } => io.ndp_requests += 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A TSC of 1 GHz: one tick per ns.
    const HZ: u64 = 1_000_000_000;
    const INTERVAL: u64 = HZ / 1_000 * ASK_INTERVAL_MS;

    #[test]
    fn one_request_per_address_and_interval() {
        let mut r = Resolver::new(HZ);
        let a: IpAddr = "10.0.0.2".parse().unwrap();
        let b: IpAddr = "fd00::2".parse().unwrap();
        let t0 = 5 * HZ;
        let d = r.due(a, t0).expect("never asked");
        // Not recorded (say, the frame could not be sent): still due.
        assert_eq!(r.due(a, t0 + 1), Some(d));
        r.asked(d, t0);
        assert_eq!(r.due(a, t0 + 1), None);
        assert_eq!(r.due(a, t0 + INTERVAL - 1), None);
        assert!(r.due(a, t0 + INTERVAL).is_some());
        // Another address is independent.
        let db = r.due(b, t0 + 1).expect("other address");
        r.asked(db, t0 + 1);
        assert_eq!(r.due(b, t0 + 2), None);
        // The TSC wrapping around does not block requests.
        let mut r = Resolver::new(HZ);
        let d = r.due(a, u64::MAX - 10).unwrap();
        r.asked(d, u64::MAX - 10);
        assert_eq!(r.due(a, 5), None);
        assert!(r.due(a, INTERVAL).is_some());
    }

    #[test]
    fn many_addresses_each_get_asked_for() {
        let mut r = Resolver::new(HZ);
        let mut due = 0;
        for i in 0..(4 * SLOTS as u32) {
            let ip = IpAddr::V4(Ipv4Addr::from(0x0a00_0000 + i));
            if let Some(d) = r.due(ip, 1) {
                r.asked(d, 1);
                due += 1;
            }
        }
        // A slot taken over by another address never blocks a new one.
        assert_eq!(due, 4 * SLOTS);
    }

    #[test]
    fn requests_are_of_the_next_hops_family() {
        let (v4, v6): (IpAddr, IpAddr) = ("10.0.0.1".parse().unwrap(), "fd00::1".parse().unwrap());
        assert_eq!(Solicitation::new(v4, v6), None);
        assert_eq!(Solicitation::new(v6, v4), None);
        let mut io = IoCounters::default();
        let arp = Solicitation::new(v4, "10.0.0.2".parse().unwrap()).unwrap();
        let mut f = vec![0u8; arp.frame_len()];
        assert!(arp.write(&mut f, [2, 0, 0, 0, 0, 1]));
        assert_eq!(
            underlay::arp_sender(&f),
            Some((
                Ipv4Addr::new(10, 0, 0, 1),
                [2, 0, 0, 0, 0, 1],
                Ipv4Addr::new(10, 0, 0, 2)
            ))
        );
        arp.count(&mut io);
        let ns = Solicitation::new(v6, "fd00::2".parse().unwrap()).unwrap();
        let mut f = vec![0u8; ns.frame_len()];
        assert!(ns.write(&mut f, [2, 0, 0, 0, 0, 1]));
        let m = ndp::parse(&f).unwrap();
        assert_eq!(
            (m.kind, m.target),
            (ndp::Kind::Solicitation, "fd00::2".parse().unwrap())
        );
        ns.count(&mut io);
        assert_eq!((io.arp_requests, io.ndp_requests), (1, 1));
        assert!(!arp.write(&mut [0u8; 10], [0; 6]));
    }
}
