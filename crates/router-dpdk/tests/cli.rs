//! The router binary's life cycle: bad configurations fail with clear messages, SIGTERM
//! stops a running router cleanly with its final counters.

mod common;

use std::process::{Command, Stdio};
use std::time::Duration;

use common::*;

/// Runs the router on a configuration derived from the working one by `edit`; returns
/// (exit code, stderr).
/// A named configuration edit, the exit code and a piece of the message it must produce.
type Case = (
    &'static str,
    Box<dyn Fn(String) -> String>,
    i32,
    &'static str,
);

fn run_edited(edit: impl Fn(String) -> String) -> (i32, String) {
    let dir = tempfile::tempdir().unwrap();
    let cfg = write_config(dir.path(), &["net_null0".into()], "net_null0", "");
    let text = std::fs::read_to_string(&cfg).unwrap();
    std::fs::write(&cfg, edit(text)).unwrap();
    let out = run_router(&["--config", cfg.to_str().unwrap(), "--duration", "0.3"]);
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn bad_configs_fail_with_clear_messages() {
    let cases: Vec<Case> = vec![
        (
            "missing topology",
            Box::new(|t| t.replace("topology.json", "nope.json")),
            2,
            "nope.json",
        ),
        (
            "missing keys",
            Box::new(|t| t.replace("/keys\"", "/no-keys\"")),
            2,
            "master0.key",
        ),
        (
            "unknown router",
            Box::new(|t| t.replace("router_id = \"br1a\"", "router_id = \"br9z\"")),
            2,
            "br9z",
        ),
        (
            "interface on no port",
            Box::new(|t| t.replace("interfaces = [2, 3]", "interfaces = [2]")),
            2,
            "interface 3 of router br1a is on no port",
        ),
        (
            "foreign interface",
            Box::new(|t| t.replace("interfaces = [2, 3]", "interfaces = [2, 3, 4]")),
            2,
            "interface 4 is not an interface of router br1a",
        ),
        (
            "bad MAC",
            Box::new(|t| t.replace("02:00:00:00:02:02", "02:00:00:00:02")),
            2,
            "neighbor[0].mac",
        ),
        (
            "no internal port",
            Box::new(|t| t.replace("internal = true", "internal = false")),
            2,
            "internal network",
        ),
        (
            "unknown key",
            Box::new(|t| t.replace("[idint]", "[idint]\nnodeid = 3")),
            2,
            "nodeid",
        ),
        (
            "device not in EAL",
            Box::new(|t| t.replace("device = \"net_null0\"", "device = \"net_pcap7\"")),
            1,
            "net_pcap7",
        ),
        (
            "control port not loopback",
            Box::new(|t| t.replace("[idint]", "[control]\nhttp = \"0.0.0.0:9999\"\n\n[idint]")),
            2,
            "control.http: 0.0.0.0:9999 is not a loopback address",
        ),
        (
            "unknown distribution",
            Box::new(|t| {
                t.replace(
                    "[idint]",
                    "[dataplane]\ndistribution = \"magic\"\n\n[idint]",
                )
            }),
            2,
            "dataplane.distribution",
        ),
        (
            "neighbours expire before their refresh",
            Box::new(|t| {
                t.replace(
                    "[idint]",
                    "[dataplane]\nneighbor_refresh_secs = 60\nneighbor_expire_secs = 30\n\n[idint]",
                )
            }),
            2,
            "dataplane.neighbor_expire_secs: neighbour entries must be refreshed (after 60 s) before they expire (after 30 s)",
        ),
        (
            "bad VLAN",
            Box::new(|t| t.replace("internal = true", "internal = true\nvlan = 4095")),
            2,
            "port[0].vlan: 4095 is not a VLAN ID (1 ..= 4094)",
        ),
        (
            "key cache too small",
            Box::new(|t| t.replace("[idint]", "[drkey]\ncache_keys = 2\n\n[idint]")),
            2,
            "drkey.cache_keys: 2 is outside 4 ..= 1048576",
        ),
        (
            "single lcore",
            Box::new(|t| t.replace("\"0-1\"", "\"0\"")),
            1,
            "no worker lcore",
        ),
    ];
    for (name, edit, code, needle) in cases {
        let (got, stderr) = run_edited(edit);
        assert_eq!(got, code, "{name}: exit code; stderr: {stderr}");
        assert!(
            stderr.contains(needle),
            "{name}: {needle:?} not in {stderr:?}"
        );
        assert!(!stderr.contains("panicked"), "{name}: {stderr}");
    }
    let out = run_router(&["--config", "/nonexistent/router.toml"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/router.toml"));
    let out = run_router(&["--duration", "1"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--config is required"));
}

#[test]
fn sigterm_stops_cleanly_with_final_counters() {
    let dir = tempfile::tempdir().unwrap();
    // net_null receives endless zero frames (not SCION: counted, freed).
    let cfg = write_config(dir.path(), &["net_null0".into()], "net_null0", "");
    let summary_file = dir.path().join("summary.json");
    let child = Command::new(env!("CARGO_BIN_EXE_idint-router"))
        .args([
            "--config",
            cfg.to_str().unwrap(),
            "--summary",
            summary_file.to_str().unwrap(),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let kill = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let written: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&summary_file).unwrap()).unwrap();
    assert_eq!(written, s, "--summary holds the printed summary");
    assert_eq!(s["stopped_by_signal"], true);
    let rx = s["io"]["rx_frames"].as_u64().unwrap();
    assert!(rx > 1000, "the worker polled: {rx}");
    assert_eq!(s["io"]["not_scion"].as_u64().unwrap(), rx, "{s:#}");
    assert_eq!(s["forwarded"], 0);
    assert_eq!(s["ports"][0]["stats"]["rx_packets"].as_u64().unwrap(), rx);
    assert!(s["rx_mpps"].as_f64().unwrap() > 0.0);
    assert_eq!(s["forwarded_mpps"].as_f64(), Some(0.0), "nothing was SCION");
}
