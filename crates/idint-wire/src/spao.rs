//! SCION Packet Authenticator Option (E2E option type 2): SPI, algorithm, timestamp/sequence
//! number and authenticator, plus the exact MAC input a sender or receiver authenticates
//! (`scion-dp.md` §1.5; the TrafficClass is masked with 0x3f as the reference code does).

use crate::bytes::{read_u32, read_u48, write_u32, write_u48};
use crate::error::{Error, Layer, Result, need};
use crate::packet::{L4, Packet, PathView};

/// Option data bytes before the authenticator.
pub const META_LEN: usize = 12;
/// Alignment requirement of the option: 4n + 2.
pub const ALIGN: (usize, usize) = (4, 2);

/// Security parameter index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Spi(pub u32);

impl Spi {
    /// Whether this is a DRKey SPI (1 ..= 2^21 - 1).
    pub const fn is_drkey(self) -> bool {
        self.0 != 0 && self.0 < (1 << 21)
    }
    /// DRKey SPI: host-host key (T) rather than AS-host.
    pub const fn host_host(self) -> bool {
        self.0 & (1 << 17) != 0
    }
    /// DRKey SPI: receiver-side derivation (D).
    pub const fn receiver_side(self) -> bool {
        self.0 & (1 << 16) != 0
    }
    /// DRKey SPI: protocol id.
    pub const fn protocol(self) -> u16 {
        (self.0 & 0xffff) as u16
    }
}

/// The SPAO option data (after the type and length bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpaoRepr<'a> {
    /// SPI.
    pub spi: Spi,
    /// Algorithm: 0 AES-CMAC, 1 SHA1-AES-CBC, others reserved/experimental.
    pub algorithm: u8,
    /// Timestamp or sequence number (48 bits).
    pub timestamp: u64,
    /// Authenticator.
    pub authenticator: &'a [u8],
}

impl<'a> SpaoRepr<'a> {
    /// Parses option data.
    pub fn parse(data: &'a [u8]) -> Result<Self> {
        need(Layer::Spao, data, META_LEN)?;
        let spi = Spi(read_u32(data, 0));
        if spi.0 == 0 {
            return Err(Error::invalid(Layer::Spao, "SPI"));
        }
        Ok(SpaoRepr {
            spi,
            algorithm: data[4],
            timestamp: read_u48(data, 6),
            authenticator: &data[META_LEN..],
        })
    }

    /// Option data length.
    pub const fn buffer_len(&self) -> usize {
        META_LEN + self.authenticator.len()
    }

    /// Writes option data (without type/length bytes) to the start of `b`.
    pub fn emit(&self, b: &mut [u8]) -> Result<()> {
        need(Layer::Spao, b, self.buffer_len())?;
        write_u32(b, 0, self.spi.0);
        b[4] = self.algorithm;
        b[5] = 0;
        write_u48(b, 6, self.timestamp);
        b[META_LEN..self.buffer_len()].copy_from_slice(self.authenticator);
        Ok(())
    }
}

/// The SPAO authenticator of `pkt` for algorithm 0 (AES-CMAC, RFC 4493) under `key`: the CMAC
/// of [`mac_input`]. Errors as [`mac_input`].
#[cfg(feature = "crypto")]
pub fn aes_cmac_authenticator(
    key: &[u8; 16],
    pkt: &Packet<'_>,
    spao: &SpaoRepr<'_>,
) -> Result<[u8; 16]> {
    use cmac::{KeyInit, Mac};
    let mut mac = cmac::Cmac::<aes::Aes128>::new(key.into());
    mac_input(pkt, spao, |b| mac.update(b))?;
    Ok(mac.finalize().into_bytes().into())
}

/// Feeds the SPAO MAC input for `pkt` and its option `spao` to `sink`, piece by piece (no
/// allocation): option metadata, common-header words, the addresses the SPI requires, the path
/// with mutable fields zeroed, and the upper-layer message.
pub fn mac_input(pkt: &Packet<'_>, spao: &SpaoRepr<'_>, mut sink: impl FnMut(&[u8])) -> Result<()> {
    let h = &pkt.header;
    let l4: &[u8] = match pkt.l4 {
        L4::Udp(u) => u.into_inner(),
        L4::Scmp(s) => s.into_inner(),
        L4::Other(_, b) => b,
    };
    let ul_len = u16::try_from(l4.len()).map_err(|_| Error::invalid(Layer::Spao, "length"))?;
    let mut meta = [0u8; META_LEN];
    meta[0] = h.hdr_len_raw();
    meta[1] = pkt.l4_protocol().into();
    meta[2..4].copy_from_slice(&ul_len.to_be_bytes());
    meta[4] = spao.algorithm;
    write_u48(&mut meta, 6, spao.timestamp);
    sink(&meta);
    let raw = h.as_bytes();
    let mut line = [0u8; 8];
    line[..4].copy_from_slice(&raw[..4]);
    // TrafficClass & 0x3f: the two top bits of TC are the low nibble of byte 0.
    line[0] &= 0x03;
    line[4] = raw[8];
    line[5] = raw[9];
    sink(&line);
    if !spao.spi.is_drkey() {
        sink(&raw[12..28]);
        sink(h.dst_host_bytes());
        sink(h.src_host_bytes());
    } else if !spao.spi.host_host() {
        if spao.spi.receiver_side() {
            sink(h.dst_host_bytes());
        } else {
            sink(h.src_host_bytes());
        }
    }
    match pkt.path {
        PathView::Empty => {}
        PathView::Scion(p) => zeroed_scion_path(p.into_inner(), p.len(), &mut sink),
        PathView::Epic(e) => {
            let b = e.into_inner();
            sink(&b[..16]);
            let len = e.scion_path().len();
            zeroed_scion_path(&b[16..], len, &mut sink);
        }
        PathView::OneHop(_) => {
            let b = h.path_bytes();
            let mut info = [0u8; 8];
            info.copy_from_slice(&b[..8]);
            info[2] = 0;
            info[3] = 0;
            sink(&info);
            let mut first = [0u8; 12];
            first.copy_from_slice(&b[8..20]);
            first[0] = 0;
            sink(&first);
            sink(&[0u8; 12]);
        }
    }
    sink(l4);
    Ok(())
}

fn zeroed_scion_path(b: &[u8], len: usize, sink: &mut impl FnMut(&[u8])) {
    let meta = crate::path::PathMeta::from_u32(read_u32(b, 0));
    let mut m = [0u8; 4];
    m.copy_from_slice(&b[..4]);
    m[0] = 0;
    sink(&m);
    let n = meta.num_infos();
    for i in 0..n {
        let mut f = [0u8; 8];
        f.copy_from_slice(&b[4 + 8 * i..12 + 8 * i]);
        f[2] = 0;
        f[3] = 0;
        sink(&f);
    }
    let mut at = 4 + 8 * n;
    while at + 12 <= len {
        let mut hf = [0u8; 12];
        hf.copy_from_slice(&b[at..at + 12]);
        hf[0] = 0;
        sink(&hf);
        at += 12;
    }
}
