//! SCMP, the SCION control message protocol: Type | Code | Checksum | type-specific block.

use crate::addr::IsdAsn;
use crate::bytes::{read_u16, read_u64, write_u16, write_u64};
use crate::checksum;
use crate::error::{Error, Layer, Result, need};
use crate::scion::ScionHeader;

/// SCMP header length (type, code, checksum).
pub const HEADER_LEN: usize = 4;
/// Protocol number of SCMP.
pub const PROTOCOL: u8 = 202;
/// Largest SCMP error packet (SCION header + SCMP + quote).
pub const MAX_ERROR_PACKET: usize = 1232;

/// SCMP message type numbers.
pub mod msg_type {
    /// Destination Unreachable.
    pub const DEST_UNREACHABLE: u8 = 1;
    /// Packet Too Big.
    pub const PACKET_TOO_BIG: u8 = 2;
    /// Parameter Problem.
    pub const PARAMETER_PROBLEM: u8 = 4;
    /// External Interface Down.
    pub const EXTERNAL_INTERFACE_DOWN: u8 = 5;
    /// Internal Connectivity Down.
    pub const INTERNAL_CONNECTIVITY_DOWN: u8 = 6;
    /// Echo Request.
    pub const ECHO_REQUEST: u8 = 128;
    /// Echo Reply.
    pub const ECHO_REPLY: u8 = 129;
    /// Traceroute Request.
    pub const TRACEROUTE_REQUEST: u8 = 130;
    /// Traceroute Reply.
    pub const TRACEROUTE_REPLY: u8 = 131;
}

/// Parameter Problem codes (the SCMP specification's names; the wire value in brackets).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ParamProblemCode {
    /// (0) A header field is erroneous; the pointer names it.
    ErroneousHeaderField,
    /// (1) Unknown NextHdr type.
    UnknownNextHdr,
    /// (16) Invalid common header.
    InvalidCommonHeader,
    /// (17) Unknown SCION version.
    UnknownScionVersion,
    /// (18) FlowID required but zero.
    FlowIdRequired,
    /// (19) Invalid packet size (lengths disagree with the packet).
    InvalidPacketSize,
    /// (20) Unknown path type.
    UnknownPathType,
    /// (21) Unknown address format (address type/length).
    UnknownAddressFormat,
    /// (32) Invalid address header.
    InvalidAddressHeader,
    /// (33) Invalid source address.
    InvalidSourceAddress,
    /// (34) Invalid destination address.
    InvalidDestinationAddress,
    /// (35) Non-local delivery: the destination is not in this AS.
    NonLocalDelivery,
    /// (48) Invalid path.
    InvalidPath,
    /// (49) Unknown ConsIngress interface in the current hop field.
    UnknownHopFieldIngress,
    /// (50) Unknown ConsEgress interface in the current hop field.
    UnknownHopFieldEgress,
    /// (51) Invalid hop field MAC.
    InvalidHopFieldMac,
    /// (52) Path expired.
    PathExpired,
    /// (53) Invalid segment change.
    InvalidSegmentChange,
    /// (64) Invalid extension header.
    InvalidExtensionHeader,
    /// (65) Unknown hop-by-hop option.
    UnknownHbhOption,
    /// (66) Unknown end-to-end option.
    UnknownE2eOption,
    /// A code this crate does not name. [`From<u8>`] never gives it for a named code, and
    /// [`ScmpRepr::emit`] refuses it with one.
    Unknown(u8),
}

const PARAM_CODES: [(u8, ParamProblemCode); 21] = [
    (0, ParamProblemCode::ErroneousHeaderField),
    (1, ParamProblemCode::UnknownNextHdr),
    (16, ParamProblemCode::InvalidCommonHeader),
    (17, ParamProblemCode::UnknownScionVersion),
    (18, ParamProblemCode::FlowIdRequired),
    (19, ParamProblemCode::InvalidPacketSize),
    (20, ParamProblemCode::UnknownPathType),
    (21, ParamProblemCode::UnknownAddressFormat),
    (32, ParamProblemCode::InvalidAddressHeader),
    (33, ParamProblemCode::InvalidSourceAddress),
    (34, ParamProblemCode::InvalidDestinationAddress),
    (35, ParamProblemCode::NonLocalDelivery),
    (48, ParamProblemCode::InvalidPath),
    (49, ParamProblemCode::UnknownHopFieldIngress),
    (50, ParamProblemCode::UnknownHopFieldEgress),
    (51, ParamProblemCode::InvalidHopFieldMac),
    (52, ParamProblemCode::PathExpired),
    (53, ParamProblemCode::InvalidSegmentChange),
    (64, ParamProblemCode::InvalidExtensionHeader),
    (65, ParamProblemCode::UnknownHbhOption),
    (66, ParamProblemCode::UnknownE2eOption),
];

impl From<u8> for ParamProblemCode {
    fn from(v: u8) -> Self {
        PARAM_CODES
            .iter()
            .find(|(c, _)| *c == v)
            .map_or(ParamProblemCode::Unknown(v), |p| p.1)
    }
}

impl From<ParamProblemCode> for u8 {
    fn from(v: ParamProblemCode) -> u8 {
        if let ParamProblemCode::Unknown(c) = v {
            return c;
        }
        PARAM_CODES.iter().find(|(_, p)| *p == v).map_or(0, |p| p.0)
    }
}

/// View of an SCMP message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScmpPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> ScmpPacket<T> {
    /// Wraps `buffer` without checks.
    pub const fn new_unchecked(buffer: T) -> Self {
        ScmpPacket { buffer }
    }
    /// Wraps `buffer` and runs [`Self::check_len`].
    pub fn new_checked(buffer: T) -> Result<Self> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }
    /// Checks the 4-byte header and the fixed block of known types.
    pub fn check_len(&self) -> Result<()> {
        let b = self.buffer.as_ref();
        need(Layer::Scmp, b, HEADER_LEN)?;
        need(Layer::Scmp, b, HEADER_LEN + block_len(self.msg_type()))
    }
    /// Gives the buffer back.
    pub fn into_inner(self) -> T {
        self.buffer
    }
    /// Type.
    pub fn msg_type(&self) -> u8 {
        self.buffer.as_ref()[0]
    }
    /// Code.
    pub fn code(&self) -> u8 {
        self.buffer.as_ref()[1]
    }
    /// Checksum field.
    pub fn checksum(&self) -> u16 {
        read_u16(self.buffer.as_ref(), 2)
    }
    /// Whether this is an error message (type < 128).
    pub fn is_error(&self) -> bool {
        self.msg_type() < 128
    }
    /// Everything after the 4-byte header.
    pub fn body(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..]
    }
    /// Whether the checksum is right for a packet with SCION header `hdr` (the whole buffer is
    /// the SCMP message).
    pub fn verify_checksum<H: AsRef<[u8]>>(&self, hdr: &ScionHeader<H>) -> bool {
        checksum::compute(hdr, PROTOCOL, self.buffer.as_ref(), 2) == self.checksum()
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> ScmpPacket<T> {
    /// Sets the type.
    pub fn set_msg_type(&mut self, v: u8) {
        self.buffer.as_mut()[0] = v;
    }
    /// Sets the code.
    pub fn set_code(&mut self, v: u8) {
        self.buffer.as_mut()[1] = v;
    }
    /// Sets the checksum field.
    pub fn set_checksum(&mut self, v: u16) {
        write_u16(self.buffer.as_mut(), 2, v);
    }
    /// Computes and writes the checksum (the whole buffer is the message).
    pub fn fill_checksum<H: AsRef<[u8]>>(&mut self, hdr: &ScionHeader<H>) {
        let c = checksum::compute(hdr, PROTOCOL, self.buffer.as_ref(), 2);
        self.set_checksum(c);
    }
}

/// Length of the fixed type-specific block of `t` (0 for unknown types).
pub const fn block_len(t: u8) -> usize {
    match t {
        msg_type::DEST_UNREACHABLE | msg_type::PACKET_TOO_BIG | msg_type::PARAMETER_PROBLEM => 4,
        msg_type::EXTERNAL_INTERFACE_DOWN => 16,
        msg_type::INTERNAL_CONNECTIVITY_DOWN => 24,
        msg_type::ECHO_REQUEST | msg_type::ECHO_REPLY => 4,
        msg_type::TRACEROUTE_REQUEST | msg_type::TRACEROUTE_REPLY => 20,
        _ => 0,
    }
}

/// An SCMP message with its type-specific fields. `quote`/`data` borrow the rest of the
/// message.
///
/// Every field of the message is kept except the checksum and the reserved bytes of the
/// type-specific block (emitted as zero), so `parse(emit(x)) == x` for every `x` that emits.
/// The Code of types that define none is kept as it came (`code`, 0 on the wire normally).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScmpRepr<'a> {
    /// Destination Unreachable (codes 0-6).
    DestinationUnreachable {
        /// Code.
        code: u8,
        /// Quoted offending packet.
        quote: &'a [u8],
    },
    /// Packet Too Big.
    PacketTooBig {
        /// Code (0).
        code: u8,
        /// MTU of the link the packet did not fit.
        mtu: u16,
        /// Quoted offending packet.
        quote: &'a [u8],
    },
    /// Parameter Problem.
    ParameterProblem {
        /// Code.
        code: ParamProblemCode,
        /// Byte offset of the problem in the offending packet.
        pointer: u16,
        /// Quoted offending packet.
        quote: &'a [u8],
    },
    /// External Interface Down.
    ExternalInterfaceDown {
        /// Code (0).
        code: u8,
        /// ISD-AS of the router.
        ia: IsdAsn,
        /// Interface that is down.
        interface: u64,
        /// Quoted offending packet.
        quote: &'a [u8],
    },
    /// Internal Connectivity Down.
    InternalConnectivityDown {
        /// Code (0).
        code: u8,
        /// ISD-AS of the router.
        ia: IsdAsn,
        /// Ingress interface.
        ingress: u64,
        /// Egress interface.
        egress: u64,
        /// Quoted offending packet.
        quote: &'a [u8],
    },
    /// Echo Request or Reply.
    Echo {
        /// true for a reply.
        reply: bool,
        /// Code (0).
        code: u8,
        /// Identifier.
        id: u16,
        /// Sequence number.
        seq: u16,
        /// Data.
        data: &'a [u8],
    },
    /// Traceroute Request or Reply.
    Traceroute {
        /// true for a reply.
        reply: bool,
        /// Code (0).
        code: u8,
        /// Identifier.
        id: u16,
        /// Sequence number.
        seq: u16,
        /// ISD-AS of the replying router.
        ia: IsdAsn,
        /// Interface of the replying router.
        interface: u64,
        /// Bytes after the 20-byte block (none in a well-formed message; kept, not dropped).
        data: &'a [u8],
    },
    /// A type without a variant of its own, kept raw. [`Self::emit`] refuses the types that
    /// have one (every type with a [`block_len`] above 0).
    Other {
        /// Type.
        msg_type: u8,
        /// Code.
        code: u8,
        /// Everything after the 4-byte header.
        body: &'a [u8],
    },
}

impl<'a> ScmpRepr<'a> {
    /// Parses a message (its checksum is not checked: see `verify_checksum`).
    pub fn parse(b: &'a [u8]) -> Result<Self> {
        let p = ScmpPacket::new_checked(b)?;
        let t = p.msg_type();
        let code = p.code();
        let body = &b[HEADER_LEN..];
        let rest = &body[block_len(t)..];
        Ok(match t {
            msg_type::DEST_UNREACHABLE => ScmpRepr::DestinationUnreachable { code, quote: rest },
            msg_type::PACKET_TOO_BIG => ScmpRepr::PacketTooBig {
                code,
                mtu: read_u16(body, 2),
                quote: rest,
            },
            msg_type::PARAMETER_PROBLEM => ScmpRepr::ParameterProblem {
                code: code.into(),
                pointer: read_u16(body, 2),
                quote: rest,
            },
            msg_type::EXTERNAL_INTERFACE_DOWN => ScmpRepr::ExternalInterfaceDown {
                code,
                ia: IsdAsn::from_u64(read_u64(body, 0)),
                interface: read_u64(body, 8),
                quote: rest,
            },
            msg_type::INTERNAL_CONNECTIVITY_DOWN => ScmpRepr::InternalConnectivityDown {
                code,
                ia: IsdAsn::from_u64(read_u64(body, 0)),
                ingress: read_u64(body, 8),
                egress: read_u64(body, 16),
                quote: rest,
            },
            msg_type::ECHO_REQUEST | msg_type::ECHO_REPLY => ScmpRepr::Echo {
                reply: t == msg_type::ECHO_REPLY,
                code,
                id: read_u16(body, 0),
                seq: read_u16(body, 2),
                data: rest,
            },
            msg_type::TRACEROUTE_REQUEST | msg_type::TRACEROUTE_REPLY => ScmpRepr::Traceroute {
                reply: t == msg_type::TRACEROUTE_REPLY,
                code,
                id: read_u16(body, 0),
                seq: read_u16(body, 2),
                ia: IsdAsn::from_u64(read_u64(body, 4)),
                interface: read_u64(body, 12),
                data: rest,
            },
            _ => ScmpRepr::Other {
                msg_type: t,
                code,
                body,
            },
        })
    }

    /// Type and code.
    pub fn type_code(&self) -> (u8, u8) {
        match *self {
            ScmpRepr::DestinationUnreachable { code, .. } => (msg_type::DEST_UNREACHABLE, code),
            ScmpRepr::PacketTooBig { code, .. } => (msg_type::PACKET_TOO_BIG, code),
            ScmpRepr::ParameterProblem { code, .. } => (msg_type::PARAMETER_PROBLEM, code.into()),
            ScmpRepr::ExternalInterfaceDown { code, .. } => {
                (msg_type::EXTERNAL_INTERFACE_DOWN, code)
            }
            ScmpRepr::InternalConnectivityDown { code, .. } => {
                (msg_type::INTERNAL_CONNECTIVITY_DOWN, code)
            }
            ScmpRepr::Echo { reply, code, .. } => (
                if reply {
                    msg_type::ECHO_REPLY
                } else {
                    msg_type::ECHO_REQUEST
                },
                code,
            ),
            ScmpRepr::Traceroute { reply, code, .. } => (
                if reply {
                    msg_type::TRACEROUTE_REPLY
                } else {
                    msg_type::TRACEROUTE_REQUEST
                },
                code,
            ),
            ScmpRepr::Other { msg_type, code, .. } => (msg_type, code),
        }
    }

    fn tail(&self) -> &'a [u8] {
        match *self {
            ScmpRepr::DestinationUnreachable { quote, .. }
            | ScmpRepr::PacketTooBig { quote, .. }
            | ScmpRepr::ParameterProblem { quote, .. }
            | ScmpRepr::ExternalInterfaceDown { quote, .. }
            | ScmpRepr::InternalConnectivityDown { quote, .. } => quote,
            ScmpRepr::Echo { data, .. } | ScmpRepr::Traceroute { data, .. } => data,
            ScmpRepr::Other { body, .. } => body,
        }
    }

    /// Bytes of the whole message.
    pub fn buffer_len(&self) -> usize {
        match *self {
            ScmpRepr::Other { body, .. } => HEADER_LEN + body.len(),
            _ => HEADER_LEN + block_len(self.type_code().0) + self.tail().len(),
        }
    }

    /// Checks what [`Self::emit`] refuses: [`ScmpRepr::Other`] with a type that has its own
    /// variant (it would parse back as that variant) and a Parameter Problem
    /// [`ParamProblemCode::Unknown`] holding a code that has a name (it would parse back as
    /// the named code).
    pub fn validate(&self) -> Result<()> {
        match *self {
            ScmpRepr::Other { msg_type, .. } if block_len(msg_type) != 0 => {
                Err(Error::invalid(Layer::Scmp, "Type"))
            }
            ScmpRepr::ParameterProblem {
                code: ParamProblemCode::Unknown(c),
                ..
            } if !matches!(ParamProblemCode::from(c), ParamProblemCode::Unknown(_)) => {
                Err(Error::invalid(Layer::Scmp, "Code"))
            }
            _ => Ok(()),
        }
    }

    /// Writes the message to the start of `b` with a zero checksum (fill it afterwards with
    /// [`ScmpPacket::fill_checksum`]). Fails, writing nothing, if [`Self::validate`] does or
    /// `b` is shorter than [`Self::buffer_len`].
    pub fn emit(&self, b: &mut [u8]) -> Result<()> {
        self.validate()?;
        let len = self.buffer_len();
        need(Layer::Scmp, b, len)?;
        let (t, code) = self.type_code();
        b[0] = t;
        b[1] = code;
        write_u16(b, 2, 0);
        let body = &mut b[HEADER_LEN..len];
        match *self {
            ScmpRepr::DestinationUnreachable { .. } => body[..4].fill(0),
            ScmpRepr::PacketTooBig { mtu, .. } => {
                write_u16(body, 0, 0);
                write_u16(body, 2, mtu);
            }
            ScmpRepr::ParameterProblem { pointer, .. } => {
                write_u16(body, 0, 0);
                write_u16(body, 2, pointer);
            }
            ScmpRepr::ExternalInterfaceDown { ia, interface, .. } => {
                write_u64(body, 0, ia.to_u64());
                write_u64(body, 8, interface);
            }
            ScmpRepr::InternalConnectivityDown {
                ia,
                ingress,
                egress,
                ..
            } => {
                write_u64(body, 0, ia.to_u64());
                write_u64(body, 8, ingress);
                write_u64(body, 16, egress);
            }
            ScmpRepr::Echo { id, seq, .. } => {
                write_u16(body, 0, id);
                write_u16(body, 2, seq);
            }
            ScmpRepr::Traceroute {
                id,
                seq,
                ia,
                interface,
                ..
            } => {
                write_u16(body, 0, id);
                write_u16(body, 2, seq);
                write_u64(body, 4, ia.to_u64());
                write_u64(body, 12, interface);
            }
            ScmpRepr::Other { .. } => {}
        }
        // `len` is exactly header, block and tail (`buffer_len`), so the tail fills the rest.
        body[block_len(t)..].copy_from_slice(self.tail());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameter_problem_round_trip() {
        let quote = [0xffu8; 18];
        let r = ScmpRepr::ParameterProblem {
            code: ParamProblemCode::InvalidHopFieldMac,
            pointer: 0x58,
            quote: &quote,
        };
        let mut buf = [0u8; 26];
        r.emit(&mut buf).unwrap();
        assert_eq!(&buf[..8], &[4, 51, 0, 0, 0, 0, 0, 0x58]);
        assert_eq!(ScmpRepr::parse(&buf).unwrap(), r);
        assert_eq!(u8::from(ParamProblemCode::from(77)), 77);
        for (c, p) in PARAM_CODES {
            assert_eq!(u8::from(p), c);
            assert_eq!(ParamProblemCode::from(c), p);
        }
    }

    #[test]
    fn traceroute_and_truncation() {
        let r = ScmpRepr::Traceroute {
            reply: true,
            code: 0,
            id: 7,
            seq: 9,
            ia: IsdAsn::from_u64(0x0001_ff00_0000_0110),
            interface: 3,
            data: &[],
        };
        let mut buf = [0u8; 24];
        r.emit(&mut buf).unwrap();
        assert_eq!(ScmpRepr::parse(&buf).unwrap(), r);
        for cut in 0..24 {
            assert!(ScmpRepr::parse(&buf[..cut]).is_err());
        }
        assert!(r.emit(&mut [0u8; 23]).is_err());
    }

    #[test]
    fn other_with_a_type_that_has_a_variant_is_refused() {
        let body = [1u8, 2, 3, 4];
        for t in [1, 2, 4, 5, 6, 128, 129, 130, 131] {
            let r = ScmpRepr::Other {
                msg_type: t,
                code: 0,
                body: &body,
            };
            let mut b = [0xeeu8; 32];
            assert_eq!(r.emit(&mut b), Err(Error::invalid(Layer::Scmp, "Type")));
            assert_eq!(b, [0xee; 32], "type {t}");
        }
        // A type without a variant is written as it is and parses back.
        let r = ScmpRepr::Other {
            msg_type: 200,
            code: 3,
            body: &body,
        };
        let mut b = [0xeeu8; 8];
        assert_eq!(r.buffer_len(), 8);
        r.emit(&mut b).unwrap();
        assert_eq!(b, [200, 3, 0, 0, 1, 2, 3, 4]);
        assert_eq!(ScmpRepr::parse(&b).unwrap(), r);
        // So is a Parameter Problem `Unknown` holding a named code.
        let r = ScmpRepr::ParameterProblem {
            code: ParamProblemCode::Unknown(51),
            pointer: 0,
            quote: &[],
        };
        let mut b = [0xeeu8; 8];
        assert_eq!(r.emit(&mut b), Err(Error::invalid(Layer::Scmp, "Code")));
        assert_eq!(b, [0xee; 8]);
    }

    #[test]
    fn code_and_trailing_bytes_are_kept() {
        // Packet Too Big with code 7 and reserved bytes aabb: the code survives, the reserved
        // bytes are written as zero.
        let raw = [2u8, 7, 0, 0, 0xaa, 0xbb, 5, 0xdc];
        let p = ScmpRepr::parse(&raw).unwrap();
        assert_eq!(p.type_code(), (2, 7));
        let mut b = [0u8; 8];
        p.emit(&mut b).unwrap();
        assert_eq!(b, [2, 7, 0, 0, 0, 0, 5, 0xdc]);
        assert_eq!(ScmpRepr::parse(&b).unwrap(), p);
        let mut tr = [0u8; 27];
        tr[..4].copy_from_slice(&[130, 9, 0, 0]);
        tr[24..].copy_from_slice(&[1, 2, 3]);
        let mut ext = [0u8; 20];
        ext[..2].copy_from_slice(&[5, 4]);
        let mut internal = [0u8; 28];
        internal[..2].copy_from_slice(&[6, 2]);
        let echo = [129u8, 1, 0, 0, 0, 7, 0, 8, 0xff];
        for raw in [&tr[..], &ext[..], &internal[..], &echo[..]] {
            let p = ScmpRepr::parse(raw).unwrap();
            assert_eq!(p.type_code(), (raw[0], raw[1]));
            assert_eq!(p.buffer_len(), raw.len());
            let mut b = [0xeeu8; 28];
            p.emit(&mut b[..raw.len()]).unwrap();
            assert_eq!(&b[..raw.len()], raw);
            assert_eq!(ScmpRepr::parse(&b[..raw.len()]).unwrap(), p);
        }
    }
}
