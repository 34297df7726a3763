//! Loads the example configurations of `testdata/scion/config_examples` and broken
//! variants of them.

use std::path::{Path, PathBuf};

use scion_dp::config::{DispatchedPorts, LinkType, Owner, Router};
use scion_topology::{FieldError, Format, MasterKeys, Topology, TopologyError};

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/scion/config_examples")
}

fn ia(s: &str) -> idint_wire::IsdAsn {
    s.parse().unwrap()
}

#[test]
fn router_benchmark_topology() {
    let dir = examples().join("router_benchmark");
    let topo = Topology::load(dir.join("topology.json")).unwrap();
    assert_eq!(topo.format, Format::Reference);
    assert_eq!(topo.router_ids().collect::<Vec<_>>(), ["br1a", "br1b"]);
    let cfg = topo.router_config("br1a", dir.join("keys")).unwrap();
    assert_eq!(cfg.local_ia, ia("1-ff00:0:1"));
    assert!(cfg.core);
    assert_eq!(cfg.internal_addr, "10.123.10.1:30042".parse().unwrap());
    assert_eq!(cfg.dispatched_ports, DispatchedPorts::Range(1024, 65535));
    let ids: Vec<_> = cfg.interfaces.iter().map(|i| (i.id, i.link_type)).collect();
    assert_eq!(
        ids,
        [
            (2, LinkType::Child),
            (3, LinkType::Child),
            (4, LinkType::Core)
        ]
    );
    assert_eq!(cfg.interfaces[0].owner, Owner::Local);
    assert_eq!(
        cfg.interfaces[2].owner,
        Owner::Sibling("10.123.10.2:30042".parse().unwrap())
    );
    assert_eq!(cfg.interfaces[2].neighbor_ia, ia("2-ff00:0:4"));
    // The forwarding key is the PBKDF2 of the decoded master0.key.
    let keys = MasterKeys::load(dir.join("keys")).unwrap();
    assert_eq!(keys.master0.len(), 16);
    assert_eq!(
        cfg.forwarding_key,
        scion_dp::hop_mac::forwarding_key(&keys.master0)
    );
    assert!(keys.master1.is_some());
    let br = topo.router("br1a").unwrap();
    let u = br.interface(3).unwrap().underlay;
    assert_eq!(u.local, "10.123.3.1:50000".parse().unwrap());
    assert_eq!(u.remote, "10.123.3.3:50000".parse().unwrap());
    assert_eq!(br.interface(3).unwrap().mtu, Some(1280));
    assert!(br.interface(4).is_none());
    Router::new(cfg).unwrap();
    // The sibling sees the same AS from the other side.
    let cfg_b = topo.router_config("br1b", dir.join("keys")).unwrap();
    assert_eq!(cfg_b.interfaces[2].owner, Owner::Local);
    assert!(matches!(cfg_b.interfaces[0].owner, Owner::Sibling(_)));
}

#[test]
fn router_control_testdata_topology() {
    let dir = examples().join("router_control_testdata");
    let topo = Topology::load(dir.join("topology.json")).unwrap();
    let cfg = topo
        .router_config("br1-ff00_0_110-1", dir.join("keys"))
        .unwrap();
    assert_eq!(cfg.local_ia, ia("1-ff00:0:110"));
    assert!(cfg.core);
    assert_eq!(cfg.interfaces.len(), 2);
    assert_eq!(cfg.interfaces[0].link_type, LinkType::Core);
    // Services: the first control-service instance in id order.
    assert_eq!(
        cfg.services,
        [(idint_wire::Svc::CS, "127.0.0.1:60003".parse().unwrap())]
    );
    assert_eq!(topo.ases[0].mtu, Some(1472));
    // br1-ff00_0_110-1's interface 1 is on its internal address: accepted (only the port
    // layout can tell whether the two are told apart). Its sibling's interface 2 has the same
    // local and remote address: the file loads, but that router cannot run with it.
    assert_eq!(
        topo.router("br1-ff00_0_110-1").unwrap().interfaces[0]
            .underlay
            .local,
        cfg.internal_addr
    );
    let e = topo
        .router_config("br1-ff00_0_110-2", dir.join("keys"))
        .unwrap_err();
    let TopologyError::Unusable { field, .. } = &e else {
        panic!("expected an unusable router, got {e}");
    };
    assert_eq!(
        field,
        "border_routers.br1-ff00_0_110-2.interfaces.2.underlay.remote"
    );
    let e = topo.router_config("br9", dir.join("keys")).unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, TopologyError::UnknownRouter { .. }), "{msg}");
    assert!(msg.contains("br1-ff00_0_110-1, br1-ff00_0_110-2"), "{msg}");
}

const APPLIANCE: &str = r#"{
  "isd_as": {
    "64-2:0:9": {
      "shard": 1,
      "internal_scion_mtu": 1472,
      "control": { "address": "10.0.0.2:30252" },
      "discovery": { "address": "10.0.0.2:30254" },
      "router": {
        "internal_address": "10.0.0.1:30042",
        "interfaces": {
          "1": {
            "address": "192.0.2.1:50000",
            "remote_address": "192.0.2.2:50000",
            "remote_isd_as": "64-559",
            "link_type": "parent",
            "scion_mtu": 1452,
            "bfd": { "detect_mult": 3, "desired_min_tx_interval": "200ms",
                     "required_min_rx_interval": "200ms" }
          },
          "7": {
            "address": "[2001:db8::1]:50000",
            "remote_address": "[2001:db8::2]:50000",
            "remote_isd_as": "64-2:0:13",
            "link_type": "child",
            "scion_mtu": 1400
          }
        }
      },
      "gateway": { "control_address": "10.0.0.3:30256", "data_address": "10.0.0.3:30056",
                   "probe_address": "10.0.0.3:30856" }
    }
  }
}"#;

#[test]
fn appliance_format() {
    let topo = Topology::parse(APPLIANCE, "local_topology.json").unwrap();
    assert_eq!(topo.format, Format::Appliance);
    assert_eq!(topo.router_ids().collect::<Vec<_>>(), ["br64-2_0_9-1"]);
    let cfg = topo
        .router_config_with_key("br64-2_0_9-1", [9; 16])
        .unwrap();
    assert_eq!(cfg.local_ia, ia("64-2:0:9"));
    assert!(!cfg.core);
    assert_eq!(cfg.internal_addr, "10.0.0.1:30042".parse().unwrap());
    assert_eq!(cfg.interfaces.len(), 2);
    assert_eq!(cfg.interfaces[0].link_type, LinkType::Parent);
    assert_eq!(cfg.interfaces[1].neighbor_ia, ia("64-2:0:13"));
    assert_eq!(cfg.services.len(), 2);
    assert_eq!(cfg.forwarding_key, [9; 16]);
    let br = topo.router("br64-2_0_9-1").unwrap();
    assert_eq!(
        br.interface(7).unwrap().underlay.remote,
        "[2001:db8::2]:50000".parse().unwrap()
    );
    assert_eq!(br.interface(1).unwrap().mtu, Some(1452));
    assert_eq!(topo.ases[0].mtu, Some(1472));
}

/// Parses `text` (a mutation of a valid file) and returns the field error.
fn field_error(text: &str) -> (String, FieldError, String) {
    match Topology::parse(text, "broken.json") {
        Err(e @ TopologyError::Field { .. }) => {
            let msg = e.to_string();
            assert!(msg.starts_with("broken.json: "), "{msg}");
            let TopologyError::Field { field, reason, .. } = e else {
                unreachable!()
            };
            (field, reason, msg)
        }
        other => panic!("expected a field error, got {other:?}"),
    }
}

fn benchmark_text() -> String {
    std::fs::read_to_string(examples().join("router_benchmark/topology.json")).unwrap()
}

#[test]
fn broken_reference_variants() {
    let good = benchmark_text();
    let cases: &[(&str, &str, &str)] = &[
        (
            r#""isd_as": "1-ff00:0:1""#,
            r#""isd_as": "1-ff00:0""#,
            "isd_as",
        ),
        (r#""isd_as": "1-ff00:0:1""#, r#""isd_as": 7"#, "isd_as"),
        (
            r#""dispatched_ports": "1024-65535""#,
            r#""dispatched_ports": "65535-1024""#,
            "dispatched_ports",
        ),
        (
            r#""internal_addr": "10.123.10.1:30042""#,
            r#""internal_addr": "10.123.10.1""#,
            "border_routers.br1a.internal_addr",
        ),
        (
            r#""remote": "10.123.2.2:50000""#,
            r#""remote": "nowhere""#,
            "border_routers.br1a.interfaces.2.underlay.remote",
        ),
        (
            r#""link_to": "core""#,
            r#""link_to": "sibling""#,
            "border_routers.br1b.interfaces.4.link_to",
        ),
        (
            r#""isd_as": "2-ff00:0:4""#,
            r#""isd_as": "2-ff00:0:4:5""#,
            "border_routers.br1b.interfaces.4.isd_as",
        ),
        (r#""4": {"#, r#""0": {"#, "border_routers.br1b.interfaces.0"),
        (
            r#""4": {"#,
            r#""70000": {"#,
            "border_routers.br1b.interfaces.70000",
        ),
        (r#""4": {"#, r#""2": {"#, "border_routers.br1b.interfaces.2"),
        (r#""mtu": 1400"#, r#""mtu": 140000"#, "mtu"),
        (r#""mtu": 1400"#, r#""mtu": "big""#, "mtu"),
        (
            r#""local": "10.123.4.1:50000""#,
            r#""local": ":x""#,
            "border_routers.br1b.interfaces.4.underlay.local",
        ),
    ];
    for (from, to, field) in cases {
        assert!(good.contains(from), "{from}");
        let (got, _, msg) = field_error(&good.replacen(from, to, 1));
        assert_eq!(&got, field, "{msg}");
    }
    // Missing fields are reported as missing.
    let (f, r, _) = field_error(&good.replacen(r#""isd_as": "1-ff00:0:3","#, "", 1));
    assert_eq!(f, "border_routers.br1a.interfaces.3.isd_as");
    assert_eq!(r, FieldError::Missing);
    let (f, r, _) = field_error(r#"{"isd_as": "1-ff00:0:1"}"#);
    assert_eq!((f.as_str(), r), ("border_routers", FieldError::Missing));
    let (f, r, _) = field_error(
        &good
            .replacen(r#""remote": "10.123.3.3:50000""#, "", 1)
            .replacen(
                r#""local": "10.123.3.1:50000","#,
                r#""local": "10.123.3.1:50000""#,
                1,
            ),
    );
    assert_eq!(f, "border_routers.br1a.interfaces.3.underlay.remote");
    assert_eq!(r, FieldError::Missing);
    // A local address without IP binds to any.
    let t = Topology::parse(
        &good.replacen(r#""local": "10.123.2.1:50000""#, r#""local": ":50002""#, 1),
        "x.json",
    )
    .unwrap();
    let l = t
        .router("br1a")
        .unwrap()
        .interface(2)
        .unwrap()
        .underlay
        .local;
    assert_eq!(l, "0.0.0.0:50002".parse().unwrap());
}

#[test]
fn inconsistent_configs_and_bad_files() {
    let good = benchmark_text();
    // A core link on a non-core AS is accepted by the parser but rejected for the router.
    let t = Topology::parse(&good.replacen(r#""core""#, r#""voting""#, 1), "x.json").unwrap();
    let e = t.router_config_with_key("br1a", [0; 16]).unwrap_err();
    assert!(matches!(e, TopologyError::Config { .. }), "{e}");
    assert!(e.to_string().contains("interface 4"), "{e}");
    // Not JSON.
    let e = Topology::parse(&good[..good.len() / 2], "half.json").unwrap_err();
    assert!(matches!(e, TopologyError::Json { .. }), "{e}");
    assert!(
        e.to_string().starts_with("half.json: not valid JSON"),
        "{e}"
    );
    // Missing file.
    let e = Topology::load("/nonexistent/topology.json").unwrap_err();
    assert!(matches!(e, TopologyError::Io { .. }), "{e}");
    assert_eq!(e.file(), Path::new("/nonexistent/topology.json"));
    // Missing keys directory.
    let t = Topology::parse(&good, "x.json").unwrap();
    let e = t.router_config("br1a", "/nonexistent/keys").unwrap_err();
    assert!(
        e.to_string().contains("/nonexistent/keys/master0.key"),
        "{e}"
    );
    // Peer links need the remote interface ID.
    let peer = good.replacen(r#""link_to": "child""#, r#""link_to": "peer""#, 1);
    let (f, _, _) = field_error(&peer);
    assert_eq!(f, "border_routers.br1a.interfaces.2.remote_interface_id");
    let peer = peer.replacen(
        r#""link_to": "peer""#,
        r#""link_to": "peer", "remote_interface_id": 9"#,
        1,
    );
    let t = Topology::parse(&peer, "x.json").unwrap();
    let i = t.router("br1a").unwrap().interface(2).unwrap();
    assert_eq!(
        (i.link_type, i.remote_interface_id),
        (scion_topology::LinkType::Peer, Some(9))
    );
}

#[test]
fn broken_appliance_variants() {
    let cases: &[(&str, &str, &str)] = &[
        (r#""64-2:0:9": {"#, r#""64-x": {"#, "isd_as.64-x"),
        (
            r#""remote_isd_as": "64-559""#,
            r#""remote_isd_as": 559"#,
            "isd_as.64-2:0:9.router.interfaces.1.remote_isd_as",
        ),
        (
            r#""link_type": "parent""#,
            r#""link_type": "uncle""#,
            "isd_as.64-2:0:9.router.interfaces.1.link_type",
        ),
        (
            r#""internal_address": "10.0.0.1:30042","#,
            "",
            "isd_as.64-2:0:9.router.internal_address",
        ),
        (
            r#""address": "10.0.0.2:30252""#,
            r#""address": "10.0.0.2""#,
            "isd_as.64-2:0:9.control.address",
        ),
        (
            r#""scion_mtu": 1400"#,
            r#""scion_mtu": -1"#,
            "isd_as.64-2:0:9.router.interfaces.7.scion_mtu",
        ),
    ];
    for (from, to, field) in cases {
        assert!(APPLIANCE.contains(from), "{from}");
        let (got, _, msg) = field_error(&APPLIANCE.replacen(from, to, 1));
        assert_eq!(&got, field, "{msg}");
    }
    let (f, r, _) = field_error(r#"{"isd_as": {}}"#);
    assert_eq!(f, "isd_as");
    assert!(matches!(r, FieldError::Invalid(_)));
    let (f, r, _) = field_error(r#"{"isd_as": []}"#);
    assert_eq!(f, "isd_as");
    assert!(matches!(r, FieldError::WrongType(_)));
}

#[test]
fn bfd_settings_are_read_per_interface() {
    let topo = Topology::parse(APPLIANCE, "t.json").unwrap();
    let r = &topo.ases[0].routers[0];
    let one = r.interfaces.iter().find(|i| i.id == 1).unwrap();
    assert_eq!(one.bfd.detect_mult, Some(3));
    assert_eq!(
        one.bfd.desired_min_tx,
        Some(std::time::Duration::from_millis(200))
    );
    assert_eq!(
        one.bfd.required_min_rx,
        Some(std::time::Duration::from_millis(200))
    );
    assert_eq!(one.bfd.disable, None);
    let seven = r.interfaces.iter().find(|i| i.id == 7).unwrap();
    assert_eq!(seven.bfd, scion_topology::BfdSettings::default());
    let off = APPLIANCE.replace(
        r#""bfd": { "detect_mult": 3"#,
        r#""bfd": { "disable": true, "detect_mult": 3"#,
    );
    let topo = Topology::parse(&off, "t.json").unwrap();
    assert_eq!(
        topo.ases[0].routers[0].interfaces[0].bfd.disable,
        Some(true)
    );
    let bad = APPLIANCE.replace(
        r#""desired_min_tx_interval": "200ms""#,
        r#""desired_min_tx_interval": "fast""#,
    );
    let e = Topology::parse(&bad, "t.json").unwrap_err().to_string();
    assert!(e.contains("desired_min_tx_interval"), "{e}");
}
