//! A demo packet for the decoder: a SCION/UDP packet carrying an ID-INT request that two
//! routers have answered (one entry authenticated, one authenticated and encrypted), built
//! with idint-wire exactly as a host and a router would.

use std::path::Path;

use anyhow::{Context, Result, anyhow};
use idint_wire::crypto::aes128;
use idint_wire::idint::crypto::{seal_entry_at, sign_source};
use idint_wire::idint::entry::SlotValue;
use idint_wire::idint::{
    AggregationMode, EntryRepr, IdInt, Instruction, Metadata, PushOutcome, RequestBuilder, Verifier,
};
use idint_wire::path::{HopField, InfoField, PathMeta, ScionPathRepr};
use idint_wire::scion::{FlowId, NextHdr, PathType, ScionHeader, ScionRepr};
use idint_wire::udp::{UdpPacket, UdpRepr};
use idint_wire::{HostAddr, IsdAsn};

use crate::pcap::{LINKTYPE_ETHERNET, PcapWriter, ethernet_ipv4_udp};

/// Keys of the demo: source (host-to-host) key and the two routers' AS-to-host keys.
pub const DEMO_KEYS: [[u8; 16]; 3] = [[0x11; 16], [0x22; 16], [0x33; 16]];

fn ia(s: &str) -> Result<IsdAsn> {
    s.parse().map_err(|e| anyhow!("{s}: {e}"))
}

fn path() -> ScionPathRepr {
    let mut p = ScionPathRepr {
        meta: PathMeta {
            curr_inf: 1,
            curr_hf: 2,
            reserved: 0,
            seg_len: [2, 2, 0],
        },
        infos: [InfoField::default(); 3],
        hops: [HopField::default(); 64],
    };
    p.infos[0] = InfoField {
        peer: false,
        cons_dir: false,
        seg_id: 0x1d46,
        timestamp: 1_704_067_200,
    };
    p.infos[1] = InfoField {
        peer: false,
        cons_dir: true,
        seg_id: 0x3ca8,
        timestamp: 1_704_067_200,
    };
    for (j, (ing, eg)) in [(0u16, 2u16), (1, 0), (0, 11), (12, 0)]
        .into_iter()
        .enumerate()
    {
        p.hops[j] = HopField {
            exp_time: 63,
            cons_ingress: ing,
            cons_egress: eg,
            mac: [j as u8; 6],
            ..Default::default()
        };
    }
    p
}

fn router_entry(hop: u8, node: u32, ts: u64, queue: u64, nonce: Option<[u8; 12]>) -> EntryRepr {
    EntryRepr {
        ingress: true,
        egress: true,
        nonce,
        hop,
        metadata: Metadata {
            node_id: Some(node),
            slots: [
                Some(SlotValue { len: 6, value: ts }),
                Some(SlotValue {
                    len: 4,
                    value: queue,
                }),
                None,
                None,
            ],
            ..Metadata::default()
        },
        ..EntryRepr::default()
    }
}

/// Builds the demo packet (SCION bytes, common header first).
pub fn demo_packet() -> Result<Vec<u8>> {
    let payload = b"ID-INT demo payload";
    let req = RequestBuilder {
        encrypt: true,
        mode: AggregationMode::PerBorderRouter,
        verifier: Verifier::Destination,
        inst_bitmap: 0x8,
        instructions: [
            Instruction(0x82),
            Instruction(0x4f),
            Instruction::NOP,
            Instruction::NOP,
        ],
        stack_len_words: 32,
        source_port: 1,
        ..RequestBuilder::new(1_704_067_800_000_000_000 % (1 << 48))
    };
    let path = path();
    let hbh_len = req.hbh_len();
    let scion = ScionRepr {
        version: 0,
        traffic_class: 0,
        flow_id: FlowId::from_u20(0xd00d),
        next_header: NextHdr::HopByHop,
        path_type: PathType::Scion,
        path_len: path.buffer_len(),
        payload_len: (hbh_len + 8 + payload.len()) as u16,
        dst_ia: ia("1-ff00:0:112")?,
        src_ia: ia("1-ff00:0:111")?,
        dst_host: HostAddr::V4("10.0.0.2".parse()?),
        src_host: HostAddr::V4("10.0.0.1".parse()?),
    };
    let hl = scion.header_len();
    let mut pkt = vec![0u8; hl + hbh_len + 8 + payload.len()];
    scion.emit(&mut pkt)?;
    path.emit(&mut pkt[scion.address_end()..])?;
    req.emit_hbh(&mut pkt[hl..], 17)?;
    let keys = DEMO_KEYS.map(|k| aes128(&k));
    {
        let mut idint =
            IdInt::locate(&mut pkt[hl..hl + hbh_len])?.context("ID-INT just written")?;
        sign_source(&mut idint, &keys[0]).map_err(|e| anyhow!("{e}"))?;
        let entries = [
            router_entry(1, 7, 1_704_067_800_000_010_000 % (1 << 48), 3, None),
            router_entry(
                2,
                9,
                1_704_067_800_000_250_000 % (1 << 48),
                12,
                Some([0x5a; 12]),
            ),
        ];
        for (e, key) in entries.iter().zip(&keys[1..]) {
            let PushOutcome::Pushed { offset } = idint.push(e)? else {
                return Err(anyhow!("demo stack too small"));
            };
            seal_entry_at(&mut idint, offset, key).map_err(|e| anyhow!("{e}"))?;
        }
    }
    let l4 = hl + hbh_len;
    UdpRepr {
        src_port: 40000,
        dst_port: 31000,
        payload_len: payload.len() as u16,
        checksum: 0,
    }
    .emit(&mut pkt[l4..])?;
    pkt[l4 + 8..].copy_from_slice(payload);
    let hdr_copy = pkt[..hl].to_vec();
    let hdr = ScionHeader::new_checked(&hdr_copy[..])?;
    UdpPacket::new_unchecked(&mut pkt[l4..]).fill_checksum(&hdr);
    Ok(pkt)
}

/// Writes a pcap (Ethernet/IPv4/UDP underlay) holding the demo packet; returns the packet
/// count.
pub fn write_demo_pcap(path: &Path) -> Result<usize> {
    let pkt = demo_packet()?;
    let frame = ethernet_ipv4_udp("192.0.2.1:50000".parse()?, "192.0.2.2:50000".parse()?, &pkt);
    let file =
        std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
    let mut w = PcapWriter::new(std::io::BufWriter::new(file), LINKTYPE_ETHERNET)?;
    w.write(1_704_067_800_000_300_000, &frame)?;
    w.finish()?;
    Ok(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use idint_wire::idint::crypto::verify_stack;
    use idint_wire::packet::Packet;

    #[test]
    fn demo_packet_verifies_and_decodes() {
        let mut pkt = demo_packet().unwrap();
        let parsed = Packet::parse(&pkt).unwrap();
        assert!(parsed.payload_len_matches());
        let range = parsed.hbh_range().unwrap();
        let pretty = idint_wire::pretty::PrettyPacket::new(&pkt).to_string();
        assert!(pretty.contains("ID-INT main option"), "{pretty}");
        assert!(pretty.contains("UDP 40000 -> 31000"), "{pretty}");
        assert!(pretty.contains("(valid)"), "{pretty}");
        let keys = DEMO_KEYS.map(|k| aes128(&k));
        let mut idint = IdInt::locate(&mut pkt[range]).unwrap().unwrap();
        assert_eq!(
            verify_stack(&mut idint, &keys[0], |i, _| keys.get(i)).unwrap(),
            3
        );
    }
}
