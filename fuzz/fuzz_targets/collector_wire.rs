//! The collector's in-place protobuf decoder (`collector_core::wire::parse_batch`, what the UDP and
//! HTTP ingest run on every report batch) against prost: never a panic, and whenever it takes a
//! batch on itself, every field it records (byte ranges, numbers, the laid-out path, shared
//! between reports of equal paths) equals what prost decodes from the same bytes; a decoder
//! state reused for a second batch gives the same result as a fresh one.
//!
//! Input: byte 0 bit 0 clear = the remaining bytes are the batch; set = a valid batch is built
//! from the next bytes (reports with one of two paths, some without path or exporter) and the
//! rest is XORed over its encoding, so that mutations reach deep into well-formed batches.
#![no_main]

use collector_core::topology::HopLayout;
use collector_core::wire::{Spans, parse_batch};
use idint_report::v1;
use libfuzzer_sys::fuzz_target;
use prost::Message;

/// A path of one or two segments; seed bit 5 drops a hop field so that some paths cannot be
/// laid out.
fn path(seed: u8) -> v1::Path {
    let lens: Vec<u32> = [u32::from(seed % 4) + 1, u32::from(seed >> 6)]
        .into_iter()
        .filter(|&l| l > 0)
        .collect();
    let hops = lens.iter().sum::<u32>() - u32::from(seed >> 5 & 1);
    v1::Path {
        path_type: 1,
        curr_inf: 0,
        curr_hf: u32::from(seed >> 4 & 1),
        info_fields: (0..lens.len() as u32)
            .map(|i| v1::InfoField {
                cons_dir: (seed >> i) & 1 != 0,
                peer: false,
                seg_id: u32::from(seed) + i,
                timestamp: 256,
            })
            .collect(),
        seg_lens: lens,
        hop_fields: (0..hops)
            .map(|i| v1::HopField {
                cons_ingress: i,
                cons_egress: i + u32::from(seed),
                exp_time: 63,
            })
            .collect(),
    }
}

fn built(b: &[u8]) -> Vec<u8> {
    let (p0, p1) = (
        path(b.first().copied().unwrap_or(0)),
        path(b.get(1).copied().unwrap_or(1)),
    );
    let reports = b
        .iter()
        .skip(2)
        .take(8)
        .map(|&k| v1::Report {
            exporter: (k & 4 == 0).then(|| v1::Exporter {
                isd_as: 0x0001_ff00_0000_0110,
                router_id: u32::from(k & 8),
                name: "br".into(),
            }),
            receive_time_ns: u64::from(k),
            src_isd_as: 0x0001_ff00_0000_0111,
            src_host: Some(v1::HostAddress {
                addr_type: 0,
                raw: vec![10, 0, 0, k],
            }),
            dst_isd_as: 0x0001_ff00_0000_0110,
            dst_host: None,
            path: match k & 3 {
                0 => None,
                1 => Some(p1.clone()),
                _ => Some(p0.clone()),
            },
            idint_main_option: vec![k; 22],
            idint_stack: vec![k; 8],
            ..Default::default()
        })
        .collect();
    v1::ReportBatch {
        exporter: None,
        sequence: 1,
        reports,
    }
    .encode_to_vec()
}

/// Every field `spans` recorded equals prost's decoding of `bytes`.
fn agrees(bytes: &[u8], all: &Spans) {
    let b =
        v1::ReportBatch::decode(bytes).expect("a batch the in-place decoder takes, prost takes");
    assert_eq!(b.reports.len(), all.reports.len());
    for (r, s) in b.reports.iter().zip(&all.reports) {
        assert_eq!(
            v1::Report::decode(&bytes[s.message.clone()]).expect("report bytes"),
            *r
        );
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
        match (all.layout(s), &HopLayout::of(r.path.as_ref())) {
            (Ok(a), Ok(b)) => assert_eq!(
                (a.hop_fields, a.as_hops, a.hop_of, a.ifs),
                (b.hop_fields, b.as_hops, b.hop_of, b.ifs)
            ),
            (a, b) => assert_eq!(a.as_ref().err(), b.as_ref().err()),
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let bytes = if mode & 1 == 0 {
        rest.to_vec()
    } else {
        let (head, xor) = rest.split_at(rest.len().min(10));
        let mut b = built(head);
        let n = b.len();
        if n > 0 {
            for (i, x) in xor.iter().enumerate() {
                b[i % n] ^= x;
            }
        }
        b
    };
    let mut spans = Spans::default();
    if !parse_batch(&bytes, &mut spans) {
        // Left to prost: nothing to compare.
        return;
    }
    agrees(&bytes, &spans);
    // A decoder state reused for another batch (here: a batch of one empty report, then these
    // bytes again) ends up as a fresh one.
    assert!(parse_batch(&[0x1a, 0x00], &mut spans));
    assert!(parse_batch(&bytes, &mut spans));
    agrees(&bytes, &spans);
});
