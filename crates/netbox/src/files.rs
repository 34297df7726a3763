//! Everything the box's processes read, generated into one directory: each AS's
//! `topology.json` and fresh master secrets, each router's configuration and probe paths, the
//! hosts' paths file, and the collector's configuration, paths and level-1 keys.
//!
//! ```text
//! <dir>/as/<ISD-AS>/topology.json      <dir>/routers/<router>.toml
//! <dir>/as/<ISD-AS>/keys/master0.key   <dir>/routers/<router>-probes.toml
//! <dir>/paths.json                     hosts' paths (idint-ping --paths)
//! <dir>/collector/collector.toml, paths.json, level1-keys.json
//! ```

use std::fmt::Write as _;
use std::fs;
use std::io;
use std::path::PathBuf;

use base64::Engine as _;
use collector_core::keys::ImportedKey;
use drkey::Protocol;
use drkey::provider::{Level1Provider, LocalProvider};
use idint_pktgen::keys::KeyRing;
use serde_json::json;

use crate::paths::{BoxPath, VALID_SECS};
use crate::plan::{COLLECTOR_IP, INTERNAL_PORT, LINK_PORT, LinkKind, Network, mac_text};

/// Bytes of a generated master secret (what SCION generates).
const MASTER_LEN: usize = 16;
/// DRKey epoch of every AS, seconds (the reference default).
pub const EPOCH_SECS: u32 = 86_400;
/// UDP port the collector ingests reports on (management network).
pub const COLLECTOR_UDP_PORT: u16 = 4740;
/// Port of every router's `/metrics` and `/health` (loopback of its namespace).
pub const ROUTER_HTTP_PORT: u16 = 9101;
/// Interval of the routers' probes.
pub const PROBE_INTERVAL_MS: u64 = 500;
/// What the probes ask every router for: ingress and egress timestamps (hop latency), energy
/// and CO2 per packet. The hosts' pings ask for utilisation and queue length; the queue stays
/// empty on `net_af_packet`, which has no descriptor status to read it from.
pub const PROBE_INSTRUCTIONS: [u8; 4] = [0x82, 0x83, 0x4a, 0x4b];
/// SCION/UDP port the end hosts' `idint-ping serve` listens on (underlay and SCION).
pub const HOST_PORT: u16 = 30041;
/// The end-host ports the routers deliver to directly (outside: port 30041).
pub const DISPATCHED_PORTS: &str = "1024-65535";
/// Link MTU written into the topologies (veths carry 1500-byte IP packets).
pub const LINK_MTU: u16 = 1472;

/// The generated files' locations.
#[derive(Debug, Clone)]
pub struct Layout {
    /// The directory everything is in.
    pub dir: PathBuf,
}

impl Layout {
    /// Files under `dir`.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Layout { dir: dir.into() }
    }

    /// An AS's directory (`as/1-ff00_0_110`).
    pub fn as_dir(&self, net: &Network, as_ix: usize) -> PathBuf {
        self.dir.join("as").join(net.ases[as_ix].file_name())
    }

    /// A router's configuration file.
    pub fn router_config(&self, name: &str) -> PathBuf {
        self.dir.join("routers").join(format!("{name}.toml"))
    }

    /// The hosts' paths file.
    pub fn host_paths(&self) -> PathBuf {
        self.dir.join("paths.json")
    }

    /// The directory of every AS's keys (`keys/<ISD-AS>/master0.key`), as hosts read them.
    pub fn keys_root(&self) -> PathBuf {
        self.dir.join("keys")
    }

    /// The collector's directory.
    pub fn collector_dir(&self) -> PathBuf {
        self.dir.join("collector")
    }
}

/// Who verifies the box's telemetry: the collector, a host of 1-ff00:0:110 on the management
/// network (first AS of the plan).
pub fn collector_ia(net: &Network) -> idint_wire::IsdAsn {
    net.ases[0].ia
}

/// A fresh master secret from the OS's random generator.
fn random_secret() -> io::Result<[u8; MASTER_LEN]> {
    let mut s = [0u8; MASTER_LEN];
    getrandom::fill(&mut s).map_err(|e| io::Error::other(e.to_string()))?;
    Ok(s)
}

/// Writes every file for `net` into `layout.dir` with fresh secrets, paths stamped `now_s`;
/// returns the key ring (every AS's secret) and the paths.
pub fn write_all(
    net: &Network,
    layout: &Layout,
    now_s: u64,
    paths: &[BoxPath],
    collector_api: &str,
    storage: &Storage,
) -> io::Result<(KeyRing, Vec<Vec<u8>>)> {
    let mut ring = KeyRing::new(EPOCH_SECS);
    let mut secrets = Vec::new();
    for (i, a) in net.ases.iter().enumerate() {
        let secret = random_secret()?;
        let text = base64::engine::general_purpose::STANDARD.encode(secret);
        for dir in [
            layout.as_dir(net, i).join("keys"),
            layout.keys_root().join(a.file_name()),
        ] {
            fs::create_dir_all(&dir)?;
            fs::write(dir.join("master0.key"), &text)?;
        }
        ring.insert(a.ia, &secret);
        secrets.push(secret);
        fs::write(
            layout.as_dir(net, i).join("topology.json"),
            topology_json(net, i),
        )?;
    }
    let stamp = u32::try_from(now_s).unwrap_or(u32::MAX);
    let raws: Vec<Vec<u8>> = paths.iter().map(|p| p.raw(&mut ring, stamp)).collect();
    fs::create_dir_all(layout.dir.join("routers"))?;
    for (as_ix, r, node) in net.routers() {
        let probes = probe_paths(net, paths, &raws, as_ix, r);
        let probes_file = layout
            .dir
            .join("routers")
            .join(format!("{}-probes.toml", node.name));
        if let Some(text) = &probes {
            fs::write(&probes_file, text)?;
        }
        fs::write(
            layout.router_config(&node.name),
            router_toml(net, layout, as_ix, r, probes.is_some()),
        )?;
    }
    fs::write(
        layout.host_paths(),
        host_paths_json(net, paths, &raws, now_s),
    )?;
    let cdir = layout.collector_dir();
    fs::create_dir_all(&cdir)?;
    fs::write(cdir.join("paths.json"), collector_paths_json(paths))?;
    fs::write(
        cdir.join("level1-keys.json"),
        level1_keys_json(net, &secrets, now_s)?,
    )?;
    fs::write(
        cdir.join("collector.toml"),
        collector_toml(net, layout, collector_api, storage),
    )?;
    Ok((ring, raws))
}

/// `link_to` of `kind` seen from the end that is the parent (`a`) or not.
fn link_to(kind: LinkKind, is_a: bool) -> &'static str {
    match (kind, is_a) {
        (LinkKind::Core, _) => "core",
        (LinkKind::Peer, _) => "peer",
        (LinkKind::ParentChild, true) => "child",
        (LinkKind::ParentChild, false) => "parent",
    }
}

/// The reference-format `topology.json` of AS `as_ix`.
pub fn topology_json(net: &Network, as_ix: usize) -> String {
    let a = &net.ases[as_ix];
    let mut brs = serde_json::Map::new();
    for (r, node) in a.routers.iter().enumerate() {
        let mut ifs = serde_json::Map::new();
        for (l, own, far) in net.router_links(as_ix, r) {
            ifs.insert(
                own.ifid.to_string(),
                json!({
                    "underlay": {
                        "local": format!("{}:{LINK_PORT}", own.ip),
                        "remote": format!("{}:{LINK_PORT}", far.ip),
                    },
                    "isd_as": net.ases[far.as_ix].ia.to_string(),
                    "remote_interface_id": far.ifid,
                    "link_to": link_to(l.kind, std::ptr::eq(own, &l.a)),
                    "mtu": LINK_MTU,
                }),
            );
        }
        brs.insert(
            node.name.clone(),
            json!({
                "id": node.node_id,
                "internal_addr": format!("{}:{INTERNAL_PORT}", node.internal),
                "interfaces": ifs,
            }),
        );
    }
    let mut t = json!({
        "isd_as": a.ia.to_string(),
        "mtu": LINK_MTU,
        // Hosts' own ports get their packets (idint-ping's replies go to its socket's port).
        "dispatched_ports": DISPATCHED_PORTS,
        "border_routers": brs,
    });
    if a.core {
        t["attributes"] = json!(["core"]);
    }
    serde_json::to_string_pretty(&t).expect("JSON values serialise")
}

/// The probe paths of router `r` of AS `as_ix`: every path from its AS that leaves by one of
/// its interfaces (a router sends what it originates out of its own links: a packet from the
/// internal network is never handed on to a sibling), or none.
fn probe_paths(
    net: &Network,
    paths: &[BoxPath],
    raws: &[Vec<u8>],
    as_ix: usize,
    r: usize,
) -> Option<String> {
    let own = |p: &BoxPath| {
        net.interface(as_ix, p.first_egress())
            .is_some_and(|(_, end, _)| end.router == r)
    };
    let mine: Vec<_> = paths
        .iter()
        .zip(raws)
        .filter(|(p, _)| p.src == as_ix && own(p))
        .collect();
    if mine.is_empty() {
        return None;
    }
    let mut out = String::from(
        "# Generated by idint-netbox: the paths from this AS that leave by this router.\n",
    );
    for (p, raw) in mine {
        let _ = write!(
            out,
            "\n[[path]]\ndst_ia = \"{}\"\ndst_host = \"{}\"\ndst_port = {HOST_PORT}\npath = \"{}\"\n",
            net.ases[p.dst].ia,
            net.ases[p.dst].host(),
            hex::encode(raw)
        );
    }
    Some(out)
}

/// The DPDK virtual device name of port `k` of a router.
pub fn vdev(k: usize) -> String {
    format!("net_af_packet{k}")
}

/// Interface (veth) name in a router's namespace of its internal port.
pub const ROUTER_INTERNAL_IF: &str = "int0";

/// Interface (veth) name in a router's namespace of its link with interface `ifid`.
pub fn router_link_if(ifid: u16) -> String {
    format!("if{ifid}")
}

/// The `idint-router` configuration of router `r` of AS `as_ix`.
fn router_toml(net: &Network, layout: &Layout, as_ix: usize, r: usize, probes: bool) -> String {
    let node = &net.ases[as_ix].routers[r];
    let links: Vec<_> = net.router_links(as_ix, r).collect();
    let mut eal = vec![
        "--no-huge".to_string(),
        "-m".into(),
        "128".into(),
        "--no-pci".into(),
        "--no-shconf".into(),
        format!("--file-prefix=ibx-{}", node.name),
        "-l".into(),
        "0-1".into(),
        "--log-level=*:error".into(),
        format!("--vdev={},iface={ROUTER_INTERNAL_IF}", vdev(0)),
    ];
    for (k, (_, own, _)) in links.iter().enumerate() {
        eal.push(format!(
            "--vdev={},iface={}",
            vdev(k + 1),
            router_link_if(own.ifid)
        ));
    }
    let as_dir = layout.as_dir(net, as_ix);
    let mut t = String::new();
    let _ = writeln!(
        t,
        "# idint-router {} of {} (generated by idint-netbox)",
        node.name, net.ases[as_ix].ia
    );
    let _ = writeln!(t, "topology = {:?}", as_dir.join("topology.json"));
    let _ = writeln!(t, "keys = {:?}", as_dir.join("keys"));
    let _ = writeln!(t, "router_id = {:?}", node.name);
    let _ = writeln!(t, "eal = {eal:?}\n");
    let _ = writeln!(
        t,
        "[dataplane]\nrx_desc = 256\ntx_desc = 256\nidle_sleep_us = 500\n"
    );
    let _ = writeln!(t, "[drkey]\nepoch_secs = {EPOCH_SECS}\n");
    let _ = writeln!(
        t,
        "[idint]\nnode_id = {}\npower_w = 120\nenergy_per_packet_nj = {}\nco2_per_packet_pg = {}\n",
        node.node_id,
        600 + 100 * node.node_id % 700,
        80 + 10 * node.node_id % 90
    );
    let _ = writeln!(
        t,
        "[export]\ncollector = \"{COLLECTOR_IP}:{COLLECTOR_UDP_PORT}\"\nrouter_number = {}\nflush_ms = 20\n",
        node.node_id
    );
    if probes {
        let _ = writeln!(
            t,
            "[probes]\npaths = \"{}-probes.toml\"\ninterval_ms = {PROBE_INTERVAL_MS}\n\
             instructions = {PROBE_INSTRUCTIONS:?}\n\
             verifier_ia = \"{}\"\nverifier = \"{COLLECTOR_IP}\"\n",
            node.name,
            collector_ia(net)
        );
    }
    let _ = writeln!(t, "[control]\nhttp = \"127.0.0.1:{ROUTER_HTTP_PORT}\"\n");
    let _ = writeln!(t, "[[port]]\ndevice = \"{}\"\ninternal = true\n", vdev(0));
    for (k, (_, own, _)) in links.iter().enumerate() {
        let _ = writeln!(
            t,
            "[[port]]\ndevice = \"{}\"\ninterfaces = [{}]\n",
            vdev(k + 1),
            own.ifid
        );
    }
    // Every neighbour's MAC is known: static entries, so no first packet is lost to ARP (the
    // AS's end host, the AS's other routers, the far ends of the links).
    let a = &net.ases[as_ix];
    let _ = writeln!(
        t,
        "[[neighbor]]\nip = \"{}\"\nmac = \"{}\"\n",
        a.host(),
        mac_text(a.host_mac())
    );
    for sib in a.routers.iter().filter(|s| s.name != node.name) {
        let _ = writeln!(
            t,
            "[[neighbor]]\nip = \"{}\"\nmac = \"{}\"\n",
            sib.internal,
            mac_text(sib.internal_mac)
        );
    }
    for (_, _, far) in &links {
        let _ = writeln!(
            t,
            "[[neighbor]]\nip = \"{}\"\nmac = \"{}\"\n",
            far.ip,
            mac_text(far.mac)
        );
    }
    t
}

/// The hosts' paths file: `{"paths": [{name, src, dst, raw, first_hop, mtu, expires_unix,
/// hops}]}`.
fn host_paths_json(net: &Network, paths: &[BoxPath], raws: &[Vec<u8>], now_s: u64) -> String {
    let list: Vec<_> = paths
        .iter()
        .zip(raws)
        .map(|(p, raw)| {
            let src = &net.ases[p.src];
            let first = net
                .interface(p.src, p.first_egress())
                .map(|(_, own, _)| src.routers[own.router].internal)
                .unwrap_or(src.routers[0].internal);
            json!({
                "name": p.name(net),
                "kind": p.kind,
                "src": src.ia.to_string(),
                "dst": net.ases[p.dst].ia.to_string(),
                "raw": hex::encode(raw),
                "first_hop": format!("{first}:{INTERNAL_PORT}"),
                "mtu": LINK_MTU,
                "expires_unix": now_s + VALID_SECS,
                "hops": p.hop_fields(),
            })
        })
        .collect();
    serde_json::to_string_pretty(&json!({ "paths": list })).expect("JSON values serialise")
}

/// The collector's path description file: a JSON array of `{"hops": [...]}`.
fn collector_paths_json(paths: &[BoxPath]) -> String {
    let list: Vec<_> = paths.iter().map(|p| json!({ "hops": p.hops })).collect();
    serde_json::to_string_pretty(&list).expect("JSON values serialise")
}

/// Level-1 keys K(AS -> collector's AS) of every other AS, for the epochs holding `now_s`
/// and the next (so the run may cross an epoch boundary).
fn level1_keys_json(net: &Network, secrets: &[[u8; MASTER_LEN]], now_s: u64) -> io::Result<String> {
    let dst = collector_ia(net);
    let mut keys = Vec::new();
    for (a, secret) in net.ases.iter().zip(secrets).filter(|(a, _)| a.ia != dst) {
        let p = LocalProvider::new(a.ia, secret, EPOCH_SECS)
            .map_err(|e| io::Error::other(e.to_string()))?;
        for t in [now_s, now_s + u64::from(EPOCH_SECS)] {
            let (epoch, key) = p
                .level1(Protocol::IDINT, a.ia, dst, t)
                .map_err(|e| io::Error::other(e.to_string()))?;
            keys.push(ImportedKey {
                src_ia: a.ia.to_string(),
                dst_ia: dst.to_string(),
                protocol: Protocol::IDINT.0,
                epoch_begin: epoch.begin,
                epoch_end: epoch.end,
                key_hex: hex::encode(key.as_bytes()),
            });
        }
    }
    Ok(serde_json::to_string_pretty(&keys).expect("JSON values serialise"))
}

/// Where the collector stores: PostgreSQL and VictoriaMetrics URLs.
#[derive(Debug, Clone)]
pub struct Storage {
    /// `postgres://...`.
    pub postgres_url: String,
    /// VictoriaMetrics base URL.
    pub victoria_url: String,
}

/// The collector's configuration: the verifier (1-ff00:0:110's collector on the management
/// network) with that AS's own secret, UDP ingest on the management network, PostgreSQL and
/// VictoriaMetrics. Topology, paths and the other ASes' level-1 keys are not in it: the box
/// imports them through the collector's CLI once it runs, as an operator would.
fn collector_toml(net: &Network, layout: &Layout, api: &str, storage: &Storage) -> String {
    format!(
        "# idint-collector of the box (generated by idint-netbox)\n\
         [collector]\nisd_as = \"{ia}\"\nhost = \"{COLLECTOR_IP}\"\nmaster_key = {mk:?}\n\
         epoch_secs = {EPOCH_SECS}\n\n\
         [ingest]\nudp_listen = \"{COLLECTOR_IP}:{COLLECTOR_UDP_PORT}\"\n\n\
         [api]\nlisten = \"{api}\"\nadmin_token = \"{token}\"\n\n\
         [storage]\npostgres_url = \"{pg}\"\ntimeseries = \"victoria\"\ntimeseries_url = \"{vm}\"\n",
        ia = collector_ia(net),
        mk = layout.as_dir(net, 0).join("keys").join("master0.key"),
        token = ADMIN_TOKEN,
        pg = storage.postgres_url,
        vm = storage.victoria_url,
    )
}

/// The box collector's admin token (the box is local to this machine).
pub const ADMIN_TOKEN: &str = "netbox-admin";
