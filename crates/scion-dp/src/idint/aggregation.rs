//! Aggregation into an existing entry: the per-slot aggregation functions ([`aggregate`]),
//! and the rule that a router merges only into an entry of its own AS ([`hop_of_this_as`]).
//! When a router pushes and when it aggregates is decided in `general` (see the module docs
//! of [`crate::idint`]).

use idint_wire::idint::entry::SlotValue;
use idint_wire::idint::{AggregationFunction, Metadata};
use idint_wire::path::scion::{INFO_LEN, META_LEN};
use idint_wire::scion::ScionHeader;

use crate::header::INFO_PEER;

/// The bytes of the slot width `len`.
#[inline]
pub(super) fn fit(value: u64, len: usize) -> u64 {
    if len >= 8 {
        value
    } else {
        value & ((1u64 << (8 * len)) - 1)
    }
}

/// Combines an existing slot with a new one (see the module docs).
fn aggregate_slot(
    f: AggregationFunction,
    old: Option<SlotValue>,
    new: Option<SlotValue>,
    width: usize,
) -> Option<SlotValue> {
    let old = old.filter(|o| usize::from(o.len) == width);
    match (old, new) {
        (None, n) => n,
        (o, None) => o,
        (Some(o), Some(n)) => {
            let v = match f {
                AggregationFunction::Last => n.value,
                AggregationFunction::Min => o.value.min(n.value),
                AggregationFunction::Max => o.value.max(n.value),
                AggregationFunction::Sum => fit(o.value.wrapping_add(n.value), width),
                AggregationFunction::First | AggregationFunction::Unknown(_) => o.value,
            };
            Some(SlotValue {
                len: n.len,
                value: v,
            })
        }
    }
}

/// Aggregates `new` into `old` with the main option's functions.
pub fn aggregate(
    old: &Metadata,
    new: &Metadata,
    functions: [AggregationFunction; 4],
    widths: [usize; 4],
) -> Metadata {
    let mut m = Metadata {
        node_id: new.node_id.or(old.node_id),
        node_count: match (old.node_count, new.node_count) {
            (Some(a), Some(b)) => Some(a.saturating_add(b)),
            (a, b) => b.or(a),
        },
        ingress_if: old.ingress_if.or(new.ingress_if),
        egress_if: new.egress_if.or(old.egress_if),
        slots: [None; 4],
    };
    for k in 0..4 {
        m.slots[k] = aggregate_slot(functions[k], old.slots[k], new.slots[k], widths[k]);
    }
    m
}

/// Whether hop field `entry_hop` belongs to the AS that the packet (SCION header `head`) is in
/// while its current hop field is `hop`: the same hop field, or the one before it when the
/// segments cross inside this AS (`hop` starts a later segment that is not a peering segment:
/// across a peering link the segments change between two ASes).
pub(super) fn hop_of_this_as(head: &[u8], hop: u8, entry_hop: u8) -> bool {
    use idint_wire::path::PathMeta;
    use idint_wire::path::epic::EPIC_PREFIX_LEN;
    use idint_wire::scion::PathType;
    if entry_hop == hop {
        return true;
    }
    if hop == 0 || entry_hop != hop - 1 {
        return false;
    }
    let Ok(h) = ScionHeader::new_checked(head) else {
        return false;
    };
    let sp = match h.path_type() {
        PathType::Scion => h.path_offset(),
        PathType::Epic => h.path_offset() + EPIC_PREFIX_LEN,
        _ => return false,
    };
    let Some(m) = head.get(sp..sp + META_LEN) else {
        return false;
    };
    let meta = PathMeta::from_u32(u32::from_be_bytes([m[0], m[1], m[2], m[3]]));
    let (s0, s1) = (meta.seg_len[0], meta.seg_len[1]);
    let segment = if hop == s0 {
        1
    } else if s1 > 0 && hop == s0 + s1 {
        2
    } else {
        return false;
    };
    // The info field's Peer flag.
    head.get(sp + META_LEN + INFO_LEN * segment)
        .is_some_and(|&flags| flags & INFO_PEER == 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use idint_wire::HostAddr;

    fn s(len: u8, value: u64) -> Option<SlotValue> {
        Some(SlotValue { len, value })
    }

    #[test]
    fn every_aggregation_function() {
        let cases = [
            (AggregationFunction::First, 5, 9, 5),
            (AggregationFunction::Last, 5, 9, 9),
            (AggregationFunction::Min, 5, 9, 5),
            (AggregationFunction::Min, 9, 5, 5),
            (AggregationFunction::Max, 5, 9, 9),
            (AggregationFunction::Max, 9, 5, 9),
            (AggregationFunction::Sum, 5, 9, 14),
            (AggregationFunction::Unknown(6), 5, 9, 5),
        ];
        for (f, a, b, want) in cases {
            assert_eq!(aggregate_slot(f, s(4, a), s(4, b), 4), s(4, want), "{f:?}");
        }
    }

    #[test]
    fn sums_wrap_in_the_slot_width() {
        let f = AggregationFunction::Sum;
        assert_eq!(aggregate_slot(f, s(2, 0xfff0), s(2, 0x20), 2), s(2, 0x10));
        assert_eq!(aggregate_slot(f, s(4, 0xffff_ffff), s(4, 1), 4), s(4, 0));
        assert_eq!(
            aggregate_slot(f, s(6, 0xffff_ffff_ffff), s(6, 2), 6),
            s(6, 1)
        );
        assert_eq!(aggregate_slot(f, s(8, u64::MAX), s(8, 3), 8), s(8, 2));
    }

    #[test]
    fn empty_sides_and_wrong_lengths() {
        for f in [
            AggregationFunction::First,
            AggregationFunction::Min,
            AggregationFunction::Sum,
        ] {
            assert_eq!(aggregate_slot(f, None, s(4, 7), 4), s(4, 7));
            assert_eq!(aggregate_slot(f, s(4, 7), None, 4), s(4, 7));
            assert_eq!(aggregate_slot(f, None, None, 4), None);
            // A stored slot of the wrong length is ignored.
            assert_eq!(aggregate_slot(f, s(2, 1), s(4, 7), 4), s(4, 7));
            assert_eq!(aggregate_slot(f, s(2, 1), None, 4), None);
        }
    }

    #[test]
    fn bitmap_items_merge() {
        let old = Metadata {
            node_id: Some(1),
            node_count: Some(u16::MAX),
            ingress_if: Some(2),
            egress_if: None,
            slots: [None; 4],
        };
        let new = Metadata {
            node_id: Some(3),
            node_count: Some(1),
            ingress_if: Some(0),
            egress_if: Some(5),
            slots: [None; 4],
        };
        let m = aggregate(&old, &new, [AggregationFunction::Last; 4], [0; 4]);
        assert_eq!(m.node_id, Some(3));
        assert_eq!(m.node_count, Some(u16::MAX), "saturates");
        assert_eq!((m.ingress_if, m.egress_if), (Some(2), Some(5)));
    }

    /// A SCION header with a two-segment path (3 + 2 hop fields), current hop `hop`, the
    /// second info field's Peer flag `peer`.
    fn two_segment_header(hop: u8, peer: bool) -> alloc::vec::Vec<u8> {
        use idint_wire::path::scion::{HopField, InfoField, PathMeta, ScionPathRepr};
        use idint_wire::scion::{FlowId, NextHdr, PathType, ScionRepr};
        let mut infos = [InfoField::default(); 3];
        infos[0].peer = peer;
        infos[1].peer = peer;
        let path = ScionPathRepr {
            meta: PathMeta {
                curr_inf: u8::from(hop >= 3),
                curr_hf: hop,
                reserved: 0,
                seg_len: [3, 2, 0],
            },
            infos,
            hops: [HopField::default(); 64],
        };
        let mut pb = alloc::vec![0u8; path.buffer_len()];
        path.emit(&mut pb).unwrap();
        let repr = ScionRepr {
            version: 0,
            traffic_class: 0,
            flow_id: FlowId::new(1).unwrap(),
            next_header: NextHdr::from(idint_wire::udp::PROTOCOL),
            path_type: PathType::Scion,
            path_len: pb.len(),
            payload_len: 0,
            dst_ia: "1-ff00:0:2".parse().unwrap(),
            src_ia: "1-ff00:0:1".parse().unwrap(),
            dst_host: HostAddr::V4(core::net::Ipv4Addr::new(10, 0, 0, 2)),
            src_host: HostAddr::V4(core::net::Ipv4Addr::new(10, 0, 0, 1)),
        };
        let mut v = alloc::vec![0u8; repr.header_len()];
        repr.emit(&mut v).unwrap();
        let at = repr.address_end();
        v[at..].copy_from_slice(&pb);
        v
    }

    #[test]
    fn entries_of_this_as_by_hop_field() {
        // Within a segment only the current hop field is this AS's.
        let h = two_segment_header(1, false);
        assert!(hop_of_this_as(&h, 1, 1));
        assert!(!hop_of_this_as(&h, 1, 0), "the previous AS");
        assert!(!hop_of_this_as(&h, 1, 2));
        // Hop 3 starts the second segment: crossing inside this AS, hop 2 is this AS's too.
        let h = two_segment_header(3, false);
        assert!(hop_of_this_as(&h, 3, 3));
        assert!(hop_of_this_as(&h, 3, 2), "segment crossover in this AS");
        assert!(!hop_of_this_as(&h, 3, 1));
        // Across a peering link the segments change between two ASes.
        let h = two_segment_header(3, true);
        assert!(hop_of_this_as(&h, 3, 3));
        assert!(!hop_of_this_as(&h, 3, 2), "the peer AS's hop field");
        // No header to read: only the current hop field.
        assert!(hop_of_this_as(&[], 3, 3));
        assert!(!hop_of_this_as(&[], 3, 2));
    }
}
