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
    let out = run_edited_with(edit, &[]);
    assert!(
        out.status.code() != Some(2) || out.stdout.is_empty(),
        "a configuration error prints nothing on stdout: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs the router for 0.3 s on the working configuration rewritten by `edit`, with `args`
/// added to the command line.
fn run_edited_with(edit: impl Fn(String) -> String, args: &[&str]) -> std::process::Output {
    let dir = tempfile::tempdir().unwrap();
    let cfg = write_config(dir.path(), &["net_null0".into()], "net_null0", "");
    let text = std::fs::read_to_string(&cfg).unwrap();
    std::fs::write(&cfg, edit(text)).unwrap();
    let mut all = vec!["--config", cfg.to_str().unwrap(), "--duration", "0.3"];
    all.extend_from_slice(args);
    run_router(&all)
}

/// Runs every case: exit code, message piece, no panic, nothing on stdout for code 2.
fn check_cases(cases: Vec<Case>) {
    for (name, edit, code, needle) in cases {
        let (got, stderr) = run_edited(edit);
        assert_eq!(got, code, "{name}: exit code; stderr: {stderr}");
        assert!(
            stderr.contains(needle),
            "{name}: {needle:?} not in {stderr:?}"
        );
        assert!(!stderr.contains("panicked"), "{name}: {stderr}");
    }
}

/// Adds `text` to the configuration's `eal` arguments.
fn eal_plus(t: &str, text: &str) -> String {
    t.replace(
        "\"--log-level=*:error\"",
        &format!("\"--log-level=*:error\", {text}"),
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
            2,
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
    ];
    check_cases(cases);
    let out = run_router(&["--config", "/nonexistent/router.toml"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/router.toml"));
    let out = run_router(&["--duration", "1"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--config is required"));
}

/// A CPU id this machine does not have (below DPDK's lcore limit), if there is one.
fn absent_cpu() -> Option<u32> {
    (2..router_dpdk::eal_args::MAX_LCORE).find(|id| {
        !std::path::Path::new(&format!("/sys/devices/system/cpu/cpu{id}/topology/core_id")).exists()
    })
}

#[test]
fn eal_mistakes_are_configuration_errors_naming_eal() {
    let mut cases: Vec<Case> = vec![
        (
            "single lcore (checked before EAL)",
            Box::new(|t| t.replace("\"0-1\"", "\"0\"")),
            2,
            "router.toml: eal: -l 0 gives 1 lcore; the router needs the main lcore",
        ),
        (
            "single lcore (--lcores, found after EAL)",
            Box::new(|t| t.replace("\"-l\", \"0-1\"", "\"--lcores=0\"")),
            2,
            "router.toml: eal: no worker lcore",
        ),
        (
            "help in eal",
            Box::new(|t| eal_plus(&t, "\"-h\"")),
            2,
            "router.toml: eal: \"-h\" makes DPDK print its usage",
        ),
        (
            "log-level help in eal",
            Box::new(|t| eal_plus(&t, "\"--log-level=help\"")),
            2,
            "router.toml: eal: --log-level=help makes DPDK list its log types",
        ),
        (
            "EAL argument syntax (usage kept off stdout)",
            Box::new(|t| t.replace("\"0-1\"", "\"x\"")),
            2,
            "router.toml: eal: DPDK rejected these EAL arguments (rte_eal_init: Invalid argument",
        ),
        (
            "unknown vdev driver",
            Box::new(|t| t.replace("--vdev=net_null0", "--vdev=net_nope0")),
            2,
            "router.toml: eal: DPDK cannot set up a device these EAL arguments name",
        ),
        (
            "vdev that fails to probe",
            Box::new(|t| t.replace("--vdev=net_null0", "--vdev=net_null0,foo=bar")),
            2,
            "router.toml: eal: \"net_null0,foo=bar\" (the device of port[0]) gave no DPDK port: \
             its driver failed to probe it",
        ),
        (
            "device nothing asks for",
            Box::new(|t| t.replace("device = \"net_null0\"", "device = \"net_pcap7\"")),
            2,
            "router.toml: port[0].device: no DPDK port named \"net_pcap7\" (No such device): \
             eal has no --vdev or -a for it",
        ),
        (
            "software distribution without a second worker",
            Box::new(|t| {
                t.replace(
                    "[idint]",
                    "[dataplane]\ndistribution = \"software\"\n\n[idint]",
                )
            }),
            2,
            "router.toml: eal: software flow distribution needs a distributor and a worker lcore",
        ),
    ];
    if let Some(cpu) = absent_cpu() {
        let list: &'static str = format!("\"0,{cpu}\"").leak();
        let needle: &'static str =
            format!("router.toml: eal: -l 0,{cpu}: lcore {cpu} is not a CPU of this machine")
                .leak();
        cases.push((
            "lcore that is no CPU",
            Box::new(move |t| t.replace("\"0-1\"", list)),
            2,
            needle,
        ));
    }
    check_cases(cases);
}

#[test]
fn unchecked_values_are_refused() {
    let cases: Vec<Case> = vec![
        (
            "port with nothing on it",
            Box::new(|t| format!("{t}\n[[port]]\ndevice = \"net_null1\"\n")),
            2,
            "router.toml: port[1]: device \"net_null1\" carries no SCION interface and not the \
             internal network",
        ),
        (
            "io_only with [idint]",
            Box::new(|t| t.replace("[idint]", "[dataplane]\nio_only = true\n\n[idint]")),
            2,
            if cfg!(feature = "measurement-aids") {
                "router.toml: dataplane.io_only: io_only = true forwards frames untouched (no \
                 SCION or ID-INT processing), so the [idint] section cannot apply"
            } else {
                "router.toml: dataplane.io_only: a measurement aid for benchmarks; this build of \
                 idint-router does not have it (cargo feature `measurement-aids`)"
            },
        ),
        (
            "flush_ms 0",
            Box::new(|t| format!("{t}\n[export]\ncollector = \"127.0.0.1:4740\"\nflush_ms = 0\n")),
            2,
            "router.toml: export.flush_ms: 0 is outside 1 ..= 10000",
        ),
        (
            "collector multicast",
            Box::new(|t| format!("{t}\n[export]\ncollector = \"224.0.0.1:4740\"\n")),
            2,
            "router.toml: export.collector: 224.0.0.1:4740: 224.0.0.1 is a multicast address",
        ),
        (
            "collector port 0",
            Box::new(|t| format!("{t}\n[export]\ncollector = \"127.0.0.1:0\"\n")),
            2,
            "router.toml: export.collector: 127.0.0.1:0: port 0",
        ),
        (
            "neighbour MAC all zero",
            Box::new(|t| t.replace("02:00:00:00:02:02", "00:00:00:00:00:00")),
            2,
            "router.toml: neighbor[0].mac: \"00:00:00:00:00:00\" is the all-zero MAC",
        ),
        (
            "default next-hop MAC broadcast",
            Box::new(|t| {
                t.replace(
                    "internal = true",
                    "internal = true\ndefault_next_hop_mac = \"ff:ff:ff:ff:ff:ff\"",
                )
            }),
            2,
            "router.toml: port[0].default_next_hop_mac: \"ff:ff:ff:ff:ff:ff\" is the broadcast MAC",
        ),
        (
            "MAC with mixed separators",
            Box::new(|t| t.replace("02:00:00:00:02:02", "02:00-00:00-02:02")),
            2,
            "router.toml: neighbor[0].mac: \"02:00-00:00-02:02\" is not a MAC address",
        ),
        (
            "neighbour IP unspecified",
            Box::new(|t| t.replace("\"10.123.2.2\"", "\"0.0.0.0\"")),
            2,
            "router.toml: neighbor[0].ip: 0.0.0.0 is the unspecified address",
        ),
        (
            "neighbour given twice, once IPv4-mapped",
            Box::new(|t| {
                format!(
                    "{t}\n[[neighbor]]\nip = \"::ffff:10.123.2.2\"\nmac = \"02:00:00:00:02:03\"\n"
                )
            }),
            2,
            "router.toml: neighbor[1].ip: ::ffff:10.123.2.2 is an IPv4-mapped IPv6 address \
             (write the IPv4 address 10.123.2.2)",
        ),
        (
            "refresh 0 names the refresh item",
            Box::new(|t| {
                t.replace(
                    "[idint]",
                    "[dataplane]\nneighbor_refresh_secs = 0\n\n[idint]",
                )
            }),
            2,
            "router.toml: dataplane.neighbor_refresh_secs: 0",
        ),
    ];
    check_cases(cases);
}

#[test]
fn command_line_help_repeats_and_durations() {
    let out = run_router(&["--help"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("usage: idint-router --config"));
    assert!(out.stderr.is_empty());
    let out = run_router(&["-h"]);
    assert_eq!(out.status.code(), Some(0));
    for args in [
        &["--config", "a.toml", "--config", "b.toml"][..],
        &["--config", "a.toml", "--duration", "1", "--duration", "2"],
    ] {
        let out = run_router(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("given more than once"), "{args:?}: {err}");
    }
    let out = run_router(&["--config", "a.toml", "--duration", "1e30"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--duration \"1e30\": too long"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn summary_file_is_checked_first_and_counters_are_printed_anyway() {
    // An unwritable --summary is found before the router starts: here before the missing
    // device would stop it.
    let out = run_edited_with(
        |t| t.replace("device = \"net_null0\"", "device = \"net_pcap7\""),
        &["--summary", "/nonexistent/dir/summary.json"],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--summary /nonexistent/dir/summary.json: cannot create:"),
        "{err}"
    );
    assert!(!err.contains("net_pcap7"), "{err}");
    // A run that stops on a configuration error leaves an earlier summary as it was.
    let dir = tempfile::tempdir().unwrap();
    let earlier = dir.path().join("summary.json");
    std::fs::write(&earlier, "{\"earlier\": true}").unwrap();
    let out = run_edited_with(
        |t| t.replace("device = \"net_null0\"", "device = \"net_pcap7\""),
        &["--summary", earlier.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        std::fs::read_to_string(&earlier).unwrap(),
        "{\"earlier\": true}"
    );
    // A file that opens but cannot take the summary: the counters still reach stdout.
    let out = run_edited_with(|t| t, &["--summary", "/dev/full"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("--summary /dev/full: cannot write:"), "{err}");
    let s: serde_json::Value = serde_json::from_slice(&out.stdout).expect("summary on stdout");
    assert!(s["io"]["rx_frames"].as_u64().is_some(), "{s:#}");
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

/// A GET of `path` from the control endpoint at `addr`; `None` if nothing answers.
#[cfg(feature = "fault-injection")]
fn http_get(addr: &str, path: &str) -> Option<String> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    s.write_all(format!("GET {path} HTTP/1.0\r\n\r\n").as_bytes())
        .ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    Some(out)
}

/// Control port of the worker-panic test (private range 28300-28399).
#[cfg(feature = "fault-injection")]
const PANIC_TEST_HTTP: &str = "127.0.0.1:28311";

#[cfg(feature = "fault-injection")]
#[test]
fn a_panicking_worker_fails_health_and_the_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = write_config(
        dir.path(),
        &["net_null0".into()],
        "net_null0",
        &format!("\n[control]\nhttp = \"{PANIC_TEST_HTTP}\"\n"),
    );
    let started = std::time::Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_idint-router"))
        .args(["--config", cfg.to_str().unwrap(), "--duration", "30"])
        .env(router_dpdk::run::FAULT_PANIC_WORKER, "0")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // /health must say the router is broken while it is still up.
    let mut health = None;
    while started.elapsed() < Duration::from_secs(10) {
        if let Some(h) = http_get(PANIC_TEST_HTTP, "/health") {
            if !h.starts_with("HTTP/1.0 200") {
                health = Some(h);
                break;
            }
        } else if child.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // ... and the process must end on its own, well before --duration, with code 1.
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if started.elapsed() > Duration::from_secs(15) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the router kept running with a dead worker; /health: {health:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let health = health.expect("/health never reported the dead worker");
    assert!(health.starts_with("HTTP/1.0 503"), "{health}");
    assert!(health.contains("\"status\":\"failed\""), "{health}");
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("panicked"), "{stderr}");
}

#[test]
fn a_pool_smaller_than_what_the_configuration_pins_is_refused() {
    // One worker, one queue of 4096 rx and 4096 tx descriptors: 8192 mbufs pinned by the
    // queues alone, more than the 4095 configured.
    let cases: Vec<Case> = vec![(
        "pool below the descriptors",
        Box::new(|t| format!("{t}\n[dataplane]\nmbufs = 4095\nrx_desc = 4096\ntx_desc = 4096\n")),
        2,
        "dataplane.mbufs: 4095 mbufs cannot hold what this configuration pins",
    )];
    check_cases(cases);
}

/// A network namespace for one test (names start `rtr-`), deleted when dropped.
struct Netns(String);

impl Netns {
    fn new(tag: &str) -> Self {
        let name = format!("rtr-{tag}-{}", std::process::id());
        let ok = Command::new("ip")
            .args(["netns", "add", &name])
            .status()
            .unwrap();
        assert!(ok.success(), "ip netns add {name}");
        Netns(name)
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).status();
    }
}

#[test]
fn an_exporter_that_cannot_start_stops_the_router_at_start() {
    // In a namespace without routes the collector is unreachable: the exporter's socket
    // cannot be connected.
    let ns = Netns::new("export");
    let dir = tempfile::tempdir().unwrap();
    let cfg = write_config(
        dir.path(),
        &["net_null0".into()],
        "net_null0",
        "\n[export]\ncollector = \"192.0.2.9:4740\"\nrouter_number = 1\n",
    );
    let started = std::time::Instant::now();
    let out = Command::new("ip")
        .args(["netns", "exec", &ns.0])
        .arg(env!("CARGO_BIN_EXE_idint-router"))
        .args(["--config", cfg.to_str().unwrap(), "--duration", "8"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "the router ran on without its exporter: {stderr}"
    );
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("report export: 192.0.2.9:4740"), "{stderr}");
    assert!(out.stdout.is_empty(), "it never started forwarding");
}

/// Runs `idint-router --check-config` on `cfg`; (exit code, stdout, stderr).
fn check_config(cfg: &std::path::Path) -> (i32, String, String) {
    let out = run_router(&["--check-config", cfg.to_str().unwrap()]);
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn check_config_validates_the_shipped_two_port_sample_without_dpdk() {
    let sample =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs/router-2port.toml");
    let started = std::time::Instant::now();
    let (code, stdout, stderr) = check_config(&sample);
    assert_eq!(code, 0, "{stderr}");
    // Its PCI devices are not on this machine: DPDK was never started.
    assert!(stderr.is_empty(), "{stderr}");
    assert!(stdout.contains("configuration OK"), "{stdout}");
    assert!(
        stdout.contains("port[0] 0000:01:00.0: interfaces [2, 3]"),
        "{stdout}"
    );
    assert!(
        stdout.contains("port[1] 0000:01:00.1: interfaces [], internal network"),
        "{stdout}"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[test]
fn check_config_refuses_what_the_start_would_refuse() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = write_config(dir.path(), &["net_null0".into()], "net_null0", "");
    let base = std::fs::read_to_string(&cfg).unwrap();
    let (code, stdout, stderr) = check_config(&cfg);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("configuration OK"), "{stdout}");
    let cases: Vec<(&str, String, &str)> = vec![
        (
            "missing topology",
            base.replace("topology.json", "nope.json"),
            "nope.json",
        ),
        (
            "pool too small",
            format!("{base}\n[dataplane]\nmbufs = 4095\nrx_desc = 4096\ntx_desc = 4096\n"),
            "dataplane.mbufs: 4095 mbufs cannot hold what this configuration pins: 9662 mbufs",
        ),
        (
            "subnet with host bits",
            base.replace(
                "internal = true",
                "internal = true\nsubnets = [\"10.0.0.1/8\"]",
            ),
            "port[0].subnets",
        ),
        (
            "software distribution with one worker lcore",
            format!("{base}\n[dataplane]\ndistribution = \"software\"\n"),
            "distribution = \"software\" needs a distributor",
        ),
        (
            "help in the EAL arguments",
            base.replace("\"--no-huge\"", "\"--help\", \"--no-huge\""),
            "eal",
        ),
    ];
    for (name, text, needle) in cases {
        std::fs::write(&cfg, text).unwrap();
        let (code, stdout, stderr) = check_config(&cfg);
        assert_eq!(code, 2, "{name}: {stderr}");
        assert!(stdout.is_empty(), "{name}: {stdout}");
        assert!(
            stderr.contains(needle),
            "{name}: {needle:?} not in {stderr}"
        );
    }
    // An unreachable collector (a namespace without routes).
    let ns = Netns::new("check");
    std::fs::write(
        &cfg,
        format!("{base}\n[export]\ncollector = \"192.0.2.9:4740\"\nrouter_number = 1\n"),
    )
    .unwrap();
    let out = Command::new("ip")
        .args(["netns", "exec", &ns.0])
        .arg(env!("CARGO_BIN_EXE_idint-router"))
        .args(["--check-config", cfg.to_str().unwrap()])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("export.collector: 192.0.2.9:4740: cannot be sent to"),
        "{stderr}"
    );
    // Nothing else on its command line.
    for args in [
        &["--check-config"][..],
        &["--check-config", "a.toml", "--duration", "1"],
        &["--config", "a.toml", "--check-config", "a.toml"],
    ] {
        let out = run_router(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
    }
}
