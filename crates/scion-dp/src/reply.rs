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
        if t < 128 {
            return Err(DropReason::ScmpSuppressed);
        }
    }
    let (id, seq) = if is_traceroute {
        // A whole traceroute request, code 0: header (4), identifier, sequence, IA and
        // interface (20), as the reference router decodes it before it answers.
        if proto != scmp::PROTOCOL
            || l4.len() < TRACEROUTE_LEN
            || l4[0] != msg_type::TRACEROUTE_REQUEST
            || l4[1] != 0
        {
            return Err(DropReason::AlertNotTraceroute);
        }
        (
            u16::from_be_bytes([l4[4], l4[5]]),
            u16::from_be_bytes([l4[6], l4[7]]),
        )
    } else {
        (0, 0)
    };

    // Reply path: the current path reversed, then moved to where this router sends it from.
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
            let m = path.hops[hf].mac;
            path.infos[ci].seg_id ^= u16::from_be_bytes([m[0], m[1]]);
        }
        path.meta
            .increment()
            .map_err(|_| DropReason::ScmpUnbuildable)?;
    }

    let dst_host = HostAddr::parse(hdr.src_addr_type(), hdr.src_host_bytes())
        .map_err(|_| DropReason::ScmpUnbuildable)?;
    let mut repr = ScionRepr {
        version: 0,
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
    m[0] = t;
    m[1] = code;
    m[2..4].fill(0);
    let ia = router.local_ia().to_bytes();
    let block = &mut m[scmp::HEADER_LEN..body_at - new_hl];
    match req.reason {
        ScmpReason::TracerouteReply => {
            block[0..2].copy_from_slice(&id.to_be_bytes());
            block[2..4].copy_from_slice(&seq.to_be_bytes());
            block[4..12].copy_from_slice(&ia);
            block[12..20].copy_from_slice(&u64::from(req.ifid).to_be_bytes());
        }
        ScmpReason::ExternalInterfaceDown => {
            block[0..8].copy_from_slice(&ia);
            block[8..16].copy_from_slice(&u64::from(req.ifid).to_be_bytes());
        }
        ScmpReason::InternalConnectivityDown => {
            block[0..8].copy_from_slice(&ia);
            block[8..16].copy_from_slice(&u64::from(req.ifid).to_be_bytes());
            block[16..24].copy_from_slice(&u64::from(req.egress).to_be_bytes());
        }
        _ => {
            block[0..2].fill(0);
            block[2..4].copy_from_slice(&req.pointer.to_be_bytes());
        }
    }
    ScmpPacket::new_unchecked(m).fill_checksum(&ScionHeader::new_unchecked(&head[..]));
    Ok(total)
}
