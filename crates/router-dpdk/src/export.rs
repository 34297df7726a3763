//! ID-INT report export (infrastructure-mode sink), off the packet path.
//!
//! A worker's [`RingExporter`] copies each sink record into an mbuf from the router's pool
//! (receive time and ingress interface first, then the SCION packet) and enqueues it on that
//! worker's single-producer ring; no heap allocation, lock or system call. The exporter
//! thread drains the rings, builds `idint.report.v1.Report`s, groups them into
//! `ReportBatch`es (by count, size or age) and sends each batch as one UDP datagram to the
//! collector. The socket is connected to the collector, so that the ICMP "port unreachable"
//! of a collector that is not running comes back as a refusal: counted as
//! `export_unreachable` (that earlier datagram was lost), not silently taken as delivered.

use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use idint_report::Message;
use idint_report::v1::{Exporter, Report, ReportBatch};
use scion_dp::idint::{ReportExporter, SinkRecord};

use dpdk::{Consumer, MbufBurst, Mempool, Producer};

/// Bytes of metadata in front of the packet in an export mbuf.
const META_LEN: usize = 10;

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
        let Some(buf) = m.append(META_LEN + record.packet.len()) else {
            return false;
        };
        buf[..8].copy_from_slice(&record.receive_ns.to_be_bytes());
        buf[8..10].copy_from_slice(&record.ingress.ifid().to_be_bytes());
        buf[META_LEN..].copy_from_slice(record.packet);
        if self.one.push(m).is_err() {
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

/// Bytes of `v` as a protobuf varint.
fn varint_len(v: u64) -> usize {
    (64 - (v | 1).leading_zeros() as usize).div_ceil(7)
}

struct Batcher {
    cfg: ExportConfig,
    socket: UdpSocket,
    batch: ReportBatch,
    /// Encoded bytes of the batch so far, its exporter and sequence number included.
    bytes: usize,
    oldest: Option<Instant>,
    stats: Arc<ExportStats>,
}

impl Batcher {
    /// The encoded size of the batch without reports (the sequence number at its longest).
    fn empty_len(&self) -> usize {
        ReportBatch {
            exporter: self.batch.exporter.clone(),
            sequence: u64::MAX,
            reports: Vec::new(),
        }
        .encoded_len()
    }

    /// Adds a report, sending the batch first if the report would take it past `max_bytes`
    /// (a report larger than that on its own goes alone).
    fn add(&mut self, r: Report) {
        if self.bytes == 0 {
            self.bytes = self.empty_len();
        }
        let body = r.encoded_len();
        // Field tag and length prefix of the report.
        let len = 1 + varint_len(body as u64) + body;
        if !self.batch.reports.is_empty() && self.bytes + len > self.cfg.max_bytes {
            self.send();
            self.bytes = self.empty_len();
        }
        self.bytes += len;
        self.batch.reports.push(r);
        self.oldest.get_or_insert_with(Instant::now);
        if self.batch.reports.len() >= self.cfg.max_reports {
            self.send();
        }
    }

    fn due(&self) -> bool {
        self.oldest.is_some_and(|t| t.elapsed() >= self.cfg.flush)
    }

    fn send(&mut self) {
        if self.batch.reports.is_empty() {
            return;
        }
        let n = self.batch.reports.len() as u64;
        let bytes = self.batch.encode_to_vec();
        // A refusal reported now is an earlier datagram's; this one was not sent: once more.
        let mut sent = self.socket.send(&bytes);
        if matches!(&sent, Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused) {
            self.stats.unreachable.fetch_add(1, Ordering::Relaxed);
            sent = self.socket.send(&bytes);
        }
        match sent {
            Ok(_) => {
                self.stats.reports.fetch_add(n, Ordering::Relaxed);
                self.stats.batches.fetch_add(1, Ordering::Relaxed);
            }
            Err(_) => {
                self.stats.send_errors.fetch_add(1, Ordering::Relaxed);
            }
        }
        self.batch.sequence += 1;
        self.batch.reports.clear();
        self.bytes = 0;
        self.oldest = None;
    }
}

/// A UDP socket bound to `bind` and connected to `collector`.
fn connected_socket(bind: SocketAddr, collector: SocketAddr) -> std::io::Result<UdpSocket> {
    let socket = UdpSocket::bind(bind)?;
    socket.connect(collector)?;
    Ok(socket)
}

/// Runs the exporter until `done` is set (after the workers have stopped) and the rings are
/// empty.
pub fn run_exporter(
    cfg: ExportConfig,
    mut rings: Vec<Consumer>,
    stats: Arc<ExportStats>,
    done: Arc<AtomicBool>,
) -> std::io::Result<()> {
    let bind: SocketAddr = if cfg.collector.is_ipv4() {
        "0.0.0.0:0".parse().expect("literal")
    } else {
        "[::]:0".parse().expect("literal")
    };
    let socket = connected_socket(bind, cfg.collector)?;
    let mut b = Batcher {
        batch: ReportBatch {
            exporter: Some(cfg.exporter.clone()),
            sequence: 0,
            reports: Vec::new(),
        },
        cfg,
        socket,
        bytes: 0,
        oldest: None,
        stats,
    };
    let mut burst = MbufBurst::new();
    loop {
        let stopping = done.load(Ordering::Acquire);
        let mut got = 0;
        for ring in &mut rings {
            got += ring.dequeue(&mut burst);
            for m in burst.drain() {
                let d = m.data();
                if d.len() < META_LEN {
                    b.stats.bad_records.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
                let mut ns = [0u8; 8];
                ns.copy_from_slice(&d[..8]);
                let ifid = u16::from_be_bytes([d[8], d[9]]);
                let exporter = b.batch.exporter.clone().unwrap_or_default();
                match idint_report::report_from_packet(
                    &exporter,
                    u64::from_be_bytes(ns),
                    ifid,
                    &d[META_LEN..],
                ) {
                    Ok(r) => b.add(r),
                    Err(_) => {
                        b.stats.bad_records.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        }
        if b.due() {
            b.send();
        }
        if got == 0 {
            if stopping {
                b.send();
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

#[cfg(test)]
mod batch_tests {
    use super::*;

    fn batcher(collector: SocketAddr, max_bytes: usize) -> Batcher {
        Batcher {
            cfg: ExportConfig {
                collector,
                exporter: Exporter {
                    isd_as: 0x0001_ff00_0000_0110,
                    router_id: 1,
                    name: "br1-ff00_0_110-1".into(),
                },
                max_reports: 1024,
                max_bytes,
                flush: Duration::from_secs(10),
            },
            socket: connected_socket("127.0.0.1:0".parse().unwrap(), collector).unwrap(),
            batch: ReportBatch {
                exporter: Some(Exporter {
                    isd_as: 0x0001_ff00_0000_0110,
                    router_id: 1,
                    name: "br1-ff00_0_110-1".into(),
                }),
                sequence: 0,
                reports: Vec::new(),
            },
            bytes: 0,
            oldest: None,
            stats: Arc::new(ExportStats::default()),
        }
    }

    fn report(i: u64) -> Report {
        Report {
            receive_time_ns: 1_700_000_000_000_000_000 + i,
            idint_stack: vec![0xab; 112],
            ..Default::default()
        }
    }

    #[test]
    fn a_collector_that_is_not_listening_is_counted_as_unreachable() {
        // A port nobody listens on: bind one, note it, close it.
        let dead = UdpSocket::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let mut b = batcher(dead, 512);
        for i in 0..5 {
            b.add(report(i));
            b.send();
            // Loopback answers with ICMP port unreachable at once; let it arrive.
            std::thread::sleep(Duration::from_millis(20));
        }
        let refused = b.stats.unreachable.load(Ordering::Relaxed);
        // Every datagram after the first finds the previous one's refusal.
        assert!(refused >= 3, "refused {refused}");
        // A listening collector: nothing refused.
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let mut ok = batcher(rx.local_addr().unwrap(), 512);
        for i in 0..5 {
            ok.add(report(i));
            ok.send();
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(ok.stats.unreachable.load(Ordering::Relaxed), 0);
        assert_eq!(ok.stats.batches.load(Ordering::Relaxed), 5);
    }

    #[test]
    fn datagrams_stay_within_max_bytes() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        rx.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        let max_bytes = 512;
        let mut b = batcher(rx.local_addr().unwrap(), max_bytes);
        for i in 0..20u64 {
            b.add(report(i));
        }
        b.send();
        let mut buf = [0u8; 65536];
        let mut sizes = Vec::new();
        let mut reports = 0;
        while let Ok(n) = rx.recv(&mut buf) {
            sizes.push(n);
            reports += ReportBatch::decode(&buf[..n]).unwrap().reports.len();
            if sizes.len() as u64 == b.stats.batches.load(Ordering::Relaxed) {
                break;
            }
        }
        assert_eq!(reports, 20);
        assert!(
            sizes.iter().all(|&n| n <= max_bytes),
            "datagram over max_bytes: {sizes:?}"
        );
        // Full datagrams: one more report (~126 bytes) would not have fitted.
        let full = &sizes[..sizes.len() - 1];
        assert!(full.iter().all(|&n| n + 126 > max_bytes), "{sizes:?}");
    }
}
