//! Big-endian field access helpers. Callers check lengths first (`check_len`); these helpers
//! are only used on ranges already known to be in bounds.

#[inline(always)]
pub(crate) fn read_u16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

#[inline(always)]
pub(crate) fn read_u32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// Reads a 48-bit big-endian value.
#[inline(always)]
pub(crate) fn read_u48(b: &[u8], at: usize) -> u64 {
    let mut v = [0u8; 8];
    v[2..].copy_from_slice(&b[at..at + 6]);
    u64::from_be_bytes(v)
}

#[inline(always)]
pub(crate) fn read_u64(b: &[u8], at: usize) -> u64 {
    let mut v = [0u8; 8];
    v.copy_from_slice(&b[at..at + 8]);
    u64::from_be_bytes(v)
}

#[inline(always)]
pub(crate) fn write_u16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_be_bytes());
}

#[inline(always)]
pub(crate) fn write_u32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_be_bytes());
}

/// Writes the low 48 bits of `v` big-endian.
#[inline(always)]
pub(crate) fn write_u48(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 6].copy_from_slice(&v.to_be_bytes()[2..]);
}

#[inline(always)]
pub(crate) fn write_u64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_be_bytes());
}
