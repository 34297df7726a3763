use crate::{FieldError, Topology, TopologyError};

/// The router_benchmark example: core AS 1-ff00:0:1, br1a owns 2 and 3, br1b owns 4.
const BASE: &str = r#"{
  "attributes": ["core"],
  "isd_as": "1-ff00:0:1",
  "mtu": 1400,
  "dispatched_ports": "1024-65535",
  "border_routers": {
"br1a": {
  "internal_addr": "10.123.10.1:30042",
  "interfaces": {
    "2": {
      "underlay": { "local": "10.123.2.1:50000", "remote": "10.123.2.2:50000" },
      "isd_as": "1-ff00:0:2", "link_to": "child", "mtu": 1280
    },
    "3": {
      "underlay": { "local": "10.123.3.1:50000", "remote": "10.123.3.3:50000" },
      "isd_as": "1-ff00:0:3", "link_to": "child", "mtu": 1280
    }
  }
},
"br1b": {
  "internal_addr": "10.123.10.2:30042",
  "interfaces": {
    "4": {
      "underlay": { "local": "10.123.4.1:50000", "remote": "10.123.4.4:50000" },
      "isd_as": "2-ff00:0:4", "link_to": "core", "mtu": 1280
    }
  }
}
  }
}"#;

const APPLIANCE: &str = r#"{ "isd_as": { "64-2:0:9": {
  "internal_scion_mtu": 1472,
  "control": { "address": "10.0.0.2:30252" },
  "router": { "internal_address": "10.0.0.1:30042", "interfaces": {
"1": { "address": "192.0.2.1:50000", "remote_address": "192.0.2.2:50000",
       "remote_isd_as": "64-559", "link_type": "parent", "scion_mtu": 1452 },
"7": { "address": "[2001:db8::1]:50000", "remote_address": "[2001:db8::2]:50000",
       "remote_isd_as": "64-2:0:13", "link_type": "child", "scion_mtu": 1400 } } } } } }"#;

/// `text` with the first `from` replaced by `to` (which must be there).
fn edit(text: &str, from: &str, to: &str) -> String {
    assert!(text.contains(from), "{from}");
    text.replacen(from, to, 1)
}

/// The field and message of the error `text` is refused with.
fn refused(text: &str) -> (String, String) {
    match Topology::parse(text, "t.json") {
        Err(e @ TopologyError::Field { .. }) => {
            let msg = e.to_string();
            let TopologyError::Field { field, reason, .. } = e else {
                unreachable!()
            };
            assert!(matches!(reason, FieldError::Invalid(_)), "{msg}");
            (field, msg)
        }
        other => panic!("expected a field error, got {other:?}"),
    }
}

fn assert_refused(text: &str, field: &str, words: &str) {
    let (f, msg) = refused(text);
    assert_eq!(f, field, "{msg}");
    assert!(msg.contains(words), "{msg:?} lacks {words:?}");
}

#[test]
fn repeated_keys_are_refused() {
    // Two interfaces "2" (the second used to replace the first).
    let t = edit(BASE, r#""3": {"#, r#""2": {"#);
    assert_refused(&t, "border_routers.br1a.interfaces.2", "appears twice");
    // Two routers "br1a".
    let t = edit(BASE, r#""br1b": {"#, r#""br1a": {"#);
    assert_refused(&t, "border_routers.br1a", "again on line 20");
    // A repeated scalar field.
    let t = edit(BASE, r#""mtu": 1400,"#, r#""mtu": 1400, "mtu": 9000,"#);
    assert_refused(&t, "mtu", "\"mtu\" appears twice");
    // Appliance: one AS key twice, and one AS spelled two ways.
    let t = edit(
        APPLIANCE,
        r#"{ "isd_as": {"#,
        r#"{ "isd_as": { "64-2:0:9": { "router": { "internal_address": "10.9.9.9:1" } },"#,
    );
    assert_refused(&t, "isd_as.64-2:0:9", "appears twice");
    let t = edit(
        APPLIANCE,
        r#"{ "isd_as": {"#,
        r#"{ "isd_as": { "64-0002:0000:0009": { "router": { "internal_address": "10.9.9.9:1" } },"#,
    );
    let (f, msg) = refused(&t);
    assert!(f.starts_with("isd_as.64-"), "{msg}");
    assert!(msg.contains("the same AS as"), "{msg}");
    assert!(
        msg.contains("64-0002:0000:0009") && msg.contains("64-2:0:9"),
        "{msg}"
    );
}

#[test]
fn node_ids_are_optional_32_bit_and_unique_in_an_as() {
    let t = Topology::parse(BASE, "t.json").unwrap();
    assert!(t.ases[0].routers.iter().all(|r| r.node_id.is_none()));
    let t = edit(BASE, r#""br1a": {"#, r#""br1a": { "id": 4294967295,"#);
    let t = edit(&t, r#""br1b": {"#, r#""br1b": { "id": 0,"#);
    let topo = Topology::parse(&t, "t.json").unwrap();
    assert_eq!(topo.router("br1a").unwrap().node_id, Some(u32::MAX));
    assert_eq!(topo.router("br1b").unwrap().node_id, Some(0));
    // `null` is no id.
    let t = edit(BASE, r#""br1a": {"#, r#""br1a": { "id": null,"#);
    assert_eq!(
        Topology::parse(&t, "t.json")
            .unwrap()
            .router("br1a")
            .unwrap()
            .node_id,
        None
    );
    for bad in ["4294967296", "-1", "1.5", "\"7\"", "[]"] {
        let t = edit(BASE, r#""br1b": {"#, &format!(r#""br1b": {{ "id": {bad},"#));
        assert_refused(&t, "border_routers.br1b.id", "is not a node id");
    }
    let t = edit(BASE, r#""br1a": {"#, r#""br1a": { "id": 7,"#);
    let t = edit(&t, r#""br1b": {"#, r#""br1b": { "id": 7,"#);
    assert_refused(
        &t,
        "border_routers.br1b.id",
        "border routers \"br1a\" and \"br1b\" both have id 7",
    );
    // Appliance format: `router.id`.
    let t = edit(APPLIANCE, r#""router": {"#, r#""router": { "id": 3,"#);
    assert_eq!(
        Topology::parse(&t, "t.json").unwrap().ases[0].routers[0].node_id,
        Some(3)
    );
    let t = edit(APPLIANCE, r#""router": {"#, r#""router": { "id": "x","#);
    assert_refused(&t, "isd_as.64-2:0:9.router.id", "is not a node id");
}

#[test]
fn mtus_below_the_minimum_are_refused() {
    let words = "below the minimum of 1280";
    for bad in ["0", "1", "1279"] {
        let t = edit(BASE, r#""mtu": 1400"#, &format!(r#""mtu": {bad}"#));
        assert_refused(&t, "mtu", words);
        let t = edit(BASE, r#""mtu": 1280"#, &format!(r#""mtu": {bad}"#));
        assert_refused(&t, "border_routers.br1a.interfaces.2.mtu", words);
        let t = edit(APPLIANCE, "1452", bad);
        assert_refused(&t, "isd_as.64-2:0:9.router.interfaces.1.scion_mtu", words);
        let t = edit(APPLIANCE, "1472", bad);
        assert_refused(&t, "isd_as.64-2:0:9.internal_scion_mtu", words);
    }
    let t = edit(BASE, r#""mtu": 1400"#, r#""mtu": 1280"#);
    assert_eq!(
        Topology::parse(&t, "t.json").unwrap().ases[0].mtu,
        Some(1280)
    );
}

#[test]
fn wildcards_and_odd_interface_ids_are_refused() {
    for ia in ["0-0", "1-0", "0-ff00:0:1"] {
        let t = edit(
            BASE,
            r#""isd_as": "1-ff00:0:1""#,
            &format!(r#""isd_as": "{ia}""#),
        );
        assert_refused(&t, "isd_as", "wildcard");
        let t = edit(
            BASE,
            r#""isd_as": "1-ff00:0:2""#,
            &format!(r#""isd_as": "{ia}""#),
        );
        assert_refused(&t, "border_routers.br1a.interfaces.2.isd_as", "wildcard");
    }
    let t = edit(APPLIANCE, r#""64-2:0:9": {"#, r#""64-0": {"#);
    assert_refused(&t, "isd_as.64-0", "wildcard");
    for (key, words) in [
        ("02", "leading zeros; write it as \"2\""),
        ("+2", "not a decimal number"),
        (" 2", "not a decimal number"),
        ("", "not a decimal number"),
    ] {
        let t = edit(BASE, r#""2": {"#, &format!(r#""{key}": {{"#));
        assert_refused(&t, &format!("border_routers.br1a.interfaces.{key}"), words);
    }
    // "2" next to "02": the non-canonical one is named, not a confusing duplicate.
    let t = edit(
        BASE,
        r#""3": {"#,
        r#""02": { "underlay": { "local": "10.123.9.1:50000", "remote": "10.123.9.2:50000" },
                   "isd_as": "1-ff00:0:9", "link_to": "child" }, "3": {"#,
    );
    assert_refused(&t, "border_routers.br1a.interfaces.02", "leading zeros");
    // remote_interface_id 0 (here on a peer link, which needs a real one).
    let t = edit(
        BASE,
        r#""link_to": "child""#,
        r#""link_to": "peer", "remote_interface_id": 0"#,
    );
    assert_refused(
        &t,
        "border_routers.br1a.interfaces.2.remote_interface_id",
        "0 is reserved",
    );
    let t = edit(
        APPLIANCE,
        r#""link_type": "parent""#,
        r#""link_type": "peer", "remote_interface_id": 0"#,
    );
    assert_refused(
        &t,
        "isd_as.64-2:0:9.router.interfaces.1.remote_interface_id",
        "0 is reserved",
    );
}

#[test]
fn local_public_bind_core_and_stray_keys() {
    let up = r#""local": "10.123.2.1:50000","#;
    // `public` (older name of `local`) with a different value: refused; equal: fine.
    let t = edit(
        BASE,
        up,
        r#""local": "10.123.2.1:50000", "public": "10.9.9.9:1","#,
    );
    assert_refused(
        &t,
        "border_routers.br1a.interfaces.2.underlay.public",
        "different values",
    );
    let t = edit(
        BASE,
        up,
        r#""local": "10.123.2.1:50000", "public": "10.123.2.1:50000","#,
    );
    Topology::parse(&t, "t.json").unwrap();
    let t = edit(BASE, up, r#""public": "10.123.2.1:50000","#);
    let topo = Topology::parse(&t, "t.json").unwrap();
    let u = topo.router("br1a").unwrap().interface(2).unwrap().underlay;
    assert_eq!(u.local, "10.123.2.1:50000".parse().unwrap());
    let t = edit(
        BASE,
        up,
        r#""local": "10.123.2.1:50000", "bind": "10.0.0.1","#,
    );
    assert_refused(
        &t,
        "border_routers.br1a.interfaces.2.underlay.bind",
        "not supported",
    );
    // Appliance: `core` and `attributes` disagreeing.
    let t = edit(
        APPLIANCE,
        r#""internal_scion_mtu": 1472,"#,
        r#""internal_scion_mtu": 1472, "core": false, "attributes": ["core"],"#,
    );
    assert_refused(&t, "isd_as.64-2:0:9.attributes", "`core` is false");
    let t = edit(
        APPLIANCE,
        r#""internal_scion_mtu": 1472,"#,
        r#""internal_scion_mtu": 1472, "core": true, "attributes": ["core"],"#,
    );
    assert!(Topology::parse(&t, "t.json").unwrap().ases[0].core);
    // Reference-format `border_routers` in an appliance file.
    let t = edit(
        APPLIANCE,
        r#""internal_scion_mtu": 1472,"#,
        r#""border_routers": {},"#,
    );
    assert_refused(&t, "isd_as.64-2:0:9.border_routers", "reference-format key");
    let t = edit(
        APPLIANCE,
        r#"{ "isd_as": {"#,
        r#"{ "border_routers": {}, "isd_as": {"#,
    );
    assert_refused(&t, "border_routers", "reference-format key");
}

#[test]
fn addresses_that_cannot_work_are_refused() {
    let p = "border_routers.br1a";
    let i2 = "border_routers.br1a.interfaces.2.underlay";
    let cases: &[(&str, &str, String, &str)] = &[
        // IPv4 local, IPv6 remote.
        (
            r#""remote": "10.123.2.2:50000""#,
            r#""remote": "[2001:db8::2]:50000""#,
            format!("{i2}.local"),
            "same IP version",
        ),
        (
            r#""internal_addr": "10.123.10.1:30042""#,
            r#""internal_addr": "0.0.0.0:30042""#,
            format!("{p}.internal_addr"),
            "unspecified address",
        ),
        (
            r#""internal_addr": "10.123.10.1:30042""#,
            r#""internal_addr": "[ff02::1]:30042""#,
            format!("{p}.internal_addr"),
            "multicast",
        ),
        (
            r#""remote": "10.123.2.2:50000""#,
            r#""remote": "0.0.0.0:50000""#,
            format!("{i2}.remote"),
            "unspecified address",
        ),
        (
            r#""remote": "10.123.2.2:50000""#,
            r#""remote": "255.255.255.255:50000""#,
            format!("{i2}.remote"),
            "broadcast address",
        ),
        (
            r#""remote": "10.123.2.2:50000""#,
            r#""remote": "224.0.0.1:50000""#,
            format!("{i2}.remote"),
            "multicast",
        ),
        (
            r#""remote": "10.123.2.2:50000""#,
            r#""remote": "10.123.2.2:0""#,
            format!("{i2}.remote"),
            "port 0",
        ),
        (
            r#""local": "10.123.2.1:50000""#,
            r#""local": "10.123.2.1:0""#,
            format!("{i2}.local"),
            "port 0",
        ),
        (
            r#""local": "10.123.2.1:50000""#,
            r#""local": "224.0.0.1:50000""#,
            format!("{i2}.local"),
            "multicast",
        ),
        // A sibling with this router's internal address.
        (
            r#""internal_addr": "10.123.10.2:30042""#,
            r#""internal_addr": "10.123.10.1:30042""#,
            "border_routers.br1b.internal_addr".into(),
            "also the internal address of router br1a",
        ),
    ];
    for (from, to, field, words) in cases {
        assert_refused(&edit(BASE, from, to), field, words);
    }
    let t = edit(
        APPLIANCE,
        r#""remote_address": "192.0.2.2:50000""#,
        r#""remote_address": "[2001:db8::9]:1""#,
    );
    assert_refused(
        &t,
        "isd_as.64-2:0:9.router.interfaces.1.address",
        "same IP version",
    );
}

#[test]
fn conflicts_of_own_links_make_only_that_router_unusable() {
    let unusable = |t: &str, id: &str| match Topology::parse(t, "t.json")
        .unwrap()
        .router_config_with_key(id, [1; 16])
    {
        Err(e @ TopologyError::Unusable { .. }) => {
            let msg = e.to_string();
            let TopologyError::Unusable { field, .. } = e else {
                unreachable!()
            };
            (field, msg)
        }
        other => panic!("expected router {id} to be unusable, got {other:?}"),
    };
    let ok = |t: &str, id: &str| {
        Topology::parse(t, "t.json")
            .unwrap()
            .router_config_with_key(id, [1; 16])
            .unwrap();
    };
    // local == remote on br1a's interface 2: br1a cannot run, br1b can.
    let t = edit(
        BASE,
        r#""remote": "10.123.2.2:50000""#,
        r#""remote": "10.123.2.1:50000""#,
    );
    let (f, msg) = unusable(&t, "br1a");
    assert_eq!(
        f, "border_routers.br1a.interfaces.2.underlay.remote",
        "{msg}"
    );
    assert!(msg.contains("router br1a cannot run"), "{msg}");
    assert!(msg.contains("cannot be one UDP socket"), "{msg}");
    ok(&t, "br1b");
    // An internal address without a port (scionproto's test topologies have them): the
    // file loads; that router cannot run, nor can its siblings, which hand it packets.
    let t = edit(
        BASE,
        r#""internal_addr": "10.123.10.1:30042""#,
        r#""internal_addr": "10.123.10.1:0""#,
    );
    let (f, msg) = unusable(&t, "br1a");
    assert_eq!(f, "border_routers.br1a.internal_addr", "{msg}");
    assert!(msg.contains("port 0"), "{msg}");
    let (f, msg) = unusable(&t, "br1b");
    assert_eq!(f, "border_routers.br1a.internal_addr", "{msg}");
    assert!(msg.contains("sibling router br1a"), "{msg}");
    let t = edit(
        APPLIANCE,
        r#""internal_address": "10.0.0.1:30042""#,
        r#""internal_address": "10.0.0.1:0""#,
    );
    let (f, msg) = unusable(&t, "br64-2_0_9-1");
    assert_eq!(f, "isd_as.64-2:0:9.router.internal_address", "{msg}");
    // Two interfaces on one local address, also through the unspecified address.
    for local in ["10.123.2.1:50000", "0.0.0.0:50000", ":50000"] {
        let t = edit(
            BASE,
            r#""local": "10.123.3.1:50000""#,
            &format!(r#""local": "{local}""#),
        );
        let (f, msg) = unusable(&t, "br1a");
        assert_eq!(
            f, "border_routers.br1a.interfaces.3.underlay.local",
            "{msg}"
        );
        assert!(
            msg.contains("overlaps interface 2's local address"),
            "{msg}"
        );
        ok(&t, "br1b");
    }
    // A different port, or the other IP version, does not overlap.
    let t = edit(
        BASE,
        r#""local": "10.123.3.1:50000""#,
        r#""local": ":50001""#,
    );
    ok(&t, "br1a");
    // An interface on the router's internal address is accepted (SCION's test data has
    // one): only the port layout can tell whether the two are told apart.
    let t = edit(
        BASE,
        r#""local": "10.123.2.1:50000""#,
        r#""local": "10.123.10.1:30042""#,
    );
    ok(&t, "br1a");
}
