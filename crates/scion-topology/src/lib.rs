//! The SCION topology model: reads and validates `topology.json` files and `keys/`
//! directories into plain data ([`Topology`], [`MasterKeys`]) for routers, tools and the
//! collector. With the feature `router-config`, it also builds a border router's
//! `scion_dp::config::RouterConfig` ([`Topology::router_config`]); without it, the crate does
//! not depend on the data plane.
//!
//! Two `topology.json` dialects are read (detected from the type of `isd_as`):
//!
//! * **Reference** (scionproto, SCIONLab): `isd_as` is a string; `attributes: ["core"]`;
//!   `dispatched_ports`; `border_routers.<id>.{internal_addr, interfaces.<ifid>.{isd_as,
//!   link_to, remote_interface_id, mtu, underlay.{local|public, remote}}}`;
//!   `control_service.<id>.addr`, `discovery_service.<id>.addr`.
//! * **Appliance** (Anapaya `local_topology.json`, seed 002 §4.1.1): `isd_as` is an object
//!   keyed by ISD-AS, each with `internal_scion_mtu`, `control.address`, `discovery.address`
//!   and one `router.{internal_address, interfaces.<ifid>.{address, remote_address,
//!   remote_isd_as, link_type, scion_mtu, remote_interface_id}}`. Each AS has exactly one
//!   router, named like SCION names it: `br<ISD>-<AS with '_' for ':'>-1`, e.g.
//!   `br1-ff00_0_110-1`. The format does not say whether an AS is core: an optional `core`
//!   boolean or `attributes: ["core"]` is honoured (both given and disagreeing is an error),
//!   otherwise an AS with a core link is core.
//!
//! What is refused, beyond missing fields and wrong types (every error names the file, the
//! dotted path of the field and the reason):
//!
//! * a key repeated within one JSON object (JSON readers silently keep one of them), and in
//!   the appliance format the same AS written twice (`64-2:0:9` and `64-0002:0000:0009`);
//! * wildcard ISD-ASes (ISD 0 or AS 0) as the local AS or a neighbour;
//! * interface IDs that are 0, beyond 16 bits or not written canonically (`"02"`, `"+2"`),
//!   and `remote_interface_id: 0`;
//! * MTUs below [`MIN_MTU`];
//! * addresses that cannot work: an internal address or a remote underlay address that is
//!   unspecified, multicast, broadcast or has port 0; a local underlay address with port 0, a
//!   multicast or broadcast IP, or an IP version other than the remote's; two routers of one AS
//!   with the same internal address;
//! * `underlay.local` and its older name `public` both given with different values (equal
//!   values are accepted), and the deprecated `underlay.bind`;
//! * a router's ID-INT node id (`id`, an extension of the format) that is not an integer
//!   0..=4294967295, or that another router of the same AS has too;
//! * reference-format `border_routers` in an appliance-format file.
//!
//! Conflicts between the underlay addresses of one router's own links (an interface whose
//! local and remote addresses are equal; two interfaces receiving on the same local address)
//! make only that router unusable: they are reported by [`Topology::check_router`], which
//! [`Topology::router_config`] runs. As in SCION, a router's underlay addresses matter only to
//! that router, so a file may describe a sibling that could not run with it (SCION's own
//! `router/control/testdata` topology does: router `br1-ff00_0_110-2` has local = remote).
//! An interface may share the router's internal address (that test data's
//! `br1-ff00_0_110-1` does): a router that demultiplexes by destination address can only tell
//! them apart if they are on different network ports, which is the port layout's concern, not
//! the topology's.
//!
//! ```no_run
//! let topo = scion_topology::Topology::load("conf/topology.json")?;
//! # #[cfg(feature = "router-config")] {
//! let config = topo.router_config("br1-ff00_0_110-1", "conf/keys")?;
//! let router = scion_dp::config::Router::new(config)?;
//! # }
//! for ifc in topo.router("br1-ff00_0_110-1")?.interfaces.iter() {
//!     println!("{} local {} remote {}", ifc.id, ifc.underlay.local, ifc.underlay.remote);
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod error;
mod json_keys;
mod keys;
mod model;
mod parse;
#[cfg(feature = "router-config")]
mod router_config;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use idint_wire::{IsdAsn, Svc};

pub use error::{FieldError, TopologyError};
pub use keys::{MAX_KEY_FILE_LEN, MIN_MASTER_LEN, MasterKeys};
pub use model::{BfdSettings, DispatchedPorts, LinkType, parse_duration};

/// Smallest MTU accepted for `mtu` (AS and link), `internal_scion_mtu` and `scion_mtu`, in
/// bytes: the IPv6 minimum link MTU (RFC 8200), which is the smallest value the reference
/// examples use and leaves room for the largest SCION header (1020 bytes) plus a UDP header.
///
/// MTUs are informational here: they are carried into [`AsTopology::mtu`] and
/// [`Interface::mtu`] for tools, but neither scion-dp nor router-dpdk enforces them (SCION's
/// router does not either; end hosts use them for path MTU).
pub const MIN_MTU: u16 = 1280;

/// Which `topology.json` dialect a file is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// scionproto / SCIONLab `topology.json`.
    Reference,
    /// Anapaya appliance `local_topology.json` (one or more ASes).
    Appliance,
}

/// The UDP/IP endpoints of an inter-AS link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Underlay {
    /// This router's end. A `":port"` local address in the file has the unspecified IP of the
    /// remote address's family (bind to any).
    pub local: SocketAddr,
    /// The neighbour router's end.
    pub remote: SocketAddr,
}

/// One inter-AS interface as the file describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interface {
    /// Interface ID (non-zero).
    pub id: u16,
    /// ISD-AS of the neighbour.
    pub neighbor_ia: IsdAsn,
    /// Link type from this AS's point of view.
    pub link_type: LinkType,
    /// The neighbour's interface ID, when given (needed for peering links; never 0).
    pub remote_interface_id: Option<u16>,
    /// Link MTU for SCION packets (headers and payload), when given; at least [`MIN_MTU`].
    /// Informational: not enforced by the data plane.
    pub mtu: Option<u16>,
    /// UDP/IP endpoints.
    pub underlay: Underlay,
    /// The link's `bfd` settings (all unset when the file gives none).
    pub bfd: BfdSettings,
}

/// One border router of an AS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BorderRouter {
    /// Router id (`border_routers` key, or `br<IA>-1` in the appliance format).
    pub id: String,
    /// AS-internal address; its IP is the router's SCION host address.
    pub internal_addr: SocketAddr,
    /// The router's ID-INT node id, when the file gives one: an extension of the format
    /// (`border_routers.<id>.id`, in the appliance format `router.id`) that the ID-INT
    /// collector names the router by. Unique among the routers of an AS.
    pub node_id: Option<u32>,
    /// The interfaces this router owns, sorted by ID.
    pub interfaces: Vec<Interface>,
    /// Conflicts between the addresses of its own links, found while parsing; reported by
    /// [`Topology::check_router`].
    conflicts: Vec<Conflict>,
}

/// A field of a router's own links that conflicts with another (see [`Topology::check_router`]).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Conflict {
    /// Dotted path of the field.
    field: String,
    /// What it conflicts with.
    reason: String,
}

impl BorderRouter {
    /// The interface with this ID, if this router owns it.
    pub fn interface(&self, id: u16) -> Option<&Interface> {
        self.interfaces.iter().find(|i| i.id == id)
    }
}

/// One AS of a topology file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AsTopology {
    /// The AS.
    pub ia: IsdAsn,
    /// Whether it is a core AS.
    pub core: bool,
    /// AS-internal MTU for SCION packets, when given; at least [`MIN_MTU`]. Informational:
    /// not enforced by the data plane.
    pub mtu: Option<u16>,
    /// End-host port range.
    pub dispatched_ports: DispatchedPorts,
    /// Service addresses (first instance of CS and of DS).
    pub services: Vec<(Svc, SocketAddr)>,
    /// Border routers, sorted by id.
    pub routers: Vec<BorderRouter>,
}

/// A loaded topology file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Topology {
    /// The file it was read from (named in errors).
    pub file: PathBuf,
    /// Its dialect.
    pub format: Format,
    /// The ASes it describes (one for the reference format).
    pub ases: Vec<AsTopology>,
}

impl Topology {
    /// Reads and validates a `topology.json` (either dialect).
    pub fn load(path: impl AsRef<Path>) -> Result<Self, TopologyError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| TopologyError::Io {
            file: path.to_path_buf(),
            source,
        })?;
        Self::parse(&text, path)
    }

    /// Parses the JSON text of a topology file; `file` is only used in errors.
    pub fn parse(text: &str, file: impl AsRef<Path>) -> Result<Self, TopologyError> {
        parse::topology(text, file.as_ref())
    }

    /// Every border router id in the file.
    pub fn router_ids(&self) -> impl Iterator<Item = &str> {
        self.ases
            .iter()
            .flat_map(|a| a.routers.iter().map(|r| r.id.as_str()))
    }

    /// The AS and router with this id.
    pub fn find_router(&self, id: &str) -> Result<(&AsTopology, &BorderRouter), TopologyError> {
        for a in &self.ases {
            if let Some(r) = a.routers.iter().find(|r| r.id == id) {
                return Ok((a, r));
            }
        }
        Err(TopologyError::UnknownRouter {
            file: self.file.clone(),
            id: id.to_string(),
            known: self.router_ids().collect::<Vec<_>>().join(", "),
        })
    }

    /// The border router with this id.
    pub fn router(&self, id: &str) -> Result<&BorderRouter, TopologyError> {
        self.find_router(id).map(|(_, r)| r)
    }

    /// Checks that router `id` can run with this file: its internal address has a port, no
    /// interface of its own has equal local and remote underlay addresses, no two of its
    /// interfaces receive on the same local address (an unspecified IP overlaps every IP of
    /// its family with the same port), and the sibling routers it hands packets to have
    /// internal addresses with a port. Other routers' links are not checked: their underlay
    /// matters only to them.
    pub fn check_router(&self, id: &str) -> Result<(), TopologyError> {
        let (asys, r) = self.find_router(id)?;
        let unusable = |field: String, reason: String| TopologyError::Unusable {
            file: self.file.clone(),
            id: id.to_string(),
            field,
            reason,
        };
        if let Some(c) = r.conflicts.first() {
            return Err(unusable(c.field.clone(), c.reason.clone()));
        }
        if let Some(s) = asys
            .routers
            .iter()
            .find(|s| s.id != r.id && s.internal_addr.port() == 0)
        {
            return Err(unusable(
                format!("border_routers.{}.internal_addr", s.id),
                format!(
                    "sibling router {} has internal address {} without a port; this router \
                     hands it the packets of its interfaces",
                    s.id, s.internal_addr
                ),
            ));
        }
        Ok(())
    }
}

/// The SCION name of the `n`-th border router of `ia`: `br1-ff00_0_110-1` for
/// (`1-ff00:0:110`, 1).
pub fn router_name(ia: IsdAsn, n: u32) -> String {
    format!("br{}-{n}", ia.to_string().replace(':', "_"))
}

/// The ISD-AS a SCION router name (`br1-ff00_0_110-1`) refers to, if it has that shape.
pub fn ia_of_router_name(id: &str) -> Option<IsdAsn> {
    let rest = id.strip_prefix("br")?;
    let (ia, n) = rest.rsplit_once('-')?;
    n.parse::<u32>().ok()?;
    ia.replace('_', ":").parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn router_names() {
        let ia: IsdAsn = "1-ff00:0:110".parse().unwrap();
        assert_eq!(router_name(ia, 1), "br1-ff00_0_110-1");
        assert_eq!(ia_of_router_name("br1-ff00_0_110-2"), Some(ia));
        assert_eq!(ia_of_router_name("br1a"), None);
        assert_eq!(ia_of_router_name("br1-ff00_0_110-x"), None);
        assert_eq!(
            ia_of_router_name("br64-559-1"),
            Some("64-559".parse().unwrap())
        );
    }
}
