//! Hop-field authentication: the forwarding key derived from the AS master secret and the
//! AES-128-CMAC over the 16-byte hop-field MAC input block (`scion-dp.md` §2.1).
//!
//! The MAC input is always exactly one block, so CMAC reduces to `AES_K(block XOR K1)` with the
//! first subkey `K1` computed once per key. The block cipher is the `aes` crate's AES-128 on
//! AES-NI, which the default build knows at compile time, so its rounds inline into the
//! per-packet call; [`HopMac::compute_batch`] hands it several blocks at once, whose rounds it
//! runs side by side so that the AES unit keeps them in flight.

use aes::cipher::BlockCipherEncrypt;
use idint_wire::crypto::{Aes128Enc, aes128};

/// Length of the MAC stored in a hop field.
pub const HOP_MAC_LEN: usize = 6;
/// PBKDF2 salt of the forwarding key.
pub const FORWARDING_KEY_SALT: &[u8] = b"Derive OF Key";
/// PBKDF2 iteration count of the forwarding key.
pub const FORWARDING_KEY_ITERATIONS: u32 = 1000;

/// Derives the 16-byte hop-field (forwarding) key from the decoded bytes of `master0.key`:
/// PBKDF2-HMAC-SHA256 with salt `Derive OF Key`, 1000 iterations.
pub fn forwarding_key(master_secret: &[u8]) -> [u8; 16] {
    let mut key = [0u8; 16];
    pbkdf2::pbkdf2_hmac::<sha2::Sha256>(
        master_secret,
        FORWARDING_KEY_SALT,
        FORWARDING_KEY_ITERATIONS,
        &mut key,
    );
    key
}

/// Blocks [`HopMac::compute_batch`] encrypts side by side.
const BATCH_LANES: usize = 8;

/// AES-128-CMAC for single-block inputs, with the key schedule and subkey precomputed.
#[derive(Clone)]
pub struct HopMac {
    cipher: Aes128Enc,
    k1: [u8; 16],
}

impl core::fmt::Debug for HopMac {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("HopMac(<key hidden>)")
    }
}

impl HopMac {
    /// Prepares the CMAC for `key` (the forwarding key).
    pub fn new(key: &[u8; 16]) -> Self {
        let cipher = aes128(key);
        let mut l = aes::Block::default();
        cipher.encrypt_block(&mut l);
        let l: [u8; 16] = l.into();
        HopMac {
            cipher,
            k1: double(&l),
        }
    }

    /// The full 16-byte CMAC of one input block (EPIC uses all 16 bytes as a key).
    #[inline]
    pub fn compute(&self, block: &[u8; 16]) -> [u8; 16] {
        let mut x = aes::Block::from(xor16(block, &self.k1));
        self.cipher.encrypt_block(&mut x);
        x.into()
    }

    /// Replaces every input block in `blocks` by its CMAC. The blocks are independent: they
    /// are encrypted eight at a time, round by round, so the AES unit pipelines them.
    #[inline]
    pub fn compute_batch(&self, blocks: &mut [[u8; 16]]) {
        let mut chunks = blocks.chunks_exact_mut(BATCH_LANES);
        for chunk in &mut chunks {
            let lanes: &mut [[u8; 16]; BATCH_LANES] = chunk
                .try_into()
                .expect("chunks_exact_mut yields whole chunks");
            // Whitened in registers: stored back only as MACs.
            let mut whitened = lanes.map(|b| xor16(&b, &self.k1));
            self.cipher
                .encrypt_blocks(aes::Block::cast_slice_from_core_mut(&mut whitened));
            *lanes = whitened;
        }
        for b in chunks.into_remainder() {
            *b = self.compute(b);
        }
    }

    /// Whether `mac` (the 6 bytes of a hop field) matches the CMAC of `block`, compared in
    /// constant time.
    pub fn verify(&self, block: &[u8; 16], mac: &[u8; HOP_MAC_LEN]) -> bool {
        let full = self.compute(block);
        idint_wire::crypto::ct_eq(&full[..HOP_MAC_LEN], mac)
    }
}

#[inline(always)]
fn xor16(a: &[u8; 16], b: &[u8; 16]) -> [u8; 16] {
    (u128::from_ne_bytes(*a) ^ u128::from_ne_bytes(*b)).to_ne_bytes()
}

/// Doubling in GF(2^128) as CMAC defines it (shift left, conditional XOR with 0x87).
fn double(l: &[u8; 16]) -> [u8; 16] {
    let v = u128::from_be_bytes(*l);
    let d = (v << 1) ^ if v >> 127 == 1 { 0x87 } else { 0 };
    d.to_be_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc4493_one_block() {
        // RFC 4493 example 2: key 2b7e1516..., message 6bc1bee2... (16 bytes).
        let key: [u8; 16] = [
            0x2b, 0x7e, 0x15, 0x16, 0x28, 0xae, 0xd2, 0xa6, 0xab, 0xf7, 0x15, 0x88, 0x09, 0xcf,
            0x4f, 0x3c,
        ];
        let msg: [u8; 16] = [
            0x6b, 0xc1, 0xbe, 0xe2, 0x2e, 0x40, 0x9f, 0x96, 0xe9, 0x3d, 0x7e, 0x11, 0x73, 0x93,
            0x17, 0x2a,
        ];
        let want: [u8; 16] = [
            0x07, 0x0a, 0x16, 0xb4, 0x6b, 0x4d, 0x41, 0x44, 0xf7, 0x9b, 0xdd, 0x9d, 0xd0, 0x4a,
            0x28, 0x7c,
        ];
        let m = HopMac::new(&key);
        assert_eq!(m.compute(&msg), want);
        let mut batch = [msg; 11];
        m.compute_batch(&mut batch);
        assert!(batch.iter().all(|b| *b == want));
        assert!(m.verify(&msg, want[..6].try_into().unwrap()));
        assert!(!m.verify(&msg, &[0; 6]));
    }
}
