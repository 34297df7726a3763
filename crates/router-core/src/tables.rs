//! The forwarding tables every worker routes by: the ports (MACs, VLANs, underlay addresses),
//! the egress of every SCION interface, sibling routers and next-hop MACs (static, and learned
//! from ARP and NDP). Built once at start-up; afterwards only the learned neighbours change
//! (lock-free, see [`crate::neighbor`]).
//!
//! Learned neighbours are per port, and restricted: a port learns only the addresses it may
//! send to directly (its next hops: the link peers of its interfaces, the sibling routers on
//! the internal port; and the addresses on its subnets), never a configured (static) one. So
//! an ARP or NDP message on one port can never change the MAC used for an address on another.

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

/// Prefix length of the default subnet around an IPv4 address of the internal port.
pub const DEFAULT_V4_PREFIX: u8 = 24;
/// Prefix length of the default subnet around an IPv6 address of the internal port.
pub const DEFAULT_V6_PREFIX: u8 = 64;
/// Bits of an IPv4 address.
const V4_BITS: u8 = 32;
/// Bits of an IPv6 address.
const V6_BITS: u8 = 128;

/// An IP prefix: addresses on a port's link (`10.0.0.0/24`, `fd00::/64`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Subnet {
    /// The network address (host bits zero).
    addr: IpAddr,
    /// The prefix length.
    prefix: u8,
}

impl Subnet {
    /// The prefix of length `prefix` containing `addr` (`None`: longer than the address).
    pub fn new(addr: IpAddr, prefix: u8) -> Option<Self> {
        let addr = match addr {
            IpAddr::V4(a) if prefix <= V4_BITS => {
                let mask = u32::MAX
                    .checked_shl(u32::from(V4_BITS - prefix))
                    .unwrap_or(0);
                IpAddr::V4(Ipv4Addr::from(u32::from(a) & mask))
            }
            IpAddr::V6(a) if prefix <= V6_BITS => {
                let mask = u128::MAX
                    .checked_shl(u32::from(V6_BITS - prefix))
                    .unwrap_or(0);
                IpAddr::V6(Ipv6Addr::from(u128::from(a) & mask))
            }
            _ => return None,
        };
        Some(Subnet { addr, prefix })
    }

    /// The default subnet around a router address on the internal port: its /24 (IPv4) or
    /// /64 (IPv6).
    pub fn around(addr: IpAddr) -> Self {
        let prefix = if addr.is_ipv4() {
            DEFAULT_V4_PREFIX
        } else {
            DEFAULT_V6_PREFIX
        };
        Subnet::new(addr, prefix).unwrap_or(Subnet { addr, prefix: 0 })
    }

    /// Whether `ip` is in the prefix (never across address families).
    #[inline]
    pub fn contains(&self, ip: IpAddr) -> bool {
        Subnet::new(ip, self.prefix).is_some_and(|s| s.addr == self.addr)
    }
}

impl std::fmt::Display for Subnet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

impl std::str::FromStr for Subnet {
    type Err = String;

    /// `address/prefix` with the host bits zero.
    fn from_str(s: &str) -> Result<Self, String> {
        let (a, p) = s
            .split_once('/')
            .ok_or_else(|| format!("{s:?} is not address/prefix-length"))?;
        let addr: IpAddr = a
            .parse()
            .map_err(|_| format!("{s:?}: {a:?} is not an IP address"))?;
        let prefix: u8 = p
            .parse()
            .map_err(|_| format!("{s:?}: {p:?} is not a prefix length"))?;
        let net = Subnet::new(addr, prefix)
            .ok_or_else(|| format!("{s:?}: prefix length {prefix} is longer than the address"))?;
        if net.addr != addr {
            return Err(format!("{s:?}: host bits set (the network is {net})"));
        }
        Ok(net)
    }
}

/// The neighbours one port learns, and which addresses it may learn.
#[derive(Debug)]
pub struct PortNeighbors {
    /// IPv4 next-hop MACs learned from ARP on this port.
    pub v4: NeighborTable,
    /// IPv6 next-hop MACs learned from NDP on this port.
    pub v6: Neighbor6Table,
    /// The port's next hops (link peers; sibling routers on the internal port): learnable.
    pub next_hops: Vec<IpAddr>,
    /// The port's subnets: their addresses are learnable too.
    pub subnets: Vec<Subnet>,
}

impl PortNeighbors {
    /// Empty tables of `capacity` slots each (randomly seeded), for `next_hops` and `subnets`.
    pub fn new(
        capacity: usize,
        aging: crate::neighbor::Aging,
        next_hops: Vec<IpAddr>,
        subnets: Vec<Subnet>,
    ) -> Self {
        PortNeighbors {
            v4: NeighborTable::new(capacity, aging),
            v6: Neighbor6Table::new(capacity, aging),
            next_hops,
            subnets,
        }
    }

    /// Whether `ip` is a next hop of the port or on one of its subnets.
    #[inline]
    pub fn may_learn(&self, ip: IpAddr) -> bool {
        self.next_hops.contains(&ip) || self.subnets.iter().any(|s| s.contains(ip))
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
    /// Next-hop MACs learned from ARP and NDP, per port index.
    pub learned: Vec<PortNeighbors>,
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
    /// The port's first IPv4 underlay address and its ingress, for the IPv4 fast path of
    /// classification (`None` if a packet to it would need the sibling check).
    pub v4: Option<underlay::V4Key>,
}

impl Tables {
    /// The view of port `port` for a burst received on it (no addresses, no VLAN for a
    /// port index the tables do not know).
    #[inline]
    pub fn port(&self, port: usize) -> PortView<'_> {
        let local = self.ingress.get(port).map_or(&[][..], Vec::as_slice);
        let v4 = local
            .iter()
            .find_map(|(a, i)| match a {
                SocketAddr::V4(a) => Some(underlay::V4Key::new(*a, *i)),
                SocketAddr::V6(_) => None,
            })
            // Packets from a sibling arrive by the internal address: checked the long way.
            .filter(|k| k.what != Ingress::Internal || self.siblings.is_empty());
        PortView {
            index: port,
            local,
            vlan: self.vlan(port),
            v4,
        }
    }

    /// The 802.1Q VLAN of port `port`, if it has one.
    #[inline]
    pub fn vlan(&self, port: usize) -> Option<u16> {
        self.vlans.get(port).copied().flatten()
    }

    /// The MAC of next hop `ip` on port `port` at `now_s` (Unix seconds): static
    /// configuration first (never stale), then what ARP or NDP taught that port. Inlined: the
    /// address is built by the caller just before, and a call would read it back through
    /// memory.
    #[inline(always)]
    pub fn neighbor(&self, port: usize, ip: &IpAddr, now_s: u32) -> Option<Learned> {
        if let Some((_, m)) = self.neighbors.iter().find(|(a, _)| a == ip) {
            return Some(Learned {
                mac: *m,
                stale: false,
            });
        }
        let learned = self.learned.get(port)?;
        match ip {
            IpAddr::V4(v4) => learned.v4.lookup(*v4, now_s),
            IpAddr::V6(v6) => learned.v6.lookup(*v6, now_s),
        }
    }

    /// The learned neighbours of port `port` if it may learn `ip`: a next hop of the port or
    /// an address on its subnets, and not a configured neighbour (static entries win).
    #[inline]
    pub fn learner(&self, port: usize, ip: IpAddr) -> Option<&PortNeighbors> {
        if self.neighbors.iter().any(|(a, _)| *a == ip) {
            return None;
        }
        self.learned.get(port).filter(|l| l.may_learn(ip))
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
            learned: vec![
                PortNeighbors::new(
                    64,
                    Aging::default(),
                    vec![sibling().ip()],
                    vec![
                        Subnet::around(internal().ip()),
                        Subnet::around(internal6().ip()),
                    ],
                ),
                PortNeighbors::new(64, Aging::default(), vec![r1.ip()], Vec::new()),
                PortNeighbors::new(64, Aging::default(), vec![r2.ip()], Vec::new()),
            ],
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
        assert_eq!(t.neighbor(0, &ip, 100), None);
        assert!(
            t.learned[0]
                .v4
                .learn(Ipv4Addr::new(10, 0, 0, 5), [7; 6], 100)
        );
        assert_eq!(t.neighbor(0, &ip, 100).map(|l| l.mac), Some([7; 6]));
        assert_eq!(t.neighbor(1, &ip, 100), None, "learned on port 0 only");
        t.neighbors.push((ip, [8; 6]));
        assert_eq!(
            t.neighbor(1, &ip, 100),
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

    #[test]
    fn subnets_parse_and_contain() {
        let s: Subnet = "10.1.0.0/16".parse().unwrap();
        assert!(s.contains("10.1.200.3".parse().unwrap()));
        assert!(!s.contains("10.2.0.1".parse().unwrap()));
        assert!(!s.contains("::a01:1".parse().unwrap()));
        let s6: Subnet = "fd00:1::/64".parse().unwrap();
        assert!(s6.contains("fd00:1::99".parse().unwrap()));
        assert!(!s6.contains("fd00:2::99".parse().unwrap()));
        assert_eq!(s6.to_string(), "fd00:1::/64");
        let all: Subnet = "0.0.0.0/0".parse().unwrap();
        assert!(all.contains("192.0.2.1".parse().unwrap()));
        for bad in [
            "10.0.0.1/24",
            "10.0.0.0/33",
            "10.0.0.0",
            "x/8",
            "10.0.0.0/x",
        ] {
            assert!(bad.parse::<Subnet>().is_err(), "{bad}");
        }
        assert_eq!(
            Subnet::around("10.0.0.1".parse().unwrap()).to_string(),
            "10.0.0.0/24"
        );
    }
}
