//! CBC-MAC vectors of `vectors/idint/idint.json` (shared with DRKey).
#![cfg(feature = "crypto")]

use idint_wire::crypto::{aes128, cbc_mac};

#[test]
fn cbc_mac_matches_reference_vectors() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../testdata/idint/idint.json"
    ))
    .expect("golden vectors in testdata/");
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let vectors = v["cbc_mac"]["vectors"].as_array().unwrap();
    assert_eq!(vectors.len(), 3);
    for t in vectors {
        let key: [u8; 16] = hex::decode(t["key_hex"].as_str().unwrap())
            .unwrap()
            .try_into()
            .unwrap();
        let data = hex::decode(t["data_hex"].as_str().unwrap()).unwrap();
        let want = hex::decode(t["cbc_mac_hex"].as_str().unwrap()).unwrap();
        assert_eq!(cbc_mac(&aes128(&key), &data).as_slice(), want.as_slice());
    }
}
