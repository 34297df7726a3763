//! ID-INT report export without the I/O: the record a worker hands to the exporter thread
//! (receive time and ingress interface in front of the SCION packet), and the batching of
//! reports into `idint.report.v1.ReportBatch`es by count, encoded size and age. The exporter
//! thread in the I/O shell moves the records and sends the batches.

use std::time::{Duration, Instant};

use idint_report::Message;
use idint_report::v1::{Exporter, Report, ReportBatch};

/// Bytes of the receive time (Unix ns, big-endian) at the start of a record.
const TIME_LEN: usize = 8;
/// Bytes of the ingress interface id (big-endian) after it.
const IFID_LEN: usize = 2;
/// Bytes of metadata in front of the packet in a record.
pub const META_LEN: usize = TIME_LEN + IFID_LEN;

/// A sink record as the exporter thread receives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record<'a> {
    /// When the packet was received (Unix ns).
    pub receive_ns: u64,
    /// The interface it came by.
    pub ingress_ifid: u16,
    /// The SCION packet.
    pub packet: &'a [u8],
}

impl<'a> Record<'a> {
    /// Writes the record into `buf`, which must be exactly [`META_LEN`] + packet bytes long;
    /// `false` (nothing written) otherwise.
    #[inline]
    pub fn write(&self, buf: &mut [u8]) -> bool {
        if buf.len() != META_LEN + self.packet.len() {
            return false;
        }
        buf[..TIME_LEN].copy_from_slice(&self.receive_ns.to_be_bytes());
        buf[TIME_LEN..META_LEN].copy_from_slice(&self.ingress_ifid.to_be_bytes());
        buf[META_LEN..].copy_from_slice(self.packet);
        true
    }

    /// The record in `buf`; `None` if it is too short for one.
    pub fn read(buf: &'a [u8]) -> Option<Self> {
        let (time, rest) = buf.split_first_chunk::<TIME_LEN>()?;
        let (ifid, packet) = rest.split_first_chunk::<IFID_LEN>()?;
        Some(Record {
            receive_ns: u64::from_be_bytes(*time),
            ingress_ifid: u16::from_be_bytes(*ifid),
            packet,
        })
    }
}

/// Bytes of `v` as a protobuf varint.
fn varint_len(v: u64) -> usize {
    (64 - (v | 1).leading_zeros() as usize).div_ceil(7)
}

/// Bytes of the field tag of a batch's `reports` entries.
const REPORT_TAG_LEN: usize = 1;

/// How reports are grouped into batches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchLimits {
    /// Most reports per batch.
    pub max_reports: usize,
    /// Most encoded bytes per batch (one UDP datagram); a report larger than that on its
    /// own goes alone.
    pub max_bytes: usize,
    /// Longest a report waits before its batch is sent.
    pub flush: Duration,
}

/// Reports grouped into batches: each batch is handed to a send function once full (count or
/// size), due (its oldest report waited [`BatchLimits::flush`]) or flushed; batches are
/// numbered in sequence.
#[derive(Debug)]
pub struct Batcher {
    limits: BatchLimits,
    batch: ReportBatch,
    /// Encoded bytes of the batch so far, its exporter and sequence number included (0 when
    /// empty).
    bytes: usize,
    /// Encoded bytes of a batch without reports (its sequence number at its longest).
    empty_len: usize,
    /// When the oldest report of the batch was added.
    oldest: Option<Instant>,
}

impl Batcher {
    /// A batcher for reports of `exporter`, starting at sequence number 0.
    pub fn new(exporter: Exporter, limits: BatchLimits) -> Self {
        let empty_len = ReportBatch {
            exporter: Some(exporter.clone()),
            sequence: u64::MAX,
            reports: Vec::new(),
        }
        .encoded_len();
        Batcher {
            limits,
            batch: ReportBatch {
                exporter: Some(exporter),
                sequence: 0,
                reports: Vec::new(),
            },
            bytes: 0,
            empty_len,
            oldest: None,
        }
    }

    /// The exporter every batch names.
    pub fn exporter(&self) -> &Exporter {
        // Always set by `new`.
        self.batch.exporter.as_ref().expect("set by Batcher::new")
    }

    /// Reports waiting in the current batch.
    pub fn pending(&self) -> usize {
        self.batch.reports.len()
    }

    /// Adds the report of `record` (see [`Batcher::add`]); `false` if the record holds no
    /// report (not a parseable packet).
    pub fn add_record(
        &mut self,
        record: &Record<'_>,
        now: Instant,
        send: &mut impl FnMut(&ReportBatch),
    ) -> bool {
        match idint_report::report_from_packet(
            self.exporter(),
            record.receive_ns,
            record.ingress_ifid,
            record.packet,
        ) {
            Ok(r) => {
                self.add(r, now, send);
                true
            }
            Err(_) => false,
        }
    }

    /// Adds a report at `now`, sending the batch first if the report would take it past
    /// `max_bytes`, and after if it is then full.
    pub fn add(&mut self, r: Report, now: Instant, send: &mut impl FnMut(&ReportBatch)) {
        if self.bytes == 0 {
            self.bytes = self.empty_len;
        }
        let body = r.encoded_len();
        let len = REPORT_TAG_LEN + varint_len(body as u64) + body;
        if !self.batch.reports.is_empty() && self.bytes + len > self.limits.max_bytes {
            self.flush(send);
            self.bytes = self.empty_len;
        }
        self.bytes += len;
        self.batch.reports.push(r);
        self.oldest.get_or_insert(now);
        if self.batch.reports.len() >= self.limits.max_reports {
            self.flush(send);
        }
    }

    /// Whether the batch's oldest report has waited its time at `now`.
    pub fn due(&self, now: Instant) -> bool {
        self.oldest
            .is_some_and(|t| now.saturating_duration_since(t) >= self.limits.flush)
    }

    /// Sends the batch if it is due at `now`.
    pub fn poll(&mut self, now: Instant, send: &mut impl FnMut(&ReportBatch)) {
        if self.due(now) {
            self.flush(send);
        }
    }

    /// Sends the batch, if it has reports, and starts the next one.
    pub fn flush(&mut self, send: &mut impl FnMut(&ReportBatch)) {
        if self.batch.reports.is_empty() {
            return;
        }
        send(&self.batch);
        self.batch.sequence += 1;
        self.batch.reports.clear();
        self.bytes = 0;
        self.oldest = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bytes of the ID-INT stack in each test report.
    const STACK: usize = 112;
    /// Encoded bytes of one test report in a batch (tag and length prefix included).
    const REPORT_LEN: usize = 126;

    fn exporter() -> Exporter {
        Exporter {
            isd_as: 0x0001_ff00_0000_0110,
            router_id: 1,
            name: "br1-ff00_0_110-1".into(),
        }
    }

    fn report(i: u64) -> Report {
        Report {
            receive_time_ns: 1_700_000_000_000_000_000 + i,
            idint_stack: vec![0xab; STACK],
            ..Default::default()
        }
    }

    fn limits(max_reports: usize, max_bytes: usize) -> BatchLimits {
        BatchLimits {
            max_reports,
            max_bytes,
            flush: Duration::from_millis(10),
        }
    }

    /// Encoded batches sent by `b` as `add`/`flush` go.
    fn collect(sent: &mut Vec<Vec<u8>>) -> impl FnMut(&ReportBatch) + '_ {
        |batch| sent.push(batch.encode_to_vec())
    }

    #[test]
    fn records_round_trip() {
        let packet = [1u8, 2, 3];
        let r = Record {
            receive_ns: 0x0102_0304_0506_0708,
            ingress_ifid: 0x0a0b,
            packet: &packet,
        };
        let mut buf = [0u8; META_LEN + 3];
        assert!(r.write(&mut buf));
        assert_eq!(&buf[..META_LEN], &[1, 2, 3, 4, 5, 6, 7, 8, 0x0a, 0x0b]);
        assert_eq!(Record::read(&buf), Some(r));
        assert!(!r.write(&mut [0u8; META_LEN + 2]));
        assert_eq!(Record::read(&buf[..META_LEN - 1]), None);
        assert_eq!(
            Record::read(&buf[..META_LEN]).map(|r| r.packet.len()),
            Some(0)
        );
    }

    #[test]
    fn batches_stay_within_max_bytes_and_fill_up() {
        let max_bytes = 512;
        let mut b = Batcher::new(exporter(), limits(1024, max_bytes));
        let mut sent = Vec::new();
        let now = Instant::now();
        for i in 0..20 {
            b.add(report(i), now, &mut collect(&mut sent));
        }
        b.flush(&mut collect(&mut sent));
        let mut reports = 0;
        for (seq, bytes) in sent.iter().enumerate() {
            let batch = ReportBatch::decode(&bytes[..]).unwrap();
            assert_eq!(batch.sequence, seq as u64);
            assert_eq!(batch.exporter.as_ref(), Some(&exporter()));
            reports += batch.reports.len();
        }
        assert_eq!(reports, 20);
        let sizes: Vec<usize> = sent.iter().map(Vec::len).collect();
        assert!(
            sizes.iter().all(|&n| n <= max_bytes),
            "over max_bytes: {sizes:?}"
        );
        // Full batches: one more report would not have fitted.
        let full = &sizes[..sizes.len() - 1];
        assert!(
            full.iter().all(|&n| n + REPORT_LEN > max_bytes),
            "{sizes:?}"
        );
    }

    #[test]
    fn batches_are_sent_at_max_reports() {
        let mut b = Batcher::new(exporter(), limits(4, 65_000));
        let mut sent = Vec::new();
        let now = Instant::now();
        for i in 0..10 {
            b.add(report(i), now, &mut collect(&mut sent));
        }
        assert_eq!(sent.len(), 2);
        assert_eq!(b.pending(), 2);
        let first = ReportBatch::decode(&sent[0][..]).unwrap();
        assert_eq!(first.reports.len(), 4);
        assert_eq!(first.reports[0], report(0));
        b.flush(&mut collect(&mut sent));
        assert_eq!((sent.len(), b.pending()), (3, 0));
        // Nothing to flush: nothing sent.
        b.flush(&mut collect(&mut sent));
        assert_eq!(sent.len(), 3);
    }

    #[test]
    fn a_batch_is_sent_once_its_oldest_report_waited_the_flush_time() {
        let l = limits(1024, 65_000);
        let mut b = Batcher::new(exporter(), l);
        let mut sent = Vec::new();
        let t0 = Instant::now();
        b.poll(t0 + l.flush * 10, &mut collect(&mut sent));
        assert!(sent.is_empty(), "nothing waiting");
        b.add(report(0), t0, &mut collect(&mut sent));
        b.add(report(1), t0 + l.flush / 2, &mut collect(&mut sent));
        assert!(!b.due(t0 + l.flush / 2));
        b.poll(
            t0 + l.flush - Duration::from_nanos(1),
            &mut collect(&mut sent),
        );
        assert!(sent.is_empty());
        b.poll(t0 + l.flush, &mut collect(&mut sent));
        assert_eq!(sent.len(), 1);
        assert_eq!(ReportBatch::decode(&sent[0][..]).unwrap().reports.len(), 2);
        // The next batch's age starts with its first report.
        b.add(report(2), t0 + l.flush * 3, &mut collect(&mut sent));
        assert!(!b.due(t0 + l.flush * 3));
        assert!(b.due(t0 + l.flush * 4));
    }

    #[test]
    fn a_report_larger_than_max_bytes_goes_alone() {
        let mut b = Batcher::new(exporter(), limits(1024, 100));
        let mut sent = Vec::new();
        let now = Instant::now();
        b.add(report(0), now, &mut collect(&mut sent));
        b.add(report(1), now, &mut collect(&mut sent));
        b.flush(&mut collect(&mut sent));
        assert_eq!(sent.len(), 2);
        assert!(
            sent.iter()
                .all(|s| ReportBatch::decode(&s[..]).unwrap().reports.len() == 1)
        );
    }

    #[test]
    fn varints_are_measured() {
        assert_eq!(varint_len(0), 1);
        assert_eq!(varint_len(127), 1);
        assert_eq!(varint_len(128), 2);
        assert_eq!(varint_len(u64::MAX), 10);
    }
}
