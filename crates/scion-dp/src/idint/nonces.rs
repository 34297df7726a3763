//! Nonces for encrypted entries: the [`NonceSource`] trait and [`CtrDrbg`], the per-worker
//! AES-CTR generator that produces them ahead in pipelined batches.

use idint_wire::crypto::Aes128Enc;

/// Nonces for encrypted entries: 96 bits, never repeating under a key, unpredictable.
pub trait NonceSource {
    /// The next nonce.
    fn nonce(&mut self) -> [u8; 12];
}

/// A fast CSPRNG for nonces: AES-128 in counter mode under a secret random key (each nonce is
/// 12 bytes of one block). Seed it from the operating system's generator, one per worker.
pub struct CtrDrbg {
    cipher: Aes128Enc,
    counter: u128,
    /// Nonces generated ahead (one pipelined AES pass per refill).
    ready: [[u8; 16]; DRBG_AHEAD],
    used: usize,
}

const DRBG_AHEAD: usize = 32;

impl CtrDrbg {
    /// A generator from 32 secret random bytes (key and initial counter).
    pub fn new(seed: [u8; 32]) -> Self {
        let mut key = [0u8; 16];
        key.copy_from_slice(&seed[..16]);
        let mut ctr = [0u8; 16];
        ctr.copy_from_slice(&seed[16..]);
        CtrDrbg {
            cipher: idint_wire::crypto::aes128(&key),
            counter: u128::from_be_bytes(ctr),
            ready: [[0; 16]; DRBG_AHEAD],
            used: DRBG_AHEAD,
        }
    }

    #[cold]
    fn refill(&mut self) {
        for b in self.ready.iter_mut() {
            *b = self.counter.to_be_bytes();
            self.counter = self.counter.wrapping_add(1);
        }
        idint_wire::crypto::encrypt_blocks(&self.cipher, &mut self.ready);
        self.used = 0;
    }
}

impl core::fmt::Debug for CtrDrbg {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("CtrDrbg { .. }")
    }
}

impl NonceSource for CtrDrbg {
    #[inline]
    fn nonce(&mut self) -> [u8; 12] {
        if self.used == DRBG_AHEAD {
            self.refill();
        }
        let mut n = [0u8; 12];
        n.copy_from_slice(&self.ready[self.used][..12]);
        self.used += 1;
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nonces_do_not_repeat() {
        let mut g = CtrDrbg::new([7; 32]);
        let a: alloc::vec::Vec<[u8; 12]> = (0..1000).map(|_| g.nonce()).collect();
        for (i, x) in a.iter().enumerate() {
            assert!(a[i + 1..].iter().all(|y| y != x));
        }
        let mut h = CtrDrbg::new([8; 32]);
        assert_ne!(h.nonce(), CtrDrbg::new([7; 32]).nonce());
    }
}
