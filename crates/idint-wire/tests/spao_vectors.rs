//! `vectors/scion/spao.json`: SPAO option decoding and the exact MAC input.

use idint_wire::ext::opt_type;
use idint_wire::packet::Packet;
use idint_wire::spao::{SpaoRepr, mac_input};

#[test]
fn spao_mac_input_matches_reference() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../testdata/scion/spao.json"
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let cases = v["vectors"].as_array().unwrap();
    assert_eq!(cases.len(), 4);
    for c in cases {
        let name = c["name"].as_str().unwrap();
        let bytes = hex::decode(c["packet_hex"].as_str().unwrap()).unwrap();
        let pkt = Packet::parse(&bytes).unwrap();
        let e2e = pkt.end_to_end().expect("E2E header");
        let opt = e2e
            .options()
            .map(|o| o.unwrap())
            .find(|o| o.opt_type == opt_type::SPAO)
            .unwrap();
        let spao = SpaoRepr::parse(opt.data).unwrap();
        assert_eq!(u64::from(spao.spi.0), c["spi"].as_u64().unwrap(), "{name}");
        assert_eq!(u64::from(spao.algorithm), c["algorithm"].as_u64().unwrap());
        assert_eq!(spao.timestamp, c["timestamp_sn"].as_u64().unwrap());
        assert_eq!(
            hex::encode(spao.authenticator),
            c["authenticator_hex"].as_str().unwrap()
        );
        let mut input = Vec::new();
        mac_input(&pkt, &spao, |b| input.extend_from_slice(b)).unwrap();
        assert_eq!(
            hex::encode(&input),
            c["mac_input_hex"].as_str().unwrap(),
            "{name}"
        );
        let mut out = vec![0u8; spao.buffer_len()];
        spao.emit(&mut out).unwrap();
        assert_eq!(out, opt.data);
    }
}

/// The authenticator (AES-CMAC of the MAC input) equals the reference's for every vector, and
/// changes with the key.
#[cfg(feature = "crypto")]
#[test]
fn spao_authenticator_matches_reference() {
    use idint_wire::spao::aes_cmac_authenticator;
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../testdata/scion/spao.json"
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    for c in v["vectors"].as_array().unwrap() {
        let name = c["name"].as_str().unwrap();
        let bytes = hex::decode(c["packet_hex"].as_str().unwrap()).unwrap();
        let key: [u8; 16] = hex::decode(c["key_hex"].as_str().unwrap())
            .unwrap()
            .try_into()
            .unwrap();
        let pkt = Packet::parse(&bytes).unwrap();
        let e2e = pkt.end_to_end().unwrap();
        let opt = e2e
            .options()
            .map(|o| o.unwrap())
            .find(|o| o.opt_type == opt_type::SPAO)
            .unwrap();
        let spao = SpaoRepr::parse(opt.data).unwrap();
        let tag = aes_cmac_authenticator(&key, &pkt, &spao).unwrap();
        assert_eq!(
            hex::encode(tag),
            c["authenticator_hex"].as_str().unwrap(),
            "{name}"
        );
        let mut other = key;
        other[0] ^= 1;
        assert_ne!(aes_cmac_authenticator(&other, &pkt, &spao).unwrap(), tag);
    }
}
