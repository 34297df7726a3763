//! [`ReportRef`]: a report as the pipeline reads it, borrowed from a decoded report or from
//! the bytes of a batch.

use super::*;

impl<'a> ReportRef<'a> {
    /// The report with `batch`'s exporter (the batch's) when it names none itself.
    pub(super) fn or_exporter(mut self, batch: Option<(u64, u32)>) -> Self {
        if self.exporter.is_none() {
            self.exporter = batch;
        }
        self
    }

    /// A decoded report.
    pub fn decoded(r: &'a v1::Report) -> Self {
        let host = |h: &'a Option<v1::HostAddress>| h.as_ref().map(|h| (h.addr_type, &h.raw[..]));
        ReportRef {
            origin: Origin::Decoded(r),
            exporter: r.exporter.as_ref().map(|e| (e.isd_as, e.router_id)),
            receive_time_ns: r.receive_time_ns,
            src_isd_as: r.src_isd_as,
            src_host: host(&r.src_host),
            dst_isd_as: r.dst_isd_as,
            dst_host: host(&r.dst_host),
            path: PathRef::Decoded(r.path.as_ref()),
            main_option: &r.idint_main_option,
            stack: &r.idint_stack,
        }
    }

    /// A report of the batch `bytes`, as [`crate::wire::parse_batch`] found it (into
    /// `spans`).
    pub fn encoded(bytes: &'a [u8], spans: &'a Spans, s: &'a ReportSpan) -> Self {
        let host = |h: &Option<HostSpan>| h.as_ref().map(|h| (h.addr_type, &bytes[h.raw.clone()]));
        ReportRef {
            origin: Origin::Encoded(&bytes[s.message.clone()]),
            exporter: s.exporter,
            receive_time_ns: s.receive_time_ns,
            src_isd_as: s.src_isd_as,
            src_host: host(&s.src_host),
            dst_isd_as: s.dst_isd_as,
            dst_host: host(&s.dst_host),
            path: PathRef::Laid(spans.layout(s)),
            main_option: &bytes[s.main_option.clone()],
            stack: &bytes[s.stack.clone()],
        }
    }

    /// The report re-encoded as prost encodes its decoded form (for the quarantine).
    pub(super) fn encode(&self) -> Vec<u8> {
        match self.origin {
            Origin::Decoded(r) => r.encode_to_vec(),
            // The bytes were checked by the wire decoder, so prost decodes them.
            Origin::Encoded(b) => v1::Report::decode(b)
                .map(|r| r.encode_to_vec())
                .unwrap_or_else(|_| b.to_vec()),
        }
    }
}

pub(super) fn host_of(h: Option<(u32, &[u8])>) -> Result<HostAddr, Reject> {
    let (addr_type, raw) =
        h.ok_or_else(|| reject(RejectReason::BadHost, "host address missing"))?;
    let t = u8::try_from(addr_type)
        .ok()
        .filter(|t| *t < 16)
        .ok_or_else(|| reject(RejectReason::BadHost, "address type out of range"))?;
    HostAddr::parse(AddrType::from_nibble(t), raw)
        .map_err(|e| reject(RejectReason::BadHost, format!("host address: {e}")))
}
