//! SCION common header (12 bytes) and address header (ISD-ASes and host addresses).
//!
//! ```text
//!  0: Version(4) TrafficClass(8) FlowID(20)
//!  4: NextHdr(8) HdrLen(8, 4-byte units) PayloadLen(16)
//!  8: PathType(8) DT(2) DL(2) ST(2) SL(2) RSV(16)
//! 12: DstISD(16) DstAS(48)   20: SrcISD(16) SrcAS(48)
//! 28: DstHostAddr (4..16)    then SrcHostAddr (4..16), then the path
//! ```

use crate::addr::{AddrType, HostAddr, IsdAsn};
use crate::bytes::{read_u16, read_u32, read_u64, write_u16, write_u32, write_u64};
use crate::error::{Error, Layer, Result, need};

/// Length of the common header.
pub const COMMON_LEN: usize = 12;
/// Offset of the destination ISD-AS (SCMP pointers use it).
pub const DST_IA_OFFSET: usize = 12;
/// Offset of the source ISD-AS.
pub const SRC_IA_OFFSET: usize = 20;
/// Offset of the destination host address.
pub const DST_HOST_OFFSET: usize = 28;
/// Largest SCION header (HdrLen is 8 bits of 4-byte units).
pub const MAX_HEADER_LEN: usize = 1020;

/// A 20-bit SCION flow identifier.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct FlowId(u32);

impl FlowId {
    /// Largest flow ID.
    pub const MAX: u32 = 0xf_ffff;
    /// Wraps `v`, or `None` if it does not fit in 20 bits.
    pub const fn new(v: u32) -> Option<Self> {
        if v <= Self::MAX {
            Some(FlowId(v))
        } else {
            None
        }
    }
    /// Keeps the low 20 bits of `v`.
    pub const fn from_u20(v: u32) -> Self {
        FlowId(v & Self::MAX)
    }
    /// The value.
    pub const fn value(self) -> u32 {
        self.0
    }
}

/// Protocol numbers of the header after the SCION header or an extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NextHdr {
    /// TCP/SCION (6).
    Tcp,
    /// UDP/SCION (17).
    Udp,
    /// Hop-by-hop options (200).
    HopByHop,
    /// End-to-end options (201).
    EndToEnd,
    /// SCMP (202).
    Scmp,
    /// BFD/SCION (203).
    Bfd,
    /// Experimentation 253.
    Experiment1,
    /// Experimentation 254.
    Experiment2,
    /// Anything else.
    Unknown(u8),
}

impl From<u8> for NextHdr {
    fn from(v: u8) -> Self {
        match v {
            6 => NextHdr::Tcp,
            17 => NextHdr::Udp,
            200 => NextHdr::HopByHop,
            201 => NextHdr::EndToEnd,
            202 => NextHdr::Scmp,
            203 => NextHdr::Bfd,
            253 => NextHdr::Experiment1,
            254 => NextHdr::Experiment2,
            other => NextHdr::Unknown(other),
        }
    }
}

impl From<NextHdr> for u8 {
    fn from(v: NextHdr) -> u8 {
        match v {
            NextHdr::Tcp => 6,
            NextHdr::Udp => 17,
            NextHdr::HopByHop => 200,
            NextHdr::EndToEnd => 201,
            NextHdr::Scmp => 202,
            NextHdr::Bfd => 203,
            NextHdr::Experiment1 => 253,
            NextHdr::Experiment2 => 254,
            NextHdr::Unknown(o) => o,
        }
    }
}

/// SCION path types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PathType {
    /// Empty path (AS-internal).
    Empty,
    /// Standard SCION path.
    Scion,
    /// OneHop path.
    OneHop,
    /// EPIC-HP path.
    Epic,
    /// COLIBRI (reserved; not supported).
    Colibri,
    /// Anything else.
    Unknown(u8),
}

impl From<u8> for PathType {
    fn from(v: u8) -> Self {
        match v {
            0 => PathType::Empty,
            1 => PathType::Scion,
            2 => PathType::OneHop,
            3 => PathType::Epic,
            4 => PathType::Colibri,
            o => PathType::Unknown(o),
        }
    }
}

impl From<PathType> for u8 {
    fn from(v: PathType) -> u8 {
        match v {
            PathType::Empty => 0,
            PathType::Scion => 1,
            PathType::OneHop => 2,
            PathType::Epic => 3,
            PathType::Colibri => 4,
            PathType::Unknown(o) => o,
        }
    }
}

/// View of the SCION common and address header at the start of a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScionHeader<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> ScionHeader<T> {
    /// Wraps `buffer` without checks.
    pub const fn new_unchecked(buffer: T) -> Self {
        ScionHeader { buffer }
    }

    /// Wraps `buffer` and runs [`Self::check_len`].
    pub fn new_checked(buffer: T) -> Result<Self> {
        let h = Self::new_unchecked(buffer);
        h.check_len()?;
        Ok(h)
    }

    /// Checks that the buffer holds the common header, the address header and the whole
    /// `HdrLen * 4` bytes, and that HdrLen covers at least common + address header.
    pub fn check_len(&self) -> Result<()> {
        let b = self.buffer.as_ref();
        need(Layer::Common, b, COMMON_LEN)?;
        let addr_end = COMMON_LEN + self.address_len();
        need(Layer::Address, b, addr_end)?;
        let hl = self.header_len();
        if hl < addr_end {
            return Err(Error::invalid(Layer::Common, "HdrLen"));
        }
        need(Layer::Path, b, hl)
    }

    /// Gives the buffer back.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The underlying bytes.
    pub fn as_bytes(&self) -> &[u8] {
        self.buffer.as_ref()
    }

    fn b(&self) -> &[u8] {
        self.buffer.as_ref()
    }

    /// Version (4 bits; 0 today).
    pub fn version(&self) -> u8 {
        self.b()[0] >> 4
    }
    /// TrafficClass (DSCP + ECN).
    pub fn traffic_class(&self) -> u8 {
        ((read_u16(self.b(), 0) >> 4) & 0xff) as u8
    }
    /// FlowID (20 bits).
    pub fn flow_id(&self) -> FlowId {
        FlowId::from_u20(read_u32(self.b(), 0))
    }
    /// NextHdr protocol number.
    pub fn next_header(&self) -> NextHdr {
        self.b()[4].into()
    }
    /// Raw HdrLen field (4-byte units).
    pub fn hdr_len_raw(&self) -> u8 {
        self.b()[5]
    }
    /// Length of common + address + path header in bytes.
    pub fn header_len(&self) -> usize {
        usize::from(self.hdr_len_raw()) * 4
    }
    /// PayloadLen: bytes after the SCION header.
    pub fn payload_len(&self) -> u16 {
        read_u16(self.b(), 6)
    }
    /// Path type.
    pub fn path_type(&self) -> PathType {
        self.b()[8].into()
    }
    /// Destination address type/length.
    pub fn dst_addr_type(&self) -> AddrType {
        AddrType::from_nibble(self.b()[9] >> 4)
    }
    /// Source address type/length.
    pub fn src_addr_type(&self) -> AddrType {
        AddrType::from_nibble(self.b()[9] & 0xf)
    }
    /// Reserved 16 bits.
    pub fn reserved(&self) -> u16 {
        read_u16(self.b(), 10)
    }
    /// Destination ISD-AS.
    pub fn dst_ia(&self) -> IsdAsn {
        IsdAsn::from_u64(read_u64(self.b(), DST_IA_OFFSET))
    }
    /// Source ISD-AS.
    pub fn src_ia(&self) -> IsdAsn {
        IsdAsn::from_u64(read_u64(self.b(), SRC_IA_OFFSET))
    }
    /// Address header length: 16 + DL + SL bytes.
    pub fn address_len(&self) -> usize {
        16 + self.dst_addr_type().addr_len() + self.src_addr_type().addr_len()
    }
    /// Raw destination host address bytes.
    pub fn dst_host_bytes(&self) -> &[u8] {
        &self.b()[DST_HOST_OFFSET..DST_HOST_OFFSET + self.dst_addr_type().addr_len()]
    }
    /// Raw source host address bytes.
    pub fn src_host_bytes(&self) -> &[u8] {
        let at = DST_HOST_OFFSET + self.dst_addr_type().addr_len();
        &self.b()[at..at + self.src_addr_type().addr_len()]
    }
    /// Destination host address.
    pub fn dst_host(&self) -> HostAddr {
        // In bounds after check_len, so parse cannot fail.
        HostAddr::parse(self.dst_addr_type(), self.dst_host_bytes())
            .unwrap_or(HostAddr::Svc(crate::addr::Svc::NONE))
    }
    /// Source host address.
    pub fn src_host(&self) -> HostAddr {
        HostAddr::parse(self.src_addr_type(), self.src_host_bytes())
            .unwrap_or(HostAddr::Svc(crate::addr::Svc::NONE))
    }
    /// Offset of the path header.
    pub fn path_offset(&self) -> usize {
        COMMON_LEN + self.address_len()
    }
    /// The path bytes (`path_offset..header_len`).
    pub fn path_bytes(&self) -> &[u8] {
        &self.b()[self.path_offset()..self.header_len()]
    }
    /// The bytes after the SCION header (as many as the buffer holds).
    pub fn payload(&self) -> &[u8] {
        &self.b()[self.header_len()..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> ScionHeader<T> {
    fn bm(&mut self) -> &mut [u8] {
        self.buffer.as_mut()
    }
    /// Sets Version.
    pub fn set_version(&mut self, v: u8) {
        let b = self.bm();
        b[0] = (b[0] & 0x0f) | (v << 4);
    }
    /// Sets TrafficClass.
    pub fn set_traffic_class(&mut self, tc: u8) {
        let w = read_u32(self.b(), 0);
        let w = (w & 0xf00f_ffff) | (u32::from(tc) << 20);
        write_u32(self.bm(), 0, w);
    }
    /// Sets FlowID.
    pub fn set_flow_id(&mut self, f: FlowId) {
        let w = read_u32(self.b(), 0);
        write_u32(self.bm(), 0, (w & 0xfff0_0000) | f.value());
    }
    /// Sets NextHdr.
    pub fn set_next_header(&mut self, n: NextHdr) {
        self.bm()[4] = n.into();
    }
    /// Sets the raw HdrLen (4-byte units).
    pub fn set_hdr_len_raw(&mut self, v: u8) {
        self.bm()[5] = v;
    }
    /// Sets PayloadLen.
    pub fn set_payload_len(&mut self, v: u16) {
        write_u16(self.bm(), 6, v);
    }
    /// Sets the path type.
    pub fn set_path_type(&mut self, p: PathType) {
        self.bm()[8] = p.into();
    }
    /// Sets both address types (changes the layout: write addresses afterwards).
    pub fn set_addr_types(&mut self, dst: AddrType, src: AddrType) {
        self.bm()[9] = (dst.nibble() << 4) | src.nibble();
    }
    /// Sets the reserved field.
    pub fn set_reserved(&mut self, v: u16) {
        write_u16(self.bm(), 10, v);
    }
    /// Sets the destination ISD-AS.
    pub fn set_dst_ia(&mut self, ia: IsdAsn) {
        write_u64(self.bm(), DST_IA_OFFSET, ia.to_u64());
    }
    /// Sets the source ISD-AS.
    pub fn set_src_ia(&mut self, ia: IsdAsn) {
        write_u64(self.bm(), SRC_IA_OFFSET, ia.to_u64());
    }
    /// The path bytes, writable.
    pub fn path_bytes_mut(&mut self) -> &mut [u8] {
        let (s, e) = (self.path_offset(), self.header_len());
        &mut self.bm()[s..e]
    }
    /// The bytes after the SCION header, writable.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let s = self.header_len();
        &mut self.bm()[s..]
    }
}

/// Owned common + address header (the path is described separately).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScionRepr {
    /// Version (0).
    pub version: u8,
    /// TrafficClass.
    pub traffic_class: u8,
    /// FlowID.
    pub flow_id: FlowId,
    /// Next header.
    pub next_header: NextHdr,
    /// Path type.
    pub path_type: PathType,
    /// Length of the path header in bytes (multiple of 4).
    pub path_len: usize,
    /// PayloadLen.
    pub payload_len: u16,
    /// Destination ISD-AS.
    pub dst_ia: IsdAsn,
    /// Source ISD-AS.
    pub src_ia: IsdAsn,
    /// Destination host.
    pub dst_host: HostAddr,
    /// Source host.
    pub src_host: HostAddr,
}

impl ScionRepr {
    /// Reads a checked header.
    pub fn parse<T: AsRef<[u8]>>(h: &ScionHeader<T>) -> Result<Self> {
        h.check_len()?;
        Ok(ScionRepr {
            version: h.version(),
            traffic_class: h.traffic_class(),
            flow_id: h.flow_id(),
            next_header: h.next_header(),
            path_type: h.path_type(),
            path_len: h.header_len() - h.path_offset(),
            payload_len: h.payload_len(),
            dst_ia: h.dst_ia(),
            src_ia: h.src_ia(),
            dst_host: h.dst_host(),
            src_host: h.src_host(),
        })
    }

    /// Common + address header length.
    pub const fn address_end(&self) -> usize {
        COMMON_LEN + 16 + self.dst_host.len() + self.src_host.len()
    }

    /// Whole SCION header length including the path (saturating at `usize::MAX` for an
    /// absurd `path_len`, which [`Self::emit`] then refuses).
    pub const fn header_len(&self) -> usize {
        self.address_end().saturating_add(self.path_len)
    }

    /// Bytes written by [`Self::emit`] (common + address header; the path is emitted
    /// separately at `address_end()`).
    pub const fn buffer_len(&self) -> usize {
        self.address_end()
    }

    /// Writes common and address header to the start of `buf`. Fails if the total header
    /// length is not a multiple of 4 or above 1020 bytes, or the version is above 15.
    pub fn emit(&self, buf: &mut [u8]) -> Result<()> {
        let hl = self.header_len();
        if !hl.is_multiple_of(4) || hl > MAX_HEADER_LEN {
            return Err(Error::invalid(Layer::Common, "HdrLen"));
        }
        if self.version > 0xf {
            return Err(Error::invalid(Layer::Common, "Version"));
        }
        need(Layer::Common, buf, self.address_end())?;
        let mut h = ScionHeader::new_unchecked(&mut *buf);
        h.bm()[0] = 0;
        h.set_version(self.version);
        h.set_traffic_class(self.traffic_class);
        h.set_flow_id(self.flow_id);
        h.set_next_header(self.next_header);
        h.set_hdr_len_raw((hl / 4) as u8);
        h.set_payload_len(self.payload_len);
        h.set_path_type(self.path_type);
        h.set_addr_types(self.dst_host.addr_type(), self.src_host.addr_type());
        h.set_reserved(0);
        h.set_dst_ia(self.dst_ia);
        h.set_src_ia(self.src_ia);
        let d = self.dst_host.emit(&mut buf[DST_HOST_OFFSET..])?;
        self.src_host.emit(&mut buf[DST_HOST_OFFSET + d..])?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use core::net::{Ipv4Addr, Ipv6Addr};
    use std::string::ToString;

    // Common + address header of slayers_golden/scion-udp.bin (TC 0xb8, FlowID 0xdead,
    // NextHdr UDP, HdrLen 29, PayloadLen 1032, SCION path, IPv6 dst, IPv4 src).
    const HDR: [u8; 48] = [
        0x0b, 0x80, 0xde, 0xad, 0x11, 0x1d, 0x04, 0x08, 0x01, 0x30, 0x00, 0x00, 0x00, 0x01, 0xff,
        0x00, 0x00, 0x00, 0x01, 0x11, 0x00, 0x02, 0xff, 0x00, 0x00, 0x00, 0x02, 0x22, 0x20, 0x01,
        0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x68, 10, 0, 0, 100,
    ];

    fn golden() -> [u8; 116] {
        let mut b = [0u8; 116];
        b[..48].copy_from_slice(&HDR);
        b
    }

    #[test]
    fn deconstruct() {
        let b = golden();
        let h = ScionHeader::new_checked(&b[..]).unwrap();
        assert_eq!(h.version(), 0);
        assert_eq!(h.traffic_class(), 0xb8);
        assert_eq!(h.flow_id().value(), 0xdead);
        assert_eq!(h.next_header(), NextHdr::Udp);
        assert_eq!(h.header_len(), 116);
        assert_eq!(h.payload_len(), 1032);
        assert_eq!(h.path_type(), PathType::Scion);
        assert_eq!(h.dst_ia().to_string(), "1-ff00:0:111");
        assert_eq!(h.src_ia().to_string(), "2-ff00:0:222");
        assert_eq!(
            h.dst_host(),
            HostAddr::V6("2001:db8::68".parse::<Ipv6Addr>().unwrap())
        );
        assert_eq!(h.src_host(), HostAddr::V4(Ipv4Addr::new(10, 0, 0, 100)));
        assert_eq!(h.path_offset(), 48);
        assert_eq!(h.path_bytes().len(), 68);
    }

    #[test]
    fn construct_parse_emit() {
        let b = golden();
        let repr = ScionRepr::parse(&ScionHeader::new_checked(&b[..]).unwrap()).unwrap();
        let mut out = [0x5au8; 48];
        repr.emit(&mut out).unwrap();
        assert_eq!(out, HDR);
        let mut buf = [0xffu8; 48];
        let mut h = ScionHeader::new_unchecked(&mut buf[..]);
        h.set_version(0);
        h.set_traffic_class(0xb8);
        h.set_flow_id(FlowId::new(0xdead).unwrap());
        h.set_next_header(NextHdr::Udp);
        h.set_hdr_len_raw(29);
        h.set_payload_len(1032);
        h.set_path_type(PathType::Scion);
        h.set_addr_types(AddrType::IPV6, AddrType::IPV4);
        h.set_reserved(0);
        h.set_dst_ia(repr.dst_ia);
        h.set_src_ia(repr.src_ia);
        repr.dst_host.emit(&mut buf[28..]).unwrap();
        repr.src_host.emit(&mut buf[44..]).unwrap();
        assert_eq!(buf, HDR);
    }

    #[test]
    fn huge_path_len_is_refused() {
        let b = golden();
        let mut repr = ScionRepr::parse(&ScionHeader::new_checked(&b[..]).unwrap()).unwrap();
        for path_len in [usize::MAX, usize::MAX - 47, 1024] {
            repr.path_len = path_len;
            let mut out = [0x5au8; 48];
            assert_eq!(
                repr.emit(&mut out),
                Err(Error::invalid(Layer::Common, "HdrLen"))
            );
            assert_eq!(out, [0x5a; 48]);
        }
        assert_eq!(repr.address_end(), 48);
    }

    #[test]
    fn length_checks() {
        let b = golden();
        for cut in 0..b.len() {
            assert!(ScionHeader::new_checked(&b[..cut]).is_err(), "cut {cut}");
        }
        let mut bad = golden();
        bad[5] = 5; // HdrLen 20 bytes < common + address header
        assert_eq!(
            ScionHeader::new_checked(&bad[..]).unwrap_err(),
            Error::invalid(Layer::Common, "HdrLen")
        );
    }
}
