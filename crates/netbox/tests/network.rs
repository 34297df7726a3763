//! The network in a box, smaller (four ASes, five routers), as an integration test: the same
//! end-to-end checks as the main job (`./scripts/run.sh`), faults included, with fewer pings.
//! Needs root, the stores, tshark, and the workspace's debug binaries `idint-router`,
//! `idint-collector` and `idint-ping` (`cargo test --workspace` builds them).

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use netbox::files::Storage;
use netbox::run::{Options, run};
use test_kit::require::Need;
use test_kit::services::Services;

/// Private PostgreSQL (and VictoriaMetrics on the next port) of this test.
const SERVICES_PORT: u16 = 28510;
/// The collector's API.
const API: &str = "127.0.0.1:28520";

/// The directory of this test binary's sibling binaries (`target/debug`).
fn bin_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test's own path");
    exe.parent()
        .and_then(|deps| deps.parent())
        .expect("target/<profile>/deps/<test>")
        .to_path_buf()
}

#[test]
fn the_small_network_passes_every_end_to_end_check() {
    test_kit::require!(
        Need::Root,
        Need::Postgres,
        Need::VictoriaMetrics,
        Need::Tshark
    );
    let bin = bin_dir();
    for b in ["idint-router", "idint-collector", "idint-ping"] {
        assert!(
            bin.join(b).exists(),
            "{b} is not in {}: build it first (cargo build -p router-dpdk -p collector -p idint-host)",
            bin.display()
        );
    }
    let services = Services::private("netbox", SERVICES_PORT, &["postgres", "victoria"]);
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = std::env::temp_dir().join(format!("netbox-test-{}", std::process::id()));
    let opts = Options {
        out: out.clone(),
        bin,
        repo,
        small: true,
        pings: 3,
        probe_secs: 3,
        faults: true,
        storage: Storage {
            postgres_url: services.url("IDINT_PG_URL").to_string(),
            victoria_url: services.url("IDINT_VM_URL").to_string(),
        },
        api: API.to_string(),
        screenshot: None,
    };
    let failed = run(&opts, Arc::new(AtomicBool::new(false))).expect("the box runs");
    let summary = std::fs::read_to_string(out.join("summary.json")).expect("a summary");
    assert_eq!(failed, 0, "failed checks; summary:\n{summary}");
    let s: serde_json::Value = serde_json::from_str(&summary).unwrap();
    assert!(s["collector"]["accepted"].as_f64().unwrap() > 0.0);
    // Nothing of the box is left.
    let ns = std::process::Command::new("ip")
        .args(["netns", "list"])
        .output()
        .unwrap();
    assert!(
        !String::from_utf8_lossy(&ns.stdout).contains(netbox::netns::PREFIX),
        "namespaces left behind"
    );
    let _ = std::fs::remove_dir_all(&out);
}
