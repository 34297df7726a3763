//! The box's Linux plumbing: one network namespace per AS internal network (a bridge with the
//! AS's end host on it) and per border router (its DPDK ports as veth ends), veth pairs for
//! the inter-AS links, and a management network (bridge `ibx0` in the root namespace) joining
//! every namespace to the collector. Everything is named with the prefix [`PREFIX`] so that
//! [`teardown`] can remove what any run left behind.

use std::net::Ipv4Addr;
use std::process::{Command, Stdio};

use crate::files::{ROUTER_INTERNAL_IF, router_link_if};
use crate::plan::{COLLECTOR_IP, MGMT_PREFIX, Network, mac_text};

/// Prefix of every namespace and root-namespace interface the box creates.
pub const PREFIX: &str = "ibx-";
/// The management bridge in the root namespace.
pub const MGMT_BRIDGE: &str = "ibx0";
/// The AS internal network's bridge in an AS namespace.
pub const AS_BRIDGE: &str = "br0";
/// The management interface in every namespace.
pub const MGMT_IF: &str = "mgmt";
/// First management address given to a namespace (`10.99.0.<this + k>`).
const MGMT_FIRST: u8 = 10;

/// The namespace of AS number `n`'s internal network.
pub fn as_ns(number: u8) -> String {
    format!("{PREFIX}as{number}")
}

/// The namespace of router `name`.
pub fn router_ns(name: &str) -> String {
    format!("{PREFIX}{name}")
}

/// A failed command, with what it printed.
#[derive(Debug)]
pub struct CommandError(pub String);

impl std::fmt::Display for CommandError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CommandError {}

/// Runs `args`; an error with its stderr if it fails.
pub fn run(args: &[&str]) -> Result<(), CommandError> {
    let out = Command::new(args[0])
        .args(&args[1..])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| CommandError(format!("{}: {e}", args.join(" "))))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(CommandError(format!(
            "{} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )))
    }
}

/// Runs `args` inside namespace `ns`.
pub fn run_in(ns: &str, args: &[&str]) -> Result<(), CommandError> {
    let mut all = vec!["ip", "netns", "exec", ns];
    all.extend_from_slice(args);
    run(&all)
}

/// The management address of the `k`-th namespace.
pub fn mgmt_ip(k: usize) -> Ipv4Addr {
    let last = u8::try_from(usize::from(MGMT_FIRST) + k).expect("fewer than 245 namespaces");
    Ipv4Addr::new(MGMT_PREFIX[0], MGMT_PREFIX[1], MGMT_PREFIX[2], last)
}

/// A namespace with loopback up and IPv6 off (the box is IPv4; no router solicitations or
/// MLD reports on the links and in the captures).
fn add_ns(ns: &str) -> Result<(), CommandError> {
    run(&["ip", "netns", "add", ns])?;
    run(&["ip", "-n", ns, "link", "set", "lo", "up"])?;
    run_in(
        ns,
        &[
            "sysctl",
            "-qw",
            "net.ipv6.conf.all.disable_ipv6=1",
            "net.ipv6.conf.default.disable_ipv6=1",
        ],
    )
}

/// A veth pair with end `a` (MAC `mac_a`, if any) in namespace `ns_a` and `b` in `ns_b`
/// (`None`: the root namespace), both up. Created under unique temporary names `tmp`+`a`/`b`
/// and renamed inside their namespaces, so equal names in two namespaces never clash.
fn add_veth(
    tmp: &str,
    (ns_a, a, mac_a): (&str, &str, Option<[u8; 6]>),
    (ns_b, b, mac_b): (Option<&str>, &str, Option<[u8; 6]>),
) -> Result<(), CommandError> {
    let (ta, tb) = (format!("{tmp}a"), format!("{tmp}b"));
    let mut args = vec!["ip", "link", "add", &ta, "netns", ns_a];
    let ma = mac_a.map(mac_text);
    if let Some(m) = &ma {
        args.extend(["address", m.as_str()]);
    }
    args.extend(["type", "veth", "peer", "name", &tb]);
    if let Some(ns) = ns_b {
        args.extend(["netns", ns]);
    }
    let mb = mac_b.map(mac_text);
    if let Some(m) = &mb {
        args.extend(["address", m.as_str()]);
    }
    run(&args)?;
    run(&["ip", "-n", ns_a, "link", "set", &ta, "name", a, "up"])?;
    match ns_b {
        Some(ns) => run(&["ip", "-n", ns, "link", "set", &tb, "name", b, "up"]),
        None => {
            run(&["ip", "link", "set", &tb, "name", b])?;
            run(&[
                "sysctl",
                "-qw",
                &format!("net.ipv6.conf.{b}.disable_ipv6=1"),
            ])?;
            run(&["ip", "link", "set", b, "up"])
        }
    }
}

/// Gives namespace `ns` the management address `mgmt_ip(k)` on a veth to the root bridge.
fn add_mgmt(ns: &str, k: usize) -> Result<(), CommandError> {
    let root_end = format!("{PREFIX}m{k}");
    add_veth(
        &format!("ibxt{k}"),
        (ns, MGMT_IF, None),
        (None, &root_end, None),
    )?;
    run(&["ip", "link", "set", &root_end, "master", MGMT_BRIDGE])?;
    let addr = format!("{}/24", mgmt_ip(k));
    run(&["ip", "-n", ns, "addr", "add", &addr, "dev", MGMT_IF])
}

/// Builds the whole box for `net`. On error, what was built stays for [`teardown`].
pub fn build(net: &Network) -> Result<(), CommandError> {
    // The management bridge: the collector listens on its address.
    run(&["ip", "link", "add", MGMT_BRIDGE, "type", "bridge"])?;
    run(&[
        "sysctl",
        "-qw",
        &format!("net.ipv6.conf.{MGMT_BRIDGE}.disable_ipv6=1"),
    ])?;
    run(&[
        "ip",
        "addr",
        "add",
        &format!("{COLLECTOR_IP}/24"),
        "dev",
        MGMT_BRIDGE,
    ])?;
    run(&["ip", "link", "set", MGMT_BRIDGE, "up"])?;
    let mut k = 0;
    for a in &net.ases {
        let ns = as_ns(a.number);
        add_ns(&ns)?;
        let mac = mac_text(a.host_mac());
        run(&[
            "ip", "-n", &ns, "link", "add", AS_BRIDGE, "address", &mac, "type", "bridge",
        ])?;
        run(&[
            "ip",
            "-n",
            &ns,
            "addr",
            "add",
            &format!("{}/24", a.host()),
            "dev",
            AS_BRIDGE,
        ])?;
        run(&["ip", "-n", &ns, "link", "set", AS_BRIDGE, "up"])?;
        add_mgmt(&ns, k)?;
        k += 1;
        for r in &a.routers {
            let rns = router_ns(&r.name);
            add_ns(&rns)?;
            let as_end = format!("to-{}", r.name);
            add_veth(
                &format!("ibxi{k}"),
                (&rns, ROUTER_INTERNAL_IF, Some(r.internal_mac)),
                (Some(&ns), &as_end, None),
            )?;
            run(&["ip", "-n", &ns, "link", "set", &as_end, "master", AS_BRIDGE])?;
            add_mgmt(&rns, k)?;
            k += 1;
        }
    }
    for (i, l) in net.links.iter().enumerate() {
        let (ra, rb) = (
            &net.ases[l.a.as_ix].routers[l.a.router],
            &net.ases[l.b.as_ix].routers[l.b.router],
        );
        add_veth(
            &format!("ibxl{i}"),
            (
                &router_ns(&ra.name),
                &router_link_if(l.a.ifid),
                Some(l.a.mac),
            ),
            (
                Some(&router_ns(&rb.name)),
                &router_link_if(l.b.ifid),
                Some(l.b.mac),
            ),
        )?;
    }
    Ok(())
}

/// Names of the namespaces that exist now.
fn namespaces() -> Vec<String> {
    Command::new("ip")
        .args(["netns", "list"])
        .output()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .filter_map(|l| l.split_whitespace().next().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// The processes running in namespace `ns`.
fn pids_in(ns: &str) -> Vec<String> {
    Command::new("ip")
        .args(["netns", "pids", ns])
        .output()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .split_whitespace()
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// Removes everything any run of the box left: processes in its namespaces (killed), the
/// namespaces (and so their veths), the management bridge. Idempotent; returns what it
/// removed.
pub fn teardown() -> Vec<String> {
    let mut removed = Vec::new();
    let ours: Vec<String> = namespaces()
        .into_iter()
        .filter(|n| n.starts_with(PREFIX))
        .collect();
    for ns in &ours {
        let pids = pids_in(ns);
        if !pids.is_empty() {
            let mut args = vec!["kill", "-KILL"];
            args.extend(pids.iter().map(String::as_str));
            let _ = run(&args);
            removed.push(format!("{} process(es) in {ns}", pids.len()));
        }
    }
    for ns in &ours {
        // A namespace whose processes are still exiting may refuse once: retry briefly.
        for _ in 0..50 {
            if run(&["ip", "netns", "del", ns]).is_ok() {
                removed.push(format!("namespace {ns}"));
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    }
    if run(&["ip", "link", "show", MGMT_BRIDGE]).is_ok()
        && run(&["ip", "link", "del", MGMT_BRIDGE]).is_ok()
    {
        removed.push(format!("bridge {MGMT_BRIDGE}"));
    }
    removed
}
