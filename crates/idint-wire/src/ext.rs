//! Hop-by-hop (HBH, protocol 200) and end-to-end (E2E, protocol 201) extension headers and
//! their TLV options.
//!
//! Layout: NextHdr (1) | ExtLen (1) | options, total `(ExtLen + 1) * 4` bytes (at most 1024).
//! Options are Type (1) | DataLen (1) | Data, except Pad1, a lone zero byte.

use crate::error::{Error, Layer, Result};

/// Protocol number of the hop-by-hop options header.
pub const HBH: u8 = 200;
/// Protocol number of the end-to-end options header.
pub const E2E: u8 = 201;
/// Largest extension header, in bytes.
pub const MAX_LEN: usize = 1024;

/// Option type numbers.
pub mod opt_type {
    /// Single padding byte (no length field).
    pub const PAD1: u8 = 0;
    /// N bytes of padding (type, length, N-2 zero bytes).
    pub const PADN: u8 = 1;
    /// SCION packet authenticator option (E2E only).
    pub const SPAO: u8 = 2;
    /// ID-INT main option (HBH).
    pub const IDINT_MAIN: u8 = 253;
    /// ID-INT telemetry stack entry (HBH).
    pub const IDINT_ENTRY: u8 = 254;
}

mod field {
    pub const NEXT_HDR: usize = 0;
    pub const EXT_LEN: usize = 1;
    pub const OPTIONS: usize = 2;
}

/// A view of an extension header (HBH or E2E; the caller knows which from the previous
/// header's NextHdr).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExtHeader<T: AsRef<[u8]>> {
    buffer: T,
    layer: Layer,
}

impl<T: AsRef<[u8]>> ExtHeader<T> {
    /// Wraps `buffer` without checking its length. `layer` is [`Layer::HopByHop`] or
    /// [`Layer::EndToEnd`] and only used in errors.
    pub const fn new_unchecked(buffer: T, layer: Layer) -> Self {
        ExtHeader { buffer, layer }
    }

    /// Wraps `buffer` and checks that it holds the whole header.
    #[inline]
    pub fn new_checked(buffer: T, layer: Layer) -> Result<Self> {
        let h = Self::new_unchecked(buffer, layer);
        h.check_len()?;
        Ok(h)
    }

    /// Checks that the buffer holds the 2 fixed bytes and the `(ExtLen + 1) * 4` bytes they
    /// announce.
    #[inline]
    pub fn check_len(&self) -> Result<()> {
        let b = self.buffer.as_ref();
        crate::error::need(self.layer, b, field::OPTIONS)?;
        crate::error::need(self.layer, b, self.header_len())
    }

    /// Gives the buffer back.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Protocol number of the header that follows.
    pub fn next_header(&self) -> u8 {
        self.buffer.as_ref()[field::NEXT_HDR]
    }

    /// Raw ExtLen field.
    pub fn ext_len(&self) -> u8 {
        self.buffer.as_ref()[field::EXT_LEN]
    }

    /// Total header length in bytes: `(ExtLen + 1) * 4`.
    pub fn header_len(&self) -> usize {
        (usize::from(self.ext_len()) + 1) * 4
    }

    /// The option area (everything after the 2 fixed bytes).
    pub fn options_bytes(&self) -> &[u8] {
        &self.buffer.as_ref()[field::OPTIONS..self.header_len()]
    }

    /// Iterates over the options. Offsets are relative to the start of the header.
    pub fn options(&self) -> Options<'_> {
        Options::new(self.options_bytes(), field::OPTIONS)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> ExtHeader<T> {
    /// Sets NextHdr.
    pub fn set_next_header(&mut self, v: u8) {
        self.buffer.as_mut()[field::NEXT_HDR] = v;
    }

    /// Sets ExtLen (changes the header length: run `check_len` again before reading options).
    pub fn set_ext_len(&mut self, v: u8) {
        self.buffer.as_mut()[field::EXT_LEN] = v;
    }

    /// The option area, writable.
    pub fn options_bytes_mut(&mut self) -> &mut [u8] {
        let len = self.header_len();
        &mut self.buffer.as_mut()[field::OPTIONS..len]
    }
}

/// Owned description of an extension header whose option area is borrowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExtRepr<'a> {
    /// Protocol number of the following header.
    pub next_header: u8,
    /// Option bytes, including any padding; `2 + options.len()` must be a multiple of 4.
    pub options: &'a [u8],
}

impl<'a> ExtRepr<'a> {
    /// Reads a checked header.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(h: &'a ExtHeader<&'a T>) -> Result<Self> {
        h.check_len()?;
        Ok(ExtRepr {
            next_header: h.next_header(),
            options: h.options_bytes(),
        })
    }

    /// Bytes needed to emit this header.
    pub const fn buffer_len(&self) -> usize {
        field::OPTIONS + self.options.len()
    }

    /// Writes the header to the start of `buf`.
    pub fn emit(&self, buf: &mut [u8], layer: Layer) -> Result<()> {
        let len = self.buffer_len();
        if !len.is_multiple_of(4) || len > MAX_LEN {
            return Err(Error::invalid(layer, "ExtLen"));
        }
        if buf.len() < len {
            return Err(Error::truncated(layer, len, buf.len()));
        }
        buf[field::NEXT_HDR] = self.next_header;
        buf[field::EXT_LEN] = (len / 4 - 1) as u8;
        buf[field::OPTIONS..len].copy_from_slice(self.options);
        Ok(())
    }
}

/// One TLV option found by [`Options`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TlvOption<'a> {
    /// Offset of the type byte from the start of the extension header.
    pub offset: usize,
    /// Option type.
    pub opt_type: u8,
    /// Option data (empty for Pad1).
    pub data: &'a [u8],
}

impl TlvOption<'_> {
    /// Bytes the option occupies, type and length included (1 for Pad1).
    pub const fn total_len(&self) -> usize {
        if self.opt_type == opt_type::PAD1 {
            1
        } else {
            2 + self.data.len()
        }
    }

    /// Whether this is Pad1 or PadN.
    pub const fn is_padding(&self) -> bool {
        matches!(self.opt_type, opt_type::PAD1 | opt_type::PADN)
    }
}

/// Iterator over the TLV options of an option area. Yields `Err` once (and then stops) if an
/// option runs past the end of the area.
#[derive(Debug, Clone)]
pub struct Options<'a> {
    bytes: &'a [u8],
    pos: usize,
    base: usize,
    done: bool,
}

impl<'a> Options<'a> {
    /// Iterates over `bytes`, reporting offsets as `base + position`.
    pub const fn new(bytes: &'a [u8], base: usize) -> Self {
        Options {
            bytes,
            pos: 0,
            base,
            done: false,
        }
    }
}

impl<'a> Iterator for Options<'a> {
    type Item = Result<TlvOption<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done || self.pos >= self.bytes.len() {
            return None;
        }
        let rest = &self.bytes[self.pos..];
        let offset = self.base + self.pos;
        let opt_type = rest[0];
        if opt_type == opt_type::PAD1 {
            self.pos += 1;
            return Some(Ok(TlvOption {
                offset,
                opt_type,
                data: &[],
            }));
        }
        let Some(&len) = rest.get(1) else {
            self.done = true;
            return Some(Err(Error::truncated(Layer::Option, 2, rest.len())));
        };
        let total = 2 + usize::from(len);
        if rest.len() < total {
            self.done = true;
            return Some(Err(Error::truncated(Layer::Option, total, rest.len())));
        }
        self.pos += total;
        Some(Ok(TlvOption {
            offset,
            opt_type,
            data: &rest[2..total],
        }))
    }
}

/// Writes one option (type, length, data) at the start of `buf`; returns the bytes written.
pub fn emit_option(buf: &mut [u8], opt_type: u8, data: &[u8]) -> Result<usize> {
    let Ok(len) = u8::try_from(data.len()) else {
        return Err(Error::invalid(Layer::Option, "OptDataLen"));
    };
    let total = 2 + data.len();
    if buf.len() < total {
        return Err(Error::truncated(Layer::Option, total, buf.len()));
    }
    buf[0] = opt_type;
    buf[1] = len;
    buf[2..total].copy_from_slice(data);
    Ok(total)
}

/// Like [`write_padding`] but writes only the Pad1/PadN headers and leaves the content bytes
/// as they are, for a region that was already padding content (the zeros stay zeros).
pub fn write_padding_headers(buf: &mut [u8]) {
    let mut rest = buf;
    while !rest.is_empty() {
        let n = rest.len();
        if n == 1 {
            rest[0] = opt_type::PAD1;
            return;
        }
        let take = if n > 257 {
            if n - 257 == 1 { 256 } else { 257 }
        } else {
            n
        };
        rest[0] = opt_type::PADN;
        rest[1] = (take - 2) as u8;
        rest = &mut rest[take..];
    }
}

/// Fills `buf` entirely with padding options: nothing for an empty buffer, Pad1 for one byte,
/// otherwise PadN options of at most 257 bytes each (zero data), with a final Pad1 where a
/// single byte would remain.
pub fn write_padding(buf: &mut [u8]) {
    let mut rest = buf;
    while !rest.is_empty() {
        let n = rest.len();
        if n == 1 {
            rest[0] = opt_type::PAD1;
            return;
        }
        // Leave no single trailing byte that a PadN cannot cover: if n is 258, take 256.
        let take = if n > 257 {
            if n - 257 == 1 { 256 } else { 257 }
        } else {
            n
        };
        rest[0] = opt_type::PADN;
        rest[1] = (take - 2) as u8;
        rest[2..take].fill(0);
        rest = &mut rest[take..];
    }
}

/// Padding bytes needed so that an option placed at `offset` satisfies the alignment
/// requirement `xn + y` (offset of its type byte ≡ y mod x). `x` must be a power of two
/// between 1 and 8.
pub const fn align_padding(offset: usize, x: usize, y: usize) -> usize {
    if x <= 1 {
        return 0;
    }
    (y % x + x - offset % x) % x
}

#[cfg(test)]
mod tests {
    use super::*;

    // HBH header of `scion-udp-extn.bin`-like shape: NextHdr 17, ExtLen 1, PadN(2) + Pad1 ...
    const HBH: [u8; 8] = [17, 1, 1, 2, 0, 0, 0, 0];

    #[test]
    fn deconstruct() {
        let h = ExtHeader::new_checked(&HBH[..], Layer::HopByHop).unwrap();
        assert_eq!(h.next_header(), 17);
        assert_eq!(h.header_len(), 8);
        let opts: [TlvOption<'_>; 3] = {
            let mut it = h.options().map(|o| o.unwrap());
            [it.next().unwrap(), it.next().unwrap(), it.next().unwrap()]
        };
        assert_eq!(opts[0].opt_type, opt_type::PADN);
        assert_eq!(opts[0].offset, 2);
        assert_eq!(opts[0].total_len(), 4);
        assert_eq!(opts[1].opt_type, opt_type::PAD1);
        assert_eq!(opts[1].offset, 6);
        assert_eq!(h.options().count(), 3);
    }

    #[test]
    fn construct_and_emit() {
        let mut buf = [0xa5u8; 8];
        let mut h = ExtHeader::new_unchecked(&mut buf[..], Layer::HopByHop);
        h.set_next_header(17);
        h.set_ext_len(1);
        write_padding(h.options_bytes_mut());
        // PadN covering all 6 option bytes.
        assert_eq!(buf, [17, 1, 1, 4, 0, 0, 0, 0]);
        let repr = ExtRepr {
            next_header: 17,
            options: &HBH[2..],
        };
        let mut out = [0u8; 8];
        repr.emit(&mut out, Layer::HopByHop).unwrap();
        assert_eq!(out, HBH);
        let parsed = ExtHeader::new_checked(&out[..], Layer::HopByHop).unwrap();
        assert_eq!(ExtRepr::parse(&parsed).unwrap(), repr);
    }

    #[test]
    fn truncated_header_and_options() {
        assert!(ExtHeader::new_checked(&HBH[..7], Layer::HopByHop).is_err());
        assert!(ExtHeader::new_checked(&HBH[..1], Layer::HopByHop).is_err());
        // An option whose length runs past the area yields one error, then stops.
        let bad = [17u8, 0, 1, 9];
        let h = ExtHeader::new_checked(&bad[..], Layer::HopByHop).unwrap();
        let mut it = h.options();
        assert!(matches!(it.next(), Some(Err(Error::Truncated { .. }))));
        assert!(it.next().is_none());
    }

    #[test]
    fn padding_covers_any_length() {
        let mut buf = [0xffu8; 700];
        for n in 0..buf.len() {
            buf.fill(0xff);
            write_padding(&mut buf[..n]);
            let mut covered = 0;
            for o in Options::new(&buf[..n], 0) {
                let o = o.unwrap();
                assert!(o.is_padding());
                assert!(o.data.iter().all(|&b| b == 0));
                covered += o.total_len();
            }
            assert_eq!(covered, n);
            assert_eq!(buf[n], 0xff, "wrote past the end for n = {n}");
        }
    }

    #[test]
    fn alignment() {
        assert_eq!(align_padding(2, 4, 2), 0);
        assert_eq!(align_padding(3, 4, 2), 3);
        assert_eq!(align_padding(2, 8, 2), 0);
        assert_eq!(align_padding(4, 8, 2), 6);
        assert_eq!(align_padding(5, 1, 0), 0);
    }

    #[test]
    fn emit_option_rejects_oversized_data() {
        let mut buf = [0u8; 300];
        assert!(emit_option(&mut buf, 2, &[0; 256]).is_err());
        assert_eq!(emit_option(&mut buf, 2, &[7; 3]).unwrap(), 5);
        assert_eq!(&buf[..5], &[2, 3, 7, 7, 7]);
    }
}
