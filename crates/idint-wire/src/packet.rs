//! A whole SCION packet parsed layer by layer, zero-copy: SCION header, typed path, optional
//! hop-by-hop and end-to-end extensions, and the upper layer.
//!
//! [`Packet::parse`] checks every length once; afterwards every view it hands out is in
//! bounds. It allocates nothing and is cheap enough for a router to call per packet.

use core::ops::Range;

use crate::error::{Error, Layer, Result};
use crate::ext::ExtHeader;
use crate::path::{EpicPath, ONEHOP_LEN, OneHopPath, ScionPath};
use crate::scion::{NextHdr, PathType, ScionHeader};
use crate::scmp::ScmpPacket;
use crate::udp::UdpPacket;

/// The path of a packet, as a view.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathView<'a> {
    /// Empty path.
    Empty,
    /// SCION path.
    Scion(ScionPath<&'a [u8]>),
    /// OneHop path.
    OneHop(OneHopPath),
    /// EPIC-HP path.
    Epic(EpicPath<&'a [u8]>),
}

/// The upper layer of a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum L4<'a> {
    /// SCION/UDP.
    Udp(UdpPacket<&'a [u8]>),
    /// SCMP.
    Scmp(ScmpPacket<&'a [u8]>),
    /// Any other protocol (TCP, BFD, unknown): the raw bytes.
    Other(NextHdr, &'a [u8]),
}

/// A parsed packet: views of every layer plus their byte ranges in the buffer.
#[derive(Debug, Clone, Copy)]
pub struct Packet<'a> {
    /// SCION common + address header (+ path bytes).
    pub header: ScionHeader<&'a [u8]>,
    /// The path.
    pub path: PathView<'a>,
    /// Hop-by-hop extension and its offset.
    pub hbh: Option<(usize, ExtHeader<&'a [u8]>)>,
    /// End-to-end extension and its offset.
    pub e2e: Option<(usize, ExtHeader<&'a [u8]>)>,
    /// Offset of the upper layer.
    pub l4_offset: usize,
    /// The upper layer.
    pub l4: L4<'a>,
    /// Bytes after `HdrLen*4 + PayloadLen` (ignored by SCION; reported for diagnostics).
    pub trailing: usize,
    /// Bytes PayloadLen announces beyond the end of the buffer (then the layers after the
    /// SCION header were parsed over the bytes present).
    pub missing: usize,
}

impl<'a> Packet<'a> {
    /// Parses `bytes` (the SCION packet, common header first).
    #[inline]
    pub fn parse(bytes: &'a [u8]) -> Result<Self> {
        let header = ScionHeader::new_checked(bytes)?;
        let hl = header.header_len();
        // A PayloadLen that disagrees with the buffer is reported, not rejected: a router must
        // still read such a packet to answer with SCMP 4/19.
        let declared_end = hl + usize::from(header.payload_len());
        let end = declared_end.min(bytes.len());
        let path_bytes = &bytes[header.path_offset()..hl];
        let path = match header.path_type() {
            PathType::Empty => PathView::Empty,
            PathType::Scion => PathView::Scion(ScionPath::new_checked(path_bytes)?),
            PathType::OneHop => {
                if path_bytes.len() < ONEHOP_LEN {
                    return Err(Error::truncated(
                        Layer::OneHop,
                        ONEHOP_LEN,
                        path_bytes.len(),
                    ));
                }
                PathView::OneHop(OneHopPath::parse(path_bytes)?)
            }
            PathType::Epic => PathView::Epic(EpicPath::new_checked(path_bytes)?),
            PathType::Colibri | PathType::Unknown(_) => {
                return Err(Error::Unsupported {
                    layer: Layer::Path,
                    field: "PathType",
                });
            }
        };
        let payload = &bytes[..end];
        let mut next = header.next_header();
        let mut off = hl;
        let mut hbh = None;
        let mut e2e = None;
        loop {
            let (layer, slot) = match next {
                NextHdr::HopByHop if hbh.is_none() && e2e.is_none() => (Layer::HopByHop, &mut hbh),
                NextHdr::EndToEnd if e2e.is_none() => (Layer::EndToEnd, &mut e2e),
                NextHdr::HopByHop | NextHdr::EndToEnd => {
                    return Err(Error::invalid(Layer::HopByHop, "NextHdr order"));
                }
                _ => break,
            };
            let h = ExtHeader::new_checked(&payload[off..], layer)?;
            let len = h.header_len();
            let h = ExtHeader::new_unchecked(&payload[off..off + len], layer);
            next = h.next_header().into();
            *slot = Some((off, h));
            off += len;
        }
        let l4_bytes = &payload[off..];
        let l4 = match next {
            NextHdr::Udp => L4::Udp(UdpPacket::new_checked(l4_bytes)?),
            NextHdr::Scmp => L4::Scmp(ScmpPacket::new_checked(l4_bytes)?),
            other => L4::Other(other, l4_bytes),
        };
        Ok(Packet {
            header,
            path,
            hbh,
            e2e,
            l4_offset: off,
            l4,
            trailing: bytes.len() - end,
            missing: declared_end - end,
        })
    }

    /// Whether PayloadLen equals the bytes after the SCION header exactly.
    pub fn payload_len_matches(&self) -> bool {
        self.trailing == 0 && self.missing == 0
    }

    /// The whole packet bytes (common header to the end of the payload).
    pub fn bytes(&self) -> &'a [u8] {
        let b: &'a [u8] = self.header.into_inner();
        &b[..b.len() - self.trailing]
    }

    /// The hop-by-hop option area's byte range in the buffer, if there is an HBH header.
    pub fn hbh_range(&self) -> Option<Range<usize>> {
        self.hbh.map(|(off, h)| off..off + h.header_len())
    }

    /// The L4 protocol (after any extension headers).
    pub fn l4_protocol(&self) -> NextHdr {
        match self.l4 {
            L4::Udp(_) => NextHdr::Udp,
            L4::Scmp(_) => NextHdr::Scmp,
            L4::Other(p, _) => p,
        }
    }

    /// The HBH header, if any.
    pub fn hop_by_hop(&self) -> Option<ExtHeader<&'a [u8]>> {
        self.hbh.map(|(_, h)| h)
    }

    /// The E2E header, if any.
    pub fn end_to_end(&self) -> Option<ExtHeader<&'a [u8]>> {
        self.e2e.map(|(_, h)| h)
    }

    /// Whether the HBH header carries an option of this type (e.g. ID-INT's 253).
    pub fn has_hbh_option(&self, opt_type: u8) -> bool {
        self.hop_by_hop()
            .is_some_and(|h| h.options().any(|o| o.is_ok_and(|o| o.opt_type == opt_type)))
    }
}
