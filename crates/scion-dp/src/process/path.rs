//! Register views of the SCION path fields the processor reads in place: the path meta header
//! ([`Meta`]), the current info field ([`Info`]) and hop field ([`Hop`]), and the two writes
//! processing makes to the path (SegID and meta header).
//!
//! Each view holds the field's bytes as big-endian integers, so a field is one shift and mask
//! away. [`field`] names where each field sits. A leaf: imports nothing from the processing
//! modules.

use idint_wire::crypto::BLOCK_LEN;
use idint_wire::path::scion::{HOP_LEN, INFO_LEN, MAX_HOPS, META_LEN};

use crate::bytes::{read_u32, read_u64};
use crate::header::{HOP_EGRESS_ALERT, HOP_INGRESS_ALERT, INFO_CONS_DIR, INFO_PEER};

use field::{hop, info, mac_input, meta};

/// Where the path fields sit: byte offsets and ranges within a field (smoltcp style), and the
/// bit shifts they give when the field is read as one big-endian integer.
pub(super) mod field {
    /// A byte range within a field.
    pub(crate) type Field = core::ops::Range<usize>;

    /// The shift that brings a field ending at byte `end` of a `width`-byte big-endian word
    /// down to bit 0.
    const fn shift(end: usize, width: usize) -> u32 {
        (8 * (width - end)) as u32
    }

    /// The path meta header: one 32-bit word `CurrINF(2) CurrHF(6) RSV(6) Seg0Len(6)
    /// Seg1Len(6) Seg2Len(6)`.
    pub(crate) mod meta {
        /// CurrINF, the top 2 bits.
        pub(crate) const CURR_INF_SHIFT: u32 = 30;
        /// CurrHF, the 6 bits below CurrINF.
        pub(crate) const CURR_HF_SHIFT: u32 = 24;
        /// CurrHF after its shift.
        pub(crate) const CURR_HF_MASK: u32 = 0x3f;
        /// One step of CurrHF, added in place to move to the next hop field.
        pub(crate) const CURR_HF_ONE: u32 = 1 << CURR_HF_SHIFT;
        /// The bits below CurrINF and CurrHF (reserved bits and segment lengths).
        pub(crate) const BELOW_CURR: u32 = (1 << CURR_HF_SHIFT) - 1;
        /// SegLen of segments 0, 1 and 2.
        pub(crate) const SEG_LEN_SHIFT: [u32; 3] = [12, 6, 0];
        /// A SegLen after its shift.
        pub(crate) const SEG_LEN_MASK: u32 = 0x3f;
    }

    /// An info field: `Flags(1) RSV(1) SegID(2) Timestamp(4)`.
    pub(crate) mod info {
        use super::{Field, shift};
        use idint_wire::path::scion::INFO_LEN;

        /// The flags byte (Peer, ConsDir).
        pub(crate) const FLAGS: usize = 0;
        /// SegID.
        pub(crate) const SEG_ID: Field = 2..4;
        /// Timestamp (Unix seconds).
        pub(crate) const TIMESTAMP: Field = 4..8;

        /// The flags byte in the field read as a `u64`.
        pub(crate) const FLAGS_SHIFT: u32 = shift(FLAGS + 1, INFO_LEN);
        /// SegID in the field read as a `u64`.
        pub(crate) const SEG_ID_SHIFT: u32 = shift(SEG_ID.end, INFO_LEN);
        /// Timestamp in the field read as a `u64` (the low 32 bits).
        pub(crate) const TIMESTAMP_SHIFT: u32 = shift(TIMESTAMP.end, INFO_LEN);
        /// SegID in place in the field read as a `u64`.
        pub(crate) const SEG_ID_MASK: u64 = 0xffff << SEG_ID_SHIFT;
    }

    /// A hop field: `Flags(1) ExpTime(1) ConsIngress(2) ConsEgress(2) MAC(6)`, read as its
    /// first 8 bytes ([`HI`](hop::HI)) and its last 4 ([`LO`](hop::LO)).
    pub(crate) mod hop {
        use super::{Field, shift};

        /// The flags byte (router alerts).
        pub(crate) const FLAGS: usize = 0;
        /// ExpTime.
        pub(crate) const EXP_TIME: usize = 1;
        /// ConsIngress interface.
        pub(crate) const CONS_INGRESS: Field = 2..4;
        /// ConsEgress interface.
        pub(crate) const CONS_EGRESS: Field = 4..6;
        /// The hop MAC.
        pub(crate) const MAC: Field = 6..12;
        /// The bytes read as the `u64` `hi`.
        pub(crate) const HI: Field = 0..8;
        /// The bytes read as the `u32` `lo` (the last 4 MAC bytes).
        pub(crate) const LO: Field = 8..12;

        const HI_LEN: usize = HI.end - HI.start;
        /// The flags byte in `hi`.
        pub(crate) const FLAGS_SHIFT: u32 = shift(FLAGS + 1, HI_LEN);
        /// ExpTime in `hi`.
        pub(crate) const EXP_TIME_SHIFT: u32 = shift(EXP_TIME + 1, HI_LEN);
        /// ConsIngress in `hi`.
        pub(crate) const CONS_INGRESS_SHIFT: u32 = shift(CONS_INGRESS.end, HI_LEN);
        /// ConsEgress in `hi`.
        pub(crate) const CONS_EGRESS_SHIFT: u32 = shift(CONS_EGRESS.end, HI_LEN);
        /// The first two MAC bytes, the low 16 bits of `hi`.
        pub(crate) const MAC_HEAD_MASK: u64 = (1 << shift(CONS_EGRESS.end, HI_LEN)) - 1;
        /// Bits of `lo`, the MAC bytes below the head.
        pub(crate) const LO_BITS: u32 = (8 * (LO.end - LO.start)) as u32;
    }

    /// The 16-byte CMAC input of a hop field: `0 0 | SegID | Timestamp | 0 | ExpTime |
    /// ConsIngress | ConsEgress | 0 0`, built as one `u128`.
    pub(crate) mod mac_input {
        use super::{Field, shift};

        /// Length of the block.
        pub(crate) const LEN: usize = 16;
        /// SegID.
        pub(crate) const SEG_ID: Field = 2..4;
        /// Timestamp.
        pub(crate) const TIMESTAMP: Field = 4..8;
        /// ExpTime.
        pub(crate) const EXP_TIME: usize = 9;
        /// ConsIngress.
        pub(crate) const CONS_INGRESS: Field = 10..12;
        /// ConsEgress.
        pub(crate) const CONS_EGRESS: Field = 12..14;

        /// SegID in the block read as a `u128`.
        pub(crate) const SEG_ID_SHIFT: u32 = shift(SEG_ID.end, LEN);
        /// Timestamp in the block read as a `u128`.
        pub(crate) const TIMESTAMP_SHIFT: u32 = shift(TIMESTAMP.end, LEN);
        /// ExpTime in the block read as a `u128`.
        pub(crate) const EXP_TIME_SHIFT: u32 = shift(EXP_TIME + 1, LEN);
        /// ConsIngress in the block read as a `u128`.
        pub(crate) const CONS_INGRESS_SHIFT: u32 = shift(CONS_INGRESS.end, LEN);
        /// ConsEgress in the block read as a `u128`.
        pub(crate) const CONS_EGRESS_SHIFT: u32 = shift(CONS_EGRESS.end, LEN);

        /// The first half of the block is the info field (read as a `u64`) without its flags
        /// and reserved bytes: these are its SegID and Timestamp bits.
        pub(crate) const INFO_BITS: u64 =
            (0xffff << (SEG_ID_SHIFT - u64::BITS)) | (0xffff_ffff << (TIMESTAMP_SHIFT - u64::BITS));
        /// The second half is the hop field's `hi` without its flags and MAC bytes: these are
        /// its ExpTime, ConsIngress and ConsEgress bits.
        pub(crate) const HOP_BITS: u64 = (0xff << EXP_TIME_SHIFT)
            | (0xffff << CONS_INGRESS_SHIFT)
            | (0xffff << CONS_EGRESS_SHIFT);
    }

    // The layouts above against the shifts they must give.
    const _: () = assert!(info::FLAGS_SHIFT == 56 && info::SEG_ID_SHIFT == 32);
    const _: () = assert!(info::TIMESTAMP_SHIFT == 0);
    const _: () = assert!(hop::FLAGS_SHIFT == 56 && hop::EXP_TIME_SHIFT == 48);
    const _: () = assert!(hop::CONS_INGRESS_SHIFT == 32 && hop::CONS_EGRESS_SHIFT == 16);
    const _: () = assert!(hop::MAC_HEAD_MASK == 0xffff && hop::LO_BITS == 32);
    const _: () = assert!(hop::MAC.end == idint_wire::path::scion::HOP_LEN);
    const _: () = assert!(mac_input::SEG_ID_SHIFT == 96 && mac_input::TIMESTAMP_SHIFT == 64);
    const _: () = assert!(mac_input::EXP_TIME_SHIFT == 48);
    const _: () = assert!(mac_input::CONS_INGRESS_SHIFT == 32);
    const _: () = assert!(mac_input::CONS_EGRESS_SHIFT == 16);
    // The block halves line up with the info field and the hop field's `hi`.
    const _: () = assert!(mac_input::SEG_ID_SHIFT - u64::BITS == info::SEG_ID_SHIFT);
    const _: () = assert!(mac_input::TIMESTAMP_SHIFT - u64::BITS == info::TIMESTAMP_SHIFT);
    const _: () = assert!(mac_input::EXP_TIME_SHIFT == hop::EXP_TIME_SHIFT);
    const _: () = assert!(mac_input::CONS_INGRESS_SHIFT == hop::CONS_INGRESS_SHIFT);
    const _: () = assert!(mac_input::CONS_EGRESS_SHIFT == hop::CONS_EGRESS_SHIFT);
    const _: () = assert!(mac_input::INFO_BITS == 0x0000_ffff_ffff_ffff);
    const _: () = assert!(mac_input::HOP_BITS == 0x00ff_ffff_ffff_0000);
}

/// Nanoseconds per second (info field timestamps are in seconds).
const NS_PER_S: u64 = 1_000_000_000;
/// One ExpTime unit: 24 hours / 256 = 337.5 s, in nanoseconds.
const EXP_TIME_UNIT_NS: u64 = 337_500_000_000;

/// The path meta header: its raw 32-bit word plus the segment geometry decoded once (every
/// later question about the path is then one or two compares, not a re-decode of the word).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Meta {
    /// The word as it is on the wire.
    pub(super) raw: u32,
    /// SegLen of segments 0 and 1 (segment 2 is implied by `n_hops`).
    s0: u8,
    s1: u8,
    n_inf: u8,
    n_hops: u8,
    hf: u8,
    inf: u8,
}

impl Meta {
    /// Decodes the raw meta word.
    #[inline(always)]
    pub(super) fn decode(raw: u32) -> Meta {
        let seg_len = |k: usize| ((raw >> meta::SEG_LEN_SHIFT[k]) & meta::SEG_LEN_MASK) as u8;
        let (s0, s1, s2) = (seg_len(0), seg_len(1), seg_len(2));
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
            hf: ((raw >> meta::CURR_HF_SHIFT) & meta::CURR_HF_MASK) as u8,
            inf: (raw >> meta::CURR_INF_SHIFT) as u8,
        }
    }
    /// CurrINF.
    #[inline(always)]
    pub(super) fn curr_inf(self) -> usize {
        usize::from(self.inf)
    }
    /// CurrHF.
    #[inline(always)]
    pub(super) fn curr_hf(self) -> usize {
        usize::from(self.hf)
    }
    /// SegLen of segment `i`.
    #[inline(always)]
    pub(super) fn seg_len(self, i: usize) -> usize {
        match i {
            0 => usize::from(self.s0),
            1 => usize::from(self.s1),
            _ => usize::from(self.n_hops - self.s0 - self.s1),
        }
    }
    /// Number of info fields.
    #[inline(always)]
    pub(super) fn num_infos(self) -> usize {
        usize::from(self.n_inf)
    }
    /// Number of hop fields.
    #[inline(always)]
    pub(super) fn num_hops(self) -> usize {
        usize::from(self.n_hops)
    }
    /// Length of the whole path in bytes.
    #[inline(always)]
    pub(super) fn path_len(self) -> usize {
        META_LEN + INFO_LEN * self.num_infos() + HOP_LEN * self.num_hops()
    }
    /// The structural rules of [`PathMeta::validate`](idint_wire::path::PathMeta::validate).
    #[inline(always)]
    pub(super) fn valid(self) -> bool {
        let n = self.n_inf;
        n > 0
            && !(self.s0 == 0 && n > 1)
            && !(self.s1 == 0 && n > 2)
            && self.inf < n
            && self.hf < self.n_hops
            && usize::from(self.n_hops) <= MAX_HOPS
    }
    /// Segment of hop `hop` (< `n_hops`).
    #[inline(always)]
    pub(super) fn segment_of(self, hop: usize) -> usize {
        let s0 = usize::from(self.s0);
        usize::from(hop >= s0) + usize::from(hop >= s0 + usize::from(self.s1))
    }
    /// Whether the current hop field is the last of the path.
    #[inline(always)]
    pub(super) fn is_last_hop(self) -> bool {
        self.hf + 1 == self.n_hops
    }
    /// Whether the current hop field is the last but one of the path.
    #[inline(always)]
    pub(super) fn is_penultimate_hop(self) -> bool {
        self.curr_hf() + 2 == self.num_hops()
    }
    /// Whether the next hop field is in another segment.
    #[inline(always)]
    pub(super) fn is_xover(self) -> bool {
        let next = self.curr_hf() + 1;
        next < self.num_hops() && self.segment_of(next) != self.curr_inf()
    }
    /// Whether the current hop field is the first of its segment.
    #[inline(always)]
    pub(super) fn is_first_hop_of_segment(self) -> bool {
        let h = self.curr_hf();
        h == 0 || self.segment_of(h - 1) != self.segment_of(h)
    }
    /// Moved to the next hop field (CurrINF follows); `None` at the last hop.
    #[inline(always)]
    pub(super) fn advanced(self) -> Option<Meta> {
        let next = self.curr_hf() + 1;
        if next >= self.num_hops() {
            return None;
        }
        let inf = self.segment_of(next) as u8;
        Some(Meta {
            raw: (self.raw & meta::BELOW_CURR)
                | (u32::from(inf) << meta::CURR_INF_SHIFT)
                | ((next as u32) << meta::CURR_HF_SHIFT),
            hf: next as u8,
            inf,
            ..self
        })
    }
    /// Whether the current hop is a peering hop (see [`peering_of`](crate::header::peering_of)).
    #[inline(always)]
    pub(super) fn peering(self, info: Info) -> Option<bool> {
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
pub(super) struct Info(pub(super) u64);

impl Info {
    /// The info field at `buf[at..]` (in bounds: callers checked).
    #[inline(always)]
    pub(super) fn read(buf: &[u8], at: usize) -> Info {
        Info(read_u64(buf, at))
    }
    #[inline(always)]
    fn flags(self) -> u8 {
        (self.0 >> info::FLAGS_SHIFT) as u8
    }
    /// The Peer flag.
    #[inline(always)]
    pub(super) fn peer(self) -> bool {
        self.flags() & INFO_PEER != 0
    }
    /// The ConsDir flag.
    #[inline(always)]
    pub(super) fn cons_dir(self) -> bool {
        self.flags() & INFO_CONS_DIR != 0
    }
    /// SegID.
    #[inline(always)]
    pub(super) fn seg_id(self) -> u16 {
        (self.0 >> info::SEG_ID_SHIFT) as u16
    }
    /// Timestamp (Unix seconds).
    #[inline(always)]
    pub(super) fn timestamp(self) -> u32 {
        (self.0 >> info::TIMESTAMP_SHIFT) as u32
    }
    /// The same field with SegID `seg`.
    #[inline(always)]
    pub(super) fn with_seg_id(self, seg: u16) -> Info {
        Info((self.0 & !info::SEG_ID_MASK) | (u64::from(seg) << info::SEG_ID_SHIFT))
    }
}

/// A hop field as its raw 12 bytes (first 8, last 4).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Hop {
    hi: u64,
    lo: u32,
}

impl Hop {
    /// The hop field at `buf[at..]` (in bounds: callers checked).
    #[inline(always)]
    pub(super) fn read(buf: &[u8], at: usize) -> Hop {
        Hop {
            hi: read_u64(buf, at + hop::HI.start),
            lo: read_u32(buf, at + hop::LO.start),
        }
    }
    /// The hop field in `b`.
    #[inline(always)]
    pub(super) fn from_bytes(b: &[u8; HOP_LEN]) -> Hop {
        Hop {
            hi: read_u64(b, hop::HI.start),
            lo: read_u32(b, hop::LO.start),
        }
    }
    #[inline(always)]
    fn flags(self) -> u8 {
        (self.hi >> hop::FLAGS_SHIFT) as u8
    }
    /// The router alert for the ConsIngress router.
    #[inline(always)]
    pub(super) fn ingress_alert(self) -> bool {
        self.flags() & HOP_INGRESS_ALERT != 0
    }
    /// The router alert for the ConsEgress router.
    #[inline(always)]
    pub(super) fn egress_alert(self) -> bool {
        self.flags() & HOP_EGRESS_ALERT != 0
    }
    /// ExpTime.
    #[inline(always)]
    pub(super) fn exp_time(self) -> u8 {
        (self.hi >> hop::EXP_TIME_SHIFT) as u8
    }
    /// ConsIngress interface.
    #[inline(always)]
    pub(super) fn cons_ingress(self) -> u16 {
        (self.hi >> hop::CONS_INGRESS_SHIFT) as u16
    }
    /// ConsEgress interface.
    #[inline(always)]
    pub(super) fn cons_egress(self) -> u16 {
        (self.hi >> hop::CONS_EGRESS_SHIFT) as u16
    }
    /// The 6 MAC bytes as the low 48 bits.
    #[inline(always)]
    pub(super) fn mac48(self) -> u64 {
        ((self.hi & hop::MAC_HEAD_MASK) << hop::LO_BITS) | u64::from(self.lo)
    }
    /// The first two MAC bytes (the SegID update).
    #[inline(always)]
    pub(super) fn mac_head(self) -> u16 {
        (self.hi & hop::MAC_HEAD_MASK) as u16
    }
    /// Expiry in Unix nanoseconds for an info timestamp.
    #[inline(always)]
    pub(super) fn expiry_ns(self, info: Info) -> u64 {
        u64::from(info.timestamp()) * NS_PER_S + (1 + u64::from(self.exp_time())) * EXP_TIME_UNIT_NS
    }
    /// The CMAC input block ([`field::mac_input`]) built from registers.
    #[inline(always)]
    pub(super) fn mac_input(self, info: Info) -> [u8; mac_input::LEN] {
        // Both halves are the fields with the bytes between them cleared.
        let head = info.0 & mac_input::INFO_BITS;
        let tail = self.hi & mac_input::HOP_BITS;
        ((u128::from(head) << u64::BITS) | u128::from(tail)).to_be_bytes()
    }
    /// Whether the first 6 bytes of `full` (a full CMAC) equal the hop's MAC (no early exit).
    #[inline(always)]
    pub(super) fn mac_matches(self, full: &[u8; BLOCK_LEN]) -> bool {
        let got = u64::from_be_bytes([0, 0, full[0], full[1], full[2], full[3], full[4], full[5]]);
        (got ^ self.mac48()) == 0
    }
}

/// Writes SegID into the info field at `buf[info_at..]`.
pub(super) fn write_seg_id(buf: &mut [u8], info_at: usize, seg_id: u16) {
    let (from, to) = (info_at + info::SEG_ID.start, info_at + info::SEG_ID.end);
    buf[from..to].copy_from_slice(&seg_id.to_be_bytes());
}

/// Writes the meta header of the path at `buf[sp..]`.
pub(super) fn write_meta(buf: &mut [u8], sp: usize, meta: Meta) {
    write_meta_raw(buf, sp, meta.raw);
}

/// Writes the meta header word `raw` of the path at `buf[sp..]`.
pub(super) fn write_meta_raw(buf: &mut [u8], sp: usize, raw: u32) {
    buf[sp..sp + META_LEN].copy_from_slice(&raw.to_be_bytes());
}
