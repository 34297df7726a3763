//! Arbitrary bytes as an `idint-ping` ping or reply payload: decoding never panics, and what
//! decodes encodes back to the same bytes.
#![no_main]

use idint_host::payload::{Ping, Reply};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(p) = Ping::decode(data) {
        let mut b = Vec::new();
        p.encode(&mut b).expect("a decoded ping encodes");
        assert_eq!(b, data);
    }
    if let Ok(r) = Reply::decode(data) {
        let mut b = Vec::new();
        r.encode(&mut b, usize::MAX)
            .expect("a decoded reply encodes");
        assert_eq!(Reply::decode(&b), Ok(r));
    }
});
