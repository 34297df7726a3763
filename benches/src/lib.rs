//! Shared helpers for the criterion benchmarks in `benches/benches/`: realistic packets built
//! with idint-wire.

pub mod idint_fixture;
pub mod router_path;

use idint_wire::idint::entry::SlotValue;
use idint_wire::idint::{
    AggregationMode, EntryRepr, IdInt, Instruction, Metadata, PushOutcome, RequestBuilder, Verifier,
};
use idint_wire::path::{HopField, InfoField, PathMeta, ScionPathRepr};
use idint_wire::scion::{FlowId, NextHdr, PathType, ScionRepr};
use idint_wire::udp::UdpRepr;
use idint_wire::{HostAddr, IsdAsn};

/// UDP payload length of the benchmark packet.
pub const PAYLOAD_LEN: usize = 64;

/// A 3-segment SCION path (3 + 4 + 3 hop fields).
pub fn three_segment_path() -> ScionPathRepr {
    let mut p = ScionPathRepr {
        meta: PathMeta {
            curr_inf: 1,
            curr_hf: 4,
            reserved: 0,
            seg_len: [3, 4, 3],
        },
        infos: [InfoField::default(); 3],
        hops: [HopField::default(); 64],
    };
    for (i, f) in p.infos.iter_mut().enumerate() {
        *f = InfoField {
            peer: false,
            cons_dir: i != 0,
            seg_id: 0x1000 + i as u16,
            timestamp: 1_704_067_200,
        };
    }
    for (j, h) in p.hops.iter_mut().take(10).enumerate() {
        *h = HopField {
            exp_time: 63,
            cons_ingress: j as u16,
            cons_egress: j as u16 + 1,
            mac: [j as u8; 6],
            ..Default::default()
        };
    }
    p
}

/// The ID-INT request of the benchmark packet.
pub fn request() -> RequestBuilder {
    RequestBuilder {
        encrypt: true,
        mode: AggregationMode::PerBorderRouter,
        verifier: Verifier::ThirdParty {
            ia: IsdAsn::from_u64(0x0001_ff00_0000_0001),
            host: HostAddr::V4([10, 0, 0, 9].into()),
        },
        inst_bitmap: 0x8,
        instructions: [
            Instruction(0x82),
            Instruction(0x83),
            Instruction(0x4f),
            Instruction::NOP,
        ],
        stack_len_words: 48,
        ..RequestBuilder::new(1_000_000)
    }
}

/// A router entry of the benchmark stack.
pub fn router_entry(hop: u8) -> EntryRepr {
    EntryRepr {
        ingress: true,
        egress: true,
        hop,
        metadata: Metadata {
            node_id: Some(u32::from(hop)),
            slots: [
                Some(SlotValue {
                    len: 6,
                    value: 1_000,
                }),
                Some(SlotValue {
                    len: 6,
                    value: 2_000,
                }),
                Some(SlotValue { len: 4, value: 3 }),
                None,
            ],
            ..Metadata::default()
        },
        ..EntryRepr::default()
    }
}

/// Writes the benchmark packet (SCION, 3-segment path, HBH with ID-INT: source entry + 3
/// router entries, UDP with [`PAYLOAD_LEN`] bytes) into `buf`; returns its length.
pub fn emit_packet(buf: &mut [u8]) -> Result<usize, idint_wire::Error> {
    let path = three_segment_path();
    let req = request();
    let hbh_len = req.hbh_len();
    let scion = ScionRepr {
        version: 0,
        traffic_class: 0,
        flow_id: FlowId::from_u20(1),
        next_header: NextHdr::HopByHop,
        path_type: PathType::Scion,
        path_len: path.buffer_len(),
        payload_len: (hbh_len + 8 + PAYLOAD_LEN) as u16,
        dst_ia: IsdAsn::from_u64(0x0001_ff00_0000_0112),
        src_ia: IsdAsn::from_u64(0x0001_ff00_0000_0111),
        dst_host: HostAddr::V4([10, 0, 0, 2].into()),
        src_host: HostAddr::V4([10, 0, 0, 1].into()),
    };
    let hl = scion.header_len();
    let total = hl + hbh_len + 8 + PAYLOAD_LEN;
    scion.emit(buf)?;
    path.emit(&mut buf[scion.address_end()..])?;
    req.emit_hbh(&mut buf[hl..], 17)?;
    let mut idint = IdInt::locate(&mut buf[hl..hl + hbh_len])?.ok_or(
        idint_wire::Error::invalid(idint_wire::Layer::IdIntMain, "missing"),
    )?;
    for hop in 1..=3 {
        if idint.push(&router_entry(hop))? == PushOutcome::StackFull {
            return Err(idint_wire::Error::invalid(
                idint_wire::Layer::IdIntStack,
                "full",
            ));
        }
    }
    UdpRepr {
        src_port: 1,
        dst_port: 2,
        payload_len: PAYLOAD_LEN as u16,
        checksum: 0,
    }
    .emit(&mut buf[hl + hbh_len..])?;
    Ok(total)
}
