//! ID-INT report export (infrastructure-mode sink), off the packet path.
//!
//! A worker's [`RingExporter`] copies each sink record into an mbuf from the router's pool
//! (receive time and ingress interface first, then the SCION packet) and enqueues it on that
//! worker's single-producer ring; no heap allocation, lock or system call. The exporter
//! thread drains the rings, builds `idint.report.v1.Report`s, groups them into
//! `ReportBatch`es (by count, size or age: [`router_core::export`]) and sends each batch as one UDP datagram to the
//! collector. The socket is connected to the collector, so that the ICMP "port unreachable"
//! of a collector that is not running comes back as a refusal: counted as
//! `export_unreachable` (that earlier datagram was lost), not silently taken as delivered.

use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use idint_report::Message;
use idint_report::v1::{Exporter, ReportBatch};
use router_core::export::{BatchLimits, Batcher, META_LEN, Record};
use scion_dp::idint::{ReportExporter, SinkRecord};

use dpdk::{Consumer, MbufBurst, Mempool, Producer};

/// The worker side: record -> mbuf -> ring.
pub struct RingExporter {
    pool: &'static Mempool,
    ring: Producer,
    one: MbufBurst,
}

impl RingExporter {
    /// An exporter feeding `ring` (this worker's producing end) with mbufs from `pool`.
    pub fn new(pool: &'static Mempool, ring: Producer) -> Self {
        RingExporter {
            pool,
            ring,
            one: MbufBurst::new(),
        }
    }
}

impl ReportExporter for RingExporter {
    #[inline]
    fn export(&mut self, record: &SinkRecord<'_>) -> bool {
        let Some(mut m) = self.pool.alloc() else {
            return false;
        };
        let r = Record {
            receive_ns: record.receive_ns,
            ingress_ifid: record.ingress.ifid(),
            packet: record.packet,
        };
        let Some(buf) = m.append(META_LEN + r.packet.len()) else {
            return false;
        };
        if !r.write(buf) || self.one.push(m).is_err() {
            return false;
        }
        let taken = self.ring.enqueue(&mut self.one) == 1;
        self.one.clear();
        taken
    }
}

/// Export settings.
#[derive(Debug, Clone)]
pub struct ExportConfig {
    /// Collector UDP address.
    pub collector: SocketAddr,
    /// Exporter identity in every batch.
    pub exporter: Exporter,
    /// Most reports per batch.
    pub max_reports: usize,
    /// Most encoded bytes per batch (one UDP datagram).
    pub max_bytes: usize,
    /// Longest a report waits before its batch is sent.
    pub flush: Duration,
}

/// What the exporter thread did.
#[derive(Debug, Default)]
pub struct ExportStats {
    /// Reports sent.
    pub reports: AtomicU64,
    /// Batches (datagrams) sent.
    pub batches: AtomicU64,
    /// Records that did not give a report (not parseable).
    pub bad_records: AtomicU64,
    /// Datagrams the socket refused.
    pub send_errors: AtomicU64,
    /// Sent datagrams the collector's host refused (ICMP port unreachable: nothing listens
    /// there); their reports were counted in `reports` when sent, and are lost.
    pub unreachable: AtomicU64,
}

impl ExportStats {
    /// `(name, value)` pairs.
    pub fn named(&self) -> [(&'static str, u64); 5] {
        [
            ("export_reports", self.reports.load(Ordering::Relaxed)),
            ("export_batches", self.batches.load(Ordering::Relaxed)),
            (
                "export_bad_records",
                self.bad_records.load(Ordering::Relaxed),
            ),
            (
                "export_send_errors",
                self.send_errors.load(Ordering::Relaxed),
            ),
            (
                "export_unreachable",
                self.unreachable.load(Ordering::Relaxed),
            ),
        ]
    }
}

/// The exporter thread's socket side: sends batches, counting what happened to them.
struct Sender {
    socket: UdpSocket,
    stats: Arc<ExportStats>,
}

impl Sender {
    /// Sends one batch as one datagram.
    fn send(&self, batch: &ReportBatch) {
        let bytes = batch.encode_to_vec();
        // A refusal reported now is an earlier datagram's; this one was not sent: once more.
        let mut sent = self.socket.send(&bytes);
        if matches!(&sent, Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused) {
            self.stats.unreachable.fetch_add(1, Ordering::Relaxed);
            sent = self.socket.send(&bytes);
        }
        match sent {
            Ok(_) => {
                let n = batch.reports.len() as u64;
                self.stats.reports.fetch_add(n, Ordering::Relaxed);
                self.stats.batches.fetch_add(1, Ordering::Relaxed);
            }
            Err(_) => {
                self.stats.send_errors.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// A UDP socket bound to `bind` and connected to `collector`.
fn connected_socket(bind: SocketAddr, collector: SocketAddr) -> std::io::Result<UdpSocket> {
    let socket = UdpSocket::bind(bind)?;
    socket.connect(collector)?;
    Ok(socket)
}

/// How long the exporter thread sleeps when every ring was empty.
const IDLE_SLEEP: Duration = Duration::from_millis(1);

/// The exporter's UDP socket, bound to an ephemeral port of the collector's family and
/// connected to it. Made before the router starts: a collector that cannot be reached (no
/// route, no address of that family) stops the router at start.
pub fn collector_socket(collector: SocketAddr) -> std::io::Result<UdpSocket> {
    let bind: SocketAddr = if collector.is_ipv4() {
        (std::net::Ipv4Addr::UNSPECIFIED, 0).into()
    } else {
        (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
    };
    connected_socket(bind, collector)
}

/// Runs the exporter on `socket` (from [`collector_socket`]) until `done` is set (after the
/// workers have stopped) and the rings are empty.
pub fn run_exporter(
    cfg: ExportConfig,
    socket: UdpSocket,
    mut rings: Vec<Consumer>,
    stats: Arc<ExportStats>,
    done: Arc<AtomicBool>,
) -> std::io::Result<()> {
    let sender = Sender { socket, stats };
    let send = &mut |b: &ReportBatch| sender.send(b);
    let mut batcher = Batcher::new(
        cfg.exporter,
        BatchLimits {
            max_reports: cfg.max_reports,
            max_bytes: cfg.max_bytes,
            flush: cfg.flush,
        },
    );
    let mut burst = MbufBurst::new();
    loop {
        let stopping = done.load(Ordering::Acquire);
        let mut got = 0;
        for ring in &mut rings {
            got += ring.dequeue(&mut burst);
            // One clock read per dequeued burst: the reports of a burst arrived together.
            let now = Instant::now();
            for m in burst.drain() {
                let added =
                    Record::read(m.data()).is_some_and(|r| batcher.add_record(&r, now, send));
                if !added {
                    sender.stats.bad_records.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        batcher.poll(Instant::now(), send);
        if got == 0 {
            if stopping {
                batcher.flush(send);
                return Ok(());
            }
            std::thread::sleep(IDLE_SLEEP);
        }
    }
}

#[cfg(test)]
mod batch_tests {
    use super::*;
    use idint_report::v1::{Exporter, Report};

    fn exporter() -> Exporter {
        Exporter {
            isd_as: 0x0001_ff00_0000_0110,
            router_id: 1,
            name: "br1-ff00_0_110-1".into(),
        }
    }

    fn sender(collector: SocketAddr) -> Sender {
        Sender {
            socket: connected_socket("127.0.0.1:0".parse().unwrap(), collector).unwrap(),
            stats: Arc::new(ExportStats::default()),
        }
    }

    fn batch(i: u64) -> ReportBatch {
        ReportBatch {
            exporter: Some(exporter()),
            sequence: i,
            reports: vec![Report {
                receive_time_ns: 1_700_000_000_000_000_000 + i,
                idint_stack: vec![0xab; 112],
                ..Default::default()
            }],
        }
    }

    #[test]
    fn a_collector_that_is_not_listening_is_counted_as_unreachable() {
        // A port nobody listens on: bind one, note it, close it.
        let dead = UdpSocket::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let s = sender(dead);
        for i in 0..5 {
            s.send(&batch(i));
            // Loopback answers with ICMP port unreachable at once; let it arrive.
            std::thread::sleep(Duration::from_millis(20));
        }
        let refused = s.stats.unreachable.load(Ordering::Relaxed);
        // Every datagram after the first finds the previous one's refusal.
        assert!(refused >= 3, "refused {refused}");
        // A listening collector: nothing refused, everything received.
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        rx.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        let ok = sender(rx.local_addr().unwrap());
        for i in 0..5 {
            ok.send(&batch(i));
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(ok.stats.unreachable.load(Ordering::Relaxed), 0);
        assert_eq!(ok.stats.batches.load(Ordering::Relaxed), 5);
        assert_eq!(ok.stats.reports.load(Ordering::Relaxed), 5);
        let mut buf = [0u8; 2048];
        let n = rx.recv(&mut buf).unwrap();
        assert_eq!(ReportBatch::decode(&buf[..n]).unwrap(), batch(0));
    }
}
