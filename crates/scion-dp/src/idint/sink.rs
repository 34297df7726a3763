//! The infrastructure-mode sink: what a packet whose telemetry ends here is handed over as
//! ([`SinkRecord`]), who takes it ([`ReportExporter`]; [`NoExport`] for routers without the
//! sink role), and what happens to the packet afterwards (dropped or its options stripped).

use idint_wire::idint::IdInt;

use crate::hook::Forwarded;
use crate::outcome::{Disposition, DropReason, Ingress};

use super::IdIntStage;

/// A packet whose telemetry ends here, as handed to the exporter.
#[derive(Debug, Clone, Copy)]
pub struct SinkRecord<'a> {
    /// The whole SCION packet with this router's entry, before the options are stripped.
    pub packet: &'a [u8],
    /// Where it arrived.
    pub ingress: Ingress,
    /// Processing time, Unix ns.
    pub receive_ns: u64,
}

/// Takes telemetry that ends at this router (infrastructure-mode sink). Implementations copy
/// what they need and return at once (the worker is waiting); building and sending reports
/// happens elsewhere.
pub trait ReportExporter {
    /// Accepts a record; `false` if it could not be taken (for example a full queue), which
    /// is counted.
    fn export(&mut self, record: &SinkRecord<'_>) -> bool;
}

/// An exporter for routers without the sink role: refuses everything.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoExport;

impl ReportExporter for NoExport {
    fn export(&mut self, _record: &SinkRecord<'_>) -> bool {
        false
    }
}

impl<K, S, N, X: ReportExporter> IdIntStage<K, S, N, X> {
    /// At this router's sink (infrastructure mode, last BR, delivered here), once its own
    /// entry is written: hands the packet to the exporter, then drops it (its D flag set) or
    /// turns every ID-INT option into padding (the packet keeps its size).
    #[inline]
    pub(super) fn finish_at_sink(
        &mut self,
        buf: &mut [u8],
        f: &Forwarded,
        (hl, hbh_len): (usize, usize),
        discard: bool,
        d: &mut Disposition,
    ) {
        let (len, ingress, now_ns) = (f.len, f.ingress, f.now_ns);
        let record = SinkRecord {
            packet: &buf[..len],
            ingress,
            receive_ns: now_ns,
        };
        if self.exporter.export(&record) {
            self.counters.exported += 1;
        } else {
            self.counters.export_refused += 1;
        }
        if discard {
            self.counters.consumed += 1;
            *d = Disposition::Drop(DropReason::TelemetryConsumed);
        } else {
            // A sender may have put more than one (malformed) ID-INT request into the header:
            // none of them reaches the host.
            let mut stripped = false;
            while let Ok(Some(v)) = IdInt::locate(&mut buf[hl..hl + hbh_len]) {
                v.strip();
                stripped = true;
            }
            if stripped {
                self.counters.stripped += 1;
            }
        }
    }
}
