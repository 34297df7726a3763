//! Upper-layer checksums over the SCION pseudo header:
//! `DstIA | SrcIA | DstHostAddr | SrcHostAddr | u32 length | 0 0 0 | protocol`, then the L4
//! bytes with the checksum field zero; 16-bit one's complement of the one's complement sum.

use crate::scion::ScionHeader;

/// Running one's complement sum (RFC 1071), fed in pieces of any length.
#[derive(Debug, Clone, Copy, Default)]
pub struct Checksum {
    sum: u64,
    odd: Option<u8>,
}

impl Checksum {
    /// An empty sum.
    pub const fn new() -> Self {
        Checksum { sum: 0, odd: None }
    }

    /// Adds bytes (pieces need not be of even length).
    pub fn add(&mut self, mut data: &[u8]) {
        if let Some(hi) = self.odd.take() {
            match data.split_first() {
                Some((&lo, rest)) => {
                    self.sum += u64::from(u16::from_be_bytes([hi, lo]));
                    data = rest;
                }
                None => {
                    self.odd = Some(hi);
                    return;
                }
            }
        }
        let mut chunks = data.chunks_exact(2);
        for c in &mut chunks {
            self.sum += u64::from(u16::from_be_bytes([c[0], c[1]]));
        }
        if let [last] = chunks.remainder() {
            self.odd = Some(*last);
        }
    }

    /// The final checksum value (complement of the folded sum).
    pub fn finish(self) -> u16 {
        let mut s = self.sum;
        if let Some(hi) = self.odd {
            s += u64::from(hi) << 8;
        }
        while s > 0xffff {
            s = (s & 0xffff) + (s >> 16);
        }
        !(s as u16)
    }
}

/// Adds the SCION pseudo header of `hdr` for an upper layer of `len` bytes and protocol
/// `protocol` (17 UDP, 202 SCMP).
pub fn add_pseudo_header<T: AsRef<[u8]>>(
    c: &mut Checksum,
    hdr: &ScionHeader<T>,
    len: u32,
    protocol: u8,
) {
    c.add(&hdr.dst_ia().to_bytes());
    c.add(&hdr.src_ia().to_bytes());
    c.add(hdr.dst_host_bytes());
    c.add(hdr.src_host_bytes());
    c.add(&len.to_be_bytes());
    c.add(&[0, 0, 0, protocol]);
}

/// Checksum of an upper-layer message `l4` (whose checksum field is at `checksum_at`) carried
/// in the packet whose SCION header is `hdr`. The checksum field is treated as zero.
pub fn compute<T: AsRef<[u8]>>(
    hdr: &ScionHeader<T>,
    protocol: u8,
    l4: &[u8],
    checksum_at: usize,
) -> u16 {
    let mut c = Checksum::new();
    add_pseudo_header(&mut c, hdr, l4.len() as u32, protocol);
    let split = checksum_at.min(l4.len());
    c.add(&l4[..split]);
    c.add(&l4[(split + 2).min(l4.len())..]);
    c.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc1071_example_and_odd_splits() {
        let data = [0x00u8, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        let mut whole = Checksum::new();
        whole.add(&data);
        assert_eq!(whole.finish(), !0xddf2);
        for split in 0..data.len() {
            let mut c = Checksum::new();
            c.add(&data[..split]);
            c.add(&data[split..]);
            assert_eq!(c.finish(), !0xddf2);
        }
        let mut c = Checksum::new();
        c.add(&[0xab]);
        assert_eq!(c.finish(), !0xab00);
    }
}
