//! Faults in the box, each with what the network and the telemetry must show:
//!
//! 1. the core link between the ISDs goes down: both routers see the port's link down and mark
//!    the interface down; a ping over it gets no telemetry back (the router answers SCMP
//!    External Interface Down instead, counted in its `/metrics`), while the peering path
//!    between the same hosts still delivers verified telemetry;
//! 2. the link comes back: BFD Up again, the core path delivers again;
//! 3. a router is restarted: its links come back up, traffic flows through it again;
//! 4. the collector is restarted: it drains and flushes what it accepted, comes back with the
//!    topology from PostgreSQL, reports resume, and every point it wrote is in the store.

use std::time::Duration;

use crate::api::{self, Collector};
use crate::checks::Checks;
use crate::files::{self, Layout};
use crate::netns::{self, router_ns};
use crate::paths::{PathKind, all_paths};
use crate::plan::{LinkKind, Network};
use crate::procs::Procs;
use crate::run::{Options, start_router};
use crate::{hosts, store};

/// How long a link-state change may take to show in a router's `/health`.
const LINK_STATE_WITHIN: Duration = Duration::from_secs(5);
/// How long BFD sessions may take to come back.
const BFD_UP_WITHIN: Duration = Duration::from_secs(30);
/// How long the restarted collector may take to be ready.
const COLLECTOR_BACK_WITHIN: Duration = Duration::from_secs(60);
/// Pings per path during the faults.
const PINGS: u32 = 3;

/// SCMP replies a router sent, from its `/metrics`.
fn scmp_replies(router: &str) -> f64 {
    api::router_get(router, "/metrics")
        .map(|m| {
            api::samples_with_labels(&m, "idint_router_scmp_replies_total")
                .iter()
                .map(|(_, v)| v)
                .sum::<f64>()
                + api::sample(&m, "idint_router_scmp_replies_total")
        })
        .unwrap_or(0.0)
}

/// Sets the veth of interface `ifid` in router `router`'s namespace `state` ("up"/"down").
fn set_link(router: &str, ifid: u16, state: &str) -> Result<(), netns::CommandError> {
    let dev = files::router_link_if(ifid);
    netns::run(&["ip", "-n", &router_ns(router), "link", "set", &dev, state])
}

/// Runs the faults; failures are recorded in `checks`.
pub fn run(
    procs: &mut Procs,
    opts: &Options,
    layout: &Layout,
    net: &Network,
    collector: &Collector,
    checks: &mut Checks,
) -> Result<(), Box<dyn std::error::Error>> {
    let core = net
        .links
        .iter()
        .find(|l| l.kind == LinkKind::Core)
        .ok_or("no core link")?;
    let (ra, rb) = (
        net.ases[core.a.as_ix].routers[core.a.router].name.clone(),
        net.ases[core.b.as_ix].routers[core.b.router].name.clone(),
    );
    let paths = all_paths(net);
    // Two paths between the peers: one over the core link, the peering shortcut.
    let peer_pair = paths
        .iter()
        .find(|p| p.kind == PathKind::Peering)
        .map(|p| (p.src, p.dst))
        .ok_or("no peering path")?;
    let over_core: Vec<_> = paths
        .iter()
        .filter(|p| (p.src, p.dst) == peer_pair)
        .cloned()
        .collect();
    let hosts = hosts::Hosts::new(opts, layout, net, std::time::Instant::now());

    // 1. Link down.
    let scmp_before = scmp_replies(&ra) + scmp_replies(&rb);
    set_link(&ra, core.a.ifid, "down")?;
    let seen = procs.wait_until("core link down in /health", LINK_STATE_WITHIN, || {
        api::router_if_up(&ra, core.a.ifid) == Some(false)
            && api::router_if_up(&rb, core.b.ifid) == Some(false)
    });
    checks.add(
        "core link down: both routers mark the interface down",
        seen.is_ok(),
        format!("{seen:?}"),
    );
    let during = hosts.ping_all(procs, &over_core, PINGS)?;
    for r in &during {
        let core_path = r.path.ends_with("core");
        checks.add(
            &format!("link down: ping {}", r.path),
            if core_path {
                r.verified == 0
            } else {
                r.verified > 0
            },
            format!("{} sent, {} verified", r.sent, r.verified),
        );
    }
    let scmp_after = scmp_replies(&ra) + scmp_replies(&rb);
    checks.add(
        "link down: the routers answer SCMP External Interface Down",
        scmp_after > scmp_before,
        format!("SCMP replies {scmp_before} -> {scmp_after}"),
    );

    // 2. Link up.
    set_link(&ra, core.a.ifid, "up")?;
    let back = procs.wait_until("core link BFD Up again", BFD_UP_WITHIN, || {
        api::router_all_up(&ra) && api::router_all_up(&rb)
    });
    checks.add(
        "core link up: BFD Up again",
        back.is_ok(),
        format!("{back:?}"),
    );
    let after = hosts.ping_all(procs, &over_core, PINGS)?;
    checks.add(
        "link up: both paths deliver verified telemetry again",
        after.iter().all(|r| r.verified > 0),
        after
            .iter()
            .map(|r| format!("{}: {}/{}", r.path, r.verified, r.sent))
            .collect::<Vec<_>>()
            .join(", "),
    );

    // 3. Router restart (the far side of the core link).
    procs.stop(&rb);
    start_router(procs, opts, layout, &rb)?;
    let restarted = procs.wait_until("restarted router up", BFD_UP_WITHIN, || {
        api::router_all_up(&rb) && api::router_all_up(&ra)
    });
    checks.add(
        &format!("router {rb} restarted: links Up again"),
        restarted.is_ok(),
        format!("{restarted:?}"),
    );
    let again = hosts.ping_all(procs, &over_core, PINGS)?;
    checks.add(
        &format!("router {rb} restarted: traffic through it verified"),
        again.iter().all(|r| r.verified > 0),
        again
            .iter()
            .map(|r| format!("{}: {}/{}", r.path, r.verified, r.sent))
            .collect::<Vec<_>>()
            .join(", "),
    );

    // 4. Collector restart.
    procs.stop("collector");
    let stopped_s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    let first_written = store::written_in_log(&opts.out.join("logs").join("collector.log"));
    std::fs::rename(
        opts.out.join("logs").join("collector.log"),
        opts.out.join("logs").join("collector-1.log"),
    )?;
    crate::run::start_collector(procs, opts, layout)?;
    let ready = procs.wait_until("collector back", COLLECTOR_BACK_WITHIN, || {
        collector.ready()
    });
    checks.add(
        "collector restarted: ready",
        ready.is_ok(),
        format!("{ready:?}"),
    );
    // Secrets are not written to PostgreSQL: the operator imports the keys again.
    crate::run::import_keys(opts, layout)?;
    let accepted = procs.wait_until("reports accepted again", COLLECTOR_BACK_WITHIN, || {
        collector
            .metrics()
            .is_ok_and(|m| api::sample(&m, "idint_collector_accepted_total") > 0.0)
    });
    checks.add(
        "collector restarted: reports accepted again",
        accepted.is_ok(),
        format!("{accepted:?}"),
    );
    // Every path's reports resume: each has telemetry in the new instance.
    let resumed = procs.wait_until("every path measured again", COLLECTOR_BACK_WITHIN, || {
        collector.get("/api/v1/paths?limit=1000").is_ok_and(|v| {
            v["paths"].as_array().is_some_and(|ps| {
                ps.len() >= paths.len()
                    && ps
                        .iter()
                        .all(|p| p["telemetry"].as_array().is_some_and(|t| !t.is_empty()))
            })
        })
    });
    checks.add(
        "collector restarted: reports of every path resume",
        resumed.is_ok(),
        format!("{resumed:?}"),
    );
    let paths_known = collector
        .get("/api/v1/paths")
        .ok()
        .and_then(|v| v["total"].as_u64())
        .unwrap_or(0);
    checks.add(
        "collector restarted: topology and paths back from PostgreSQL",
        paths_known >= paths.len() as u64,
        format!("{paths_known} paths known, {} imported", paths.len()),
    );
    match first_written {
        Some(written) => {
            let stored = store::samples_until(&opts.storage.victoria_url, stopped_s, procs);
            checks.add(
                "collector restart: every point the first instance wrote is in the store",
                stored.is_some_and(|s| s >= written),
                format!("{written} written, {stored:?} stored"),
            );
        }
        None => checks.add(
            "collector restart: the first instance reported what it wrote",
            false,
            "no final counters in its log",
        ),
    }
    Ok(())
}
