//! The main job: the box brought up, exercised, checked and torn down.
//!
//! 1. files for the network (fresh secrets, paths stamped now), every path checked through
//!    scion-dp in memory;
//! 2. namespaces, veths and bridges; link captures; the collector on PostgreSQL and
//!    VictoriaMetrics with topology, paths and keys imported through its CLI; one
//!    `idint-router` per border router; BFD up on every link;
//! 3. end hosts: `idint-ping serve` on every AS's host, `idint-ping send` over every path
//!    between hosts; routers' probes and sink exports running meanwhile;
//! 4. faults (optional): a link down and up, a router restarted, the collector restarted;
//! 5. the collector's API asked (paths per AS pair, per-hop latency history, ranking, SLA);
//!    the captures decoded; `summary.json`; everything torn down.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use crate::api::{self, Collector};
use crate::checks::Checks;
use crate::files::{self, ADMIN_TOKEN, Layout, Storage};
use crate::netns::{self, router_ns};
use crate::paths::{BoxPath, all_paths};
use crate::plan::Network;
use crate::procs::{Procs, WaitError};
use crate::sim::SimNetwork;
use crate::{faults, hosts, report};

/// How long routers may take to come up with BFD Up on every link.
const ROUTERS_UP_WITHIN: Duration = Duration::from_secs(60);
/// How long the collector may take to answer `/ready`.
const COLLECTOR_READY_WITHIN: Duration = Duration::from_secs(60);
/// How long the first report may take to be queryable.
const FIRST_REPORT_WITHIN: Duration = Duration::from_secs(30);

/// Pings per path after the faults.
const AFTER_PINGS: u32 = 2;
/// How long the routers' CPU use is sampled with only probes running.
const IDLE_WINDOW: Duration = Duration::from_secs(3);

/// What to run.
#[derive(Debug, Clone)]
pub struct Options {
    /// Output directory (files, logs, captures, summary).
    pub out: PathBuf,
    /// Directory of the `idint-router`, `idint-collector` and `idint-ping` binaries.
    pub bin: PathBuf,
    /// The repository (for the Wireshark dissector).
    pub repo: PathBuf,
    /// The small network (the integration test's).
    pub small: bool,
    /// Pings per path.
    pub pings: u32,
    /// Seconds of probing after the pings (reports for the history and the SLA window).
    pub probe_secs: u64,
    /// Whether to run the faults.
    pub faults: bool,
    /// The collector's stores.
    pub storage: Storage,
    /// The collector's API listen address (`127.0.0.1:port`).
    pub api: String,
    /// A command that takes a screenshot: called with the dashboard URL and the PNG path.
    pub screenshot: Option<PathBuf>,
}

/// Seconds since the Unix epoch.
pub fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Timings of the run, milliseconds from the start.
#[derive(Debug, Default)]
struct Timings(BTreeMap<&'static str, u128>);

impl Timings {
    fn mark(&mut self, what: &'static str, start: Instant) {
        self.0.insert(what, start.elapsed().as_millis());
    }
}

/// Runs the box; the number of failed checks (0: all passed).
pub fn run(opts: &Options, stop: Arc<AtomicBool>) -> Result<usize, Box<dyn std::error::Error>> {
    let start = Instant::now();
    let mut t = Timings::default();
    let left = netns::teardown();
    if !left.is_empty() {
        println!("removed what an earlier run left: {}", left.join(", "));
    }
    let net = if opts.small {
        Network::small()
    } else {
        Network::demo()
    };
    if opts.out.exists() {
        std::fs::remove_dir_all(&opts.out)?;
    }
    let layout = Layout::new(opts.out.join("config"));
    let now_s = unix_now();
    let paths = all_paths(&net);
    let (_, raws) = files::write_all(&net, &layout, now_s, &paths, &opts.api, &opts.storage)?;
    let mut checks = Checks::default();

    in_memory(&net, &layout, &paths, &raws, now_s, &mut checks)?;
    t.mark("files", start);

    println!("== 2. network up: namespaces, veths, collector, routers");
    let mut procs = Procs::new(&opts.out.join("logs"), stop)?;
    let collector = Collector::new(&opts.api);
    let names = bring_up(&mut procs, opts, &layout, &net, &collector, &mut checks)?;
    t.mark("network_up", start);
    println!("   up in {:.1} s", start.elapsed().as_secs_f64());

    println!("== 3. the collector: the routers' probes, first report queryable");
    let first = first_report(&procs, &collector);
    checks.add("a report is queryable", first.is_ok(), format!("{first:?}"));
    if first.is_ok() {
        t.mark("first_report_queryable", start);
    }
    let idle_cpu = crate::procs::cpu_percent(&procs.pids(&names), IDLE_WINDOW);
    println!(
        "   {} routers with only probes running: {idle_cpu:.1}% of one CPU together",
        names.len()
    );
    println!("== 4. hosts: idint-ping over every path between the ASes' hosts");
    let hosts = hosts::Hosts::new(opts, &layout, &net, start);
    hosts.start_servers(&mut procs)?;
    procs.sleep(Duration::from_millis(500))?;
    let pings = hosts.ping_all(&procs, &paths, opts.pings)?;
    let first_verified = pings.iter().filter_map(|p| p.first_verified_ms).min();
    if let Some(ms) = first_verified {
        t.0.insert("first_verified_packet", ms);
    }
    for p in &pings {
        checks.add(
            &format!("host ping {}: replies verified", p.path),
            p.verified > 0 && p.verified == p.received,
            format!(
                "{} sent, {} received, {} verified",
                p.sent, p.received, p.verified
            ),
        );
    }

    println!("   probes for {} s more", opts.probe_secs);
    procs.sleep(Duration::from_secs(opts.probe_secs))?;

    if opts.faults {
        println!("== 5. faults: link down/up, router restart, collector restart");
        faults::run(&mut procs, opts, &layout, &net, &collector, &mut checks)?;
    }

    // Host traffic after the faults: every path again, so that the collector (restarted or
    // not) has the hosts' measurements too (utilisation and queue come from their pings).
    let again = hosts.ping_all(&procs, &paths, AFTER_PINGS)?;
    let bad: Vec<&str> = again
        .iter()
        .filter(|p| p.verified == 0 || p.verified != p.received)
        .map(|p| p.path.as_str())
        .collect();
    checks.add(
        "host pings over every path after the faults: replies verified",
        bad.is_empty(),
        bad.join(", "),
    );

    println!("== 6. the collector's API");
    let answers = report::query_api(&collector, &net, &paths, &mut checks);
    let counts = collector_counts(opts, &collector, &mut checks);

    println!("== 7. link captures");
    // Finished files only: dumpcap flushes and closes each capture when it stops.
    for k in 0..net.links.len() {
        procs.stop(&capture_name(k));
    }
    let captures =
        crate::captures::check(&opts.out.join("captures"), &opts.repo, &net, &mut checks);

    if let Some(shot) = &opts.screenshot {
        let png = opts.out.join("dashboard.png");
        let ok = std::process::Command::new(shot)
            .arg(format!("{}/", collector.base()))
            .arg(&png)
            .status()
            .is_ok_and(|s| s.success())
            && png.exists();
        checks.add("dashboard screenshot", ok, png.display().to_string());
    }

    let host_stats = hosts.stop_servers(&mut procs);
    for n in &names {
        let alive = procs.check(n);
        checks.add(
            &format!("router {n} still running"),
            alive.is_ok(),
            format!("{alive:?}"),
        );
    }
    let down_start = Instant::now();
    drop(procs);
    let left = netns::teardown();
    checks.add(
        "teardown leaves no namespace, veth or process",
        left.is_empty(),
        left.join(", "),
    );
    t.0.insert("teardown", down_start.elapsed().as_millis());
    t.mark("total", start);

    let summary = json!({
        "network": {
            "ases": net.ases.iter().map(|a| a.ia.to_string()).collect::<Vec<_>>(),
            "routers": names,
            "links": net.links.len(),
            "paths": paths.iter().map(|p| p.name(&net)).collect::<Vec<_>>(),
        },
        "timings_ms": t.0,
        "routers_idle_cpu_percent": idle_cpu,
        "hosts": {
            "pings": pings.iter().map(hosts::PingResult::to_json).collect::<Vec<_>>(),
            "servers": host_stats,
        },
        "collector": counts,
        "api": answers,
        "captures": captures,
        "checks": checks.to_json(),
    });
    std::fs::write(
        opts.out.join("summary.json"),
        serde_json::to_string_pretty(&summary)?,
    )?;
    println!();
    report::print_summary(&summary);
    let (passed, failed) = checks.counts();
    println!("\n{passed} passed, {failed} failed");
    Ok(failed)
}

/// Phase 1: every path through the generated routers' scion-dp, in memory.
fn in_memory(
    net: &Network,
    layout: &Layout,
    paths: &[BoxPath],
    raws: &[Vec<u8>],
    now_s: u64,
    checks: &mut Checks,
) -> Result<(), Box<dyn std::error::Error>> {
    println!(
        "== 1. {} ASes, {} routers, {} links, {} paths; every path through scion-dp in memory",
        net.ases.len(),
        net.routers().count(),
        net.links.len(),
        paths.len()
    );
    let sim = SimNetwork::load(net, layout)?;
    let failed: Vec<String> = paths
        .iter()
        .zip(raws)
        .filter_map(|(p, raw)| {
            sim.send(net, p, raw, now_s * 1_000_000_000)
                .err()
                .map(|e| format!("{}: {e}", p.name(net)))
        })
        .collect();
    checks.add(
        "every path is forwarded by the generated routers (in memory)",
        failed.is_empty(),
        failed.join("; "),
    );
    Ok(())
}

/// Phase 2: namespaces, veths and captures, the collector with the keys imported, then the
/// routers, up with every BFD session Up; the routers' names.
fn bring_up(
    procs: &mut Procs,
    opts: &Options,
    layout: &Layout,
    net: &Network,
    collector: &Collector,
    checks: &mut Checks,
) -> Result<Vec<String>, Box<dyn std::error::Error>> {
    netns::build(net)?;
    start_captures(procs, net, &opts.out.join("captures"))?;
    start_collector(procs, opts, layout)?;
    let ready = procs.wait_until("collector ready", COLLECTOR_READY_WITHIN, || {
        collector.ready()
    });
    checks.add("collector ready", ready.is_ok(), format!("{ready:?}"));
    ready?;
    import(opts, layout, net)?;
    for (_, _, r) in net.routers() {
        start_router(procs, opts, layout, &r.name)?;
    }
    let names: Vec<String> = net.routers().map(|(_, _, r)| r.name.clone()).collect();
    let up = procs.wait_until("every router up with BFD Up", ROUTERS_UP_WITHIN, || {
        names.iter().all(|n| api::router_all_up(n))
    });
    checks.add(
        "every router healthy, every link's BFD session Up",
        up.is_ok(),
        match &up {
            Ok(d) => format!("in {:.1} s", d.as_secs_f64()),
            Err(e) => e.to_string(),
        },
    );
    for n in &names {
        procs.check(n).map_err(std::io::Error::other)?;
    }
    Ok(names)
}

/// Phase 3: waits for the first report of the routers' probes to be queryable.
fn first_report(procs: &Procs, collector: &Collector) -> Result<Duration, WaitError> {
    procs.wait_until("first report queryable", FIRST_REPORT_WITHIN, || {
        collector
            .get("/api/v1/paths")
            .ok()
            .and_then(|v| v["paths"].as_array().cloned())
            .is_some_and(|ps| {
                ps.iter()
                    .any(|p| !p["telemetry"].as_array().is_none_or(Vec::is_empty))
            })
    })
}

/// Phase 6, the collector's counters: reports accepted and points written (with those of
/// the collector process the faults stopped), and none rejected as forged or malformed.
fn collector_counts(opts: &Options, collector: &Collector, checks: &mut Checks) -> Value {
    let metrics = collector.metrics().unwrap_or_default();
    // Counts of this collector process, plus those of the one the faults stopped.
    let first_log = opts.out.join("logs").join("collector-1.log");
    let earlier = |name| crate::store::final_counter(&first_log, name).unwrap_or(0) as f64;
    let accepted = api::sample(&metrics, "idint_collector_accepted_total") + earlier("accepted");
    let rejected = api::samples_with_labels(&metrics, "idint_collector_rejected_total");
    let points =
        api::sample(&metrics, "idint_collector_points_written_total") + earlier("points_written");
    checks.add(
        "reports accepted and points stored",
        accepted > 0.0 && points > 0.0,
        format!("{accepted} accepted, {points} points written"),
    );
    let forged: f64 = rejected
        .iter()
        .filter(|(l, _)| l.contains("bad_mac") || l.contains("malformed"))
        .map(|(_, v)| v)
        .sum();
    checks.add(
        "no report rejected as forged or malformed",
        forged == 0.0,
        format!("rejected: {rejected:?}"),
    );
    json!({
        "accepted": accepted,
        "rejected": rejected
            .iter()
            .filter(|(_, v)| *v > 0.0)
            .map(|(l, v)| (l.clone(), *v))
            .collect::<BTreeMap<_, _>>(),
        "points_written": points,
    })
}

/// The process name of link `k`'s capture.
fn capture_name(k: usize) -> String {
    format!("capture-link{}", k + 1)
}

/// One capture per inter-AS link, taken on its first end (the router's namespace).
fn start_captures(procs: &mut Procs, net: &Network, dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    for (k, l) in net.links.iter().enumerate() {
        let r = &net.ases[l.a.as_ix].routers[l.a.router];
        let file = dir.join(crate::captures::file_name(net, k));
        procs.spawn(
            &capture_name(k),
            Some(&router_ns(&r.name)),
            Path::new("dumpcap"),
            &[
                "-q".into(),
                "-P".into(),
                "-i".into(),
                files::router_link_if(l.a.ifid),
                "-w".into(),
                file.display().to_string(),
            ],
        )?;
    }
    Ok(())
}

/// Starts the collector (root namespace).
pub fn start_collector(procs: &mut Procs, opts: &Options, layout: &Layout) -> std::io::Result<()> {
    procs.spawn(
        "collector",
        None,
        &opts.bin.join("idint-collector"),
        &[
            "run".into(),
            "--config".into(),
            layout
                .collector_dir()
                .join("collector.toml")
                .display()
                .to_string(),
        ],
    )?;
    Ok(())
}

/// Imports topology, paths and the other ASes' level-1 keys with `idint-collector import`.
fn import(
    opts: &Options,
    layout: &Layout,
    net: &Network,
) -> Result<(), Box<dyn std::error::Error>> {
    let topo: Vec<String> = (0..net.ases.len())
        .map(|i| {
            layout
                .as_dir(net, i)
                .join("topology.json")
                .display()
                .to_string()
        })
        .collect();
    collector_import(opts, "topology", &topo)?;
    let paths = layout.collector_dir().join("paths.json");
    collector_import(opts, "paths", &[paths.display().to_string()])?;
    import_keys(opts, layout)
}

/// Imports the other ASes' level-1 keys (they live in the collector's memory only: a restarted
/// collector needs them again).
pub fn import_keys(opts: &Options, layout: &Layout) -> Result<(), Box<dyn std::error::Error>> {
    let keys = layout.collector_dir().join("level1-keys.json");
    collector_import(opts, "keys", &[keys.display().to_string()])
}

/// `idint-collector import ... <what> <files>`.
fn collector_import(
    opts: &Options,
    what: &str,
    files: &[String],
) -> Result<(), Box<dyn std::error::Error>> {
    let url = format!("http://{}", opts.api);
    let out = std::process::Command::new(opts.bin.join("idint-collector"))
        .args(["import", "--url", &url, "--token", ADMIN_TOKEN, what])
        .args(files)
        .output()?;
    if !out.status.success() {
        return Err(format!(
            "idint-collector import {what}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )
        .into());
    }
    Ok(())
}

/// Starts router `name` in its namespace.
pub fn start_router(
    procs: &mut Procs,
    opts: &Options,
    layout: &Layout,
    name: &str,
) -> std::io::Result<()> {
    procs.spawn(
        name,
        Some(&router_ns(name)),
        &opts.bin.join("idint-router"),
        &[
            "--config".into(),
            layout.router_config(name).display().to_string(),
        ],
    )?;
    Ok(())
}
