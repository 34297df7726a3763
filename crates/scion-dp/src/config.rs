//! The router model: which AS the router is in, its interfaces and who owns them, the local
//! services, the end-host port range and the forwarding key. Built from plain data (the router
//! binary fills it from `topology.json`); validated once into a [`Router`] whose lookups are
//! O(1) table reads.

use alloc::boxed::Box;
use alloc::vec::Vec;
use core::fmt;
use core::net::SocketAddr;
use core::str::FromStr;
use core::sync::atomic::{AtomicU8, Ordering};

use idint_wire::{IsdAsn, Svc};

use crate::hop_mac::HopMac;

/// SCION link type of an inter-AS interface, from this AS's point of view (`link_to`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LinkType {
    /// Core link (between core ASes).
    Core,
    /// The neighbour is our parent (provider).
    Parent,
    /// The neighbour is our child (customer).
    Child,
    /// Peering link.
    Peer,
}

impl FromStr for LinkType {
    type Err = ConfigError;
    /// Parses `core`, `parent`, `child` or `peer`, case-insensitively (as topology.json).
    fn from_str(s: &str) -> Result<Self, ConfigError> {
        for (name, t) in [
            ("core", LinkType::Core),
            ("parent", LinkType::Parent),
            ("child", LinkType::Child),
            ("peer", LinkType::Peer),
        ] {
            if s.eq_ignore_ascii_case(name) {
                return Ok(t);
            }
        }
        Err(ConfigError::BadLinkType)
    }
}

impl fmt::Display for LinkType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LinkType::Core => "core",
            LinkType::Parent => "parent",
            LinkType::Child => "child",
            LinkType::Peer => "peer",
        })
    }
}

/// Which border router of the AS owns an interface.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner {
    /// This router: packets for it leave on its own external link.
    Local,
    /// A sibling router, reached over the AS-internal network at this address.
    Sibling(SocketAddr),
}

/// One inter-AS interface of the AS.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InterfaceConfig {
    /// Interface ID (non-zero, unique in the AS).
    pub id: u16,
    /// Link type.
    pub link_type: LinkType,
    /// ISD-AS on the other side of the link.
    pub neighbor_ia: IsdAsn,
    /// Owning router.
    pub owner: Owner,
}

/// End-host port range of the AS (`dispatched_ports`): local deliveries to ports outside it go
/// to the default end-host port 30041.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DispatchedPorts {
    /// No port is dispatched directly: everything goes to 30041.
    None,
    /// Every port 1-65535.
    All,
    /// An inclusive range.
    Range(u16, u16),
}

impl DispatchedPorts {
    /// Default end-host ("dispatcher") port.
    pub const ENDHOST_PORT: u16 = 30041;

    /// The underlay port for a packet whose SCION L4 destination port is `port`.
    pub const fn underlay_port(self, port: u16) -> u16 {
        let inside = match self {
            DispatchedPorts::None => false,
            DispatchedPorts::All => port != 0,
            DispatchedPorts::Range(lo, hi) => port >= lo && port <= hi,
        };
        if inside { port } else { Self::ENDHOST_PORT }
    }

    /// Checks a range as [`FromStr`] does: `1 <= START <= END`, else
    /// [`ConfigError::BadPortRange`].
    pub const fn check(self) -> Result<(), ConfigError> {
        match self {
            DispatchedPorts::Range(lo, hi) if lo == 0 || lo > hi => Err(ConfigError::BadPortRange),
            _ => Ok(()),
        }
    }
}

impl FromStr for DispatchedPorts {
    type Err = ConfigError;
    /// Parses `"START-END"`, `"all"` or an empty string (none), as topology.json.
    fn from_str(s: &str) -> Result<Self, ConfigError> {
        let s = s.trim();
        if s.is_empty() {
            return Ok(DispatchedPorts::None);
        }
        if s.eq_ignore_ascii_case("all") {
            return Ok(DispatchedPorts::All);
        }
        let (lo, hi) = s.split_once('-').ok_or(ConfigError::BadPortRange)?;
        let lo: u16 = lo.trim().parse().map_err(|_| ConfigError::BadPortRange)?;
        let hi: u16 = hi.trim().parse().map_err(|_| ConfigError::BadPortRange)?;
        let r = DispatchedPorts::Range(lo, hi);
        r.check()?;
        Ok(r)
    }
}

/// Everything the data plane needs to know about its router, as plain data.
#[derive(Debug, Clone)]
pub struct RouterConfig {
    /// The local ISD-AS.
    pub local_ia: IsdAsn,
    /// Whether the AS is a core AS.
    pub core: bool,
    /// This router's AS-internal address; its IP is the source of SCMP messages it sends.
    pub internal_addr: SocketAddr,
    /// Every interface of the AS (own and sibling-owned).
    pub interfaces: Vec<InterfaceConfig>,
    /// Service addresses (CS, DS) and the underlay address of one instance each.
    pub services: Vec<(Svc, SocketAddr)>,
    /// End-host port range.
    pub dispatched_ports: DispatchedPorts,
    /// Hop-field key (see [`crate::hop_mac::forwarding_key`]).
    pub forwarding_key: [u8; 16],
}

/// Why a [`RouterConfig`] was rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigError {
    /// Interface ID 0 is reserved.
    ZeroInterfaceId,
    /// The same interface ID appears twice.
    DuplicateInterface(u16),
    /// A link type other than core/parent/child/peer.
    BadLinkType,
    /// A core link on a non-core AS, or a parent link on a core AS.
    LinkTypeNotAllowed(u16),
    /// The dispatched port range is not `START-END` with 1 <= START <= END, `all` or empty.
    BadPortRange,
    /// A service other than CS or DS in the service table.
    BadService,
    /// A neighbour ISD-AS equal to the local one.
    NeighborIsLocal(u16),
    /// More than [`Router::MAX_INTERFACES`] interfaces.
    TooManyInterfaces,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::ZeroInterfaceId => f.write_str("interface ID 0 is reserved"),
            ConfigError::DuplicateInterface(id) => write!(f, "interface {id} configured twice"),
            ConfigError::BadLinkType => {
                f.write_str("link type must be core, parent, child or peer")
            }
            ConfigError::LinkTypeNotAllowed(id) => write!(
                f,
                "interface {id}: core links need a core AS and parent links a non-core AS"
            ),
            ConfigError::BadPortRange => f.write_str(
                "dispatched_ports must be \"START-END\" (1 <= START <= END), \"all\" or empty",
            ),
            ConfigError::BadService => f.write_str("only CS and DS services can be configured"),
            ConfigError::NeighborIsLocal(id) => {
                write!(f, "interface {id}: neighbour ISD-AS is the local ISD-AS")
            }
            ConfigError::TooManyInterfaces => {
                write!(
                    f,
                    "more than {} interfaces configured",
                    Router::MAX_INTERFACES
                )
            }
        }
    }
}

impl core::error::Error for ConfigError {}

/// Number of interface IDs: every 16-bit value (the size of the port table).
const PORT_IDS: usize = 1 << u16::BITS;

/// A validated router configuration with constant-time interface lookup and the prepared
/// hop-field MAC.
pub struct Router {
    config: RouterConfig,
    /// Interface ID -> index + 1 into `config.interfaces` (0 = not configured), up to the
    /// highest configured ID: a few hundred bytes that stay cached, not a 128 KiB table.
    by_id: Box<[u16]>,
    /// Interface ID -> its per-packet facts as a [`Port`] byte (0: not configured), for every
    /// 16-bit ID: a lookup is one load, with no bounds check. 64 KiB, of which a packet
    /// touches the cache lines of its two interfaces. The control plane (BFD) flips the
    /// [`Port::UP`] bit; packets read it with a relaxed load.
    ports: Box<[AtomicU8; PORT_IDS]>,
    hop_mac: HopMac,
}

/// What the fast path needs to know about an interface, packed into one byte: whether it is
/// configured, whether this router owns it, whether its link is up, and its link type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Port(u8);

impl Port {
    /// The interface is configured.
    const CONFIGURED: u8 = 1 << 0;
    /// This router owns the link (else a sibling does).
    const LOCAL: u8 = 1 << 1;
    /// The link is up.
    const UP: u8 = 1 << 2;
    /// Where the link type ([`LinkType`] as `u8`) starts.
    const LINK_SHIFT: u32 = 3;
    /// The link type after its shift.
    const LINK_MASK: u8 = 0b11;

    /// The byte of a configured interface whose link is up.
    const fn new(link: LinkType, local: bool) -> Port {
        let local = if local { Self::LOCAL } else { 0 };
        Port(Self::CONFIGURED | local | Self::UP | ((link as u8) << Self::LINK_SHIFT))
    }
    /// Whether the interface is configured.
    #[inline(always)]
    pub(crate) fn configured(self) -> bool {
        self.0 & Self::CONFIGURED != 0
    }
    /// Whether the interface is configured, owned by this router and up.
    #[inline(always)]
    pub(crate) fn local_and_up(self) -> bool {
        let want = Self::CONFIGURED | Self::LOCAL | Self::UP;
        self.0 & want == want
    }
    /// Whether the link is up (false if not configured).
    #[inline(always)]
    pub(crate) fn up(self) -> bool {
        let want = Self::CONFIGURED | Self::UP;
        self.0 & want == want
    }
    /// The link type as its `u8` discriminant (meaningful only if configured).
    #[inline(always)]
    pub(crate) fn link(self) -> u8 {
        (self.0 >> Self::LINK_SHIFT) & Self::LINK_MASK
    }
}

impl fmt::Debug for Router {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Router")
            .field("local_ia", &self.config.local_ia)
            .field("interfaces", &self.config.interfaces.len())
            .finish_non_exhaustive()
    }
}

impl Router {
    /// Most interfaces a router model holds: every non-zero 16-bit interface ID.
    pub const MAX_INTERFACES: usize = u16::MAX as usize;

    /// Validates `config` and prepares the lookup tables and keys.
    pub fn new(config: RouterConfig) -> Result<Self, ConfigError> {
        let top = config.interfaces.iter().map(|i| i.id).max().unwrap_or(0);
        let mut by_id = alloc::vec![0u16; usize::from(top) + 1].into_boxed_slice();
        if config.interfaces.len() > Self::MAX_INTERFACES {
            return Err(ConfigError::TooManyInterfaces);
        }
        for (i, ifc) in config.interfaces.iter().enumerate() {
            if ifc.id == 0 {
                return Err(ConfigError::ZeroInterfaceId);
            }
            if ifc.neighbor_ia == config.local_ia {
                return Err(ConfigError::NeighborIsLocal(ifc.id));
            }
            match (ifc.link_type, config.core) {
                (LinkType::Core, false) | (LinkType::Parent, true) => {
                    return Err(ConfigError::LinkTypeNotAllowed(ifc.id));
                }
                _ => {}
            }
            let slot = &mut by_id[usize::from(ifc.id)];
            if *slot != 0 {
                return Err(ConfigError::DuplicateInterface(ifc.id));
            }
            *slot = (i + 1) as u16;
        }
        config.dispatched_ports.check()?;
        for (svc, _) in &config.services {
            if !matches!(svc.base(), Svc::CS | Svc::DS) {
                return Err(ConfigError::BadService);
            }
        }
        let hop_mac = HopMac::new(&config.forwarding_key);
        let ports: Box<[AtomicU8]> = (0..PORT_IDS).map(|_| AtomicU8::new(0)).collect();
        let Ok(ports) = Box::<[AtomicU8; PORT_IDS]>::try_from(ports) else {
            unreachable!("the table has one entry per interface ID");
        };
        for ifc in &config.interfaces {
            let port = Port::new(ifc.link_type, ifc.owner == Owner::Local);
            ports[usize::from(ifc.id)].store(port.0, Ordering::Relaxed);
        }
        Ok(Router {
            config,
            by_id,
            ports,
            hop_mac,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &RouterConfig {
        &self.config
    }

    /// The local ISD-AS.
    pub fn local_ia(&self) -> IsdAsn {
        self.config.local_ia
    }

    /// Index + 1 of interface `id` in the interface tables (0: not configured).
    #[inline(always)]
    fn slot(&self, id: u16) -> u16 {
        self.by_id.get(usize::from(id)).copied().unwrap_or(0)
    }

    /// The interface with this ID, if configured (own or sibling-owned).
    #[inline]
    pub fn interface(&self, id: u16) -> Option<&InterfaceConfig> {
        match self.slot(id) {
            0 => None,
            k => self.config.interfaces.get(usize::from(k) - 1),
        }
    }

    /// Whether the link of interface `id` is up (unknown interfaces are down). Links start up;
    /// the control plane (BFD) reports changes with [`Router::set_link_up`].
    #[inline]
    pub fn link_up(&self, id: u16) -> bool {
        self.port(id).up()
    }

    /// The interface with this ID as the fast path sees it (not configured if unknown).
    #[inline(always)]
    pub(crate) fn port(&self, id: u16) -> Port {
        Port(self.ports[usize::from(id)].load(Ordering::Relaxed))
    }

    /// Records the liveness of interface `id`'s link; false if `id` is not configured.
    pub fn set_link_up(&self, id: u16, up: bool) -> bool {
        let p = &self.ports[usize::from(id)];
        if !Port(p.load(Ordering::Relaxed)).configured() {
            return false;
        }
        if up {
            p.fetch_or(Port::UP, Ordering::Relaxed);
        } else {
            p.fetch_and(!Port::UP, Ordering::Relaxed);
        }
        true
    }

    /// The hop-field MAC prepared with the forwarding key.
    pub fn hop_mac(&self) -> &HopMac {
        &self.hop_mac
    }

    /// The underlay address of an instance of `svc` (multicast bit ignored).
    pub fn service(&self, svc: Svc) -> Option<SocketAddr> {
        let base = svc.base();
        self.config
            .services
            .iter()
            .find(|(s, _)| *s == base)
            .map(|(_, a)| *a)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ia(s: &str) -> IsdAsn {
        s.parse().unwrap()
    }

    fn sample() -> RouterConfig {
        RouterConfig {
            local_ia: ia("1-ff00:0:110"),
            core: false,
            internal_addr: "198.51.100.1:3333".parse().unwrap(),
            interfaces: alloc::vec![
                InterfaceConfig {
                    id: 1,
                    link_type: LinkType::Parent,
                    neighbor_ia: ia("1-ff00:0:100"),
                    owner: Owner::Local,
                },
                InterfaceConfig {
                    id: 5,
                    link_type: LinkType::Child,
                    neighbor_ia: ia("1-ff00:0:113"),
                    owner: Owner::Sibling("198.51.100.5:30042".parse().unwrap()),
                },
            ],
            services: alloc::vec![(Svc::CS, "10.0.0.71:30254".parse().unwrap())],
            dispatched_ports: "1024-65535".parse().unwrap(),
            forwarding_key: [7; 16],
        }
    }

    #[test]
    fn ases_with_more_than_255_interfaces() {
        // An attachment-point AS with many child links: interface IDs are 16-bit.
        let mut c = sample();
        c.interfaces = (1..=1000u16)
            .map(|id| InterfaceConfig {
                id: id * 60,
                link_type: LinkType::Child,
                neighbor_ia: IsdAsn::from_u64((1 << 48) | (0xff00_0000_1000 + u64::from(id))),
                owner: Owner::Local,
            })
            .collect();
        let r = Router::new(c).unwrap();
        for id in [60u16, 300 * 60, 1000 * 60] {
            assert_eq!(r.interface(id).map(|i| i.id), Some(id));
            let p = r.port(id);
            assert!(p.link() == LinkType::Child as u8 && p.local_and_up());
            assert!(r.link_up(id));
        }
        assert!(r.interface(61).is_none());
    }

    #[test]
    fn lookups() {
        let r = Router::new(sample()).unwrap();
        assert_eq!(r.interface(1).unwrap().link_type, LinkType::Parent);
        assert!(matches!(r.interface(5).unwrap().owner, Owner::Sibling(_)));
        assert!(r.interface(2).is_none());
        assert!(r.interface(0).is_none());
        assert_eq!(r.service(Svc(0x8002)).unwrap().port(), 30254);
        assert!(r.service(Svc::DS).is_none());
    }

    #[test]
    fn rejects_bad_configs() {
        let mut c = sample();
        c.interfaces[1].id = 1;
        assert_eq!(
            Router::new(c).unwrap_err(),
            ConfigError::DuplicateInterface(1)
        );
        let mut c = sample();
        c.interfaces[0].id = 0;
        assert_eq!(Router::new(c).unwrap_err(), ConfigError::ZeroInterfaceId);
        let mut c = sample();
        c.core = true;
        assert_eq!(
            Router::new(c).unwrap_err(),
            ConfigError::LinkTypeNotAllowed(1)
        );
        let mut c = sample();
        c.interfaces[0].neighbor_ia = c.local_ia;
        assert_eq!(Router::new(c).unwrap_err(), ConfigError::NeighborIsLocal(1));
        let mut c = sample();
        c.services
            .push((Svc::WILDCARD, "10.0.0.1:1".parse().unwrap()));
        assert_eq!(Router::new(c).unwrap_err(), ConfigError::BadService);
    }

    #[test]
    fn rejects_dispatched_ranges_that_from_str_rejects() {
        for bad in [
            DispatchedPorts::Range(0, 100),
            DispatchedPorts::Range(0, 0),
            DispatchedPorts::Range(5000, 10),
        ] {
            let mut c = sample();
            c.dispatched_ports = bad;
            assert_eq!(
                Router::new(c).unwrap_err(),
                ConfigError::BadPortRange,
                "{bad:?}"
            );
        }
        for good in [
            DispatchedPorts::Range(1, 1),
            DispatchedPorts::Range(1, 65535),
            DispatchedPorts::All,
            DispatchedPorts::None,
        ] {
            let mut c = sample();
            c.dispatched_ports = good;
            assert!(Router::new(c).is_ok(), "{good:?}");
        }
    }

    #[test]
    fn port_ranges_and_link_types() {
        let r: DispatchedPorts = "31000-32767".parse().unwrap();
        assert_eq!(r.underlay_port(31000), 31000);
        assert_eq!(r.underlay_port(80), 30041);
        assert_eq!(
            "all".parse::<DispatchedPorts>().unwrap().underlay_port(80),
            80
        );
        assert_eq!(
            "".parse::<DispatchedPorts>().unwrap().underlay_port(31000),
            30041
        );
        for bad in ["0-10", "10-5", "x", "1-", "-1", "1-70000"] {
            assert!(bad.parse::<DispatchedPorts>().is_err(), "{bad}");
        }
        assert_eq!("CHILD".parse::<LinkType>().unwrap(), LinkType::Child);
        assert!("sibling".parse::<LinkType>().is_err());
    }
}
