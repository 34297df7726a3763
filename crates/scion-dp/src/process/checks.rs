//! Stage one of the general pipeline (steps 0-10 of `scion-dp.md` §2.4): everything that needs
//! no AES. Headers, path type and path fields (steps 0-3), then expiry and arrival interface
//! (4-5), length, AS transit, ISD-AS and host addresses (6-9); the C=0 SegID update (10)
//! closes the stage.
//!
//! [`Engine::stage_one`] stays one function on purpose: split into phase functions that hand
//! back `Result<_, Disposition>`, local deliveries measured about 10% slower, even with every
//! phase `#[inline(always)]`.

use idint_wire::AddrType;
use idint_wire::crypto::BLOCK_LEN;
use idint_wire::path::scion::META_LEN;
use idint_wire::scion::{DST_IA_OFFSET, PathType, SRC_IA_OFFSET, ScionHeader};

use super::engine::Engine;
use super::onehop::{BFD, final_next_header};
use super::path::{Hop, Info, Meta, write_seg_id};
use super::state::{EpicRole, Pending};
use crate::bytes::read_u32;
use crate::config::Owner;
use crate::local;
use crate::outcome::{Disposition, DropReason, Ingress, ScmpReason};
use crate::reply::EPIC_PREFIX;

/// The first 12 bytes of an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`).
const V4_MAPPED_PREFIX: [u8; 12] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff];

/// SCMP pointer to the source ISD-AS (step 8).
const SRC_IA_PTR: u16 = SRC_IA_OFFSET as u16;
/// SCMP pointer to the destination ISD-AS (step 8).
const DST_IA_PTR: u16 = DST_IA_OFFSET as u16;

impl Engine<'_> {
    /// Steps 0-10: decode, path sanity, expiry, ingress interface, length, transit source,
    /// ISD-AS and source address checks, the C=0 SegID update. Returns the decision if one is
    /// reached without the MAC; otherwise fills `out` and the MAC input `block` and returns
    /// `None`.
    #[inline(always)]
    pub(super) fn stage_one(
        &self,
        buf: &mut [u8],
        len: usize,
        ingress: Ingress,
        now_ns: u64,
        out: &mut Pending,
        block: &mut [u8; BLOCK_LEN],
    ) -> Option<Disposition> {
        let done = Some;
        if len > buf.len() {
            return done(Disposition::Drop(DropReason::Malformed));
        }
        let Ok(hdr) = ScionHeader::new_checked(&buf[..len]) else {
            return done(Disposition::Drop(DropReason::Malformed));
        };
        let path_off = hdr.path_offset();
        let hl = hdr.header_len();
        // Step 0 decodes the extension headers too (before the path type is looked at).
        if !local::extensions_ok(&buf[..len], hl, hdr.next_header().into()) {
            return done(Disposition::Drop(DropReason::Malformed));
        }
        let (sp, epic_path) = match hdr.path_type() {
            PathType::Scion => (path_off, false),
            PathType::Epic if hl >= path_off + EPIC_PREFIX => (path_off + EPIC_PREFIX, true),
            PathType::Epic => return done(Disposition::Drop(DropReason::Malformed)),
            PathType::OneHop => return done(self.onehop(buf, len, ingress)),
            PathType::Empty => {
                return done(if final_next_header(&buf[..len]) == Some(BFD) {
                    Disposition::Bfd
                } else {
                    Disposition::Drop(DropReason::UnsupportedPath)
                });
            }
            _ => return done(Disposition::Drop(DropReason::UnsupportedPath)),
        };
        let local_ia = self.router.local_ia();
        let src_local = hdr.src_ia() == local_ia;
        let dst_local = hdr.dst_ia() == local_ia;
        let payload_ok = usize::from(hdr.payload_len()) == len - hl;
        let src_type = hdr.src_addr_type();

        // Step 2: the path and its current fields.
        if hl < sp + META_LEN {
            return done(Disposition::Drop(DropReason::Malformed));
        }
        let meta = Meta::decode(read_u32(buf, sp));
        if !meta.valid() || sp + meta.path_len() > hl {
            return done(Disposition::Drop(DropReason::Malformed));
        }
        if meta.curr_inf() != meta.segment_of(meta.curr_hf()) {
            return done(Disposition::Drop(DropReason::CurrInfMismatch));
        }
        let p = out;
        *p = Pending {
            ingress,
            sp,
            meta,
            info: Info::default(),
            hop: Hop::default(),
            peering: false,
            dst_local,
            epic: EpicRole::None,
        };
        let mut info = Info::read(buf, p.info_at(meta.curr_inf()));
        let hop = Hop::read(buf, p.hop_at(meta.curr_hf()));
        if !info.peer() && (0..meta.num_infos()).any(|i| meta.seg_len(i) < 2) {
            return done(Disposition::Drop(DropReason::SingletonSegment));
        }
        // Step 3: peering.
        let Some(peering) = meta.peering(info) else {
            return done(Disposition::Drop(DropReason::BadPeeringPath));
        };
        p.peering = peering;
        p.info = info;
        p.hop = hop;
        if epic_path {
            p.epic = EpicRole::at(meta);
        }

        // Step 4: expiry.
        if hop.expiry_ns(info) < now_ns {
            return done(self.error(buf, len, ingress, ScmpReason::PathExpired, p.hop_ptr()));
        }
        // Step 5: the hop field names the interface the packet arrived on.
        let in_if = ingress.ifid();
        if in_if != 0 {
            let (expected, reason) = if info.cons_dir() {
                (hop.cons_ingress(), ScmpReason::UnknownHopFieldIngress)
            } else {
                (hop.cons_egress(), ScmpReason::UnknownHopFieldEgress)
            };
            if expected != in_if {
                return done(self.error(buf, len, ingress, reason, p.hop_ptr()));
            }
        }
        // Step 6: payload length.
        if !payload_ok {
            return done(self.error(buf, len, ingress, ScmpReason::InvalidPacketSize, 0));
        }
        // Step 7: a packet in AS transit must come over the sibling link of the interface it
        // entered the AS on: the link to the sibling router that owns that interface (a
        // sibling owning several interfaces has one link, named by any of them).
        if in_if == 0 && meta.curr_hf() != 0 && !self.via_entry_sibling(buf, p) {
            return done(Disposition::Drop(DropReason::TransitNotFromSibling));
        }
        // Step 8: source and destination ISD-AS.
        if in_if == 0 {
            if meta.curr_hf() == 0 && !src_local {
                return done(self.error(
                    buf,
                    len,
                    ingress,
                    ScmpReason::InvalidSourceAddress,
                    SRC_IA_PTR,
                ));
            }
            if dst_local {
                return done(self.error(
                    buf,
                    len,
                    ingress,
                    ScmpReason::InvalidDestinationAddress,
                    DST_IA_PTR,
                ));
            }
        } else {
            if src_local {
                return done(self.error(
                    buf,
                    len,
                    ingress,
                    ScmpReason::InvalidSourceAddress,
                    SRC_IA_PTR,
                ));
            }
            if meta.is_last_hop() != dst_local {
                return done(self.error(
                    buf,
                    len,
                    ingress,
                    ScmpReason::InvalidDestinationAddress,
                    DST_IA_PTR,
                ));
            }
        }
        // Step 9: a local source must have a valid host address.
        if src_local && !valid_source_host(src_type, &buf[..len]) {
            return done(self.error(buf, len, ingress, ScmpReason::InvalidSourceAddress, 0));
        }
        // Step 10: against construction direction, the ingress router restores the SegID.
        if !info.cons_dir() && in_if != 0 && !peering {
            info = info.with_seg_id(info.seg_id() ^ hop.mac_head());
            write_seg_id(buf, p.info_at(meta.curr_inf()), info.seg_id());
            p.info = info;
        }
        *block = hop.mac_input(info);
        None
    }

    /// Whether a packet in AS transit came over the sibling link of the interface it entered
    /// the AS on (step 7).
    #[inline(always)]
    fn via_entry_sibling(&self, buf: &[u8], p: &Pending) -> bool {
        let entry = self.entry_interface(buf, p);
        let owner = |k: u16| self.router.interface(k).map(|i| i.owner);
        match (p.ingress, owner(entry)) {
            (Ingress::Sibling(k), Some(o @ Owner::Sibling(_))) => k == entry || owner(k) == Some(o),
            _ => false,
        }
    }

    /// The interface the packet entered this AS on, read from the path (step 7): for the first
    /// hop after a non-peering segment change, the previous hop in its own segment's direction.
    #[cold]
    #[inline(never)]
    fn entry_interface(&self, buf: &[u8], p: &Pending) -> u16 {
        let (info, hop) = if !p.peering && p.meta.curr_hf() > 0 && p.meta.is_first_hop_of_segment()
        {
            // CurrINF > 0 here: the previous hop is in an earlier segment.
            let i = Info::read(buf, p.info_at(p.meta.curr_inf() - 1));
            let h = Hop::read(buf, p.hop_at(p.meta.curr_hf() - 1));
            (i, h)
        } else {
            (p.info, p.hop)
        };
        if info.cons_dir() {
            hop.cons_ingress()
        } else {
            hop.cons_egress()
        }
    }
}

/// Whether a local source host address is usable (step 9): a known type, and not an
/// IPv4-mapped IPv6 address.
#[inline]
fn valid_source_host(t: AddrType, pkt: &[u8]) -> bool {
    match t {
        AddrType::IPV4 | AddrType::SVC => true,
        AddrType::IPV6 => {
            let hdr = ScionHeader::new_unchecked(pkt);
            let a = hdr.src_host_bytes();
            a[..V4_MAPPED_PREFIX.len()] != V4_MAPPED_PREFIX
        }
        _ => false,
    }
}
