//! The forwarding tables every worker routes by: the ports (MACs, VLANs, underlay addresses),
//! the egress of every SCION interface, sibling routers and next-hop MACs (static, and learned
//! from ARP and NDP). Built once at start-up; afterwards only the learned neighbours change
//! (lock-free, see [`crate::neighbor`]).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use scion_dp::Ingress;

use crate::neighbor::{Learned, Neighbor6Table, NeighborTable};
use crate::underlay;

/// Where a SCION interface of this router leaves.
#[derive(Debug, Clone, Copy)]
pub struct IfEgress {
    /// Index of the port in [`Tables::ports`].
    pub port: usize,
    /// Local underlay address.
    pub local: SocketAddr,
    /// Neighbour's underlay address.
    pub remote: SocketAddr,
    /// Neighbour's MAC, if known.
    pub mac: Option<[u8; 6]>,
    /// The link's headers, built once, for an IPv4 link.
    pub v4: Option<underlay::V4Header>,
}

impl IfEgress {
    /// The egress of a link from `local` to `remote` leaving by port `port` (MAC `port_mac`).
    pub fn new(
        port: usize,
        port_mac: [u8; 6],
        local: SocketAddr,
        remote: SocketAddr,
        mac: Option<[u8; 6]>,
    ) -> Self {
        let v4 = match (local, remote) {
            (SocketAddr::V4(l), SocketAddr::V4(r)) => Some(underlay::V4Header::new(port_mac, l, r)),
            _ => None,
        };
        IfEgress {
            port,
            local,
            remote,
            mac,
            v4,
        }
    }
}

/// The forwarding tables, shared by all workers (read-only except the learned neighbours).
#[derive(Debug)]
pub struct Tables {
    /// Port MAC addresses, by port index.
    pub ports: Vec<[u8; 6]>,
    /// DPDK port id of each port index.
    pub port_ids: Vec<u16>,
    /// Underlay address -> ingress, per port index: `(local addr, ingress)`.
    pub ingress: Vec<Vec<(SocketAddr, Ingress)>>,
    /// Egress by interface id (index = ifid).
    pub egress: Vec<Option<IfEgress>>,
    /// Index of the internal port.
    pub internal_port: usize,
    /// This router's internal address.
    pub internal_addr: SocketAddr,
    /// Static next-hop MACs.
    pub neighbors: Vec<(IpAddr, [u8; 6])>,
    /// IPv4 next-hop MACs learned from ARP.
    pub learned: NeighborTable,
    /// IPv6 next-hop MACs learned from NDP.
    pub learned6: Neighbor6Table,
    /// Default next-hop MAC per port index.
    pub default_macs: Vec<Option<[u8; 6]>>,
    /// 802.1Q VLAN ID per port index (frames on the wire tagged, inside the router not).
    pub vlans: Vec<Option<u16>>,
    /// Sibling routers: (internal address, one interface it owns, which names its link).
    /// Packets from them on the internal port arrive as [`Ingress::Sibling`].
    pub siblings: Vec<(SocketAddr, u16)>,
}

/// What a worker needs of one port for every frame of a burst from it, looked up once per
/// burst (see [`Tables::port`]).
#[derive(Debug, Clone, Copy)]
pub struct PortView<'a> {
    /// The port index.
    pub index: usize,
    /// The router's underlay addresses on the port, with the ingress each one means.
    pub local: &'a [(SocketAddr, Ingress)],
    /// The port's 802.1Q VLAN, if it has one.
    pub vlan: Option<u16>,
}

impl Tables {
    /// The view of port `port` for a burst received on it (no addresses, no VLAN for a
    /// port index the tables do not know).
    #[inline]
    pub fn port(&self, port: usize) -> PortView<'_> {
        PortView {
            index: port,
            local: self.ingress.get(port).map_or(&[][..], Vec::as_slice),
            vlan: self.vlan(port),
        }
    }

    /// The 802.1Q VLAN of port `port`, if it has one.
    #[inline]
    pub fn vlan(&self, port: usize) -> Option<u16> {
        self.vlans.get(port).copied().flatten()
    }

    /// The MAC of next hop `ip` at `now_s` (Unix seconds): static configuration first (never
    /// stale), then ARP- or NDP-learned. Inlined: the address is built by the caller just
    /// before, and a call would read it back through memory.
    #[inline(always)]
    pub fn neighbor(&self, ip: &IpAddr, now_s: u32) -> Option<Learned> {
        if let Some((_, m)) = self.neighbors.iter().find(|(a, _)| a == ip) {
            return Some(Learned {
                mac: *m,
                stale: false,
            });
        }
        match ip {
            IpAddr::V4(v4) => self.learned.lookup(*v4, now_s),
            IpAddr::V6(v6) => self.learned6.lookup(*v6, now_s),
        }
    }

    /// Whether `ip` is one of the router's underlay addresses on port `port`.
    #[inline]
    pub fn is_mine(&self, port: usize, ip: Ipv4Addr) -> bool {
        self.ingress
            .get(port)
            .is_some_and(|l| l.iter().any(|(a, _)| a.ip() == IpAddr::V4(ip)))
    }

    /// Whether `ip` is one of the router's IPv6 underlay addresses on port `port`.
    #[inline]
    pub fn is_mine6(&self, port: usize, ip: Ipv6Addr) -> bool {
        self.ingress
            .get(port)
            .is_some_and(|l| l.iter().any(|(a, _)| a.ip() == IpAddr::V6(ip)))
    }
}

/// Tables for the unit tests of this crate: port 0 is the internal port (IPv4 `10.0.0.1` and
/// IPv6 `fd00::1`), port 1 carries interface 1 (`192.0.2.1` to `192.0.2.2`), port 2 (VLAN
/// [`test_tables::VLAN`]) carries interface 2 (`[2001:db8::1]` to `[2001:db8::2]`).
#[cfg(test)]
pub(crate) mod test_tables {
    use super::*;
    use crate::neighbor::Aging;

    /// The MAC of port `i`.
    pub fn port_mac(i: u8) -> [u8; 6] {
        [2, 0, 0, 0, 0, i]
    }
    /// The VLAN of port 2.
    pub const VLAN: u16 = 42;
    /// The router's internal address.
    pub fn internal() -> SocketAddr {
        "10.0.0.1:30042".parse().unwrap()
    }
    /// The router's IPv6 internal address (second address of the internal port).
    pub fn internal6() -> SocketAddr {
        "[fd00::1]:30042".parse().unwrap()
    }
    /// Interface 1's local and remote addresses.
    pub fn link1() -> (SocketAddr, SocketAddr) {
        (
            "192.0.2.1:50000".parse().unwrap(),
            "192.0.2.2:50000".parse().unwrap(),
        )
    }
    /// Interface 2's local and remote addresses.
    pub fn link2() -> (SocketAddr, SocketAddr) {
        (
            "[2001:db8::1]:50000".parse().unwrap(),
            "[2001:db8::2]:50000".parse().unwrap(),
        )
    }
    /// A sibling router owning interface 9.
    pub fn sibling() -> SocketAddr {
        "10.0.0.9:30042".parse().unwrap()
    }

    /// The tables described above; interface 1's neighbour MAC is static (`neighbor1`),
    /// interface 2's is unknown.
    pub fn tables(neighbor1: Option<[u8; 6]>) -> Tables {
        let (l1, r1) = link1();
        let (l2, r2) = link2();
        let mut egress = vec![None; 3];
        egress[1] = Some(IfEgress::new(1, port_mac(1), l1, r1, neighbor1));
        egress[2] = Some(IfEgress::new(2, port_mac(2), l2, r2, None));
        Tables {
            ports: vec![port_mac(0), port_mac(1), port_mac(2)],
            port_ids: vec![0, 1, 2],
            ingress: vec![
                vec![
                    (internal(), Ingress::Internal),
                    (internal6(), Ingress::Internal),
                ],
                vec![(l1, Ingress::External(1))],
                vec![(l2, Ingress::External(2))],
            ],
            egress,
            internal_port: 0,
            internal_addr: internal(),
            neighbors: Vec::new(),
            learned: NeighborTable::new(64, Aging::default()),
            learned6: Neighbor6Table::new(64, Aging::default()),
            default_macs: vec![None; 3],
            vlans: vec![None, None, Some(VLAN)],
            siblings: vec![(sibling(), 9)],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::test_tables::*;
    use super::*;

    #[test]
    fn static_neighbours_come_first_and_addresses_are_per_port() {
        let mut t = tables(None);
        let ip: IpAddr = "10.0.0.5".parse().unwrap();
        assert_eq!(t.neighbor(&ip, 100), None);
        assert!(t.learned.learn(Ipv4Addr::new(10, 0, 0, 5), [7; 6], 100));
        assert_eq!(t.neighbor(&ip, 100).map(|l| l.mac), Some([7; 6]));
        t.neighbors.push((ip, [8; 6]));
        assert_eq!(
            t.neighbor(&ip, 100),
            Some(Learned {
                mac: [8; 6],
                stale: false
            })
        );
        assert!(t.is_mine(0, Ipv4Addr::new(10, 0, 0, 1)));
        assert!(!t.is_mine(1, Ipv4Addr::new(10, 0, 0, 1)));
        assert!(!t.is_mine(7, Ipv4Addr::new(10, 0, 0, 1)));
        assert!(t.is_mine6(2, "2001:db8::1".parse().unwrap()));
        assert!(t.is_mine6(0, "fd00::1".parse().unwrap()));
        assert!(!t.is_mine6(1, "2001:db8::1".parse().unwrap()));
        assert_eq!(t.port(2).vlan, Some(VLAN));
        assert_eq!(t.port(1).local.len(), 1);
        assert!(t.port(9).local.is_empty());
    }
}
