//! EPIC-HP path (path type 3): PktID (EpicTS | Counter) | PHVF | LHVF | SCION path.

use super::scion::{ScionPath, ScionPathRepr};
use crate::bytes::{read_u32, write_u32};
use crate::error::{Layer, Result, need};

/// Bytes before the embedded SCION path.
pub const EPIC_PREFIX_LEN: usize = 16;

/// Zero-copy view of an EPIC-HP path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EpicPath<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> EpicPath<T> {
    /// Wraps `buffer` without checks.
    pub const fn new_unchecked(buffer: T) -> Self {
        EpicPath { buffer }
    }
    /// Wraps `buffer` and runs [`Self::check_len`].
    pub fn new_checked(buffer: T) -> Result<Self> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }
    /// Checks the 16-byte prefix and the embedded SCION path.
    pub fn check_len(&self) -> Result<()> {
        need(Layer::Epic, self.buffer.as_ref(), EPIC_PREFIX_LEN)?;
        ScionPath::new_checked(&self.buffer.as_ref()[EPIC_PREFIX_LEN..]).map(|_| ())
    }
    /// Gives the buffer back.
    pub fn into_inner(self) -> T {
        self.buffer
    }
    /// EpicTS (packet timestamp relative to info field 0, in 21 µs units).
    pub fn epic_ts(&self) -> u32 {
        read_u32(self.buffer.as_ref(), 0)
    }
    /// Counter.
    pub fn counter(&self) -> u32 {
        read_u32(self.buffer.as_ref(), 4)
    }
    /// PktID as one 64-bit value.
    pub fn pkt_id(&self) -> u64 {
        (u64::from(self.epic_ts()) << 32) | u64::from(self.counter())
    }
    /// Penultimate hop validation field.
    pub fn phvf(&self) -> [u8; 4] {
        let b = self.buffer.as_ref();
        [b[8], b[9], b[10], b[11]]
    }
    /// Last hop validation field.
    pub fn lhvf(&self) -> [u8; 4] {
        let b = self.buffer.as_ref();
        [b[12], b[13], b[14], b[15]]
    }
    /// The embedded SCION path.
    pub fn scion_path(&self) -> ScionPath<&[u8]> {
        ScionPath::new_unchecked(&self.buffer.as_ref()[EPIC_PREFIX_LEN..])
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> EpicPath<T> {
    /// The embedded SCION path, writable.
    pub fn scion_path_mut(&mut self) -> ScionPath<&mut [u8]> {
        ScionPath::new_unchecked(&mut self.buffer.as_mut()[EPIC_PREFIX_LEN..])
    }
    /// Sets EpicTS and Counter.
    pub fn set_pkt_id(&mut self, epic_ts: u32, counter: u32) {
        write_u32(self.buffer.as_mut(), 0, epic_ts);
        write_u32(self.buffer.as_mut(), 4, counter);
    }
    /// Sets PHVF.
    pub fn set_phvf(&mut self, v: [u8; 4]) {
        self.buffer.as_mut()[8..12].copy_from_slice(&v);
    }
    /// Sets LHVF.
    pub fn set_lhvf(&mut self, v: [u8; 4]) {
        self.buffer.as_mut()[12..16].copy_from_slice(&v);
    }
}

/// Owned EPIC-HP path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EpicPathRepr {
    /// EpicTS.
    pub epic_ts: u32,
    /// Counter.
    pub counter: u32,
    /// PHVF.
    pub phvf: [u8; 4],
    /// LHVF.
    pub lhvf: [u8; 4],
    /// The embedded SCION path.
    pub scion: ScionPathRepr,
}

impl EpicPathRepr {
    /// Parses from the start of `b`.
    pub fn parse(b: &[u8]) -> Result<Self> {
        let v = EpicPath::new_checked(b)?;
        Ok(EpicPathRepr {
            epic_ts: v.epic_ts(),
            counter: v.counter(),
            phvf: v.phvf(),
            lhvf: v.lhvf(),
            scion: ScionPathRepr::parse(&b[EPIC_PREFIX_LEN..])?,
        })
    }
    /// Bytes needed to emit.
    pub const fn buffer_len(&self) -> usize {
        EPIC_PREFIX_LEN + self.scion.buffer_len()
    }
    /// Writes the path to the start of `b`. Fails, writing nothing, if the embedded path's
    /// meta header is invalid ([`super::PathMeta::validate`]) or `b` is too short.
    pub fn emit(&self, b: &mut [u8]) -> Result<()> {
        self.scion.meta.validate()?;
        need(Layer::Epic, b, self.buffer_len())?;
        let mut v = EpicPath::new_unchecked(&mut *b);
        v.set_pkt_id(self.epic_ts, self.counter);
        v.set_phvf(self.phvf);
        v.set_lhvf(self.lhvf);
        self.scion.emit(&mut b[EPIC_PREFIX_LEN..])
    }
}
