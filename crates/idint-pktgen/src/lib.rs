//! Generates valid SCION traffic (optionally with ID-INT requests) for one border router
//! configured by `topology.json` + `keys/`, as Ethernet/IP/UDP frames or pcap files.
//!
//! Every packet is built as it arrives at the router under test: transit, crossover,
//! peering, inbound (delivered to a host of the AS), outbound (from a host of the AS) and
//! EPIC-HP, from and to sibling routers where the topology has them. Hop fields carry real
//! MACs (scion-dp's [`HopMac`](scion_dp::hop_mac::HopMac)) with chained SegIDs, the router's
//! own with the forwarding key from its `master0.key`, the other ASes' with their keys
//! (see [`keys`] for where those come from). ID-INT requests are built with idint-wire's
//! [`RequestBuilder`] and signed with the DRKey host-to-host key derived by the drkey crate.
//!
//! ```no_run
//! use idint_pktgen::{Generator, Options};
//! let topo = scion_topology::Topology::load("conf/topology.json")?;
//! let opts = Options::new(1_763_800_000_000_000_000);
//! let mut g = Generator::new(&topo, "br1a", "conf/keys", opts)?;
//! let mut frame = Vec::new();
//! for i in 0..1000 {
//!     let info = g.frame(i, &mut frame)?; // Ethernet frame + what the router must do
//!     # let _ = info;
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod frame;
pub mod keys;
pub mod path;
pub mod scenario;
mod shapes;
pub mod verify;

use std::collections::BTreeMap;
use std::fmt;
use std::io::Write;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::str::FromStr;

use idint_wire::idint::{AggregationMode, Instruction, RequestBuilder, Verifier};
use idint_wire::path::{EpicPathRepr, ScionPathRepr};
use idint_wire::scion::{FlowId, NextHdr, PathType, ScionHeader, ScionRepr};
use idint_wire::udp::{UdpPacket, UdpRepr};
use idint_wire::{HostAddr, IsdAsn};
use scion_dp::config::RouterConfig;
use scion_dp::{Disposition, Ingress};
use scion_topology::{Topology, TopologyError};
use wire_tools::pcap::{LINKTYPE_ETHERNET, PcapWriter};

use crate::keys::KeyRing;
use crate::shapes::{Outcome, Shape, Side};

/// Why generation could not start or a packet could not be built.
#[derive(Debug, thiserror::Error)]
pub enum GenError {
    /// The topology or a key file is unusable.
    #[error(transparent)]
    Topology(#[from] TopologyError),
    /// DRKey derivation failed.
    #[error("DRKey: {0}")]
    Key(String),
    /// The capture given to [`verify::verify_capture`] could not be read as a pcap file.
    #[error("reading the capture: {0}")]
    Capture(#[source] std::io::Error),
    /// The options cannot be satisfied for this configuration.
    #[error("{0}")]
    Options(String),
    /// Writing output failed.
    #[error("{file}: {source}")]
    Io {
        /// The file written.
        file: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

/// A traffic class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// External (or sibling) to external (or sibling) within one segment.
    Transit,
    /// External to external with a segment change (core/child, child/core, child/child).
    Crossover,
    /// Child to peer or peer to child over a peering hop.
    Peering,
    /// External to a host of the local AS.
    In,
    /// A host of the local AS to external.
    Out,
    /// EPIC-HP transit, inbound and outbound (router at the penultimate or last hop, so it
    /// checks the hop validation field).
    Epic,
}

impl Kind {
    /// All kinds.
    pub const ALL: [Kind; 6] = [
        Kind::Transit,
        Kind::Crossover,
        Kind::Peering,
        Kind::In,
        Kind::Out,
        Kind::Epic,
    ];
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Kind::Transit => "transit",
            Kind::Crossover => "crossover",
            Kind::Peering => "peering",
            Kind::In => "in",
            Kind::Out => "out",
            Kind::Epic => "epic",
        })
    }
}

impl FromStr for Kind {
    type Err = String;
    /// Parses a kind name as displayed.
    fn from_str(s: &str) -> Result<Self, String> {
        Kind::ALL
            .into_iter()
            .find(|k| k.to_string() == s.to_ascii_lowercase())
            .ok_or_else(|| {
                format!("unknown kind {s:?} (transit, crossover, peering, in, out, epic)")
            })
    }
}

/// How a deliberately broken packet is broken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Malformation {
    /// The SCION packet is cut to two thirds of its length (header fields unchanged).
    Truncated,
    /// The router's own hop-field MAC has its first byte flipped.
    BadMac,
    /// Every hop field has expired: the path's info-field timestamps are
    /// [`EXPIRED_PATH_AGE_SECS`] before `now` and its hop fields have ExpTime 0 (337.5 s
    /// lifetime), so they expired 3262.5 s before `now`. Nothing else is wrong: the hop-field
    /// MACs are valid for that path and, on an EPIC path, the packet timestamp is fresh and the
    /// hop validation fields are computed from the expired path's MACs.
    Expired,
}

impl fmt::Display for Malformation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Malformation::Truncated => "truncated",
            Malformation::BadMac => "bad-mac",
            Malformation::Expired => "expired",
        })
    }
}

/// Age at `now` of the info-field timestamps of [`Malformation::Expired`] packets, seconds.
/// Recent enough that an EPIC packet timestamp (32 bits of 21 µs, about 25 h after the
/// info-field timestamp) can still express `now`.
pub const EXPIRED_PATH_AGE_SECS: u32 = 3600;

/// Largest SCION packet (common header to the end of the payload) generated, bytes.
pub const MAX_SCION_PACKET: usize = 65_000;

/// Packet size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Size {
    /// UDP payload bytes of the SCION packet.
    Payload(usize),
    /// Whole Ethernet frame bytes (without FCS); the payload fills what the headers leave.
    Frame(usize),
}

/// Which host verifies ID-INT requests (and so which host-to-host key signs the source entry).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VerifierChoice {
    /// The destination host: key K(src AS:src host -> dst AS:dst host).
    Destination,
    /// The source host itself: key K(src AS:src host -> src AS:src host).
    Source,
}

/// ID-INT request parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdIntOptions {
    /// Share of packets (0..=100 %) that carry a request.
    pub percent: u8,
    /// Aggregation modes, used in turn.
    pub modes: Vec<AggregationMode>,
    /// InstF bitmap (0x8 node ID, 0x4 node count, 0x2 ingress, 0x1 egress interface).
    pub inst_bitmap: u8,
    /// Instruction slots.
    pub instructions: [Instruction; 4],
    /// Ask routers to encrypt their entries.
    pub encrypt: bool,
    /// The verifier.
    pub verifier: VerifierChoice,
    /// Telemetry stack space in 4-byte words.
    pub stack_words: u8,
}

impl Default for IdIntOptions {
    /// No requests; when enabled: all four modes in turn, node ID + interfaces, ingress and
    /// egress timestamps, queue length and egress packet count, destination verifier, 16 words.
    fn default() -> Self {
        IdIntOptions {
            percent: 0,
            modes: vec![
                AggregationMode::Off,
                AggregationMode::PerAs,
                AggregationMode::PerBorderRouter,
                AggregationMode::PerBorderRouterAndInternal,
            ],
            inst_bitmap: 0xb,
            instructions: [
                Instruction(0x82),
                Instruction(0x83),
                Instruction(0x4f),
                Instruction(0x8b),
            ],
            encrypt: false,
            verifier: VerifierChoice::Destination,
            stack_words: 16,
        }
    }
}

/// Generation parameters.
#[derive(Debug, Clone)]
pub struct Options {
    /// The router's clock at arrival, Unix nanoseconds: info-field timestamps, hop expiry and
    /// EPIC timestamps are relative to it; pcap timestamps start at it. A packet's ID-INT
    /// source timestamp is its pcap timestamp, whose DRKey epoch keys its source entry.
    pub now_ns: u64,
    /// Kinds to generate (those the topology allows; an empty result is an error).
    pub kinds: Vec<Kind>,
    /// Number of flows (source host and port, destination port and flow ID vary per flow).
    pub flows: u32,
    /// Packet size.
    pub size: Size,
    /// ID-INT requests.
    pub idint: IdIntOptions,
    /// Packets the pcap writers produce (packets `0..count`); malformed ones are spread evenly
    /// over this range.
    pub count: u64,
    /// How many of the `count` packets are malformed (truncated, bad MAC, expired in turn).
    pub malformed: u64,
    /// Age of the info-field timestamps at `now`, seconds.
    pub path_age_secs: u32,
    /// Hop-field ExpTime (lifetime `(1 + ExpTime) * 337.5 s`; 63 = 6 h).
    pub exp_time: u8,
    /// DRKey epoch length, seconds: within SCION's limits
    /// ([`drkey::epoch::MIN_DURATION`]`..=`[`drkey::epoch::MAX_DURATION`], 6 min to 3 days),
    /// checked by [`Generator::new`] whether or not ID-INT is used.
    pub drkey_epoch_secs: u32,
    /// Give hosts outside the local AS IPv6 addresses (else IPv4).
    pub ipv6_hosts: bool,
    /// Gap between pcap timestamps, nanoseconds: packet `i` is stamped `now_ns + i * gap_ns`,
    /// which must stay within pcap's time range (before 2106) for every packet of `count`.
    pub gap_ns: u64,
    /// Keys directories of other ASes (default: deterministic secrets, see [`keys`]).
    pub as_keys: Vec<(IsdAsn, PathBuf)>,
}

impl Options {
    /// Defaults: every kind, 16 flows, 64-byte payloads, no ID-INT, 1000 packets none
    /// malformed, paths 5 minutes old with ExpTime 63, 1-day DRKey epochs, IPv4 hosts, 1 µs gap.
    pub fn new(now_ns: u64) -> Self {
        Options {
            now_ns,
            kinds: Kind::ALL.to_vec(),
            flows: 16,
            size: Size::Payload(64),
            idint: IdIntOptions::default(),
            count: 1000,
            malformed: 0,
            path_age_secs: 300,
            exp_time: 63,
            drkey_epoch_secs: 86_400,
            ipv6_hosts: false,
            gap_ns: 1000,
            as_keys: Vec::new(),
        }
    }
}

/// What the router under test must do with a generated packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// Send on its own link of this interface.
    Forward {
        /// Egress interface.
        ifid: u16,
    },
    /// Hand to the sibling router owning this interface.
    Sibling {
        /// Egress interface.
        ifid: u16,
        /// The sibling's internal address.
        addr: SocketAddr,
    },
    /// Deliver to this underlay address in the local AS.
    Deliver {
        /// Host IP and UDP port.
        addr: SocketAddr,
    },
    /// Not forwarded or delivered (an SCMP error back, or a drop): malformed packets.
    Rejected,
}

impl Expect {
    /// Whether a processor's decision is this expectation.
    pub fn matches(&self, d: &Disposition) -> bool {
        match (*self, *d) {
            (Expect::Forward { ifid }, Disposition::Forward { ifid: got }) => ifid == got,
            (Expect::Sibling { ifid, addr }, Disposition::Sibling { ifid: i, addr: a }) => {
                ifid == i && addr == a
            }
            (Expect::Deliver { addr }, Disposition::Deliver { addr: a }) => addr == a,
            (Expect::Rejected, d) => !matches!(
                d,
                Disposition::Forward { .. }
                    | Disposition::Sibling { .. }
                    | Disposition::Deliver { .. }
            ),
            _ => false,
        }
    }
}

impl fmt::Display for Expect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expect::Forward { ifid } => write!(f, "forward {ifid}"),
            Expect::Sibling { ifid, addr } => write!(f, "sibling {ifid} {addr}"),
            Expect::Deliver { addr } => write!(f, "deliver {addr}"),
            Expect::Rejected => f.write_str("rejected"),
        }
    }
}

/// Facts about one generated packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PacketInfo {
    /// Packet index.
    pub index: u64,
    /// Traffic class.
    pub kind: Kind,
    /// Index of the shape (kind, ingress, egress, direction) it was built from.
    pub shape: usize,
    /// Where it arrives at the router.
    pub ingress: Ingress,
    /// Underlay source (IP, UDP port).
    pub underlay_src: SocketAddr,
    /// Underlay destination (IP, UDP port).
    pub underlay_dst: SocketAddr,
    /// Whether it carries an ID-INT request.
    pub idint: bool,
    /// How it was broken, if it was.
    pub malformed: Option<Malformation>,
    /// What the router must do.
    pub expect: Expect,
}

/// Counts of a generation run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    /// Packets written.
    pub packets: u64,
    /// Bytes of frames written.
    pub bytes: u64,
    /// Valid packets per kind.
    pub per_kind: BTreeMap<Kind, u64>,
    /// Malformed packets per malformation.
    pub malformed: BTreeMap<Malformation, u64>,
    /// Packets with an ID-INT request.
    pub idint: u64,
}

impl Summary {
    /// Adds one packet.
    pub fn add(&mut self, info: &PacketInfo, frame_len: usize) {
        self.packets += 1;
        self.bytes += frame_len as u64;
        match info.malformed {
            Some(m) => *self.malformed.entry(m).or_default() += 1,
            None => *self.per_kind.entry(info.kind).or_default() += 1,
        }
        self.idint += u64::from(info.idint);
    }
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} packets, {} bytes;", self.packets, self.bytes)?;
        for (k, n) in &self.per_kind {
            write!(f, " {k} {n}")?;
        }
        for (m, n) in &self.malformed {
            write!(f, " {m} {n}")?;
        }
        write!(f, "; ID-INT {}", self.idint)
    }
}

/// A prepared shape: paths built once (MACs computed), addresses resolved.
struct Prepared {
    shape: Shape,
    path: ScionPathRepr,
    expired: ScionPathRepr,
    full_macs: Vec<[u8; 16]>,
    /// The full MACs of `expired` (its EPIC hop validation fields are keyed with them).
    expired_full_macs: Vec<[u8; 16]>,
    curr_hf: usize,
    /// Underlay of the arrival; `None` source = the sending local host.
    underlay_src: Option<SocketAddr>,
    underlay_dst: SocketAddr,
}

/// The traffic generator for one router.
pub struct Generator {
    opts: Options,
    config: RouterConfig,
    shapes: Vec<Prepared>,
    keys: KeyRing,
    pattern: Vec<u8>,
    scion: Vec<u8>,
    /// Longest SCION packet (for size checks).
    max_scion: usize,
}

impl fmt::Debug for Generator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Generator")
            .field("local_ia", &self.config.local_ia)
            .field("shapes", &self.shapes.len())
            .finish_non_exhaustive()
    }
}

const EPIC_PREFIX: usize = idint_wire::path::epic::EPIC_PREFIX_LEN;

impl Generator {
    /// Prepares the traffic of router `router_id` of `topology` with its keys in `keys_dir`.
    pub fn new(
        topology: &Topology,
        router_id: &str,
        keys_dir: impl AsRef<Path>,
        opts: Options,
    ) -> Result<Self, GenError> {
        let own = scion_topology::MasterKeys::load(keys_dir)?;
        let config = topology.router_config_with_key(router_id, own.forwarding_key())?;
        let (asys, me) = topology.find_router(router_id)?;
        let mut keys = KeyRing::new(opts.drkey_epoch_secs);
        keys.insert(config.local_ia, &own.master0);
        for (ia, dir) in &opts.as_keys {
            if *ia == config.local_ia {
                return Err(GenError::Options(format!(
                    "{ia} is the router's own AS; its keys come from the router's keys directory"
                )));
            }
            keys.insert_dir(*ia, dir)?;
        }
        if opts.flows == 0 {
            return Err(GenError::Options("--flows must be at least 1".into()));
        }
        if opts.malformed > opts.count {
            return Err(GenError::Options(format!(
                "{} malformed packets asked for but only {} packets in total",
                opts.malformed, opts.count
            )));
        }
        if opts.idint.percent > 100 {
            return Err(GenError::Options("ID-INT share must be 0..=100 %".into()));
        }
        if opts.idint.percent > 0 && opts.idint.modes.is_empty() {
            return Err(GenError::Options("no ID-INT aggregation mode given".into()));
        }
        check_drkey_epoch(opts.drkey_epoch_secs).map_err(GenError::Options)?;
        // Packet i is stamped now + i * gap: the last one must not overflow or leave pcap's
        // 32-bit seconds.
        let last_ts = opts
            .count
            .saturating_sub(1)
            .checked_mul(opts.gap_ns)
            .and_then(|d| d.checked_add(opts.now_ns))
            .filter(|t| t / 1_000_000_000 <= u64::from(u32::MAX));
        if last_ts.is_none() {
            return Err(GenError::Options(format!(
                "--gap-ns {} with {} packets from --now ({} ns): the last pcap timestamp would \
                 be beyond 2106 (pcap time ends at 2^32 s)",
                opts.gap_ns, opts.count, opts.now_ns
            )));
        }
        let mut sides = Vec::new();
        for r in &asys.routers {
            for i in &r.interfaces {
                sides.push(Side {
                    id: i.id,
                    link: i.link_type.into(),
                    neighbor: i.neighbor_ia,
                    remote_if: i.remote_interface_id.unwrap_or(i.id),
                    sibling: (r.id != me.id).then_some(r.internal_addr),
                });
            }
        }
        sides.sort_by_key(|s| s.id);
        let list = shapes::enumerate(config.local_ia, &sides, &opts.kinds);
        if list.is_empty() {
            return Err(GenError::Options(format!(
                "router {router_id}: its interfaces allow none of the kinds {}",
                opts.kinds
                    .iter()
                    .map(Kind::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        let now_s = opts.now_ns / 1_000_000_000;
        let ts = u32::try_from(now_s.saturating_sub(u64::from(opts.path_age_secs)))
            .map_err(|_| GenError::Options("--now is beyond 2106".into()))?;
        let expired_ts = match now_s.checked_sub(u64::from(EXPIRED_PATH_AGE_SECS)) {
            Some(t) => {
                u32::try_from(t).map_err(|_| GenError::Options("--now is beyond 2106".into()))?
            }
            None if opts.malformed > 0 => {
                return Err(GenError::Options(format!(
                    "--now {now_s} s is too early for expired paths (they are stamped \
                     {EXPIRED_PATH_AGE_SECS} s before --now)"
                )));
            }
            // Not used without malformed packets.
            None => 0,
        };
        let life = (1 + u64::from(opts.exp_time)) * 337_500_000_000;
        if u64::from(ts) * 1_000_000_000 + life < opts.now_ns {
            return Err(GenError::Options(format!(
                "paths {} s old with ExpTime {} are already expired",
                opts.path_age_secs, opts.exp_time
            )));
        }
        // Unexpired paths are at most 24 h old, so EpicTS (21 µs units, 32 bits: ~25 h) fits.
        let mut shapes = Vec::new();
        for (n, shape) in list.into_iter().enumerate() {
            let salt = n as u16;
            let built = path::build(&shape.segs, shape.pos, ts, opts.exp_time, salt, &mut keys);
            let expired = path::build(&shape.segs, shape.pos, expired_ts, 0, salt, &mut keys);
            let (underlay_src, underlay_dst) = match shape.ingress {
                Ingress::External(id) => {
                    let u = me
                        .interface(id)
                        .map(|i| i.underlay)
                        .ok_or_else(|| GenError::Options(format!("interface {id} not found")))?;
                    let dst = if u.local.ip().is_unspecified() {
                        SocketAddr::new(config.internal_addr.ip(), u.local.port())
                    } else {
                        u.local
                    };
                    if dst.is_ipv4() != u.remote.is_ipv4() {
                        // Only when the local underlay has no IP: the topology checks that a
                        // link's two ends have one family.
                        return Err(GenError::Options(format!(
                            "interface {id}: its local underlay {} has no local IP, and the \
                             router's internal address {} (used instead) is not of the link's \
                             IP family",
                            u.local, config.internal_addr
                        )));
                    }
                    (Some(u.remote), dst)
                }
                Ingress::Sibling(id) => {
                    let addr = asys
                        .routers
                        .iter()
                        .find(|r| r.interface(id).is_some())
                        .map(|r| r.internal_addr)
                        .ok_or_else(|| GenError::Options(format!("interface {id} not found")))?;
                    if addr.is_ipv4() != config.internal_addr.is_ipv4() {
                        return Err(GenError::Options(format!(
                            "sibling of interface {id} has a different IP family"
                        )));
                    }
                    (Some(addr), config.internal_addr)
                }
                Ingress::Internal => (None, config.internal_addr),
            };
            shapes.push(Prepared {
                shape,
                path: built.repr,
                expired: expired.repr,
                full_macs: built.full_macs,
                expired_full_macs: expired.full_macs,
                curr_hf: built.curr_hf,
                underlay_src,
                underlay_dst,
            });
        }
        let mut g = Generator {
            opts,
            config,
            shapes,
            keys,
            pattern: (0..=255u8).cycle().take(9000).collect(),
            scion: Vec::with_capacity(9000),
            max_scion: 0,
        };
        g.check_sizes()?;
        Ok(g)
    }

    /// The secrets of every AS the generator knows (to verify what it generated).
    pub fn keys_mut(&mut self) -> &mut KeyRing {
        &mut self.keys
    }

    /// The router configuration the traffic is for.
    pub fn router_config(&self) -> &RouterConfig {
        &self.config
    }

    /// Number of distinct shapes (kind, ingress, egress, direction) in rotation.
    pub fn shape_count(&self) -> usize {
        self.shapes.len()
    }

    /// A one-line description of shape `i` (e.g. `transit 2(child)->1(parent) C=0`).
    pub fn shape_label(&self, i: usize) -> Option<&str> {
        self.shapes.get(i).map(|p| p.shape.label.as_str())
    }

    /// Checks that the ID-INT request can be built and every shape fits the requested size
    /// (with and without ID-INT).
    fn check_sizes(&mut self) -> Result<(), GenError> {
        if self.opts.idint.percent > 0 {
            let req = self.request(0);
            let mut scratch = vec![0u8; req.hbh_len()];
            req.emit_hbh(&mut scratch, 17).map_err(|e| {
                GenError::Options(format!(
                    "ID-INT request with a {}-word stack cannot be built: {e}",
                    self.opts.idint.stack_words
                ))
            })?;
        }
        let mut max = 0;
        for p in &self.shapes {
            for idint in [false, true] {
                if idint && self.opts.idint.percent == 0 {
                    continue;
                }
                let headers = self.header_bytes(p, idint);
                let v6 = p.underlay_dst.is_ipv6();
                match self.opts.size {
                    Size::Payload(n) => {
                        let total = headers
                            .checked_add(n)
                            .filter(|&t| t <= MAX_SCION_PACKET)
                            .ok_or_else(|| {
                                GenError::Options(format!(
                                    "payload of {n} bytes (--payload) too large: with {headers} \
                                     bytes of headers ({}{}) packets exceed {MAX_SCION_PACKET} bytes",
                                    p.shape.label,
                                    if idint { " with ID-INT" } else { "" }
                                ))
                            })?;
                        max = max.max(total);
                    }
                    Size::Frame(f) => {
                        let need = headers + frame::overhead(v6);
                        if f < need {
                            return Err(GenError::Options(format!(
                                "frame size {f} too small: {} needs {need} bytes of headers{}",
                                p.shape.label,
                                if idint { " with ID-INT" } else { "" }
                            )));
                        }
                        max = max.max(f - frame::overhead(v6));
                    }
                }
            }
        }
        if max > MAX_SCION_PACKET {
            return Err(GenError::Options(format!(
                "packets of {max} bytes are too large (at most {MAX_SCION_PACKET})"
            )));
        }
        if self.pattern.len() < max {
            self.pattern = (0..=255u8).cycle().take(max).collect();
        }
        self.max_scion = max;
        Ok(())
    }

    /// SCION header + path + HBH + UDP header bytes (hosts are fixed per shape family).
    fn header_bytes(&self, p: &Prepared, idint: bool) -> usize {
        let host_len = |ia: IsdAsn| -> usize {
            if ia == self.config.local_ia {
                if self.config.internal_addr.is_ipv4() {
                    4
                } else {
                    16
                }
            } else if self.opts.ipv6_hosts {
                16
            } else {
                4
            }
        };
        let path_len = p.path.buffer_len() + if p.shape.epic { EPIC_PREFIX } else { 0 };
        let hbh = if idint { self.request(0).hbh_len() } else { 0 };
        12 + 16 + host_len(p.shape.src_ia) + host_len(p.shape.dst_ia) + path_len + hbh + 8
    }

    fn request(&self, i: u64) -> RequestBuilder {
        let o = &self.opts.idint;
        let mode = o.modes[(i as usize / 7) % o.modes.len().max(1)];
        RequestBuilder {
            encrypt: o.encrypt,
            mode,
            verifier: match o.verifier {
                VerifierChoice::Destination => Verifier::Destination,
                VerifierChoice::Source => Verifier::Source,
            },
            inst_bitmap: o.inst_bitmap,
            instructions: o.instructions,
            stack_len_words: o.stack_words,
            // 48-bit ns timestamp: unique per (source, index). Wrapping is harmless (only the
            // low 48 bits are sent), and `i` may be any index a caller asks for.
            source_timestamp: self.source_time_ns(i) & ((1 << 48) - 1),
            source_port: (i & 0xffff) as u16,
            ..RequestBuilder::new(0)
        }
    }

    /// When packet `i` is sent (its pcap timestamp), Unix ns: its ID-INT source timestamp,
    /// which also selects the DRKey epoch of its source entry (`idint.md` §10, §11).
    fn source_time_ns(&self, i: u64) -> u64 {
        self.opts
            .now_ns
            .wrapping_add(i.wrapping_mul(self.opts.gap_ns))
    }

    fn host(&self, ia: IsdAsn, flow: u32) -> HostAddr {
        if ia == self.config.local_ia {
            return match self.config.internal_addr.ip() {
                IpAddr::V4(v) => {
                    let o = v.octets();
                    HostAddr::V4(Ipv4Addr::new(o[0], o[1], o[2], 10 + (flow % 240) as u8))
                }
                IpAddr::V6(v) => {
                    let mut o = v.octets();
                    o[14] = 0x10 | ((flow >> 8) & 0xf) as u8;
                    o[15] = flow as u8;
                    HostAddr::V6(Ipv6Addr::from(o))
                }
            };
        }
        let tag = (ia.to_u64() as u16) ^ (ia.to_u64() >> 48) as u16;
        if self.opts.ipv6_hosts {
            let t = tag.to_be_bytes();
            let f = flow.to_be_bytes();
            HostAddr::V6(Ipv6Addr::from([
                0xfd,
                0,
                0,
                0,
                t[0],
                t[1],
                0,
                0,
                0,
                0,
                0,
                0,
                f[0],
                f[1],
                f[2],
                f[3] | 1,
            ]))
        } else {
            HostAddr::V4(Ipv4Addr::new(
                172,
                16 + (tag % 16) as u8,
                ((flow / 250) % 256) as u8,
                (flow % 250) as u8 + 1,
            ))
        }
    }

    /// Whether packet `i` is malformed, and how.
    pub fn malformation(&self, i: u64) -> Option<Malformation> {
        let (m, n) = (self.opts.malformed, self.opts.count);
        if m == 0 || n == 0 || i >= n {
            return None;
        }
        let before = (u128::from(i) * u128::from(m) / u128::from(n)) as u64;
        let after = (u128::from(i + 1) * u128::from(m) / u128::from(n)) as u64;
        (after > before).then_some(match before % 3 {
            0 => Malformation::Truncated,
            1 => Malformation::BadMac,
            _ => Malformation::Expired,
        })
    }

    /// Builds SCION packet `i` (common header first) into `out`.
    pub fn scion_packet(&mut self, i: u64, out: &mut Vec<u8>) -> Result<PacketInfo, GenError> {
        let n = self.shapes.len() as u64;
        let shape_ix = (i % n) as usize;
        let flow = ((i / n) % u64::from(self.opts.flows)) as u32;
        let malformed = self.malformation(i);
        let idint = self.opts.idint.percent > 0
            && ((i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40) % 100)
                < u64::from(self.opts.idint.percent);
        let (src_ia, dst_ia) = {
            let s = &self.shapes[shape_ix].shape;
            (s.src_ia, s.dst_ia)
        };
        let src_host = self.host(src_ia, flow);
        let dst_host = self.host(dst_ia, flow.wrapping_mul(7).wrapping_add(3));
        let src_port = 40_000 + (flow % 20_000) as u16;
        let dst_port = 30_100 + (flow % 500) as u16;
        let req = self.request(i);
        let p = &self.shapes[shape_ix];
        let hbh_len = if idint { req.hbh_len() } else { 0 };
        let epic = p.shape.epic;
        let path_len = p.path.buffer_len() + if epic { EPIC_PREFIX } else { 0 };
        let host_len = src_host.len() + dst_host.len();
        let hl = 12 + 16 + host_len + path_len;
        let payload = match self.opts.size {
            Size::Payload(n) => n,
            Size::Frame(f) => {
                let v6 = p.underlay_dst.is_ipv6();
                f.saturating_sub(frame::overhead(v6) + hl + hbh_len + 8)
            }
        };
        let total = hl + hbh_len + 8 + payload;
        let scion = ScionRepr {
            version: 0,
            traffic_class: 0,
            flow_id: FlowId::from_u20(
                (flow.wrapping_add(1).wrapping_mul(2_654_435_761) & 0xf_ffff).max(1),
            ),
            next_header: if idint {
                NextHdr::HopByHop
            } else {
                NextHdr::Udp
            },
            path_type: if epic {
                PathType::Epic
            } else {
                PathType::Scion
            },
            path_len,
            payload_len: (hbh_len + 8 + payload) as u16,
            dst_ia,
            src_ia,
            dst_host,
            src_host,
        };
        out.clear();
        out.resize(total, 0);
        let bad = |e: idint_wire::Error| GenError::Options(format!("building packet {i}: {e}"));
        scion.emit(out).map_err(bad)?;
        let (path, full_macs) = if malformed == Some(Malformation::Expired) {
            (&p.expired, &p.expired_full_macs)
        } else {
            (&p.path, &p.full_macs)
        };
        let at = scion.address_end();
        let info0_ts = path.infos[0].timestamp;
        let epic_ts = if epic {
            let age_ns = self
                .opts
                .now_ns
                .saturating_sub(u64::from(info0_ts) * 1_000_000_000);
            u32::try_from((age_ns / scion_dp::epic::EPIC_TS_UNIT_NS).saturating_sub(1)).map_err(
                |_| {
                    GenError::Options(format!(
                        "packet {i}: EPIC timestamp out of range: the path's info timestamp is \
                         {} s before --now, EPIC can express at most ~25 h",
                        age_ns / 1_000_000_000
                    ))
                },
            )?
        } else {
            0
        };
        if epic {
            EpicPathRepr {
                epic_ts,
                counter: i as u32,
                phvf: [0; 4],
                lhvf: [0; 4],
                scion: *path,
            }
            .emit(&mut out[at..])
            .map_err(bad)?;
        } else {
            path.emit(&mut out[at..]).map_err(bad)?;
        }
        if idint {
            let sent_s = self.source_time_ns(i) / 1_000_000_000;
            let key = match self.opts.idint.verifier {
                VerifierChoice::Destination => self
                    .keys
                    .idint_host_key(src_ia, src_host, dst_ia, dst_host, sent_s)?,
                VerifierChoice::Source => self
                    .keys
                    .idint_host_key(src_ia, src_host, src_ia, src_host, sent_s)?,
            };
            req.emit_signed(&mut out[hl..], 17, key).map_err(bad)?;
        }
        let l4 = hl + hbh_len;
        UdpRepr {
            src_port,
            dst_port,
            payload_len: payload as u16,
            checksum: 0,
        }
        .emit(&mut out[l4..])
        .map_err(bad)?;
        out[l4 + 8..].copy_from_slice(&self.pattern[..payload]);
        {
            let (hdr, rest) = out.split_at_mut(l4);
            let h = ScionHeader::new_unchecked(&hdr[..]);
            UdpPacket::new_unchecked(rest).fill_checksum(&h);
        }
        if epic {
            let input = scion_dp::epic::HvfInput {
                info0_timestamp: info0_ts,
                pkt_id: (u64::from(epic_ts) << 32) | u64::from(i as u32),
                src_ia,
                src_host: &src_host,
                payload_len: scion.payload_len,
            };
            let h = full_macs.len();
            let phvf = scion_dp::epic::hvf(&full_macs[h - 2], &input);
            let lhvf = scion_dp::epic::hvf(&full_macs[h - 1], &input);
            out[at + 8..at + 12].copy_from_slice(&phvf);
            out[at + 12..at + 16].copy_from_slice(&lhvf);
        }
        let expect = if malformed.is_some() {
            Expect::Rejected
        } else {
            match p.shape.outcome {
                Outcome::Forward(ifid) => Expect::Forward { ifid },
                Outcome::Sibling(ifid, addr) => Expect::Sibling { ifid, addr },
                Outcome::Deliver => {
                    let ip = match dst_host {
                        HostAddr::V4(a) => IpAddr::V4(a),
                        HostAddr::V6(a) => IpAddr::V6(a),
                        _ => return Err(GenError::Options("non-IP local host".into())),
                    };
                    Expect::Deliver {
                        addr: SocketAddr::new(
                            ip,
                            self.config.dispatched_ports.underlay_port(dst_port),
                        ),
                    }
                }
            }
        };
        match malformed {
            Some(Malformation::BadMac) => {
                let num_inf = path.meta.num_infos();
                let off =
                    at + if epic { EPIC_PREFIX } else { 0 } + 4 + 8 * num_inf + 12 * p.curr_hf + 6;
                out[off] ^= 0xff;
            }
            Some(Malformation::Truncated) => out.truncate(total * 2 / 3),
            _ => {}
        }
        let underlay_src = p.underlay_src.unwrap_or_else(|| {
            let ip = match src_host {
                HostAddr::V4(a) => IpAddr::V4(a),
                HostAddr::V6(a) => IpAddr::V6(a),
                _ => self.config.internal_addr.ip(),
            };
            SocketAddr::new(ip, src_port)
        });
        Ok(PacketInfo {
            index: i,
            kind: p.shape.kind,
            shape: shape_ix,
            ingress: p.shape.ingress,
            underlay_src,
            underlay_dst: p.underlay_dst,
            idint,
            malformed,
            expect,
        })
    }

    /// Builds packet `i` as an Ethernet/IP/UDP frame into `out`.
    pub fn frame(&mut self, i: u64, out: &mut Vec<u8>) -> Result<PacketInfo, GenError> {
        let mut scion = std::mem::take(&mut self.scion);
        let result = self.scion_packet(i, &mut scion).and_then(|info| {
            if frame::write_frame(out, info.underlay_src, info.underlay_dst, &scion) {
                Ok(info)
            } else {
                Err(GenError::Options(format!(
                    "packet {i}: underlay source and destination of different IP families"
                )))
            }
        });
        self.scion = scion;
        result
    }

    /// The pcap timestamp of packet `i`: `now_ns + i * gap_ns` (checked by [`Generator::new`]
    /// for every packet of `count`; an error past that).
    fn pcap_timestamp_ns(&self, i: u64) -> Result<u64, std::io::Error> {
        i.checked_mul(self.opts.gap_ns)
            .and_then(|d| d.checked_add(self.opts.now_ns))
            .ok_or_else(|| {
                std::io::Error::other(format!("packet {i}: pcap timestamp overflows 64 bits"))
            })
    }

    /// Writes packets `0..Options::count` to one pcap (Ethernet link type); `on_packet` sees
    /// each packet's facts.
    pub fn write_pcap<W: Write>(
        &mut self,
        w: W,
        mut on_packet: impl FnMut(&PacketInfo),
    ) -> Result<(W, Summary), std::io::Error> {
        let mut pw = PcapWriter::new(w, LINKTYPE_ETHERNET)?;
        let mut frame = Vec::with_capacity(self.max_scion + 64);
        let mut sum = Summary::default();
        for i in 0..self.opts.count {
            let info = self
                .frame(i, &mut frame)
                .map_err(|e| std::io::Error::other(e.to_string()))?;
            pw.write(self.pcap_timestamp_ns(i)?, &frame)?;
            sum.add(&info, frame.len());
            on_packet(&info);
        }
        Ok((pw.finish()?, sum))
    }

    /// Writes packets `0..Options::count` to one pcap per ingress in `dir`: `ext-<ifid>.pcap`,
    /// `sibling-<ifid>.pcap` (arriving from the sibling owning `ifid`), `internal.pcap`.
    pub fn write_pcaps_by_ingress(
        &mut self,
        dir: &Path,
        mut on_packet: impl FnMut(&PacketInfo),
    ) -> Result<Summary, GenError> {
        let io = |file: &Path| {
            let file = file.to_path_buf();
            move |source| GenError::Io { file, source }
        };
        std::fs::create_dir_all(dir).map_err(io(dir))?;
        let mut writers: BTreeMap<String, PcapWriter<std::io::BufWriter<std::fs::File>>> =
            BTreeMap::new();
        let mut frame = Vec::with_capacity(self.max_scion + 64);
        let mut sum = Summary::default();
        for i in 0..self.opts.count {
            let info = self.frame(i, &mut frame)?;
            let name = ingress_file_name(info.ingress);
            let path = dir.join(&name);
            if !writers.contains_key(&name) {
                let f = std::fs::File::create(&path).map_err(io(&path))?;
                let w = PcapWriter::new(std::io::BufWriter::new(f), LINKTYPE_ETHERNET)
                    .map_err(io(&path))?;
                writers.insert(name.clone(), w);
            }
            if let Some(w) = writers.get_mut(&name) {
                let ts = self.pcap_timestamp_ns(i).map_err(io(&path))?;
                w.write(ts, &frame).map_err(io(&path))?;
            }
            sum.add(&info, frame.len());
            on_packet(&info);
        }
        for (name, w) in writers {
            w.finish().map_err(io(&dir.join(name)))?;
        }
        Ok(sum)
    }
}

/// Checks a DRKey epoch length (`--drkey-epoch`, seconds) against SCION's limits; the error
/// names the option and the limits.
pub fn check_drkey_epoch(secs: u32) -> Result<(), String> {
    let (min, max) = (drkey::epoch::MIN_DURATION, drkey::epoch::MAX_DURATION);
    if (min..=max).contains(&secs) {
        Ok(())
    } else {
        Err(format!(
            "--drkey-epoch {secs}: a DRKey epoch lasts {min}..={max} s (6 minutes to 3 days, \
             SCION's limits)"
        ))
    }
}

/// The per-ingress pcap file name: `ext-<ifid>.pcap`, `sibling-<ifid>.pcap`, `internal.pcap`.
pub fn ingress_file_name(ingress: Ingress) -> String {
    match ingress {
        Ingress::External(id) => format!("ext-{id}.pcap"),
        Ingress::Sibling(id) => format!("sibling-{id}.pcap"),
        Ingress::Internal => "internal.pcap".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_parse_and_print() {
        for k in Kind::ALL {
            assert_eq!(k.to_string().parse::<Kind>().unwrap(), k);
        }
        assert!("sideways".parse::<Kind>().is_err());
        assert_eq!("EPIC".parse::<Kind>().unwrap(), Kind::Epic);
    }

    #[test]
    fn expectations_match_dispositions() {
        let a: SocketAddr = "10.0.0.1:1".parse().unwrap();
        assert!(Expect::Forward { ifid: 2 }.matches(&Disposition::Forward { ifid: 2 }));
        assert!(!Expect::Forward { ifid: 2 }.matches(&Disposition::Forward { ifid: 3 }));
        assert!(Expect::Deliver { addr: a }.matches(&Disposition::Deliver { addr: a }));
        assert!(!Expect::Deliver { addr: a }.matches(&Disposition::Forward { ifid: 3 }));
        assert!(Expect::Rejected.matches(&Disposition::Bfd));
        assert!(!Expect::Rejected.matches(&Disposition::Sibling { ifid: 1, addr: a }));
    }

    /// The shared router_benchmark example (AS 1-ff00:0:1, router br1a).
    fn example() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../testdata/scion/config_examples/router_benchmark")
    }

    #[test]
    fn expired_epic_packets_are_expired_and_nothing_else() {
        use idint_wire::path::EpicPathRepr;
        use scion_dp::epic::{HvfInput, timestamp_fresh, verify_hvf};

        let now = 1_763_800_000_123_000_000;
        let topo = Topology::load(example().join("topology.json")).unwrap();
        let keys = example().join("keys");
        let mut o = Options::new(now);
        o.kinds = vec![Kind::Epic];
        o.count = 60;
        o.malformed = 60;
        let mut g = Generator::new(&topo, "br1a", &keys, o).unwrap();
        let router =
            scion_dp::config::Router::new(topo.router_config("br1a", &keys).unwrap()).unwrap();
        let mut proc = scion_dp::Processor::new(&router);
        let mut pkt = Vec::new();
        let mut expired = 0;
        for i in 0..60 {
            // Used to fail: the EPIC timestamp was computed against a 2-day-old path.
            let info = g.scion_packet(i, &mut pkt).unwrap();
            if info.malformed != Some(Malformation::Expired) {
                continue;
            }
            expired += 1;
            let h = ScionHeader::new_checked(&pkt[..]).unwrap();
            let epic = EpicPathRepr::parse(h.path_bytes()).unwrap();
            let info0 = epic.scion.infos[0].timestamp;
            assert!(timestamp_fresh(info0, epic.epic_ts, now), "packet {i}");
            // The HVFs are keyed with the full MACs of the hop fields in the packet.
            let full = &g.shapes[info.shape].expired_full_macs;
            let n = full.len();
            assert_eq!(epic.scion.hops[n - 2].mac, full[n - 2][..6]);
            assert_eq!(epic.scion.hops[n - 1].mac, full[n - 1][..6]);
            let src_host = h.src_host();
            let input = HvfInput {
                info0_timestamp: info0,
                pkt_id: (u64::from(epic.epic_ts) << 32) | u64::from(epic.counter),
                src_ia: h.src_ia(),
                src_host: &src_host,
                payload_len: h.payload_len(),
            };
            assert!(verify_hvf(&full[n - 2], &input, &epic.phvf), "packet {i}");
            assert!(verify_hvf(&full[n - 1], &input, &epic.lhvf), "packet {i}");
            // And the router objects to the expiry.
            let mut buf = pkt.clone();
            buf.resize(4096, 0);
            let d = proc.process(&mut buf, pkt.len(), info.ingress, now);
            assert!(
                matches!(
                    d,
                    Disposition::Reply {
                        scmp: scion_dp::ScmpReason::PathExpired,
                        ..
                    }
                ),
                "packet {i}: {d:?}"
            );
        }
        assert_eq!(expired, 20);
    }

    #[test]
    fn overflowing_options_are_refused() {
        let topo = Topology::load(example().join("topology.json")).unwrap();
        let keys = example().join("keys");
        let now = 1_763_800_000_000_000_000;
        let refused = |o: Options| match Generator::new(&topo, "br1a", &keys, o) {
            Err(GenError::Options(m)) => m,
            other => panic!("expected an options error, got {other:?}"),
        };
        let mut o = Options::new(now);
        o.size = Size::Payload(usize::MAX);
        let m = refused(o);
        assert!(m.contains("--payload") && m.contains("too large"), "{m}");
        let mut o = Options::new(now);
        o.gap_ns = u64::MAX;
        let m = refused(o);
        assert!(m.contains("--gap-ns") && m.contains("2106"), "{m}");
        // Within u64 but beyond pcap's 32-bit seconds.
        let mut o = Options::new(now);
        o.gap_ns = 3_000_000_000_000_000_000;
        o.count = 2;
        assert!(refused(o).contains("--gap-ns"));
        let mut o = Options::new(now);
        o.drkey_epoch_secs = 0;
        assert!(refused(o).contains("--drkey-epoch 0"));
        // The last allowed timestamp is fine, and timestamps never run backwards.
        let mut o = Options::new(now);
        o.count = 3;
        o.gap_ns = (u64::from(u32::MAX) * 1_000_000_000 - now) / 2;
        let mut g = Generator::new(&topo, "br1a", &keys, o).unwrap();
        let (bytes, _) = g.write_pcap(Vec::new(), |_| {}).unwrap();
        let mut r = wire_tools::pcap::PcapReader::new(&bytes[..]).unwrap();
        let mut last = 0;
        while let Some(rec) = r.next_record().unwrap() {
            assert!(rec.timestamp_ns >= last);
            last = rec.timestamp_ns;
        }
    }
}
