//! The router's configuration: a TOML file naming the SCION `topology.json` (reference or
//! appliance format), the keys directory, EAL arguments, the mapping of SCION interfaces and
//! the internal network onto DPDK ports, and static next-hop MAC addresses.
//!
//! ```toml
//! topology = "topology.json"        # relative paths are relative to this file
//! keys = "keys"                     # master0.key (hop-field key, DRKey secret)
//! router_id = "br1-ff00_0_110-1"
//! eal = ["--no-huge", "-m", "256", "--no-pci", "--no-shconf", "-l", "0-1",
//!        "--vdev=net_pcap0,rx_pcap=in.pcap,tx_pcap=out.pcap"]
//!                                   # no -h/--help/--log-level=help; -l/-c: >= 2 lcores, CPUs
//!                                   # of this machine (see crate::eal_args)
//!
//! [dataplane]                       # all optional
//! distribution = "auto"             # "queues" (RSS), "software" (distributor lcore) or auto
//! mbufs = 8191                      # >= 512 and >= what the configuration pins
//!                                   # (default: sized from that, at least 8191)
//! rx_desc = 512                     # power of two in 32 ..= 4096
//! tx_desc = 512
//! io_only = false                   # measurement aid (cargo feature `measurement-aids`,
//!                                   # refused by other builds): frames leave by the next port
//!                                   # untouched; [idint], [export] and [drkey] are refused with it
//! idint_lower_bound = "off"         # measurement aid (same feature): "sealed" / "unsealed"
//!                                   # ID-INT entries from a template learned from the first
//!                                   # packet (scion_dp::lower_bound)
//! neighbor_refresh_secs = 60        # ARP/NDP-learned MACs: re-asked from this age on (>= 1)
//! neighbor_expire_secs = 300        # ... and forgotten from this age on (> refresh)
//! idle_sleep_us = 100               # 0 ..= 10000: longest pause of an idle worker between
//!                                   # polls (0: pure busy polling)
//! scmp_rate = 1000                  # 0 ..= 1000000: SCMP error replies per second and
//!                                   # worker after the burst (0: none after the burst)
//! scmp_burst = 100                  # 0 ..= 100000: replies a worker sends at once
//!
//! [drkey]
//! epoch_secs = 86400                # 360 ..= 259200
//! cache_keys = 4096                 # ID-INT verifier keys cached per worker (4-way sets)
//!
//! [idint]
//! node_id = 1
//! power_w = 180                     # configured energy figures (optional)
//! energy_per_packet_nj = 900
//! co2_per_packet_pg = 120
//!
//! [export]                          # optional: ID-INT reports to a collector
//! collector = "127.0.0.1:4740"      # UDP unicast IP:port (not port 0, unspecified, broadcast or
//!                                   # multicast)
//! router_number = 1
//! max_reports = 32                  # 1 ..= 1024 reports per batch
//! max_bytes = 1400                  # 512 ..= 65000 bytes per datagram
//! flush_ms = 50                     # 1 ..= 10000: longest wait before a partial batch is sent
//!
//! [probes]                          # optional: infrastructure-mode probes (crate::probes)
//! paths = "probe-paths.toml"        # the probed paths (format: docs/router.md)
//! interval_ms = 1000                # 10 ..= 3600000 per path
//! instructions = [0x82, 0x83, 0x4f, 0x4d]  # up to 4 instruction codes
//! bitmap = 0x0b                     # InstF items (node id 0x8, ingress 0x2 and egress 0x1 IF)
//! encrypt = false                   # ask routers to encrypt their entries
//! stack_words = 240                 # ID-INT stack, 4-byte words
//! verifier = "10.123.10.5"          # the AS's collector (default: [export] collector's IP)
//! verifier_ia = "1-ff00:0:110"      # the collector's AS (default: this AS)
//!
//! [control]                         # optional
//! http = "127.0.0.1:9101"           # /metrics and /health; loopback only (port 0: any)
//!
//! [[port]]
//! device = "net_pcap0"              # DPDK device name (PCI: "0000:01:00.0" or "01:00.0")
//! interfaces = [1, 2]               # SCION interfaces of this router on that port
//! internal = true                   # the AS-internal network is on this port too
//!                                   # (a port needs interfaces, internal = true, or both)
//! default_next_hop_mac = "02:00:00:00:00:fe"  # optional: next hops without a known MAC
//! vlan = 120                        # optional 802.1Q VLAN ID (1 ..= 4094)
//! subnets = ["10.0.0.0/16"]         # optional: on-link prefixes whose addresses ARP/NDP
//!                                   # may teach this port (default: the internal port the
//!                                   # /24 or /64 of the internal address, others none;
//!                                   # link peers and sibling routers are always learnable)
//!
//! [[neighbor]]                      # next-hop MAC per underlay IP
//! ip = "192.0.2.2"                  # unicast; IPv4 written as IPv4, not ::ffff:a.b.c.d
//! mac = "02:00:00:00:00:02"         # unicast MAC (aa:bb:cc:dd:ee:ff or aa-bb-cc-dd-ee-ff)
//! ```

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};

use scion_dp::config::RouterConfig;
use scion_topology::{BorderRouter, MasterKeys, Topology, TopologyError};
use serde::Deserialize;

/// Why a configuration was rejected. Every variant names the file or item at fault.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The TOML file cannot be read.
    #[error("{file}: cannot read: {source}")]
    Read {
        /// The file.
        file: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The TOML file does not parse or has wrong or unknown keys.
    #[error("{file}: {message}")]
    Toml {
        /// The file.
        file: PathBuf,
        /// The parser's message (with line and column).
        message: String,
    },
    /// The topology or keys are invalid.
    #[error(transparent)]
    Topology(#[from] TopologyError),
    /// A bad item in the TOML file.
    #[error("{file}: {item}: {reason}")]
    Item {
        /// The file.
        file: PathBuf,
        /// The item (e.g. `port[1].interfaces`).
        item: String,
        /// What is wrong.
        reason: String,
    },
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    topology: PathBuf,
    keys: Option<PathBuf>,
    router_id: String,
    #[serde(default)]
    eal: Vec<String>,
    #[serde(default)]
    dataplane: RawDataplane,
    drkey: Option<RawDrkey>,
    idint: Option<RawIdInt>,
    export: Option<RawExport>,
    probes: Option<crate::probes::RawProbes>,
    #[serde(default)]
    control: RawControl,
    #[serde(default)]
    bfd: RawBfd,
    #[serde(default)]
    port: Vec<RawPort>,
    #[serde(default)]
    neighbor: Vec<RawNeighbor>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDataplane {
    distribution: Option<String>,
    mbufs: Option<u32>,
    rx_desc: Option<u16>,
    tx_desc: Option<u16>,
    io_only: Option<bool>,
    idint_lower_bound: Option<String>,
    neighbor_refresh_secs: Option<u32>,
    neighbor_expire_secs: Option<u32>,
    idle_sleep_us: Option<u32>,
    scmp_rate: Option<u32>,
    scmp_burst: Option<u32>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDrkey {
    epoch_secs: Option<u32>,
    cache_keys: Option<u32>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawIdInt {
    node_id: Option<u32>,
    power_w: Option<u16>,
    energy_per_packet_nj: Option<u32>,
    co2_per_packet_pg: Option<u32>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawExport {
    collector: String,
    router_number: Option<u32>,
    max_reports: Option<usize>,
    max_bytes: Option<usize>,
    flush_ms: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawControl {
    http: Option<String>,
}

/// `[bfd]`: the router's BFD defaults (scionproto's `router.bfd`): for the sibling sessions
/// and for every external interface whose topology `bfd` object does not say otherwise.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBfd {
    disable: Option<bool>,
    detect_mult: Option<u8>,
    desired_min_tx_interval: Option<String>,
    required_min_rx_interval: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPort {
    device: String,
    default_next_hop_mac: Option<String>,
    vlan: Option<u16>,
    subnets: Option<Vec<String>>,
    #[serde(default)]
    interfaces: Vec<u16>,
    #[serde(default)]
    internal: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawNeighbor {
    ip: String,
    mac: String,
}

/// A BFD session's settings after defaults and overrides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BfdSettings {
    /// No session: the link counts as up, BFD packets on it are dropped.
    pub disable: bool,
    /// Detection time multiplier.
    pub detect_mult: u8,
    /// Desired Min TX Interval.
    pub desired_min_tx: std::time::Duration,
    /// Required Min RX Interval.
    pub required_min_rx: std::time::Duration,
}

impl BfdSettings {
    /// The session timers.
    pub fn params(&self) -> crate::bfd::Params {
        crate::bfd::Params {
            detect_mult: self.detect_mult,
            desired_min_tx_us: crate::bfd::duration_us(self.desired_min_tx),
            required_min_rx_us: crate::bfd::duration_us(self.required_min_rx),
        }
    }
}

/// Whom a BFD session runs with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BfdLink {
    /// The neighbour AS's router at the far end of an own interface (OneHop path).
    External {
        /// The interface.
        ifid: u16,
        /// Local underlay address.
        local: SocketAddr,
        /// Remote underlay address.
        remote: SocketAddr,
        /// The neighbour's ISD-AS.
        remote_ia: idint_wire::IsdAsn,
    },
    /// A sibling router of the AS (Empty path), at its internal address.
    Sibling {
        /// The sibling's internal address.
        addr: SocketAddr,
    },
}

/// One BFD session to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BfdPeer {
    /// The peer.
    pub link: BfdLink,
    /// Its settings.
    pub settings: BfdSettings,
    /// The interfaces whose liveness it decides (the own one, or those the sibling owns).
    pub interfaces: Vec<u16>,
}

/// The router's BFD sessions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BfdPlan {
    /// The router's internal address (source of sibling sessions' packets).
    pub internal_addr: SocketAddr,
    /// One per own interface and per sibling router.
    pub sessions: Vec<BfdPeer>,
}

impl BfdPlan {
    /// The session a received BFD packet belongs to (`bfd.rst`): on an external link, the
    /// session of the interface it came by, if it has a OneHop path; from the internal
    /// network, the sibling session of its source address, if it has an Empty path. `None`:
    /// no such session (dropped; so is a packet for a session whose BFD is disabled).
    pub fn session_for(&self, via: crate::bfd::Via, r: &crate::bfd::Received) -> Option<usize> {
        use crate::bfd::Via;
        self.sessions.iter().position(|s| match (via, s.link) {
            (Via::External(x), BfdLink::External { ifid, .. }) => r.onehop && x == ifid,
            (Via::Internal(_), BfdLink::Sibling { addr }) => {
                !r.onehop && r.src_host == Some(addr.ip())
            }
            _ => false,
        })
    }
}

/// How packets reach the workers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Distribution {
    /// Queues if every port has one rx and one tx queue per worker, else software.
    Auto,
    /// Every worker polls its own rx queue of every port (RSS spreads flows).
    Queues,
    /// One distributor lcore polls the ports and hashes flows onto worker rings.
    Software,
}

/// One SCION interface of this router, placed on a port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InterfacePlan {
    /// Interface ID.
    pub id: u16,
    /// This router's underlay address of the link.
    pub local: SocketAddr,
    /// The neighbour's underlay address.
    pub remote: SocketAddr,
}

/// One DPDK port and what runs over it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortPlan {
    /// DPDK device name (a PCI address in its full form, `0000:01:00.0`).
    pub device: String,
    /// SCION interfaces on the port.
    pub interfaces: Vec<InterfacePlan>,
    /// Whether the AS-internal network is on this port.
    pub internal: bool,
    /// MAC for next hops on this port with neither a `[[neighbor]]` entry nor an ARP-learned
    /// one (e.g. a gateway, or the peer of a point-to-point link).
    pub default_next_hop_mac: Option<[u8; 6]>,
    /// 802.1Q VLAN of the port: frames arrive and leave tagged with this VLAN ID; untagged or
    /// otherwise tagged frames are dropped (`wrong_vlan`).
    pub vlan: Option<u16>,
    /// On-link prefixes: addresses in them may be learned from ARP/NDP on this port (besides
    /// the port's next hops). Default: the internal port the /24 (/64) of the internal
    /// address, other ports none.
    pub subnets: Vec<crate::tables::Subnet>,
}

/// A validated configuration.
#[derive(Debug, Clone)]
pub struct Config {
    /// The TOML file.
    pub file: PathBuf,
    /// The BFD sessions to run.
    pub bfd: BfdPlan,
    /// Router id in the topology.
    pub router_id: String,
    /// The data-plane model for scion-dp.
    pub router: RouterConfig,
    /// The AS master secret `master0` (DRKey secret values).
    pub master0: Vec<u8>,
    /// EAL arguments.
    pub eal: Vec<String>,
    /// Ports in configuration order.
    pub ports: Vec<PortPlan>,
    /// Static next-hop MACs by underlay IP.
    pub neighbors: HashMap<IpAddr, [u8; 6]>,
    /// How packets reach the workers.
    pub distribution: Distribution,
    /// Mbufs in the pool (`None`: sized from what the configuration pins, see
    /// [`crate::pool::auto_size`]); checked against that at start ([`crate::pool::check`]).
    pub mbufs: Option<u32>,
    /// Rx descriptors per queue.
    pub rx_desc: u16,
    /// Tx descriptors per queue.
    pub tx_desc: u16,
    /// Measurement aids (benchmark builds only).
    #[cfg(feature = "measurement-aids")]
    pub aids: MeasurementAids,
    /// Ageing of ARP/NDP-learned next-hop MACs.
    pub neighbor_aging: crate::neighbor::Aging,
    /// DRKey epoch length, seconds.
    pub epoch_secs: u32,
    /// Level-2 (AS-to-host) keys each worker caches for sealing ID-INT entries.
    pub cache_keys: usize,
    /// Node id written into ID-INT entries.
    pub node_id: Option<u32>,
    /// Configured energy figures for telemetry.
    pub energy: crate::telemetry::EnergyFigures,
    /// Infrastructure-mode sink: report export to a collector.
    pub export: Option<ExportSettings>,
    /// Infrastructure-mode source: probes on configured paths (`[probes]`).
    pub probes: Option<crate::probes::ProbeSettings>,
    /// Longest pause of an idle worker between polls, µs (`[dataplane] idle_sleep_us`; 0:
    /// pure busy polling). See [`IDLE_SLEEP_US_RANGE`].
    pub idle_sleep_us: u32,
    /// SCMP error replies per second and worker (`[dataplane] scmp_rate`), after
    /// [`Config::scmp_burst`] at once (see [`crate::ratelimit`]).
    pub scmp_rate: u32,
    /// SCMP error replies a worker sends at once (`[dataplane] scmp_burst`).
    pub scmp_burst: u32,
    /// Loopback address of the `/metrics` and `/health` endpoints (port 0: one the OS chooses;
    /// the router names the bound address on stderr at start).
    pub http: Option<SocketAddr>,
}

/// The measurement aids of `[dataplane]`: only in builds with the cargo feature
/// `measurement-aids` (benchmarks); other builds refuse their keys.
#[cfg(feature = "measurement-aids")]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MeasurementAids {
    /// Every frame received on port `i` leaves by port `i + 1` (mod ports) untouched, no SCION
    /// processing (the I/O-only ceiling of the same devices).
    pub io_only: bool,
    /// ID-INT through [`scion_dp::lower_bound`] (the least work an entry can cost here), not
    /// the real stage's general processing.
    pub idint_lower_bound: scion_dp::lower_bound::Mode,
}

/// Reads the measurement aids of `[dataplane]`; `item` builds the error of a key.
#[cfg(feature = "measurement-aids")]
fn measurement_aids(
    raw: &RawConfig,
    item: impl Fn(&str, String) -> ConfigError,
) -> Result<MeasurementAids, ConfigError> {
    use scion_dp::lower_bound::Mode;
    let io_only = raw.dataplane.io_only.unwrap_or(false);
    if io_only {
        let present = [
            ("idint", raw.idint.is_some()),
            ("export", raw.export.is_some()),
            ("drkey", raw.drkey.is_some()),
        ];
        if let Some((section, _)) = present.iter().find(|(_, p)| *p) {
            return Err(item(
                "dataplane.io_only",
                format!(
                    "io_only = true forwards frames untouched (no SCION or ID-INT \
                     processing), so the [{section}] section cannot apply; remove one of them"
                ),
            ));
        }
    }
    let idint_lower_bound = match raw.dataplane.idint_lower_bound.as_deref() {
        None => Mode::Off,
        Some(s) => Mode::parse(s).ok_or_else(|| {
            item(
                "dataplane.idint_lower_bound",
                format!("{s:?}: expected \"off\", \"sealed\" or \"unsealed\""),
            )
        })?,
    };
    if idint_lower_bound != Mode::Off && io_only {
        return Err(item(
            "dataplane.idint_lower_bound",
            "io_only = true does no ID-INT processing: set one of them".to_string(),
        ));
    }
    Ok(MeasurementAids {
        io_only,
        idint_lower_bound,
    })
}

/// A build without the measurement aids refuses their keys instead of ignoring them.
#[cfg(not(feature = "measurement-aids"))]
fn refuse_measurement_aids(
    raw: &RawConfig,
    item: impl Fn(&str, String) -> ConfigError,
) -> Result<(), ConfigError> {
    let keys = [
        ("dataplane.io_only", raw.dataplane.io_only.is_some()),
        (
            "dataplane.idint_lower_bound",
            raw.dataplane.idint_lower_bound.is_some(),
        ),
    ];
    match keys.iter().find(|(_, present)| *present) {
        Some((key, _)) => Err(item(
            key,
            "a measurement aid for benchmarks; this build of idint-router does not have it \
             (cargo feature `measurement-aids`)"
                .to_string(),
        )),
        None => Ok(()),
    }
}

/// The `[export]` section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportSettings {
    /// Collector UDP address.
    pub collector: SocketAddr,
    /// Router number in the reports' exporter identity.
    pub router_number: u32,
    /// Most reports per batch.
    pub max_reports: usize,
    /// Most bytes per batch datagram.
    pub max_bytes: usize,
    /// Longest wait before a partial batch is sent, ms.
    pub flush_ms: u64,
}

/// Parses `aa:bb:cc:dd:ee:ff` (or with `-` throughout; one kind of separator only).
pub fn parse_mac(s: &str) -> Option<[u8; 6]> {
    let sep = match s.as_bytes().get(2) {
        Some(b':') => ':',
        Some(b'-') => '-',
        _ => return None,
    };
    let mut out = [0u8; 6];
    let mut parts = s.split(sep);
    for b in out.iter_mut() {
        let p = parts.next()?;
        if p.len() != 2 {
            return None;
        }
        *b = u8::from_str_radix(p, 16).ok()?;
    }
    parts.next().is_none().then_some(out)
}

/// Why `mac` cannot be a next hop's address (next hops are unicast), if it cannot.
pub fn non_unicast_mac(mac: [u8; 6]) -> Option<&'static str> {
    if mac == [0; 6] {
        Some("the all-zero MAC")
    } else if mac == [0xff; 6] {
        Some("the broadcast MAC")
    } else if mac[0] & 1 != 0 {
        Some("a multicast MAC (lowest bit of the first octet set)")
    } else {
        None
    }
}

/// Parses a next-hop MAC: a unicast `aa:bb:cc:dd:ee:ff`.
fn parse_next_hop_mac(s: &str) -> Result<[u8; 6], String> {
    let mac =
        parse_mac(s).ok_or_else(|| format!("{s:?} is not a MAC address (aa:bb:cc:dd:ee:ff)"))?;
    match non_unicast_mac(mac) {
        Some(what) => Err(format!("{s:?} is {what}; next hops are unicast addresses")),
        None => Ok(mac),
    }
}

/// Why `ip` cannot be a unicast peer (next hop or collector), if it cannot.
fn non_unicast_ip(ip: IpAddr) -> Option<String> {
    match ip {
        IpAddr::V4(v4) if v4.is_unspecified() => Some("the unspecified address".into()),
        IpAddr::V4(v4) if v4.is_broadcast() => Some("the broadcast address".into()),
        IpAddr::V4(v4) if v4.is_multicast() => Some("a multicast address".into()),
        IpAddr::V6(v6) if v6.is_unspecified() => Some("the unspecified address".into()),
        IpAddr::V6(v6) if v6.is_multicast() => Some("a multicast address".into()),
        IpAddr::V6(v6) => v6
            .to_ipv4_mapped()
            .map(|v4| format!("an IPv4-mapped IPv6 address (write the IPv4 address {v4})")),
        IpAddr::V4(_) => None,
    }
}

impl Config {
    /// Reads and validates the TOML file at `path` and the files it names.
    pub fn load(path: impl AsRef<Path>) -> Result<Config, ConfigError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            file: path.to_path_buf(),
            source,
        })?;
        Self::parse(&text, path)
    }

    /// Validates the TOML `text`; relative paths in it are relative to `file`'s directory.
    /// Checks run in the order of the file's sections; the first problem is reported.
    pub fn parse(text: &str, file: &Path) -> Result<Config, ConfigError> {
        let raw: RawConfig = toml::from_str(text).map_err(|e| ConfigError::Toml {
            file: file.to_path_buf(),
            message: e.to_string().trim_end().replace('\n', " "),
        })?;
        let at = Items { file };
        let item = |item: &str, reason: String| at.err(item, reason);
        let base = file.parent().unwrap_or(Path::new("."));
        let topo_path = base.join(&raw.topology);
        let topo = Topology::load(&topo_path)?;
        let keys_dir = match &raw.keys {
            Some(k) => base.join(k),
            None => topo_path.parent().unwrap_or(Path::new(".")).join("keys"),
        };
        let keys = MasterKeys::load(&keys_dir)?;
        let router = topo.router_config_with_key(&raw.router_id, keys.forwarding_key())?;
        let me = topo.router(&raw.router_id)?;
        crate::eal_args::check(&raw.eal, crate::eal_args::cpu_detected)
            .map_err(|reason| item("eal", reason))?;
        let ports = at.ports(&raw, me)?;
        let neighbors = at.static_neighbors(&raw.neighbor)?;
        let (epoch_secs, cache_keys) = at.drkey(raw.drkey.as_ref())?;
        let neighbor_aging = at.neighbor_aging(&raw.dataplane)?;
        let mbufs = raw.dataplane.mbufs;
        if let Some(mbufs) = mbufs
            && mbufs < MIN_MBUFS
        {
            return Err(item(
                "dataplane.mbufs",
                format!("{mbufs} is below {MIN_MBUFS}"),
            ));
        }
        let export = at.export(raw.export.as_ref())?;
        let probes = match &raw.probes {
            None => None,
            Some(p) => Some(
                crate::probes::settings(
                    p,
                    base,
                    router.local_ia,
                    export.as_ref().map(|e| e.collector.ip()),
                )
                .map_err(|e| item(&e.item, e.reason))?,
            ),
        };
        let idle_sleep_us = raw.dataplane.idle_sleep_us.unwrap_or(DEFAULT_IDLE_SLEEP_US);
        at.within(
            "dataplane.idle_sleep_us",
            idle_sleep_us,
            IDLE_SLEEP_US_RANGE,
        )?;
        let scmp_rate = raw
            .dataplane
            .scmp_rate
            .unwrap_or(crate::ratelimit::DEFAULT_RATE);
        at.within("dataplane.scmp_rate", scmp_rate, SCMP_RATE_RANGE)?;
        let scmp_burst = raw
            .dataplane
            .scmp_burst
            .unwrap_or(crate::ratelimit::DEFAULT_BURST);
        at.within("dataplane.scmp_burst", scmp_burst, SCMP_BURST_RANGE)?;
        let http = at.control_http(&raw.control)?;
        let distribution = at.distribution(&raw.dataplane)?;
        #[cfg(feature = "measurement-aids")]
        let aids = measurement_aids(&raw, item)?;
        #[cfg(not(feature = "measurement-aids"))]
        refuse_measurement_aids(&raw, item)?;
        let rx_desc = at.descriptors(raw.dataplane.rx_desc, "dataplane.rx_desc")?;
        let tx_desc = at.descriptors(raw.dataplane.tx_desc, "dataplane.tx_desc")?;
        let idint = raw.idint.unwrap_or_default();
        let bfd = at.bfd(&raw.bfd, me, &router, &ports)?;
        Ok(Config {
            bfd,
            distribution,
            export,
            probes,
            idle_sleep_us,
            scmp_rate,
            scmp_burst,
            http,
            energy: crate::telemetry::EnergyFigures {
                power_w: idint.power_w,
                energy_per_packet_nj: idint.energy_per_packet_nj,
                co2_per_packet_pg: idint.co2_per_packet_pg,
            },
            file: file.to_path_buf(),
            router_id: raw.router_id,
            master0: keys.master0.clone(),
            router,
            eal: raw.eal,
            ports,
            neighbors,
            mbufs,
            rx_desc,
            tx_desc,
            #[cfg(feature = "measurement-aids")]
            aids,
            neighbor_aging,
            epoch_secs,
            cache_keys,
            node_id: idint.node_id,
        })
    }
}

/// Default DRKey epoch length, s (a day, as SCION's control service).
const DEFAULT_EPOCH_SECS: u32 = 86_400;
/// DRKey epoch lengths SCION allows, s (6 minutes to 3 days).
const EPOCH_SECS_RANGE: std::ops::RangeInclusive<u32> = 360..=259_200;
/// Default verifier keys cached per worker.
const DEFAULT_CACHE_KEYS: u32 = 4096;
/// Verifier keys a worker may cache (4-way sets: at least one set).
const CACHE_KEYS_RANGE: std::ops::RangeInclusive<u32> = 4..=1 << 20;
/// Default longest idle pause of a worker, µs: an idle router sleeps most of the time, a
/// loaded one never pauses (see `router_dpdk::worker`'s back-off).
pub const DEFAULT_IDLE_SLEEP_US: u32 = 100;
/// Allowed longest idle pauses, µs (0: busy polling; at most 10 ms).
pub const IDLE_SLEEP_US_RANGE: std::ops::RangeInclusive<u32> = 0..=10_000;
/// Allowed SCMP error replies per second and worker.
pub const SCMP_RATE_RANGE: std::ops::RangeInclusive<u32> = 0..=1_000_000;
/// Allowed bursts of SCMP error replies per worker.
pub const SCMP_BURST_RANGE: std::ops::RangeInclusive<u32> = 0..=100_000;
/// Fewest mbufs in the pool.
const MIN_MBUFS: u32 = 512;
/// Default rx/tx descriptors per queue.
const DEFAULT_DESCRIPTORS: u16 = 512;
/// Rx/tx descriptors per queue (a power of two).
const DESCRIPTORS_RANGE: std::ops::RangeInclusive<u16> = 32..=4096;
/// VLAN IDs a port may use (0 and 4095 are reserved).
const VLAN_ID_RANGE: std::ops::RangeInclusive<u16> = 1..=4094;
/// Default and allowed reports per export batch.
const DEFAULT_MAX_REPORTS: usize = 32;
const MAX_REPORTS_RANGE: std::ops::RangeInclusive<usize> = 1..=1024;
/// Default and allowed bytes per export datagram.
const DEFAULT_MAX_BYTES: usize = 1400;
const MAX_BYTES_RANGE: std::ops::RangeInclusive<usize> = 512..=65_000;
/// Default and allowed wait before a partial export batch is sent, ms.
const DEFAULT_FLUSH_MS: u64 = 50;
const FLUSH_MS_RANGE: std::ops::RangeInclusive<u64> = 1..=10_000;

/// The phases of [`Config::parse`], each checking one part of the file; errors name `file`.
struct Items<'f> {
    file: &'f Path,
}

impl Items<'_> {
    /// The BFD sessions: one per own interface and one per sibling router, with the `[bfd]`
    /// defaults overridden per interface by the topology's `bfd` object.
    fn bfd(
        &self,
        raw: &RawBfd,
        me: &BorderRouter,
        router: &RouterConfig,
        ports: &[PortPlan],
    ) -> Result<BfdPlan, ConfigError> {
        let dur = |v: &Option<String>, key: &str, dflt: std::time::Duration| match v {
            None => Ok(dflt),
            Some(s) => scion_topology::parse_duration(s)
                .filter(|d| !d.is_zero())
                .ok_or_else(|| {
                    self.err(
                        &format!("bfd.{key}"),
                        format!("{s:?} is not a positive duration (e.g. \"200ms\")"),
                    )
                }),
        };
        if raw.detect_mult == Some(0) {
            return Err(self.err("bfd.detect_mult", "must be 1 to 255".into()));
        }
        let defaults = BfdSettings {
            disable: raw.disable.unwrap_or(false),
            detect_mult: raw.detect_mult.unwrap_or(crate::bfd::DEFAULT_DETECT_MULT),
            desired_min_tx: dur(
                &raw.desired_min_tx_interval,
                "desired_min_tx_interval",
                crate::bfd::DEFAULT_DESIRED_MIN_TX,
            )?,
            required_min_rx: dur(
                &raw.required_min_rx_interval,
                "required_min_rx_interval",
                crate::bfd::DEFAULT_REQUIRED_MIN_RX,
            )?,
        };
        let mut sessions = Vec::new();
        for plan in ports.iter().flat_map(|p| &p.interfaces) {
            let Some(ifc) = me.interfaces.iter().find(|i| i.id == plan.id) else {
                continue;
            };
            let o = ifc.bfd;
            let settings = BfdSettings {
                disable: o.disable.unwrap_or(defaults.disable),
                detect_mult: o.detect_mult.unwrap_or(defaults.detect_mult),
                desired_min_tx: o.desired_min_tx.unwrap_or(defaults.desired_min_tx),
                required_min_rx: o.required_min_rx.unwrap_or(defaults.required_min_rx),
            };
            sessions.push(BfdPeer {
                link: BfdLink::External {
                    ifid: plan.id,
                    local: plan.local,
                    remote: plan.remote,
                    remote_ia: ifc.neighbor_ia,
                },
                settings,
                interfaces: vec![plan.id],
            });
        }
        for ifc in &router.interfaces {
            if let scion_dp::config::Owner::Sibling(addr) = ifc.owner {
                match sessions
                    .iter_mut()
                    .find(|s| s.link == BfdLink::Sibling { addr })
                {
                    Some(s) => s.interfaces.push(ifc.id),
                    None => sessions.push(BfdPeer {
                        link: BfdLink::Sibling { addr },
                        settings: defaults,
                        interfaces: vec![ifc.id],
                    }),
                }
            }
        }
        Ok(BfdPlan {
            internal_addr: router.internal_addr,
            sessions,
        })
    }

    /// The error for `item` of the file.
    fn err(&self, item: &str, reason: String) -> ConfigError {
        ConfigError::Item {
            file: self.file.to_path_buf(),
            item: item.to_string(),
            reason,
        }
    }

    /// The `[[port]]` sections: every interface of router `me` on exactly one port, the
    /// internal network on one, no two receivers with one address on one port.
    fn ports(&self, raw: &RawConfig, me: &BorderRouter) -> Result<Vec<PortPlan>, ConfigError> {
        if raw.port.is_empty() {
            return Err(self.err("port", "no [[port]] configured".into()));
        }
        let mut ports: Vec<PortPlan> = Vec::new();
        let mut placed: HashMap<u16, usize> = HashMap::new();
        let mut internal_port = None;
        for (i, p) in raw.port.iter().enumerate() {
            let name = format!("port[{i}]");
            if p.device.trim().is_empty() {
                return Err(self.err(&format!("{name}.device"), "empty device name".into()));
            }
            // DPDK's name for the port (a PCI address in its full form).
            let device = crate::eal_args::port_name(p.device.trim());
            if ports.iter().any(|q| q.device == device) {
                return Err(self.err(
                    &format!("{name}.device"),
                    format!("device {:?} configured twice", p.device),
                ));
            }
            let interfaces = self.port_interfaces(&name, i, p, me, &raw.router_id, &mut placed)?;
            if p.interfaces.is_empty() && !p.internal {
                return Err(self.err(
                    &name,
                    format!(
                        "device {:?} carries no SCION interface and not the internal network \
                         (give it interfaces = [...] or internal = true, or remove it)",
                        p.device
                    ),
                ));
            }
            self.distinct_receivers(&name, p, &interfaces, me)?;
            if p.internal {
                if let Some(prev) = internal_port {
                    return Err(self.err(
                        &format!("{name}.internal"),
                        format!("the internal network is already on port[{prev}]"),
                    ));
                }
                internal_port = Some(i);
            }
            let default_next_hop_mac = match &p.default_next_hop_mac {
                None => None,
                Some(m) => Some(
                    parse_next_hop_mac(m)
                        .map_err(|r| self.err(&format!("{name}.default_next_hop_mac"), r))?,
                ),
            };
            if let Some(v) = p.vlan
                && !VLAN_ID_RANGE.contains(&v)
            {
                return Err(self.err(
                    &format!("{name}.vlan"),
                    format!(
                        "{v} is not a VLAN ID ({} ..= {})",
                        VLAN_ID_RANGE.start(),
                        VLAN_ID_RANGE.end()
                    ),
                ));
            }
            let subnets = match &p.subnets {
                Some(list) => list
                    .iter()
                    .map(|n| n.parse())
                    .collect::<Result<Vec<crate::tables::Subnet>, String>>()
                    .map_err(|r| self.err(&format!("{name}.subnets"), r))?,
                None if p.internal => vec![crate::tables::Subnet::around(me.internal_addr.ip())],
                None => Vec::new(),
            };
            ports.push(PortPlan {
                device,
                interfaces,
                internal: p.internal,
                default_next_hop_mac,
                vlan: p.vlan,
                subnets,
            });
        }
        if internal_port.is_none() {
            return Err(self.err(
                "port",
                "no port carries the internal network (set internal = true on one)".into(),
            ));
        }
        if let Some(missing) = me.interfaces.iter().find(|i| !placed.contains_key(&i.id)) {
            return Err(self.err(
                "port",
                format!(
                    "interface {} of router {} is on no port",
                    missing.id, raw.router_id
                ),
            ));
        }
        Ok(ports)
    }

    /// The interfaces of port `index` (`p`, named `name`): each of router `me` (`router_id`),
    /// on no other port (`placed` records where each went), with a local underlay IP.
    fn port_interfaces(
        &self,
        name: &str,
        index: usize,
        p: &RawPort,
        me: &BorderRouter,
        router_id: &str,
        placed: &mut HashMap<u16, usize>,
    ) -> Result<Vec<InterfacePlan>, ConfigError> {
        let mut interfaces = Vec::new();
        for &id in &p.interfaces {
            let Some(ifc) = me.interface(id) else {
                let own: Vec<String> = me.interfaces.iter().map(|i| i.id.to_string()).collect();
                return Err(self.err(
                    &format!("{name}.interfaces"),
                    format!(
                        "interface {id} is not an interface of router {router_id} (its \
                         interfaces: {})",
                        own.join(", ")
                    ),
                ));
            };
            if let Some(prev) = placed.insert(id, index) {
                return Err(self.err(
                    &format!("{name}.interfaces"),
                    format!("interface {id} is already on port[{prev}]"),
                ));
            }
            if ifc.underlay.local.ip().is_unspecified() {
                return Err(self.err(
                    &format!("{name}.interfaces"),
                    format!(
                        "interface {id}: the topology gives no local underlay IP (\"{}\"); DPDK \
                         needs one",
                        ifc.underlay.local
                    ),
                ));
            }
            interfaces.push(InterfacePlan {
                id,
                local: ifc.underlay.local,
                remote: ifc.underlay.remote,
            });
        }
        Ok(interfaces)
    }

    /// Packets are told apart by the port they arrive on and their destination address: two
    /// receivers with one address on one port would be confused.
    fn distinct_receivers(
        &self,
        name: &str,
        p: &RawPort,
        interfaces: &[InterfacePlan],
        me: &BorderRouter,
    ) -> Result<(), ConfigError> {
        let mut receivers: Vec<(SocketAddr, String)> = interfaces
            .iter()
            .map(|f| (f.local, format!("interface {}", f.id)))
            .collect();
        if p.internal {
            receivers.push((me.internal_addr, "the internal network".into()));
        }
        for (k, (addr, what)) in receivers.iter().enumerate() {
            if let Some((_, other)) = receivers[..k].iter().find(|(a, _)| a == addr) {
                return Err(self.err(
                    name,
                    format!(
                        "{other} and {what} both receive on {addr} on device {:?}: the router \
                         could not tell their packets apart (put them on different ports)",
                        p.device
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The `[[neighbor]]` sections: static next-hop MACs of unicast IPs, each listed once.
    fn static_neighbors(
        &self,
        raw: &[RawNeighbor],
    ) -> Result<HashMap<IpAddr, [u8; 6]>, ConfigError> {
        let mut neighbors = HashMap::new();
        for (i, n) in raw.iter().enumerate() {
            let ip: IpAddr = n.ip.parse().map_err(|_| {
                self.err(
                    &format!("neighbor[{i}].ip"),
                    format!("{:?} is not an IP address", n.ip),
                )
            })?;
            if let Some(what) = non_unicast_ip(ip) {
                return Err(self.err(
                    &format!("neighbor[{i}].ip"),
                    format!("{ip} is {what}; next hops are unicast addresses"),
                ));
            }
            let mac = parse_next_hop_mac(&n.mac)
                .map_err(|r| self.err(&format!("neighbor[{i}].mac"), r))?;
            if neighbors.insert(ip, mac).is_some() {
                return Err(self.err(&format!("neighbor[{i}].ip"), format!("{ip} listed twice")));
            }
        }
        Ok(neighbors)
    }

    /// The `[drkey]` section: (epoch length s, cached keys per worker).
    fn drkey(&self, drkey: Option<&RawDrkey>) -> Result<(u32, usize), ConfigError> {
        let epoch_secs = drkey
            .and_then(|d| d.epoch_secs)
            .unwrap_or(DEFAULT_EPOCH_SECS);
        if !EPOCH_SECS_RANGE.contains(&epoch_secs) {
            return Err(self.err(
                "drkey.epoch_secs",
                format!(
                    "{epoch_secs} is outside {} ..= {} (6 minutes to 3 days)",
                    EPOCH_SECS_RANGE.start(),
                    EPOCH_SECS_RANGE.end()
                ),
            ));
        }
        let cache_keys = drkey
            .and_then(|d| d.cache_keys)
            .unwrap_or(DEFAULT_CACHE_KEYS);
        if !CACHE_KEYS_RANGE.contains(&cache_keys) {
            return Err(self.err(
                "drkey.cache_keys",
                format!(
                    "{cache_keys} is outside {} ..= {}",
                    CACHE_KEYS_RANGE.start(),
                    CACHE_KEYS_RANGE.end()
                ),
            ));
        }
        Ok((epoch_secs, cache_keys as usize))
    }

    /// The ageing of ARP/NDP-learned next-hop MACs (`[dataplane] neighbor_*_secs`).
    fn neighbor_aging(&self, d: &RawDataplane) -> Result<crate::neighbor::Aging, ConfigError> {
        let default_aging = crate::neighbor::Aging::default();
        let aging = crate::neighbor::Aging {
            refresh_s: d.neighbor_refresh_secs.unwrap_or(default_aging.refresh_s),
            expire_s: d.neighbor_expire_secs.unwrap_or(default_aging.expire_s),
        };
        if aging.refresh_s == 0 {
            return Err(self.err(
                "dataplane.neighbor_refresh_secs",
                "0: learned neighbour entries must be re-asked after at least 1 s".into(),
            ));
        }
        if aging.expire_s <= aging.refresh_s {
            return Err(self.err(
                "dataplane.neighbor_expire_secs",
                format!(
                    "neighbour entries must be refreshed (after {} s) before they expire (after \
                     {} s)",
                    aging.refresh_s, aging.expire_s
                ),
            ));
        }
        Ok(aging)
    }

    /// Rx or tx descriptors per queue (`name`), a power of two in [`DESCRIPTORS_RANGE`].
    fn descriptors(&self, v: Option<u16>, name: &str) -> Result<u16, ConfigError> {
        let v = v.unwrap_or(DEFAULT_DESCRIPTORS);
        if !DESCRIPTORS_RANGE.contains(&v) || !v.is_power_of_two() {
            return Err(self.err(
                name,
                format!(
                    "{v} must be a power of two in {} ..= {}",
                    DESCRIPTORS_RANGE.start(),
                    DESCRIPTORS_RANGE.end()
                ),
            ));
        }
        Ok(v)
    }

    /// The `[export]` section: where and how reports go to the collector.
    fn export(&self, e: Option<&RawExport>) -> Result<Option<ExportSettings>, ConfigError> {
        let Some(e) = e else {
            return Ok(None);
        };
        let collector: SocketAddr = e.collector.parse().map_err(|_| {
            self.err(
                "export.collector",
                format!("{:?} is not an IP:port address", e.collector),
            )
        })?;
        if collector.port() == 0 {
            return Err(self.err(
                "export.collector",
                format!("{collector}: port 0 is no UDP destination"),
            ));
        }
        if let Some(what) = non_unicast_ip(collector.ip()) {
            return Err(self.err(
                "export.collector",
                format!(
                    "{collector}: {} is {what}; the collector is one unicast host",
                    collector.ip()
                ),
            ));
        }
        let max_reports = e.max_reports.unwrap_or(DEFAULT_MAX_REPORTS);
        self.within("export.max_reports", max_reports, MAX_REPORTS_RANGE)?;
        let max_bytes = e.max_bytes.unwrap_or(DEFAULT_MAX_BYTES);
        self.within("export.max_bytes", max_bytes, MAX_BYTES_RANGE)?;
        let flush_ms = e.flush_ms.unwrap_or(DEFAULT_FLUSH_MS);
        self.within("export.flush_ms", flush_ms, FLUSH_MS_RANGE)?;
        Ok(Some(ExportSettings {
            collector,
            router_number: e.router_number.unwrap_or(1),
            max_reports,
            max_bytes,
            flush_ms,
        }))
    }

    /// `v` (item `name`) lies in `range`.
    fn within<T: PartialOrd + std::fmt::Display>(
        &self,
        name: &str,
        v: T,
        range: std::ops::RangeInclusive<T>,
    ) -> Result<(), ConfigError> {
        if range.contains(&v) {
            return Ok(());
        }
        Err(self.err(
            name,
            format!("{v} is outside {} ..= {}", range.start(), range.end()),
        ))
    }

    /// `[control] http`: the `/metrics` and `/health` address, loopback only.
    fn control_http(&self, c: &RawControl) -> Result<Option<SocketAddr>, ConfigError> {
        let Some(h) = &c.http else {
            return Ok(None);
        };
        let a: SocketAddr = h
            .parse()
            .map_err(|_| self.err("control.http", format!("{h:?} is not an IP:port address")))?;
        if !a.ip().is_loopback() {
            return Err(self.err(
                "control.http",
                format!("{a} is not a loopback address (the endpoints are unauthenticated)"),
            ));
        }
        Ok(Some(a))
    }

    /// `[dataplane] distribution`.
    fn distribution(&self, d: &RawDataplane) -> Result<Distribution, ConfigError> {
        match d.distribution.as_deref() {
            None | Some("auto") => Ok(Distribution::Auto),
            Some("queues") => Ok(Distribution::Queues),
            Some("software") => Ok(Distribution::Software),
            Some(other) => Err(self.err(
                "dataplane.distribution",
                format!("{other:?}: expected \"auto\", \"queues\" or \"software\""),
            )),
        }
    }
}

#[cfg(test)]
mod tests;
