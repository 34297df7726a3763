//! Wiring: EAL, mempool, ports, forwarding tables, workers on lcores, the wait for a signal
//! or the configured duration, and the final summary.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use drkey::cache::KeyCache;
use drkey::provider::LocalProvider;
use scion_dp::Ingress;
use scion_dp::config::Router;
use scion_dp::idint::DrkeyKeys;

use idint_report::v1::Exporter;

use crate::config::{Config, ConfigError, Distribution};
use crate::distribute::{DistStats, Distributor};
use crate::export::{self, ExportConfig, ExportStats, RingExporter};
use crate::neighbor::{Neighbor6Table, NeighborTable};
use crate::stats::{Snapshot, WorkerStats};
use crate::worker::{IfEgress, RouterTelemetry, Sink, Source, Tables, Worker};
use dpdk::{Consumer, DpdkError, Eal, LcoreError, Mempool, Port, PortCaps, PortSetup, Producer};
use router_core::clock::{SharedClock, TscClock};
use router_core::telemetry::{PortReading, PortSample};

/// Sibling routers by internal address, each with the lowest interface it owns: packets from
/// that address arrive over the sibling's link, which any of its interfaces names for scion-dp.
fn sibling_links(r: &scion_dp::config::RouterConfig) -> Vec<(std::net::SocketAddr, u16)> {
    let mut links: Vec<(std::net::SocketAddr, u16)> = Vec::new();
    for i in &r.interfaces {
        if let scion_dp::config::Owner::Sibling(a) = i.owner {
            match links.iter_mut().find(|(x, _)| *x == a) {
                Some((_, id)) => *id = (*id).min(i.id),
                None => links.push((a, i.id)),
            }
        }
    }
    links
}

/// Reads every port's counters into the shared samples (rates over `interval_ns`).
fn sample_ports(ports: &[Port], samples: &[PortSample], interval_ns: u64) {
    for (p, s) in ports.iter().zip(samples) {
        if let Ok(st) = p.stats() {
            let reading = PortReading {
                rx_packets: st.rx_packets,
                tx_packets: st.tx_packets,
                rx_bytes: st.rx_bytes,
                tx_bytes: st.tx_bytes,
                rx_drops: st.rx_missed + st.rx_errors + st.rx_nombuf,
                tx_drops: st.tx_errors,
            };
            s.update(&reading, p.link().1, interval_ns);
        }
    }
}

/// Run options from the command line.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Stop after this long (else at SIGINT/SIGTERM).
    pub duration: Option<Duration>,
}

/// Why the router could not run.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// A DPDK call failed.
    #[error("DPDK: {0}")]
    Dpdk(#[from] DpdkError),
    /// A worker failed.
    #[error("worker: {0}")]
    Lcore(#[from] LcoreError),
    /// The configuration does not fit the machine (ports, lcores, keys).
    #[error("{0}")]
    Setup(String),
    /// A configuration item that DPDK or the machine rejected once EAL ran (the EAL
    /// arguments, a device that did not appear, too few lcores or queues).
    #[error(transparent)]
    Config(ConfigError),
}

impl RunError {
    /// Whether this is a configuration error (exit code 2) rather than a runtime one (1).
    pub fn is_config(&self) -> bool {
        matches!(self, RunError::Config(_))
    }
}

/// A configuration error of `item` in the configuration file of `config`.
fn config_error(config: &Config, item: &str, reason: String) -> RunError {
    RunError::Config(ConfigError::Item {
        file: config.file.clone(),
        item: item.to_string(),
        reason,
    })
}

/// Initialises EAL with the configured arguments. EAL's refusal of its arguments (`EINVAL`)
/// or of a device they name (`ENODEV`) is a configuration error of `eal`.
fn init_eal(config: &Config) -> Result<Eal, RunError> {
    Eal::init(&config.eal).map_err(|e| match e.code {
        libc::EINVAL => config_error(
            config,
            "eal",
            format!("DPDK rejected these EAL arguments ({e}); the EAL messages above say which"),
        ),
        libc::ENODEV => config_error(
            config,
            "eal",
            format!(
                "DPDK cannot set up a device these EAL arguments name ({e}); the EAL messages \
                 above say which (e.g. an unknown --vdev driver)"
            ),
        ),
        _ => RunError::Setup(format!(
            "DPDK: {e}; the EAL messages above say why (EAL arguments: eal in {})",
            config.file.display()
        )),
    })
}

/// Why no DPDK port is named `device` (`port[index].device`): a device the EAL arguments ask
/// for whose driver failed, or a name nothing asked for.
fn missing_port(config: &Config, index: usize, device: &str, e: &DpdkError) -> RunError {
    match crate::eal_args::device_arg(&config.eal, device) {
        Some(arg) => config_error(
            config,
            "eal",
            format!(
                "{arg:?} (the device of port[{index}]) gave no DPDK port: its driver failed to \
                 probe it; the EAL messages above say why (e.g. an unknown device argument)"
            ),
        ),
        None => config_error(
            config,
            &format!("port[{index}].device"),
            format!(
                "no DPDK port named {device:?} ({}): eal has no --vdev or -a for it and no \
                 device DPDK probed has that name",
                e.text
            ),
        ),
    }
}

/// A run that started forwarding: its final counters, and what went wrong while it ran or
/// stopped, if anything did.
#[derive(Debug)]
pub struct Finished {
    /// The summary of every counter (JSON text).
    pub summary: String,
    /// A worker, the distributor, the report exporter or the EAL clean-up failed.
    pub failure: Option<RunError>,
}

/// Runs the router until stopped. An error means it never started forwarding; once it has,
/// the result is [`Finished`], with the counters even if something failed on the way.
pub fn run(config: Config, opts: &Options) -> Result<Finished, RunError> {
    let eal = init_eal(&config)?;
    let workers = worker_lcores(&config, &eal)?;
    // Lives for the process (mbufs never outlive it).
    let pool = Mempool::new(&eal, "router_pool", config.mbufs, 256)?;
    let router = Arc::new(
        Router::new(config.router.clone())
            .map_err(|e| RunError::Setup(format!("router model: {e}")))?,
    );
    // The ports' queue counts decide how packets reach the workers.
    let mut probed = Vec::new();
    for (i, plan) in config.ports.iter().enumerate() {
        let id = eal
            .port_by_name(&plan.device)
            .map_err(|e| missing_port(&config, i, &plan.device, &e))?;
        probed.push(dpdk::probe_port(&eal, id)?);
    }
    let Lcores {
        software,
        distributor: dist_lcore,
        workers,
    } = plan_lcores(&config, workers, &probed)?;
    let queues = if software { 1 } else { workers.len() as u16 };
    let (mut ports, tables) = start_ports(&eal, &config, probed, queues, pool)?;

    let provider = Arc::new(
        LocalProvider::new(config.router.local_ia, &config.master0, config.epoch_secs)
            .map_err(|e| RunError::Setup(format!("DRKey: {e}")))?,
    );
    let clock = TscClock::new(eal.tsc_hz(), dpdk::rdtsc(), unix_now_ns());
    let started_ns = clock.unix_ns(dpdk::rdtsc());
    // Corrected against the system clock by the control loop below.
    let shared_clock = Arc::new(SharedClock::new(clock));
    let samples: Arc<[PortSample]> = ports.iter().map(|_| PortSample::default()).collect();
    sample_ports(&ports, &samples, 1);
    dpdk::install_stop_signals()?;
    // Bound before any thread starts, so a taken port fails cleanly.
    let control = bind_control(&config)?;

    // Report export: one SP/SC ring per worker, drained by the exporter thread.
    let export_stats = Arc::new(ExportStats::default());
    let mut export_in: Vec<Producer> = Vec::new();
    let mut export_out: Vec<Consumer> = Vec::new();
    if config.export.is_some() {
        for w in 0..workers.len() {
            let (p, c) = dpdk::mbuf_ring(&eal, &format!("export_{w}"), 1024)?;
            export_in.push(p);
            export_out.push(c);
        }
    }
    let mut export_in = export_in.into_iter();
    let done = Arc::new(AtomicBool::new(false));
    let exporter_thread = match &config.export {
        None => None,
        Some(e) => {
            let cfg = ExportConfig {
                collector: e.collector,
                exporter: Exporter {
                    isd_as: config.router.local_ia.to_u64(),
                    router_id: e.router_number,
                    name: config.router_id.clone(),
                },
                max_reports: e.max_reports,
                max_bytes: e.max_bytes,
                flush: Duration::from_millis(e.flush_ms),
            };
            let (r, st, d) = (export_out, export_stats.clone(), done.clone());
            Some(
                std::thread::Builder::new()
                    .name("report-export".into())
                    .spawn(move || export::run_exporter(cfg, r, st, d))
                    .map_err(|e| RunError::Setup(format!("exporter thread: {e}")))?,
            )
        }
    };

    let mut stats = Vec::new();
    let mut handles = Vec::new();
    let dist_stats = Arc::new(DistStats::default());
    let dist_done = Arc::new(AtomicBool::new(false));
    // Software distribution: per worker and port an input ring (the distributor produces,
    // the worker consumes) and an output ring (the other way round).
    let mut to_workers: Vec<Vec<Producer>> = Vec::new();
    let mut from_workers: Vec<Vec<Consumer>> = Vec::new();
    let mut worker_rings: Vec<Vec<(Consumer, Producer)>> = Vec::new();
    if software {
        for w in 0..workers.len() {
            let (mut to, mut from, mut mine) = (Vec::new(), Vec::new(), Vec::new());
            for p in 0..ports.len() {
                let (in_p, in_c) = dpdk::mbuf_ring(&eal, &format!("d_in_{w}_{p}"), 1024)?;
                let (out_p, out_c) = dpdk::mbuf_ring(&eal, &format!("d_out_{w}_{p}"), 1024)?;
                to.push(in_p);
                from.push(out_c);
                mine.push((in_c, out_p));
            }
            to_workers.push(to);
            from_workers.push(from);
            worker_rings.push(mine);
        }
    }
    let mut worker_rings = worker_rings.into_iter();
    for (w, &lcore) in workers.iter().enumerate() {
        let q = w as u16;
        let mut rx = Vec::new();
        let mut tx = Vec::new();
        let mut mine = worker_rings.next().unwrap_or_default().into_iter();
        for (i, p) in ports.iter_mut().enumerate() {
            if software {
                let (input, output) = mine
                    .next()
                    .ok_or_else(|| RunError::Setup("worker ring missing".into()))?;
                // The worker's own ring: numbered as the rx queue it would poll without
                // software distribution (rings of different workers are told apart).
                rx.push((i, Source::Ring(input, q)));
                tx.push(Sink::Ring(output));
                continue;
            }
            let r = p
                .rx_queue(q)
                .ok_or_else(|| RunError::Setup("rx queue taken".into()))?;
            rx.push((i, Source::Queue(r)));
            tx.push(Sink::Queue(
                p.tx_queue(q)
                    .ok_or_else(|| RunError::Setup("tx queue taken".into()))?,
            ));
        }
        let mut seed = [0u8; 32];
        getrandom::fill(&mut seed)
            .map_err(|e| RunError::Setup(format!("OS random generator: {e}")))?;
        let s = Arc::new(WorkerStats::default());
        stats.push(s.clone());
        let worker = Worker {
            clock: shared_clock.clone(),
            #[cfg(feature = "measurement-aids")]
            aids: config.aids,
            tx,
            tables: tables.clone(),
            router: router.clone(),
            stats: s,
            pool,
            keys: DrkeyKeys {
                cache: KeyCache::new(provider.clone(), config.cache_keys),
                local: config.router.local_ia,
            },
            seed,
            telemetry: RouterTelemetry::new(
                clock,
                config.node_id,
                started_ns,
                samples.clone(),
                tables.clone(),
                config.energy,
                rx,
                if software { 0 } else { q },
            ),
            exporter: export_in.next().map(|r| RingExporter::new(pool, r)),
        };
        handles.push(dpdk::launch(&eal, lcore, move || {
            worker.run();
            0
        })?);
    }

    let dist_handle = match dist_lcore {
        None => None,
        Some(lcore) => {
            let mut rx = Vec::new();
            let mut tx = Vec::new();
            for p in ports.iter_mut() {
                rx.push(
                    p.rx_queue(0)
                        .ok_or_else(|| RunError::Setup("rx queue taken".into()))?,
                );
                tx.push(
                    p.tx_queue(0)
                        .ok_or_else(|| RunError::Setup("tx queue taken".into()))?,
                );
            }
            let d = Distributor {
                rx,
                tx,
                to_workers: std::mem::take(&mut to_workers),
                from_workers: std::mem::take(&mut from_workers),
                stats: dist_stats.clone(),
                done: dist_done.clone(),
            };
            Some(dpdk::launch(&eal, lcore, move || {
                d.run();
                0
            })?)
        }
    };

    // Control endpoints. The monitors keep the ports open until the thread is joined.
    let http_thread = match control {
        None => None,
        Some(listener) => {
            let monitors: Vec<(String, dpdk::PortMonitor)> = config
                .ports
                .iter()
                .zip(ports.iter())
                .map(|(p, q)| (p.device.clone(), q.monitor()))
                .collect();
            let shared = ControlShared {
                stats: stats.clone(),
                export_stats: export_stats.clone(),
                dist_stats: dist_stats.clone(),
                done: done.clone(),
            };
            Some(spawn_control(listener, monitors, shared)?)
        }
    };

    let start = Instant::now();
    let mut last_sample = Instant::now();
    // Where the TSC rate is measured from (see `TscClock::resynced`).
    let mut rate_from = clock.anchor();
    while !dpdk::stop_requested() {
        if opts.duration.is_some_and(|d| start.elapsed() >= d) {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
        if last_sample.elapsed() >= Duration::from_millis(100) {
            let ns = last_sample.elapsed().as_nanos() as u64;
            last_sample = Instant::now();
            sample_ports(&ports, &samples, ns);
            let (tsc, real) = (dpdk::rdtsc(), unix_now_ns());
            shared_clock.store(&shared_clock.load().resynced(tsc, real, &mut rate_from));
        }
    }
    let signalled = dpdk::stop_requested();
    dpdk::request_stop();
    let mut failure: Option<RunError> = None;
    for h in handles {
        if let Err(e) = h.join() {
            failure.get_or_insert(e.into());
        }
    }
    dist_done.store(true, Ordering::Release);
    if let Some(Err(e)) = dist_handle.map(|h| h.join()) {
        failure.get_or_insert(e.into());
    }
    done.store(true, Ordering::Release);
    if let Some(t) = exporter_thread {
        match t.join() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                failure.get_or_insert(RunError::Setup(format!("report export: {e}")));
            }
            Err(_) => {
                failure.get_or_insert(RunError::Setup("report export thread panicked".into()));
            }
        }
    }
    if let Some(t) = http_thread {
        let _ = t.join();
    }
    let summary = summary_json(&SummaryParts {
        config: &config,
        ports: &ports,
        stats: &stats,
        workers: workers.len(),
        software,
        dist_stats: &dist_stats,
        export_stats: &export_stats,
        elapsed_s: start.elapsed().as_secs_f64(),
        signalled,
    });
    let text = serde_json::to_string_pretty(&summary).unwrap_or_default();
    drop(ports); // stops and closes the ports (net_pcap flushes its output file)
    // Rings not handed to a thread (none normally; all of them on early returns above are
    // dropped with this function).
    drop((export_in, worker_rings, to_workers, from_workers));
    // SAFETY: nothing DPDK is used after this point: every lcore function has returned (all
    // handles joined above), the exporter and control threads are joined (their rings,
    // monitors and pool references went with them), the ports and queues are closed and
    // dropped, the remaining ring ends are dropped, and `run` returns right after; the pool
    // (`&'static`) is not used again by anything.
    #[allow(unsafe_code)]
    let cleaned = unsafe { eal.cleanup() };
    if let Err(e) = cleaned {
        failure.get_or_insert(e.into());
    }
    Ok(Finished {
        summary: text,
        failure,
    })
}

/// The system clock, Unix ns (0 before 1970).
fn unix_now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

/// What the control thread reads: every worker's counters, the exporter's and the
/// distributor's, and when to stop.
struct ControlShared {
    stats: Vec<Arc<WorkerStats>>,
    export_stats: Arc<ExportStats>,
    dist_stats: Arc<DistStats>,
    done: Arc<AtomicBool>,
}

/// Serves `/metrics` (Prometheus text of the summed counters and the ports' statistics) and
/// `/health` on `listener` in a thread of its own until `shared.done`.
fn spawn_control(
    listener: std::net::TcpListener,
    monitors: Vec<(String, dpdk::PortMonitor)>,
    shared: ControlShared,
) -> Result<std::thread::JoinHandle<()>, RunError> {
    let ControlShared {
        stats,
        export_stats,
        dist_stats,
        done,
    } = shared;
    std::thread::Builder::new()
        .name("control-http".into())
        .spawn(move || {
            crate::http::serve(
                listener,
                done,
                || {
                    let snap = Snapshot::sum(stats.iter().map(|s| &**s));
                    let ps: Vec<_> = monitors
                        .iter()
                        .map(|(n, m)| (n.clone(), m.stats().unwrap_or_default()))
                        .collect();
                    let mut extra = export_stats.named().to_vec();
                    extra.extend(dist_stats.named());
                    crate::http::prometheus(&snap, &ps, &extra)
                },
                || {
                    let snap = Snapshot::sum(stats.iter().map(|s| &**s));
                    let ok = !dpdk::stop_requested();
                    let body = serde_json::json!({
                        "status": if ok { "ok" } else { "stopping" },
                        "workers": stats.len(),
                        "rx_frames": snap.io.rx_frames,
                    });
                    (ok, body.to_string())
                },
            )
        })
        .map_err(|e| RunError::Setup(format!("control thread: {e}")))
}

/// Which lcores do what: with software distribution the first worker lcore runs the
/// distributor.
struct Lcores {
    software: bool,
    distributor: Option<u32>,
    workers: Vec<u32>,
}

/// The worker lcores EAL gave (at least one besides the main lcore).
fn worker_lcores(config: &Config, eal: &Eal) -> Result<Vec<u32>, RunError> {
    let workers = eal.worker_lcores();
    if workers.is_empty() {
        return Err(config_error(
            config,
            "eal",
            format!(
                "no worker lcore: EAL runs on lcore {} only; give it at least two lcores \
                 (e.g. -l 0-1): the main lcore runs the control loop, the others are workers",
                eal.main_lcore()
            ),
        ));
    }
    Ok(workers)
}

/// Chooses between RSS queues and software distribution (`dataplane.distribution` and the
/// ports' queue counts `probed`) and assigns the `workers` lcores.
fn plan_lcores(
    config: &Config,
    workers: Vec<u32>,
    probed: &[PortCaps],
) -> Result<Lcores, RunError> {
    let nw = u16::try_from(workers.len()).map_err(|_| RunError::Setup("too many lcores".into()))?;
    let short = probed
        .iter()
        .zip(&config.ports)
        .find(|(c, _)| c.max_rx_queues < nw || c.max_tx_queues < nw);
    let software = match (config.distribution, short) {
        (Distribution::Software, _) => true,
        (Distribution::Auto, s) => s.is_some(),
        (Distribution::Queues, None) => false,
        (Distribution::Queues, Some((c, p))) => {
            return Err(config_error(
                config,
                "dataplane.distribution",
                format!(
                    "\"queues\": port {:?} ({}) has {} rx / {} tx queues, {} workers need one each \
                     (use distribution = \"software\" or \"auto\")",
                    p.device, c.driver, c.max_rx_queues, c.max_tx_queues, nw
                ),
            ));
        }
    };
    if software && workers.len() < 2 {
        let why = match (config.distribution, short) {
            (Distribution::Auto, Some((c, p))) => format!(
                " (distribution = \"auto\" chose it: port {:?} has {} rx / {} tx queues for {} workers)",
                p.device, c.max_rx_queues, c.max_tx_queues, nw
            ),
            _ => String::new(),
        };
        return Err(config_error(
            config,
            "eal",
            format!(
                "software flow distribution{why} needs a distributor and a worker lcore besides \
                 the main one, EAL gives {} lcore(s) besides it (e.g. -l 0-2, or \
                 --lcores=0@0,1@1,2@1)",
                workers.len()
            ),
        ));
    }
    Ok(if software {
        Lcores {
            software,
            distributor: Some(workers[0]),
            workers: workers[1..].to_vec(),
        }
    } else {
        Lcores {
            software,
            distributor: None,
            workers,
        }
    })
}

/// Starts every configured port with `queues` rx and tx queues, and builds the tables the
/// workers route by (interfaces by port, egress by interface, neighbours).
fn start_ports(
    eal: &Eal,
    config: &Config,
    probed: Vec<PortCaps>,
    queues: u16,
    pool: &'static Mempool,
) -> Result<(Vec<Port>, Arc<Tables>), RunError> {
    let mut ports = Vec::new();
    let mut port_macs = Vec::new();
    let mut port_ids = Vec::new();
    let mut ingress = Vec::new();
    // Indexed by interface ID, as long as the highest one needs.
    let highest = config
        .ports
        .iter()
        .flat_map(|p| p.interfaces.iter().map(|i| usize::from(i.id)))
        .max()
        .unwrap_or(0);
    let mut egress: Vec<Option<IfEgress>> = vec![None; highest + 1];
    let mut internal_port = 0;
    for (i, (plan, caps)) in config.ports.iter().zip(probed).enumerate() {
        let port = Port::start(
            eal,
            caps,
            PortSetup {
                rx_queues: queues,
                tx_queues: queues,
                rx_desc: config.rx_desc,
                tx_desc: config.tx_desc,
            },
            pool,
        )?;
        let mut local = Vec::new();
        let port_mac = port.caps().mac;
        for ifc in &plan.interfaces {
            local.push((ifc.local, Ingress::External(ifc.id)));
            egress[usize::from(ifc.id)] = Some(IfEgress::new(
                i,
                port_mac,
                ifc.local,
                ifc.remote,
                config.neighbors.get(&ifc.remote.ip()).copied(),
            ));
        }
        if plan.internal {
            local.push((config.router.internal_addr, Ingress::Internal));
            internal_port = i;
        }
        ingress.push(local);
        port_macs.push(port_mac);
        port_ids.push(port.id());
        ports.push(port);
    }
    let tables = Arc::new(Tables {
        ports: port_macs,
        port_ids,
        ingress,
        egress,
        internal_port,
        internal_addr: config.router.internal_addr,
        neighbors: config.neighbors.iter().map(|(a, m)| (*a, *m)).collect(),
        learned: NeighborTable::new(LEARNED_NEIGHBOURS, config.neighbor_aging),
        learned6: Neighbor6Table::new(LEARNED_NEIGHBOURS, config.neighbor_aging),
        siblings: sibling_links(&config.router),
        default_macs: config
            .ports
            .iter()
            .map(|p| p.default_next_hop_mac)
            .collect(),
        vlans: config.ports.iter().map(|p| p.vlan).collect(),
    });
    Ok((ports, tables))
}

/// Slots of each learned-neighbour table (ARP, NDP).
const LEARNED_NEIGHBOURS: usize = 4096;

/// Binds the `/metrics` and `/health` listener of `control.http`, if configured.
fn bind_control(config: &Config) -> Result<Option<std::net::TcpListener>, RunError> {
    let Some(addr) = config.http else {
        return Ok(None);
    };
    let l = crate::http::bind(addr)
        .map_err(|e| RunError::Setup(format!("control.http {addr}: {e}")))?;
    // The address actually bound (port 0 in the configuration: one the OS chose).
    let at = l
        .local_addr()
        .map_err(|e| RunError::Setup(format!("control.http {addr}: {e}")))?;
    eprintln!("idint-router: control endpoints on http://{at} (/metrics, /health)");
    Ok(Some(l))
}

/// What the JSON summary at exit is made of.
struct SummaryParts<'a> {
    config: &'a Config,
    ports: &'a [Port],
    stats: &'a [Arc<WorkerStats>],
    workers: usize,
    software: bool,
    dist_stats: &'a DistStats,
    export_stats: &'a ExportStats,
    elapsed_s: f64,
    signalled: bool,
}

/// The JSON summary at exit: counters of every worker summed, ports, distributor, export.
fn summary_json(p: &SummaryParts<'_>) -> serde_json::Value {
    let elapsed = p.elapsed_s;
    let snap = Snapshot::sum(p.stats.iter().map(|s| &**s));
    let mut port_json = Vec::new();
    for (plan, port) in p.config.ports.iter().zip(p.ports.iter()) {
        let st = port.stats().unwrap_or_default();
        port_json.push(serde_json::json!({
            "device": plan.device,
            "driver": port.caps().driver,
            "interfaces": plan.interfaces.iter().map(|i| i.id).collect::<Vec<_>>(),
            "internal": plan.internal,
            "stats": st,
        }));
    }
    let mut summary = snap.to_json();
    summary["router_id"] = p.config.router_id.clone().into();
    summary["workers"] = p.workers.into();
    summary["distribution"] = if p.software { "software" } else { "queues" }.into();
    if p.software {
        let mut d = serde_json::Map::new();
        for (k, v) in p.dist_stats.named() {
            d.insert(k.into(), v.into());
        }
        summary["distributor"] = d.into();
    }
    summary["elapsed_s"] = elapsed.into();
    summary["stopped_by_signal"] = p.signalled.into();
    summary["rx_mpps"] = (snap.io.rx_frames as f64 / elapsed.max(1e-9) / 1e6).into();
    let passed = snap.dp.forwarded + snap.dp.delivered + snap.dp.to_sibling;
    summary["forwarded_mpps"] = (passed as f64 / elapsed.max(1e-9) / 1e6).into();
    summary["ports"] = port_json.into();
    let mut ex = serde_json::Map::new();
    for (k, v) in p.export_stats.named() {
        ex.insert(k.into(), v.into());
    }
    summary["export"] = ex.into();
    summary
}

#[cfg(test)]
mod tests {
    use scion_dp::config::{InterfaceConfig, LinkType, Owner, RouterConfig};

    #[test]
    fn every_sibling_router_gets_one_link() {
        let a = "10.0.0.2:30042".parse().unwrap();
        let b = "10.0.0.3:30042".parse().unwrap();
        let iface = |id, owner| InterfaceConfig {
            id,
            link_type: LinkType::Child,
            neighbor_ia: format!("1-ff00:0:{}", 200 + id).parse().unwrap(),
            owner,
        };
        let r = RouterConfig {
            local_ia: "1-ff00:0:110".parse().unwrap(),
            core: false,
            internal_addr: "10.0.0.1:30042".parse().unwrap(),
            interfaces: vec![
                iface(1, Owner::Local),
                iface(7, Owner::Sibling(a)),
                iface(3, Owner::Sibling(a)),
                iface(5, Owner::Sibling(b)),
            ],
            services: vec![],
            dispatched_ports: scion_dp::config::DispatchedPorts::All,
            forwarding_key: [0; 16],
        };
        assert_eq!(super::sibling_links(&r), vec![(a, 3), (b, 5)]);
    }
}
