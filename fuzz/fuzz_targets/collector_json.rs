//! Arbitrary bytes as a JSON report batch (`idint_report::json`, what the collector's
//! `POST /api/v1/reports` with `Content-Type: application/json` decodes): decoding never panics, and a batch that decodes survives
//! `encode` and a second `decode` unchanged (nothing a client sends is silently altered).
#![no_main]

use idint_report::json::{decode, encode};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(batch) = decode(data) else {
        return;
    };
    let text = serde_json::to_vec(&encode(&batch)).expect("encodes");
    let again = decode(&text).expect("an encoded batch decodes");
    assert_eq!(again, batch);
});
