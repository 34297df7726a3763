//! BFD between two real `idint-router` processes: each in its own network namespace, joined by
//! a veth pair (DPDK's `net_af_packet`). Their sessions on the link come up; a peer that is
//! stopped (SIGSTOP) takes the link down within detect multiplier x interval on the other
//! side; resumed (SIGCONT), the link comes back up. Link state and BFD are read from
//! `/health` and `/metrics` inside the namespaces.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use test_kit::require::Need;

/// The control port each router listens on (inside its own namespace).
const HTTP_PORT: u16 = 18181;
/// BFD timers of the link (scionproto's defaults).
const DETECT_MULT: u64 = 3;
const INTERVAL: Duration = Duration::from_millis(200);
/// How long sessions may take to come up (1 s packets while Down, jittered, plus start-up).
const UP_WITHIN: Duration = Duration::from_secs(20);
/// Added to the detection time for reading the router's log and scheduling on a busy host.
const DETECT_SLACK: Duration = Duration::from_millis(250);

/// A router's log lines with the time each arrived.
type Log = Arc<Mutex<Vec<(Instant, String)>>>;

/// Namespaces, veths and routers of one test run, removed even when the test fails.
struct Lab {
    tag: String,
    routers: Vec<Child>,
}

impl Lab {
    fn ns(&self, side: char) -> String {
        format!("{}{side}", self.tag)
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        for c in &mut self.routers {
            let pid = c.id().to_string();
            let _ = Command::new("kill").args(["-CONT", &pid]).status();
            let _ = c.kill();
            let _ = c.wait();
        }
        // Deleting a namespace deletes the veth end in it and so the pair.
        for side in ['a', 'b'] {
            let _ = Command::new("ip")
                .args(["netns", "del", &self.ns(side)])
                .status();
        }
    }
}

fn sh(args: &[&str]) {
    let st = Command::new(args[0]).args(&args[1..]).status().unwrap();
    assert!(st.success(), "{args:?} failed");
}

/// One side of the link.
struct Side {
    name: char,
    ia: &'static str,
    core: bool,
    link_to: &'static str,
    ip: &'static str,
    peer_ip: &'static str,
    peer_ia: &'static str,
    mac: &'static str,
    peer_mac: &'static str,
    internal: &'static str,
}

const A: Side = Side {
    name: 'a',
    ia: "1-ff00:0:1",
    core: true,
    link_to: "child",
    ip: "10.77.0.1",
    peer_ip: "10.77.0.2",
    peer_ia: "1-ff00:0:2",
    mac: "02:77:00:00:00:01",
    peer_mac: "02:77:00:00:00:02",
    internal: "10.77.1.1:30042",
};

const B: Side = Side {
    name: 'b',
    ia: "1-ff00:0:2",
    core: false,
    link_to: "parent",
    ip: "10.77.0.2",
    peer_ip: "10.77.0.1",
    peer_ia: "1-ff00:0:1",
    mac: "02:77:00:00:00:02",
    peer_mac: "02:77:00:00:00:01",
    internal: "10.77.2.1:30042",
};

fn example_keys() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/scion/config_examples/router_benchmark/keys")
}

/// Writes side `s`'s topology and router configuration into `dir`; returns the config path.
fn write_side(dir: &Path, s: &Side, ifname: &str, prefix: &str, disable: bool) -> PathBuf {
    let attrs = if s.core { r#"["core"]"# } else { "[]" };
    let topo = format!(
        r#"{{ "isd_as": "{ia}", "attributes": {attrs}, "mtu": 1472,
  "border_routers": {{ "br{n}": {{ "internal_addr": "{internal}", "interfaces": {{
    "1": {{ "underlay": {{ "local": "{ip}:50000", "remote": "{peer}:50000" }},
           "isd_as": "{peer_ia}", "link_to": "{link}", "mtu": 1472,
           "bfd": {{ "disable": {disable}, "detect_mult": {mult}, "desired_min_tx_interval": "{iv}ms",
                    "required_min_rx_interval": "{iv}ms" }} }} }} }} }} }}"#,
        ia = s.ia,
        n = s.name,
        internal = s.internal,
        ip = s.ip,
        peer = s.peer_ip,
        peer_ia = s.peer_ia,
        link = s.link_to,
        mult = DETECT_MULT,
        iv = INTERVAL.as_millis(),
    );
    let tp = dir.join(format!("topology-{}.json", s.name));
    std::fs::write(&tp, topo).unwrap();
    let cfg = format!(
        r#"topology = {tp:?}
keys = {keys:?}
router_id = "br{n}"
eal = ["--no-huge", "-m", "256", "--no-pci", "--no-shconf", "--file-prefix={prefix}",
       "-l", "0-1", "--log-level=*:error", "--vdev=net_af_packet0,iface={ifname}"]

[control]
http = "127.0.0.1:{HTTP_PORT}"

[[port]]
device = "net_af_packet0"
interfaces = [1]
internal = true

[[neighbor]]
ip = "{peer}"
mac = "{peer_mac}"
"#,
        keys = example_keys(),
        n = s.name,
        peer = s.peer_ip,
        peer_mac = s.peer_mac,
    );
    let p = dir.join(format!("router-{}.toml", s.name));
    std::fs::write(&p, cfg).unwrap();
    p
}

/// `GET path` on the router in namespace `ns` (curl run inside it).
fn get(ns: &str, path: &str) -> Option<String> {
    let out = Command::new("ip")
        .args(["netns", "exec", ns, "curl", "-s", "-m", "2"])
        .arg(format!("http://127.0.0.1:{HTTP_PORT}{path}"))
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Interface 1's session in `/health`: (BFD state, link up).
fn if1(ns: &str) -> Option<(String, bool)> {
    let h: serde_json::Value = serde_json::from_str(&get(ns, "/health")?).ok()?;
    let s = &h["links"]["sessions"]["if1"];
    Some((s["bfd"].as_str()?.to_string(), s["up"].as_bool()?))
}

fn wait_for(what: &str, within: Duration, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while start.elapsed() < within {
        if f() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("{what}: not within {within:?}");
}

/// Starts the router of `s` in its namespace; its log lines are collected with the time they
/// arrived.
fn start(lab: &mut Lab, cfg: &Path, s: &Side, log: Log) {
    let mut child = Command::new("ip")
        .args(["netns", "exec", &lab.ns(s.name)])
        .arg(env!("CARGO_BIN_EXE_idint-router"))
        .arg("--config")
        .arg(cfg)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let err = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(err).lines().map_while(Result::ok) {
            log.lock().unwrap().push((Instant::now(), line));
        }
    });
    lab.routers.push(child);
}

/// Namespaces `<tag>a` and `<tag>b` joined by a veth pair, each running a router (A's BFD on
/// the link disabled if `disable_a`); A's log lines are returned.
fn lab(tag: &str, disable_a: bool) -> (Lab, Log, tempfile::TempDir) {
    let mut lab = Lab {
        tag: tag.to_string(),
        routers: Vec::new(),
    };
    let (va, vb) = (format!("{tag}a"), format!("{tag}b"));
    for side in ['a', 'b'] {
        sh(&["ip", "netns", "add", &lab.ns(side)]);
        sh(&["ip", "-n", &lab.ns(side), "link", "set", "lo", "up"]);
    }
    sh(&[
        "ip",
        "link",
        "add",
        &va,
        "netns",
        &lab.ns('a'),
        "address",
        A.mac,
        "type",
        "veth",
        "peer",
        "name",
        &vb,
        "netns",
        &lab.ns('b'),
        "address",
        B.mac,
    ]);
    sh(&["ip", "-n", &lab.ns('a'), "link", "set", &va, "up"]);
    sh(&["ip", "-n", &lab.ns('b'), "link", "set", &vb, "up"]);
    let dir = tempfile::tempdir().unwrap();
    let cfg_a = write_side(dir.path(), &A, &va, &format!("{tag}a"), disable_a);
    let cfg_b = write_side(dir.path(), &B, &vb, &format!("{tag}b"), false);
    let log_a = Arc::new(Mutex::new(Vec::new()));
    start(&mut lab, &cfg_a, &A, log_a.clone());
    start(&mut lab, &cfg_b, &B, Arc::new(Mutex::new(Vec::new())));
    (lab, log_a, dir)
}

/// A counter or gauge of `/metrics` text.
fn metric(text: &str, name: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .and_then(|v| v.parse().ok())
}

#[test]
fn bfd_sessions_come_up_detect_a_dead_peer_and_recover() {
    test_kit::require!(Need::Root);
    let (lab, log_a, _dir) = lab(&format!("bfd{}", std::process::id()), false);
    let (ns_a, ns_b) = (lab.ns('a'), lab.ns('b'));

    // Links with BFD start down and come up with their sessions.
    wait_for("both sessions up", UP_WITHIN, || {
        if1(&ns_a) == Some(("up".into(), true)) && if1(&ns_b) == Some(("up".into(), true))
    });
    let m = get(&ns_a, "/metrics").unwrap();
    assert!(
        m.contains("idint_router_bfd_session_state{session=\"if1\"} 3"),
        "{m}"
    );
    assert!(m.contains("idint_router_interface_up{interface=\"1\"} 1"));
    assert!(m.contains("idint_router_port_link_up{port=\"net_af_packet0\"} 1"));

    // B stops answering: A takes the link down within 3 x 200 ms of B's last packet.
    let pid_b = lab.routers[1].id().to_string();
    let before = log_a.lock().unwrap().len();
    let stopped = Instant::now();
    sh(&["kill", "-STOP", &pid_b]);
    let detect = INTERVAL * DETECT_MULT as u32;
    let mut down_at = None;
    wait_for("A declares the link down", detect * 5, || {
        down_at = log_a.lock().unwrap()[before..]
            .iter()
            .find(|(_, l)| l.contains("if1 down"))
            .map(|(t, _)| *t);
        down_at.is_some()
    });
    let took = down_at.unwrap().duration_since(stopped);
    eprintln!("dead peer detected after {took:?} (detection time {detect:?})");
    assert!(took <= detect + DETECT_SLACK, "took {took:?}");
    let (state, up) = if1(&ns_a).unwrap();
    assert_eq!((state.as_str(), up), ("down", false));
    let m = get(&ns_a, "/metrics").unwrap();
    assert!(
        m.contains("idint_router_interface_up{interface=\"1\"} 0"),
        "{m}"
    );
    let h = get(&ns_a, "/health").unwrap();
    assert!(h.contains("\"interfaces_down\":[1]"), "{h}");

    // B resumes: both sessions come back up.
    sh(&["kill", "-CONT", &pid_b]);
    wait_for("both sessions up again", UP_WITHIN, || {
        if1(&ns_a) == Some(("up".into(), true)) && if1(&ns_b) == Some(("up".into(), true))
    });
    let m = get(&ns_a, "/metrics").unwrap();
    let changes = metric(&m, "idint_router_bfd_state_changes_total{session=\"if1\"}").unwrap();
    // Down -> Init/Up, Up -> Down, Down -> Init/Up again.
    assert!(changes >= 3, "{changes}");
    drop(lab);
}

#[test]
fn bfd_disabled_on_one_side_keeps_its_link_up_and_drops_the_peers_packets() {
    test_kit::require!(Need::Root);
    let (lab, _, _dir) = lab(&format!("bfx{}", std::process::id()), true);
    let (ns_a, ns_b) = (lab.ns('a'), lab.ns('b'));
    // A runs no session: its link is up at once and B's BFD packets are dropped there.
    wait_for("A's BFD drops", UP_WITHIN, || {
        get(&ns_a, "/metrics")
            .and_then(|m| metric(&m, "idint_router_bfd_dropped_total"))
            .is_some_and(|n| n >= 2)
    });
    assert_eq!(if1(&ns_a), Some(("disabled".into(), true)));
    let m = get(&ns_a, "/metrics").unwrap();
    assert!(!m.contains("bfd_sent_total{"), "{m}");
    // B never hears back: its session and link stay down.
    let (state, up) = if1(&ns_b).unwrap();
    assert_eq!((state.as_str(), up), ("down", false));
    let h = get(&ns_b, "/health").unwrap();
    assert!(h.contains("\"interfaces_down\":[1]"), "{h}");
    drop(lab);
}
