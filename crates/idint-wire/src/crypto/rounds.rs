//! AES-128 encryption of single blocks ([`Aes128Rounds`]) from expanded round keys, one AES-NI
//! round instruction at a time (`aes::hazmat`), for the hop-field MAC (scion-dp's `HopMac`):
//! one block per packet, or the independent blocks of a burst side by side.
//!
//! Why not the `aes` crate's block cipher: it picks its backend at run time on every call,
//! and on CPUs with VAES (AVX-512 Intel servers, AMD Zen 4) a build for x86-64-v3 + AES enters
//! the VAES backend out of line, broadcasting the round keys into 512-bit registers each time:
//! a one-block call cost 8.6-8.8 ns instead of 5.3 ns inlined (BENCHMARKS.md, "Portable and
//! native builds"). `aes::hazmat`'s round function only checks AES-NI, which a build with `+aes`
//! (the default, `.cargo/config.toml`) knows at compile time, so the rounds inline.
//!
//! AES-NI has no hazmat counterpart for the last round (`AESENCLAST`: no MixColumns); it is a
//! full round under the key `MixColumns(k10)` followed by `InvMixColumns`, since
//! `InvMixColumns(MixColumns(s) ^ MixColumns(k)) = s ^ k`. Builds without AES-NI at compile
//! time use the `aes` crate (which detects it at run time).
//!
//! Only the hop-field MAC uses it. ID-INT's and DRKey's CBC-MAC chains, keystreams and
//! interleaved lanes stay on the `aes` crate, whose backend is chosen once per call: the same
//! work through these rounds measured slower (up to 3x in the `idint_crypto_floor` bursts, 2-4x
//! on single 42-byte chains; criterion, 2026-11-27), for reasons not pinned down.

use super::BLOCK_LEN;

/// Round keys of AES-128: the key itself and one per round.
const ROUND_KEYS: usize = 11;

/// Round constants of the AES-128 key expansion (FIPS-197 §5.2).
const RCON: [u8; ROUND_KEYS - 1] = [0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80, 0x1b, 0x36];

/// The AES S-box (FIPS-197 §5.1.1), for the key expansion only.
const SBOX: [u8; 256] = sbox();

/// Builds the S-box: for every non-zero `p`, its inverse `q` in GF(2^8) (stepping `p` by the
/// generator 3 and `q` by its inverse), then the affine transform; 0 maps to 0x63.
const fn sbox() -> [u8; 256] {
    let mut s = [0u8; 256];
    let mut p: u8 = 1;
    let mut q: u8 = 1;
    loop {
        // p * 3
        p ^= (p << 1) ^ if p & 0x80 != 0 { 0x1b } else { 0 };
        // q / 3
        q ^= q << 1;
        q ^= q << 2;
        q ^= q << 4;
        if q & 0x80 != 0 {
            q ^= 0x09;
        }
        let affine = q ^ q.rotate_left(1) ^ q.rotate_left(2) ^ q.rotate_left(3) ^ q.rotate_left(4);
        s[p as usize] = affine ^ 0x63;
        if p == 1 {
            break;
        }
    }
    s[0] = 0x63;
    s
}

/// The AES-128 key expansion (FIPS-197 §5.2): the 11 round keys of `key`.
fn expand(key: &[u8; BLOCK_LEN]) -> [[u8; BLOCK_LEN]; ROUND_KEYS] {
    let mut rk = [[0u8; BLOCK_LEN]; ROUND_KEYS];
    rk[0] = *key;
    for r in 1..ROUND_KEYS {
        let prev = rk[r - 1];
        // RotWord, SubWord and the round constant on the previous key's last word.
        let mut t = [
            SBOX[usize::from(prev[13])] ^ RCON[r - 1],
            SBOX[usize::from(prev[14])],
            SBOX[usize::from(prev[15])],
            SBOX[usize::from(prev[12])],
        ];
        for w in 0..4 {
            for (i, b) in t.iter_mut().enumerate() {
                *b ^= prev[4 * w + i];
                rk[r][4 * w + i] = *b;
            }
        }
    }
    rk
}

/// AES-128 encryption of single blocks with the round keys at hand (see the module docs).
#[derive(Clone)]
pub struct Aes128Rounds {
    #[cfg(all(target_arch = "x86_64", target_feature = "aes"))]
    keys: Keys,
    #[cfg(not(all(target_arch = "x86_64", target_feature = "aes")))]
    cipher: aes::Aes128Enc,
}

/// Round keys as the AES-NI rounds use them: the whitening key, rounds 1-9, and the last
/// round's key passed through MixColumns.
#[cfg(all(target_arch = "x86_64", target_feature = "aes"))]
#[derive(Clone)]
struct Keys {
    first: u128,
    middle: [aes::Block; ROUND_KEYS - 2],
    last_mixed: aes::Block,
}

impl core::fmt::Debug for Aes128Rounds {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("Aes128Rounds(<key hidden>)")
    }
}

impl Aes128Rounds {
    /// Expands `key`.
    pub fn new(key: &[u8; BLOCK_LEN]) -> Self {
        #[cfg(all(target_arch = "x86_64", target_feature = "aes"))]
        {
            let rk = expand(key);
            let mut middle = [aes::Block::default(); ROUND_KEYS - 2];
            for (m, k) in middle.iter_mut().zip(&rk[1..ROUND_KEYS - 1]) {
                *m = (*k).into();
            }
            let mut last_mixed = aes::Block::from(rk[ROUND_KEYS - 1]);
            aes::hazmat::mix_columns(&mut last_mixed);
            Aes128Rounds {
                keys: Keys {
                    first: u128::from_ne_bytes(rk[0]),
                    middle,
                    last_mixed,
                },
            }
        }
        #[cfg(not(all(target_arch = "x86_64", target_feature = "aes")))]
        {
            let _ = expand;
            Aes128Rounds {
                cipher: super::aes128(key),
            }
        }
    }

    /// Encrypts one block.
    #[inline(always)]
    pub fn encrypt(&self, block: &[u8; BLOCK_LEN]) -> [u8; BLOCK_LEN] {
        #[cfg(all(target_arch = "x86_64", target_feature = "aes"))]
        {
            let k = &self.keys;
            let mut x = aes::Block::from((u128::from_ne_bytes(*block) ^ k.first).to_ne_bytes());
            for rk in &k.middle {
                aes::hazmat::cipher_round(&mut x, rk);
            }
            aes::hazmat::cipher_round(&mut x, &k.last_mixed);
            aes::hazmat::inv_mix_columns(&mut x);
            x.into()
        }
        #[cfg(not(all(target_arch = "x86_64", target_feature = "aes")))]
        {
            let mut x = aes::Block::from(*block);
            aes::cipher::BlockCipherEncrypt::encrypt_block(&self.cipher, &mut x);
            x.into()
        }
    }

    /// Encrypts every block of `blocks` in place, round by round across the blocks so that
    /// their rounds overlap in the AES unit.
    #[inline(always)]
    pub fn encrypt_each<const N: usize>(&self, blocks: &mut [[u8; BLOCK_LEN]; N]) {
        #[cfg(all(target_arch = "x86_64", target_feature = "aes"))]
        {
            let k = &self.keys;
            let mut x = [aes::Block::default(); N];
            for (x, b) in x.iter_mut().zip(blocks.iter()) {
                *x = (u128::from_ne_bytes(*b) ^ k.first).to_ne_bytes().into();
            }
            for rk in &k.middle {
                for x in &mut x {
                    aes::hazmat::cipher_round(x, rk);
                }
            }
            for (x, b) in x.iter_mut().zip(blocks.iter_mut()) {
                aes::hazmat::cipher_round(x, &k.last_mixed);
                aes::hazmat::inv_mix_columns(x);
                *b = (*x).into();
            }
        }
        #[cfg(not(all(target_arch = "x86_64", target_feature = "aes")))]
        for b in blocks.iter_mut() {
            *b = self.encrypt(b);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex16(s: &str) -> [u8; 16] {
        let mut b = [0u8; 16];
        for (i, o) in b.iter_mut().enumerate() {
            *o = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap();
        }
        b
    }

    #[test]
    fn sbox_matches_fips197() {
        // FIPS-197 Figure 7: S(0x00), S(0x01), S(0x53) (the worked example), S(0xff).
        assert_eq!(
            [SBOX[0x00], SBOX[0x01], SBOX[0x53], SBOX[0xff]],
            [0x63, 0x7c, 0xed, 0x16]
        );
    }

    #[test]
    fn key_expansion_matches_fips197_appendix_a1() {
        let rk = expand(&hex16("2b7e151628aed2a6abf7158809cf4f3c"));
        assert_eq!(rk[1], hex16("a0fafe1788542cb123a339392a6c7605"));
        assert_eq!(rk[10], hex16("d014f9a8c9ee2589e13f0cc8b6630ca6"));
    }

    #[test]
    fn encryption_matches_fips197_appendix_c1() {
        let a = Aes128Rounds::new(&hex16("000102030405060708090a0b0c0d0e0f"));
        let ct = hex16("69c4e0d86a7b0430d8cdb78070b4c55a");
        assert_eq!(a.encrypt(&hex16("00112233445566778899aabbccddeeff")), ct);
        let mut four = [hex16("00112233445566778899aabbccddeeff"); 4];
        a.encrypt_each(&mut four);
        assert_eq!(four, [ct; 4]);
    }

    proptest::proptest! {
        #[test]
        fn equals_the_aes_crate(key: [u8; 16], blocks: [[u8; 16]; 3]) {
            let ours = Aes128Rounds::new(&key);
            let theirs = super::super::aes128(&key);
            let mut each = blocks;
            ours.encrypt_each(&mut each);
            for (b, e) in blocks.iter().zip(&each) {
                let mut x = aes::Block::from(*b);
                aes::cipher::BlockCipherEncrypt::encrypt_block(&theirs, &mut x);
                let want: [u8; 16] = x.into();
                proptest::prop_assert_eq!(ours.encrypt(b), want);
                proptest::prop_assert_eq!(*e, want);
            }
        }
    }
}
