//! SCMP replies built in place over the offending packet (`scion-dp.md` §2.8): the reversed
//! path as it is now in the buffer, the router as source, the packet quoted up to 1232 bytes.

use idint_wire::HostAddr;
use idint_wire::path::ScionPathRepr;
use idint_wire::scion::{NextHdr, PathType, ScionHeader, ScionRepr};
use idint_wire::scmp::{self, ScmpPacket, msg_type};

use crate::config::Router;
use crate::header::peering_of;
use crate::local::{TRACEROUTE_LEN, upper_layer};
use crate::outcome::{DropReason, Ingress, ScmpReason};

/// Length of the EPIC-HP fields before the embedded SCION path.
pub(crate) const EPIC_PREFIX: usize = idint_wire::path::epic::EPIC_PREFIX_LEN;

/// The SCION version the replies carry.
const SCION_VERSION: u8 = 0;
/// SCMP types below this are errors, from it on informational messages.
const FIRST_INFORMATIONAL: u8 = msg_type::ECHO_REQUEST;
/// The code of a traceroute request.
const TRACEROUTE_REQUEST_CODE: u8 = 0;

/// Where the fields of an SCMP message sit (smoltcp style): the common header from the start
/// of the message, the type-specific blocks from the end of that header.
mod field {
    /// A byte range.
    pub(super) type Field = core::ops::Range<usize>;

    /// Type.
    pub(super) const TYPE: usize = 0;
    /// Code.
    pub(super) const CODE: usize = 1;
    /// Checksum.
    pub(super) const CHECKSUM: Field = 2..4;

    /// Traceroute request and reply block.
    pub(super) mod traceroute {
        use super::Field;
        /// Identifier.
        pub(crate) const IDENTIFIER: Field = 0..2;
        /// Sequence number.
        pub(crate) const SEQUENCE: Field = 2..4;
        /// ISD-AS of the answering router.
        pub(crate) const IA: Field = 4..12;
        /// Interface the alert was for.
        pub(crate) const INTERFACE: Field = 12..20;
    }

    /// External Interface Down block.
    pub(super) mod external_down {
        use super::Field;
        /// ISD-AS of the router.
        pub(crate) const IA: Field = 0..8;
        /// The interface that is down.
        pub(crate) const INTERFACE: Field = 8..16;
    }

    /// Internal Connectivity Down block.
    pub(super) mod internal_down {
        use super::Field;
        /// ISD-AS of the router.
        pub(crate) const IA: Field = 0..8;
        /// The ingress interface.
        pub(crate) const INGRESS: Field = 8..16;
        /// The egress interface that cannot be reached.
        pub(crate) const EGRESS: Field = 16..24;
    }

    /// Parameter Problem block.
    pub(super) mod param_problem {
        use super::Field;
        /// Reserved.
        pub(crate) const RESERVED: Field = 0..2;
        /// Pointer to the offending byte.
        pub(crate) const POINTER: Field = 2..4;
    }

    const _: () = assert!(CHECKSUM.end == idint_wire::scmp::HEADER_LEN);
    const _: () = assert!(
        traceroute::INTERFACE.end
            == idint_wire::scmp::block_len(idint_wire::scmp::msg_type::TRACEROUTE_REPLY)
    );
    const _: () = assert!(
        external_down::INTERFACE.end
            == idint_wire::scmp::block_len(idint_wire::scmp::msg_type::EXTERNAL_INTERFACE_DOWN)
    );
    const _: () = assert!(
        internal_down::EGRESS.end
            == idint_wire::scmp::block_len(idint_wire::scmp::msg_type::INTERNAL_CONNECTIVITY_DOWN)
    );
}

/// What the fast path asks the reply builder for.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ReplyRequest {
    pub reason: ScmpReason,
    /// Parameter Problem pointer.
    pub pointer: u16,
    /// Interface for ExternalInterfaceDown / traceroute, ingress for InternalConnectivityDown.
    pub ifid: u16,
    /// Egress for InternalConnectivityDown.
    pub egress: u16,
}

/// Replaces the packet in `buf[..len]` by the SCMP reply and returns its length.
pub(crate) fn build(
    router: &Router,
    buf: &mut [u8],
    len: usize,
    ingress: Ingress,
    req: ReplyRequest,
) -> Result<usize, DropReason> {
    let pkt = &buf[..len];
    let hdr = ScionHeader::new_checked(pkt).map_err(|_| DropReason::Malformed)?;
    let hl = hdr.header_len();
    let is_traceroute = req.reason == ScmpReason::TracerouteReply;

    // Never answer an SCMP error with an SCMP error; a packet whose upper layer cannot be
    // located cannot be shown not to be one.
    let (proto, l4_off) =
        upper_layer(pkt, hl, hdr.next_header().into()).ok_or(DropReason::ScmpUnbuildable)?;
    let l4 = pkt.get(l4_off..).unwrap_or(&[]);
    if proto == scmp::PROTOCOL {
        let t = *l4.first().ok_or(DropReason::ScmpUnbuildable)?;
        if t < FIRST_INFORMATIONAL {
            return Err(DropReason::ScmpSuppressed);
        }
    }
    let (id, seq) = if is_traceroute {
        traceroute_ids(proto, l4)?
    } else {
        (0, 0)
    };

    let path = reply_path(&hdr, pkt, ingress)?;

    let dst_host = HostAddr::parse(hdr.src_addr_type(), hdr.src_host_bytes())
        .map_err(|_| DropReason::ScmpUnbuildable)?;
    let mut repr = ScionRepr {
        version: SCION_VERSION,
        traffic_class: hdr.traffic_class(),
        flow_id: hdr.flow_id(),
        next_header: NextHdr::Scmp,
        path_type: PathType::Scion,
        path_len: path.buffer_len(),
        payload_len: 0,
        dst_ia: hdr.src_ia(),
        src_ia: router.local_ia(),
        dst_host,
        src_host: router.config().internal_addr.ip().into(),
    };
    let new_hl = repr.header_len();
    let (t, code) = req.reason.type_code();
    let body_at = new_hl + scmp::HEADER_LEN + scmp::block_len(t);
    let limit = scmp::MAX_ERROR_PACKET.min(buf.len());
    if body_at > limit {
        return Err(DropReason::ScmpUnbuildable);
    }
    let quote_len = if is_traceroute {
        0
    } else {
        len.min(limit - body_at)
    };
    let total = body_at + quote_len;
    repr.payload_len = (total - new_hl) as u16;

    buf.copy_within(..quote_len, body_at);
    repr.emit(buf).map_err(|_| DropReason::ScmpUnbuildable)?;
    path.emit(&mut buf[repr.address_end()..new_hl])
        .map_err(|_| DropReason::ScmpUnbuildable)?;

    let (head, rest) = buf.split_at_mut(new_hl);
    let m = &mut rest[..total - new_hl];
    m[field::TYPE] = t;
    m[field::CODE] = code;
    m[field::CHECKSUM].fill(0);
    let block = &mut m[scmp::HEADER_LEN..body_at - new_hl];
    write_block(block, &req, router.local_ia().to_bytes(), (id, seq));
    ScmpPacket::new_unchecked(m).fill_checksum(&ScionHeader::new_unchecked(&head[..]));
    Ok(total)
}

/// The identifier and sequence number of the traceroute request `l4` (the upper layer, of
/// protocol `proto`) that carried a router alert. Only a whole traceroute request is answered,
/// as the reference router decodes it before it answers.
fn traceroute_ids(proto: u8, l4: &[u8]) -> Result<(u16, u16), DropReason> {
    if proto != scmp::PROTOCOL
        || l4.len() < TRACEROUTE_LEN
        || l4[field::TYPE] != msg_type::TRACEROUTE_REQUEST
        || l4[field::CODE] != TRACEROUTE_REQUEST_CODE
    {
        return Err(DropReason::AlertNotTraceroute);
    }
    let block = &l4[scmp::HEADER_LEN..];
    let read = |f: field::Field| u16::from_be_bytes([block[f.start], block[f.start + 1]]);
    Ok((
        read(field::traceroute::IDENTIFIER),
        read(field::traceroute::SEQUENCE),
    ))
}

/// The reply's path: the packet's current path reversed, then moved to where this router
/// sends the reply from (past a segment crossover, and past its own hop when the packet came
/// in over an external link).
fn reply_path(
    hdr: &ScionHeader<&[u8]>,
    pkt: &[u8],
    ingress: Ingress,
) -> Result<ScionPathRepr, DropReason> {
    let hl = hdr.header_len();
    let path_bytes = match hdr.path_type() {
        PathType::Scion => &pkt[hdr.path_offset()..hl],
        PathType::Epic => pkt
            .get(hdr.path_offset() + EPIC_PREFIX..hl)
            .ok_or(DropReason::ScmpUnbuildable)?,
        _ => return Err(DropReason::ScmpUnbuildable),
    };
    let mut path = ScionPathRepr::parse(path_bytes)
        .and_then(|p| p.reversed())
        .map_err(|_| DropReason::ScmpUnbuildable)?;
    let ci = usize::from(path.meta.curr_inf);
    let peering = peering_of(&path.meta, &path.infos[ci]).ok_or(DropReason::ScmpUnbuildable)?;
    if path.meta.is_xover() && !peering {
        path.meta
            .increment()
            .map_err(|_| DropReason::ScmpUnbuildable)?;
    }
    if let Ingress::External(_) = ingress {
        let ci = usize::from(path.meta.curr_inf);
        let hf = usize::from(path.meta.curr_hf);
        if path.infos[ci].cons_dir && !peering {
            // The SegID update with the MAC's first two bytes, as a forwarding router does.
            let m = path.hops[hf].mac;
            path.infos[ci].seg_id ^= u16::from_be_bytes([m[0], m[1]]);
        }
        path.meta
            .increment()
            .map_err(|_| DropReason::ScmpUnbuildable)?;
    }
    Ok(path)
}

/// Writes the type-specific block of the reply `req` asks for; `ia` is this router's ISD-AS,
/// `(id, seq)` the traceroute request's identifier and sequence number.
fn write_block(block: &mut [u8], req: &ReplyRequest, ia: [u8; 8], (id, seq): (u16, u16)) {
    // Interfaces are 64-bit fields in SCMP.
    let ifid = |i: u16| u64::from(i).to_be_bytes();
    match req.reason {
        ScmpReason::TracerouteReply => {
            use field::traceroute::*;
            block[IDENTIFIER].copy_from_slice(&id.to_be_bytes());
            block[SEQUENCE].copy_from_slice(&seq.to_be_bytes());
            block[IA].copy_from_slice(&ia);
            block[INTERFACE].copy_from_slice(&ifid(req.ifid));
        }
        ScmpReason::ExternalInterfaceDown => {
            use field::external_down::*;
            block[IA].copy_from_slice(&ia);
            block[INTERFACE].copy_from_slice(&ifid(req.ifid));
        }
        ScmpReason::InternalConnectivityDown => {
            use field::internal_down::*;
            block[IA].copy_from_slice(&ia);
            block[INGRESS].copy_from_slice(&ifid(req.ifid));
            block[EGRESS].copy_from_slice(&ifid(req.egress));
        }
        _ => {
            use field::param_problem::*;
            block[RESERVED].fill(0);
            block[POINTER].copy_from_slice(&req.pointer.to_be_bytes());
        }
    }
}
