//! OneHop path (path type 2): InfoField | FirstHop | SecondHop, 32 bytes, no meta header.

use super::scion::{HOP_LEN, HopField, INFO_LEN, InfoField};
use crate::error::{Layer, Result, need};

/// Length of a OneHop path.
pub const ONEHOP_LEN: usize = INFO_LEN + 2 * HOP_LEN;

/// Owned OneHop path (views are not needed: it is 32 fixed bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OneHopPath {
    /// The info field (C must be 1).
    pub info: InfoField,
    /// Hop field filled by the sending AS.
    pub first: HopField,
    /// Hop field filled by the receiving AS.
    pub second: HopField,
}

impl OneHopPath {
    /// Parses the first 32 bytes of `b`.
    pub fn parse(b: &[u8]) -> Result<Self> {
        need(Layer::OneHop, b, ONEHOP_LEN)?;
        Ok(OneHopPath {
            info: InfoField::parse(b)?,
            first: HopField::parse(&b[INFO_LEN..])?,
            second: HopField::parse(&b[INFO_LEN + HOP_LEN..])?,
        })
    }

    /// Bytes needed to emit.
    pub const fn buffer_len(&self) -> usize {
        ONEHOP_LEN
    }

    /// Writes 32 bytes to the start of `b`.
    pub fn emit(&self, b: &mut [u8]) -> Result<()> {
        need(Layer::OneHop, b, ONEHOP_LEN)?;
        self.info.emit(b)?;
        self.first.emit(&mut b[INFO_LEN..])?;
        self.second.emit(&mut b[INFO_LEN + HOP_LEN..])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_emit_and_truncation() {
        let mut raw = [0u8; 32];
        raw[0] = 1;
        raw[2..4].copy_from_slice(&[0x12, 0x34]);
        raw[8 + 1] = 63;
        raw[8 + 4..8 + 6].copy_from_slice(&[0, 7]);
        raw[20 + 2..20 + 4].copy_from_slice(&[0, 9]);
        let p = OneHopPath::parse(&raw).unwrap();
        assert!(p.info.cons_dir);
        assert_eq!(p.info.seg_id, 0x1234);
        assert_eq!((p.first.exp_time, p.first.cons_egress), (63, 7));
        assert_eq!(p.second.cons_ingress, 9);
        let mut out = [0xffu8; 32];
        p.emit(&mut out).unwrap();
        assert_eq!(out, raw);
        assert!(OneHopPath::parse(&raw[..31]).is_err());
    }
}
