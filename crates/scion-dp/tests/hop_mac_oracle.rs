//! The hop-field MAC (one block, or a batch through one AES backend pass) against RustCrypto's
//! `cmac` (RFC 4493) on random keys and blocks.

use aes::Aes128;
use cmac::{Cmac, KeyInit, Mac};
use proptest::prelude::*;
use scion_dp::hop_mac::HopMac;

fn oracle(key: &[u8; 16], block: &[u8; 16]) -> [u8; 16] {
    let mut mac = <Cmac<Aes128> as KeyInit>::new(key.into());
    mac.update(block);
    mac.finalize().into_bytes().into()
}

proptest! {
    #[test]
    fn one_block_equals_rustcrypto(key in any::<[u8; 16]>(), block in any::<[u8; 16]>()) {
        let ours = HopMac::new(&key);
        let want = oracle(&key, &block);
        prop_assert_eq!(ours.compute(&block), want);
        let mut six = [0u8; 6];
        six.copy_from_slice(&want[..6]);
        prop_assert!(ours.verify(&block, &six));
        six[5] ^= 1;
        prop_assert!(!ours.verify(&block, &six));
    }

    #[test]
    fn batch_equals_rustcrypto(key in any::<[u8; 16]>(), blocks in proptest::collection::vec(any::<[u8; 16]>(), 0..70)) {
        let mut batch = blocks.clone();
        HopMac::new(&key).compute_batch(&mut batch);
        for (input, got) in blocks.iter().zip(&batch) {
            prop_assert_eq!(*got, oracle(&key, input));
        }
    }
}
