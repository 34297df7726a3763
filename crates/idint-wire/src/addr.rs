//! SCION addressing: ISD, AS and ISD-AS numbers with their text forms, and host addresses
//! (IPv4, IPv6, service addresses) with the 4-bit address type/length code.

use core::fmt;
use core::net::{Ipv4Addr, Ipv6Addr};
use core::str::FromStr;

use crate::error::{Error, Layer, Result};

/// Isolation domain number (16 bits). Text form: decimal, e.g. `1`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Isd(pub u16);

impl fmt::Display for Isd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl FromStr for Isd {
    type Err = AddrParseError;
    fn from_str(s: &str) -> core::result::Result<Self, Self::Err> {
        parse_dec(s)
            .and_then(|v| u16::try_from(v).ok())
            .map(Isd)
            .ok_or(AddrParseError::Isd)
    }
}

/// AS number (48 bits).
///
/// Text form: decimal for BGP-compatible numbers (below 2^32), otherwise three colon-separated
/// 16-bit hex groups such as `ff00:0:110`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Asn(u64);

impl Asn {
    /// Largest valid AS number (48 bits).
    pub const MAX: u64 = (1 << 48) - 1;
    /// Largest AS number printed in decimal (BGP range).
    pub const MAX_BGP: u64 = u32::MAX as u64;

    /// Wraps `v`, or `None` if it does not fit in 48 bits.
    pub const fn new(v: u64) -> Option<Self> {
        if v <= Self::MAX { Some(Asn(v)) } else { None }
    }

    /// Wraps the low 48 bits of `v`.
    pub const fn from_u48(v: u64) -> Self {
        Asn(v & Self::MAX)
    }

    /// The number.
    pub const fn value(self) -> u64 {
        self.0
    }
}

impl fmt::Display for Asn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 <= Self::MAX_BGP {
            write!(f, "{}", self.0)
        } else {
            let v = self.0;
            write!(
                f,
                "{:x}:{:x}:{:x}",
                (v >> 32) & 0xffff,
                (v >> 16) & 0xffff,
                v & 0xffff
            )
        }
    }
}

impl FromStr for Asn {
    type Err = AddrParseError;
    fn from_str(s: &str) -> core::result::Result<Self, Self::Err> {
        if !s.contains(':') {
            return parse_dec(s)
                .filter(|&v| v <= Self::MAX_BGP)
                .map(Asn)
                .ok_or(AddrParseError::Asn);
        }
        let mut v = 0u64;
        let mut groups = 0;
        for g in s.split(':') {
            groups += 1;
            if groups > 3 || g.is_empty() || g.len() > 4 {
                return Err(AddrParseError::Asn);
            }
            let part = u16::from_str_radix(g, 16).map_err(|_| AddrParseError::Asn)?;
            if !g.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(AddrParseError::Asn);
            }
            v = (v << 16) | u64::from(part);
        }
        if groups != 3 {
            return Err(AddrParseError::Asn);
        }
        Ok(Asn(v))
    }
}

/// ISD-AS pair, as carried on the wire in one 64-bit word: ISD (16 bits) | AS (48 bits).
///
/// Text form `ISD-AS`, e.g. `1-ff00:0:110` or `64-2:0:9`.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct IsdAsn(u64);

impl IsdAsn {
    /// Wire size in bytes.
    pub const LEN: usize = 8;

    /// Builds an ISD-AS from its parts.
    pub const fn new(isd: Isd, asn: Asn) -> Self {
        IsdAsn(((isd.0 as u64) << 48) | asn.0)
    }

    /// Interprets the 64-bit wire word.
    pub const fn from_u64(v: u64) -> Self {
        IsdAsn(v)
    }

    /// The 64-bit wire word.
    pub const fn to_u64(self) -> u64 {
        self.0
    }

    /// The ISD part.
    pub const fn isd(self) -> Isd {
        Isd((self.0 >> 48) as u16)
    }

    /// The AS part.
    pub const fn asn(self) -> Asn {
        Asn(self.0 & Asn::MAX)
    }

    /// Reads the 8 wire bytes at the start of `b`.
    pub fn from_bytes(b: &[u8]) -> Result<Self> {
        crate::error::need(Layer::Address, b, Self::LEN)?;
        Ok(IsdAsn(crate::bytes::read_u64(b, 0)))
    }

    /// The 8 wire bytes.
    pub const fn to_bytes(self) -> [u8; 8] {
        self.0.to_be_bytes()
    }
}

impl fmt::Display for IsdAsn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.isd(), self.asn())
    }
}

impl fmt::Debug for IsdAsn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "IsdAsn({self})")
    }
}

impl FromStr for IsdAsn {
    type Err = AddrParseError;
    fn from_str(s: &str) -> core::result::Result<Self, Self::Err> {
        let (isd, asn) = s.split_once('-').ok_or(AddrParseError::IsdAsn)?;
        Ok(IsdAsn::new(isd.parse()?, asn.parse()?))
    }
}

/// Why a text ISD, AS, ISD-AS or service name did not parse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddrParseError {
    /// Not a decimal number in 0..=65535.
    Isd,
    /// Neither a decimal BGP AS number nor three 16-bit hex groups.
    Asn,
    /// Missing the `-` between ISD and AS.
    IsdAsn,
    /// Unknown service name.
    Svc,
}

impl fmt::Display for AddrParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            AddrParseError::Isd => "invalid ISD: expected a decimal number up to 65535",
            AddrParseError::Asn => {
                "invalid AS: expected decimal (< 2^32) or three hex groups like ff00:0:110"
            }
            AddrParseError::IsdAsn => "invalid ISD-AS: expected ISD-AS such as 1-ff00:0:110",
            AddrParseError::Svc => "invalid service address name",
        })
    }
}

impl core::error::Error for AddrParseError {}

fn parse_dec(s: &str) -> Option<u64> {
    if s.is_empty() || s.len() > 20 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// The 4-bit host address type/length code of the SCION address header: `T << 2 | L`, the
/// address being `4 * (L + 1)` bytes long.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AddrType(u8);

impl AddrType {
    /// IPv4 (T = 0, L = 0).
    pub const IPV4: AddrType = AddrType(0x0);
    /// IPv6 (T = 0, L = 3).
    pub const IPV6: AddrType = AddrType(0x3);
    /// Service address (T = 1, L = 0).
    pub const SVC: AddrType = AddrType(0x4);

    /// Wraps the low 4 bits of `nibble`.
    pub const fn from_nibble(nibble: u8) -> Self {
        AddrType(nibble & 0xf)
    }

    /// The 4-bit code.
    pub const fn nibble(self) -> u8 {
        self.0
    }

    /// The type part T (2 bits).
    pub const fn host_type(self) -> u8 {
        self.0 >> 2
    }

    /// The length code L (2 bits).
    pub const fn len_code(self) -> u8 {
        self.0 & 0x3
    }

    /// Address length in bytes: 4, 8, 12 or 16.
    pub const fn addr_len(self) -> usize {
        4 * (self.len_code() as usize + 1)
    }

    /// Whether this is one of the three interpretable types (IPv4, IPv6, SVC).
    pub const fn is_known(self) -> bool {
        matches!(self.0, 0x0 | 0x3 | 0x4)
    }
}

/// A SCION service address (anycast/multicast to an AS service).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Svc(pub u16);

impl Svc {
    /// Discovery service.
    pub const DS: Svc = Svc(0x0001);
    /// Control service.
    pub const CS: Svc = Svc(0x0002);
    /// Wildcard.
    pub const WILDCARD: Svc = Svc(0x0010);
    /// No service.
    pub const NONE: Svc = Svc(0xffff);
    /// Multicast flag bit.
    pub const MULTICAST: u16 = 0x8000;

    /// Whether the multicast bit is set (and this is not [`Svc::NONE`]).
    pub const fn is_multicast(self) -> bool {
        self.0 != 0xffff && self.0 & Self::MULTICAST != 0
    }

    /// The service with the multicast bit cleared.
    pub const fn base(self) -> Svc {
        if self.0 == 0xffff {
            self
        } else {
            Svc(self.0 & !Self::MULTICAST)
        }
    }
}

impl fmt::Display for Svc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self.base() {
            Svc::DS => "DS",
            Svc::CS => "CS",
            Svc::WILDCARD => "Wildcard",
            Svc::NONE => return f.write_str("None"),
            Svc(v) => return write!(f, "SVC({v:#06x})"),
        };
        f.write_str(name)?;
        if self.is_multicast() {
            f.write_str("_M")
        } else {
            Ok(())
        }
    }
}

impl FromStr for Svc {
    type Err = AddrParseError;
    fn from_str(s: &str) -> core::result::Result<Self, Self::Err> {
        let (base, multicast) = match s.strip_suffix("_M") {
            Some(b) => (b, true),
            None => (s, false),
        };
        let svc = match base {
            "DS" => Svc::DS,
            "CS" => Svc::CS,
            "Wildcard" => Svc::WILDCARD,
            "None" if !multicast => return Ok(Svc::NONE),
            _ => return Err(AddrParseError::Svc),
        };
        Ok(if multicast {
            Svc(svc.0 | Svc::MULTICAST)
        } else {
            svc
        })
    }
}

/// A host address of the SCION address header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HostAddr {
    /// IPv4 address.
    V4(Ipv4Addr),
    /// IPv6 address.
    V6(Ipv6Addr),
    /// Service address (2 bytes service number, 2 bytes zero on the wire).
    Svc(Svc),
    /// An address of a type this crate cannot interpret; kept as raw bytes so that packets
    /// carrying it still parse and re-emit unchanged.
    Other {
        /// Type/length code.
        addr_type: AddrType,
        /// Raw bytes; only the first `addr_type.addr_len()` are meaningful.
        raw: [u8; 16],
    },
}

impl HostAddr {
    /// Decodes an address of type `addr_type` from the first bytes of `b`.
    pub fn parse(addr_type: AddrType, b: &[u8]) -> Result<Self> {
        let len = addr_type.addr_len();
        crate::error::need(Layer::Address, b, len)?;
        Ok(match addr_type {
            AddrType::IPV4 => HostAddr::V4(Ipv4Addr::new(b[0], b[1], b[2], b[3])),
            AddrType::IPV6 => {
                let mut a = [0u8; 16];
                a.copy_from_slice(&b[..16]);
                HostAddr::V6(Ipv6Addr::from(a))
            }
            AddrType::SVC => HostAddr::Svc(Svc(crate::bytes::read_u16(b, 0))),
            _ => {
                let mut raw = [0u8; 16];
                raw[..len].copy_from_slice(&b[..len]);
                HostAddr::Other { addr_type, raw }
            }
        })
    }

    /// The address type/length code.
    pub const fn addr_type(&self) -> AddrType {
        match self {
            HostAddr::V4(_) => AddrType::IPV4,
            HostAddr::V6(_) => AddrType::IPV6,
            HostAddr::Svc(_) => AddrType::SVC,
            HostAddr::Other { addr_type, .. } => *addr_type,
        }
    }

    /// Wire length in bytes.
    pub const fn len(&self) -> usize {
        self.addr_type().addr_len()
    }

    /// Always false: every host address has at least 4 bytes (for clippy's `len` rule).
    pub const fn is_empty(&self) -> bool {
        false
    }

    /// Writes the wire bytes to the start of `b`, returning the number written.
    pub fn emit(&self, b: &mut [u8]) -> Result<usize> {
        let len = self.len();
        if b.len() < len {
            return Err(Error::truncated(Layer::Address, len, b.len()));
        }
        match self {
            HostAddr::V4(a) => b[..4].copy_from_slice(&a.octets()),
            HostAddr::V6(a) => b[..16].copy_from_slice(&a.octets()),
            HostAddr::Svc(s) => {
                crate::bytes::write_u16(b, 0, s.0);
                b[2..4].fill(0);
            }
            HostAddr::Other { raw, .. } => b[..len].copy_from_slice(&raw[..len]),
        }
        Ok(len)
    }

    /// The wire bytes in a fixed buffer, and how many of them are used.
    pub fn to_bytes(&self) -> ([u8; 16], usize) {
        let mut b = [0u8; 16];
        let n = self.emit(&mut b).unwrap_or(0);
        (b, n)
    }
}

impl From<Ipv4Addr> for HostAddr {
    fn from(a: Ipv4Addr) -> Self {
        HostAddr::V4(a)
    }
}

impl From<core::net::IpAddr> for HostAddr {
    fn from(a: core::net::IpAddr) -> Self {
        match a {
            core::net::IpAddr::V4(a) => HostAddr::V4(a),
            core::net::IpAddr::V6(a) => HostAddr::V6(a),
        }
    }
}

impl From<Ipv6Addr> for HostAddr {
    fn from(a: Ipv6Addr) -> Self {
        HostAddr::V6(a)
    }
}

impl fmt::Display for HostAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HostAddr::V4(a) => write!(f, "{a}"),
            HostAddr::V6(a) => write!(f, "{a}"),
            HostAddr::Svc(s) => write!(f, "{s}"),
            HostAddr::Other { addr_type, raw } => {
                write!(f, "unknown-type-{:#x}:", addr_type.nibble())?;
                for b in &raw[..addr_type.addr_len()] {
                    write!(f, "{b:02x}")?;
                }
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::string::ToString;

    #[test]
    fn isd_as_text_round_trip() {
        for s in [
            "1-ff00:0:110",
            "64-2:0:9",
            "2-ff00:0:222",
            "1-64496",
            "0-0",
            "65535-ffff:ffff:ffff",
        ] {
            let ia: IsdAsn = s.parse().unwrap();
            assert_eq!(ia.to_string(), s);
        }
        let ia: IsdAsn = "1-ff00:0:110".parse().unwrap();
        assert_eq!(ia.to_u64(), 0x0001_ff00_0000_0110);
        assert_eq!(ia.isd(), Isd(1));
        assert_eq!(ia.asn().value(), 0xff00_0000_0110);
        let ia: IsdAsn = "64-2:0:9".parse().unwrap();
        assert_eq!(ia.to_bytes(), [0, 64, 0, 2, 0, 0, 0, 9]);
        // A hex-group AS below 2^32 is printed in decimal, as SCION does.
        let ia: IsdAsn = "1-0:1:0".parse().unwrap();
        assert_eq!(ia.to_string(), "1-65536");
    }

    #[test]
    fn isd_as_text_rejects_garbage() {
        for s in [
            "",
            "1",
            "-1",
            "1-",
            "x-1",
            "1-ff00:0",
            "1-ff00:0:110:1",
            "1-10000:0:1",
            "1-4294967296",
            "65536-1",
            "1-ff00::110",
            "1-+1",
            "1-g:0:0",
        ] {
            assert!(s.parse::<IsdAsn>().is_err(), "{s} parsed");
        }
    }

    #[test]
    fn host_addr_wire_forms() {
        let v4 = HostAddr::parse(AddrType::IPV4, &[10, 0, 0, 1]).unwrap();
        assert_eq!(v4.to_string(), "10.0.0.1");
        let svc = HostAddr::parse(AddrType::SVC, &[0x80, 0x02, 0, 0]).unwrap();
        assert_eq!(svc, HostAddr::Svc(Svc(0x8002)));
        assert_eq!(svc.to_string(), "CS_M");
        assert_eq!("CS_M".parse::<Svc>().unwrap(), Svc(0x8002));
        let mut b = [0xffu8; 4];
        svc.emit(&mut b).unwrap();
        assert_eq!(b, [0x80, 0x02, 0, 0]);
        let other = HostAddr::parse(AddrType::from_nibble(0x1), &[1, 2, 3, 4, 5, 6, 7, 8]).unwrap();
        assert_eq!(other.len(), 8);
        let (bytes, n) = other.to_bytes();
        assert_eq!(&bytes[..n], &[1, 2, 3, 4, 5, 6, 7, 8]);
        assert!(HostAddr::parse(AddrType::IPV6, &[0; 15]).is_err());
    }
}
