//! `vectors/scion/hf_mac.json`: forwarding-key derivation and hop-field MACs.

use scion_dp::hop_mac::{HopMac, forwarding_key};

fn vectors() -> serde_json::Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../testdata/scion/hf_mac.json"
    );
    serde_json::from_str(&std::fs::read_to_string(path).expect("golden vectors beside checkout"))
        .unwrap()
}

fn h16(v: &serde_json::Value) -> [u8; 16] {
    hex::decode(v.as_str().unwrap())
        .unwrap()
        .try_into()
        .unwrap()
}

#[test]
fn forwarding_key_derivation() {
    let v = vectors();
    let cases = v["key_derivation"]["vectors"].as_array().unwrap();
    assert!(!cases.is_empty());
    for c in cases {
        let master = hex::decode(c["master_hex"].as_str().unwrap()).unwrap();
        assert_eq!(
            forwarding_key(&master),
            h16(&c["hf_key_hex"]),
            "{}",
            c["source"]
        );
    }
}

#[test]
fn hop_field_macs() {
    let v = vectors();
    let cases = v["mac"]["vectors"].as_array().unwrap();
    assert!(cases.len() >= 3);
    for c in cases {
        let key = h16(&c["hf_key_hex"]);
        let m = HopMac::new(&key);
        let input = h16(&c["mac_input_hex"]);
        let full = m.compute(&input);
        assert_eq!(full, h16(&c["cmac_full_hex"]));
        let mac6: [u8; 6] = hex::decode(c["mac6_hex"].as_str().unwrap())
            .unwrap()
            .try_into()
            .unwrap();
        assert!(m.verify(&input, &mac6));
        let seg_id = c["seg_id"].as_u64().unwrap() as u16;
        let xored = seg_id ^ u16::from_be_bytes([full[0], full[1]]);
        assert_eq!(u64::from(xored), c["seg_id_xor_mac"].as_u64().unwrap());
    }
}
