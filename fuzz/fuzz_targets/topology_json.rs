//! Arbitrary text as a SCION topology.json: parsing and building every router's configuration
//! never panic; a topology that parses yields configurations for the routers it lists.
#![no_main]

use libfuzzer_sys::fuzz_target;
use scion_topology::Topology;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(topo) = Topology::parse(text, "fuzz/topology.json") else {
        return;
    };
    let ids: Vec<String> = topo.router_ids().map(str::to_string).collect();
    for id in &ids {
        // Errors (e.g. an inconsistent router) are fine; panics are not.
        let _ = topo.router_config_with_key(id, [7; 16]);
        let r = topo.router(id).expect("a listed router is found");
        assert_eq!(&r.id, id);
    }
});
