//! AES-128 primitives shared by ID-INT and DRKey: CBC-MAC with a zero IV and a zero-filled last
//! block (the PRF of both protocols), and AES-CTR with a 12-byte nonce and a 32-bit counter.
//!
//! The key schedule ([`Aes128Enc`], encryption only: every use in SCION and ID-INT, CMAC and CTR
//! alike, runs the block cipher forwards, so the decryption round keys are never built, which
//! halves what a cached key occupies) is built once per key by the caller and reused; nothing
//! here allocates. AES-NI is detected at run time by the `aes` crate unless the build targets it
//! (the default build does, so the rounds inline; see `.cargo/config.toml`).

pub use aes::Aes128Enc;
use aes::cipher::consts::U16;
use aes::cipher::{
    Array, BlockCipherEncBackend, BlockCipherEncClosure, BlockCipherEncrypt, BlockSizeUser, KeyInit,
};

/// AES block size in bytes.
pub const BLOCK_LEN: usize = 16;

/// Builds the AES-128 key schedule for `key`.
pub fn aes128(key: &[u8; 16]) -> Aes128Enc {
    Aes128Enc::new(&(*key).into())
}

#[inline(always)]
fn encrypt_in_place(cipher: &Aes128Enc, block: &mut [u8; 16]) {
    cipher.encrypt_block(block.into());
}

/// One block encryption of a block held as a little-endian `u128` (byte 0 = low byte).
#[inline(always)]
pub(crate) fn encrypt_u128(cipher: &Aes128Enc, x: u128) -> u128 {
    let mut b = x.to_le_bytes();
    encrypt_in_place(cipher, &mut b);
    u128::from_le_bytes(b)
}

/// Incremental AES-128 CBC-MAC: zero IV, input processed in 16-byte blocks, a final partial
/// block zero-filled, no length prefix, output = last cipher block.
///
/// Input may be fed in pieces of any size; the result equals [`cbc_mac`] over their
/// concatenation. An empty input is treated as a single zero block.
pub struct CbcMac<'k> {
    cipher: &'k Aes128Enc,
    state: [u8; 16],
    fill: usize,
    blocks: usize,
}

impl<'k> CbcMac<'k> {
    /// Starts a MAC computation under `cipher`.
    pub fn new(cipher: &'k Aes128Enc) -> Self {
        CbcMac {
            cipher,
            state: [0; 16],
            fill: 0,
            blocks: 0,
        }
    }

    /// Feeds more input.
    #[inline]
    pub fn update(&mut self, mut data: &[u8]) {
        // Whole blocks while aligned: one 128-bit XOR and one block encryption each.
        if self.fill == 0 {
            while data.len() >= BLOCK_LEN {
                let (block, rest) = data.split_at(BLOCK_LEN);
                let mut b = [0u8; 16];
                b.copy_from_slice(block);
                let x = u128::from_ne_bytes(self.state) ^ u128::from_ne_bytes(b);
                self.state = x.to_ne_bytes();
                encrypt_in_place(self.cipher, &mut self.state);
                self.blocks += 1;
                data = rest;
            }
        }
        while !data.is_empty() {
            let take = (BLOCK_LEN - self.fill).min(data.len());
            for (s, d) in self.state[self.fill..self.fill + take]
                .iter_mut()
                .zip(&data[..take])
            {
                *s ^= d;
            }
            self.fill += take;
            data = &data[take..];
            if self.fill == BLOCK_LEN {
                encrypt_in_place(self.cipher, &mut self.state);
                self.fill = 0;
                self.blocks += 1;
            }
        }
    }

    /// Finishes: zero-fills and encrypts a pending partial block, returns the 16-byte MAC.
    pub fn finalize(mut self) -> [u8; 16] {
        // XOR with zero fill is a no-op, so a pending partial block only needs the encryption.
        if self.fill > 0 || self.blocks == 0 {
            encrypt_in_place(self.cipher, &mut self.state);
        }
        self.state
    }
}

/// AES-128 CBC-MAC of `data` (see [`CbcMac`]).
pub fn cbc_mac(cipher: &Aes128Enc, data: &[u8]) -> [u8; 16] {
    let mut mac = CbcMac::new(cipher);
    mac.update(data);
    mac.finalize()
}

/// XORs the AES-128-CTR keystream into `data` in place: counter block = `nonce` (12 bytes) ||
/// 32-bit big-endian counter starting at 0, one block per 16 bytes. Encryption and decryption
/// are the same operation.
pub fn ctr_apply(cipher: &Aes128Enc, nonce: &[u8; 12], data: &mut [u8]) {
    // Keystream blocks are independent: encrypt up to four at once so they pipeline.
    const LANES: usize = 4;
    let mut counter: u32 = 0;
    for group in data.chunks_mut(BLOCK_LEN * LANES) {
        let n = group.len().div_ceil(BLOCK_LEN);
        let mut ks = [[0u8; 16]; LANES];
        for b in ks.iter_mut().take(n) {
            b[..12].copy_from_slice(nonce);
            b[12..].copy_from_slice(&counter.to_be_bytes());
            counter = counter.wrapping_add(1);
        }
        encrypt_blocks(cipher, &mut ks[..n]);
        for (chunk, k) in group.chunks_mut(BLOCK_LEN).zip(ks.iter()) {
            for (d, k) in chunk.iter_mut().zip(k.iter()) {
                *d ^= k;
            }
        }
    }
}

/// Encrypts independent blocks in place in one pass with the key schedule loaded once, so
/// several blocks are in flight at a time.
#[inline]
pub fn encrypt_blocks(cipher: &Aes128Enc, blocks: &mut [[u8; 16]]) {
    cipher.encrypt_with_backend(Blocks(blocks));
}

/// Runs `chain` (a CBC-MAC over `mac_blocks`, zero IV) and the encryption of the independent
/// `keystream` blocks in one backend pass: the CPU overlaps the serial chain with the
/// keystream. Returns the CBC-MAC.
#[inline]
pub fn cbc_mac_and_keystream(
    cipher: &Aes128Enc,
    mac_blocks: &[[u8; 16]],
    keystream: &mut [[u8; 16]],
) -> [u8; 16] {
    let mut out = [0u8; 16];
    cipher.encrypt_with_backend(MacAndStream {
        mac_blocks,
        keystream,
        out: &mut out,
    });
    out
}

/// The CBC-MACs (zero IV) of several messages under one key, computed together: step `s`
/// advances every message that has a block `s`, so the AES computations of different messages
/// overlap in the CPU, and the key schedule is loaded once for all of them.
///
/// `blocks[s][i]` is block `s` of message `i` (a partial last block zero-filled),
/// `n_blocks[i]` how many blocks message `i` has; message `i`'s MAC is written to `macs[i]` for
/// every `i < macs.len()`. A message with zero blocks gets the MAC of one zero block, as
/// [`cbc_mac`] of empty input.
///
/// # Panics
/// If `n_blocks` is shorter than `macs` or a message has more blocks than `blocks` holds.
#[inline]
pub fn cbc_mac_lanes<const L: usize>(
    cipher: &Aes128Enc,
    blocks: &[[[u8; 16]; L]],
    n_blocks: &[u8],
    macs: &mut [[u8; 16]],
) {
    cipher.encrypt_with_backend(Lanes {
        blocks,
        n_blocks,
        macs,
    });
}

/// `a ^ b` bytewise (one vector XOR).
#[inline(always)]
pub fn xor_arrays(a: &[u8; 16], b: &[u8; 16]) -> [u8; 16] {
    let mut out = [0u8; 16];
    for ((o, a), b) in out.iter_mut().zip(a).zip(b) {
        *o = a ^ b;
    }
    out
}

struct Lanes<'a, const L: usize> {
    blocks: &'a [[[u8; 16]; L]],
    n_blocks: &'a [u8],
    macs: &'a mut [[u8; 16]],
}

impl<const L: usize> BlockSizeUser for Lanes<'_, L> {
    type BlockSize = U16;
}

impl<const L: usize> BlockCipherEncClosure for Lanes<'_, L> {
    #[inline(always)]
    fn call<B: BlockCipherEncBackend<BlockSize = U16>>(self, backend: &B) {
        let n = self.macs.len();
        let n_blocks = &self.n_blocks[..n];
        let most = usize::from(n_blocks.iter().copied().max().unwrap_or(0).max(1));
        let fewest = usize::from(n_blocks.iter().copied().min().unwrap_or(0));
        // Steps every message has (the common case: all alike) without per-message tests;
        // the first needs no chaining (zero IV).
        if let Some(row) = self.blocks[..fewest].first() {
            for (mac, block) in self.macs.iter_mut().zip(row) {
                let mut x = Array::from(*block);
                backend.encrypt_block_inplace(&mut x);
                *mac = x.into();
            }
        } else {
            self.macs.fill([0; 16]);
        }
        for row in self.blocks[..fewest].iter().skip(1) {
            for (mac, block) in self.macs.iter_mut().zip(row) {
                let mut x = Array::from(xor_arrays(mac, block));
                backend.encrypt_block_inplace(&mut x);
                *mac = x.into();
            }
        }
        for s in fewest..most {
            for (i, (mac, &nb)) in self.macs.iter_mut().zip(n_blocks).enumerate() {
                if s < usize::from(nb.max(1)) {
                    let block = if s < usize::from(nb) {
                        self.blocks[s][i]
                    } else {
                        [0; 16]
                    };
                    let mut x = Array::from(xor_arrays(mac, &block));
                    backend.encrypt_block_inplace(&mut x);
                    *mac = x.into();
                }
            }
        }
    }
}

struct Blocks<'a>(&'a mut [[u8; 16]]);

impl BlockSizeUser for Blocks<'_> {
    type BlockSize = U16;
}

impl BlockCipherEncClosure for Blocks<'_> {
    #[inline(always)]
    fn call<B: BlockCipherEncBackend<BlockSize = U16>>(self, backend: &B) {
        for b in self.0.iter_mut() {
            let mut x = Array::from(*b);
            backend.encrypt_block_inplace(&mut x);
            *b = x.into();
        }
    }
}

struct MacAndStream<'a> {
    mac_blocks: &'a [[u8; 16]],
    keystream: &'a mut [[u8; 16]],
    out: &'a mut [u8; 16],
}

impl BlockSizeUser for MacAndStream<'_> {
    type BlockSize = U16;
}

impl BlockCipherEncClosure for MacAndStream<'_> {
    #[inline(always)]
    fn call<B: BlockCipherEncBackend<BlockSize = U16>>(self, backend: &B) {
        for b in self.keystream.iter_mut() {
            let mut x = Array::from(*b);
            backend.encrypt_block_inplace(&mut x);
            *b = x.into();
        }
        let mut state = 0u128;
        for b in self.mac_blocks {
            let mut x = Array::from((state ^ u128::from_ne_bytes(*b)).to_ne_bytes());
            backend.encrypt_block_inplace(&mut x);
            state = u128::from_ne_bytes(x.into());
        }
        if self.mac_blocks.is_empty() {
            let mut x = Array::from([0u8; 16]);
            backend.encrypt_block_inplace(&mut x);
            state = u128::from_ne_bytes(x.into());
        }
        *self.out = state.to_ne_bytes();
    }
}

/// Compares two byte strings in time that depends only on their lengths.
pub fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut diff = 0u8;
    for (x, y) in a.iter().zip(b) {
        diff |= x ^ y;
    }
    // Keep the optimiser from turning the loop into an early exit.
    core::hint::black_box(diff) == 0
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::vec::Vec;

    fn key_1_to_16() -> [u8; 16] {
        core::array::from_fn(|i| i as u8 + 1)
    }

    #[test]
    fn lanes_equal_one_message_at_a_time() {
        // Messages of 0..=70 bytes under one key, each with its own number of blocks.
        let c = aes128(&key_1_to_16());
        let msgs: Vec<Vec<u8>> = (0..=70u8)
            .map(|n| (0..n).map(|b| b.wrapping_mul(31) ^ n).collect())
            .collect();
        for group in msgs.chunks(32) {
            let mut blocks = [[[0u8; 16]; 32]; 5];
            let mut n_blocks = [0u8; 32];
            for (i, m) in group.iter().enumerate() {
                n_blocks[i] = m.len().div_ceil(16) as u8;
                for (s, chunk) in m.chunks(16).enumerate() {
                    let mut b = [0u8; 16];
                    b[..chunk.len()].copy_from_slice(chunk);
                    blocks[s][i] = b;
                }
            }
            let mut macs = [[0u8; 16]; 32];
            cbc_mac_lanes(&c, &blocks, &n_blocks, &mut macs[..group.len()]);
            for (i, m) in group.iter().enumerate() {
                assert_eq!(macs[i], cbc_mac(&c, m), "{} bytes", m.len());
            }
        }
    }

    #[test]
    fn streaming_equals_one_shot_for_any_split() {
        let c = aes128(&key_1_to_16());
        let data: Vec<u8> = (0..53u8).collect();
        let whole = cbc_mac(&c, &data);
        for split in 0..data.len() {
            let mut m = CbcMac::new(&c);
            m.update(&data[..split]);
            m.update(&data[split..]);
            assert_eq!(m.finalize(), whole, "split at {split}");
        }
    }

    #[test]
    fn zero_fill_rule() {
        // A partial last block is zero-filled: appending explicit zeros up to the block
        // boundary does not change the MAC.
        let c = aes128(&key_1_to_16());
        assert_eq!(
            cbc_mac(&c, &[7; 20]),
            cbc_mac(&c, &{
                let mut v = [0u8; 32];
                v[..20].fill(7);
                v
            })
        );
        assert_ne!(cbc_mac(&c, &[7; 16]), cbc_mac(&c, &[7; 20]));
    }

    #[test]
    fn ctr_is_an_involution_and_changes_bytes() {
        let c = aes128(&key_1_to_16());
        let nonce = [9u8; 12];
        let orig: Vec<u8> = (0..40u8).collect();
        let mut d = orig.clone();
        ctr_apply(&c, &nonce, &mut d);
        assert_ne!(d, orig);
        ctr_apply(&c, &nonce, &mut d);
        assert_eq!(d, orig);
    }

    #[test]
    fn constant_time_compare() {
        assert!(ct_eq(b"abcd", b"abcd"));
        assert!(!ct_eq(b"abcd", b"abce"));
        assert!(!ct_eq(b"abc", b"abcd"));
    }
}
