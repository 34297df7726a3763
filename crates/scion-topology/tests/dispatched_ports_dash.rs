//! `"dispatched_ports": "-"` is how scionproto topologies say "no dispatched ports" (Go
//! `private/topology/topology.go` validatePortRange accepts "" and "-" alike).

use scion_topology::{DispatchedPorts, Topology};

const TOPO: &str = r#"{
  "attributes": [], "isd_as": "1-ff00:0:112", "mtu": 1450, "dispatched_ports": "-",
  "border_routers": { "br1-ff00_0_112-1": { "internal_addr": "127.0.0.57:31032",
    "interfaces": { "495": { "underlay": { "public": "127.0.0.16:50000",
      "remote": "127.0.0.17:50000" }, "isd_as": "1-ff00:0:130", "link_to": "parent",
      "mtu": 1472 } } } }
}"#;

#[test]
fn dispatched_ports_dash_means_none() {
    let topo = Topology::parse(TOPO, "topology.json").unwrap();
    assert_eq!(topo.ases[0].dispatched_ports, DispatchedPorts::None);
    let cfg = topo
        .router_config_with_key("br1-ff00_0_112-1", [1; 16])
        .unwrap();
    assert_eq!(cfg.dispatched_ports.underlay_port(31000), 30041);
    // Still refused: a half range.
    for bad in ["-1", "1-", "--"] {
        let t = TOPO.replace(
            r#""dispatched_ports": "-""#,
            &format!(r#""dispatched_ports": "{bad}""#),
        );
        assert!(Topology::parse(&t, "topology.json").is_err(), "{bad}");
    }
}
