//! SCION/UDP: SrcPort | DstPort | Length (header + data) | Checksum.

use crate::bytes::{read_u16, write_u16};
use crate::checksum;
use crate::error::{Error, Layer, Result, need};
use crate::scion::ScionHeader;

/// UDP header length.
pub const HEADER_LEN: usize = 8;
/// Protocol number of UDP/SCION.
pub const PROTOCOL: u8 = 17;

/// View of a UDP datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UdpPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> UdpPacket<T> {
    /// Wraps `buffer` without checks.
    pub const fn new_unchecked(buffer: T) -> Self {
        UdpPacket { buffer }
    }
    /// Wraps `buffer` and runs [`Self::check_len`].
    pub fn new_checked(buffer: T) -> Result<Self> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }
    /// Checks the header fits and Length is between 8 and the buffer length.
    pub fn check_len(&self) -> Result<()> {
        let b = self.buffer.as_ref();
        need(Layer::Udp, b, HEADER_LEN)?;
        let len = usize::from(self.len());
        if len < HEADER_LEN {
            return Err(Error::invalid(Layer::Udp, "Length"));
        }
        need(Layer::Udp, b, len)
    }
    /// Gives the buffer back.
    pub fn into_inner(self) -> T {
        self.buffer
    }
    /// Source port.
    pub fn src_port(&self) -> u16 {
        read_u16(self.buffer.as_ref(), 0)
    }
    /// Destination port.
    pub fn dst_port(&self) -> u16 {
        read_u16(self.buffer.as_ref(), 2)
    }
    /// Length field (header + data).
    pub fn len(&self) -> u16 {
        read_u16(self.buffer.as_ref(), 4)
    }
    /// Whether the datagram carries no data.
    pub fn is_empty(&self) -> bool {
        usize::from(self.len()) <= HEADER_LEN
    }
    /// Checksum field.
    pub fn checksum(&self) -> u16 {
        read_u16(self.buffer.as_ref(), 6)
    }
    /// The data (`8..Length`).
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..usize::from(self.len())]
    }
    /// Whether the checksum is right for a packet with SCION header `hdr`.
    pub fn verify_checksum<H: AsRef<[u8]>>(&self, hdr: &ScionHeader<H>) -> bool {
        let l4 = &self.buffer.as_ref()[..usize::from(self.len())];
        checksum::compute(hdr, PROTOCOL, l4, 6) == self.checksum()
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> UdpPacket<T> {
    /// Sets the source port.
    pub fn set_src_port(&mut self, v: u16) {
        write_u16(self.buffer.as_mut(), 0, v);
    }
    /// Sets the destination port.
    pub fn set_dst_port(&mut self, v: u16) {
        write_u16(self.buffer.as_mut(), 2, v);
    }
    /// Sets the Length field.
    pub fn set_len(&mut self, v: u16) {
        write_u16(self.buffer.as_mut(), 4, v);
    }
    /// Sets the checksum field.
    pub fn set_checksum(&mut self, v: u16) {
        write_u16(self.buffer.as_mut(), 6, v);
    }
    /// Computes and writes the checksum for SCION header `hdr`.
    pub fn fill_checksum<H: AsRef<[u8]>>(&mut self, hdr: &ScionHeader<H>) {
        let len = usize::from(self.len()).min(self.buffer.as_ref().len());
        let c = checksum::compute(hdr, PROTOCOL, &self.buffer.as_ref()[..len], 6);
        self.set_checksum(c);
    }
    /// The data, writable.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let len = usize::from(self.len());
        &mut self.buffer.as_mut()[HEADER_LEN..len]
    }
}

/// Owned UDP header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct UdpRepr {
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
    /// Length of the data after the header.
    pub payload_len: u16,
    /// Checksum as found (parse) or to write (emit; use `fill_checksum` afterwards).
    pub checksum: u16,
}

impl UdpRepr {
    /// Reads a checked datagram.
    pub fn parse<T: AsRef<[u8]>>(p: &UdpPacket<T>) -> Result<Self> {
        p.check_len()?;
        Ok(UdpRepr {
            src_port: p.src_port(),
            dst_port: p.dst_port(),
            payload_len: p.len() - HEADER_LEN as u16,
            checksum: p.checksum(),
        })
    }
    /// Header length.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }
    /// Writes the 8-byte header to the start of `b`.
    pub fn emit(&self, b: &mut [u8]) -> Result<()> {
        need(Layer::Udp, b, HEADER_LEN)?;
        let total = self
            .payload_len
            .checked_add(HEADER_LEN as u16)
            .ok_or(Error::invalid(Layer::Udp, "Length"))?;
        let mut p = UdpPacket::new_unchecked(b);
        p.set_src_port(self.src_port);
        p.set_dst_port(self.dst_port);
        p.set_len(total);
        p.set_checksum(self.checksum);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const UDP: [u8; 12] = [0x05, 0x00, 0x00, 0x50, 0x00, 0x0c, 0xb7, 0xd2, 1, 2, 3, 4];

    #[test]
    fn deconstruct_construct() {
        let p = UdpPacket::new_checked(&UDP[..]).unwrap();
        assert_eq!(
            (p.src_port(), p.dst_port(), p.len(), p.checksum()),
            (1280, 80, 12, 0xb7d2)
        );
        assert_eq!(p.payload(), &[1, 2, 3, 4]);
        let r = UdpRepr::parse(&p).unwrap();
        let mut out = UDP;
        out[..8].fill(0);
        r.emit(&mut out).unwrap();
        assert_eq!(out, UDP);
        assert!(UdpPacket::new_checked(&UDP[..11]).is_err());
        let mut bad = UDP;
        bad[5] = 7;
        assert!(UdpPacket::new_checked(&bad[..]).is_err());
    }
}
