//! An interface whose local underlay has no IP (`":port"`) gets frames addressed to the
//! router's internal IP; when that is of the other IP family the error says so, instead of
//! claiming that the link's two ends differ in family (they do not).

use idint_pktgen::{GenError, Generator, Options};
use scion_topology::Topology;

#[test]
fn unspecified_local_of_the_other_family_is_explained() {
    let dir = std::env::temp_dir().join(format!("idint-pktgen-anylocal-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("keys")).unwrap();
    std::fs::write(dir.join("keys/master0.key"), "ASNFZ4mrze8BI0VniavN7w==\n").unwrap();
    let topo = Topology::parse(
        r#"{ "isd_as": "1-ff00:0:110", "border_routers": { "br1": {
          "internal_addr": "10.0.0.1:30042", "interfaces": {
            "1": { "underlay": { "local": "192.0.2.1:50000", "remote": "192.0.2.2:50000" },
                   "isd_as": "1-ff00:0:100", "link_to": "parent" },
            "2": { "underlay": { "local": ":50002", "remote": "[2001:db8::2]:50000" },
                   "isd_as": "1-ff00:0:111", "link_to": "child" } } } } }"#,
        "topology.json",
    )
    .unwrap();
    // The topology itself is fine: both ends of link 2 are IPv6.
    let u = topo.router("br1").unwrap().interface(2).unwrap().underlay;
    assert_eq!(u.local.is_ipv6(), u.remote.is_ipv6());
    let e = Generator::new(
        &topo,
        "br1",
        dir.join("keys"),
        Options::new(1_763_800_000_000_000_000),
    )
    .unwrap_err();
    let GenError::Options(msg) = e else {
        panic!("expected an options error, got {e}")
    };
    assert!(
        !msg.contains("local and remote underlay of different IP families"),
        "{msg}"
    );
    assert!(
        msg.contains("interface 2") && msg.contains("no local IP"),
        "{msg}"
    );
    std::fs::remove_dir_all(dir).unwrap();
}
