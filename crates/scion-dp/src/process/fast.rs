//! The transit fast path: a packet from an own external link that leaves on another own link
//! in the same segment, with nothing unusual. It reads the headers straight from the bytes and
//! leaves at the first sign of anything the general pipeline ([`super::checks`],
//! [`super::transit`]) could act on, so its outcome is always the general one (tested).

use idint_wire::IsdAsn;
use idint_wire::crypto::BLOCK_LEN;
use idint_wire::ext::{E2E, HBH};
use idint_wire::path::scion::{HOP_LEN, INFO_LEN, META_LEN};
use idint_wire::scion::{COMMON_LEN, DST_IA_OFFSET, SRC_IA_OFFSET};

use super::engine::Engine;
use super::path::{Hop, Info, Meta, field, write_seg_id};
use super::state::{EpicRole, Pending};
use crate::bytes::{read_u32, read_u64};
use crate::config::LinkType;
use crate::header::{
    ADDR_LEN_MASK, ADDR_TYPES_AT, DST_ADDR_TYPE_SHIFT, HDR_LEN_AT, LEN_UNIT, NEXT_HDR_AT,
    PATH_TYPE_AT, PATH_TYPE_SCION, PAYLOAD_LEN_AT,
};
use crate::local;
use crate::outcome::{Disposition, Ingress, ScmpReason};

/// Number of [`LinkType`]s: the stride of [`link_pair`].
const LINK_TYPES: u16 = 4;

/// The bit of an (ingress, egress) link-type pair in a set of pairs: bit
/// `LINK_TYPES * ingress + egress`, in [`LinkType`] order core, parent, child, peer.
#[inline(always)]
const fn link_pair(ingress: LinkType, egress: LinkType) -> u16 {
    1 << (LINK_TYPES * ingress as u16 + egress as u16)
}

/// Link-type pairs allowed without a segment change (§2.5): core-core, child-parent,
/// parent-child, child-peer, peer-child.
const TRANSIT_ALLOWED: u16 = link_pair(LinkType::Core, LinkType::Core)
    | link_pair(LinkType::Child, LinkType::Parent)
    | link_pair(LinkType::Parent, LinkType::Child)
    | link_pair(LinkType::Child, LinkType::Peer)
    | link_pair(LinkType::Peer, LinkType::Child);

/// Length of the address header for the address-type byte `types`: both ISD-ASes and both
/// host addresses.
#[inline(always)]
fn address_len(types: u8) -> usize {
    let host_len = |l: u8| LEN_UNIT * (usize::from(l & ADDR_LEN_MASK) + 1);
    2 * IsdAsn::LEN + host_len(types >> DST_ADDR_TYPE_SHIFT) + host_len(types)
}

impl Engine<'_> {
    /// Transit fast path, stage one: a packet from an own external link that leaves on another
    /// own link in the same segment, with nothing unusual (no peering, crossover, router alert,
    /// local source or destination, EPIC, expiry or interface problem). Every condition the
    /// general pipeline could act on is a reason to leave the fast path, so the outcome is
    /// always the one the general pipeline gives (tested). Writes nothing unless taken.
    #[inline(always)]
    pub(super) fn fast_one(
        &self,
        buf: &mut [u8],
        len: usize,
        ingress: Ingress,
        now_ns: u64,
        out: &mut Pending,
        block: &mut [u8; BLOCK_LEN],
    ) -> bool {
        self.fast_one_inner(buf, len, ingress, now_ns, out, block)
            .is_some()
    }

    /// [`Self::fast_one`] with `?` for its refusals; writes `out` and `block` only when taken.
    #[inline(always)]
    fn fast_one_inner(
        &self,
        buf: &mut [u8],
        len: usize,
        ingress: Ingress,
        now_ns: u64,
        out: &mut Pending,
        block: &mut [u8; BLOCK_LEN],
    ) -> Option<()> {
        if !self.fast {
            return None;
        }
        let Ingress::External(in_if) = ingress else {
            return None;
        };
        let pkt = buf.get(..len)?;
        if pkt.len() < COMMON_LEN || pkt[PATH_TYPE_AT] != PATH_TYPE_SCION {
            return None;
        }
        let sp = COMMON_LEN + address_len(pkt[ADDR_TYPES_AT]);
        let hl = usize::from(pkt[HDR_LEN_AT]) * LEN_UNIT;
        let payload = usize::from(u16::from_be_bytes([
            pkt[PAYLOAD_LEN_AT],
            pkt[PAYLOAD_LEN_AT + 1],
        ]));
        if hl < sp + META_LEN || hl > len || payload != len - hl {
            return None;
        }
        // Extension headers the general pipeline would refuse.
        let next = pkt[NEXT_HDR_AT];
        if (next == HBH || next == E2E) && !local::extensions_ok(pkt, hl, next) {
            return None;
        }
        let local = self.router.local_ia().to_u64();
        if read_u64(pkt, DST_IA_OFFSET) == local || read_u64(pkt, SRC_IA_OFFSET) == local {
            return None;
        }
        let meta = Meta::decode(read_u32(pkt, sp));
        let (s0, s1, s2) = (meta.seg_len(0), meta.seg_len(1), meta.seg_len(2));
        if !meta.valid()
            || sp + meta.path_len() > hl
            || meta.curr_inf() != meta.segment_of(meta.curr_hf())
            || meta.is_last_hop()
            || meta.is_xover()
            || s0 < 2
            || s1 == 1
            || s2 == 1
        {
            return None;
        }
        let info_at = sp + META_LEN + INFO_LEN * meta.curr_inf();
        let hop_at = sp + META_LEN + INFO_LEN * meta.num_infos() + HOP_LEN * meta.curr_hf();
        let info = Info::read(pkt, info_at);
        let hop = Hop::read(pkt, hop_at);
        if info.peer() || hop.ingress_alert() || hop.egress_alert() || hop.expiry_ns(info) < now_ns
        {
            return None;
        }
        let (arrived, egress) = if info.cons_dir() {
            (hop.cons_ingress(), hop.cons_egress())
        } else {
            (hop.cons_egress(), hop.cons_ingress())
        };
        if arrived != in_if || egress == 0 {
            return None;
        }
        let (inc, out_port) = (self.router.port(in_if)?, self.router.port(egress)?);
        let pair = link_pair(inc.link, out_port.link);
        if !out_port.local || pair & TRANSIT_ALLOWED == 0 || !self.router.port_up(out_port) {
            return None;
        }
        // Taken: the C=0 SegID update (step 10), then the MAC input.
        let mut info = info;
        if !info.cons_dir() {
            info = info.with_seg_id(info.seg_id() ^ hop.mac_head());
            write_seg_id(buf, info_at, info.seg_id());
        }
        *out = Pending {
            ingress,
            sp,
            meta,
            info,
            hop,
            peering: false,
            dst_local: false,
            epic: EpicRole::None,
            fast_egress: egress,
        };
        *block = hop.mac_input(info);
        Some(())
    }

    /// Transit fast path, stage two: MAC check, the C=1 SegID update, next hop. `Ok` is the
    /// egress interface of a forward (kept a scalar so callers store the decision directly
    /// instead of moving a whole `Disposition` through the stack).
    #[inline(always)]
    pub(super) fn fast_two(
        &self,
        buf: &mut [u8],
        len: usize,
        p: &Pending,
        mac: &[u8; BLOCK_LEN],
    ) -> Result<u16, Disposition> {
        if !p.hop.mac_matches(mac) {
            let d = self.error(
                buf,
                len,
                p.ingress,
                ScmpReason::InvalidHopFieldMac,
                p.hop_ptr(),
            );
            return Err(d);
        }
        if p.info.cons_dir() {
            write_seg_id(
                buf,
                p.info_at(p.meta.curr_inf()),
                p.info.seg_id() ^ p.hop.mac_head(),
            );
        }
        // Not the last hop and no segment change (checked in stage one): CurrHF + 1, same
        // CurrINF.
        let raw = p.meta.raw + field::meta::CURR_HF_ONE;
        buf[p.sp..p.sp + META_LEN].copy_from_slice(&raw.to_be_bytes());
        Ok(p.fast_egress)
    }
}
