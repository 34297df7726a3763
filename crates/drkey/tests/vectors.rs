//! Every value of `vectors/scion/drkey.json` and the ID-INT examples of `idint.md` §10.

use drkey::keyfile::{MAX_MASTER_LEN, decode_master_key};
use drkey::{
    Epoch, Key, KeyType, Protocol, as_host, generic_as_host, generic_host_as, host_as, host_host,
    level1, level1_input, level2_input, secret_value, sv_password,
};
use idint_wire::{HostAddr, IsdAsn};

const VECTORS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/scion");

fn json() -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(format!("{VECTORS}/drkey.json")).unwrap())
        .unwrap()
}

fn key(v: &serde_json::Value) -> Key {
    Key::from_bytes(
        hex::decode(v.as_str().unwrap())
            .unwrap()
            .try_into()
            .unwrap(),
    )
}

fn host(s: &str) -> HostAddr {
    match s.parse::<std::net::IpAddr>().unwrap() {
        std::net::IpAddr::V4(a) => a.into(),
        std::net::IpAddr::V6(a) => a.into(),
    }
}

#[test]
fn secret_values() {
    let v = json();
    let cases = v["sv"]["vectors"].as_array().unwrap();
    assert_eq!(cases.len(), 3);
    for c in cases {
        let secret = hex::decode(c["as_secret_hex"].as_str().unwrap()).unwrap();
        let epoch = Epoch::new(
            c["epoch_begin_unix"].as_u64().unwrap() as u32,
            c["epoch_end_unix"].as_u64().unwrap() as u32,
        )
        .unwrap();
        let proto = Protocol(c["protocol"].as_u64().unwrap() as u16);
        let mut pw = [0u8; 8 + 64 + 10];
        let n = sv_password(&secret, proto, epoch, &mut pw).unwrap();
        assert_eq!(
            hex::encode(&pw[..n]),
            c["pbkdf2_password_hex"].as_str().unwrap()
        );
        assert_eq!(
            secret_value(&secret, proto, epoch).unwrap(),
            key(&c["sv_hex"]),
            "{}",
            c["name"]
        );
    }
}

/// The parent key: given as hex, or described as "(SV of secret S, proto P, epoch B-E)", in
/// which case it is derived here from the parameters (so the secret-value step is covered too).
fn parent_key(c: &serde_json::Value) -> Key {
    let text = c["parent_key_hex"].as_str().unwrap();
    if let Ok(b) = hex::decode(text) {
        return Key::from_bytes(b.try_into().unwrap());
    }
    let num_after = |tag: &str| -> Vec<u32> {
        let rest = &text[text.find(tag).unwrap() + tag.len()..];
        rest.split(|ch: char| !ch.is_ascii_digit())
            .filter(|x| !x.is_empty())
            .take(2)
            .map(|x| x.parse().unwrap())
            .collect()
    };
    let proto = num_after("proto ")[0] as u16;
    let ep = num_after("epoch ");
    let secret = hex::decode(c["params"]["sv_secret_hex"].as_str().unwrap()).unwrap();
    secret_value(&secret, Protocol(proto), Epoch::new(ep[0], ep[1]).unwrap()).unwrap()
}

#[test]
fn derivations() {
    let v = json();
    let cases = v["derivations"]["vectors"].as_array().unwrap();
    assert_eq!(cases.len(), 13);
    for c in cases {
        let name = c["name"].as_str().unwrap();
        let level = c["level"].as_str().unwrap();
        let deriver = c["deriver"].as_str().unwrap();
        let p = &c["params"];
        let parent_key = parent_key(c);
        let parent = parent_key.cipher();
        let want_input = c["cbc_mac_input_hex"].as_str().unwrap();
        let generic = deriver.starts_with("generic") && !level.starts_with('1');
        let proto = p["protocol"].as_u64().map(|x| Protocol(x as u16));
        let (input, got) = match level {
            l if l.starts_with("1 ") => {
                let dst: IsdAsn = p["dst_ia"].as_str().unwrap().parse().unwrap();
                (level1_input(dst).to_vec(), level1(&parent_key, dst))
            }
            "2 (AS-host)" => {
                let h = host(p["dst_host"].as_str().unwrap());
                let pr = if generic { proto } else { None };
                let (b, n) = level2_input(KeyType::AsHost, pr, &h).unwrap();
                let k = if generic {
                    generic_as_host(&parent, proto.unwrap(), &h)
                } else {
                    as_host(&parent, &h)
                };
                (b[..n].to_vec(), k.unwrap())
            }
            "2 (host-AS)" => {
                let h = host(p["src_host"].as_str().unwrap());
                let pr = if generic { proto } else { None };
                let (b, n) = level2_input(KeyType::HostAs, pr, &h).unwrap();
                let k = if generic {
                    generic_host_as(&parent, proto.unwrap(), &h)
                } else {
                    host_as(&parent, &h)
                };
                (b[..n].to_vec(), k.unwrap())
            }
            "3 (host-host)" => {
                let h = host(p["dst_host"].as_str().unwrap());
                let (b, n) = level2_input(KeyType::HostHost, None, &h).unwrap();
                (b[..n].to_vec(), host_host(&parent, &h).unwrap())
            }
            other => panic!("{name}: unknown level {other}"),
        };
        // The vector spells out the zero-padded block(s); ours stops at the last data byte.
        let mut padded = input.clone();
        padded.resize(want_input.len() / 2, 0);
        assert_eq!(hex::encode(&padded), want_input, "{name}: PRF input");
        assert_eq!(got, key(&c["key_hex"]), "{name}");
        if let Some(g) = c["repo_golden_hex"].as_str() {
            assert_eq!(hex::encode(got.as_bytes()), g, "{name}: upstream golden");
        }
    }
}

#[test]
fn idint_examples_of_the_spec_digest() {
    // idint.md §10: secret 00..07 || 0x11, protocol 1, epoch [0, 1], 1-ff00:0:111 -> 1-ff00:0:112.
    let secret: Vec<u8> = (0u8..8).chain([0x11]).collect();
    let sv = secret_value(&secret, Protocol::SCMP, Epoch::new(0, 1).unwrap()).unwrap();
    assert_eq!(
        hex::encode(sv.as_bytes()),
        "b124c2d28a3198068e1369fdaf1b61bb"
    );
    let l1 = level1(&sv, "1-ff00:0:112".parse().unwrap());
    assert_eq!(
        hex::encode(l1.as_bytes()),
        "59ba6ccbd679e3aa13bd2340475a6a98"
    );
    let l1c = l1.cipher();
    let ash = as_host(&l1c, &host("127.0.0.1")).unwrap();
    assert_eq!(
        hex::encode(ash.as_bytes()),
        "b5a756caa2e030f3a2b6dbfb03e03eb0"
    );
    let hsa = host_as(&l1c, &host("127.0.0.2")).unwrap();
    assert_eq!(
        hex::encode(hsa.as_bytes()),
        "4cca42cd61ec9f84802b65f7774e9854"
    );
    let hh = host_host(&hsa.cipher(), &host("127.0.0.1")).unwrap();
    assert_eq!(
        hex::encode(hh.as_bytes()),
        "164fc8460825bc1abf88b4689c70f559"
    );
}

#[test]
fn master_key_files_of_the_config_examples() {
    for dir in ["router_benchmark", "router_control_testdata"] {
        let content =
            std::fs::read(format!("{VECTORS}/config_examples/{dir}/keys/master0.key")).unwrap();
        let mut out = [0u8; MAX_MASTER_LEN];
        let n = decode_master_key(&content, &mut out).unwrap();
        assert_eq!(n, 16, "{dir}");
    }
}

/// SCION packs an IPv4-mapped IPv6 host as the IPv4 host before every level-2/3 derivation
/// (`slayers.PackAddr` unmaps it): the keys of `::ffff:a.b.c.d` are those of `a.b.c.d`.
#[test]
fn ipv4_mapped_ipv6_hosts_derive_as_ipv4() {
    use drkey::{Key, Protocol, as_host, generic_as_host, host_as, host_host};
    use idint_wire::HostAddr;
    let l1 = Key::from_bytes([0x59; 16]).cipher();
    for (v4, v6) in [
        ("127.0.0.1", "::ffff:127.0.0.1"),
        ("10.1.2.3", "::ffff:10.1.2.3"),
    ] {
        let a = HostAddr::V4(v4.parse().unwrap());
        let b = HostAddr::V6(v6.parse().unwrap());
        assert_eq!(as_host(&l1, &a).unwrap(), as_host(&l1, &b).unwrap());
        assert_eq!(host_as(&l1, &a).unwrap(), host_as(&l1, &b).unwrap());
        let ha = host_as(&l1, &a).unwrap().cipher();
        assert_eq!(host_host(&ha, &a).unwrap(), host_host(&ha, &b).unwrap());
        assert_eq!(
            generic_as_host(&l1, Protocol::IDINT, &a).unwrap(),
            generic_as_host(&l1, Protocol::IDINT, &b).unwrap()
        );
    }
    // Other IPv6 hosts, including the IPv4-compatible form, stay IPv6.
    let v6 = HostAddr::V6("::127.0.0.1".parse().unwrap());
    let v4 = HostAddr::V4("127.0.0.1".parse().unwrap());
    assert_ne!(as_host(&l1, &v6).unwrap(), as_host(&l1, &v4).unwrap());
}
