//! Packet processing: the ordered checks and updates of `scion-dp.md` §2.4 for SCION paths,
//! OneHop (§2.9), EPIC-HP (§3), BFD hand-off, local delivery (§2.7) and SCMP replies (§2.8).
//!
//! Every packet goes through two stages: [`Processor`] first runs the checks that need no
//! AES (steps 1-10) and produces the current hop's CMAC input block, then finishes with the
//! computed MAC (steps 11-21). [`Processor::process_burst`] runs the first stage over a whole
//! batch, computes all MACs in one pipelined AES call, then finishes each packet; the
//! single-packet [`Processor::process`] runs the same two stages back to back.
//!
//! Where the reference router differs from the specification, this code follows the
//! specification (`scion-dp.md` §7):
//! * D1: local deliveries to a port outside `dispatched_ports` go to port 30041;
//! * D5: a router alert on a packet that is not a traceroute request drops it (Go reflects it
//!   back out of its ingress link);
//! * D7: a remote destination whose hop field gives egress 0 is dropped (Go forwards it to the
//!   internal network, back to its sender).
//!
//! SCMP pointers are byte offsets into the offending packet; for EPIC-HP they include the 16
//! bytes of EPIC fields before the SCION path (the reference router omits them).

use idint_wire::crypto::ct_eq;
use idint_wire::path::scion::{HOP_LEN, INFO_LEN, META_LEN};
use idint_wire::path::{HopField, InfoField, OneHopPath};
use idint_wire::path::{PathMeta, ScionPath};
use idint_wire::scion::{PathType, ScionHeader};
use idint_wire::{AddrType, HostAddr};

use crate::config::{LinkType, Owner, Router};
use crate::epic::{HvfInput, timestamp_fresh, verify_hvf};
use crate::local::{self, LocalError, upper_layer};
use crate::outcome::{Counters, Disposition, DropReason, Ingress, ScmpReason};
use crate::reply::{self, EPIC_PREFIX, ReplyRequest};

/// Largest batch handled in one pass of [`Processor::process_burst`] (longer slices are
/// processed in chunks of this size).
pub const MAX_BURST: usize = 64;

/// BFD protocol number.
const BFD: u8 = 203;

/// One packet of a burst, as the I/O layer presents it.
pub trait BurstPacket {
    /// The writable buffer holding the SCION packet from its first byte; it may extend past the
    /// packet (room for an SCMP reply that quotes it).
    fn buffer(&mut self) -> &mut [u8];
    /// Length of the SCION packet in the buffer.
    fn len(&self) -> usize;
    /// Whether the packet is empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Where the packet arrived.
    fn ingress(&self) -> Ingress;
    /// Receives the decision.
    fn set_disposition(&mut self, d: Disposition);
}

/// A [`BurstPacket`] over a plain byte slice.
#[derive(Debug)]
pub struct PacketSlot<'a> {
    /// Buffer (packet first, then free room).
    pub buf: &'a mut [u8],
    /// Packet length.
    pub len: usize,
    /// Arrival.
    pub ingress: Ingress,
    /// Decision, once processed.
    pub disposition: Option<Disposition>,
}

impl BurstPacket for PacketSlot<'_> {
    fn buffer(&mut self) -> &mut [u8] {
        self.buf
    }
    fn len(&self) -> usize {
        self.len
    }
    fn ingress(&self) -> Ingress {
        self.ingress
    }
    fn set_disposition(&mut self, d: Disposition) {
        self.disposition = Some(d);
    }
}

/// Whether the current hop is a peering hop (`None` if the peering flag is set on a path whose
/// segment lengths do not allow peering).
pub(crate) fn peering_of(meta: &PathMeta, info: &InfoField) -> Option<bool> {
    if !info.peer {
        return Some(false);
    }
    let [s0, s1, s2] = meta.seg_len;
    if s0 == 0 || s1 == 0 || s2 != 0 {
        return None;
    }
    Some(meta.curr_hf + 1 == s0 || meta.curr_hf == s0)
}

/// EPIC-HP role of this router for the packet (decided before processing moves the path).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum EpicRole {
    /// Not an EPIC packet.
    #[default]
    None,
    /// EPIC, but neither the penultimate nor the last hop: no HVF check here.
    Transit,
    /// Penultimate hop: check PHVF.
    Penultimate,
    /// Last hop: check LHVF.
    Last,
}

/// What stage one learned about a SCION-path packet.
#[derive(Debug, Clone, Copy)]
struct Pending {
    ingress: Ingress,
    /// Offset of the SCION path (after the EPIC fields for EPIC).
    sp: usize,
    meta: PathMeta,
    info: InfoField,
    hop: HopField,
    peering: bool,
    dst_local: bool,
    epic: EpicRole,
}

impl Default for Pending {
    fn default() -> Self {
        Pending {
            ingress: Ingress::Internal,
            sp: 0,
            meta: PathMeta::default(),
            info: InfoField::default(),
            hop: HopField::default(),
            peering: false,
            dst_local: false,
            epic: EpicRole::None,
        }
    }
}

impl Pending {
    fn info_at(&self, i: u8) -> usize {
        self.sp + META_LEN + INFO_LEN * usize::from(i)
    }
    fn hop_at(&self, j: u8) -> usize {
        self.sp + META_LEN + INFO_LEN * self.meta.num_infos() + HOP_LEN * usize::from(j)
    }
    fn hop_ptr(&self) -> u16 {
        self.hop_at(self.meta.curr_hf) as u16
    }
}

enum Stage {
    Done(Disposition),
    NeedMac(Pending, [u8; 16]),
}

/// A worker's packet processor: the shared router model plus this worker's counters.
#[derive(Debug)]
pub struct Processor<'r> {
    router: &'r Router,
    counters: Counters,
}

impl<'r> Processor<'r> {
    /// A processor for `router` with zeroed counters.
    pub fn new(router: &'r Router) -> Self {
        Processor {
            router,
            counters: Counters::default(),
        }
    }

    /// The router model.
    pub fn router(&self) -> &'r Router {
        self.router
    }

    /// Counters of everything processed so far.
    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    /// Processes one packet in place. `buf[..len]` is the SCION packet (common header first)
    /// as it arrived at `ingress`; `buf` may be longer (room for an SCMP reply). `now_ns` is
    /// the current Unix time in nanoseconds.
    pub fn process(
        &mut self,
        buf: &mut [u8],
        len: usize,
        ingress: Ingress,
        now_ns: u64,
    ) -> Disposition {
        let d = match self.stage_one(buf, len, ingress, now_ns) {
            Stage::Done(d) => d,
            Stage::NeedMac(p, block) => {
                let mac = self.router.hop_mac().compute(&block);
                self.stage_two(buf, len, &p, &mac, now_ns)
            }
        };
        self.counters.record(&d);
        d
    }

    /// Processes a batch: every packet's decision is given to it with
    /// [`BurstPacket::set_disposition`]. The hop-field MACs of the whole batch are computed in
    /// one pipelined AES pass.
    pub fn process_burst<P: BurstPacket>(&mut self, pkts: &mut [P], now_ns: u64) {
        for chunk in pkts.chunks_mut(MAX_BURST) {
            let mut pending = [Pending::default(); MAX_BURST];
            let mut blocks = [[0u8; 16]; MAX_BURST];
            let mut index = [0u8; MAX_BURST];
            let mut n = 0;
            for (i, pkt) in chunk.iter_mut().enumerate() {
                let len = pkt.len();
                let ingress = pkt.ingress();
                match self.stage_one(pkt.buffer(), len, ingress, now_ns) {
                    Stage::Done(d) => {
                        self.counters.record(&d);
                        pkt.set_disposition(d);
                    }
                    Stage::NeedMac(p, block) => {
                        pending[n] = p;
                        blocks[n] = block;
                        index[n] = i as u8;
                        n += 1;
                    }
                }
            }
            self.router.hop_mac().compute_batch(&mut blocks[..n]);
            for k in 0..n {
                let pkt = &mut chunk[usize::from(index[k])];
                let len = pkt.len();
                let d = self.stage_two(pkt.buffer(), len, &pending[k], &blocks[k], now_ns);
                self.counters.record(&d);
                pkt.set_disposition(d);
            }
        }
    }

    fn reply(
        &self,
        buf: &mut [u8],
        len: usize,
        ingress: Ingress,
        req: ReplyRequest,
    ) -> Disposition {
        match reply::build(self.router, buf, len, ingress, req) {
            Ok(n) => Disposition::Reply {
                len: n,
                scmp: req.reason,
                pointer: req.pointer,
            },
            Err(DropReason::ScmpSuppressed) => Disposition::Suppressed {
                scmp: req.reason,
                pointer: req.pointer,
            },
            Err(r) => Disposition::Drop(r),
        }
    }

    fn error(
        &self,
        buf: &mut [u8],
        len: usize,
        ingress: Ingress,
        reason: ScmpReason,
        pointer: u16,
    ) -> Disposition {
        let req = ReplyRequest {
            reason,
            pointer,
            ifid: 0,
            egress: 0,
        };
        self.reply(buf, len, ingress, req)
    }

    /// Steps 0-10: decode, path sanity, expiry, ingress interface, length, transit source,
    /// ISD-AS and source address checks, the C=0 SegID update; yields the MAC input block.
    fn stage_one(&self, buf: &mut [u8], len: usize, ingress: Ingress, now_ns: u64) -> Stage {
        let done = Stage::Done;
        if len > buf.len() {
            return done(Disposition::Drop(DropReason::Malformed));
        }
        let Ok(hdr) = ScionHeader::new_checked(&buf[..len]) else {
            return done(Disposition::Drop(DropReason::Malformed));
        };
        let path_off = hdr.path_offset();
        let hl = hdr.header_len();
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
        let Ok(path) = ScionPath::new_checked(&buf[sp..hl]) else {
            return done(Disposition::Drop(DropReason::Malformed));
        };
        let meta = path.meta();
        if meta.validate().is_err() {
            return done(Disposition::Drop(DropReason::Malformed));
        }
        if usize::from(meta.curr_inf) != meta.segment_of(usize::from(meta.curr_hf)) {
            return done(Disposition::Drop(DropReason::CurrInfMismatch));
        }
        let (Ok(mut info), Ok(hop)) = (path.current_info(), path.current_hop()) else {
            return done(Disposition::Drop(DropReason::Malformed));
        };
        if !info.peer && meta.seg_len[..meta.num_infos()].iter().any(|&l| l < 2) {
            return done(Disposition::Drop(DropReason::SingletonSegment));
        }
        // Step 3: peering.
        let Some(peering) = peering_of(&meta, &info) else {
            return done(Disposition::Drop(DropReason::BadPeeringPath));
        };
        let epic = if !epic_path {
            EpicRole::None
        } else if meta.is_last_hop() {
            EpicRole::Last
        } else if usize::from(meta.curr_hf) + 2 == meta.num_hops() {
            EpicRole::Penultimate
        } else {
            EpicRole::Transit
        };
        let mut p = Pending {
            ingress,
            sp,
            meta,
            info,
            hop,
            peering,
            dst_local,
            epic,
        };

        // Step 4: expiry.
        if hop.expiry_unix_ns(info.timestamp) < now_ns {
            return done(self.error(buf, len, ingress, ScmpReason::PathExpired, p.hop_ptr()));
        }
        // Step 5: the hop field names the interface the packet arrived on.
        let in_if = ingress.ifid();
        if in_if != 0 {
            let (expected, reason) = if info.cons_dir {
                (hop.cons_ingress, ScmpReason::UnknownHopFieldIngress)
            } else {
                (hop.cons_egress, ScmpReason::UnknownHopFieldEgress)
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
        // entered the AS on.
        if in_if == 0 && meta.curr_hf != 0 {
            let entry = match self.entry_interface(&buf[sp..hl], &p) {
                Some(e) => e,
                None => return done(Disposition::Drop(DropReason::Malformed)),
            };
            let via_sibling = matches!(ingress, Ingress::Sibling(k) if k == entry)
                && matches!(
                    self.router.interface(entry).map(|i| i.owner),
                    Some(Owner::Sibling(_))
                );
            if !via_sibling {
                return done(Disposition::Drop(DropReason::TransitNotFromSibling));
            }
        }
        // Step 8: source and destination ISD-AS.
        if in_if == 0 {
            if meta.curr_hf == 0 && !src_local {
                return done(self.error(buf, len, ingress, ScmpReason::InvalidSourceAddress, 20));
            }
            if dst_local {
                return done(self.error(
                    buf,
                    len,
                    ingress,
                    ScmpReason::InvalidDestinationAddress,
                    12,
                ));
            }
        } else {
            if src_local {
                return done(self.error(buf, len, ingress, ScmpReason::InvalidSourceAddress, 20));
            }
            if meta.is_last_hop() != dst_local {
                return done(self.error(
                    buf,
                    len,
                    ingress,
                    ScmpReason::InvalidDestinationAddress,
                    12,
                ));
            }
        }
        // Step 9: a local source must have a valid host address.
        if src_local && !valid_source_host(src_type, &buf[..len]) {
            return done(self.error(buf, len, ingress, ScmpReason::InvalidSourceAddress, 0));
        }
        // Step 10: against construction direction, the ingress router restores the SegID.
        if !info.cons_dir && in_if != 0 && !peering {
            info.seg_id ^= u16::from_be_bytes([hop.mac[0], hop.mac[1]]);
            write_seg_id(buf, p.info_at(meta.curr_inf), info.seg_id);
            p.info = info;
        }
        Stage::NeedMac(p, hop.mac_input(info.seg_id, info.timestamp))
    }

    /// The interface the packet entered this AS on, read from the path (step 7).
    fn entry_interface(&self, path: &[u8], p: &Pending) -> Option<u16> {
        let view = ScionPath::new_unchecked(path);
        let (info, hop) = if !p.peering && p.meta.curr_hf > 0 && p.meta.is_first_hop_of_segment() {
            let i = view
                .info(usize::from(p.meta.curr_inf).checked_sub(1)?)
                .ok()?;
            let h = view.hop(usize::from(p.meta.curr_hf) - 1).ok()?;
            (i, h)
        } else {
            (p.info, p.hop)
        };
        Some(if info.cons_dir {
            hop.cons_ingress
        } else {
            hop.cons_egress
        })
    }

    /// Steps 11-21 with the current hop's full CMAC.
    fn stage_two(
        &self,
        buf: &mut [u8],
        len: usize,
        p: &Pending,
        mac: &[u8; 16],
        now_ns: u64,
    ) -> Disposition {
        let ingress = p.ingress;
        let in_if = ingress.ifid();
        let router = self.router;
        // Step 11: hop-field MAC.
        if !ct_eq(&mac[..6], &p.hop.mac) {
            return self.error(
                buf,
                len,
                ingress,
                ScmpReason::InvalidHopFieldMac,
                p.hop_ptr(),
            );
        }
        let mut last_mac = *mac;
        // Step 12: router alert for the ingress router.
        if in_if != 0 && alert_for_ingress(&p.hop, &p.info) {
            clear_alert(buf, p.hop_at(p.meta.curr_hf), p.info.cons_dir, true);
            return self.traceroute(buf, len, ingress, in_if);
        }
        // Step 13: local delivery.
        if p.dst_local {
            let d = self.deliver(buf, len, ingress);
            return self.epic_gate(buf, len, p, &last_mac, now_ns, d);
        }
        // Step 14: segment crossover.
        let mut q = *p;
        let xover = p.meta.is_xover() && !p.peering;
        if xover {
            if q.meta.increment().is_err() {
                return Disposition::Drop(DropReason::Malformed);
            }
            write_meta(buf, q.sp, &q.meta);
            let (Ok(info), Ok(hop)) = (
                InfoField::parse(&buf[q.info_at(q.meta.curr_inf)..]),
                HopField::parse(&buf[q.hop_at(q.meta.curr_hf)..]),
            ) else {
                return Disposition::Drop(DropReason::Malformed);
            };
            q.info = info;
            q.hop = hop;
            if hop.expiry_unix_ns(info.timestamp) < now_ns {
                return self.error(buf, len, ingress, ScmpReason::PathExpired, q.hop_ptr());
            }
            last_mac = router
                .hop_mac()
                .compute(&hop.mac_input(info.seg_id, info.timestamp));
            if !ct_eq(&last_mac[..6], &hop.mac) {
                return self.error(
                    buf,
                    len,
                    ingress,
                    ScmpReason::InvalidHopFieldMac,
                    q.hop_ptr(),
                );
            }
        }
        // Step 15-16: the egress interface.
        let (egress, bad_egress) = if q.info.cons_dir {
            (q.hop.cons_egress, ScmpReason::UnknownHopFieldEgress)
        } else {
            (q.hop.cons_ingress, ScmpReason::UnknownHopFieldIngress)
        };
        if egress == 0 {
            // D7: the specification has no egress 0 for a remote destination.
            return Disposition::Drop(DropReason::EgressZero);
        }
        let Some(out) = router.interface(egress) else {
            return self.error(buf, len, ingress, bad_egress, q.hop_ptr());
        };
        let owned = out.owner == Owner::Local;
        if in_if == 0 && !owned {
            return self.error(buf, len, ingress, bad_egress, q.hop_ptr());
        }
        // Step 17: link types (the ingress router checks; from inside it was checked already).
        if in_if != 0 {
            let Some(inc) = router.interface(in_if) else {
                return Disposition::Drop(DropReason::UnknownIngress);
            };
            let pair = (inc.link_type, out.link_type);
            if xover {
                if !matches!(
                    pair,
                    (LinkType::Core, LinkType::Child)
                        | (LinkType::Child, LinkType::Core)
                        | (LinkType::Child, LinkType::Child)
                ) {
                    let ptr = q.info_at(q.meta.curr_inf) as u16;
                    return self.error(buf, len, ingress, ScmpReason::InvalidSegmentChange, ptr);
                }
            } else if !matches!(
                pair,
                (LinkType::Core, LinkType::Core)
                    | (LinkType::Child, LinkType::Parent)
                    | (LinkType::Parent, LinkType::Child)
                    | (LinkType::Child, LinkType::Peer)
                    | (LinkType::Peer, LinkType::Child)
            ) {
                return self.error(buf, len, ingress, ScmpReason::InvalidPath, q.hop_ptr());
            }
        }
        // Step 18: router alert for the egress router.
        if owned && alert_for_egress(&q.hop, &q.info) {
            clear_alert(buf, q.hop_at(q.meta.curr_hf), q.info.cons_dir, false);
            return self.traceroute(buf, len, ingress, egress);
        }
        // Step 19: the egress link must be up.
        if !router.link_up(egress) {
            let (reason, ifid, eg) = if owned {
                (ScmpReason::ExternalInterfaceDown, egress, 0)
            } else {
                (ScmpReason::InternalConnectivityDown, in_if, egress)
            };
            let req = ReplyRequest {
                reason,
                pointer: 0,
                ifid,
                egress: eg,
            };
            return self.reply(buf, len, ingress, req);
        }
        // Step 20-21: leave through this router's link, or hand over to the sibling.
        let d = match out.owner {
            Owner::Local => {
                if q.meta.is_last_hop() {
                    return Disposition::Drop(DropReason::PathAtEnd);
                }
                if q.info.cons_dir && !q.peering {
                    let seg = q.info.seg_id ^ u16::from_be_bytes([q.hop.mac[0], q.hop.mac[1]]);
                    write_seg_id(buf, q.info_at(q.meta.curr_inf), seg);
                }
                let mut m = q.meta;
                if m.increment().is_err() {
                    return Disposition::Drop(DropReason::PathAtEnd);
                }
                write_meta(buf, q.sp, &m);
                Disposition::Forward { ifid: egress }
            }
            Owner::Sibling(addr) => Disposition::Sibling { ifid: egress, addr },
        };
        self.epic_gate(buf, len, p, &last_mac, now_ns, d)
    }

    /// Local delivery (step 13, §2.7).
    fn deliver(&self, buf: &mut [u8], len: usize, ingress: Ingress) -> Disposition {
        let hdr = ScionHeader::new_unchecked(&buf[..len]);
        let res = local::resolve(
            self.router,
            &buf[..len],
            hdr.dst_addr_type(),
            hdr.dst_host_bytes(),
            hdr.header_len(),
            hdr.next_header().into(),
        );
        match res {
            Ok(addr) => Disposition::Deliver { addr },
            Err(LocalError::Scmp(r)) => self.error(buf, len, ingress, r, 0),
            Err(LocalError::Drop(r)) => Disposition::Drop(r),
        }
    }

    /// A traceroute reply for a router alert (slow path); anything but a traceroute request
    /// carrying an alert is dropped (D5).
    fn traceroute(&self, buf: &mut [u8], len: usize, ingress: Ingress, ifid: u16) -> Disposition {
        let req = ReplyRequest {
            reason: ScmpReason::TracerouteReply,
            pointer: 0,
            ifid,
            egress: 0,
        };
        self.reply(buf, len, ingress, req)
    }

    /// EPIC-HP at the penultimate and last hop: a packet the SCION rules would send on is
    /// dropped unless its timestamp is fresh and its PHVF/LHVF verifies under the full CMAC of
    /// the hop verified last.
    fn epic_gate(
        &self,
        buf: &[u8],
        len: usize,
        p: &Pending,
        auth: &[u8; 16],
        now_ns: u64,
        d: Disposition,
    ) -> Disposition {
        let sends = matches!(
            d,
            Disposition::Forward { .. } | Disposition::Sibling { .. } | Disposition::Deliver { .. }
        );
        if !sends || !matches!(p.epic, EpicRole::Penultimate | EpicRole::Last) {
            return d;
        }
        let hdr = ScionHeader::new_unchecked(&buf[..len]);
        let e = &buf[p.sp - EPIC_PREFIX..p.sp];
        let pkt_id = u64::from_be_bytes([e[0], e[1], e[2], e[3], e[4], e[5], e[6], e[7]]);
        let at = if p.epic == EpicRole::Last { 12 } else { 8 };
        let hvf = [e[at], e[at + 1], e[at + 2], e[at + 3]];
        let i0 = p.sp + META_LEN + 4;
        let info0_ts = u32::from_be_bytes([buf[i0], buf[i0 + 1], buf[i0 + 2], buf[i0 + 3]]);
        if !timestamp_fresh(info0_ts, (pkt_id >> 32) as u32, now_ns) {
            return Disposition::Drop(DropReason::EpicStale);
        }
        let Ok(src_host) = HostAddr::parse(hdr.src_addr_type(), hdr.src_host_bytes()) else {
            return Disposition::Drop(DropReason::EpicBadHvf);
        };
        let input = HvfInput {
            info0_timestamp: info0_ts,
            pkt_id,
            src_ia: hdr.src_ia(),
            src_host: &src_host,
            payload_len: hdr.payload_len(),
        };
        if verify_hvf(auth, &input, &hvf) {
            d
        } else {
            Disposition::Drop(DropReason::EpicBadHvf)
        }
    }

    /// OneHop paths (§2.9): all failures are silent drops.
    fn onehop(&self, buf: &mut [u8], len: usize, ingress: Ingress) -> Disposition {
        let reject = Disposition::Drop(DropReason::OneHopRejected);
        if final_next_header(&buf[..len]) == Some(BFD) {
            return Disposition::Bfd;
        }
        let hdr = ScionHeader::new_unchecked(&buf[..len]);
        let po = hdr.path_offset();
        let Ok(ohp) = OneHopPath::parse(&buf[po..hdr.header_len()]) else {
            return Disposition::Drop(DropReason::Malformed);
        };
        if !ohp.info.cons_dir {
            return reject;
        }
        let router = self.router;
        let local = router.local_ia();
        let (src_ia, dst_ia) = (hdr.src_ia(), hdr.dst_ia());
        match ingress {
            Ingress::Internal | Ingress::Sibling(_) => {
                if src_ia != local {
                    return reject;
                }
                let Some(out) = router.interface(ohp.first.cons_egress) else {
                    return reject;
                };
                if out.neighbor_ia != dst_ia || out.owner != Owner::Local {
                    return reject;
                }
                let block = ohp.first.mac_input(ohp.info.seg_id, ohp.info.timestamp);
                if !router.hop_mac().verify(&block, &ohp.first.mac) {
                    return reject;
                }
                let m = ohp.first.mac;
                write_seg_id(buf, po, ohp.info.seg_id ^ u16::from_be_bytes([m[0], m[1]]));
                Disposition::Forward {
                    ifid: ohp.first.cons_egress,
                }
            }
            Ingress::External(x) => {
                if dst_ia != local || router.interface(x).map(|i| i.neighbor_ia) != Some(src_ia) {
                    return reject;
                }
                let mut second = HopField {
                    exp_time: ohp.first.exp_time,
                    cons_ingress: x,
                    ..HopField::default()
                };
                let full = router
                    .hop_mac()
                    .compute(&second.mac_input(ohp.info.seg_id, ohp.info.timestamp));
                second.mac.copy_from_slice(&full[..6]);
                if second.emit(&mut buf[po + INFO_LEN + HOP_LEN..]).is_err() {
                    return Disposition::Drop(DropReason::Malformed);
                }
                match self.deliver(buf, len, ingress) {
                    Disposition::Reply { .. } => reject,
                    d => d,
                }
            }
        }
    }
}

/// Whether the hop carries a router alert for the router where the packet enters the AS.
fn alert_for_ingress(hop: &HopField, info: &InfoField) -> bool {
    if info.cons_dir {
        hop.ingress_alert
    } else {
        hop.egress_alert
    }
}

/// Whether the hop carries a router alert for the router where the packet leaves the AS.
fn alert_for_egress(hop: &HopField, info: &InfoField) -> bool {
    if info.cons_dir {
        hop.egress_alert
    } else {
        hop.ingress_alert
    }
}

/// Clears the alert flag that triggered (`at_ingress`: the one for the entering router).
fn clear_alert(buf: &mut [u8], hop_at: usize, cons_dir: bool, at_ingress: bool) {
    // Flag bits in the hop field's first byte: I = 0x02 (ConsIngress), E = 0x01 (ConsEgress).
    let ingress_flag = cons_dir == at_ingress;
    buf[hop_at] &= if ingress_flag { !0x02 } else { !0x01 };
}

fn write_seg_id(buf: &mut [u8], info_at: usize, seg_id: u16) {
    buf[info_at + 2..info_at + 4].copy_from_slice(&seg_id.to_be_bytes());
}

fn write_meta(buf: &mut [u8], sp: usize, meta: &PathMeta) {
    buf[sp..sp + META_LEN].copy_from_slice(&meta.to_u32().to_be_bytes());
}

/// Whether a local source host address is usable (step 9): a known type, and not an
/// IPv4-mapped IPv6 address.
fn valid_source_host(t: AddrType, pkt: &[u8]) -> bool {
    let hdr = ScionHeader::new_unchecked(pkt);
    match HostAddr::parse(t, hdr.src_host_bytes()) {
        Ok(HostAddr::V4(_) | HostAddr::Svc(_)) => true,
        Ok(HostAddr::V6(a)) => a.to_ipv4_mapped().is_none(),
        _ => false,
    }
}

/// The protocol after the extension headers.
fn final_next_header(pkt: &[u8]) -> Option<u8> {
    let hdr = ScionHeader::new_checked(pkt).ok()?;
    upper_layer(pkt, hdr.header_len(), hdr.next_header().into()).map(|(p, _)| p)
}
