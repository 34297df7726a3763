//! Property tests: Repr -> emit -> parse -> equal Repr for every header, and arbitrary bytes
//! never make a parser or accessor panic.

use idint_wire::idint::entry::SlotValue;
use idint_wire::idint::{
    AggregationFunction, AggregationMode, Entry, EntryRepr, IdInt, Instruction, MainOption,
    MainOptionRepr, Metadata, Verifier,
};
use idint_wire::path::{EpicPathRepr, HopField, InfoField, OneHopPath, PathMeta, ScionPathRepr};
use idint_wire::pretty::PrettyPacket;
use idint_wire::scion::{FlowId, NextHdr, PathType, ScionHeader, ScionRepr};
use idint_wire::scmp::{ParamProblemCode, ScmpRepr};
use idint_wire::udp::{UdpPacket, UdpRepr};
use idint_wire::{HostAddr, IsdAsn, Svc};
use proptest::prelude::*;

fn host() -> impl Strategy<Value = HostAddr> {
    prop_oneof![
        any::<[u8; 4]>().prop_map(|a| HostAddr::V4(a.into())),
        any::<[u8; 16]>().prop_map(|a| HostAddr::V6(a.into())),
        any::<u16>().prop_map(|s| HostAddr::Svc(Svc(s))),
    ]
}

fn ia() -> impl Strategy<Value = IsdAsn> {
    any::<u64>().prop_map(IsdAsn::from_u64)
}

fn info() -> impl Strategy<Value = InfoField> {
    (any::<bool>(), any::<bool>(), any::<u16>(), any::<u32>()).prop_map(
        |(peer, cons_dir, seg_id, timestamp)| InfoField {
            peer,
            cons_dir,
            seg_id,
            timestamp,
        },
    )
}

fn hop() -> impl Strategy<Value = HopField> {
    (
        any::<bool>(),
        any::<bool>(),
        any::<u8>(),
        any::<u16>(),
        any::<u16>(),
        any::<[u8; 6]>(),
    )
        .prop_map(
            |(ingress_alert, egress_alert, exp_time, cons_ingress, cons_egress, mac)| HopField {
                ingress_alert,
                egress_alert,
                exp_time,
                cons_ingress,
                cons_egress,
                mac,
            },
        )
}

fn scion_path() -> impl Strategy<Value = ScionPathRepr> {
    (
        1usize..=3,
        prop::collection::vec(1u8..=21, 3),
        any::<u8>(),
        any::<u8>(),
        prop::collection::vec(info(), 3),
        prop::collection::vec(hop(), 63),
    )
        .prop_map(|(n, lens, ci, ch, infos, hops)| {
            let mut seg_len = [0u8; 3];
            seg_len[..n].copy_from_slice(&lens[..n]);
            let total: usize = seg_len.iter().map(|&l| usize::from(l)).sum();
            let meta = PathMeta {
                curr_inf: ci % n as u8,
                curr_hf: (usize::from(ch) % total) as u8,
                reserved: 0,
                seg_len,
            };
            let mut p = ScionPathRepr {
                meta,
                infos: [InfoField::default(); 3],
                hops: [HopField::default(); 64],
            };
            p.infos[..n].copy_from_slice(&infos[..n]);
            p.hops[..total].copy_from_slice(&hops[..total]);
            p
        })
}

fn metadata() -> impl Strategy<Value = Metadata> {
    let slot = prop_oneof![
        Just(None),
        (1u8..=4, any::<u64>()).prop_map(|(l, v)| {
            let len = l * 2;
            let mask = if len == 8 {
                u64::MAX
            } else {
                (1u64 << (8 * len)) - 1
            };
            Some(SlotValue {
                len,
                value: v & mask,
            })
        })
    ];
    (
        prop::option::of(any::<u32>()),
        prop::option::of(any::<u16>()),
        prop::option::of(any::<u16>()),
        prop::option::of(any::<u16>()),
        [slot.clone(), slot.clone(), slot.clone(), slot],
    )
        .prop_map(
            |(node_id, node_count, ingress_if, egress_if, slots)| Metadata {
                node_id,
                node_count,
                ingress_if,
                egress_if,
                slots,
            },
        )
}

proptest! {
    #[test]
    fn scion_header_and_path_round_trip(
        tc in any::<u8>(), flow in 0u32..=FlowId::MAX, nh in any::<u8>(), pl in any::<u16>(),
        dst in host(), src in host(), dst_ia in ia(), src_ia in ia(), path in scion_path(),
    ) {
        let repr = ScionRepr {
            version: 0, traffic_class: tc, flow_id: FlowId::new(flow).unwrap(),
            next_header: NextHdr::from(nh), path_type: PathType::Scion,
            path_len: path.buffer_len(), payload_len: pl,
            dst_ia, src_ia, dst_host: dst, src_host: src,
        };
        let mut buf = vec![0u8; repr.header_len()];
        if repr.header_len() > 1020 {
            prop_assert!(repr.emit(&mut buf).is_err());
            return Ok(());
        }
        repr.emit(&mut buf).unwrap();
        path.emit(&mut buf[repr.address_end()..]).unwrap();
        let h = ScionHeader::new_checked(&buf[..]).unwrap();
        prop_assert_eq!(ScionRepr::parse(&h).unwrap(), repr);
        let back = ScionPathRepr::parse(h.path_bytes()).unwrap();
        prop_assert_eq!(back, path);
        prop_assert_eq!(back.reversed().unwrap().reversed().unwrap(), path);
    }

    #[test]
    fn onehop_and_epic_round_trip(i in info(), a in hop(), b in hop(), ts in any::<u32>(), ctr in any::<u32>(),
                                  ph in any::<[u8; 4]>(), lh in any::<[u8; 4]>(), path in scion_path()) {
        let o = OneHopPath { info: i, first: a, second: b };
        let mut buf = [0u8; 32];
        o.emit(&mut buf).unwrap();
        prop_assert_eq!(OneHopPath::parse(&buf).unwrap(), o);
        let e = EpicPathRepr { epic_ts: ts, counter: ctr, phvf: ph, lhvf: lh, scion: path };
        let mut buf = vec![0u8; e.buffer_len()];
        e.emit(&mut buf).unwrap();
        prop_assert_eq!(EpicPathRepr::parse(&buf).unwrap(), e);
    }

    #[test]
    fn udp_and_scmp_round_trip(sp in any::<u16>(), dp in any::<u16>(), data in prop::collection::vec(any::<u8>(), 0..64),
                               id in any::<u16>(), seq in any::<u16>(), ptr in any::<u16>(), code in any::<u8>(),
                               ifid in any::<u64>(), ia in ia()) {
        let u = UdpRepr { src_port: sp, dst_port: dp, payload_len: data.len() as u16, checksum: 0x1234 };
        let mut buf = vec![0u8; 8 + data.len()];
        u.emit(&mut buf).unwrap();
        prop_assert_eq!(UdpRepr::parse(&UdpPacket::new_checked(&buf[..]).unwrap()).unwrap(), u);
        for r in [
            ScmpRepr::ParameterProblem { code: ParamProblemCode::from(code), pointer: ptr, quote: &data },
            ScmpRepr::DestinationUnreachable { code: code % 7, quote: &data },
            ScmpRepr::PacketTooBig { code, mtu: ptr, quote: &data },
            ScmpRepr::ExternalInterfaceDown { code, ia, interface: ifid, quote: &data },
            ScmpRepr::InternalConnectivityDown { code, ia, ingress: ifid, egress: !ifid, quote: &data },
            ScmpRepr::Echo { reply: code % 2 == 0, code, id, seq, data: &data },
            ScmpRepr::Traceroute { reply: code % 2 == 1, code, id, seq, ia, interface: ifid, data: &data },
        ] {
            let mut buf = vec![0u8; r.buffer_len()];
            r.emit(&mut buf).unwrap();
            prop_assert_eq!(ScmpRepr::parse(&buf).unwrap(), r);
        }
    }

    #[test]
    fn idint_main_and_entry_round_trip(
        flags in any::<[bool; 4]>(), mode in 0u8..4, vrf in 0u8..3, h in prop_oneof![
            any::<[u8; 4]>().prop_map(|a| HostAddr::V4(a.into())),
            any::<[u8; 16]>().prop_map(|a| HostAddr::V6(a.into()))], via in ia(),
        stack in any::<u8>(), tos in any::<u8>(), delay in 0u8..64, bitmap in 0u8..16,
        af in any::<[u8; 4]>(), inst in any::<[u8; 4]>(), ts in 0u64..(1 << 48), port in any::<u16>(),
        md in metadata(), nonce in prop::option::of(any::<[u8; 12]>()), hopi in 0u8..64, mac in any::<[u8; 4]>(),
        ef in any::<[bool; 4]>(),
    ) {
        let verifier = match vrf { 0 => Verifier::ThirdParty { ia: via, host: h }, 1 => Verifier::Destination, _ => Verifier::Source };
        let m = MainOptionRepr {
            infrastructure: flags[0], discard: flags[1], encrypt: flags[2], stack_full: flags[3],
            mode: AggregationMode::from_bits(mode), verifier, stack_len_words: stack, tos_words: tos,
            delay_hops: delay, inst_bitmap: bitmap, aggregation: af.map(AggregationFunction::from),
            instructions: inst.map(Instruction), source_timestamp: ts, source_port: port,
        };
        let mut buf = vec![0u8; m.buffer_len()];
        m.emit(&mut buf).unwrap();
        prop_assert_eq!(MainOptionRepr::parse(&MainOption::new_checked(&buf[..]).unwrap()).unwrap(), m);
        let e = EntryRepr { source: ef[0], ingress: ef[1], egress: ef[2], aggregated: ef[3], nonce, hop: hopi, metadata: md, mac };
        let mut buf = vec![0u8; e.buffer_len()];
        e.emit(&mut buf).unwrap();
        prop_assert_eq!(EntryRepr::parse(&Entry::new_checked(&buf[..]).unwrap()).unwrap(), e);
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..600)) {
        let _ = PrettyPacket::new(&bytes).to_string();
        let _ = IdInt::locate(&bytes[..]);
        let _ = Entry::new_checked(&bytes[..]).map(|e| (e.metadata(), e.mac(), e.nonce()));
        let _ = MainOption::new_checked(&bytes[..]).map(|m| MainOptionRepr::parse(&m));
        let _ = ScmpRepr::parse(&bytes);
    }

    #[test]
    fn mutated_golden_packets_never_panic(idx in any::<prop::sample::Index>(), pos in any::<prop::sample::Index>(), val in any::<u8>()) {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/scion/slayers_golden");
        let mut files: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
        files.sort();
        let mut bytes = std::fs::read(idx.get(&files)).unwrap();
        let i = pos.index(bytes.len());
        bytes[i] = val;
        let _ = PrettyPacket::new(&bytes).to_string();
    }
}
