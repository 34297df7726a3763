//! The standard SCION path (path type 1): PathMeta | 1-3 InfoFields | 1-64 HopFields.

use crate::bytes::{read_u16, read_u32, write_u16, write_u32};
use crate::error::{Error, Layer, Result, need};

/// Length of the path meta header.
pub const META_LEN: usize = 4;
/// Length of an info field.
pub const INFO_LEN: usize = 8;
/// Length of a hop field.
pub const HOP_LEN: usize = 12;
/// Length of the hop-field MAC.
pub const MAC_LEN: usize = 6;
/// Most info fields in a path.
pub const MAX_INFOS: usize = 3;
/// Most hop fields in a path.
pub const MAX_HOPS: usize = 64;

/// The path meta header: current info/hop field indices and segment lengths.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PathMeta {
    /// CurrINF (2 bits).
    pub curr_inf: u8,
    /// CurrHF (6 bits).
    pub curr_hf: u8,
    /// Reserved (6 bits).
    pub reserved: u8,
    /// Seg0Len..Seg2Len (6 bits each).
    pub seg_len: [u8; 3],
}

impl PathMeta {
    /// Decodes the 32-bit word.
    pub const fn from_u32(w: u32) -> Self {
        PathMeta {
            curr_inf: (w >> 30) as u8,
            curr_hf: ((w >> 24) & 0x3f) as u8,
            reserved: ((w >> 18) & 0x3f) as u8,
            seg_len: [
                ((w >> 12) & 0x3f) as u8,
                ((w >> 6) & 0x3f) as u8,
                (w & 0x3f) as u8,
            ],
        }
    }

    /// Encodes the 32-bit word (fields are masked to their widths).
    pub const fn to_u32(&self) -> u32 {
        ((self.curr_inf as u32 & 3) << 30)
            | ((self.curr_hf as u32 & 0x3f) << 24)
            | ((self.reserved as u32 & 0x3f) << 18)
            | ((self.seg_len[0] as u32 & 0x3f) << 12)
            | ((self.seg_len[1] as u32 & 0x3f) << 6)
            | (self.seg_len[2] as u32 & 0x3f)
    }

    /// Number of info fields: index of the last non-zero SegLen + 1.
    pub const fn num_infos(&self) -> usize {
        if self.seg_len[2] > 0 {
            3
        } else if self.seg_len[1] > 0 {
            2
        } else if self.seg_len[0] > 0 {
            1
        } else {
            0
        }
    }

    /// Number of hop fields.
    pub const fn num_hops(&self) -> usize {
        self.seg_len[0] as usize + self.seg_len[1] as usize + self.seg_len[2] as usize
    }

    /// Path length in bytes implied by the segment lengths.
    pub const fn path_len(&self) -> usize {
        META_LEN + INFO_LEN * self.num_infos() + HOP_LEN * self.num_hops()
    }

    /// Checks the structural rules: every field fits its bit width (CurrINF 2 bits, CurrHF,
    /// reserved and each SegLen 6 bits), at least one hop, no zero SegLen before a non-zero
    /// one, at most 64 hops, CurrINF and CurrHF inside the path.
    pub const fn validate(&self) -> Result<()> {
        if self.seg_len[0] > 0x3f || self.seg_len[1] > 0x3f || self.seg_len[2] > 0x3f {
            return Err(Error::invalid(Layer::PathMeta, "SegLen"));
        }
        if self.curr_inf > 3 {
            return Err(Error::invalid(Layer::PathMeta, "CurrINF"));
        }
        if self.curr_hf > 0x3f {
            return Err(Error::invalid(Layer::PathMeta, "CurrHF"));
        }
        if self.reserved > 0x3f {
            return Err(Error::invalid(Layer::PathMeta, "RSV"));
        }
        let n = self.num_infos();
        if n == 0 {
            return Err(Error::invalid(Layer::PathMeta, "SegLen"));
        }
        if (self.seg_len[0] == 0 && n > 1) || (self.seg_len[1] == 0 && n > 2) {
            return Err(Error::invalid(Layer::PathMeta, "SegLen"));
        }
        if self.num_hops() > MAX_HOPS {
            return Err(Error::invalid(Layer::PathMeta, "SegLen"));
        }
        if self.curr_inf as usize >= n {
            return Err(Error::invalid(Layer::PathMeta, "CurrINF"));
        }
        if self.curr_hf as usize >= self.num_hops() {
            return Err(Error::invalid(Layer::PathMeta, "CurrHF"));
        }
        Ok(())
    }

    /// The segment (info field index) hop `hop` belongs to.
    pub const fn segment_of(&self, hop: usize) -> usize {
        let s0 = self.seg_len[0] as usize;
        let s1 = self.seg_len[1] as usize;
        if hop < s0 {
            0
        } else if hop < s0 + s1 {
            1
        } else {
            2
        }
    }

    /// Whether the current hop is the last hop of its segment and another segment follows
    /// (a segment change happens at this AS).
    pub const fn is_xover(&self) -> bool {
        let next = self.curr_hf as usize + 1;
        next < self.num_hops() && self.segment_of(next) != self.segment_of(self.curr_hf as usize)
    }

    /// Whether CurrHF is the first hop of its segment.
    pub const fn is_first_hop_of_segment(&self) -> bool {
        let h = self.curr_hf as usize;
        h == 0 || self.segment_of(h - 1) != self.segment_of(h)
    }

    /// Whether CurrHF is the last hop of the whole path.
    pub const fn is_last_hop(&self) -> bool {
        self.curr_hf as usize + 1 == self.num_hops()
    }

    /// Advances to the next hop field, updating CurrINF; fails at the last hop.
    pub fn increment(&mut self) -> Result<()> {
        let next = self.curr_hf as usize + 1;
        if next >= self.num_hops() {
            return Err(Error::invalid(Layer::PathMeta, "CurrHF"));
        }
        self.curr_hf = next as u8;
        self.curr_inf = self.segment_of(next) as u8;
        Ok(())
    }
}

/// An info field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct InfoField {
    /// P flag: peering segment.
    pub peer: bool,
    /// C flag: construction direction.
    pub cons_dir: bool,
    /// SegID (MAC-chaining accumulator).
    pub seg_id: u16,
    /// Timestamp (Unix seconds) set by the beacon originator.
    pub timestamp: u32,
}

impl InfoField {
    /// Reads the first 8 bytes of `b`.
    pub fn parse(b: &[u8]) -> Result<Self> {
        need(Layer::InfoField, b, INFO_LEN)?;
        Ok(InfoField {
            peer: b[0] & 0x02 != 0,
            cons_dir: b[0] & 0x01 != 0,
            seg_id: read_u16(b, 2),
            timestamp: read_u32(b, 4),
        })
    }

    /// Writes 8 bytes to the start of `b` (reserved bits zero).
    pub fn emit(&self, b: &mut [u8]) -> Result<()> {
        need(Layer::InfoField, b, INFO_LEN)?;
        b[0] = (u8::from(self.peer) << 1) | u8::from(self.cons_dir);
        b[1] = 0;
        write_u16(b, 2, self.seg_id);
        write_u32(b, 4, self.timestamp);
        Ok(())
    }
}

/// A hop field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HopField {
    /// I flag: router alert at the ConsIngress router.
    pub ingress_alert: bool,
    /// E flag: router alert at the ConsEgress router.
    pub egress_alert: bool,
    /// ExpTime: the hop expires `(1 + ExpTime) * 337.5 s` after the info timestamp.
    pub exp_time: u8,
    /// ConsIngress interface ID.
    pub cons_ingress: u16,
    /// ConsEgress interface ID.
    pub cons_egress: u16,
    /// First 6 bytes of the hop-field CMAC.
    pub mac: [u8; MAC_LEN],
}

impl HopField {
    /// Reads the first 12 bytes of `b`.
    pub fn parse(b: &[u8]) -> Result<Self> {
        need(Layer::HopField, b, HOP_LEN)?;
        let mut mac = [0u8; MAC_LEN];
        mac.copy_from_slice(&b[6..12]);
        Ok(HopField {
            ingress_alert: b[0] & 0x02 != 0,
            egress_alert: b[0] & 0x01 != 0,
            exp_time: b[1],
            cons_ingress: read_u16(b, 2),
            cons_egress: read_u16(b, 4),
            mac,
        })
    }

    /// Writes 12 bytes to the start of `b` (reserved bits zero).
    pub fn emit(&self, b: &mut [u8]) -> Result<()> {
        need(Layer::HopField, b, HOP_LEN)?;
        b[0] = (u8::from(self.ingress_alert) << 1) | u8::from(self.egress_alert);
        b[1] = self.exp_time;
        write_u16(b, 2, self.cons_ingress);
        write_u16(b, 4, self.cons_egress);
        b[6..12].copy_from_slice(&self.mac);
        Ok(())
    }

    /// The 16-byte CMAC input block: `0 0 | SegID | Timestamp | 0 | ExpTime | ConsIngress |
    /// ConsEgress | 0 0`.
    pub fn mac_input(&self, seg_id: u16, timestamp: u32) -> [u8; 16] {
        let mut m = [0u8; 16];
        write_u16(&mut m, 2, seg_id);
        write_u32(&mut m, 4, timestamp);
        m[9] = self.exp_time;
        write_u16(&mut m, 10, self.cons_ingress);
        write_u16(&mut m, 12, self.cons_egress);
        m
    }

    /// Absolute expiry in Unix nanoseconds for an info-field timestamp (seconds).
    pub const fn expiry_unix_ns(&self, timestamp: u32) -> u64 {
        timestamp as u64 * 1_000_000_000 + (1 + self.exp_time as u64) * 337_500_000_000
    }
}

/// Zero-copy view of a SCION path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScionPath<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> ScionPath<T> {
    /// Wraps `buffer` without checks.
    pub const fn new_unchecked(buffer: T) -> Self {
        ScionPath { buffer }
    }

    /// Wraps `buffer` and runs [`Self::check_len`].
    pub fn new_checked(buffer: T) -> Result<Self> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }

    /// Checks the meta header rules and that the buffer holds every info and hop field.
    /// Bytes after the last hop field are allowed (and ignored), as in SCION.
    pub fn check_len(&self) -> Result<()> {
        let b = self.buffer.as_ref();
        need(Layer::PathMeta, b, META_LEN)?;
        let meta = self.meta();
        meta.validate()?;
        need(Layer::Path, b, meta.path_len())
    }

    /// Gives the buffer back.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The meta header.
    pub fn meta(&self) -> PathMeta {
        PathMeta::from_u32(read_u32(self.buffer.as_ref(), 0))
    }

    /// Bytes the path occupies (meta + info + hop fields).
    pub fn len(&self) -> usize {
        self.meta().path_len()
    }

    /// Always false for a checked path (clippy's `len` rule).
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Offset of info field `i` from the path start.
    pub const fn info_offset(i: usize) -> usize {
        META_LEN + INFO_LEN * i
    }

    /// Offset of hop field `j` from the path start.
    pub fn hop_offset(&self, j: usize) -> usize {
        META_LEN + INFO_LEN * self.meta().num_infos() + HOP_LEN * j
    }

    /// Info field `i`, or an error if `i` is beyond the path.
    pub fn info(&self, i: usize) -> Result<InfoField> {
        if i >= self.meta().num_infos() {
            return Err(Error::invalid(Layer::InfoField, "index"));
        }
        InfoField::parse(&self.buffer.as_ref()[Self::info_offset(i)..])
    }

    /// Hop field `j`, or an error if `j` is beyond the path.
    pub fn hop(&self, j: usize) -> Result<HopField> {
        if j >= self.meta().num_hops() {
            return Err(Error::invalid(Layer::HopField, "index"));
        }
        HopField::parse(&self.buffer.as_ref()[self.hop_offset(j)..])
    }

    /// The current info field.
    pub fn current_info(&self) -> Result<InfoField> {
        self.info(usize::from(self.meta().curr_inf))
    }

    /// The current hop field.
    pub fn current_hop(&self) -> Result<HopField> {
        self.hop(usize::from(self.meta().curr_hf))
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> ScionPath<T> {
    /// Writes the meta header.
    pub fn set_meta(&mut self, m: &PathMeta) {
        write_u32(self.buffer.as_mut(), 0, m.to_u32());
    }

    /// Writes info field `i`.
    pub fn set_info(&mut self, i: usize, f: &InfoField) -> Result<()> {
        if i >= self.meta().num_infos() {
            return Err(Error::invalid(Layer::InfoField, "index"));
        }
        f.emit(&mut self.buffer.as_mut()[Self::info_offset(i)..])
    }

    /// Writes the SegID of info field `i`.
    pub fn set_seg_id(&mut self, i: usize, seg_id: u16) -> Result<()> {
        if i >= self.meta().num_infos() {
            return Err(Error::invalid(Layer::InfoField, "index"));
        }
        write_u16(self.buffer.as_mut(), Self::info_offset(i) + 2, seg_id);
        Ok(())
    }

    /// Writes hop field `j`.
    pub fn set_hop(&mut self, j: usize, h: &HopField) -> Result<()> {
        if j >= self.meta().num_hops() {
            return Err(Error::invalid(Layer::HopField, "index"));
        }
        let at = self.hop_offset(j);
        h.emit(&mut self.buffer.as_mut()[at..])
    }

    /// Reverses the path in place (for replies): info fields and segment lengths in reverse
    /// order with C flipped, hop fields in reverse order, CurrINF/CurrHF mirrored.
    pub fn reverse(&mut self) -> Result<()> {
        self.check_len()?;
        let repr = ScionPathRepr::parse(self.buffer.as_ref())?;
        repr.reversed()?.emit(self.buffer.as_mut())
    }
}

/// Owned SCION path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScionPathRepr {
    /// Meta header.
    pub meta: PathMeta,
    /// Info fields; the first `meta.num_infos()` are used.
    pub infos: [InfoField; MAX_INFOS],
    /// Hop fields; the first `meta.num_hops()` are used.
    pub hops: [HopField; MAX_HOPS],
}

impl ScionPathRepr {
    /// Parses a path from the start of `b`.
    pub fn parse(b: &[u8]) -> Result<Self> {
        let view = ScionPath::new_checked(b)?;
        let meta = view.meta();
        let mut r = ScionPathRepr {
            meta,
            infos: [InfoField::default(); MAX_INFOS],
            hops: [HopField::default(); MAX_HOPS],
        };
        for i in 0..meta.num_infos() {
            r.infos[i] = view.info(i)?;
        }
        for j in 0..meta.num_hops() {
            r.hops[j] = view.hop(j)?;
        }
        Ok(r)
    }

    /// Used info fields.
    pub fn infos(&self) -> &[InfoField] {
        &self.infos[..self.meta.num_infos().min(MAX_INFOS)]
    }

    /// Used hop fields.
    pub fn hops(&self) -> &[HopField] {
        &self.hops[..self.meta.num_hops().min(MAX_HOPS)]
    }

    /// Bytes needed to emit the path.
    pub const fn buffer_len(&self) -> usize {
        self.meta.path_len()
    }

    /// Writes the path to the start of `b`.
    pub fn emit(&self, b: &mut [u8]) -> Result<()> {
        self.meta.validate()?;
        need(Layer::Path, b, self.buffer_len())?;
        write_u32(b, 0, self.meta.to_u32());
        let n = self.meta.num_infos();
        for (i, f) in self.infos().iter().enumerate() {
            f.emit(&mut b[META_LEN + INFO_LEN * i..])?;
        }
        for (j, h) in self.hops().iter().enumerate() {
            h.emit(&mut b[META_LEN + INFO_LEN * n + HOP_LEN * j..])?;
        }
        Ok(())
    }

    /// The reversed path (see [`ScionPath::reverse`]).
    pub fn reversed(&self) -> Result<Self> {
        self.meta.validate()?;
        let n = self.meta.num_infos();
        let h = self.meta.num_hops();
        let mut r = *self;
        let mut seg_len = [0u8; 3];
        for (i, (len, info)) in seg_len
            .iter_mut()
            .zip(r.infos.iter_mut())
            .take(n)
            .enumerate()
        {
            *len = self.meta.seg_len[n - 1 - i];
            *info = self.infos[n - 1 - i];
            info.cons_dir = !info.cons_dir;
        }
        for j in 0..h {
            r.hops[j] = self.hops[h - 1 - j];
        }
        r.meta.seg_len = seg_len;
        r.meta.curr_inf = (n - 1 - usize::from(self.meta.curr_inf)) as u8;
        r.meta.curr_hf = (h - 1 - usize::from(self.meta.curr_hf)) as u8;
        Ok(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Path of slayers_golden/scion-udp.bin: SegLen [2,2,0], CurrINF 0, CurrHF 0, info fields
    // (C=0, SegID 0x0111, ts 256) and (C=1, SegID 0x0222, ts 256), 4 hop fields, MAC 010203040506.
    const PATH: [u8; 68] = [
        0x00, 0x00, 0x20, 0x80, // meta
        0x00, 0x00, 0x01, 0x11, 0x00, 0x00, 0x01, 0x00, // info 0
        0x01, 0x00, 0x02, 0x22, 0x00, 0x00, 0x01, 0x00, // info 1
        0x00, 0x3f, 0x00, 0x01, 0x00, 0x00, 1, 2, 3, 4, 5, 6, // hop 0
        0x00, 0x3f, 0x00, 0x03, 0x00, 0x02, 1, 2, 3, 4, 5, 6, // hop 1
        0x00, 0x3f, 0x00, 0x00, 0x00, 0x02, 1, 2, 3, 4, 5, 6, // hop 2
        0x00, 0x3f, 0x00, 0x01, 0x00, 0x00, 1, 2, 3, 4, 5, 6, // hop 3
    ];

    #[test]
    fn deconstruct() {
        let p = ScionPath::new_checked(&PATH[..]).unwrap();
        let m = p.meta();
        assert_eq!((m.curr_inf, m.curr_hf, m.seg_len), (0, 0, [2, 2, 0]));
        assert_eq!((m.num_infos(), m.num_hops(), p.len()), (2, 4, 68));
        let i1 = p.info(1).unwrap();
        assert!(i1.cons_dir && !i1.peer);
        assert_eq!((i1.seg_id, i1.timestamp), (0x0222, 256));
        let h1 = p.hop(1).unwrap();
        assert_eq!((h1.exp_time, h1.cons_ingress, h1.cons_egress), (63, 3, 2));
        assert_eq!(h1.mac, [1, 2, 3, 4, 5, 6]);
        assert!(p.hop(4).is_err());
        assert!(p.info(2).is_err());
        assert_eq!(m.segment_of(1), 0);
        assert_eq!(m.segment_of(2), 1);
    }

    #[test]
    fn construct_parse_emit() {
        let r = ScionPathRepr::parse(&PATH).unwrap();
        let mut out = [0xaau8; 68];
        r.emit(&mut out).unwrap();
        assert_eq!(out, PATH);
        let mut buf = [0u8; 68];
        buf[..4].copy_from_slice(&PATH[..4]);
        let mut v = ScionPath::new_unchecked(&mut buf[..]);
        for (i, f) in r.infos().iter().enumerate() {
            v.set_info(i, f).unwrap();
        }
        for (j, h) in r.hops().iter().enumerate() {
            v.set_hop(j, h).unwrap();
        }
        assert_eq!(buf, PATH);
    }

    #[test]
    fn segment_arithmetic_and_increment() {
        let mut m = ScionPath::new_checked(&PATH[..]).unwrap().meta();
        assert!(!m.is_xover());
        m.increment().unwrap();
        assert!(m.is_xover());
        assert_eq!((m.curr_inf, m.curr_hf), (0, 1));
        m.increment().unwrap();
        assert_eq!((m.curr_inf, m.curr_hf), (1, 2));
        assert!(m.is_first_hop_of_segment());
        m.increment().unwrap();
        assert!(m.is_last_hop());
        assert!(m.increment().is_err());
    }

    #[test]
    fn reversal() {
        let mut buf = PATH;
        buf[0] = 0x01; // CurrHF 1
        let mut v = ScionPath::new_checked(&mut buf[..]).unwrap();
        v.reverse().unwrap();
        let m = v.meta();
        assert_eq!((m.curr_inf, m.curr_hf, m.seg_len), (1, 2, [2, 2, 0]));
        let i0 = v.info(0).unwrap();
        assert!(!i0.cons_dir);
        assert_eq!(i0.seg_id, 0x0222);
        assert_eq!(v.hop(0).unwrap().cons_ingress, 1);
        v.reverse().unwrap();
        let mut orig = PATH;
        orig[0] = 0x01;
        assert_eq!(buf, orig);
    }

    #[test]
    fn meta_rules() {
        let bad = |w: u32| PathMeta::from_u32(w).validate().is_err();
        assert!(bad(0)); // no hops
        assert!(bad(0x0000_0042)); // Seg0Len 0, Seg1Len 1, Seg2Len 2
        assert!(bad(0x0000_0fff)); // 0, 63, 63: zero before non-zero
        assert!(bad(0x0003_f03f | 0x0000_0fc0)); // 63 + 63 + 63 hops > 64
        assert!(bad(0x8000_1000)); // CurrINF 2 with one segment
        assert!(bad(0x0200_2000)); // CurrHF 2 with 2 hops
        assert!(!bad(0x0000_2000));
        for cut in 0..PATH.len() {
            assert!(ScionPath::new_checked(&PATH[..cut]).is_err());
        }
    }

    #[test]
    fn fields_wider_than_their_bits_are_refused() {
        let seg64 = PathMeta {
            seg_len: [64, 0, 0],
            ..Default::default()
        };
        let cases = [
            (seg64, "SegLen"),
            (
                PathMeta {
                    seg_len: [0, 0x40, 0],
                    ..Default::default()
                },
                "SegLen",
            ),
            (
                PathMeta {
                    seg_len: [1, 0, 0],
                    reserved: 0x40,
                    ..Default::default()
                },
                "RSV",
            ),
        ];
        for (meta, field) in cases {
            assert_eq!(meta.validate(), Err(Error::invalid(Layer::PathMeta, field)));
            let r = ScionPathRepr {
                meta,
                infos: [InfoField::default(); MAX_INFOS],
                hops: [HopField::default(); MAX_HOPS],
            };
            let mut b = [0xa5u8; 4 + 3 * INFO_LEN + 130 * HOP_LEN];
            assert!(r.emit(&mut b).is_err());
            assert!(b.iter().all(|&x| x == 0xa5));
            let e = super::super::EpicPathRepr {
                epic_ts: 1,
                counter: 2,
                phvf: [3; 4],
                lhvf: [4; 4],
                scion: r,
            };
            assert!(e.emit(&mut b).is_err());
            assert!(b.iter().all(|&x| x == 0xa5), "EPIC {meta:?}");
        }
        // The widest valid values still emit and parse back.
        let meta = PathMeta {
            curr_inf: 2,
            curr_hf: 63,
            reserved: 0x3f,
            seg_len: [62, 1, 1],
        };
        let r = ScionPathRepr {
            meta,
            infos: [InfoField::default(); MAX_INFOS],
            hops: [HopField::default(); MAX_HOPS],
        };
        let mut b = [0u8; 4 + 3 * INFO_LEN + 64 * HOP_LEN];
        r.emit(&mut b).unwrap();
        assert_eq!(ScionPathRepr::parse(&b).unwrap(), r);
    }

    #[test]
    fn mac_input_layout() {
        let h = HopField {
            exp_time: 63,
            cons_ingress: 1,
            cons_egress: 2,
            ..Default::default()
        };
        let m = h.mac_input(0x1101, 1_704_067_200);
        assert_eq!(
            m,
            [
                0, 0, 0x11, 0x01, 0x65, 0x92, 0x00, 0x80, 0, 0x3f, 0, 1, 0, 2, 0, 0
            ]
        );
        assert_eq!(h.expiry_unix_ns(0), 64 * 337_500_000_000);
    }
}
