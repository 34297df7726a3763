//! A real multi-AS scion-dp chain that produces ID-INT reports as infrastructure-mode probes
//! (shared by the tests, the benchmark and the load generator).
//!
//! ```text
//! RA (probe source) [1] ── [2] RB1 ═ RB2 [3] ── [4] RC [5] ── [6] RD (sink, exports reports)
//!   AS A (collector 10.1.0.100)   AS B                AS C          AS D
//! ```
//! Every router has its own forwarding key and DRKey master secret; the collector in AS A
//! verifies with A's master secret and the level-1 keys K(B/C/D -> A) exported here.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;

use collector_core::counters::RejectReason;
use collector_core::keys::{CollectorProvider, ImportedKey, ImportedKeys, KeyResolver};
use collector_core::metrics::MetricKey;
use collector_core::pipeline::{Pipeline, ReplayConfig, Shared};
use collector_core::topology::{PathDescription, PathHop};
use drkey::cache::KeyCache;
use drkey::provider::{Level1Provider, LocalProvider};
use drkey::{Epoch, Protocol, host_as, host_host};
use idint_report::{report_from_packet, v1};
use idint_wire::crypto::Aes128Enc;
use idint_wire::idint::Instruction;
use idint_wire::path::{HopField, InfoField, PathMeta, ScionPathRepr};
use idint_wire::scion::PathType;
use idint_wire::{HostAddr, IsdAsn};
use scion_dp::config::{DispatchedPorts, InterfaceConfig, LinkType, Owner, Router, RouterConfig};
use scion_dp::idint::{DrkeyKeys, IdIntStage, NonceSource, ReportExporter, SinkRecord};
use scion_dp::probe::{ProbeRequest, ProbeSource, ProbeTarget};
use scion_dp::telemetry::{Direction, HopContext, QueueMetric, TelemetrySource};
use scion_dp::{Ingress, Processor};

/// DRKey epoch length of every AS, seconds.
pub const EPOCH: u32 = 3600;
/// The collector's host address in AS A.
pub const COLLECTOR: Ipv4Addr = Ipv4Addr::new(10, 1, 0, 100);
/// The probe source's host address in AS A.
pub const RA_HOST: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
/// The probes' destination host in AS D.
pub const DST_HOST: Ipv4Addr = Ipv4Addr::new(10, 4, 0, 9);
/// Interfaces (ingress, egress) of RA, RB1, RB2, RC, RD.
pub const IFS: [(u16, u16); 5] = [(0, 1), (2, 3), (0, 3), (4, 5), (6, 0)];
/// AS index of each router.
pub const ROUTER_AS: [usize; 5] = [0, 1, 1, 2, 3];

/// The chain's ASes A, B, C, D.
pub fn ases() -> [IsdAsn; 4] {
    ["1-ff00:0:a", "1-ff00:0:b", "1-ff00:0:c", "1-ff00:0:d"].map(|s| s.parse().unwrap())
}

/// The DRKey master secret of AS `i` (0 = A).
pub fn secret(i: usize) -> Vec<u8> {
    vec![0x40 + i as u8; 16]
}

fn sock(last: u8) -> SocketAddr {
    SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 0, last)), 30042)
}

fn iface(id: u16, neighbor: IsdAsn, owner: Owner) -> InterfaceConfig {
    InterfaceConfig {
        id,
        link_type: LinkType::Core,
        neighbor_ia: neighbor,
        owner,
    }
}

fn router(as_index: usize, addr: u8, interfaces: Vec<InterfaceConfig>) -> Router {
    Router::new(RouterConfig {
        local_ia: ases()[as_index],
        core: true,
        internal_addr: sock(addr),
        interfaces,
        services: vec![],
        dispatched_ports: DispatchedPorts::All,
        forwarding_key: [0x10 + as_index as u8; 16],
    })
    .unwrap()
}

fn routers() -> Vec<Router> {
    let [a, b, c, d] = ases();
    vec![
        router(0, 1, vec![iface(1, b, Owner::Local)]),
        router(
            1,
            2,
            vec![
                iface(2, a, Owner::Local),
                iface(3, c, Owner::Sibling(sock(3))),
            ],
        ),
        router(
            1,
            3,
            vec![
                iface(2, a, Owner::Sibling(sock(2))),
                iface(3, c, Owner::Local),
            ],
        ),
        router(
            2,
            4,
            vec![iface(4, b, Owner::Local), iface(5, d, Owner::Local)],
        ),
        router(3, 5, vec![iface(6, c, Owner::Local)]),
    ]
}

fn path(rs: &[Router], now_s: u64) -> ScionPathRepr {
    let mut p = ScionPathRepr {
        meta: PathMeta {
            curr_inf: 0,
            curr_hf: 0,
            reserved: 0,
            seg_len: [4, 0, 0],
        },
        infos: [InfoField::default(); 3],
        hops: [HopField::default(); 64],
    };
    let ts = (now_s - 600) as u32;
    p.infos[0] = InfoField {
        peer: false,
        cons_dir: true,
        seg_id: 0x5a5a,
        timestamp: ts,
    };
    let mut seg = 0x5a5a;
    for (j, (ing, eg, r)) in [(0u16, 1u16, 0usize), (2, 3, 1), (4, 5, 3), (6, 0, 4)]
        .into_iter()
        .enumerate()
    {
        let mut h = HopField {
            exp_time: 63,
            cons_ingress: ing,
            cons_egress: eg,
            ..Default::default()
        };
        let full = rs[r].hop_mac().compute(&h.mac_input(seg, ts));
        h.mac.copy_from_slice(&full[..6]);
        seg ^= u16::from_be_bytes([full[0], full[1]]);
        p.hops[j] = h;
    }
    p
}

/// Values a router handed out for the last probe: node id, ingress ts, egress ts, queue,
/// utilisation, energy, CO2.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Given {
    /// Node id.
    pub node: u32,
    /// Ingress timestamp, ns.
    pub ingress_ts: u64,
    /// Egress timestamp, ns.
    pub egress_ts: u64,
    /// Queue length.
    pub queue: u32,
    /// Egress utilisation, kbit/s.
    pub util_kbps: u32,
    /// Energy per packet, nJ.
    pub energy_nj: u32,
    /// CO2 per packet, pg.
    pub co2_pg: u32,
}

/// Telemetry source with distinct values per router and probe.
pub struct Recorder {
    /// The router's node id.
    pub node: u32,
    /// Probe sequence number (varies the values).
    pub seq: u32,
    /// What was handed out for the last probe.
    pub last: Given,
}

impl TelemetrySource for Recorder {
    fn node_id(&self) -> Option<u32> {
        Some(self.node)
    }
    fn ingress_timestamp_ns(&mut self, c: &HopContext) -> Option<u64> {
        let v = (c.now_ns + u64::from(self.node) * 1000) & 0xffff_ffff_ffff;
        self.last.node = self.node;
        self.last.ingress_ts = v;
        Some(v)
    }
    fn egress_timestamp_ns(&mut self, c: &HopContext) -> Option<u64> {
        // Transit time of router n: 100 n ns.
        let v = (c.now_ns + u64::from(self.node) * 1100) & 0xffff_ffff_ffff;
        self.last.egress_ts = v;
        Some(v)
    }
    fn queue(&mut self, _ifid: u16, m: QueueMetric) -> Option<u32> {
        (m == QueueMetric::QueueLen).then(|| {
            self.last.queue = self.node * 7 + self.seq;
            self.last.queue
        })
    }
    fn link_utilisation_kbps(&mut self, _ifid: u16, dir: Direction) -> Option<u32> {
        (dir == Direction::Tx).then(|| {
            self.last.util_kbps = self.node * 1000 + self.seq;
            self.last.util_kbps
        })
    }
    fn energy_per_packet_nj(&mut self, _c: &HopContext) -> Option<u32> {
        self.last.energy_nj = self.node * 11;
        Some(self.last.energy_nj)
    }
    fn co2_per_packet_pg(&mut self, _c: &HopContext) -> Option<u32> {
        self.last.co2_pg = self.node * 3;
        Some(self.last.co2_pg)
    }
}

/// Nonces counting up from a start value.
pub struct Nonces(u64);
impl NonceSource for Nonces {
    fn nonce(&mut self) -> [u8; 12] {
        self.0 += 1;
        let mut n = [0u8; 12];
        n[..8].copy_from_slice(&self.0.to_le_bytes());
        n
    }
}

/// The reports the sink (RD) exported.
pub struct Reports(pub Vec<v1::Report>);
impl ReportExporter for Reports {
    fn export(&mut self, r: &SinkRecord<'_>) -> bool {
        let exporter = v1::Exporter {
            isd_as: ases()[3].to_u64(),
            router_id: 5,
            name: "rd".into(),
        };
        self.0.push(
            report_from_packet(&exporter, r.receive_ns, r.ingress.ifid(), r.packet)
                .expect("sink packets parse"),
        );
        true
    }
}

type Stage = IdIntStage<DrkeyKeys, Recorder, Nonces>;
type Sink = IdIntStage<DrkeyKeys, Recorder, Nonces, Reports>;

fn stage(r: usize, rs: &[Router]) -> Stage {
    let asi = ROUTER_AS[r];
    let provider = Arc::new(LocalProvider::new(ases()[asi], &secret(asi), EPOCH).unwrap());
    let keys = DrkeyKeys {
        cache: KeyCache::new(provider, 16),
        local: rs[r].local_ia(),
    };
    let source = Recorder {
        node: r as u32 + 1,
        seq: 0,
        last: Given::default(),
    };
    IdIntStage::new(keys, source, Nonces((r as u64) << 40))
}

/// What the probes ask for.
#[derive(Debug, Clone, Copy)]
pub enum Ask {
    /// Ingress/egress timestamps, queue length, egress utilisation (the default probe).
    Latency,
    /// Energy, CO2, queue length, egress utilisation.
    Carbon,
}

/// The five routers with their ID-INT stages and the probe source RA's host.
pub struct Chain {
    routers: Vec<Router>,
    stages: Vec<Stage>,
    sink: Sink,
    probes: ProbeSource,
    /// The probes' source host and its host-to-host key to the collector, for `src_epoch`.
    source: Ipv4Addr,
    src_key: Aes128Enc,
    src_epoch: Epoch,
    /// The clock of every router, ns.
    pub now_ns: u64,
    buf: Vec<u8>,
    /// Routers (0..4) that forward without an ID-INT stage (as one without a key would).
    pub no_idint: Vec<usize>,
    /// The sink (RD) sees the probe this much later (path latency grows by it).
    pub sink_delay_ns: u64,
}

impl Chain {
    /// A chain whose clocks read `now_ns`; probes encrypt when `encrypt`.
    pub fn new(now_ns: u64, encrypt: bool, ask: Ask) -> Self {
        Self::with_request(now_ns, encrypt, ask, |_| {})
    }

    /// As [`Self::new`], with the probe request adjusted by `f`.
    pub fn with_request(
        now_ns: u64,
        encrypt: bool,
        ask: Ask,
        f: impl FnOnce(&mut ProbeRequest),
    ) -> Self {
        Self::from_source(RA_HOST, now_ns, encrypt, ask, f)
    }

    /// As [`Self::with_request`], with the probes sent by host `source` of AS A instead of
    /// [`RA_HOST`] (another source to the collector).
    pub fn from_source(
        source: Ipv4Addr,
        now_ns: u64,
        encrypt: bool,
        ask: Ask,
        f: impl FnOnce(&mut ProbeRequest),
    ) -> Self {
        let rs = routers();
        let now_s = now_ns / 1_000_000_000;
        let a = ases()[0];
        let (src_epoch, src_key) = source_key(source, now_s);
        let mut probes = ProbeSource::new(a, HostAddr::V4(source), a, HostAddr::V4(COLLECTOR));
        let mut raw_path = vec![0u8; path(&rs, now_s).buffer_len()];
        path(&rs, now_s).emit(&mut raw_path).unwrap();
        let instructions = match ask {
            Ask::Latency => [0x82, 0x83, 0x4f, 0x4d],
            Ask::Carbon => [0x4a, 0x4b, 0x4f, 0x4d],
        }
        .map(Instruction);
        let mut request = ProbeRequest {
            encrypt,
            instructions,
            stack_len_words: 100,
            ..ProbeRequest::default()
        };
        f(&mut request);
        probes
            .add(
                ProbeTarget {
                    dst_ia: ases()[3],
                    dst_host: HostAddr::V4(DST_HOST),
                    dst_port: 31000,
                    path_type: PathType::Scion,
                    path: raw_path,
                    interval_ns: 1,
                    request,
                },
                0,
            )
            .expect("a valid probe target");
        let stages = (0..4).map(|r| stage(r, &rs)).collect();
        let sink = stage(4, &rs).with_sink(Reports(Vec::new()));
        Chain {
            routers: rs,
            stages,
            sink,
            probes,
            source,
            src_key,
            src_epoch,
            now_ns,
            buf: vec![0u8; 2048],
            no_idint: Vec::new(),
            sink_delay_ns: 0,
        }
    }

    /// Sends one probe at the chain's clock (then advances it by 1 µs); the report.
    pub fn probe(&mut self) -> v1::Report {
        self.probe_watched(|_, _| {})
    }

    /// As [`Self::probe`], also returning the probe packet (SCION bytes) as each of the five
    /// routers left it: ID-INT stacks as real routers fill, authenticate and encrypt them.
    pub fn probe_packets(&mut self) -> (v1::Report, Vec<Vec<u8>>) {
        let mut packets = Vec::new();
        let report = self.probe_watched(|_, b| packets.push(b.to_vec()));
        (report, packets)
    }

    /// [`Self::probe`], calling `after(router, packet)` after each router.
    fn probe_watched(&mut self, mut after: impl FnMut(usize, &[u8])) -> v1::Report {
        let now = self.now_ns;
        self.now_ns += 1000;
        // A clock that ran into another key epoch: the source's key of that epoch.
        let now_s = now / 1_000_000_000;
        if !self.src_epoch.contains(now_s) {
            (self.src_epoch, self.src_key) = source_key(self.source, now_s);
        }
        self.buf.resize(2048, 0);
        let probe = self
            .probes
            .poll(now, &self.src_key, &mut self.buf)
            .expect("due")
            .expect("builds");
        let len = probe.len;
        let ingress = [
            Ingress::Internal,
            Ingress::External(2),
            Ingress::Sibling(2),
            Ingress::External(4),
            Ingress::External(6),
        ];
        for (r, ing) in ingress.into_iter().enumerate() {
            let mut p = Processor::new(&self.routers[r]);
            if self.no_idint.contains(&r) {
                p.process(&mut self.buf, len, ing, now);
            } else if r == 4 {
                self.sink.source_mut().seq = probe.seq as u32;
                let t = now + self.sink_delay_ns;
                p.process_with(&mut self.buf, len, ing, t, &mut self.sink);
            } else {
                self.stages[r].source_mut().seq = probe.seq as u32;
                p.process_with(&mut self.buf, len, ing, now, &mut self.stages[r]);
            }
            after(r, &self.buf[..len]);
        }
        self.sink
            .exporter_mut()
            .0
            .pop()
            .expect("the sink exported a report")
    }

    /// `n` probes as one batch.
    pub fn batch(&mut self, n: usize, sequence: u64) -> v1::ReportBatch {
        let reports: Vec<_> = (0..n).map(|_| self.probe()).collect();
        v1::ReportBatch {
            exporter: reports[0].exporter.clone(),
            sequence,
            reports,
        }
    }

    /// The values router `r` (0 = RA .. 4 = RD) handed out for the last probe.
    pub fn given(&self, r: usize) -> Given {
        if r == 4 {
            self.sink.source().last
        } else {
            self.stages[r].source().last
        }
    }
}

/// The host-to-host key K(A:`source` -> A:[`COLLECTOR`]) a probe's source entry is made with
/// at `now_s`, and the epoch it is valid in.
fn source_key(source: Ipv4Addr, now_s: u64) -> (Epoch, Aes128Enc) {
    let a = ases()[0];
    let p = LocalProvider::new(a, &secret(0), EPOCH).unwrap();
    let (epoch, l1) = p.level1(Protocol::IDINT, a, a, now_s).unwrap();
    let ha = host_as(&l1.cipher(), &HostAddr::V4(source)).unwrap();
    let key = host_host(&ha.cipher(), &HostAddr::V4(COLLECTOR))
        .unwrap()
        .cipher();
    (epoch, key)
}

/// [`level1_imports`] for the epoch containing `now_s` and the next one: what a collector
/// of a test that may run across an epoch start imports.
pub fn level1_imports_now_and_next(now_s: u64) -> Vec<ImportedKey> {
    let mut keys = level1_imports(now_s);
    keys.extend(level1_imports(now_s + u64::from(EPOCH)));
    keys
}

/// The collector's imported level-1 keys K(B/C/D -> A) for the epoch containing `now_s`.
pub fn level1_imports(now_s: u64) -> Vec<ImportedKey> {
    let a = ases()[0];
    (1..4)
        .map(|i| {
            let asi = ases()[i];
            let p = LocalProvider::new(asi, &secret(i), EPOCH).unwrap();
            let (epoch, key) = p.level1(Protocol::IDINT, asi, a, now_s).unwrap();
            ImportedKey {
                src_ia: asi.to_string(),
                dst_ia: a.to_string(),
                protocol: Protocol::IDINT.0,
                epoch_begin: epoch.begin,
                epoch_end: epoch.end,
                key_hex: hex::encode(key.as_bytes()),
            }
        })
        .collect()
}

/// The chain's path as a path description.
pub fn path_description() -> PathDescription {
    let [a, b, c, d] = ases();
    let h = |ia, ingress, egress| PathHop {
        ia,
        ingress,
        egress,
    };
    PathDescription {
        hops: vec![h(a, 0, 1), h(b, 2, 3), h(c, 4, 5), h(d, 6, 0)],
    }
}

/// An interface of [`topology_json`]: id, neighbour AS, the neighbour's interface id.
pub type TopoIf<'a> = (u16, &'a str, Option<u16>);

/// A router of [`topology_json`]: name, node id, interfaces.
pub type TopoRouter<'a> = (&'a str, Option<u32>, &'a [TopoIf<'a>]);

/// A complete, valid reference-format `topology.json` of AS `ia` (core or not) with these
/// routers: internal addresses 10.0.0.1, .2, ... (in order), core links with underlay
/// addresses 192.0.2.x (local) and 198.51.100.x (remote), x the interface id modulo 256.
pub fn topology_json(ia: &str, core: bool, routers: &[TopoRouter<'_>]) -> String {
    let mut brs = serde_json::Map::new();
    for (k, (name, id, ifs)) in routers.iter().enumerate() {
        let mut interfaces = serde_json::Map::new();
        for &(ifid, neighbor, remote) in ifs.iter() {
            let mut i = serde_json::json!({
                "isd_as": neighbor,
                "link_to": "core",
                "underlay": {
                    "local": format!("192.0.2.{}:{}", ifid % 256, 50000 + ifid % 10000),
                    "remote": format!("198.51.100.{}:50000", ifid % 256),
                },
            });
            if let Some(r) = remote {
                i["remote_interface_id"] = r.into();
            }
            interfaces.insert(ifid.to_string(), i);
        }
        let mut br = serde_json::json!({
            "internal_addr": format!("10.0.0.{}:30042", k + 1),
            "interfaces": interfaces,
        });
        if let Some(id) = id {
            br["id"] = (*id).into();
        }
        brs.insert(name.to_string(), br);
    }
    let mut t = serde_json::json!({ "isd_as": ia, "border_routers": brs });
    if core {
        t["attributes"] = serde_json::json!(["core"]);
    }
    t.to_string()
}

/// `topology.json` texts of the four ASes (routers numbered as their node ids).
pub fn topology_files() -> Vec<String> {
    let [a, b, c, d] = ases().map(|x| x.to_string());
    vec![
        topology_json(&a, true, &[("ra", Some(1), &[(1, &b, Some(2))])]),
        topology_json(
            &b,
            true,
            &[
                ("rb1", Some(2), &[(2, &a, Some(1))]),
                ("rb2", Some(3), &[(3, &c, Some(4))]),
            ],
        ),
        topology_json(
            &c,
            true,
            &[("rc", Some(4), &[(4, &b, Some(3)), (5, &d, Some(6))])],
        ),
        topology_json(&d, true, &[("rd", Some(5), &[(6, &c, Some(5))])]),
    ]
}

/// The chain's collector (host [`COLLECTOR`] in AS A) as a pipeline over `shared`: A's master
/// secret, the level-1 keys K(B/C/D -> A) of the epochs holding `times_s`, the chain's path
/// imported.
pub fn collector_pipeline(shared: Shared, times_s: &[u64]) -> Pipeline {
    let p = collector_pipeline_without_paths(shared, times_s);
    p.shared()
        .topology
        .import_path(&path_description())
        .unwrap();
    p
}

/// [`collector_pipeline`] without the chain's path imported (nothing is known of the
/// topology).
pub fn collector_pipeline_without_paths(shared: Shared, times_s: &[u64]) -> Pipeline {
    collector_pipeline_with(shared, times_s, ReplayConfig::default())
}

/// [`collector_pipeline_without_paths`] with this replay configuration.
pub fn collector_pipeline_with(shared: Shared, times_s: &[u64], replay: ReplayConfig) -> Pipeline {
    let a = ases()[0];
    let imported = Arc::new(ImportedKeys::default());
    for &t in times_s {
        imported.import(&level1_imports(t)).unwrap();
    }
    let local = LocalProvider::new(a, &secret(0), EPOCH).unwrap();
    let provider = Arc::new(CollectorProvider::new(
        a,
        Some(local),
        imported.clone(),
        None,
    ));
    let keys = KeyResolver::new(a, HostAddr::V4(COLLECTOR), provider).watch(imported);
    Pipeline::new(shared, keys, replay)
}

/// The pipeline's rejections so far, by reason (those with a count).
pub fn rejections(p: &Pipeline) -> Vec<(RejectReason, u64)> {
    RejectReason::ALL
        .into_iter()
        .map(|r| (r, p.shared().counters.rejected(r)))
        .filter(|(_, n)| *n > 0)
        .collect()
}

/// The pipeline's current value of `k` (panics if it has none).
pub fn value(p: &Pipeline, k: MetricKey) -> f64 {
    p.shared()
        .metrics
        .get(&k)
        .unwrap_or_else(|| panic!("no value for {k:?}"))
        .value
}
