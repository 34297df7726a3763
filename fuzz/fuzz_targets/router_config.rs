//! Arbitrary text as the router's TOML configuration, next to a valid topology.json and keys
//! directory (the reference router-benchmark example): validation never panics, and an
//! accepted configuration places each SCION interface on one port, the internal network on at
//! most one, and names every device once.
#![no_main]

use std::path::PathBuf;

use libfuzzer_sys::fuzz_target;
use router_core::config::Config;

/// A file beside the example's topology.json and keys/ (it need not exist: only its
/// directory is used).
fn config_path() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../testdata/scion/config_examples/router_benchmark/router.toml"
    ))
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(config) = Config::parse(text, &config_path()) else {
        return;
    };
    let mut seen = std::collections::BTreeSet::new();
    let mut devices = std::collections::BTreeSet::new();
    for p in &config.ports {
        assert!(!p.device.trim().is_empty());
        assert!(
            devices.insert(p.device.clone()),
            "device {} twice",
            p.device
        );
        for i in &p.interfaces {
            assert!(seen.insert(i.id), "interface {} on two ports", i.id);
        }
    }
    assert!(config.ports.iter().filter(|p| p.internal).count() <= 1);
});
