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

use idint_wire::ext::{E2E, HBH};
use idint_wire::path::scion::{HOP_LEN, INFO_LEN, META_LEN};
use idint_wire::path::{HopField, OneHopPath};
use idint_wire::scion::{COMMON_LEN, DST_IA_OFFSET, PathType, SRC_IA_OFFSET, ScionHeader};
use idint_wire::{AddrType, HostAddr, IsdAsn};

use alloc::boxed::Box;

pub use crate::burst::{BurstPacket, MAX_BURST, PacketSlot};
use crate::bytes::{read_u32, read_u64};
use crate::config::{LinkType, Owner, Router};
use crate::epic::{HvfInput, timestamp_fresh, verify_hvf};
use crate::header::{
    ADDR_TYPES_AT, EPIC_LHVF_AT, EPIC_PHVF_AT, HDR_LEN_AT, HOP_EGRESS_ALERT, HOP_INGRESS_ALERT,
    INFO_CONS_DIR, INFO_PEER, INFO_SEG_ID_AT, INFO_TIMESTAMP_AT, NEXT_HDR_AT, PATH_TYPE_AT,
    PATH_TYPE_SCION, PAYLOAD_LEN_AT,
};
use crate::hook::{Forwarded, ForwardingHook};
use crate::local::{self, LocalError, upper_layer};
use crate::outcome::{Counters, Disposition, DropReason, Ingress, ScmpReason};
use crate::reply::{self, EPIC_PREFIX, ReplyRequest};

/// How many packets ahead of the one being processed a burst prefetches.
const PREFETCH_AHEAD: usize = 4;

/// Touches the first two cache lines of `buf` (common, address and the start of the path
/// header) so they travel into L1 while earlier packets are processed. A plain load whose
/// value is not waited for works as a prefetch without `unsafe` intrinsics.
#[inline(always)]
fn prefetch(buf: &[u8]) {
    core::hint::black_box(buf.first().copied());
    core::hint::black_box(buf.get(64).copied());
}

/// Link-type pairs (bit `4 * ingress + egress`, in [`LinkType`] order core, parent, child,
/// peer) allowed without a segment change (§2.5): core-core, child-parent, parent-child,
/// child-peer, peer-child.
const TRANSIT_ALLOWED: u16 = 1 << (4 * LinkType::Core as u16 + LinkType::Core as u16)
    | 1 << (4 * LinkType::Child as u16 + LinkType::Parent as u16)
    | 1 << (4 * LinkType::Parent as u16 + LinkType::Child as u16)
    | 1 << (4 * LinkType::Child as u16 + LinkType::Peer as u16)
    | 1 << (4 * LinkType::Peer as u16 + LinkType::Child as u16);

/// BFD protocol number.
const BFD: u8 = 203;

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

/// The path meta header: its raw 32-bit word plus the segment geometry decoded once (every
/// later question about the path is then one or two compares, not a re-decode of the word).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Meta {
    raw: u32,
    /// SegLen of segments 0 and 1 (segment 2 is implied by `n_hops`).
    s0: u8,
    s1: u8,
    n_inf: u8,
    n_hops: u8,
    hf: u8,
    inf: u8,
}

impl Meta {
    #[inline(always)]
    fn decode(raw: u32) -> Meta {
        let s0 = ((raw >> 12) & 0x3f) as u8;
        let s1 = ((raw >> 6) & 0x3f) as u8;
        let s2 = (raw & 0x3f) as u8;
        let n_inf = if s2 > 0 {
            3
        } else if s1 > 0 {
            2
        } else {
            u8::from(s0 > 0)
        };
        Meta {
            raw,
            s0,
            s1,
            n_inf,
            n_hops: s0 + s1 + s2,
            hf: ((raw >> 24) & 0x3f) as u8,
            inf: (raw >> 30) as u8,
        }
    }
    #[inline(always)]
    fn curr_inf(self) -> usize {
        usize::from(self.inf)
    }
    #[inline(always)]
    fn curr_hf(self) -> usize {
        usize::from(self.hf)
    }
    #[inline(always)]
    fn seg_len(self, i: usize) -> usize {
        match i {
            0 => usize::from(self.s0),
            1 => usize::from(self.s1),
            _ => usize::from(self.n_hops - self.s0 - self.s1),
        }
    }
    #[inline(always)]
    fn num_infos(self) -> usize {
        usize::from(self.n_inf)
    }
    #[inline(always)]
    fn num_hops(self) -> usize {
        usize::from(self.n_hops)
    }
    #[inline(always)]
    fn path_len(self) -> usize {
        META_LEN + INFO_LEN * self.num_infos() + HOP_LEN * self.num_hops()
    }
    /// The structural rules of [`PathMeta::validate`](idint_wire::path::PathMeta::validate).
    #[inline(always)]
    fn valid(self) -> bool {
        let n = self.n_inf;
        n > 0
            && !(self.s0 == 0 && n > 1)
            && !(self.s1 == 0 && n > 2)
            && self.inf < n
            && self.hf < self.n_hops
            && usize::from(self.n_hops) <= idint_wire::path::scion::MAX_HOPS
    }
    /// Segment of hop `hop` (< `n_hops`).
    #[inline(always)]
    fn segment_of(self, hop: usize) -> usize {
        let s0 = usize::from(self.s0);
        usize::from(hop >= s0) + usize::from(hop >= s0 + usize::from(self.s1))
    }
    #[inline(always)]
    fn is_last_hop(self) -> bool {
        self.hf + 1 == self.n_hops
    }
    #[inline(always)]
    fn is_xover(self) -> bool {
        let next = self.curr_hf() + 1;
        next < self.num_hops() && self.segment_of(next) != self.curr_inf()
    }
    #[inline(always)]
    fn is_first_hop_of_segment(self) -> bool {
        let h = self.curr_hf();
        h == 0 || self.segment_of(h - 1) != self.segment_of(h)
    }
    /// Moved to the next hop field (CurrINF follows); `None` at the last hop.
    #[inline(always)]
    fn advanced(self) -> Option<Meta> {
        let next = self.curr_hf() + 1;
        if next >= self.num_hops() {
            return None;
        }
        let inf = self.segment_of(next) as u8;
        Some(Meta {
            raw: (self.raw & 0x00ff_ffff) | (u32::from(inf) << 30) | ((next as u32) << 24),
            hf: next as u8,
            inf,
            ..self
        })
    }
    /// Whether the current hop is a peering hop (see [`peering_of`](crate::header::peering_of)).
    #[inline(always)]
    fn peering(self, info: Info) -> Option<bool> {
        if !info.peer() {
            return Some(false);
        }
        if self.s0 == 0 || self.s1 == 0 || self.n_inf != 2 {
            return None;
        }
        Some(self.hf + 1 == self.s0 || self.hf == self.s0)
    }
}

/// An info field as its raw 8 bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Info(u64);

impl Info {
    #[inline(always)]
    fn peer(self) -> bool {
        (self.0 >> 56) as u8 & INFO_PEER != 0
    }
    #[inline(always)]
    fn cons_dir(self) -> bool {
        (self.0 >> 56) as u8 & INFO_CONS_DIR != 0
    }
    #[inline(always)]
    fn seg_id(self) -> u16 {
        (self.0 >> 32) as u16
    }
    #[inline(always)]
    fn timestamp(self) -> u32 {
        self.0 as u32
    }
    #[inline(always)]
    fn with_seg_id(self, seg: u16) -> Info {
        Info((self.0 & !(0xffff << 32)) | (u64::from(seg) << 32))
    }
}

/// A hop field as its raw 12 bytes (first 8, last 4).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Hop {
    hi: u64,
    lo: u32,
}

impl Hop {
    #[inline(always)]
    fn ingress_alert(self) -> bool {
        (self.hi >> 56) as u8 & HOP_INGRESS_ALERT != 0
    }
    #[inline(always)]
    fn egress_alert(self) -> bool {
        (self.hi >> 56) as u8 & HOP_EGRESS_ALERT != 0
    }
    #[inline(always)]
    fn exp_time(self) -> u8 {
        (self.hi >> 48) as u8
    }
    #[inline(always)]
    fn cons_ingress(self) -> u16 {
        (self.hi >> 32) as u16
    }
    #[inline(always)]
    fn cons_egress(self) -> u16 {
        (self.hi >> 16) as u16
    }
    /// The 6 MAC bytes as the low 48 bits.
    #[inline(always)]
    fn mac48(self) -> u64 {
        ((self.hi & 0xffff) << 32) | u64::from(self.lo)
    }
    /// The first two MAC bytes (the SegID update).
    #[inline(always)]
    fn mac_head(self) -> u16 {
        self.hi as u16
    }
    /// Expiry in Unix nanoseconds for an info timestamp.
    #[inline(always)]
    fn expiry_ns(self, info: Info) -> u64 {
        u64::from(info.timestamp()) * 1_000_000_000
            + (1 + u64::from(self.exp_time())) * 337_500_000_000
    }
    /// The CMAC input block `0 0 | SegID | Timestamp | 0 | ExpTime | ConsIngress |
    /// ConsEgress | 0 0` built from registers.
    #[inline(always)]
    fn mac_input(self, info: Info) -> [u8; 16] {
        let v = (u128::from(info.seg_id()) << 96)
            | (u128::from(info.timestamp()) << 64)
            | (u128::from(self.exp_time()) << 48)
            | (u128::from(self.cons_ingress()) << 32)
            | (u128::from(self.cons_egress()) << 16);
        v.to_be_bytes()
    }
    /// Whether the first 6 bytes of `full` equal the hop's MAC (no early exit).
    #[inline(always)]
    fn mac_matches(self, full: &[u8; 16]) -> bool {
        let got = u64::from_be_bytes([0, 0, full[0], full[1], full[2], full[3], full[4], full[5]]);
        (got ^ self.mac48()) == 0
    }
}

#[inline(always)]
fn read_hop(buf: &[u8], at: usize) -> Hop {
    Hop {
        hi: read_u64(buf, at),
        lo: read_u32(buf, at + 8),
    }
}

/// What stage one learned about a SCION-path packet.
#[derive(Debug, Clone, Copy)]
struct Pending {
    ingress: Ingress,
    /// Offset of the SCION path (after the EPIC fields for EPIC).
    sp: usize,
    meta: Meta,
    info: Info,
    hop: Hop,
    peering: bool,
    dst_local: bool,
    epic: EpicRole,
    /// Egress interface when the packet took the transit fast path, else 0.
    fast_egress: u16,
}

impl Default for Pending {
    fn default() -> Self {
        Pending {
            ingress: Ingress::Internal,
            sp: 0,
            meta: Meta::default(),
            info: Info::default(),
            hop: Hop::default(),
            peering: false,
            dst_local: false,
            epic: EpicRole::None,
            fast_egress: 0,
        }
    }
}

impl Pending {
    #[inline(always)]
    fn info_at(&self, i: usize) -> usize {
        self.sp + META_LEN + INFO_LEN * i
    }
    #[inline(always)]
    fn hop_at(&self, j: usize) -> usize {
        self.sp + META_LEN + INFO_LEN * self.meta.num_infos() + HOP_LEN * j
    }
    #[inline(always)]
    fn hop_ptr(&self) -> u16 {
        self.hop_at(self.meta.curr_hf()) as u16
    }
}

/// Per-burst working memory, allocated once per processor so a burst costs no initialisation.
struct Scratch {
    pending: [Pending; MAX_BURST],
    blocks: [[u8; 16]; MAX_BURST],
    index: [u8; MAX_BURST],
}

/// A worker's packet processor: the shared router model plus this worker's counters and
/// burst scratch space. One per worker core; the [`Router`] is shared.
pub struct Processor<'r> {
    engine: Engine<'r>,
    counters: Counters,
    scratch: Box<Scratch>,
}

impl core::fmt::Debug for Processor<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Processor")
            .field("router", self.engine.router)
            .field("counters", &self.counters)
            .finish_non_exhaustive()
    }
}

impl<'r> Processor<'r> {
    /// A processor for `router` with zeroed counters.
    pub fn new(router: &'r Router) -> Self {
        Processor {
            engine: Engine { router, fast: true },
            counters: Counters::default(),
            scratch: Box::new(Scratch {
                pending: [Pending::default(); MAX_BURST],
                blocks: [[0u8; 16]; MAX_BURST],
                index: [0u8; MAX_BURST],
            }),
        }
    }

    /// The same processor without the transit fast path (every packet through the general
    /// pipeline); for tests that check the two agree.
    #[cfg(feature = "measurement-aids")]
    pub fn without_fast_path(mut self) -> Self {
        self.engine.fast = false;
        self
    }

    /// The router model.
    pub fn router(&self) -> &'r Router {
        self.engine.router
    }

    /// Counters of everything processed so far.
    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    /// Processes one packet in place. `buf[..len]` is the SCION packet (common header first)
    /// as it arrived at `ingress`; `buf` may be longer (room for an SCMP reply). `now_ns` is
    /// the current Unix time in nanoseconds. ID-INT options are left untouched (see
    /// [`Self::process_with`]).
    #[inline]
    pub fn process(
        &mut self,
        buf: &mut [u8],
        len: usize,
        ingress: Ingress,
        now_ns: u64,
    ) -> Disposition {
        self.process_with(buf, len, ingress, now_ns, &mut ())
    }

    /// As [`Self::process`], then runs `hook` (for example an
    /// [`IdIntStage`](crate::idint::IdIntStage)) on a packet that is forwarded or delivered.
    #[inline]
    pub fn process_with<H: ForwardingHook>(
        &mut self,
        buf: &mut [u8],
        len: usize,
        ingress: Ingress,
        now_ns: u64,
        hook: &mut H,
    ) -> Disposition {
        let e = self.engine;
        let mut p = Pending::default();
        let mut block = [0u8; 16];
        let d = if e.fast_one(buf, len, ingress, now_ns, &mut p, &mut block) {
            let mac = e.router.hop_mac().compute(&block);
            let mut d = match e.fast_two(buf, len, &p, &mac) {
                Ok(ifid) => Disposition::Forward { ifid },
                Err(d) => d,
            };
            let f = Forwarded {
                len,
                ingress,
                hop: p.meta.curr_hf() as u8,
                now_ns,
            };
            hook.after_forwarding(e.router, buf, &f, &mut d);
            d
        } else {
            match e.stage_one(buf, len, ingress, now_ns, &mut p, &mut block) {
                Some(d) => d,
                None => {
                    let mac = e.router.hop_mac().compute(&block);
                    let mut d = e.stage_two(buf, len, &p, &mac, now_ns);
                    let f = Forwarded {
                        len,
                        ingress,
                        hop: p.meta.curr_hf() as u8,
                        now_ns,
                    };
                    hook.after_forwarding(e.router, buf, &f, &mut d);
                    d
                }
            }
        };
        self.counters.record(&d);
        d
    }

    /// Processes a batch: every packet's decision is given to it with
    /// [`BurstPacket::disposition_mut`]. The hop-field MACs of the whole batch are computed in
    /// one pipelined AES pass. ID-INT options are left untouched.
    pub fn process_burst<P: BurstPacket>(&mut self, pkts: &mut [P], now_ns: u64) {
        self.process_burst_with(pkts, now_ns, &mut ());
    }

    /// As [`Self::process_burst`], then runs `hook` on every packet that is forwarded or
    /// delivered.
    pub fn process_burst_with<P: BurstPacket, H: ForwardingHook>(
        &mut self,
        pkts: &mut [P],
        now_ns: u64,
        hook: &mut H,
    ) {
        let e = self.engine;
        let s = &mut *self.scratch;
        for chunk in pkts.chunks_mut(MAX_BURST) {
            let mut n = 0;
            for i in 0..chunk.len() {
                // The headers of packets a few slots ahead travel into L1 while this one is
                // processed (packet buffers arrive from DMA in L2/L3 at best).
                if let Some(ahead) = chunk.get_mut(i + PREFETCH_AHEAD) {
                    prefetch(ahead.buffer());
                }
                let pkt = &mut chunk[i];
                let len = pkt.len();
                let ingress = pkt.ingress();
                // Stage one writes straight into the burst's slot (no copy of the state).
                let (p, block) = (&mut s.pending[n], &mut s.blocks[n]);
                if e.fast_one(pkt.buffer(), len, ingress, now_ns, p, block) {
                    s.index[n] = i as u8;
                    n += 1;
                    continue;
                }
                match e.stage_one(pkt.buffer(), len, ingress, now_ns, p, block) {
                    Some(d) => {
                        self.counters.record(&d);
                        *pkt.disposition_mut() = Some(d);
                    }
                    None => {
                        s.index[n] = i as u8;
                        n += 1;
                    }
                }
            }
            e.router.hop_mac().compute_batch(&mut s.blocks[..n]);
            for k in 0..n {
                let pkt = &mut chunk[usize::from(s.index[k])];
                let len = pkt.len();
                let p = &s.pending[k];
                let mut d = if p.fast_egress != 0 {
                    match e.fast_two(pkt.buffer(), len, p, &s.blocks[k]) {
                        Ok(ifid) => Disposition::Forward { ifid },
                        Err(d) => d,
                    }
                } else {
                    e.stage_two(pkt.buffer(), len, p, &s.blocks[k], now_ns)
                };
                let f = Forwarded {
                    len,
                    ingress: p.ingress,
                    hop: p.meta.curr_hf() as u8,
                    now_ns,
                };
                hook.after_forwarding_in_burst(
                    e.router,
                    pkt.buffer(),
                    &f,
                    &mut d,
                    usize::from(s.index[k]),
                );
                self.counters.record(&d);
                pkt.set_disposition(d);
            }
            hook.finish_burst(chunk);
        }
    }
}

/// The processing steps; needs only the shared router model.
#[derive(Clone, Copy)]
struct Engine<'r> {
    router: &'r Router,
    /// Whether the transit fast path is tried first.
    fast: bool,
}

impl Engine<'_> {
    #[cold]
    #[inline(never)]
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

    #[cold]
    #[inline(never)]
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
    /// ISD-AS and source address checks, the C=0 SegID update. Returns the decision if one is
    /// reached without the MAC; otherwise fills `out` and the MAC input `block` and returns
    /// `None`.
    #[inline(always)]
    fn stage_one(
        &self,
        buf: &mut [u8],
        len: usize,
        ingress: Ingress,
        now_ns: u64,
        out: &mut Pending,
        block: &mut [u8; 16],
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
            fast_egress: 0,
        };
        let mut info = Info(read_u64(buf, p.info_at(meta.curr_inf())));
        let hop = read_hop(buf, p.hop_at(meta.curr_hf()));
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
            p.epic = if meta.is_last_hop() {
                EpicRole::Last
            } else if meta.curr_hf() + 2 == meta.num_hops() {
                EpicRole::Penultimate
            } else {
                EpicRole::Transit
            };
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
        if in_if == 0 && meta.curr_hf() != 0 {
            let entry = self.entry_interface(buf, p);
            let owner = |k: u16| self.router.interface(k).map(|i| i.owner);
            let via_sibling = match (ingress, owner(entry)) {
                (Ingress::Sibling(k), Some(o @ Owner::Sibling(_))) => {
                    k == entry || owner(k) == Some(o)
                }
                _ => false,
            };
            if !via_sibling {
                return done(Disposition::Drop(DropReason::TransitNotFromSibling));
            }
        }
        // Step 8: source and destination ISD-AS.
        if in_if == 0 {
            if meta.curr_hf() == 0 && !src_local {
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
        if !info.cons_dir() && in_if != 0 && !peering {
            info = info.with_seg_id(info.seg_id() ^ hop.mac_head());
            write_seg_id(buf, p.info_at(meta.curr_inf()), info.seg_id());
            p.info = info;
        }
        *block = hop.mac_input(info);
        None
    }

    /// Transit fast path, stage one: a packet from an own external link that leaves on another
    /// own link in the same segment, with nothing unusual (no peering, crossover, router alert,
    /// local source or destination, EPIC, expiry or interface problem). Every condition the
    /// general pipeline could act on is a reason to leave the fast path, so the outcome is
    /// always the one the general pipeline gives (tested). Writes nothing unless taken.
    #[inline(always)]
    fn fast_one(
        &self,
        buf: &mut [u8],
        len: usize,
        ingress: Ingress,
        now_ns: u64,
        out: &mut Pending,
        block: &mut [u8; 16],
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
        block: &mut [u8; 16],
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
        let types = pkt[ADDR_TYPES_AT];
        let addr = 2 * IsdAsn::LEN
            + 4 * (usize::from((types >> 4) & 3) + 1)
            + 4 * (usize::from(types & 3) + 1);
        let sp = COMMON_LEN + addr;
        let hl = usize::from(pkt[HDR_LEN_AT]) * 4;
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
        let info = Info(read_u64(pkt, info_at));
        let hop = read_hop(pkt, hop_at);
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
        let pair = 1u16 << (4 * inc.link as u16 + out_port.link as u16);
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
    fn fast_two(
        &self,
        buf: &mut [u8],
        len: usize,
        p: &Pending,
        mac: &[u8; 16],
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
        let raw = p.meta.raw + (1 << 24);
        buf[p.sp..p.sp + META_LEN].copy_from_slice(&raw.to_be_bytes());
        Ok(p.fast_egress)
    }

    /// The interface the packet entered this AS on, read from the path (step 7): for the first
    /// hop after a non-peering segment change, the previous hop in its own segment's direction.
    #[cold]
    #[inline(never)]
    fn entry_interface(&self, buf: &[u8], p: &Pending) -> u16 {
        let (info, hop) = if !p.peering && p.meta.curr_hf() > 0 && p.meta.is_first_hop_of_segment()
        {
            // CurrINF > 0 here: the previous hop is in an earlier segment.
            let i = Info(read_u64(buf, p.info_at(p.meta.curr_inf() - 1)));
            let h = read_hop(buf, p.hop_at(p.meta.curr_hf() - 1));
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

    /// Steps 11-21 with the current hop's full CMAC.
    #[inline(always)]
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
        if !p.hop.mac_matches(mac) {
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
        if in_if != 0 && alert_for_ingress(p.hop, p.info) {
            clear_alert(buf, p.hop_at(p.meta.curr_hf()), p.info.cons_dir(), true);
            return self.traceroute(buf, len, ingress, in_if);
        }
        // Step 13: local delivery.
        if p.dst_local {
            let d = self.deliver(buf, len, ingress);
            if p.epic == EpicRole::None {
                return d;
            }
            return self.epic_gate(buf, len, p, &last_mac, now_ns, d);
        }
        // Step 14: segment crossover.
        let mut q = *p;
        let xover = p.meta.is_xover() && !p.peering;
        if xover {
            let Some(m) = q.meta.advanced() else {
                return Disposition::Drop(DropReason::Malformed);
            };
            q.meta = m;
            write_meta(buf, q.sp, m);
            q.info = Info(read_u64(buf, q.info_at(m.curr_inf())));
            q.hop = read_hop(buf, q.hop_at(m.curr_hf()));
            if q.hop.expiry_ns(q.info) < now_ns {
                return self.error(buf, len, ingress, ScmpReason::PathExpired, q.hop_ptr());
            }
            last_mac = router.hop_mac().compute(&q.hop.mac_input(q.info));
            if !q.hop.mac_matches(&last_mac) {
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
        let (egress, bad_egress) = if q.info.cons_dir() {
            (q.hop.cons_egress(), ScmpReason::UnknownHopFieldEgress)
        } else {
            (q.hop.cons_ingress(), ScmpReason::UnknownHopFieldIngress)
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
                    let ptr = q.info_at(q.meta.curr_inf()) as u16;
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
        if owned && alert_for_egress(q.hop, q.info) {
            clear_alert(buf, q.hop_at(q.meta.curr_hf()), q.info.cons_dir(), false);
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
                let Some(next) = q.meta.advanced() else {
                    return Disposition::Drop(DropReason::PathAtEnd);
                };
                if q.info.cons_dir() && !q.peering {
                    let seg = q.info.seg_id() ^ q.hop.mac_head();
                    write_seg_id(buf, q.info_at(q.meta.curr_inf()), seg);
                }
                write_meta(buf, q.sp, next);
                Disposition::Forward { ifid: egress }
            }
            Owner::Sibling(addr) => Disposition::Sibling { ifid: egress, addr },
        };
        if p.epic == EpicRole::None {
            return d;
        }
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
    #[cold]
    #[inline(never)]
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
    #[inline(never)]
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
        let at = if p.epic == EpicRole::Last {
            EPIC_LHVF_AT
        } else {
            EPIC_PHVF_AT
        };
        let hvf = [e[at], e[at + 1], e[at + 2], e[at + 3]];
        let i0 = p.sp + META_LEN + INFO_TIMESTAMP_AT;
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
    #[inline(never)]
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
#[inline(always)]
fn alert_for_ingress(hop: Hop, info: Info) -> bool {
    if info.cons_dir() {
        hop.ingress_alert()
    } else {
        hop.egress_alert()
    }
}

/// Whether the hop carries a router alert for the router where the packet leaves the AS.
#[inline(always)]
fn alert_for_egress(hop: Hop, info: Info) -> bool {
    if info.cons_dir() {
        hop.egress_alert()
    } else {
        hop.ingress_alert()
    }
}

/// Clears the alert flag that triggered (`at_ingress`: the one for the entering router).
fn clear_alert(buf: &mut [u8], hop_at: usize, cons_dir: bool, at_ingress: bool) {
    // Flag bits in the hop field's first byte: ConsIngress and ConsEgress.
    let ingress_flag = cons_dir == at_ingress;
    buf[hop_at] &= if ingress_flag {
        !HOP_INGRESS_ALERT
    } else {
        !HOP_EGRESS_ALERT
    };
}

fn write_seg_id(buf: &mut [u8], info_at: usize, seg_id: u16) {
    let at = info_at + INFO_SEG_ID_AT;
    buf[at..at + 2].copy_from_slice(&seg_id.to_be_bytes());
}

fn write_meta(buf: &mut [u8], sp: usize, meta: Meta) {
    buf[sp..sp + META_LEN].copy_from_slice(&meta.raw.to_be_bytes());
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
            !(a[..10].iter().all(|&b| b == 0) && a[10] == 0xff && a[11] == 0xff)
        }
        _ => false,
    }
}

/// The protocol after the extension headers.
fn final_next_header(pkt: &[u8]) -> Option<u8> {
    let hdr = ScionHeader::new_checked(pkt).ok()?;
    upper_layer(pkt, hdr.header_len(), hdr.next_header().into()).map(|(p, _)| p)
}
