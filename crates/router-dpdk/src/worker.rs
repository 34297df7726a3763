//! The worker loop: rx burst -> underlay parse -> scion-dp `process_burst_with` (with the
//! ID-INT stage) -> underlay rewrite in place -> tx burst per egress port. Nothing on this
//! path allocates, locks, logs or makes system calls.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use scion_dp::config::Router;
use scion_dp::idint::{CtrDrbg, IdIntStage, NonceSource, ReportExporter, VerifierKeys};
use scion_dp::telemetry::{
    CounterKind, Direction, Environment, HopContext, QueueMetric, TelemetrySource,
};
use scion_dp::{BurstPacket, Disposition, Ingress, Processor};

use crate::export::RingExporter;
use crate::ndp;
use crate::neighbor::Learned;
use crate::neighbor::{Neighbor6Table, NeighborTable};
use crate::stats::{IoCounters, WorkerStats};
use crate::underlay;
use dpdk::{Consumer, MAX_BURST, Mbuf, MbufBurst, Mempool, Producer, RxQueue, TxQueue};
use router_core::clock::{SharedClock, TscClock};
use router_core::telemetry::{EnergyFigures, PortSample, average_x16, fraction_255};
#[cfg(feature = "measurement-aids")]
use scion_dp::lower_bound::{LowerBound, WithStage};

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

impl Tables {
    /// The MAC of next hop `ip` at `now_s` (Unix seconds): static configuration first (never
    /// stale), then ARP- or NDP-learned. Inlined: the address is built by the caller just
    /// before, and a call would read it back through memory.
    #[inline(always)]
    fn neighbor(&self, ip: &IpAddr, now_s: u32) -> Option<Learned> {
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
    fn is_mine(&self, port: usize, ip: Ipv4Addr) -> bool {
        self.ingress
            .get(port)
            .is_some_and(|l| l.iter().any(|(a, _)| a.ip() == IpAddr::V4(ip)))
    }

    /// Whether `ip` is one of the router's IPv6 underlay addresses on port `port`.
    #[inline]
    fn is_mine6(&self, port: usize, ip: Ipv6Addr) -> bool {
        self.ingress
            .get(port)
            .is_some_and(|l| l.iter().any(|(a, _)| a.ip() == IpAddr::V6(ip)))
    }
}

/// The router's measurements for ID-INT: TSC timestamps, port counters and link utilisation
/// (sampled by the control thread), node id, uptime, configured energy figures.
#[derive(Debug)]
pub struct RouterTelemetry {
    /// Clock.
    pub clock: TscClock,
    /// Node id.
    pub node_id: Option<u32>,
    /// Start time (Unix ns).
    pub started_ns: u64,
    /// Time the current burst was received (Unix ns).
    pub rx_ns: u64,
    /// Samples by port index.
    pub ports: Arc<[PortSample]>,
    /// Port index by interface id (0 = internal port).
    pub tables: Arc<Tables>,
    /// Energy figures.
    pub energy: EnergyFigures,
    /// The rx sources this worker polls, with their port index: the receive buffers the
    /// buffer instructions report on (see [`RouterTelemetry::begin_burst`]). Owned here so
    /// that a queue's depth is read on its polling thread, by its only handle.
    pub rx: Vec<(usize, Source)>,
    /// This worker's tx queue index on every port (with software distribution, the
    /// distributor's: 0).
    pub tx_queue: u16,
    /// Index into `rx` of the burst being processed.
    current: usize,
    /// The current burst's buffer depth, once read.
    depth_now: Option<Option<u32>>,
    /// The current burst's egress time, once read: its packets leave together in one tx
    /// burst after it is processed, so one clock read serves them all (a TSC read per packet
    /// cost ~12 ns here).
    tx_ns: Option<u64>,
    /// Average depth of each buffer ×16 (exponentially weighted, 1/8 per sample), `None`
    /// until sampled or if the buffer cannot be read.
    depth_avg_x16: Vec<Option<u32>>,
    /// (CPU, memory) usage as fractions of 255, from the last sample (see
    /// [`RouterTelemetry::sample_usage`]).
    usage: Option<(u8, u8)>,
}

impl RouterTelemetry {
    /// Telemetry with the given measurements; rx sources and tx queue as the worker has them.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        clock: TscClock,
        node_id: Option<u32>,
        started_ns: u64,
        ports: Arc<[PortSample]>,
        tables: Arc<Tables>,
        energy: EnergyFigures,
        rx: Vec<(usize, Source)>,
        tx_queue: u16,
    ) -> Self {
        let n = rx.len();
        RouterTelemetry {
            clock,
            node_id,
            started_ns,
            rx_ns: started_ns,
            ports,
            tables,
            energy,
            rx,
            tx_queue,
            current: 0,
            depth_now: None,
            tx_ns: None,
            depth_avg_x16: vec![None; n],
            usage: None,
        }
    }

    /// Records usage over the last interval: the worker's busy share (cycles spent on bursts
    /// that carried packets, of `interval_cycles`; a poll-mode core is always running, so
    /// this is the load that matters) and the packet memory in use (mbufs of the pool).
    pub fn sample_usage(&mut self, busy_cycles: u64, interval_cycles: u64, pool: &Mempool) {
        let (used, free) = (u64::from(pool.in_use()), u64::from(pool.available()));
        self.usage = Some((
            fraction_255(busy_cycles, interval_cycles),
            fraction_255(used, used + free),
        ));
    }

    /// A burst received at `rx_ns` from rx source `source` (index into `rx`) is about to
    /// be processed: timestamps and the buffer instructions refer to it.
    #[inline]
    pub fn begin_burst(&mut self, source: usize, rx_ns: u64) {
        self.rx_ns = rx_ns;
        self.current = source;
        self.depth_now = None;
        self.tx_ns = None;
    }

    /// Samples every buffer's depth into its average (called periodically by the worker).
    pub fn sample_buffers(&mut self) {
        for ((_, b), avg) in self.rx.iter().zip(self.depth_avg_x16.iter_mut()) {
            *avg = b.depth().map(|d| match *avg {
                None => d.saturating_mul(16),
                Some(a) => average_x16(a, d),
            });
        }
    }

    #[inline]
    fn port_of(&self, ifid: u16) -> Option<&PortSample> {
        let i = if ifid == 0 {
            self.tables.internal_port
        } else {
            self.tables.egress.get(usize::from(ifid))?.as_ref()?.port
        };
        self.ports.get(i)
    }
}

impl TelemetrySource for RouterTelemetry {
    fn node_id(&self) -> Option<u32> {
        self.node_id
    }
    fn ingress_timestamp_ns(&mut self, _ctx: &HopContext) -> Option<u64> {
        Some(self.rx_ns)
    }
    fn egress_timestamp_ns(&mut self, _ctx: &HopContext) -> Option<u64> {
        Some(
            *self
                .tx_ns
                .get_or_insert_with(|| self.clock.unix_ns(dpdk::rdtsc())),
        )
    }
    fn interface_counter(&mut self, ifid: u16, dir: Direction, kind: CounterKind) -> Option<u64> {
        self.port_of(ifid).map(|p| p.counter(dir, kind))
    }
    fn total_counter(&mut self, dir: Direction, kind: CounterKind) -> Option<u64> {
        Some(self.ports.iter().map(|p| p.counter(dir, kind)).sum())
    }
    fn link_utilisation_kbps(&mut self, ifid: u16, dir: Direction) -> Option<u32> {
        let p = self.port_of(ifid)?;
        let v = match dir {
            Direction::Rx => p.rx_kbps.load(Ordering::Relaxed),
            Direction::Tx => p.tx_kbps.load(Ordering::Relaxed),
        };
        Some(v.min(u64::from(u32::MAX)) as u32)
    }
    /// Queue id: this worker's tx queue on the egress port. Queue length: not measured (the
    /// drivers expose no portable tx ring occupancy). Buffer items: the receive buffer the
    /// packet waited in (its rx queue or, with software distribution, the worker's ring):
    /// in a run-to-completion router that is where packets queue; `ifid` does not change it.
    fn queue(&mut self, ifid: u16, metric: QueueMetric) -> Option<u32> {
        match metric {
            QueueMetric::QueueId => self.port_of(ifid).map(|_| u32::from(self.tx_queue)),
            QueueMetric::QueueLen | QueueMetric::QueueLenAvg => None,
            QueueMetric::BufferId => self.rx.get(self.current).map(|(_, b)| u32::from(b.id())),
            QueueMetric::BufferOccupancy => {
                if self.depth_now.is_none() {
                    self.depth_now = Some(self.rx.get(self.current).and_then(|(_, b)| b.depth()));
                }
                self.depth_now.flatten()
            }
            QueueMetric::BufferOccupancyAvg => self
                .depth_avg_x16
                .get(self.current)
                .copied()
                .flatten()
                .map(|a| (a + 8) / 16),
        }
    }
    fn cpu_memory_usage(&mut self) -> Option<(u8, u8)> {
        self.usage
    }
    fn interface_speed_mbps(&mut self, ifid: u16) -> Option<u32> {
        let s = self.port_of(ifid)?.speed_mbps.load(Ordering::Relaxed);
        (s != 0).then_some(s.min(u64::from(u32::MAX)) as u32)
    }
    fn energy_per_packet_nj(&mut self, _ctx: &HopContext) -> Option<u32> {
        self.energy.energy_per_packet_nj
    }
    fn co2_per_packet_pg(&mut self, _ctx: &HopContext) -> Option<u32> {
        self.energy.co2_per_packet_pg
    }
    fn environment(&mut self, item: Environment) -> Option<u16> {
        match item {
            Environment::PowerDraw => self.energy.power_w,
            _ => None,
        }
    }
    fn node_ipv4(&self) -> Option<Ipv4Addr> {
        match self.tables.internal_addr.ip() {
            IpAddr::V4(a) => Some(a),
            IpAddr::V6(_) => None,
        }
    }
    fn node_ipv6(&self) -> Option<Ipv6Addr> {
        match self.tables.internal_addr.ip() {
            IpAddr::V6(a) => Some(a),
            IpAddr::V4(_) => None,
        }
    }
    fn uptime_s(&mut self) -> Option<u32> {
        Some((self.rx_ns.saturating_sub(self.started_ns) / 1_000_000_000) as u32)
    }
    fn software_version(&self) -> Option<(u16, u16, u16)> {
        let p = |s: &str| s.parse().unwrap_or(0);
        Some((
            p(env!("CARGO_PKG_VERSION_MAJOR")),
            p(env!("CARGO_PKG_VERSION_MINOR")),
            p(env!("CARGO_PKG_VERSION_PATCH")),
        ))
    }
}

/// One packet of a burst: the owned mbuf plus what the underlay said.
#[derive(Debug, Default)]
struct Slot {
    m: Option<dpdk::RoomMbuf>,
    offset: usize,
    len: usize,
    ingress: Option<Ingress>,
    /// The egress interface of a packet forwarded on an external link (the common decision,
    /// kept apart from `disposition`: see [`BurstPacket::set_disposition`]).
    forward: Option<u16>,
    /// Any other decision.
    disposition: Option<Disposition>,
}

impl BurstPacket for Slot {
    #[inline]
    fn buffer(&mut self) -> &mut [u8] {
        match self.m.as_mut() {
            Some(m) => m.room(),
            None => &mut [],
        }
    }
    #[inline]
    fn len(&self) -> usize {
        self.len
    }
    #[inline]
    fn ingress(&self) -> Ingress {
        self.ingress.unwrap_or(Ingress::Internal)
    }
    #[inline]
    fn disposition_mut(&mut self) -> &mut Option<Disposition> {
        &mut self.disposition
    }
    #[inline(always)]
    fn set_disposition(&mut self, d: Disposition) {
        if let Disposition::Forward { ifid } = d {
            self.forward = Some(ifid);
            self.disposition = None;
        } else {
            self.forward = None;
            self.disposition = Some(d);
        }
    }
}

/// Where a worker's packets come from: an rx queue of the port, or (software flow
/// distribution) the ring the distributor fills for this worker and port.
#[derive(Debug)]
pub enum Source {
    /// A NIC rx queue.
    Queue(RxQueue),
    /// A ring fed by the distributor lcore, with the id it reports as buffer id (the rx
    /// queue index the worker would poll without software distribution).
    Ring(Consumer, u16),
}

impl Source {
    /// Receives into the free room of `burst`.
    #[inline]
    pub fn receive(&mut self, burst: &mut MbufBurst) -> usize {
        match self {
            Source::Queue(q) => q.rx_burst(burst),
            Source::Ring(r, _) => r.dequeue(burst),
        }
    }

    /// The buffer's identifier: the rx queue index, or the id a ring was given.
    pub fn id(&self) -> u16 {
        match self {
            Source::Queue(q) => q.queue(),
            Source::Ring(_, id) => *id,
        }
    }

    /// Packets waiting now; `None` if the driver cannot tell (virtual devices such as
    /// `net_pcap` and `net_null` do not implement the count).
    #[inline]
    pub fn depth(&self) -> Option<u32> {
        match self {
            Source::Queue(q) => q.depth(),
            Source::Ring(r, _) => Some(r.count()),
        }
    }
}

/// Where a worker's packets for one port go: a tx queue, or a ring the distributor drains.
#[derive(Debug)]
pub enum Sink {
    /// A NIC tx queue.
    Queue(TxQueue),
    /// A ring drained by the distributor lcore.
    Ring(Producer),
}

impl Sink {
    /// Sends; unsent mbufs stay in `burst`.
    #[inline]
    pub fn send(&mut self, burst: &mut MbufBurst) -> usize {
        match self {
            Sink::Queue(q) => q.tx_burst(burst),
            Sink::Ring(r) => r.enqueue(burst),
        }
    }
}

/// Everything one worker owns.
pub struct Worker<K: VerifierKeys> {
    /// One tx queue per port index.
    pub tx: Vec<Sink>,
    /// Shared tables.
    pub tables: Arc<Tables>,
    /// The router model.
    pub router: Arc<Router>,
    /// Published counters.
    pub stats: Arc<WorkerStats>,
    /// Pool for frames the worker makes itself (ARP requests, neighbor solicitations).
    pub pool: &'static Mempool,
    /// ID-INT keys.
    pub keys: K,
    /// Nonce generator seed (from the OS).
    pub seed: [u8; 32],
    /// Telemetry source; it owns the rx sources polled (see [`RouterTelemetry::rx`]).
    pub telemetry: RouterTelemetry,
    /// Infrastructure-mode sink export (the stage acts as sink when set).
    pub exporter: Option<RingExporter>,
    /// Measurement aids (benchmark builds only; see `Config::aids`).
    #[cfg(feature = "measurement-aids")]
    pub aids: crate::config::MeasurementAids,
    /// The corrected clock the control thread publishes (taken up every few ms).
    pub clock: Arc<SharedClock>,
}

impl<K: VerifierKeys> Worker<K> {
    /// Polls until [`dpdk::stop_requested`]; returns the number of frames received.
    pub fn run(self) -> u64 {
        let Worker {
            tx,
            tables,
            router,
            stats,
            pool,
            keys,
            seed,
            telemetry,
            exporter,
            #[cfg(feature = "measurement-aids")]
            aids,
            clock: shared_clock,
        } = self;
        let clock = telemetry.clock;
        let io = Io {
            tx,
            tables,
            stats,
            clock,
            shared_clock,
            pool,
            #[cfg(feature = "measurement-aids")]
            lower_bound: aids.idint_lower_bound,
        };
        #[cfg(feature = "measurement-aids")]
        if aids.io_only {
            return io.forward_untouched(&router, telemetry.rx);
        }
        let stage = IdIntStage::new(keys, telemetry, CtrDrbg::new(seed));
        match exporter {
            Some(x) => io.poll(&router, stage.with_sink(x)),
            None => io.poll(&router, stage),
        }
    }
}

/// The worker's I/O side.
struct Io {
    tx: Vec<Sink>,
    tables: Arc<Tables>,
    stats: Arc<WorkerStats>,
    clock: TscClock,
    shared_clock: Arc<SharedClock>,
    pool: &'static Mempool,
    /// ID-INT through [`scion_dp::lower_bound`].
    #[cfg(feature = "measurement-aids")]
    lower_bound: scion_dp::lower_bound::Mode,
}

impl Io {
    /// The I/O-only ceiling: every received burst goes out by the next port unchanged.
    #[cfg(feature = "measurement-aids")]
    fn forward_untouched(mut self, router: &Router, mut rx: Vec<(usize, Source)>) -> u64 {
        let proc = Processor::new(router);
        let idint = scion_dp::idint::IdIntCounters::default();
        let mut io = IoCounters::default();
        let mut burst = MbufBurst::new();
        let ports = self.tx.len();
        let clock = self.clock;
        let publish_every = clock.hz() / 200;
        let mut last_publish = 0u64;
        while !dpdk::stop_requested() {
            for (port, q) in rx.iter_mut() {
                let n = q.receive(&mut burst);
                if n == 0 {
                    continue;
                }
                io.rx_frames += n as u64;
                for m in burst.as_mut_slice() {
                    io.rx_bytes += m.pkt_len() as u64;
                }
                flush(&mut self.tx[(*port + 1) % ports], &mut burst, &mut io);
            }
            let tsc = dpdk::rdtsc();
            if tsc.wrapping_sub(last_publish) > publish_every {
                last_publish = tsc;
                self.stats
                    .publish(&io, proc.counters(), &idint, &Default::default());
            }
        }
        self.stats
            .publish(&io, proc.counters(), &idint, &Default::default());
        io.rx_frames
    }

    fn poll<K, N, X>(
        mut self,
        router: &Router,
        mut stage: IdIntStage<K, RouterTelemetry, N, X>,
    ) -> u64
    where
        K: VerifierKeys,
        N: NonceSource,
        X: ReportExporter,
    {
        let mut proc = Processor::new(router);
        let mut io = IoCounters::default();
        let mut slots: Vec<Slot> = (0..MAX_BURST).map(|_| Slot::default()).collect();
        let mut out: Vec<MbufBurst> = (0..self.tx.len()).map(|_| MbufBurst::new()).collect();
        let mut burst = MbufBurst::new();
        let mut clock = self.clock;
        let mut resolver = Resolver {
            pool: self.pool,
            interval: clock.hz() / 10,
            asked: [(0, 0); 64],
        };
        let tables = &*self.tables;
        let publish_every = clock.hz() / 200;
        let mut last_publish = dpdk::rdtsc();
        // Cycles spent on bursts since the last publication (the CPU usage telemetry).
        let mut busy = 0u64;
        #[cfg(feature = "measurement-aids")]
        let mut bound = LowerBound::new(self.lower_bound);
        // The rx sources live in the telemetry (it reads their depth).
        let sources = stage.source().rx.len();
        loop {
            if dpdk::stop_requested() {
                break;
            }
            for i in 0..sources {
                let (port, q) = &mut stage.source_mut().rx[i];
                let port = *port;
                let n = q.receive(&mut burst);
                if n == 0 {
                    continue;
                }
                let start = dpdk::rdtsc();
                let now = clock.unix_ns(start);
                stage.source_mut().begin_burst(i, now);
                let now_s = (now / 1_000_000_000) as u32;
                let filled = classify(
                    tables, port, now_s, &mut burst, &mut slots, &mut out, &mut io,
                );
                #[cfg(feature = "measurement-aids")]
                match bound.as_mut() {
                    None => proc.process_burst_with(&mut slots[..filled], now, &mut stage),
                    Some(bound) => {
                        let hook = &mut WithStage {
                            bound,
                            stage: &mut stage,
                        };
                        proc.process_burst_with(&mut slots[..filled], now, hook);
                    }
                }
                #[cfg(not(feature = "measurement-aids"))]
                proc.process_burst_with(&mut slots[..filled], now, &mut stage);
                // Neighbour tables change between bursts (ARP/NDP in `classify`), not within.
                let mut macs = EgressMacs::default();
                for s in slots[..filled].iter_mut() {
                    let r = (&mut out[..], &mut io, &mut resolver, &mut macs);
                    route(tables, port, now_s, s, r);
                }
                send_all(tables, &mut out, &mut self.tx, &mut io);
                busy += dpdk::rdtsc().wrapping_sub(start);
            }
            let tsc = dpdk::rdtsc();
            if tsc.wrapping_sub(last_publish) > publish_every {
                self.stats.publish(
                    &io,
                    proc.counters(),
                    stage.counters(),
                    &stage.keys().lookups(),
                );
                stage.source_mut().sample_buffers();
                stage
                    .source_mut()
                    .sample_usage(busy, tsc.wrapping_sub(last_publish), self.pool);
                last_publish = tsc;
                busy = 0;
                // The control thread's corrected clock, for timestamps and time.
                clock = self.shared_clock.load();
                stage.source_mut().clock = clock;
            }
        }
        send_all(tables, &mut out, &mut self.tx, &mut io);
        self.stats.publish(
            &io,
            proc.counters(),
            stage.counters(),
            &stage.keys().lookups(),
        );
        #[cfg(feature = "measurement-aids")]
        if let Some(b) = bound {
            eprintln!(
                "idint-router: lower-bound ID-INT: {} entries from the template, {} packets through the stage",
                b.templated, b.general
            );
        }
        io.rx_frames
    }
}

/// How many received packets ahead of the one being classified have their headers prefetched.
const RX_PREFETCH_AHEAD: usize = 3;

/// Moves the received mbufs into slots (underlay parsed); frames that are not SCION for us
/// are freed and counted. Returns the number of slots filled.
#[inline]
fn classify(
    tables: &Tables,
    port: usize,
    now_s: u32,
    burst: &mut MbufBurst,
    slots: &mut [Slot],
    out: &mut [MbufBurst],
    io: &mut IoCounters,
) -> usize {
    let mut n = 0;
    // The port's VLAN and its underlay addresses, once per burst.
    let vlan = tables.vlans.get(port).copied().flatten();
    let local = tables.ingress.get(port).map_or(&[][..], Vec::as_slice);
    for m in burst.drain_prefetching(RX_PREFETCH_AHEAD) {
        io.rx_frames += 1;
        io.rx_bytes += m.pkt_len() as u64;
        if m.segments() != 1 {
            io.chained += 1;
            continue;
        }
        let mut m = m;
        if let Some(vid) = vlan
            && !untag(&mut m, vid)
        {
            io.wrong_vlan += 1;
            continue;
        }
        let r = match underlay::parse(m.data()) {
            Ok(r) => r,
            Err(underlay::NotScion::OtherEtherType) => {
                let mine = |ip: Ipv4Addr| tables.is_mine(port, ip);
                // An ARP packet to one of our addresses teaches its sender; any other one
                // (a gratuitous ARP after a failover, say) updates a sender already known
                // (RFC 826's merge), so a neighbour's new MAC is used at once.
                if let Some((ip, mac, target)) = underlay::arp_sender(m.data())
                    && (mine(target) || tables.learned.lookup(ip, now_s).is_some())
                    && tables.learned.learn(ip, mac, now_s)
                {
                    io.arp_learned += 1;
                }
                if let (Some(&mac), Some(b)) = (tables.ports.get(port), out.get_mut(port))
                    && underlay::arp_reply_in_place(m.data_mut(), mac, mine)
                {
                    io.arp_replies += 1;
                    if let Err(m) = b.push(m) {
                        drop(m);
                        io.tx_full += 1;
                    }
                    continue;
                }
                io.not_scion += 1;
                continue;
            }
            Err(underlay::NotScion::NotUdp) => {
                ndp_frame(tables, port, now_s, m, out, io);
                continue;
            }
            Err(_) => {
                io.not_scion += 1;
                continue;
            }
        };
        let Some(mut ingress) = local.iter().find(|(a, _)| *a == r.dst).map(|(_, i)| *i) else {
            io.not_for_us += 1;
            continue;
        };
        if ingress == Ingress::Internal
            && let Some((_, ifid)) = tables.siblings.iter().find(|(a, _)| *a == r.src)
        {
            ingress = Ingress::Sibling(*ifid);
        }
        let m = match m.with_room(r.offset) {
            Ok(m) => m,
            Err(_) => {
                io.chained += 1;
                continue;
            }
        };
        let s = &mut slots[n];
        s.offset = r.offset;
        s.len = r.len;
        s.ingress = Some(ingress);
        s.forward = None;
        s.disposition = None;
        s.m = Some(m);
        n += 1;
    }
    n
}

/// An IP frame that is not UDP: learns from an NDP message addressed to the router and
/// answers a solicitation for one of its addresses in place (queued on `port`); anything else
/// is freed and counted as `not_scion`.
#[cold]
#[inline(never)]
fn ndp_frame(
    tables: &Tables,
    port: usize,
    now_s: u32,
    mut m: Mbuf,
    out: &mut [MbufBurst],
    io: &mut IoCounters,
) {
    let mine = |ip: Ipv6Addr| tables.is_mine6(port, ip);
    if let Ok(msg) = ndp::parse(m.data()) {
        // What a message to us teaches; or an unsolicited advertisement with the Override flag
        // for a neighbour already known (RFC 4861 7.2.5: its new MAC replaces the old).
        let learned = msg
            .neighbor_for(mine)
            .or_else(|| msg.update_for(|ip| tables.learned6.lookup(ip, now_s).is_some()));
        if let Some((ip, mac)) = learned
            && tables.learned6.learn(ip, mac, now_s)
        {
            io.ndp_learned += 1;
        }
        if msg.kind == ndp::Kind::Solicitation
            && let (Some(&mac), Some(b)) = (tables.ports.get(port), out.get_mut(port))
            && ndp::reply_in_place(m.data_mut(), mac, mine)
        {
            io.ndp_replies += 1;
            if let Err(m) = b.push(m) {
                drop(m);
                io.tx_full += 1;
            }
            return;
        }
    }
    io.not_scion += 1;
}

/// Rewrites the underlay of a processed packet and queues it on its egress port, or frees it.
#[inline]
fn route(
    tables: &Tables,
    in_port: usize,
    now_s: u32,
    s: &mut Slot,
    (out, io, resolver, macs): (
        &mut [MbufBurst],
        &mut IoCounters,
        &mut Resolver,
        &mut EgressMacs,
    ),
) {
    let Some(mut m) = s.m.take().map(dpdk::RoomMbuf::into_mbuf) else {
        return;
    };
    // A forwarded packet's egress comes from its compact field; any other decision is read by
    // reference (`classify` resets both when the slot is reused).
    let forward;
    let arrived;
    let d = match (s.forward, &s.disposition) {
        (Some(ifid), _) => {
            forward = Disposition::Forward { ifid };
            &forward
        }
        (None, Some(d)) => d,
        (None, None) => return,
    };
    // (egress port, src, dst, dst mac, SCION length). The addresses stay references into the
    // tables, the disposition and the slot: copying the large `SocketAddr` values and reading
    // them back piecewise stalled on store forwarding.
    #[allow(clippy::type_complexity)]
    let (port, src, dst, mac, len, v4): (
        usize,
        &SocketAddr,
        &SocketAddr,
        _,
        usize,
        Option<&underlay::V4Header>,
    ) = match d {
        Disposition::Forward { ifid } => {
            let Some(e) = tables
                .egress
                .get(usize::from(*ifid))
                .and_then(Option::as_ref)
            else {
                io.unroutable += 1;
                return;
            };
            let mac = match e.mac {
                Some(mac) => Some(Learned { mac, stale: false }),
                None => macs.get_or(*ifid, || tables.neighbor(&e.remote.ip(), now_s)),
            };
            (e.port, &e.local, &e.remote, mac, s.len, e.v4.as_ref())
        }
        Disposition::Sibling { addr, .. } | Disposition::Deliver { addr } => {
            let mac = tables.neighbor(&addr.ip(), now_s);
            (
                tables.internal_port,
                &tables.internal_addr,
                addr,
                mac,
                s.len,
                None,
            )
        }
        Disposition::Reply { len, .. } => {
            // The frame still starts with the headers it arrived with (only the SCION packet
            // after them was rewritten): the reply goes back the way they came.
            let Ok(r) = underlay::parse(m.data()) else {
                io.unroutable += 1;
                return;
            };
            arrived = r;
            let mac = Learned {
                mac: arrived.eth_src,
                stale: false,
            };
            (in_port, &arrived.dst, &arrived.src, Some(mac), *len, None)
        }
        Disposition::Bfd | Disposition::Suppressed { .. } | Disposition::Drop(_) => return,
    };
    let ask = |resolver: &mut Resolver, out: &mut [MbufBurst], io: &mut IoCounters| {
        resolver.ask(tables, port, (src.ip(), dst.ip()), out, io)
    };
    let mac = match mac {
        Some(l) => {
            // A stale entry is still used while the neighbour is asked again.
            if l.stale {
                ask(resolver, out, io);
            }
            l.mac
        }
        None => match tables.default_macs.get(port).copied().flatten() {
            Some(mac) => mac,
            None => {
                io.no_next_hop_mac += 1;
                ask(resolver, out, io);
                return;
            }
        },
    };
    let (Some(src_mac), Some(b)) = (tables.ports.get(port).copied(), out.get_mut(port)) else {
        io.unroutable += 1;
        return;
    };
    // Source address of the reply/forward must match the destination's family; a router
    // address of the other family (e.g. IPv6 internal, IPv4 link) cannot be used.
    if src.is_ipv4() != dst.is_ipv4() {
        io.unroutable += 1;
        return;
    }
    let hl = underlay::header_len(dst);
    if !m.set_len(s.offset + len) {
        io.unroutable += 1;
        return;
    }
    let ok = if hl < s.offset {
        m.adj((s.offset - hl) as u16)
    } else if hl > s.offset {
        m.prepend((hl - s.offset) as u16)
    } else {
        true
    };
    let written = match v4 {
        // A link's headers from its template (the port's MAC is the template's source).
        Some(t) => t.write(m.data_mut(), mac, len),
        None => underlay::write(m.data_mut(), src_mac, mac, src, dst, len),
    };
    if !ok || !written {
        io.unroutable += 1;
        return;
    }
    if let Err(m) = b.push(m) {
        drop(m);
        io.tx_full += 1;
    }
}

/// The next-hop MACs of the last few egress interfaces looked up in one burst: packets of a
/// burst mostly leave by a few links, and each lookup would search the static and learned
/// neighbours again. Valid for one burst only (what the tables said then).
#[derive(Default)]
struct EgressMacs {
    ifids: [u16; 4],
    macs: [Option<Learned>; 4],
    /// Entries filled.
    n: usize,
    /// Lookups so far (the next entry to replace once all are filled).
    next: usize,
}

impl EgressMacs {
    /// The MAC for `ifid`, from `lookup` the first time in this burst.
    #[inline]
    fn get_or(&mut self, ifid: u16, lookup: impl FnOnce() -> Option<Learned>) -> Option<Learned> {
        if let Some(k) = self.ifids[..self.n].iter().position(|&i| i == ifid) {
            return self.macs[k];
        }
        let mac = lookup();
        // Round robin once full (a burst to more links than that looks some up again).
        let k = self.next % self.ifids.len();
        self.next += 1;
        self.ifids[k] = ifid;
        self.macs[k] = mac;
        self.n = self.next.min(self.ifids.len());
        mac
    }
}

/// Sends ARP requests (IPv4) and neighbor solicitations (IPv6) for next hops without a MAC
/// (the packet that needed it is dropped; later ones find the learned MAC) or with a stale
/// one, at most one per address every 100 ms per worker.
pub struct Resolver {
    /// Pool for the request frames.
    pub pool: &'static Mempool,
    /// TSC ticks between two requests for the same address.
    pub interval: u64,
    /// (address as IPv6, IPv4 mapped; TSC of the last request), by address hash.
    pub asked: [(u128, u64); 64],
}

impl Resolver {
    /// Asks for the MAC of `target` from the router's address `me` (same family) on `port`.
    #[cold]
    fn ask(
        &mut self,
        tables: &Tables,
        port: usize,
        (me, target): (IpAddr, IpAddr),
        out: &mut [MbufBurst],
        io: &mut IoCounters,
    ) {
        let key = match target {
            IpAddr::V4(v4) => u128::from(v4.to_ipv6_mapped()),
            IpAddr::V6(v6) => u128::from(v6),
        };
        let h = ((key >> 64) as u64 ^ key as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let slot = &mut self.asked[(h >> 58) as usize];
        let now = dpdk::rdtsc();
        if slot.0 == key && now.wrapping_sub(slot.1) < self.interval {
            return;
        }
        let (Some(&mac), Some(b)) = (tables.ports.get(port), out.get_mut(port)) else {
            return;
        };
        let Some(mut m) = self.pool.alloc() else {
            return;
        };
        let (ok, counter) = match (me, target) {
            (IpAddr::V4(me), IpAddr::V4(target)) => (
                m.append(underlay::ARP_FRAME_LEN)
                    .is_some_and(|f| underlay::write_arp_request(f, mac, me, target)),
                &mut io.arp_requests,
            ),
            (IpAddr::V6(me), IpAddr::V6(target)) => (
                m.append(ndp::NS_FRAME_LEN)
                    .is_some_and(|f| ndp::write_solicitation(f, mac, me, target)),
                &mut io.ndp_requests,
            ),
            // No request across families (the frame is freed).
            _ => return,
        };
        if ok && b.push(m).is_ok() {
            *slot = (key, now);
            *counter += 1;
        }
    }
}

/// Removes the 802.1Q tag of a frame received on a port of VLAN `vid`; `false` (frame to
/// drop) if it is untagged, of another VLAN or too short.
#[inline]
fn untag(m: &mut Mbuf, vid: u16) -> bool {
    underlay::vlan_id(m.data()) == Some(vid)
        && underlay::untag_in_place(m.data_mut())
        && m.adj(underlay::VLAN_TAG_LEN as u16)
}

/// Sends every port's queued burst, tagging the frames of VLAN ports first.
#[inline]
fn send_all(tables: &Tables, out: &mut [MbufBurst], tx: &mut [Sink], io: &mut IoCounters) {
    for (p, (b, t)) in out.iter_mut().zip(tx.iter_mut()).enumerate() {
        if let Some(vid) = tables.vlans.get(p).copied().flatten() {
            tag_burst(b, vid, io);
        }
        flush(t, b, io);
    }
}

/// Tags every frame queued for a port of VLAN `vid`; a frame without head room for the tag
/// is freed and counted as unroutable (never sent untagged).
#[cold]
fn tag_burst(b: &mut MbufBurst, vid: u16, io: &mut IoCounters) {
    if b.is_empty() {
        return;
    }
    let mut tagged = MbufBurst::new();
    for mut m in b.drain() {
        if m.prepend(underlay::VLAN_TAG_LEN as u16) && underlay::tag_in_place(m.data_mut(), vid) {
            if let Err(m) = tagged.push(m) {
                drop(m);
                io.tx_full += 1;
            }
        } else {
            io.unroutable += 1;
        }
    }
    *b = tagged;
}

/// Sends a port's queued burst; what the driver does not take is freed and counted.
#[inline]
fn flush(t: &mut Sink, b: &mut MbufBurst, io: &mut IoCounters) {
    if b.is_empty() {
        return;
    }
    let sent = t.send(b);
    io.tx_frames += sent as u64;
    if !b.is_empty() {
        io.tx_full += b.len() as u64;
        b.clear();
    }
}

#[cfg(test)]
mod egress_mac_tests {
    use super::*;

    #[test]
    fn each_interface_is_looked_up_once_per_burst_and_answers_stay_exact() {
        let mut c = EgressMacs::default();
        let mut asked = Vec::new();
        let mac = |i: u16| {
            Some(Learned {
                mac: [i as u8; 6],
                stale: i.is_multiple_of(2),
            })
        };
        // Six interfaces, some repeated: more than the cache holds.
        for ifid in [1u16, 2, 1, 3, 4, 2, 5, 1, 6, 6, 5] {
            let got = c.get_or(ifid, || {
                asked.push(ifid);
                mac(ifid)
            });
            assert_eq!(got, mac(ifid), "interface {ifid}");
        }
        // 1..4 fill it; 5 replaces 1, so 1 is asked again (replacing 2), then 6 replaces 3.
        assert_eq!(asked, vec![1, 2, 3, 4, 5, 1, 6]);
        // An unknown neighbour is remembered as unknown for the burst.
        let mut c = EgressMacs::default();
        assert_eq!(c.get_or(9, || None), None);
        assert_eq!(c.get_or(9, || mac(9)), None);
    }
}

#[cfg(test)]
mod tests {}
