//! The I/O-level counters of one worker: what happens to frames around scion-dp (received,
//! classified, answered, routed, sent). Plain data, counted on the packet path without atomics
//! and published by the I/O shell.

/// I/O-level counters of one worker (what happens around scion-dp).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct IoCounters {
    /// Frames received.
    pub rx_frames: u64,
    /// Bytes received (frames).
    pub rx_bytes: u64,
    /// Frames handed to the driver for sending.
    pub tx_frames: u64,
    /// Frames dropped because a tx queue was full.
    pub tx_full: u64,
    /// Frames that are not IPv4/IPv6 UDP (ARP, NDP, other protocols) or have broken IP/UDP
    /// headers; ARP requests and NDP solicitations answered count as replies instead.
    pub not_scion: u64,
    /// UDP frames to an address/port that is none of this router's underlay addresses.
    pub not_for_us: u64,
    /// Chained (multi-segment) mbufs, not handled.
    pub chained: u64,
    /// Packets whose next hop has no known MAC address.
    pub no_next_hop_mac: u64,
    /// Packets for which no egress port or header room was found.
    pub unroutable: u64,
    /// ARP requests for the router's addresses answered.
    pub arp_replies: u64,
    /// ARP requests sent for next hops without a MAC.
    pub arp_requests: u64,
    /// Neighbour MACs learned (or refreshed) from ARP packets addressed to the router.
    pub arp_learned: u64,
    /// Neighbor Solicitations for the router's IPv6 addresses answered.
    pub ndp_replies: u64,
    /// Neighbor Solicitations sent for IPv6 next hops without a MAC.
    pub ndp_requests: u64,
    /// Neighbour MACs learned (or refreshed) from NDP messages addressed to the router.
    pub ndp_learned: u64,
    /// Frames on a VLAN port that were untagged or tagged with another VLAN.
    pub wrong_vlan: u64,
    /// Infrastructure-mode probes this router originated and processed.
    pub probes_sent: u64,
    /// Probes that could not be built or had no mbuf.
    pub probe_errors: u64,
    /// BFD packets dropped between the workers and the control side (ring full, no room).
    pub bfd_dropped: u64,
    /// SCMP error replies scion-dp built but the worker's rate limit dropped
    /// (`[dataplane] scmp_rate` / `scmp_burst`).
    pub scmp_rate_limited: u64,
}

/// Number of [`IoCounters`] fields (the length of [`IoCounters::to_array`]).
pub const IO_FIELDS: usize = 20;

impl IoCounters {
    /// The counters in field order.
    #[inline]
    pub fn to_array(self) -> [u64; IO_FIELDS] {
        [
            self.rx_frames,
            self.rx_bytes,
            self.tx_frames,
            self.tx_full,
            self.not_scion,
            self.not_for_us,
            self.chained,
            self.no_next_hop_mac,
            self.unroutable,
            self.arp_replies,
            self.arp_requests,
            self.arp_learned,
            self.ndp_replies,
            self.ndp_requests,
            self.ndp_learned,
            self.wrong_vlan,
            self.probes_sent,
            self.probe_errors,
            self.bfd_dropped,
            self.scmp_rate_limited,
        ]
    }

    /// The counters from [`IoCounters::to_array`]'s order.
    #[inline]
    pub fn from_array(a: [u64; IO_FIELDS]) -> Self {
        IoCounters {
            rx_frames: a[0],
            rx_bytes: a[1],
            tx_frames: a[2],
            tx_full: a[3],
            not_scion: a[4],
            not_for_us: a[5],
            chained: a[6],
            no_next_hop_mac: a[7],
            unroutable: a[8],
            arp_replies: a[9],
            arp_requests: a[10],
            arp_learned: a[11],
            ndp_replies: a[12],
            ndp_requests: a[13],
            ndp_learned: a[14],
            wrong_vlan: a[15],
            probes_sent: a[16],
            probe_errors: a[17],
            bfd_dropped: a[18],
            scmp_rate_limited: a[19],
        }
    }

    /// `(name, value)` pairs.
    pub fn named(&self) -> [(&'static str, u64); IO_FIELDS] {
        let a = self.to_array();
        [
            ("rx_frames", a[0]),
            ("rx_bytes", a[1]),
            ("tx_frames", a[2]),
            ("tx_full", a[3]),
            ("not_scion", a[4]),
            ("not_for_us", a[5]),
            ("chained", a[6]),
            ("no_next_hop_mac", a[7]),
            ("unroutable", a[8]),
            ("arp_replies", a[9]),
            ("arp_requests", a[10]),
            ("arp_learned", a[11]),
            ("ndp_replies", a[12]),
            ("ndp_requests", a[13]),
            ("ndp_learned", a[14]),
            ("wrong_vlan", a[15]),
            ("probes_sent", a[16]),
            ("probe_errors", a[17]),
            ("bfd_dropped", a[18]),
            ("scmp_rate_limited", a[19]),
        ]
    }

    /// Adds another worker's counters.
    pub fn merge(&mut self, o: &IoCounters) {
        let mut a = self.to_array();
        for (x, y) in a.iter_mut().zip(o.to_array()) {
            *x += y;
        }
        *self = Self::from_array(a);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn array_order_round_trips_and_merge_adds_every_field() {
        let a = IoCounters::from_array(core::array::from_fn(|i| i as u64 + 1));
        assert_eq!(a.to_array(), core::array::from_fn(|i| i as u64 + 1));
        assert_eq!(a.named()[15], ("wrong_vlan", 16));
        let mut b = a;
        b.merge(&a);
        assert_eq!(b.to_array(), core::array::from_fn(|i| 2 * (i as u64 + 1)));
    }
}
