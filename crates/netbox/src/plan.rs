//! The network in the box: ASes, border routers, inter-AS links and end hosts, with every
//! name and address. Pure data: nothing here touches the system.
//!
//! ```text
//!            ISD 1                                     ISD 2
//!   ┌──────── 1-ff00:0:110 (core) ────────┐      ┌── 2-ff00:0:210 (core) ──┐
//!   │ br110a [1] [2]  ══ internal ══ br110b [3] ──core── [1] br210a [2]     │
//!   └─────────┼───┼──────────────────────┘      └───────────────────┼─────┘
//!          child child                                          child
//!   1-ff00:0:111 [1]  1-ff00:0:112 [1]                        2-ff00:0:211 [1]
//!     br111a [2] ─────────────────── peering ─────────────────── [2] br211a
//! ```
//!
//! [`Network::demo`] is that network; [`Network::small`] leaves out 1-ff00:0:112 (the
//! integration test's version: the same kinds of links and hops with one router less).

use std::net::Ipv4Addr;

use idint_wire::IsdAsn;

/// UDP port of every inter-AS link underlay address.
pub const LINK_PORT: u16 = 50000;
/// UDP port of every router's internal address.
pub const INTERNAL_PORT: u16 = 30042;
/// The management network joining every namespace to the host (collector, router exports).
pub const MGMT_PREFIX: [u8; 3] = [10, 99, 0];
/// The collector's address on the management network (the root namespace's bridge).
pub const COLLECTOR_IP: Ipv4Addr = Ipv4Addr::new(10, 99, 0, 1);
/// Last octet of an AS's end host on its internal network (`10.<AS number>.0.<this>`).
pub const HOST_OCTET: u8 = 10;

/// How two ASes are linked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkKind {
    /// Between two core ASes.
    Core,
    /// `a` is the parent (provider), `b` the child.
    ParentChild,
    /// Peering between two non-core ASes.
    Peer,
}

/// One end of an inter-AS link: which router's which interface, with its underlay address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkEnd {
    /// Index of the AS in [`Network::ases`].
    pub as_ix: usize,
    /// Index of the router in that AS's [`AsNode::routers`].
    pub router: usize,
    /// SCION interface ID (unique within the AS).
    pub ifid: u16,
    /// Underlay IPv4 address (port [`LINK_PORT`]).
    pub ip: Ipv4Addr,
    /// MAC of the router's port on the link.
    pub mac: [u8; 6],
}

/// An inter-AS link: a veth pair between two routers' namespaces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    /// What kind of link (for [`LinkKind::ParentChild`], `a` is the parent).
    pub kind: LinkKind,
    /// First end.
    pub a: LinkEnd,
    /// Second end.
    pub b: LinkEnd,
}

/// A border router of an AS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouterNode {
    /// Router id in `topology.json` (and name of its namespace).
    pub name: String,
    /// Internal underlay address (port [`INTERNAL_PORT`]).
    pub internal: Ipv4Addr,
    /// MAC of its internal port.
    pub internal_mac: [u8; 6],
    /// The router's `[idint] node_id`: unique in the box.
    pub node_id: u32,
}

/// An AS: its routers, its internal network and one end host on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AsNode {
    /// ISD-AS.
    pub ia: IsdAsn,
    /// Core AS.
    pub core: bool,
    /// Short number naming its namespaces and internal subnet `10.<number>.0.0/24`.
    pub number: u8,
    /// Border routers.
    pub routers: Vec<RouterNode>,
}

impl AsNode {
    /// The AS's internal subnet's address with last octet `last`.
    pub fn internal_ip(&self, last: u8) -> Ipv4Addr {
        Ipv4Addr::new(10, self.number, 0, last)
    }

    /// Its end host's address.
    pub fn host(&self) -> Ipv4Addr {
        self.internal_ip(HOST_OCTET)
    }

    /// The MAC of its end host (the AS namespace's bridge, set explicitly so that the routers
    /// know it from the start).
    pub fn host_mac(&self) -> [u8; 6] {
        [0x02, 0x00, self.number, 0x00, 0x00, HOST_OCTET]
    }

    /// The ISD-AS as a file-name component (`1-ff00_0_110`).
    pub fn file_name(&self) -> String {
        self.ia.to_string().replace(':', "_")
    }
}

/// The whole network.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Network {
    /// The ASes.
    pub ases: Vec<AsNode>,
    /// The inter-AS links.
    pub links: Vec<Link>,
}

/// `1-ff00:0:<n>` style ISD-AS of the box.
fn ia(isd: u16, n: u64) -> IsdAsn {
    format!("{isd}-ff00:0:{n}")
        .parse()
        .expect("a valid ISD-AS literal")
}

/// Builds a network from ASes given as (ISD, AS number, core, router count) and links given
/// as (kind, (AS, router, ifid), (AS, router, ifid)) with ASes named by number.
struct Builder {
    net: Network,
}

impl Builder {
    fn new() -> Self {
        Builder {
            net: Network {
                ases: Vec::new(),
                links: Vec::new(),
            },
        }
    }

    fn add_as(&mut self, isd: u16, number: u8, core: bool, routers: u8) -> &mut Self {
        let routers = (0..routers)
            .map(|r| RouterNode {
                name: format!("br{number}{}", char::from(b'a' + r)),
                internal: Ipv4Addr::new(10, number, 0, r + 1),
                internal_mac: [0x02, 0x00, number, 0x00, 0x00, r + 1],
                node_id: u32::from(number) * 10 + u32::from(r) + 1,
            })
            .collect();
        self.net.ases.push(AsNode {
            ia: ia(isd, u64::from(number)),
            core,
            number,
            routers,
        });
        self
    }

    fn index(&self, number: u8) -> usize {
        self.net
            .ases
            .iter()
            .position(|a| a.number == number)
            .expect("the AS was added before its links")
    }

    fn link(&mut self, kind: LinkKind, a: (u8, usize, u16), b: (u8, usize, u16)) -> &mut Self {
        // Link k uses 10.200.k.0/30 and MACs 02:00:c8:k:00:{1,2}.
        let k = u8::try_from(self.net.links.len() + 1).expect("fewer than 255 links");
        let end = |(number, router, ifid): (u8, usize, u16), side: u8| LinkEnd {
            as_ix: self.index(number),
            router,
            ifid,
            ip: Ipv4Addr::new(10, 200, k, side),
            mac: [0x02, 0x00, 0xc8, k, 0x00, side],
        };
        let link = Link {
            kind,
            a: end(a, 1),
            b: end(b, 2),
        };
        self.net.links.push(link);
        self
    }
}

impl Network {
    /// The main job's network: 5 ASes in 2 ISDs, 6 routers (two in 1-ff00:0:110, so traffic
    /// between its child links and its core link crosses the AS's internal network), a core
    /// link between the ISDs, three parent-child links and one peering link.
    pub fn demo() -> Network {
        Self::build(true)
    }

    /// The integration test's network: [`Self::demo`] without 1-ff00:0:112.
    pub fn small() -> Network {
        Self::build(false)
    }

    fn build(with_112: bool) -> Network {
        use LinkKind::{Core, ParentChild, Peer};
        let mut b = Builder::new();
        b.add_as(1, 110, true, 2).add_as(1, 111, false, 1);
        if with_112 {
            b.add_as(1, 112, false, 1);
        }
        b.add_as(2, 210, true, 1).add_as(2, 211, false, 1);
        b.link(ParentChild, (110, 0, 1), (111, 0, 1));
        if with_112 {
            b.link(ParentChild, (110, 0, 2), (112, 0, 1));
        }
        b.link(Core, (110, 1, 3), (210, 0, 1))
            .link(ParentChild, (210, 0, 2), (211, 0, 1))
            .link(Peer, (111, 0, 2), (211, 0, 2));
        b.net
    }

    /// The AS with ISD-AS `ia`.
    pub fn as_index(&self, ia: IsdAsn) -> Option<usize> {
        self.ases.iter().position(|a| a.ia == ia)
    }

    /// The link end of interface `ifid` of AS `as_ix`, with the other end.
    pub fn interface(&self, as_ix: usize, ifid: u16) -> Option<(&Link, &LinkEnd, &LinkEnd)> {
        self.links.iter().find_map(|l| {
            if l.a.as_ix == as_ix && l.a.ifid == ifid {
                Some((l, &l.a, &l.b))
            } else if l.b.as_ix == as_ix && l.b.ifid == ifid {
                Some((l, &l.b, &l.a))
            } else {
                None
            }
        })
    }

    /// The links of router `router` of AS `as_ix`, each as (link, own end, far end).
    pub fn router_links(
        &self,
        as_ix: usize,
        router: usize,
    ) -> impl Iterator<Item = (&Link, &LinkEnd, &LinkEnd)> {
        self.links.iter().filter_map(move |l| {
            if l.a.as_ix == as_ix && l.a.router == router {
                Some((l, &l.a, &l.b))
            } else if l.b.as_ix == as_ix && l.b.router == router {
                Some((l, &l.b, &l.a))
            } else {
                None
            }
        })
    }

    /// The parent of non-core AS `as_ix` with the (parent's, child's) interface IDs of their
    /// link.
    pub fn parent(&self, as_ix: usize) -> Option<(usize, u16, u16)> {
        self.links.iter().find_map(|l| {
            (l.kind == LinkKind::ParentChild && l.b.as_ix == as_ix)
                .then_some((l.a.as_ix, l.a.ifid, l.b.ifid))
        })
    }

    /// Every router as (AS index, router index, router), in order.
    pub fn routers(&self) -> impl Iterator<Item = (usize, usize, &RouterNode)> {
        self.ases
            .iter()
            .enumerate()
            .flat_map(|(i, a)| a.routers.iter().enumerate().map(move |(r, n)| (i, r, n)))
    }
}

/// `aa:bb:cc:dd:ee:ff`.
pub fn mac_text(mac: [u8; 6]) -> String {
    mac.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn demo_has_what_the_issue_asks_for() {
        let n = Network::demo();
        assert!(n.ases.len() >= 5);
        let isds: std::collections::BTreeSet<_> = n.ases.iter().map(|a| a.ia.isd()).collect();
        assert_eq!(isds.len(), 2);
        let kinds: Vec<_> = n.links.iter().map(|l| l.kind).collect();
        assert!(kinds.contains(&LinkKind::Peer));
        assert!(kinds.contains(&LinkKind::ParentChild));
        let core = n.links.iter().find(|l| l.kind == LinkKind::Core).unwrap();
        assert_ne!(n.ases[core.a.as_ix].ia.isd(), n.ases[core.b.as_ix].ia.isd());
        assert!(n.ases.iter().any(|a| a.routers.len() >= 2));
    }

    #[test]
    fn addresses_and_ids_are_unique() {
        for n in [Network::demo(), Network::small()] {
            let mut ips = std::collections::BTreeSet::new();
            let mut macs = std::collections::BTreeSet::new();
            let mut nodes = std::collections::BTreeSet::new();
            for (_, _, r) in n.routers() {
                assert!(ips.insert(r.internal));
                assert!(macs.insert(r.internal_mac));
                assert!(nodes.insert(r.node_id));
            }
            for a in &n.ases {
                assert!(ips.insert(a.host()));
            }
            for l in &n.links {
                for e in [&l.a, &l.b] {
                    assert!(ips.insert(e.ip));
                    assert!(macs.insert(e.mac));
                    let same_as = n
                        .links
                        .iter()
                        .flat_map(|m| [&m.a, &m.b])
                        .filter(|o| o.as_ix == e.as_ix && o.ifid == e.ifid)
                        .count();
                    assert_eq!(same_as, 1, "interface {} twice in one AS", e.ifid);
                }
            }
        }
    }
}
