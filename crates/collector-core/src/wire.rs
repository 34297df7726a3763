//! Borrowed decoding of protobuf `idint.report.v1.ReportBatch` bytes for the hot path: one
//! walk over the batch records, per report, the fields the pipeline reads as byte ranges into
//! the batch and lays out its path, without allocating (the output vector is reused).
//!
//! Reports of one path carry the same path bytes: a path whose bytes equal those of a path
//! laid out earlier in the batch reuses that layout instead of being decoded again, and an
//! exporter equal to the previous report's is not decoded again either.
//!
//! The result always equals what prost decodes: whenever the bytes hold anything this
//! decoder does not take on itself (an error of any kind, groups, a used sub-message given
//! twice, which prost would merge), [`parse_batch`] says so and the caller decodes the batch
//! with prost instead, which then accepts or refuses it with its own error.

use std::ops::Range;

use crate::topology::{HopLayout, LayoutError, MAX_HOPS};

/// A host address of a report: address type and the range of its raw bytes in the batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostSpan {
    /// `addr_type` as decoded (range checked by the pipeline).
    pub addr_type: u32,
    /// `raw`, as a range of the batch bytes.
    pub raw: Range<usize>,
}

/// The fields of one report the pipeline reads, byte ranges into the batch bytes.
#[derive(Debug, Clone)]
pub struct ReportSpan {
    /// The whole `Report` message (for the quarantine).
    pub message: Range<usize>,
    /// Exporter (ISD-AS, router id), if present.
    pub exporter: Option<(u64, u32)>,
    /// Receive time, Unix ns (0: not set).
    pub receive_time_ns: u64,
    /// Source ISD-AS.
    pub src_isd_as: u64,
    /// Source host, if present.
    pub src_host: Option<HostSpan>,
    /// Destination ISD-AS.
    pub dst_isd_as: u64,
    /// Destination host, if present.
    pub dst_host: Option<HostSpan>,
    /// The path laid out (as [`HopLayout::of`] on the decoded path): an index into
    /// [`Spans::layouts`].
    pub layout: usize,
    /// ID-INT main option bytes.
    pub main_option: Range<usize>,
    /// ID-INT stack bytes.
    pub stack: Range<usize>,
}

/// A decoded batch: one [`ReportSpan`] per report and the distinct path layouts they use.
#[derive(Debug, Default)]
pub struct Spans {
    /// The reports, in order.
    pub reports: Vec<ReportSpan>,
    /// Path layouts, referred to by [`ReportSpan::layout`].
    pub layouts: Vec<Result<HopLayout, LayoutError>>,
    /// Byte ranges of the paths laid out in `layouts` (same order; an empty range for a
    /// report without path).
    path_bytes: Vec<Range<usize>>,
    /// The layout the previous report used.
    last_layout: usize,
    /// The previous report's exporter: its bytes and what they hold.
    last_exporter: Option<(Range<usize>, (u64, u32))>,
    /// The batch's exporter (ISD-AS, router id), if present: the exporter of every report
    /// that names none.
    pub exporter: Option<(u64, u32)>,
}

impl Spans {
    /// The layout of a report.
    pub fn layout(&self, s: &ReportSpan) -> &Result<HopLayout, LayoutError> {
        &self.layouts[s.layout]
    }

    fn clear(&mut self) {
        self.reports.clear();
        self.layouts.clear();
        self.path_bytes.clear();
        self.last_layout = 0;
        self.last_exporter = None;
        self.exporter = None;
    }
}

/// Distinct paths of a batch compared byte for byte before one is decoded (beyond that,
/// paths are decoded each time).
const PATHS_COMPARED: usize = 4;

/// Protobuf wire types this decoder reads (groups are left to prost).
const VARINT: u8 = 0;
const FIXED64: u8 = 1;
const LEN: u8 = 2;
const FIXED32: u8 = 5;

/// One field value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Value {
    Varint(u64),
    Fixed64(u64),
    /// Range of a length-delimited value in the batch bytes.
    Len(usize, usize),
    Fixed32,
}

impl Value {
    fn wire_type(self) -> u8 {
        match self {
            Value::Varint(_) => VARINT,
            Value::Fixed64(_) => FIXED64,
            Value::Len(..) => LEN,
            Value::Fixed32 => FIXED32,
        }
    }
}

/// A reader over `buf[pos..end]`; positions are absolute in the batch bytes. Every method
/// returns `None` where prost would refuse the bytes or this decoder leaves them to prost.
struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    end: usize,
}

impl<'a> Reader<'a> {
    fn new(buf: &'a [u8], range: (usize, usize)) -> Self {
        Reader {
            buf,
            pos: range.0,
            end: range.1,
        }
    }

    fn done(&self) -> bool {
        self.pos >= self.end
    }

    /// A varint as prost reads it: at most ten bytes, the tenth at most 1.
    #[inline(always)]
    fn varint(&mut self) -> Option<u64> {
        // Most varints here (keys, lengths, small numbers) are one byte.
        let b = *self.buf.get(self.pos).filter(|_| self.pos < self.end)?;
        if b < 0x80 {
            self.pos += 1;
            return Some(u64::from(b));
        }
        self.varint_long()
    }

    fn varint_long(&mut self) -> Option<u64> {
        let mut v = 0u64;
        for i in 0..10 {
            if self.pos >= self.end {
                return None;
            }
            let b = self.buf[self.pos];
            self.pos += 1;
            if i == 9 && b > 1 {
                return None;
            }
            v |= u64::from(b & 0x7f) << (7 * i);
            if b < 0x80 {
                return Some(v);
            }
        }
        None
    }

    fn fixed<const N: usize>(&mut self) -> Option<[u8; N]> {
        let end = self.pos.checked_add(N).filter(|&e| e <= self.end)?;
        let mut a = [0u8; N];
        a.copy_from_slice(&self.buf[self.pos..end]);
        self.pos = end;
        Some(a)
    }

    /// The next field: number and value.
    #[inline(always)]
    fn field(&mut self) -> Option<(u32, Value)> {
        let key = self.varint()?;
        let key = u32::try_from(key).ok()?;
        let number = key >> 3;
        if number == 0 {
            return None;
        }
        let v = match (key & 7) as u8 {
            VARINT => Value::Varint(self.varint()?),
            FIXED64 => Value::Fixed64(u64::from_le_bytes(self.fixed::<8>()?)),
            LEN => {
                let len = usize::try_from(self.varint()?).ok()?;
                let start = self.pos;
                let end = start.checked_add(len).filter(|&e| e <= self.end)?;
                self.pos = end;
                Value::Len(start, end)
            }
            FIXED32 => {
                self.fixed::<4>()?;
                Value::Fixed32
            }
            _ => return None,
        };
        Some((number, v))
    }
}

/// Checks the wire type of a known field.
fn want(v: Value, wire_type: u8) -> Option<Value> {
    (v.wire_type() == wire_type).then_some(v)
}

fn varint(v: Value) -> Option<u64> {
    match v {
        Value::Varint(x) => Some(x),
        _ => None,
    }
}

fn fixed64(v: Value) -> Option<u64> {
    match v {
        Value::Fixed64(x) => Some(x),
        _ => None,
    }
}

fn len(v: Value) -> Option<(usize, usize)> {
    match v {
        Value::Len(s, e) => Some((s, e)),
        _ => None,
    }
}

/// A message whose every field is a varint scalar (numbers `1..=max`); other numbers are
/// unknown fields. Returns the last value of each.
fn scalars<const N: usize>(buf: &[u8], range: (usize, usize)) -> Option<[u64; N]> {
    let mut out = [0u64; N];
    let mut r = Reader::new(buf, range);
    while !r.done() {
        let (n, v) = r.field()?;
        if let Some(slot) = out.get_mut((n as usize).wrapping_sub(1)) {
            *slot = varint(want(v, VARINT)?)?;
        }
    }
    Some(out)
}

fn exporter(buf: &[u8], range: (usize, usize)) -> Option<(u64, u32)> {
    let (mut ia, mut id) = (0, 0);
    let mut r = Reader::new(buf, range);
    while !r.done() {
        match r.field()? {
            (1, v) => ia = fixed64(v)?,
            (2, v) => id = varint(v)? as u32,
            (3, v) => {
                let (s, e) = len(v)?;
                std::str::from_utf8(&buf[s..e]).ok()?;
            }
            _ => {}
        }
    }
    Some((ia, id))
}

fn host(buf: &[u8], range: (usize, usize)) -> Option<HostSpan> {
    let mut h = HostSpan {
        addr_type: 0,
        raw: range.0..range.0,
    };
    let mut r = Reader::new(buf, range);
    while !r.done() {
        match r.field()? {
            (1, v) => h.addr_type = varint(v)? as u32,
            (2, v) => {
                let (s, e) = len(v)?;
                h.raw = s..e;
            }
            _ => {}
        }
    }
    Some(h)
}

/// The parts of a path the layout needs, bounded; counts go on past the bounds (any count
/// beyond them makes the path inconsistent).
struct PathParts {
    seg_lens: [u32; 3],
    n_seg: usize,
    cons_dir: [bool; 3],
    n_info: usize,
    hops: [(u32, u32); MAX_HOPS],
    n_hops: usize,
}

fn path(buf: &[u8], range: (usize, usize)) -> Option<Result<HopLayout, LayoutError>> {
    let mut p = PathParts {
        seg_lens: [0; 3],
        n_seg: 0,
        cons_dir: [false; 3],
        n_info: 0,
        hops: [(0, 0); MAX_HOPS],
        n_hops: 0,
    };
    let push_seg = |p: &mut PathParts, l: u64| {
        if let Some(s) = p.seg_lens.get_mut(p.n_seg) {
            *s = l as u32;
        }
        p.n_seg += 1;
    };
    let mut r = Reader::new(buf, range);
    while !r.done() {
        match r.field()? {
            (1 | 5 | 6, v) => {
                varint(v)?;
            }
            (2, Value::Varint(l)) => push_seg(&mut p, l),
            (2, Value::Len(s, e)) => {
                let mut packed = Reader::new(buf, (s, e));
                while !packed.done() {
                    let l = packed.varint()?;
                    push_seg(&mut p, l);
                }
            }
            (2, _) => return None,
            (3, v) => {
                let [cons, _peer, _seg_id, _ts] = scalars::<4>(buf, len(v)?)?;
                if let Some(c) = p.cons_dir.get_mut(p.n_info) {
                    *c = cons != 0;
                }
                p.n_info += 1;
            }
            (4, v) => {
                let [ci, ce, _exp] = scalars::<3>(buf, len(v)?)?;
                if let Some(h) = p.hops.get_mut(p.n_hops) {
                    *h = (ci as u32, ce as u32);
                }
                p.n_hops += 1;
            }
            _ => {}
        }
    }
    if p.n_seg > p.seg_lens.len() || p.n_info > p.cons_dir.len() || p.n_hops > MAX_HOPS {
        return Some(Err(LayoutError::Inconsistent));
    }
    Some(HopLayout::build(
        &p.seg_lens[..p.n_seg],
        &p.cons_dir[..p.n_info],
        &p.hops[..p.n_hops],
    ))
}

/// The layout index of the path `buf[s..e]` (`None`: no path), decoding it only if no
/// earlier path of the batch has the same bytes.
fn layout_of(buf: &[u8], path_range: Option<(usize, usize)>, spans: &mut Spans) -> Option<usize> {
    let (s, e) = path_range.unwrap_or((0, 0));
    let bytes = &buf[s..e];
    let same = |i: usize, spans: &Spans| {
        // A report without path (empty range, `None`) is told apart from an empty path
        // message (empty range too) by the layout: `NoPath` only for the former.
        let r = &spans.path_bytes[i];
        buf[r.clone()] == *bytes
            && (path_range.is_none() == matches!(spans.layouts[i], Err(LayoutError::NoPath)))
    };
    let last = spans.last_layout;
    if last < spans.layouts.len() && same(last, spans) {
        return Some(last);
    }
    if let Some(i) = (0..spans.layouts.len().min(PATHS_COMPARED)).find(|&i| same(i, spans)) {
        spans.last_layout = i;
        return Some(i);
    }
    let layout = match path_range {
        Some(r) => path(buf, r)?,
        None => Err(LayoutError::NoPath),
    };
    spans.layouts.push(layout);
    spans.path_bytes.push(s..e);
    spans.last_layout = spans.layouts.len() - 1;
    Some(spans.last_layout)
}

fn report(buf: &[u8], range: (usize, usize), spans: &mut Spans) -> Option<ReportSpan> {
    let mut out = ReportSpan {
        message: range.0..range.1,
        exporter: None,
        receive_time_ns: 0,
        src_isd_as: 0,
        src_host: None,
        dst_isd_as: 0,
        dst_host: None,
        layout: 0,
        main_option: range.0..range.0,
        stack: range.0..range.0,
    };
    let mut path_range = None;
    let mut r = Reader::new(buf, range);
    while !r.done() {
        match r.field()? {
            // Sub-messages given twice are merged by prost: left to it.
            (1, v) => {
                if out.exporter.is_some() {
                    return None;
                }
                let (s, e) = len(v)?;
                let ex = match &spans.last_exporter {
                    Some((r, ex)) if buf[r.clone()] == buf[s..e] => *ex,
                    _ => {
                        let ex = exporter(buf, (s, e))?;
                        spans.last_exporter = Some((s..e, ex));
                        ex
                    }
                };
                out.exporter = Some(ex);
            }
            (2, v) => out.receive_time_ns = varint(v)?,
            (3, v) => out.src_isd_as = fixed64(v)?,
            (4, v) => {
                if out.src_host.is_some() {
                    return None;
                }
                out.src_host = Some(host(buf, len(v)?)?);
            }
            (5, v) => out.dst_isd_as = fixed64(v)?,
            (6, v) => {
                if out.dst_host.is_some() {
                    return None;
                }
                out.dst_host = Some(host(buf, len(v)?)?);
            }
            (7, v) => {
                if path_range.is_some() {
                    return None;
                }
                path_range = Some(len(v)?);
            }
            (8, v) => {
                scalars::<5>(buf, len(v)?)?;
            }
            (9, v) => {
                let (s, e) = len(v)?;
                out.main_option = s..e;
            }
            (10, v) => {
                let (s, e) = len(v)?;
                out.stack = s..e;
            }
            (11 | 12, v) => {
                varint(v)?;
            }
            _ => {}
        }
    }
    out.layout = layout_of(buf, path_range, spans)?;
    Some(out)
}

/// Decodes a `ReportBatch` into `out` (cleared first), one [`ReportSpan`] per report in
/// order. `false` if the caller must decode the batch with prost instead (see the module
/// documentation); `out` is then unspecified.
pub fn parse_batch(buf: &[u8], out: &mut Spans) -> bool {
    out.clear();
    parse_into(buf, out).is_some()
}

fn parse_into(buf: &[u8], out: &mut Spans) -> Option<()> {
    let mut r = Reader::new(buf, (0, buf.len()));
    while !r.done() {
        match r.field()? {
            // Given twice, prost merges the two: left to it.
            (1, v) => {
                if out.exporter.is_some() {
                    return None;
                }
                out.exporter = Some(exporter(buf, len(v)?)?);
            }
            (2, v) => {
                varint(v)?;
            }
            (3, v) => {
                let r = report(buf, len(v)?, out)?;
                out.reports.push(r);
            }
            _ => {}
        }
    }
    Some(())
}

/// Counts the reports (top-level field 3) of `ReportBatch` bytes without decoding them, up to
/// the first byte prost would refuse (so a batch is refused by size before prost allocates
/// its reports). Groups are skipped as prost skips them.
pub fn count_reports(buf: &[u8]) -> usize {
    let mut r = Reader::new(buf, (0, buf.len()));
    let (mut n, mut depth) = (0usize, 0usize);
    while !r.done() {
        let Some(key) = r.varint().and_then(|k| u32::try_from(k).ok()) else {
            break;
        };
        let ok = match key & 7 {
            0 => r.varint().is_some(),
            1 => r.fixed::<8>().is_some(),
            2 => match r.varint().and_then(|l| usize::try_from(l).ok()) {
                Some(l) if r.pos.checked_add(l).is_some_and(|e| e <= r.end) => {
                    r.pos += l;
                    n += usize::from(depth == 0 && key >> 3 == 3);
                    true
                }
                _ => false,
            },
            3 => {
                depth += 1;
                true
            }
            4 if depth > 0 => {
                depth -= 1;
                true
            }
            5 => r.fixed::<4>().is_some(),
            _ => false,
        };
        if !ok {
            break;
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;
    use idint_report::v1;
    use prost::Message;

    fn sample() -> v1::Report {
        v1::Report {
            exporter: Some(v1::Exporter {
                isd_as: 0x0001_ff00_0000_0110,
                router_id: 7,
                name: "br1".into(),
            }),
            receive_time_ns: 1_704_067_800_000_000_123,
            src_isd_as: 0x0001_ff00_0000_0111,
            src_host: Some(v1::HostAddress {
                addr_type: 0,
                raw: vec![10, 0, 0, 1],
            }),
            dst_isd_as: 0x0001_ff00_0000_0110,
            dst_host: Some(v1::HostAddress {
                addr_type: 3,
                raw: vec![0xfd; 16],
            }),
            path: Some(v1::Path {
                path_type: 1,
                seg_lens: vec![2, 2],
                info_fields: vec![
                    v1::InfoField {
                        cons_dir: true,
                        peer: false,
                        seg_id: 0x111,
                        timestamp: 256,
                    },
                    v1::InfoField {
                        cons_dir: false,
                        peer: false,
                        seg_id: 0x222,
                        timestamp: 256,
                    },
                ],
                hop_fields: (0..4)
                    .map(|i| v1::HopField {
                        cons_ingress: i,
                        cons_egress: i + 10,
                        exp_time: 63,
                    })
                    .collect(),
                curr_inf: 1,
                curr_hf: 3,
            }),
            flow: Some(v1::Flow {
                flow_id: 0xdead,
                traffic_class: 0xb8,
                l4_protocol: 17,
                src_port: 1280,
                dst_port: 80,
            }),
            idint_main_option: vec![0xfd, 20, 0, 0],
            idint_stack: vec![0xfe, 10, 1, 2],
            ingress_interface: 1,
            payload_len: 1032,
        }
    }

    /// The spans of a batch agree with prost's decoding of it.
    fn agrees(bytes: &[u8], all: &Spans) {
        let spans = &all.reports;
        let b = v1::ReportBatch::decode(bytes).unwrap();
        assert_eq!(b.reports.len(), spans.len());
        for (r, s) in b.reports.iter().zip(spans) {
            assert_eq!(v1::Report::decode(&bytes[s.message.clone()]).unwrap(), *r);
            assert_eq!(
                s.exporter,
                r.exporter.as_ref().map(|e| (e.isd_as, e.router_id))
            );
            assert_eq!(s.receive_time_ns, r.receive_time_ns);
            assert_eq!((s.src_isd_as, s.dst_isd_as), (r.src_isd_as, r.dst_isd_as));
            for (h, o) in [(&s.src_host, &r.src_host), (&s.dst_host, &r.dst_host)] {
                assert_eq!(
                    h.as_ref().map(|h| (h.addr_type, &bytes[h.raw.clone()])),
                    o.as_ref().map(|o| (o.addr_type, &o.raw[..]))
                );
            }
            assert_eq!(&bytes[s.main_option.clone()], &r.idint_main_option[..]);
            assert_eq!(&bytes[s.stack.clone()], &r.idint_stack[..]);
            let want = HopLayout::of(r.path.as_ref());
            match (all.layout(s), &want) {
                (Ok(a), Ok(b)) => {
                    assert_eq!(
                        (a.hop_fields, a.as_hops, a.hop_of, a.ifs),
                        (b.hop_fields, b.as_hops, b.hop_of, b.ifs)
                    );
                }
                (a, b) => assert_eq!(a.as_ref().err(), b.as_ref().err()),
            }
        }
    }

    #[test]
    fn reports_are_counted_without_decoding() {
        let batch = v1::ReportBatch {
            exporter: sample().exporter,
            sequence: 9,
            reports: vec![sample(), v1::Report::default(), sample()],
        };
        let bytes = batch.encode_to_vec();
        assert_eq!(count_reports(&bytes), 3);
        assert_eq!(count_reports(&b"\x1a\x00".repeat(1000)), 1000);
        // Up to the first byte prost refuses; field 3 inside a group is not a report.
        let mut cut = b"\x1a\x00".repeat(10);
        cut.push(0x1a);
        assert_eq!(count_reports(&cut), 10);
        assert_eq!(count_reports(b"\x23\x1a\x00\x24\x1a\x00"), 1);
        assert_eq!(count_reports(b""), 0);
    }

    #[test]
    fn spans_equal_prost_decoding() {
        let mut empty = sample();
        empty.path = None;
        empty.src_host = None;
        empty.exporter = None;
        let mut odd = sample();
        odd.path.as_mut().unwrap().seg_lens = vec![1, 1, 1, 1];
        let mut wide = sample();
        wide.path.as_mut().unwrap().hop_fields[0].cons_ingress = 0x1_0001;
        let batch = v1::ReportBatch {
            exporter: sample().exporter,
            sequence: 9,
            reports: vec![sample(), empty, odd, v1::Report::default(), wide],
        };
        let bytes = batch.encode_to_vec();
        let mut spans = Spans::default();
        assert!(parse_batch(&bytes, &mut spans));
        assert_eq!(spans.reports.len(), 5);
        assert_eq!(
            spans.layout(&spans.reports[4]).as_ref().err(),
            Some(&LayoutError::OutOfRange)
        );
        let r = &spans.reports;
        assert!(spans.layout(&r[0]).is_ok());
        assert_eq!(
            spans.layout(&r[1]).as_ref().err(),
            Some(&LayoutError::NoPath)
        );
        assert_eq!(
            spans.layout(&r[2]).as_ref().err(),
            Some(&LayoutError::Inconsistent)
        );
        agrees(&bytes, &spans);
    }

    #[test]
    fn equal_paths_share_a_layout_and_others_do_not() {
        let a = sample();
        let mut b = sample();
        b.path.as_mut().unwrap().hop_fields[1].cons_egress = 99;
        b.exporter.as_mut().unwrap().router_id = 8;
        let mut none = sample();
        none.path = None;
        let mut empty = sample();
        empty.path = Some(v1::Path::default());
        let batch = v1::ReportBatch {
            exporter: None,
            sequence: 1,
            reports: vec![a.clone(), b.clone(), a, none.clone(), empty, none, b],
        };
        let bytes = batch.encode_to_vec();
        let mut spans = Spans::default();
        assert!(parse_batch(&bytes, &mut spans));
        let used: Vec<usize> = spans.reports.iter().map(|r| r.layout).collect();
        assert_eq!(used, [0, 1, 0, 2, 3, 2, 1]);
        assert_eq!(spans.layouts.len(), 4);
        assert_eq!(spans.layouts[2].as_ref().err(), Some(&LayoutError::NoPath));
        assert_eq!(
            spans.layouts[3].as_ref().err(),
            Some(&LayoutError::Inconsistent)
        );
        assert_ne!(
            spans.layouts[0].as_ref().unwrap().ifs,
            spans.layouts[1].as_ref().unwrap().ifs
        );
        // Exporters differ between a and b: each report has its own.
        assert_eq!(spans.reports[1].exporter.unwrap().1, 8);
        assert_eq!(spans.reports[2].exporter.unwrap().1, 7);
        agrees(&bytes, &spans);
        // The same decoder state, reused for another batch, starts afresh.
        let one = v1::ReportBatch {
            exporter: None,
            sequence: 2,
            reports: vec![sample()],
        }
        .encode_to_vec();
        assert!(parse_batch(&one, &mut spans));
        assert_eq!(spans.layouts.len(), 1);
        agrees(&one, &spans);
    }

    #[test]
    fn unpacked_segment_lengths_and_unknown_fields_are_read_as_prost_does() {
        // Path: seg_lens unpacked (two varint fields), one info field, an unknown field 9.
        let mut path = vec![0x10, 1, 0x10, 1, 0x1a, 2, 0x08, 1];
        path.extend([0x1a, 2, 0x08, 0]);
        for (i, e) in [(0u8, 5u8), (6, 0)] {
            path.extend([0x22, 4, 0x08, i, 0x10, e]);
        }
        path.extend([0x48, 0x7f]);
        let mut report = vec![0x3a, path.len() as u8];
        report.extend(&path);
        report.extend([0x4a, 2, 0xfd, 0x00, 0x70, 3]); // main option, unknown field 14
        let mut bytes = vec![0x1a, report.len() as u8];
        bytes.extend(&report);
        let mut spans = Spans::default();
        assert!(parse_batch(&bytes, &mut spans));
        assert_eq!(
            spans.layout(&spans.reports[0]).as_ref().unwrap().hop_fields,
            2
        );
        agrees(&bytes, &spans);
    }

    #[test]
    fn anything_unusual_is_left_to_prost() {
        let one = v1::ReportBatch {
            exporter: None,
            sequence: 1,
            reports: vec![sample()],
        }
        .encode_to_vec();
        let mut spans = Spans::default();
        // Every truncation: prost refuses it, and so does this decoder.
        for cut in 1..one.len() {
            if v1::ReportBatch::decode(&one[..cut]).is_err() {
                assert!(!parse_batch(&one[..cut], &mut spans), "cut {cut}");
            } else {
                assert!(parse_batch(&one[..cut], &mut spans), "cut {cut}");
                agrees(&one[..cut], &spans);
            }
        }
        // A sub-message given twice (prost merges it): left to prost.
        let mut r = sample().encode_to_vec();
        r.extend(
            v1::Report {
                src_host: sample().src_host,
                ..Default::default()
            }
            .encode_to_vec(),
        );
        let mut twice = vec![0x1a];
        prost::encoding::encode_varint(r.len() as u64, &mut twice);
        twice.extend(&r);
        assert!(v1::ReportBatch::decode(&twice[..]).is_ok());
        assert!(!parse_batch(&twice, &mut spans));
        // A group, a wrong wire type, field number 0, an over-long varint, bad UTF-8.
        for bad in [
            &[0x0b, 0x0c][..],
            &[0x1d, 0, 0, 0, 0],
            &[0x00, 1],
            &[
                0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02,
            ],
            &[0x0a, 3, 0x1a, 1, 0xff],
        ] {
            assert!(v1::ReportBatch::decode(bad).is_err(), "{bad:02x?}");
            assert!(!parse_batch(bad, &mut spans), "{bad:02x?}");
        }
        // Unknown fields of every plain wire type are skipped.
        let mut ok = one.clone();
        ok.extend([
            0x78, 5, 0x81, 1, 1, 2, 3, 4, 5, 6, 7, 8, 0x8a, 1, 1, 0, 0x95, 1, 1, 2, 3, 4,
        ]);
        assert!(parse_batch(&ok, &mut spans));
        agrees(&ok, &spans);
    }
}
