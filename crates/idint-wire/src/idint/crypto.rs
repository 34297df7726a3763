//! ID-INT authentication and encryption (`idint.md` §7-§8), `no_std`.
//!
//! * Source entry MAC: first 4 bytes of AES-CBC-MAC over the main option (X cleared, TOS and
//!   the DelayHops bytes zeroed) followed by the source entry without its MAC field.
//! * Other entries: CBC-MAC over the entry with its MAC field replaced by the previous entry's
//!   MAC as it is on the wire (so the chain follows stack order).
//! * Encryption (C flag): MAC first, then AES-CTR (nonce || 32-bit counter from 0) over
//!   everything after the nonce, with the same key.
//!
//! The nonce is chosen by the caller (the router draws it from its per-core CSPRNG).

use core::fmt;

use super::entry::{Entry, MAC_LEN, NONCE_LEN, NONCE_OFFSET};
use super::main_option::flags;
use super::stack::{IdInt, MAX_ENTRIES};
use crate::crypto::{Aes128Enc, CbcMac, cbc_mac_and_keystream, ct_eq, ctr_apply, encrypt_u128};
use crate::error::Error;

/// Why a telemetry stack did not verify.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VerifyError {
    /// The stack is malformed.
    Malformed(Error),
    /// The stack has no source entry.
    NoSourceEntry,
    /// No key is known for entry `index` (0 = source entry).
    MissingKey {
        /// Entry index in stack order.
        index: usize,
    },
    /// The MAC of entry `index` is wrong.
    BadMac {
        /// Entry index in stack order.
        index: usize,
    },
}

impl fmt::Display for VerifyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            VerifyError::Malformed(e) => write!(f, "malformed ID-INT stack: {e}"),
            VerifyError::NoSourceEntry => f.write_str("ID-INT stack has no source entry"),
            VerifyError::MissingKey { index } => write!(f, "no key for ID-INT entry {index}"),
            VerifyError::BadMac { index } => write!(f, "ID-INT entry {index}: MAC mismatch"),
        }
    }
}

impl core::error::Error for VerifyError {}

impl From<Error> for VerifyError {
    fn from(e: Error) -> Self {
        VerifyError::Malformed(e)
    }
}

fn first4(b: [u8; 16]) -> [u8; MAC_LEN] {
    [b[0], b[1], b[2], b[3]]
}

/// The source-entry MAC for a main option and a source entry (its MAC field is ignored; a
/// nonce, if any, is included as sent, metadata must be plaintext).
pub fn source_mac(key: &Aes128Enc, main: &[u8], source_entry: &[u8]) -> [u8; MAC_LEN] {
    let mut m = CbcMac::new(key);
    let mut head = [0u8; 8];
    let n = main.len().min(8);
    head[..n].copy_from_slice(&main[..n]);
    head[2] &= !flags::X;
    head[5] = 0;
    head[6] = 0;
    head[7] = 0;
    m.update(&head[..n]);
    m.update(main.get(8..).unwrap_or(&[]));
    m.update(&source_entry[..source_entry.len().saturating_sub(MAC_LEN)]);
    first4(m.finalize())
}

/// The MAC of a (non-source) entry chained to the previous entry's on-wire MAC. `entry` is the
/// plaintext entry; its MAC field is ignored.
pub fn entry_mac(key: &Aes128Enc, entry: &[u8], prev_mac: [u8; MAC_LEN]) -> [u8; MAC_LEN] {
    let mut m = CbcMac::new(key);
    m.update(&entry[..entry.len().saturating_sub(MAC_LEN)]);
    m.update(&prev_mac);
    first4(m.finalize())
}

fn apply_ctr(key: &Aes128Enc, entry: &mut Entry<&mut [u8]>) {
    if let Some(nonce) = entry.nonce() {
        let nonce: [u8; NONCE_LEN] = nonce;
        ctr_apply(key, &nonce, entry.encrypted_part_mut());
    }
}

/// Writes the MAC of a plaintext entry (chained to `prev_mac`) and encrypts it if its C flag
/// is set. Returns the entry's MAC as it is now on the wire. The keystream and the MAC chain
/// are computed in one AES pass (the keystream does not depend on the MAC).
pub fn seal_entry(
    key: &Aes128Enc,
    entry: &mut Entry<&mut [u8]>,
    prev_mac: [u8; MAC_LEN],
) -> [u8; MAC_LEN] {
    // Router entries are at most 6 + 12 + 42 + 4 = 64 bytes: small scratch for them; any
    // entry is at most 257 bytes (OptDataLen is one byte): 17 blocks.
    if entry.total_len() <= 80 {
        seal_with::<5>(key, entry, prev_mac)
    } else {
        seal_with::<17>(key, entry, prev_mac)
    }
}

#[inline(always)]
fn seal_with<const MAX_BLOCKS: usize>(
    key: &Aes128Enc,
    entry: &mut Entry<&mut [u8]>,
    prev_mac: [u8; MAC_LEN],
) -> [u8; MAC_LEN] {
    let nonce = entry.nonce();
    let bytes = entry.as_bytes();
    let len = bytes.len();
    let mut blocks = [[0u8; 16]; MAX_BLOCKS];
    let n = len.div_ceil(16).min(MAX_BLOCKS);
    for (i, chunk) in bytes[..len - MAC_LEN].chunks(16).enumerate() {
        blocks[i][..chunk.len()].copy_from_slice(chunk);
    }
    let at = len - MAC_LEN;
    for (k, b) in prev_mac.iter().enumerate() {
        blocks[(at + k) / 16][(at + k) % 16] = *b;
    }
    let mut ks = [[0u8; 16]; MAX_BLOCKS];
    let enc_from = NONCE_OFFSET + NONCE_LEN;
    let nks = match nonce {
        Some(nonce) => {
            let nks = (len - enc_from).div_ceil(16).min(MAX_BLOCKS);
            for (c, b) in ks[..nks].iter_mut().enumerate() {
                b[..12].copy_from_slice(&nonce);
                b[12..].copy_from_slice(&(c as u32).to_be_bytes());
            }
            nks
        }
        None => 0,
    };
    let full = cbc_mac_and_keystream(key, &blocks[..n], &mut ks[..nks]);
    let mac = first4(full);
    entry.set_mac(mac);
    if nks == 0 {
        // Not encrypted: the MAC on the wire is the one just written.
        return mac;
    }
    let part = entry.encrypted_part_mut();
    for (chunk, k) in part.chunks_mut(16).zip(ks.iter()) {
        for (d, k) in chunk.iter_mut().zip(k.iter()) {
            *d ^= k;
        }
    }
    entry.mac()
}

/// Decrypts an entry in place if its C flag is set and checks its MAC against `prev_mac`.
/// Returns the on-wire (pre-decryption) MAC for chaining, or `None` if the MAC is wrong.
pub fn open_entry(
    key: &Aes128Enc,
    entry: &mut Entry<&mut [u8]>,
    prev_mac: [u8; MAC_LEN],
) -> Option<[u8; MAC_LEN]> {
    let on_wire = entry.mac();
    apply_ctr(key, entry);
    let want = entry_mac(key, entry.as_bytes(), prev_mac);
    ct_eq(&want, &entry.mac()).then_some(on_wire)
}

/// Writes the source MAC of a request (and encrypts the source entry if its C flag is set).
pub fn sign_source<T: AsRef<[u8]> + AsMut<[u8]>>(
    idint: &mut IdInt<T>,
    key: &Aes128Enc,
) -> Result<(), VerifyError> {
    let start = idint.stack_range().start;
    let mac = {
        let src = idint.entry_at(start)?;
        if !src.is_source() {
            return Err(VerifyError::NoSourceEntry);
        }
        source_mac(key, idint.main().as_bytes(), src.as_bytes())
    };
    let mut src = idint.entry_at_mut(start)?;
    src.set_mac(mac);
    apply_ctr(key, &mut src);
    Ok(())
}

/// Seals the entry at `offset` (a router's newly written or aggregated entry): MAC chained to
/// the previous entry's on-wire MAC, then encryption if its C flag is set.
pub fn seal_entry_at<T: AsRef<[u8]> + AsMut<[u8]>>(
    idint: &mut IdInt<T>,
    offset: usize,
    key: &Aes128Enc,
) -> Result<[u8; MAC_LEN], VerifyError> {
    let prev = previous_mac(idint, offset)?;
    let mut e = idint.entry_at_mut(offset)?;
    Ok(seal_entry(key, &mut e, prev))
}

fn previous_mac<T: AsRef<[u8]>>(
    idint: &IdInt<T>,
    offset: usize,
) -> Result<[u8; MAC_LEN], VerifyError> {
    let mut prev = None;
    for (at, e) in idint.entries() {
        if at == offset {
            return prev.ok_or(VerifyError::NoSourceEntry);
        }
        prev = Some(e.mac());
    }
    Err(VerifyError::Malformed(Error::invalid(
        crate::error::Layer::IdIntEntry,
        "offset",
    )))
}

/// Verifies the whole stack and decrypts it in place: the source entry with `source_key`,
/// then every entry with the key `key_for(index, entry)` returns (index 1 = first router
/// entry). Returns the number of entries verified, source entry included.
pub fn verify_stack<'k, T, F>(
    idint: &mut IdInt<T>,
    source_key: &Aes128Enc,
    key_for: F,
) -> Result<usize, VerifyError>
where
    T: AsRef<[u8]> + AsMut<[u8]>,
    F: FnMut(usize, &Entry<&[u8]>) -> Option<&'k Aes128Enc>,
{
    verify_stack_with(idint, source_key, key_for, |_, _| {})
}

/// [`verify_stack`] in one walk of the stack that also hands every entry to `on_entry`
/// (index in stack order, the entry) right after its MAC verified and it was decrypted, so
/// that callers reading the metadata need not parse the stack again. If an error is returned,
/// the entries handed over so far were verified but the stack as a whole was not.
///
/// Router entries are verified [`LANES`] at a time, their AES computations interleaved block
/// by block: each entry's MAC input holds the previous entry's MAC as it is on the wire, known
/// before anything is verified, so the entries' chains are independent and several run in
/// flight at once instead of one after the other. As a consequence `key_for` may be asked for
/// (and entries may be decrypted) up to `LANES - 1` entries past one whose MAC turns out wrong;
/// the error returned is always that of the first failing entry.
pub fn verify_stack_with<'k, T, F, G>(
    idint: &mut IdInt<T>,
    source_key: &Aes128Enc,
    mut key_for: F,
    mut on_entry: G,
) -> Result<usize, VerifyError>
where
    T: AsRef<[u8]> + AsMut<[u8]>,
    F: FnMut(usize, &Entry<&[u8]>) -> Option<&'k Aes128Enc>,
    G: FnMut(usize, &Entry<&[u8]>),
{
    // One walk checks every entry and records where it starts; afterwards the entries are
    // read without re-checking (decryption changes no header byte).
    let mut offs = [0u16; MAX_ENTRIES];
    let n = idint.check_entries(&mut offs)?;
    let start = idint.stack_range().start;
    if n == 0 || usize::from(offs[0]) != start {
        return Err(VerifyError::NoSourceEntry);
    }
    // Source entry: decrypt if needed, then check the source MAC.
    let mut prev = {
        let mut src = idint.entry_at_mut_unchecked(start);
        let on_wire = src.mac();
        apply_ctr(source_key, &mut src);
        u32::from_le_bytes(on_wire)
    };
    // The source MAC's input, as one more chain run beside the first group of entries (a
    // longer one is checked on its own first).
    let mut src_msg = [0u8; SOURCE_MSG_MAX];
    let src_len = {
        let main = idint.main();
        let src = idint.entry_at_unchecked(start);
        source_mac_input(main.as_bytes(), src.as_bytes(), &mut src_msg)
    };
    let mut src_chain = match src_len {
        Some(len) => Some((source_key, &src_msg[..len.div_ceil(16) * 16])),
        None => {
            let src = idint.entry_at_unchecked(start);
            let want = source_mac(source_key, idint.main().as_bytes(), src.as_bytes());
            if !ct_eq(&want, &src.mac()) {
                return Err(VerifyError::BadMac { index: 0 });
            }
            on_entry(0, &src);
            None
        }
    };
    let mut first = 1;
    while first < n || src_chain.is_some() {
        let end = n.min(first + LANES);
        // Keys and lanes, in stack order, up to the first entry without a key.
        let mut lanes: [Option<Lane<'k>>; LANES] = [None; LANES];
        let mut missing = None;
        for (index, lane) in (first..end).zip(lanes.iter_mut()) {
            let at = usize::from(offs[index]);
            let e = idint.entry_at_unchecked(at);
            let Some(key) = key_for(index, &e) else {
                missing = Some(index);
                break;
            };
            let on_wire = u32::from_le_bytes(e.mac());
            *lane = Some(Lane {
                key,
                at,
                len: e.total_len(),
                nonce: e.nonce().map(|n| {
                    let mut b = [0u8; 16];
                    b[..NONCE_LEN].copy_from_slice(&n);
                    u128::from_le_bytes(b)
                }),
                prev_mac: prev,
                plain_mac: 0,
                state: 0,
                ks_prev: 0,
            });
            prev = on_wire;
        }
        let src_state = open_lanes(idint.buffer_mut(), &mut lanes, src_chain.take());
        if let Some(state) = src_state {
            let src = idint.entry_at_unchecked(start);
            if !ct_eq(&first4(state.to_le_bytes()), &src.mac()) {
                return Err(VerifyError::BadMac { index: 0 });
            }
            on_entry(0, &src);
        }
        for (index, lane) in (first..end).zip(&lanes) {
            let Some(lane) = lane else { break };
            if (lane.state as u32 ^ lane.plain_mac) != 0 {
                return Err(VerifyError::BadMac { index });
            }
            on_entry(index, &idint.entry_at_unchecked(lane.at));
        }
        if let Some(index) = missing {
            return Err(VerifyError::MissingKey { index });
        }
        first = end;
    }
    Ok(n)
}

/// Longest source-MAC input (main option and source entry without its MAC) that
/// [`verify_stack_with`] runs beside the first entries; a longer one is checked before them.
const SOURCE_MSG_MAX: usize = 64;

/// Writes the source MAC's input (as [`source_mac`] reads it) to the start of `out`, zero
/// filled to whole blocks; returns its length, or `None` if it does not fit.
#[inline(always)]
fn source_mac_input(
    main: &[u8],
    source_entry: &[u8],
    out: &mut [u8; SOURCE_MSG_MAX],
) -> Option<usize> {
    let body = &source_entry[..source_entry.len().saturating_sub(MAC_LEN)];
    let len = main.len() + body.len();
    if len > SOURCE_MSG_MAX || main.len() < 8 {
        return None;
    }
    out[..main.len()].copy_from_slice(main);
    out[2] &= !flags::X;
    out[5] = 0;
    out[6] = 0;
    out[7] = 0;
    out[main.len()..len].copy_from_slice(body);
    Some(len)
}

/// Router entries whose MACs [`verify_stack_with`] computes together.
pub const LANES: usize = 8;

/// One entry being decrypted and MACed by [`open_lanes`]. Blocks are little-endian `u128`s
/// (byte 0 of the block = low byte).
#[derive(Clone, Copy)]
struct Lane<'k> {
    key: &'k Aes128Enc,
    /// Offset of the entry in the HBH buffer.
    at: usize,
    /// Entry length (a checked entry: a multiple of 4, at least 12).
    len: usize,
    /// The nonce in the low 12 bytes of a counter block, if the entry is encrypted.
    nonce: Option<u128>,
    /// The previous entry's MAC as on the wire (the last 4 bytes of this entry's MAC input).
    prev_mac: u32,
    /// This entry's MAC after decryption (what the CBC-MAC must match).
    plain_mac: u32,
    /// CBC-MAC state; after [`open_lanes`], the MAC (its low 4 bytes).
    state: u128,
    /// The keystream block before the one last generated (encrypted entries).
    ks_prev: u128,
}

/// Decrypts the lanes' entries in place and runs their CBC-MACs, interleaved block by block.
///
/// MAC block `r` of an entry covers entry bytes `16r..16r + 16` (zero-filled past the entry,
/// its last 4 bytes replaced by the previous MAC). Encryption starts after the nonce (byte
/// 18), so keystream block `c` covers bytes `18 + 16c..34 + 16c`: MAC block `r >= 1` takes
/// its last 14 bytes from keystream block `r - 1` and its first 2 from block `r - 2`.
///
/// `src`, if given, is one more CBC-MAC (key, input in whole blocks) run beside them: its
/// result is returned.
#[inline(always)]
fn open_lanes(
    buf: &mut [u8],
    lanes: &mut [Option<Lane<'_>>; LANES],
    src: Option<(&Aes128Enc, &[u8])>,
) -> Option<u128> {
    let src_blocks = src.map_or(0, |(_, m)| m.len() / 16);
    let rounds = lanes
        .iter()
        .flatten()
        .map(|l| l.len.div_ceil(16))
        .max()
        .unwrap_or(0)
        .max(src_blocks);
    let mut src_state = 0u128;
    for r in 0..rounds {
        if let Some((key, msg)) = src
            && r < src_blocks
        {
            let block = u128::from_le_bytes(msg[16 * r..16 * r + 16].try_into().unwrap_or([0; 16]));
            src_state = encrypt_u128(key, src_state ^ block);
        }
        for lane in lanes.iter_mut().flatten() {
            let from = 16 * r;
            if from >= lane.len {
                continue;
            }
            let rem = (lane.len - from).min(16);
            let at = lane.at + from;
            let mut block = load_le(buf, at, rem);
            if let Some(nonce) = lane.nonce
                && r >= 1
            {
                let counter = u128::from(u32::from_le_bytes((r as u32 - 1).to_be_bytes())) << 96;
                let ks = encrypt_u128(lane.key, nonce | counter);
                let aligned = (lane.ks_prev >> 112) | (ks << 16);
                lane.ks_prev = ks;
                block ^= aligned & low_bytes(rem);
                store_le(buf, at, rem, block);
            }
            if from + 16 >= lane.len {
                // Last block: the MAC field is its last 4 bytes (the entry length is a
                // multiple of 4), replaced by the previous entry's MAC.
                let p = 8 * (rem as u32 - 4);
                lane.plain_mac = (block >> p) as u32;
                block = (block & low_bytes(rem - 4)) | (u128::from(lane.prev_mac) << p);
            }
            lane.state = encrypt_u128(lane.key, lane.state ^ block);
        }
    }
    src.map(|_| src_state)
}

/// A mask of the low `n` bytes (`n <= 16`).
#[inline(always)]
fn low_bytes(n: usize) -> u128 {
    if n >= 16 {
        u128::MAX
    } else {
        (1u128 << (8 * n)) - 1
    }
}

/// Loads `n` bytes (4, 8, 12 or 16) at `at` as a little-endian `u128`, zero above them. Only
/// the entry's own bytes are read.
#[inline(always)]
fn load_le(buf: &[u8], at: usize, n: usize) -> u128 {
    let u32_at = |i: usize| u128::from(u32::from_le_bytes(buf[i..i + 4].try_into().unwrap()));
    let u64_at = |i: usize| u128::from(u64::from_le_bytes(buf[i..i + 8].try_into().unwrap()));
    match n {
        16 => u128::from_le_bytes(buf[at..at + 16].try_into().unwrap()),
        12 => u64_at(at) | (u32_at(at + 8) << 64),
        8 => u64_at(at),
        _ => u32_at(at),
    }
}

/// Stores the low `n` bytes (4, 8, 12 or 16) of `x` at `at`, with fixed-size stores (a
/// copy of variable length here was a `memcpy` call per block: 5% of the collector's
/// pipeline on encrypted reports).
#[inline(always)]
fn store_le(buf: &mut [u8], at: usize, n: usize, x: u128) {
    let b = x.to_le_bytes();
    match n {
        16 => buf[at..at + 16].copy_from_slice(&b),
        12 => {
            buf[at..at + 8].copy_from_slice(&b[..8]);
            buf[at + 8..at + 12].copy_from_slice(&b[8..12]);
        }
        8 => buf[at..at + 8].copy_from_slice(&b[..8]),
        _ => buf[at..at + 4].copy_from_slice(&b[..4]),
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use crate::crypto::aes128;
    use crate::idint::entry::flags::C;
    use proptest::prelude::*;
    use std::vec::Vec;

    /// `seal_entry` against the definition: the MAC over the entry with the previous MAC in
    /// its MAC slot, written, then (C set) CTR over everything after the nonce.
    fn sealed_by_definition(key: &Aes128Enc, bytes: &[u8], prev: [u8; MAC_LEN]) -> Vec<u8> {
        let mut out = bytes.to_vec();
        let len = out.len();
        let mac = entry_mac(key, &out, prev);
        out[len - MAC_LEN..].copy_from_slice(&mac);
        if out[2] & C != 0 {
            let mut nonce = [0u8; NONCE_LEN];
            nonce.copy_from_slice(&out[NONCE_OFFSET..NONCE_OFFSET + NONCE_LEN]);
            ctr_apply(key, &nonce, &mut out[NONCE_OFFSET + NONCE_LEN..]);
        }
        out
    }

    proptest! {
        /// Every entry length (valid ones are a multiple of 4, but any is sealed as defined)
        /// up to the 257 bytes OptDataLen allows, plain and encrypted, both scratch sizes.
        #[test]
        fn seal_entry_matches_the_definition(
            len in 12usize..=257,
            encrypted: bool,
            fill: [u8; 32],
            prev: [u8; MAC_LEN],
            k: [u8; 16],
        ) {
            prop_assume!(!encrypted || len >= NONCE_OFFSET + NONCE_LEN + MAC_LEN);
            let mut bytes: Vec<u8> = (0..len).map(|i| fill[i % 32] ^ i as u8).collect();
            bytes[1] = (len - 2) as u8;
            bytes[2] = if encrypted { bytes[2] | C } else { bytes[2] & !C };
            let key = aes128(&k);
            let want = sealed_by_definition(&key, &bytes, prev);
            let mut got = bytes.clone();
            let wire_mac = seal_entry(&key, &mut Entry::new_unchecked(&mut got[..]), prev);
            prop_assert_eq!(&got, &want);
            prop_assert_eq!(&wire_mac[..], &want[len - MAC_LEN..]);
        }
    }
}
