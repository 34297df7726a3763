//! Our AES-128 CBC-MAC and CTR code (hand-interleaved for the hot paths) against RustCrypto's
//! `cbc-mac` and `ctr` on random keys and inputs.
#![cfg(feature = "crypto")]

use aes::Aes128;
use cbc_mac::{CbcMac, Mac};
use ctr::cipher::{KeyInit, KeyIvInit, StreamCipher};
use idint_wire::crypto::{aes128, cbc_mac, cbc_mac_and_keystream, cbc_mac_lanes, ctr_apply};
use proptest::prelude::*;

/// RustCrypto's CBC-MAC (zero IV) over `data` zero-padded to whole blocks, at least one: the
/// padding rule of ID-INT's CBC-MAC.
fn oracle_cbc_mac(key: &[u8; 16], data: &[u8]) -> [u8; 16] {
    let mut padded = data.to_vec();
    padded.resize(data.len().div_ceil(16).max(1) * 16, 0);
    let mut mac = <CbcMac<Aes128> as KeyInit>::new(key.into());
    mac.update(&padded);
    mac.finalize().into_bytes().into()
}

/// RustCrypto's AES-128-CTR with a 32-bit big-endian counter after the 12-byte nonce.
fn oracle_ctr(key: &[u8; 16], nonce: &[u8; 12], data: &mut [u8]) {
    let mut iv = [0u8; 16];
    iv[..12].copy_from_slice(nonce);
    let mut c = ctr::Ctr32BE::<Aes128>::new(key.into(), &iv.into());
    c.apply_keystream(data);
}

proptest! {
    #[test]
    fn cbc_mac_equals_rustcrypto(key in any::<[u8; 16]>(), data in proptest::collection::vec(any::<u8>(), 0..200)) {
        prop_assert_eq!(cbc_mac(&aes128(&key), &data), oracle_cbc_mac(&key, &data));
    }

    #[test]
    fn ctr_equals_rustcrypto(key in any::<[u8; 16]>(), nonce in any::<[u8; 12]>(), data in proptest::collection::vec(any::<u8>(), 0..200)) {
        let mut ours = data.clone();
        ctr_apply(&aes128(&key), &nonce, &mut ours);
        let mut theirs = data;
        oracle_ctr(&key, &nonce, &mut theirs);
        prop_assert_eq!(ours, theirs);
    }

    /// Up to 8 messages of up to 6 blocks MACed together equal each message MACed alone.
    #[test]
    fn interleaved_cbc_macs_equal_rustcrypto(
        key in any::<[u8; 16]>(),
        messages in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..96), 0..8),
    ) {
        const LANES: usize = 8;
        const MAX_BLOCKS: usize = 6;
        let mut blocks = [[[0u8; 16]; LANES]; MAX_BLOCKS];
        let mut n_blocks = [0u8; LANES];
        for (i, m) in messages.iter().enumerate() {
            for (s, chunk) in m.chunks(16).enumerate() {
                blocks[s][i][..chunk.len()].copy_from_slice(chunk);
            }
            n_blocks[i] = m.len().div_ceil(16) as u8;
        }
        let mut macs = vec![[0u8; 16]; messages.len()];
        cbc_mac_lanes(&aes128(&key), &blocks, &n_blocks, &mut macs);
        for (m, mac) in messages.iter().zip(&macs) {
            prop_assert_eq!(*mac, oracle_cbc_mac(&key, m));
        }
    }

    /// The CBC-MAC run beside keystream blocks gives the same MAC, and the keystream blocks are
    /// the CTR keystream.
    #[test]
    fn mac_with_keystream_equals_rustcrypto(
        key in any::<[u8; 16]>(),
        nonce in any::<[u8; 12]>(),
        data in proptest::collection::vec(any::<u8>(), 16..80),
        stream_blocks in 0usize..5,
    ) {
        let whole: Vec<[u8; 16]> = data
            .chunks(16)
            .map(|c| {
                let mut b = [0u8; 16];
                b[..c.len()].copy_from_slice(c);
                b
            })
            .collect();
        let mut counters: Vec<[u8; 16]> = (0..stream_blocks as u32)
            .map(|i| {
                let mut b = [0u8; 16];
                b[..12].copy_from_slice(&nonce);
                b[12..].copy_from_slice(&i.to_be_bytes());
                b
            })
            .collect();
        let mac = cbc_mac_and_keystream(&aes128(&key), &whole, &mut counters);
        prop_assert_eq!(mac, oracle_cbc_mac(&key, &data));
        let mut stream = vec![0u8; stream_blocks * 16];
        oracle_ctr(&key, &nonce, &mut stream);
        prop_assert_eq!(counters.concat(), stream);
    }
}
