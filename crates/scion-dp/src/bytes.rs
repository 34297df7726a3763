//! Fixed-width reads of packet bytes at known-valid offsets, shared by the processor and the
//! ID-INT stage. A leaf: depends on nothing else in the crate.

/// `buf[at..at + 8]` big-endian (in bounds: callers checked).
#[inline(always)]
pub(crate) fn read_u64(buf: &[u8], at: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&buf[at..at + 8]);
    u64::from_be_bytes(b)
}

/// `buf[at..at + 4]` big-endian (in bounds: callers checked).
#[inline(always)]
pub(crate) fn read_u32(buf: &[u8], at: usize) -> u32 {
    let mut b = [0u8; 4];
    b.copy_from_slice(&buf[at..at + 4]);
    u32::from_be_bytes(b)
}

/// `b[at..at + 16]` little-endian (in bounds: callers checked). Used to compare raw header
/// bytes, not to decode a field.
#[inline(always)]
pub(crate) fn read_u128_le(b: &[u8], at: usize) -> u128 {
    let mut x = [0u8; 16];
    x.copy_from_slice(&b[at..at + 16]);
    u128::from_le_bytes(x)
}

/// `b[at..at + 6]` little-endian (in bounds: callers checked). Used to compare raw header
/// bytes, not to decode a field.
#[inline(always)]
pub(crate) fn read_u48_le(b: &[u8], at: usize) -> u64 {
    let mut x = [0u8; 8];
    x[..6].copy_from_slice(&b[at..at + 6]);
    u64::from_le_bytes(x)
}
