//! The transit fast path: a packet from an own external link that leaves on another own link
//! in the same segment, with nothing unusual. It reads the headers straight from the bytes and
//! leaves at the first sign of anything the general pipeline ([`super::checks`],
//! [`super::transit`]) could act on, so its outcome is always the general one (tested).
//! Within a burst it takes the path layout from the packet before when the bytes that decide
//! it are the same ([`PathLayout`]).

use idint_wire::IsdAsn;
use idint_wire::crypto::BLOCK_LEN;
use idint_wire::ext::{E2E, HBH};
use idint_wire::path::scion::{HOP_LEN, INFO_LEN, MAX_HOPS, META_LEN};
use idint_wire::scion::{COMMON_LEN, DST_IA_OFFSET, SRC_IA_OFFSET};

use super::engine::Engine;
use super::path::field::{hop as hop_field, meta};
use super::path::{Hop, Info, Meta, write_meta_raw, write_seg_id};
use super::state::FastPending;
use crate::bytes::{read_u32, read_u64};
use crate::config::LinkType;
use crate::header::{
    ADDR_LEN_MASK, ADDR_TYPES_AT, DST_ADDR_TYPE_SHIFT, HDR_LEN_AT, LEN_UNIT, NEXT_HDR_AT,
    PATH_TYPE_AT, PATH_TYPE_SCION, PAYLOAD_LEN_AT,
};
use crate::hop_mac::HOP_MAC_LEN;
use crate::local;
use crate::outcome::{Disposition, Ingress, ScmpReason};

/// Number of [`LinkType`]s: the stride of [`link_pair`] (at most 4, so that a pair's bit
/// fits a `u16`).
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

/// Bytes the fast path reads at fixed offsets: the common header and both ISD-ASes.
const FIXED_LEN: usize = SRC_IA_OFFSET + IsdAsn::LEN;

/// Bits of the first 8 bytes of a CMAC below the [`HOP_MAC_LEN`] bytes a hop field keeps.
const MAC_TAIL_BITS: u32 = (8 * (size_of::<u64>() - HOP_MAC_LEN)) as u32;

/// Length of the address header for the address-type byte `types`: both ISD-ASes and both
/// host addresses.
#[inline(always)]
fn address_len(types: u8) -> usize {
    let host_len = |l: u8| LEN_UNIT * (usize::from(l & ADDR_LEN_MASK) + 1);
    2 * IsdAsn::LEN + host_len(types >> DST_ADDR_TYPE_SHIFT) + host_len(types)
}

/// Where the current info and hop fields lie in the last packet whose path layout the fast
/// path derived, keyed by what decides it: the path meta header, the path's offset and the
/// header length (see [`path_layout`]).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct PathLayout {
    /// The meta header, path offset and header length (0: none yet; every path offset is
    /// larger).
    key: u64,
    info_at: u16,
    hop_at: u16,
}

impl PathLayout {
    /// The key of a meta header `raw` at path offset `sp` in a header of `hl` bytes.
    #[inline(always)]
    fn key(raw: u32, sp: usize, hl: usize) -> u64 {
        u64::from(raw) | (sp as u64) << 32 | (hl as u64) << 48
    }
}

/// The offsets of the current info and hop fields for the meta header `raw` at path offset
/// `sp` in a header of `hl` bytes, if the fast path takes such a packet: segments of two or
/// more hops (none after an empty one) that fit the header, and the current and the next hop
/// field in segment CurrINF (neither the last hop nor a segment crossover).
#[inline(always)]
fn path_layout(raw: u32, sp: usize, hl: usize) -> Option<(usize, usize)> {
    let seg_len = |k: usize| ((raw >> meta::SEG_LEN_SHIFT[k]) & meta::SEG_LEN_MASK) as usize;
    let (s0, s1, s2) = (seg_len(0), seg_len(1), seg_len(2));
    let hf = ((raw >> meta::CURR_HF_SHIFT) & meta::CURR_HF_MASK) as usize;
    let inf = (raw >> meta::CURR_INF_SHIFT) as usize;
    let n_hops = s0 + s1 + s2;
    // Segments of one hop and a segment after an empty one are the general path's (one
    // branch for all: `|` rather than `||`).
    if (s0 < 2) | (s1 == 1) | (s2 == 1) | ((s1 == 0) & (s2 != 0)) | (n_hops > MAX_HOPS) {
        return None;
    }
    let n_infos = 1 + usize::from(s1 != 0) + usize::from(s2 != 0);
    if sp + META_LEN + INFO_LEN * n_infos + HOP_LEN * n_hops > hl {
        return None;
    }
    let (first, end) = match inf {
        0 => (0, s0),
        1 => (s0, s0 + s1),
        2 => (s0 + s1, n_hops),
        _ => return None,
    };
    if hf < first || hf + 1 >= end {
        return None;
    }
    let info_at = sp + META_LEN + INFO_LEN * inf;
    let hop_at = sp + META_LEN + INFO_LEN * n_infos + HOP_LEN * hf;
    Some((info_at, hop_at))
}

impl Engine<'_> {
    /// Transit fast path, stage one: a packet from an own external link that leaves on another
    /// own link in the same segment, with nothing unusual (no peering, crossover, router alert,
    /// local source or destination, EPIC, expiry or interface problem). Every condition the
    /// general pipeline could act on is a reason to leave the fast path, so the outcome is
    /// always the one the general pipeline gives (tested). Writes nothing unless taken; when
    /// taken, returns what stage two needs and the hop's CMAC input block (returned rather
    /// than written through references, so the caller's slots need no registers meanwhile).
    #[inline(always)]
    pub(super) fn fast_one(
        &self,
        buf: &mut [u8],
        len: usize,
        ingress: Ingress,
        now_ns: u64,
        last: &mut PathLayout,
    ) -> Option<(FastPending, [u8; BLOCK_LEN])> {
        if !self.fast {
            return None;
        }
        let Ingress::External(in_if) = ingress else {
            return None;
        };
        let pkt = buf.get(..len)?;
        // Every packet with a SCION path is longer (checked below through the header length).
        let fixed = pkt.first_chunk::<FIXED_LEN>()?;
        if fixed[PATH_TYPE_AT] != PATH_TYPE_SCION {
            return None;
        }
        let sp = COMMON_LEN + address_len(fixed[ADDR_TYPES_AT]);
        let hl = usize::from(fixed[HDR_LEN_AT]) * LEN_UNIT;
        let payload = usize::from(u16::from_be_bytes([
            fixed[PAYLOAD_LEN_AT],
            fixed[PAYLOAD_LEN_AT + 1],
        ]));
        // `payload + hl == len` also says `hl <= len` (neither sum overflows).
        if hl < sp + META_LEN || payload + hl != len {
            return None;
        }
        // Extension headers the general pipeline would refuse.
        let next = fixed[NEXT_HDR_AT];
        if (next == HBH || next == E2E) && !local::extensions_ok(pkt, hl, next) {
            return None;
        }
        let local = self.router.local_ia().to_u64();
        if read_u64(fixed, DST_IA_OFFSET) == local || read_u64(fixed, SRC_IA_OFFSET) == local {
            return None;
        }
        // The meta header: where the current info and hop fields are, from the layout of
        // the packet before if the path and its position are the same.
        let raw = read_u32(pkt, sp);
        let hf = ((raw >> meta::CURR_HF_SHIFT) & meta::CURR_HF_MASK) as usize;
        let key = PathLayout::key(raw, sp, hl);
        let (info_at, hop_at) = if key == last.key {
            (usize::from(last.info_at), usize::from(last.hop_at))
        } else {
            let (info_at, hop_at) = path_layout(raw, sp, hl)?;
            *last = PathLayout {
                key,
                info_at: info_at as u16,
                hop_at: hop_at as u16,
            };
            (info_at, hop_at)
        };
        let info = Info::read(pkt, info_at);
        let hop = Hop::from_bytes(pkt.get(hop_at..hop_at + HOP_LEN)?.try_into().ok()?);
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
        let (inc, out_port) = (self.router.port(in_if), self.router.port(egress));
        let pair = 1 << (LINK_TYPES * u16::from(inc.link()) + u16::from(out_port.link()));
        if !inc.configured() || !out_port.local_and_up() || pair & TRANSIT_ALLOWED == 0 {
            return None;
        }
        // Taken. The updates of a forward are made now, the MAC check comes in stage two
        // (which undoes them if it fails). The SegID update is the same in both directions;
        // with C=0 the MAC is over the updated SegID (step 10), with C=1 over the one that
        // arrived. Not the last hop and no segment change: CurrHF + 1, same CurrINF.
        let seg_id = info.seg_id() ^ hop.mac_head();
        let mac_info = if info.cons_dir() {
            info
        } else {
            info.with_seg_id(seg_id)
        };
        write_seg_id(buf, info_at, seg_id);
        write_meta_raw(buf, sp, raw + meta::CURR_HF_ONE);
        let taken = FastPending {
            mac: hop.mac48(),
            sp: sp as u16,
            in_if,
            egress,
            hop: hf as u8,
            next_hdr: next,
        };
        Some((taken, hop.mac_input(mac_info)))
    }

    /// Transit fast path, stage two: the MAC check (stage one made the path updates). `Ok` is
    /// the egress interface of a forward (kept a scalar so callers store the decision directly
    /// instead of moving a whole `Disposition` through the stack).
    #[inline(always)]
    pub(super) fn fast_two(
        &self,
        buf: &mut [u8],
        len: usize,
        p: &FastPending,
        mac: &[u8; BLOCK_LEN],
    ) -> Result<u16, Disposition> {
        if !self.fast_mac_ok(p, mac) {
            return Err(self.fast_mac_error(buf, len, p));
        }
        Ok(p.egress)
    }

    /// Whether the hop field's MAC (in `p`) is the one computed (`mac`, the full CMAC).
    #[inline(always)]
    pub(super) fn fast_mac_ok(&self, p: &FastPending, mac: &[u8; BLOCK_LEN]) -> bool {
        read_u64(mac, 0) >> MAC_TAIL_BITS == p.mac
    }

    /// The SCMP error for a hop field whose MAC does not match: first undoes stage one's
    /// updates except the C=0 SegID update (step 10 comes before the MAC check), so the
    /// packet is as the general pipeline leaves it.
    #[cold]
    #[inline(never)]
    fn fast_mac_error(&self, buf: &mut [u8], len: usize, p: &FastPending) -> Disposition {
        let sp = usize::from(p.sp);
        let raw = read_u32(buf, sp) - meta::CURR_HF_ONE;
        write_meta_raw(buf, sp, raw);
        let m = Meta::decode(raw);
        let info_at = sp + META_LEN + INFO_LEN * m.curr_inf();
        let info = Info::read(buf, info_at);
        if info.cons_dir() {
            let mac_head = (p.mac >> hop_field::LO_BITS) as u16;
            write_seg_id(buf, info_at, info.seg_id() ^ mac_head);
        }
        let hop_at = sp + META_LEN + INFO_LEN * m.num_infos() + HOP_LEN * m.curr_hf();
        let ingress = Ingress::External(p.in_if);
        self.error(
            buf,
            len,
            ingress,
            ScmpReason::InvalidHopFieldMac,
            hop_at as u16,
        )
    }
}
