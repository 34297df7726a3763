//! Building SCION/UDP packets (I/O-free): the ping with its signed ID-INT request, and the
//! reply.

use idint_wire::crypto::Aes128Enc;
use idint_wire::idint::entry::SlotValue;
use idint_wire::idint::{
    AggregationMode, EntryRepr, Instruction, Metadata, RequestBuilder, Verifier,
};
use idint_wire::scion::{FlowId, NextHdr, PathType, ScionHeader, ScionRepr};
use idint_wire::udp::{self, UdpPacket, UdpRepr};
use idint_wire::{Error, HostAddr, IsdAsn, Layer};

/// What a ping asks every router for, slots 1-4: ingress timestamp (per-hop latency),
/// instantaneous queue length, egress link TX utilisation, forwarding energy.
pub const PING_INSTRUCTIONS: [Instruction; 4] = [
    Instruction(0x82),
    Instruction(0x4f),
    Instruction(0x4d),
    Instruction(0x4a),
];
/// Slot of the ingress timestamp in [`PING_INSTRUCTIONS`].
pub const SLOT_TIMESTAMP: usize = 0;
/// Slot of the queue length.
pub const SLOT_QUEUE: usize = 1;
/// Slot of the utilisation.
pub const SLOT_UTIL: usize = 2;
/// Slot of the energy.
pub const SLOT_ENERGY: usize = 3;
/// Bitmap items of a ping: node id, ingress and egress interface.
pub const PING_BITMAP: u8 = 0x8 | 0x2 | 0x1;
/// Most entries a router pushes per hop field with aggregation off (the AS's ingress and
/// egress border routers).
pub const ENTRIES_PER_HOP: usize = 2;
/// Nonce length of an encrypted entry.
const NONCE_LEN: usize = 12;
/// Largest stack a request reserves, words (the StackLen field is one byte).
const MAX_STACK_WORDS: usize = 255;
/// Bytes of the common header and the two ISD-ASes.
const FIXED_HEADER: usize = 12 + 16;
/// The flow ID of every packet (any non-zero value).
const FLOW_ID: u32 = 1;

/// One end of a SCION/UDP flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Endpoint {
    /// ISD-AS.
    pub ia: IsdAsn,
    /// Host address.
    pub host: HostAddr,
    /// UDP port.
    pub port: u16,
}

/// The longest an entry of a ping's stack can be.
pub fn ping_entry_len(encrypt: bool) -> usize {
    let mut metadata = Metadata {
        node_id: Some(0),
        ingress_if: Some(0),
        egress_if: Some(0),
        ..Metadata::default()
    };
    for (slot, inst) in metadata.slots.iter_mut().zip(PING_INSTRUCTIONS) {
        *slot = Some(SlotValue {
            len: inst.data_len() as u8,
            value: 0,
        });
    }
    EntryRepr {
        nonce: encrypt.then_some([0; NONCE_LEN]),
        metadata,
        ..EntryRepr::default()
    }
    .buffer_len()
}

/// The ID-INT request of a ping at `now_ns` from UDP port `src_port`: aggregation off (every
/// router writes its own entry), verified by `verifier` (usually the destination),
/// [`PING_INSTRUCTIONS`], stack room for [`ENTRIES_PER_HOP`] entries per hop field, at most
/// `max_hbh` bytes of HBH header.
pub fn ping_request(
    now_ns: u64,
    src_port: u16,
    encrypt: bool,
    verifier: Verifier,
    hop_fields: usize,
    max_hbh: usize,
) -> RequestBuilder {
    let mut r = RequestBuilder {
        encrypt,
        mode: AggregationMode::Off,
        verifier,
        inst_bitmap: PING_BITMAP,
        instructions: PING_INSTRUCTIONS,
        source_port: src_port,
        ..RequestBuilder::new(now_ns % idint_wire::idint::verify::TIMESTAMP_CYCLE_NS)
    };
    let source = r.source_entry().buffer_len();
    let want = source + ENTRIES_PER_HOP * hop_fields * ping_entry_len(encrypt);
    let fixed = 2 + r.main_option().buffer_len();
    let room = max_hbh.min(idint_wire::ext::MAX_LEN).saturating_sub(fixed);
    let words = want.div_ceil(4).min(room / 4).min(MAX_STACK_WORDS);
    r.stack_len_words = words.max(source.div_ceil(4)) as u8;
    r
}

/// Length of the SCION header (common, address and path) for these hosts and path.
pub fn header_len(src: &HostAddr, dst: &HostAddr, path_len: usize) -> usize {
    FIXED_HEADER + src.len() + dst.len() + path_len
}

/// Writes into `out` (cleared first) a SCION/UDP packet from `src` to `dst` on the path
/// `path` (of type `path_type`, as the source sends it), with the ID-INT request `request`
/// signed with `key` when given, and `payload`. Nothing is left in `out` on error.
pub fn build_udp(
    src: Endpoint,
    dst: Endpoint,
    path_type: PathType,
    path: &[u8],
    request: Option<(&RequestBuilder, &Aes128Enc)>,
    payload: &[u8],
    out: &mut Vec<u8>,
) -> Result<(), Error> {
    out.clear();
    let hbh_len = request.map_or(0, |(r, _)| r.hbh_len());
    let l4_len = udp::HEADER_LEN + payload.len();
    let payload_len =
        u16::try_from(hbh_len + l4_len).map_err(|_| Error::invalid(Layer::Common, "PayloadLen"))?;
    let udp_len = u16::try_from(payload.len()).map_err(|_| Error::invalid(Layer::Udp, "Length"))?;
    let scion = ScionRepr {
        version: 0,
        traffic_class: 0,
        flow_id: FlowId::from_u20(FLOW_ID),
        next_header: if request.is_some() {
            NextHdr::HopByHop
        } else {
            NextHdr::Udp
        },
        path_type,
        path_len: path.len(),
        payload_len,
        dst_ia: dst.ia,
        src_ia: src.ia,
        dst_host: dst.host,
        src_host: src.host,
    };
    let hl = scion.header_len();
    out.resize(hl + usize::from(payload_len), 0);
    let result = (|| {
        scion.emit(out)?;
        out[scion.address_end()..hl].copy_from_slice(path);
        if let Some((r, key)) = request {
            r.emit_signed(&mut out[hl..], udp::PROTOCOL, key)?;
        }
        let l4 = hl + hbh_len;
        UdpRepr {
            src_port: src.port,
            dst_port: dst.port,
            payload_len: udp_len,
            checksum: 0,
        }
        .emit(&mut out[l4..])?;
        out[l4 + udp::HEADER_LEN..].copy_from_slice(payload);
        let (hdr, rest) = out.split_at_mut(l4);
        UdpPacket::new_unchecked(rest).fill_checksum(&ScionHeader::new_unchecked(&hdr[..]));
        Ok(())
    })();
    if result.is_err() {
        out.clear();
    }
    result
}
