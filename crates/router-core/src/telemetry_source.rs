//! The router's measurements for ID-INT ([`TelemetrySource`]): timestamps from the TSC, port
//! counters and link utilisation (sampled by the control thread, see [`crate::telemetry`]),
//! receive-buffer occupancy, node id, uptime, CPU and memory usage, configured energy
//! figures. The receive buffers and the TSC are the I/O shell's, behind [`RxBuffer`] and
//! [`Tsc`].

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use scion_dp::telemetry::{
    CounterKind, Direction, Environment, HopContext, QueueMetric, TelemetrySource, code,
};

use crate::clock::TscClock;
use crate::tables::Tables;
use crate::telemetry::{EnergyFigures, PortSample, average_x16, fraction_255};

/// Nanoseconds per second.
const NS_PER_S: u64 = 1_000_000_000;
/// Scale of the buffer-occupancy averages (see [`average_x16`]).
const AVG_SCALE: u32 = 16;

/// A receive buffer a worker polls (an rx queue, or a ring fed by a distributor).
pub trait RxBuffer {
    /// The buffer's identifier (buffer id of the ID-INT buffer instructions).
    fn id(&self) -> u16;
    /// Packets waiting now; `None` if it cannot be read.
    fn depth(&self) -> Option<u32>;
}

/// A transmit buffer a worker sends into for one port (a tx queue, or a ring a distributor
/// drains): where a forwarded packet waits before it leaves.
pub trait TxBuffer {
    /// Packets waiting in it now (not yet sent on the wire); `None` if it cannot be read
    /// (a driver without descriptor status): never estimated.
    fn depth(&self) -> Option<u32>;
}

/// The time stamp counter the [`TscClock`] converts.
pub trait Tsc {
    /// The counter now.
    fn read(&self) -> u64;
}

/// The router's measurements for ID-INT: TSC timestamps, port counters and link utilisation
/// (sampled by the control thread), node id, uptime, configured energy figures.
#[derive(Debug)]
pub struct RouterTelemetry<B, T, S> {
    /// Clock (replaced by the worker with the control thread's corrected one).
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
    /// that a buffer's depth is read on its polling thread, by its only handle.
    pub rx: Vec<(usize, B)>,
    /// This worker's transmit buffer of every port, by port index: where its forwarded
    /// packets wait (the queue items report their depth; see [`RouterTelemetry::queue`]).
    /// Owned here, like `rx`, so that a depth is read by the only thread sending into it.
    pub tx: Vec<S>,
    /// This worker's tx queue index on every port (with software distribution, the
    /// distributor's: 0).
    pub tx_queue: u16,
    /// The TSC.
    tsc: T,
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
    /// The depth of one transmit buffer read during the current burst: (port, depth).
    tx_depth_now: Option<(usize, Option<u32>)>,
    /// Average depth of each transmit buffer ×16, as `depth_avg_x16`.
    tx_avg_x16: Vec<Option<u32>>,
    /// (CPU, memory) usage as fractions of 255, from the last sample (see
    /// [`RouterTelemetry::sample_usage`]).
    usage: Option<(u8, u8)>,
}

/// What a [`RouterTelemetry`] is made of besides its buffers and TSC.
#[derive(Debug, Clone)]
pub struct Measurements {
    /// Clock.
    pub clock: TscClock,
    /// Node id.
    pub node_id: Option<u32>,
    /// Start time (Unix ns).
    pub started_ns: u64,
    /// Port samples by port index.
    pub ports: Arc<[PortSample]>,
    /// The forwarding tables (port index by interface id, the router's address).
    pub tables: Arc<Tables>,
    /// Energy figures.
    pub energy: EnergyFigures,
}

impl<B: RxBuffer, T: Tsc, S: TxBuffer> RouterTelemetry<B, T, S> {
    /// Telemetry with the given measurements, rx sources, transmit buffers (by port) and tx
    /// queue index as the worker has them, timestamps from `tsc`.
    pub fn new(m: Measurements, rx: Vec<(usize, B)>, tx: Vec<S>, tx_queue: u16, tsc: T) -> Self {
        let n = rx.len();
        let ntx = tx.len();
        RouterTelemetry {
            clock: m.clock,
            node_id: m.node_id,
            started_ns: m.started_ns,
            rx_ns: m.started_ns,
            ports: m.ports,
            tables: m.tables,
            energy: m.energy,
            rx,
            tx,
            tx_queue,
            tsc,
            current: 0,
            depth_now: None,
            tx_ns: None,
            depth_avg_x16: vec![None; n],
            tx_depth_now: None,
            tx_avg_x16: vec![None; ntx],
            usage: None,
        }
    }

    /// Records usage over the last interval: the worker's busy share (cycles spent on bursts
    /// that carried packets, of `interval_cycles`; a poll-mode core is always running, so
    /// this is the load that matters) and the packet memory in use (`used` buffers of
    /// `used + free`).
    pub fn sample_usage(&mut self, busy_cycles: u64, interval_cycles: u64, used: u64, free: u64) {
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
        self.tx_depth_now = None;
    }

    /// A packet this router originated (an infrastructure-mode probe) at `now_ns` is about
    /// to be processed: it waited in no receive buffer, so the buffer items stay empty.
    pub fn begin_originated(&mut self, now_ns: u64) {
        self.begin_burst(usize::MAX, now_ns);
    }

    /// Samples every receive and transmit buffer's depth into its average (called
    /// periodically by the worker).
    pub fn sample_buffers(&mut self) {
        let avg = |avg: &mut Option<u32>, depth: Option<u32>| {
            *avg = depth.map(|d| match *avg {
                None => d.saturating_mul(AVG_SCALE),
                Some(a) => average_x16(a, d),
            });
        };
        for ((_, b), a) in self.rx.iter().zip(self.depth_avg_x16.iter_mut()) {
            avg(a, b.depth());
        }
        for (b, a) in self.tx.iter().zip(self.tx_avg_x16.iter_mut()) {
            avg(a, b.depth());
        }
    }

    /// Port index of interface `ifid` (0: the internal port).
    #[inline]
    fn port_index(&self, ifid: u16) -> Option<usize> {
        if ifid == 0 {
            Some(self.tables.internal_port)
        } else {
            self.tables
                .egress
                .get(usize::from(ifid))?
                .as_ref()
                .map(|e| e.port)
        }
    }

    /// The depth of the transmit buffer of `port` now, read once per burst and port.
    #[inline]
    fn tx_depth(&mut self, port: usize) -> Option<u32> {
        match self.tx_depth_now {
            Some((p, d)) if p == port => d,
            _ => {
                let d = self.tx.get(port).and_then(TxBuffer::depth);
                self.tx_depth_now = Some((port, d));
                d
            }
        }
    }

    #[inline]
    fn port_of(&self, ifid: u16) -> Option<&PortSample> {
        self.ports.get(self.port_index(ifid)?)
    }
}

/// `v` as a `u32`, saturated.
#[inline]
fn saturate_u32(v: u64) -> u32 {
    v.min(u64::from(u32::MAX)) as u32
}

impl<B: RxBuffer, T: Tsc, S: TxBuffer> TelemetrySource for RouterTelemetry<B, T, S> {
    fn node_id(&self) -> Option<u32> {
        self.node_id
    }
    /// What is taken once per burst ([`RouterTelemetry::begin_burst`]: the receive time and
    /// what follows from it, the egress time, the receive buffer's depth) or changes only
    /// between bursts (the averages and usage the worker samples, the configured energy
    /// figures, the tx queue id). Not the queue length (a re-read once another port's was
    /// read), nor what the control thread updates meanwhile (counters, utilisation, speeds).
    fn steady_in_burst(&self, c: u8) -> bool {
        matches!(
            c,
            code::INGRESS_TIMESTAMP
                | code::EGRESS_TIMESTAMP
                | code::UPTIME
                | code::QUEUE_ID
                | code::QUEUE_LEN_AVG
                | code::BUFFER_ID
                | code::BUFFER_OCCUPANCY
                | code::BUFFER_OCCUPANCY_AVG
                | code::CPU_MEMORY_USAGE
                | code::FORWARDING_ENERGY
                | code::CO2_PER_PACKET
                | code::CPU_TEMPERATURE
                | code::ASIC_TEMPERATURE
                | code::FAN_SPEED
                | code::POWER_DRAW
                | code::ENERGY_MIX
        )
    }
    fn ingress_timestamp_ns(&mut self, _ctx: &HopContext) -> Option<u64> {
        Some(self.rx_ns)
    }
    fn egress_timestamp_ns(&mut self, _ctx: &HopContext) -> Option<u64> {
        Some(
            *self
                .tx_ns
                .get_or_insert_with(|| self.clock.unix_ns(self.tsc.read())),
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
        Some(saturate_u32(v))
    }
    /// Queue id: this worker's tx queue on the egress port. Queue length: the packets
    /// waiting in the transmit buffer of the egress port this packet joins (the tx queue's
    /// descriptors still held by the NIC, or with software distribution the worker's ring
    /// to the distributor), read once per burst; its average from periodic samples; `None`
    /// where the buffer cannot be read (drivers without descriptor status). Buffer items:
    /// the receive buffer the packet waited in (its rx queue or, with software
    /// distribution, the worker's ring); `ifid` does not change them; none for packets the
    /// router originated.
    fn queue(&mut self, ifid: u16, metric: QueueMetric) -> Option<u32> {
        match metric {
            QueueMetric::QueueId => self.port_of(ifid).map(|_| u32::from(self.tx_queue)),
            QueueMetric::QueueLen => {
                let port = self.port_index(ifid)?;
                self.tx_depth(port)
            }
            QueueMetric::QueueLenAvg => {
                let port = self.port_index(ifid)?;
                self.tx_avg_x16
                    .get(port)
                    .copied()
                    .flatten()
                    .map(|a| (a + AVG_SCALE / 2) / AVG_SCALE)
            }
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
                .map(|a| (a + AVG_SCALE / 2) / AVG_SCALE),
        }
    }
    fn cpu_memory_usage(&mut self) -> Option<(u8, u8)> {
        self.usage
    }
    fn interface_speed_mbps(&mut self, ifid: u16) -> Option<u32> {
        let s = self.port_of(ifid)?.speed_mbps.load(Ordering::Relaxed);
        (s != 0).then_some(saturate_u32(s))
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
        Some((self.rx_ns.saturating_sub(self.started_ns) / NS_PER_S) as u32)
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

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;
    use crate::tables::test_tables::tables;
    use crate::telemetry::PortReading;

    /// A buffer with a settable depth.
    struct FakeBuffer(u16, Cell<Option<u32>>);
    impl RxBuffer for FakeBuffer {
        fn id(&self) -> u16 {
            self.0
        }
        fn depth(&self) -> Option<u32> {
            self.1.get()
        }
    }
    /// A transmit buffer with a settable depth that counts its reads.
    struct FakeTx(Cell<Option<u32>>, Cell<u32>);
    impl TxBuffer for FakeTx {
        fn depth(&self) -> Option<u32> {
            self.1.set(self.1.get() + 1);
            self.0.get()
        }
    }
    /// A TSC that counts its reads (one tick per ns from 0).
    #[derive(Default)]
    struct FakeTsc(Cell<u64>);
    impl Tsc for FakeTsc {
        fn read(&self) -> u64 {
            self.0.set(self.0.get() + 1);
            self.0.get()
        }
    }

    const HZ: u64 = 1_000_000_000;
    const START_NS: u64 = 1_700_000_000 * NS_PER_S;

    fn telemetry() -> RouterTelemetry<FakeBuffer, FakeTsc, FakeTx> {
        let ports: Arc<[PortSample]> = (0..3).map(|_| PortSample::default()).collect();
        let m = Measurements {
            clock: TscClock::new(HZ, 0, START_NS),
            node_id: Some(7),
            started_ns: START_NS,
            ports,
            tables: Arc::new(tables(None)),
            energy: EnergyFigures {
                power_w: Some(90),
                ..Default::default()
            },
        };
        let rx = vec![
            (0, FakeBuffer(3, Cell::new(Some(10)))),
            (1, FakeBuffer(3, Cell::new(None))),
        ];
        // Port 0 cannot be read, ports 1 and 2 have packets waiting.
        let tx = vec![
            FakeTx(Cell::new(None), Cell::new(0)),
            FakeTx(Cell::new(Some(4)), Cell::new(0)),
            FakeTx(Cell::new(Some(9)), Cell::new(0)),
        ];
        RouterTelemetry::new(m, rx, tx, 2, FakeTsc::default())
    }

    fn ctx() -> HopContext {
        HopContext {
            ingress_if: 1,
            egress_if: 2,
            len: 100,
            now_ns: START_NS,
        }
    }

    #[test]
    fn timestamps_one_tsc_read_per_burst_and_uptime() {
        let mut t = telemetry();
        t.begin_burst(0, START_NS + 5 * NS_PER_S);
        assert_eq!(
            t.ingress_timestamp_ns(&ctx()),
            Some(START_NS + 5 * NS_PER_S)
        );
        let e = t.egress_timestamp_ns(&ctx()).unwrap();
        assert_eq!(t.egress_timestamp_ns(&ctx()), Some(e));
        assert_eq!(t.tsc.0.get(), 1, "one TSC read per burst");
        assert_eq!(e, START_NS + 1);
        t.begin_burst(0, START_NS + 6 * NS_PER_S);
        assert_eq!(t.egress_timestamp_ns(&ctx()), Some(START_NS + 2));
        assert_eq!(t.uptime_s(), Some(6));
        assert_eq!(t.node_id(), Some(7));
        assert_eq!(t.node_ipv4(), Some(Ipv4Addr::new(10, 0, 0, 1)));
        assert_eq!(t.node_ipv6(), None);
        assert_eq!(t.environment(Environment::PowerDraw), Some(90));
        assert!(t.software_version().is_some());
    }

    #[test]
    fn steady_values_do_not_change_within_a_burst() {
        use scion_dp::telemetry::read_instruction;
        let ia: idint_wire::IsdAsn = "1-ff00:0:110".parse().unwrap();
        let mut t = telemetry();
        t.sample_buffers();
        t.sample_usage(50, 100, 1, 3);
        t.begin_burst(0, START_NS + 5 * NS_PER_S);
        let mut steady = 0;
        for c in 0..=u8::MAX {
            if !t.steady_in_burst(c) {
                continue;
            }
            steady += 1;
            let first = read_instruction(&mut t, ia, c, &ctx());
            // Mid-burst the buffers fill up and the TSC advances with every read.
            t.rx[0].1.1.set(Some(30));
            t.tx[1].0.set(Some(40));
            let again = read_instruction(&mut t, ia, c, &ctx());
            assert_eq!(first, again, "{c:#x}");
        }
        assert!(steady > 0);
        assert!(t.steady_in_burst(code::INGRESS_TIMESTAMP));
        assert!(!t.steady_in_burst(code::QUEUE_LEN), "re-read per port");
        assert!(
            !t.steady_in_burst(code::INGRESS_IF_PACKETS),
            "control thread"
        );
    }

    #[test]
    fn port_values_follow_the_interface_port() {
        let mut t = telemetry();
        let reading = PortReading {
            rx_packets: 40,
            tx_packets: 2,
            ..Default::default()
        };
        t.ports[1].update(&reading, 25_000, NS_PER_S);
        // Interface 1 is on port 1, interface 0 the internal port 0, 5 unknown.
        assert_eq!(
            t.interface_counter(1, Direction::Rx, CounterKind::Packets),
            Some(40)
        );
        assert_eq!(
            t.interface_counter(0, Direction::Rx, CounterKind::Packets),
            Some(0)
        );
        assert_eq!(
            t.interface_counter(5, Direction::Rx, CounterKind::Packets),
            None
        );
        assert_eq!(
            t.total_counter(Direction::Tx, CounterKind::Packets),
            Some(2)
        );
        assert_eq!(t.interface_speed_mbps(1), Some(25_000));
        assert_eq!(t.interface_speed_mbps(2), None, "speed unknown");
        assert_eq!(t.queue(1, QueueMetric::QueueId), Some(2));
        assert_eq!(t.queue(5, QueueMetric::QueueId), None);
    }

    #[test]
    fn queue_length_is_the_egress_ports_transmit_buffer() {
        let mut t = telemetry();
        t.begin_burst(0, START_NS);
        // Interface 1 is on port 1, the internal interface (0) on port 0.
        assert_eq!(t.queue(1, QueueMetric::QueueLen), Some(4));
        t.tx[1].0.set(Some(5));
        assert_eq!(t.queue(1, QueueMetric::QueueLen), Some(4), "once per burst");
        assert_eq!(t.tx[1].1.get(), 1);
        assert_eq!(t.queue(0, QueueMetric::QueueLen), None, "cannot be read");
        assert_eq!(t.queue(5, QueueMetric::QueueLen), None, "unknown interface");
        t.begin_burst(0, START_NS);
        assert_eq!(t.queue(1, QueueMetric::QueueLen), Some(5));
        assert_eq!(t.queue(1, QueueMetric::QueueLenAvg), None, "not sampled");
        t.sample_buffers();
        assert_eq!(t.queue(1, QueueMetric::QueueLenAvg), Some(5));
        assert_eq!(t.queue(0, QueueMetric::QueueLenAvg), None);
        t.tx[1].0.set(Some(13));
        t.sample_buffers();
        assert_eq!(
            t.queue(1, QueueMetric::QueueLenAvg),
            Some(6),
            "5 + (13 - 5) / 8"
        );
        // A probe the router originated waited in no receive buffer.
        t.begin_originated(START_NS);
        assert_eq!(t.queue(1, QueueMetric::BufferId), None);
        assert_eq!(t.queue(1, QueueMetric::BufferOccupancy), None);
        assert_eq!(t.queue(1, QueueMetric::BufferOccupancyAvg), None);
        assert_eq!(t.queue(1, QueueMetric::QueueLen), Some(13));
    }

    #[test]
    fn buffer_values_are_the_current_bursts() {
        let mut t = telemetry();
        t.begin_burst(0, START_NS);
        assert_eq!(t.queue(1, QueueMetric::BufferId), Some(3));
        assert_eq!(t.queue(1, QueueMetric::BufferOccupancy), Some(10));
        // Read once per burst.
        t.rx[0].1.1.set(Some(11));
        assert_eq!(t.queue(1, QueueMetric::BufferOccupancy), Some(10));
        t.begin_burst(0, START_NS);
        assert_eq!(t.queue(1, QueueMetric::BufferOccupancy), Some(11));
        assert_eq!(
            t.queue(1, QueueMetric::BufferOccupancyAvg),
            None,
            "not sampled"
        );
        t.sample_buffers();
        assert_eq!(t.queue(1, QueueMetric::BufferOccupancyAvg), Some(11));
        t.begin_burst(1, START_NS);
        assert_eq!(t.queue(1, QueueMetric::BufferOccupancy), None);
        assert_eq!(t.queue(1, QueueMetric::BufferOccupancyAvg), None);
        assert_eq!(t.cpu_memory_usage(), None);
        t.sample_usage(50, 100, 1, 3);
        assert_eq!(t.cpu_memory_usage(), Some((127, 63)));
    }
}
