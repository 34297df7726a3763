//! The worker loop: rx burst -> underlay classification -> scion-dp `process_burst_with`
//! (with the ID-INT stage) -> routing and underlay rewrite in place -> tx burst per egress
//! port. The per-burst glue is `router_core`'s ([`burst`](router_core::burst), over mbufs
//! through [`Pkt`]; its decisions are [`classify`](router_core::classify),
//! [`forward`](router_core::forward), [`resolver`](router_core::resolver)), the same code the
//! benchmarks run over frames in memory; this module moves the mbufs. Nothing on this path allocates, locks, logs or makes
//! system calls. Two things happen beside it: an idle worker pauses after a run of empty
//! polls ([`router_core::idle`], `[dataplane] idle_sleep_us`), and the probe worker
//! originates infrastructure-mode probes ([`Probes`]) a few times per second at most.

use std::sync::Arc;

use scion_dp::config::Router;
use scion_dp::idint::{CtrDrbg, IdIntStage, NonceSource, ReportExporter, VerifierKeys};
use scion_dp::probe::ProbeSource;
use scion_dp::{Disposition, Ingress, Processor};

use drkey::provider::{Level1Provider, LocalProvider};
use idint_wire::crypto::Aes128Enc;

use crate::export::RingExporter;
use crate::stats::{IoCounters, WorkerStats};
use crate::underlay;
use dpdk::{Consumer, MAX_BURST, Mbuf, MbufBurst, Mempool, Producer, RxQueue, TxQueue};
use router_core::bfd::{TAG_LEN, Via};
use router_core::burst::{self, Aside, FrameBuf, RoomBuf, TxBatch};
use router_core::classify::Classified;
use router_core::clock::{SharedClock, TscClock};
use router_core::forward::{Ask, EgressMacs, PacketMeta};
use router_core::idle::IdleBackoff;
use router_core::ratelimit::TokenBucket;
use router_core::resolver::{Resolver, Solicitation};
use router_core::telemetry_source::{RxBuffer, Tsc, TxBuffer};
#[cfg(feature = "measurement-aids")]
use scion_dp::lower_bound::{LowerBound, WithStage};

pub use router_core::tables::{IfEgress, Tables};

/// The router's telemetry source over this worker's rx sources and the CPU's TSC.
pub type RouterTelemetry = router_core::telemetry_source::RouterTelemetry<Source, DpdkTsc, Sink>;

/// The CPU's time stamp counter, read through DPDK.
#[derive(Debug, Clone, Copy, Default)]
pub struct DpdkTsc;

impl Tsc for DpdkTsc {
    #[inline]
    fn read(&self) -> u64 {
        dpdk::rdtsc()
    }
}

/// Nanoseconds per second.
const NS_PER_S: u64 = 1_000_000_000;
/// Counter publications per second (and clock updates taken up).
const PUBLISH_PER_S: u64 = 200;

/// One packet of a burst: the mbuf with its room, plus what the underlay said and scion-dp
/// decided.
type Slot = burst::Slot<PktRoom>;

/// An owned mbuf as the burst glue ([`router_core::burst`]) sees it.
#[derive(Debug)]
#[repr(transparent)]
pub struct Pkt(pub Mbuf);

/// An mbuf with its room located ([`dpdk::RoomMbuf`]) as the burst glue sees it.
#[derive(Debug)]
#[repr(transparent)]
pub struct PktRoom(pub dpdk::RoomMbuf);

impl FrameBuf for Pkt {
    type Room = PktRoom;
    #[inline]
    fn pkt_len(&self) -> usize {
        self.0.pkt_len()
    }
    #[inline]
    fn is_chained(&self) -> bool {
        self.0.segments() != 1
    }
    #[inline]
    fn data(&self) -> &[u8] {
        self.0.data()
    }
    #[inline]
    fn data_mut(&mut self) -> &mut [u8] {
        self.0.data_mut()
    }
    #[inline]
    fn adj(&mut self, n: usize) -> bool {
        u16::try_from(n).is_ok_and(|n| self.0.adj(n))
    }
    #[inline]
    fn prepend(&mut self, n: usize) -> bool {
        u16::try_from(n).is_ok_and(|n| self.0.prepend(n))
    }
    #[inline]
    fn set_len(&mut self, len: usize) -> bool {
        self.0.set_len(len)
    }
    #[inline]
    fn with_room(self, offset: usize) -> Result<PktRoom, Self> {
        self.0.with_room(offset).map(PktRoom).map_err(Pkt)
    }
}

impl RoomBuf for PktRoom {
    type Frame = Pkt;
    #[inline]
    fn room(&mut self) -> &mut [u8] {
        self.0.room()
    }
    #[inline]
    fn into_frame(self) -> Pkt {
        Pkt(self.0.into_mbuf())
    }
}

impl TxBatch<Pkt> for MbufBurst {
    #[inline]
    fn push(&mut self, f: Pkt) -> Result<(), Pkt> {
        MbufBurst::push(self, f.0).map_err(Pkt)
    }
}

/// What the worker does beside routing a burst: BFD packets held for the control side,
/// the SCMP reply rate limit at the burst's TSC, and MAC requests.
struct WorkerAside<'a> {
    bfd: &'a mut BfdRings,
    held: &'a mut MbufBurst,
    scmp: &'a mut TokenBucket,
    /// The burst's TSC: tokens are credited per burst.
    start: u64,
    resolver: &'a mut MacRequests,
}

impl Aside<PktRoom, MbufBurst> for WorkerAside<'_> {
    #[inline]
    fn bfd(&mut self, s: &mut Slot, io: &mut IoCounters) {
        self.bfd.take(s, self.held, io);
    }
    #[inline]
    fn allow_reply(&mut self) -> bool {
        self.scmp.allow(self.start)
    }
    #[inline]
    fn ask(&mut self, tables: &Tables, ask: Ask, out: &mut [MbufBurst], io: &mut IoCounters) {
        self.resolver.ask(tables, ask, out, io);
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
}

impl RxBuffer for Source {
    /// The rx queue index, or the id a ring was given.
    #[inline]
    fn id(&self) -> u16 {
        match self {
            Source::Queue(q) => q.queue(),
            Source::Ring(_, id) => *id,
        }
    }

    /// Packets waiting now; `None` if the driver cannot tell (virtual devices such as
    /// `net_pcap` and `net_null` do not implement the count).
    #[inline]
    fn depth(&self) -> Option<u32> {
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

impl TxBuffer for Sink {
    /// Packets waiting: the tx queue's descriptors the NIC still holds (`None` where the
    /// driver has no descriptor status, as the virtual devices), or the ring's count.
    #[inline]
    fn depth(&self) -> Option<u32> {
        match self {
            Sink::Queue(q) => q.depth(),
            Sink::Ring(r) => Some(r.count()),
        }
    }
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
    /// Longest idle pause, µs (0: busy polling).
    pub idle_sleep_us: u32,
    /// Infrastructure-mode probes this worker originates (one worker has them).
    pub probes: Option<Probes>,
    /// The BFD rings to and from the control side.
    pub bfd: BfdRings,
    /// SCMP error replies per second after the burst (`[dataplane] scmp_rate`).
    pub scmp_rate: u32,
    /// SCMP error replies sent at once (`[dataplane] scmp_burst`).
    pub scmp_burst: u32,
}

/// A worker's BFD rings: every worker hands the BFD packets it receives to the control side;
/// worker 0 also sends the control side's BFD packets.
#[derive(Debug, Default)]
pub struct BfdRings {
    /// To the control side (each SCION packet behind a [`Via`] tag of its ingress).
    pub to_control: Option<Producer>,
    /// From the control side (each SCION packet behind a [`Via`] tag of its egress).
    pub from_control: Option<Consumer>,
}

impl BfdRings {
    /// Hands a packet scion-dp found to be BFD to the control side: its underlay headers
    /// give way to the tag of its ingress. Freed and counted if there is no room.
    #[cold]
    fn take(&mut self, s: &mut Slot, held: &mut MbufBurst, io: &mut IoCounters) {
        let Some(mut m) = s.m.take().map(|r| r.into_frame().0) else {
            return;
        };
        let via = match s.meta.ingress() {
            Ingress::External(x) => Via::External(x),
            Ingress::Internal | Ingress::Sibling(_) => Via::Internal(None),
        };
        let off = s.meta.offset;
        let ok = self.to_control.is_some()
            && off >= TAG_LEN
            && m.adj((off - TAG_LEN) as u16)
            && m.set_len(TAG_LEN + s.meta.len)
            && via.write_tag(m.data_mut());
        if !ok || held.push(m).is_err() {
            io.bfd_dropped += 1;
        }
    }

    /// Enqueues the held packets for the control side (what does not fit is freed, counted).
    #[inline]
    fn flush(&mut self, held: &mut MbufBurst, io: &mut IoCounters) {
        if held.is_empty() {
            return;
        }
        if let Some(r) = self.to_control.as_mut() {
            r.enqueue(held);
        }
        io.bfd_dropped += held.len() as u64;
        held.clear();
    }
}

impl<K: VerifierKeys> Worker<K> {
    /// Polls until [`dpdk::stop_requested`]; returns the number of frames received.
    pub fn run(self) -> u64 {
        let Worker {
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
            idle_sleep_us,
            probes,
            bfd,
            scmp_rate,
            scmp_burst,
        } = self;
        #[cfg(feature = "measurement-aids")]
        let mut telemetry = telemetry;
        let clock = telemetry.clock;
        let io = Io {
            tables,
            stats,
            clock,
            shared_clock,
            pool,
            idle_sleep_us,
            probes,
            bfd,
            scmp: (scmp_rate, scmp_burst),
            #[cfg(feature = "measurement-aids")]
            lower_bound: aids.idint_lower_bound,
        };
        #[cfg(feature = "measurement-aids")]
        if aids.io_only {
            let tx = std::mem::take(&mut telemetry.tx);
            return io.forward_untouched(&router, telemetry.rx, tx);
        }
        let stage = IdIntStage::new(keys, telemetry, CtrDrbg::new(seed));
        match exporter {
            Some(x) => io.poll(&router, stage.with_sink(x)),
            None => io.poll(&router, stage),
        }
    }
}

/// The worker's I/O side (its tx sinks are in the telemetry, which reads their depth).
struct Io {
    tables: Arc<Tables>,
    stats: Arc<WorkerStats>,
    clock: TscClock,
    shared_clock: Arc<SharedClock>,
    pool: &'static Mempool,
    /// Longest idle pause, µs.
    idle_sleep_us: u32,
    /// Probes to originate.
    probes: Option<Probes>,
    bfd: BfdRings,
    /// SCMP error replies: (per second, at once).
    scmp: (u32, u32),
    /// ID-INT through [`scion_dp::lower_bound`].
    #[cfg(feature = "measurement-aids")]
    lower_bound: scion_dp::lower_bound::Mode,
}

impl Io {
    /// The I/O-only ceiling: every received burst goes out by the next port unchanged.
    #[cfg(feature = "measurement-aids")]
    fn forward_untouched(
        self,
        router: &Router,
        mut rx: Vec<(usize, Source)>,
        mut tx: Vec<Sink>,
    ) -> u64 {
        let proc = Processor::new(router);
        let idint = scion_dp::idint::IdIntCounters::default();
        let mut io = IoCounters::default();
        let mut burst = MbufBurst::new();
        let ports = tx.len();
        let clock = self.clock;
        let publish_every = clock.hz() / PUBLISH_PER_S;
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
                flush(&mut tx[(*port + 1) % ports], &mut burst, &mut io);
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
        let mut out: Vec<MbufBurst> = (0..stage.source().tx.len())
            .map(|_| MbufBurst::new())
            .collect();
        let mut burst = MbufBurst::new();
        // BFD packets received in a burst, for the control side.
        let mut bfd_held = MbufBurst::new();
        let mut clock = self.clock;
        let mut resolver = MacRequests {
            pool: self.pool,
            limit: Resolver::new(clock.hz()),
        };
        let mut scmp = TokenBucket::new(self.scmp.0, self.scmp.1, clock.hz(), dpdk::rdtsc());
        let tables = &*self.tables;
        let publish_every = clock.hz() / PUBLISH_PER_S;
        let mut last_publish = dpdk::rdtsc();
        // Cycles spent on bursts since the last publication (the CPU usage telemetry).
        let mut busy = 0u64;
        #[cfg(feature = "measurement-aids")]
        let mut bound = LowerBound::new(self.lower_bound);
        // The rx sources live in the telemetry (it reads their depth).
        let sources = stage.source().rx.len();
        let mut idle = IdleBackoff::new(self.idle_sleep_us);
        let mut probes = self.probes.take();
        loop {
            if dpdk::stop_requested() {
                break;
            }
            let mut received = 0;
            for i in 0..sources {
                let (port, q) = &mut stage.source_mut().rx[i];
                let port = *port;
                let n = q.receive(&mut burst);
                if n == 0 {
                    continue;
                }
                received += n;
                let start = dpdk::rdtsc();
                let now = clock.unix_ns(start);
                stage.source_mut().begin_burst(i, now);
                let now_s = (now / NS_PER_S) as u32;
                let rx = burst.drain_prefetching(RX_PREFETCH_AHEAD).map(Pkt);
                let filled =
                    burst::classify_burst(tables, port, now_s, rx, &mut slots, &mut out, &mut io);
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
                let mut aside = WorkerAside {
                    bfd: &mut self.bfd,
                    held: &mut bfd_held,
                    scmp: &mut scmp,
                    start,
                    resolver: &mut resolver,
                };
                let slots = &mut slots[..filled];
                burst::route_burst(tables, port, now_s, slots, &mut out, &mut io, &mut aside);
                self.bfd.flush(&mut bfd_held, &mut io);
                send_all(tables, &mut out, &mut stage.source_mut().tx, &mut io);
                busy += dpdk::rdtsc().wrapping_sub(start);
            }
            if received != 0 {
                idle.busy();
            } else {
                let pause = idle.empty();
                if pause != 0 {
                    // Only after a run of empty polls (see `router_core::idle`).
                    std::thread::sleep(std::time::Duration::from_micros(u64::from(pause)));
                }
            }
            let tsc = dpdk::rdtsc();
            if tsc.wrapping_sub(last_publish) > publish_every {
                // Due probes (checked at this rate): each is processed as a packet from the
                // internal network (the router's own entry), routed and sent like any other.
                if let Some(p) = probes.as_mut() {
                    let now = clock.unix_ns(tsc);
                    let mut slot = Slot::default();
                    let mut macs = EgressMacs::default();
                    while let Some(probe) = p.next(now, self.pool, &mut io) {
                        stage.source_mut().begin_originated(now);
                        slot.meta.receive(&Classified {
                            offset: 0,
                            len: probe.1,
                            ingress: Ingress::Internal,
                        });
                        slot.m = Some(PktRoom(probe.0));
                        proc.process_burst_with(core::slice::from_mut(&mut slot), now, &mut stage);
                        let r = (&mut out[..], &mut io, &mut macs);
                        let now_s = (now / NS_PER_S) as u32;
                        let ask = |a, out: &mut [MbufBurst], io: &mut IoCounters| {
                            resolver.ask(tables, a, out, io)
                        };
                        burst::route(tables, tables.internal_port, now_s, &mut slot, r, ask);
                        send_all(tables, &mut out, &mut stage.source_mut().tx, &mut io);
                    }
                }
                self.stats.publish(
                    &io,
                    proc.counters(),
                    stage.counters(),
                    &stage.keys().lookups(),
                );
                stage.source_mut().sample_buffers();
                let (used, free) = (self.pool.in_use(), self.pool.available());
                stage.source_mut().sample_usage(
                    busy,
                    tsc.wrapping_sub(last_publish),
                    used.into(),
                    free.into(),
                );
                last_publish = tsc;
                busy = 0;
                // The control thread's corrected clock, for timestamps and time.
                clock = self.shared_clock.load();
                stage.source_mut().clock = clock;
                let now_s = (clock.unix_ns(tsc) / NS_PER_S) as u32;
                let r = (&mut out[..], &mut io, &mut resolver);
                if send_bfd(tables, &mut self.bfd, &mut burst, now_s, r) {
                    send_all(tables, &mut out, &mut stage.source_mut().tx, &mut io);
                }
            }
        }
        send_all(tables, &mut out, &mut stage.source_mut().tx, &mut io);
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

/// Infrastructure-mode probes of one worker: the scheduler and builder
/// ([`scion_dp::probe::ProbeSource`]), the keys its source entries are signed with, and the
/// buffer probes are built in (allocated once).
pub struct Probes {
    /// The scheduler and builder.
    pub source: ProbeSource,
    /// Derives K(router -> collector) for each DRKey epoch.
    pub provider: Arc<LocalProvider>,
    /// The key of the current epoch: (end of the epoch, Unix s; key).
    key: Option<(u64, Aes128Enc)>,
    /// Where probes are built.
    buf: Vec<u8>,
}

/// Room for one probe (a SCION header with the longest path and a full ID-INT stack).
const PROBE_BUF: usize = 2048;

impl Probes {
    /// Probes of `source`, signed with keys from `provider` (the local AS's).
    pub fn new(source: ProbeSource, provider: Arc<LocalProvider>) -> Self {
        Probes {
            source,
            provider,
            key: None,
            buf: vec![0; PROBE_BUF],
        }
    }

    /// The source key K(router -> collector) at `now_ns` (derived once per epoch).
    fn key(&mut self, now_ns: u64) -> Option<&Aes128Enc> {
        let now_s = now_ns / NS_PER_S;
        if self.key.as_ref().is_none_or(|(end, _)| now_s >= *end) {
            let (ia, host, dst_ia, dst_host) = self.source.key_parties();
            let (epoch, l1) = self
                .provider
                .level1(drkey::Protocol::IDINT, ia, dst_ia, now_s)
                .ok()?;
            let ha = drkey::host_as(&l1.cipher(), &host).ok()?;
            let hh = drkey::host_host(&ha.cipher(), &dst_host).ok()?;
            self.key = Some((u64::from(epoch.end), hh.cipher()));
        }
        self.key.as_ref().map(|(_, k)| k)
    }

    /// The next probe due at `now_ns` in an mbuf from `pool` (its SCION packet from offset
    /// 0, and its length), or `None` when none is due; probes that cannot be built or get no
    /// mbuf are counted and skipped.
    #[cold]
    fn next(
        &mut self,
        now_ns: u64,
        pool: &Mempool,
        io: &mut IoCounters,
    ) -> Option<(dpdk::RoomMbuf, usize)> {
        if self.source.next_due()? > now_ns {
            return None;
        }
        let Some(key) = self.key(now_ns).cloned() else {
            // No key: the due probes are skipped (rescheduled) and counted.
            let mut scratch = [0u8; 0];
            let dummy = idint_wire::crypto::aes128(&[0; 16]);
            while self.source.poll(now_ns, &dummy, &mut scratch).is_some() {
                io.probe_errors += 1;
            }
            return None;
        };
        loop {
            let probe = match self.source.poll(now_ns, &key, &mut self.buf)? {
                Ok(p) => p,
                Err(_) => {
                    io.probe_errors += 1;
                    continue;
                }
            };
            let m = pool
                .alloc_with(&self.buf[..probe.len])
                .and_then(|m| m.with_room(0).ok());
            match m {
                Some(m) => {
                    io.probes_sent += 1;
                    return Some((m, probe.len));
                }
                None => io.probe_errors += 1,
            }
        }
    }
}

/// How many received packets ahead of the one being classified have their headers prefetched.
const RX_PREFETCH_AHEAD: usize = 3;

/// Routes the BFD packets the control side wrote (worker 0, a few times per second): each
/// leaves by the link its tag names, with the underlay headers of that link. Whether any
/// was queued.
#[cold]
fn send_bfd(
    tables: &Tables,
    bfd: &mut BfdRings,
    burst: &mut MbufBurst,
    now_s: u32,
    (out, io, resolver): (&mut [MbufBurst], &mut IoCounters, &mut MacRequests),
) -> bool {
    let Some(ring) = bfd.from_control.as_mut() else {
        return false;
    };
    if ring.dequeue(burst) == 0 {
        return false;
    }
    let mut macs = EgressMacs::default();
    for mut m in burst.drain() {
        let d = match Via::read_tag(m.data()) {
            Some(Via::External(ifid)) => Disposition::Forward { ifid },
            Some(Via::Internal(Some(addr))) => Disposition::Sibling { ifid: 0, addr },
            _ => {
                io.bfd_dropped += 1;
                continue;
            }
        };
        let len = m.data().len() - TAG_LEN;
        if !m.adj(TAG_LEN as u16) {
            io.bfd_dropped += 1;
            continue;
        }
        let Ok(room) = m.with_room(0) else {
            io.bfd_dropped += 1;
            continue;
        };
        let mut slot = Slot {
            m: Some(PktRoom(room)),
            meta: PacketMeta::default(),
        };
        slot.meta.len = len;
        slot.meta.set_disposition(d);
        let ask = |a, out: &mut [MbufBurst], io: &mut IoCounters| resolver.ask(tables, a, out, io);
        let r = (&mut out[..], &mut *io, &mut macs);
        burst::route(tables, tables.internal_port, now_s, &mut slot, r, ask);
    }
    true
}

/// Sends ARP requests and neighbour solicitations for next hops, rate-limited by
/// [`router_core::resolver::Resolver`].
pub struct MacRequests {
    /// Pool for the request frames.
    pub pool: &'static Mempool,
    /// Which addresses were asked for when.
    pub limit: Resolver,
}

impl MacRequests {
    /// Asks for the MAC of `ask.target` from the router's address `ask.me` (same family).
    #[cold]
    fn ask(&mut self, tables: &Tables, ask: Ask, out: &mut [MbufBurst], io: &mut IoCounters) {
        let now = dpdk::rdtsc();
        let Some(due) = self.limit.due(ask.target, now) else {
            return;
        };
        let (Some(&mac), Some(b)) = (tables.ports.get(ask.port), out.get_mut(ask.port)) else {
            return;
        };
        // No request across families.
        let Some(req) = Solicitation::new(ask.me, ask.target) else {
            return;
        };
        let Some(mut m) = self.pool.alloc() else {
            return;
        };
        let written = m.append(req.frame_len()).is_some_and(|f| req.write(f, mac));
        // A frame not written or not queued is freed.
        if written && b.push(m).is_ok() {
            self.limit.asked(due, now);
            req.count(io);
        }
    }
}

/// Sends every port's queued burst, tagging the frames of VLAN ports first.
#[inline]
fn send_all(tables: &Tables, out: &mut [MbufBurst], tx: &mut [Sink], io: &mut IoCounters) {
    for (p, (b, t)) in out.iter_mut().zip(tx.iter_mut()).enumerate() {
        if let Some(vid) = tables.vlan(p) {
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
