//! `report_from_packet` on packets as a sink router delivers them.

use idint_report::{report_from_packet, v1};
use idint_wire::idint::RequestBuilder;
use idint_wire::path::{HopField, InfoField, PathMeta, ScionPathRepr};
use idint_wire::scion::{FlowId, NextHdr, PathType, ScionRepr};
use idint_wire::{HostAddr, IsdAsn};

/// A SCION/UDP packet (1234 -> 80) carrying an ID-INT request in infrastructure mode, behind
/// an E2E header when `e2e`; the UDP Length field says `udp_len` (`None`: the right value).
fn packet(udp_len: Option<u16>, e2e: bool) -> Vec<u8> {
    let mut path = ScionPathRepr {
        meta: PathMeta {
            curr_inf: 1,
            curr_hf: 3,
            reserved: 0,
            seg_len: [2, 2, 0],
        },
        infos: [InfoField::default(); 3],
        hops: [HopField::default(); 64],
    };
    path.infos[0] = InfoField {
        cons_dir: false,
        ..InfoField::default()
    };
    path.infos[1] = InfoField {
        cons_dir: true,
        ..InfoField::default()
    };
    for (j, (i, e)) in [(1, 0), (0, 2), (0, 3), (4, 0)].into_iter().enumerate() {
        path.hops[j] = HopField {
            cons_ingress: i,
            cons_egress: e,
            exp_time: 63,
            ..HopField::default()
        };
    }
    let req = RequestBuilder {
        infrastructure: true,
        stack_len_words: 16,
        ..RequestBuilder::new(1000)
    };
    let (hbh_len, e2e_len, udp) = (req.hbh_len(), if e2e { 8 } else { 0 }, 8 + 12);
    let repr = ScionRepr {
        version: 0,
        traffic_class: 0xb8,
        flow_id: FlowId::new(0xabcde).unwrap(),
        next_header: NextHdr::HopByHop,
        path_type: PathType::Scion,
        path_len: path.buffer_len(),
        payload_len: (hbh_len + e2e_len + udp) as u16,
        dst_ia: "1-ff00:0:110".parse::<IsdAsn>().unwrap(),
        src_ia: "1-ff00:0:111".parse().unwrap(),
        dst_host: HostAddr::V4("10.0.0.2".parse().unwrap()),
        src_host: HostAddr::V4("10.0.0.1".parse().unwrap()),
    };
    let hl = repr.header_len();
    let mut b = vec![0u8; hl + hbh_len + e2e_len + udp];
    repr.emit(&mut b).unwrap();
    path.emit(&mut b[repr.address_end()..]).unwrap();
    req.emit_hbh(&mut b[hl..], if e2e { 201 } else { 17 })
        .unwrap();
    let mut at = hl + hbh_len;
    if e2e {
        // NextHdr UDP, ExtLen 1 (8 bytes): PadN over the 6 option bytes.
        b[at..at + 8].copy_from_slice(&[17, 1, 1, 4, 0, 0, 0, 0]);
        at += 8;
    }
    b[at..at + 2].copy_from_slice(&1234u16.to_be_bytes());
    b[at + 2..at + 4].copy_from_slice(&80u16.to_be_bytes());
    let len = udp_len.unwrap_or(udp as u16);
    b[at + 4..at + 6].copy_from_slice(&len.to_be_bytes());
    b
}

/// A sink router delivers a UDP packet whatever its UDP Length field says (the port is all
/// it reads there): its telemetry must still be reported, the ID-INT options and path being
/// intact.
#[test]
fn a_bad_udp_length_does_not_cost_the_report() {
    let exporter = v1::Exporter::default();
    for e2e in [false, true] {
        let good = report_from_packet(&exporter, 5, 3, &packet(None, e2e)).unwrap();
        let f = good.flow.unwrap();
        assert_eq!(
            (
                f.flow_id,
                f.traffic_class,
                f.l4_protocol,
                f.src_port,
                f.dst_port
            ),
            (0xabcde, 0xb8, 17, 1234, 80)
        );
        for bad_len in [0u16, 7, 4000] {
            let r = report_from_packet(&exporter, 5, 3, &packet(Some(bad_len), e2e))
                .unwrap_or_else(|e| panic!("UDP Length {bad_len}, e2e {e2e}: {e}"));
            assert_eq!(r, good, "UDP Length {bad_len}, e2e {e2e}");
        }
    }
}
