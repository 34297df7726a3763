//! Wiring: EAL, mempool, ports, forwarding tables ([`setup`]), the report exporter, the
//! software distribution rings and the workers on lcores, the control thread and the main
//! lcore's loop ([`control`]), the shutdown, and the final summary ([`summary`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use drkey::cache::KeyCache;
use drkey::provider::LocalProvider;
use scion_dp::config::Router;
use scion_dp::idint::DrkeyKeys;

use idint_report::v1::Exporter;

use crate::bfd::{BfdControl, PortLayout};
use crate::config::{Config, ConfigError};
use crate::distribute::{DistStats, Distributor};
use crate::export::{self, ExportConfig, ExportStats, RingExporter};
use crate::stats::WorkerStats;
use crate::worker::{BfdRings, DpdkTsc, Probes, RouterTelemetry, Sink, Source, Tables, Worker};
use dpdk::{Consumer, DpdkError, Eal, LcoreError, LcoreHandle, Mempool, Port, Producer};
use router_core::clock::{SharedClock, TscClock};
use router_core::pool::PoolDemand;
use router_core::telemetry::PortSample;
use router_core::telemetry_source::Measurements;

mod control;
mod setup;
mod summary;

use control::ControlShared;
use setup::Lcores;

/// Mbufs each lcore keeps in its mempool cache.
const POOL_CACHE: u32 = 256;
/// Slots of every ring (report export, software distribution).
const RING_SLOTS: u32 = 1024;

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
pub(crate) fn config_error(config: &Config, item: &str, reason: String) -> RunError {
    RunError::Config(ConfigError::Item {
        file: config.file.clone(),
        item: item.to_string(),
        reason,
    })
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

/// What setting up gave: EAL, the pool, the router model, the lcores' roles, the started
/// ports and their tables, keys, clock and port samples, and the control listener.
struct Setup {
    eal: Eal,
    pool: &'static Mempool,
    router: Arc<Router>,
    lcores: Lcores,
    ports: Vec<Port>,
    tables: Arc<Tables>,
    provider: Arc<LocalProvider>,
    /// The clock at start (the workers' until the first correction).
    clock: TscClock,
    started_ns: u64,
    /// The clock the control loop corrects and the workers take up.
    shared_clock: Arc<SharedClock>,
    samples: Arc<[PortSample]>,
    control: Option<std::net::TcpListener>,
}

/// Counters and stop flags shared between the threads.
struct Shared {
    export_stats: Arc<ExportStats>,
    dist_stats: Arc<DistStats>,
    /// Stops the exporter and control threads (after the workers).
    done: Arc<AtomicBool>,
    /// Stops the distributor (after the workers).
    dist_done: Arc<AtomicBool>,
    /// Set when a worker or the distributor ended before the stop request (a panic): `/health`
    /// fails and the router stops with exit code 1.
    failed: Arc<AtomicBool>,
}

/// Marks the router failed when the lcore function holding it ends before the stop request,
/// whether it returned or a panic unwound through it (the lcore launch catches the panic; the
/// queues of that lcore would otherwise go unpolled while the router looks healthy).
struct FailGuard(Arc<AtomicBool>);

impl Drop for FailGuard {
    fn drop(&mut self) {
        if std::thread::panicking() || !dpdk::stop_requested() {
            self.0.store(true, Ordering::Release);
        }
    }
}

/// The threads and lcores running, to be joined at shutdown.
struct Running {
    workers: Vec<LcoreHandle>,
    distributor: Option<LcoreHandle>,
    exporter: Option<JoinHandle<std::io::Result<()>>>,
    control: Option<JoinHandle<()>>,
}

/// Software distribution rings: per worker and port an input ring (the distributor produces,
/// the worker consumes) and an output ring (the other way round).
#[derive(Default)]
struct DistRings {
    /// The distributor's ends, by worker and port.
    to_workers: Vec<Vec<Producer>>,
    /// The distributor's ends of the output rings, by worker and port.
    from_workers: Vec<Vec<Consumer>>,
    /// Each worker's ends, by port.
    workers: Vec<Vec<(Consumer, Producer)>>,
}

/// Runs the router until stopped. An error means it never started forwarding; once it has,
/// the result is [`Finished`], with the counters even if something failed on the way.
pub fn run(config: Config, opts: &Options) -> Result<Finished, RunError> {
    let mut s = set_up(&config)?;
    let shared = Shared {
        export_stats: Arc::new(ExportStats::default()),
        dist_stats: Arc::new(DistStats::default()),
        done: Arc::new(AtomicBool::new(false)),
        dist_done: Arc::new(AtomicBool::new(false)),
        failed: Arc::new(AtomicBool::new(false)),
    };
    let (export_in, exporter) = start_exporter(&s.eal, &config, s.lcores.workers.len(), &shared)?;
    let mut rings = dist_rings(
        &s.eal,
        s.lcores.software,
        s.lcores.workers.len(),
        s.ports.len(),
    )?;
    let (bfd_rings, mut bfd) = bfd_control(&s, &config)?;
    let bfd_stats = bfd.stats();
    let (stats, workers) = launch_workers(
        &mut s,
        &config,
        std::mem::take(&mut rings.workers),
        export_in,
        bfd_rings,
        &shared.failed,
    )?;
    let distributor = launch_distributor(&mut s, config.idle_sleep_us, &mut rings, &shared)?;
    let control = match s.control.take() {
        None => None,
        Some(listener) => {
            // The monitors keep the ports open until the thread is joined.
            let monitors: Vec<(String, dpdk::PortMonitor)> = config
                .ports
                .iter()
                .zip(s.ports.iter())
                .map(|(p, q)| (p.device.clone(), q.monitor()))
                .collect();
            let c = ControlShared {
                stats: stats.clone(),
                export_stats: shared.export_stats.clone(),
                dist_stats: shared.dist_stats.clone(),
                done: shared.done.clone(),
                bfd: bfd_stats.clone(),
                failed: shared.failed.clone(),
            };
            Some(control::spawn_control(listener, monitors, c)?)
        }
    };
    let running = Running {
        workers,
        distributor,
        exporter,
        control,
    };
    let start = std::time::Instant::now();
    let signalled = control::until_stopped(
        opts,
        &s.ports,
        &s.samples,
        &s.shared_clock,
        s.clock,
        &mut bfd,
        &shared.failed,
    );
    let failure = shut_down(running, &shared);
    // Its ring ends and port monitors go after the workers and the control thread.
    drop(bfd);
    let summary = summary::summary_json(&summary::SummaryParts {
        config: &config,
        ports: &s.ports,
        stats: &stats,
        workers: s.lcores.workers.len(),
        software: s.lcores.software,
        dist_stats: &shared.dist_stats,
        export_stats: &shared.export_stats,
        elapsed_s: start.elapsed().as_secs_f64(),
        signalled,
    });
    let text = serde_json::to_string_pretty(&summary).unwrap_or_default();
    let failure = clean_up(s, rings, failure);
    Ok(Finished {
        summary: text,
        failure,
    })
}

/// Initialises EAL, creates the pool and the router model, plans the lcores, starts the
/// ports, sets up keys, clock and port samples, installs the stop signals and binds the
/// control listener (before any thread starts, so that a taken port fails cleanly).
fn set_up(config: &Config) -> Result<Setup, RunError> {
    let eal = setup::init_eal(config)?;
    let workers = setup::worker_lcores(config, &eal)?;
    let router = Arc::new(
        Router::new(config.router.clone())
            .map_err(|e| RunError::Setup(format!("router model: {e}")))?,
    );
    // The ports' queue counts decide how packets reach the workers.
    let mut probed = Vec::new();
    for (i, plan) in config.ports.iter().enumerate() {
        let id = eal
            .port_by_name(&plan.device)
            .map_err(|e| setup::missing_port(config, i, &plan.device, &e))?;
        probed.push(dpdk::probe_port(&eal, id)?);
    }
    let lcores = setup::plan_lcores(config, workers, &probed)?;
    let queues = if lcores.software {
        1
    } else {
        lcores.workers.len() as u16
    };
    let pool = create_pool(&eal, config, &lcores, &probed)?;
    let (ports, tables) = setup::start_ports(&eal, config, probed, queues, pool)?;
    let provider = Arc::new(
        LocalProvider::new(config.router.local_ia, &config.master0, config.epoch_secs)
            .map_err(|e| RunError::Setup(format!("DRKey: {e}")))?,
    );
    let clock = TscClock::new(eal.tsc_hz(), dpdk::rdtsc(), control::unix_now_ns());
    let started_ns = clock.unix_ns(dpdk::rdtsc());
    let shared_clock = Arc::new(SharedClock::new(clock));
    let samples: Arc<[PortSample]> = ports.iter().map(|_| PortSample::default()).collect();
    control::sample_ports(&ports, &samples, 1);
    dpdk::install_stop_signals()?;
    let control = control::bind_control(config)?;
    Ok(Setup {
        eal,
        pool,
        router,
        lcores,
        ports,
        tables,
        provider,
        clock,
        started_ns,
        shared_clock,
        samples,
        control,
    })
}

/// Slots of the BFD rings (a few packets per session and second).
const BFD_RING_SLOTS: u32 = 256;

/// What the configuration pins of the mbuf pool with `workers` worker lcores, with software
/// distribution or not (then one queue per port, else one per worker).
pub fn pool_demand(config: &Config, workers: usize, software: bool) -> PoolDemand {
    PoolDemand {
        ports: config.ports.len(),
        queues: if software { 1 } else { workers },
        rx_desc: config.rx_desc,
        tx_desc: config.tx_desc,
        // The main lcore, the workers and the distributor.
        lcores: 1 + workers + usize::from(software),
        cache: POOL_CACHE,
        workers,
        software,
        ring_slots: RING_SLOTS,
        export: config.export.is_some(),
        bfd_ring_slots: BFD_RING_SLOTS,
        burst: dpdk::MAX_BURST,
    }
}

/// The mbuf pool (it lives for the process: mbufs never outlive it): of the configured size
/// if that holds what the configuration pins (else a configuration error of
/// `dataplane.mbufs`), or sized from it; on the NUMA socket of the ports.
fn create_pool(
    eal: &Eal,
    config: &Config,
    lcores: &Lcores,
    probed: &[dpdk::PortCaps],
) -> Result<&'static Mempool, RunError> {
    let demand = pool_demand(config, lcores.workers.len(), lcores.software);
    let mbufs = match config.mbufs {
        Some(n) => {
            router_core::pool::check(n, &demand)
                .map_err(|r| config_error(config, "dataplane.mbufs", r))?;
            n
        }
        None => router_core::pool::auto_size(&demand),
    };
    let sockets: Vec<u32> = probed.iter().filter_map(|c| c.socket).collect();
    let socket = sockets.first().copied();
    if sockets.iter().any(|s| Some(*s) != socket) {
        eprintln!(
            "idint-router: the ports are on NUMA sockets {sockets:?}; the mbuf pool is on \
             socket {} (the first port's): traffic of the others crosses sockets",
            socket.unwrap_or_default()
        );
    }
    Ok(Mempool::on_socket(
        eal,
        "router_pool",
        mbufs,
        POOL_CACHE,
        socket,
    )?)
}

/// The BFD control side and each worker's BFD rings: one ring from every worker to the
/// control side, one from it to worker 0.
fn bfd_control(s: &Setup, config: &Config) -> Result<(Vec<BfdRings>, BfdControl), RunError> {
    let workers = s.lcores.workers.len();
    let mut worker_rings = Vec::new();
    let mut from_workers = Vec::new();
    for w in 0..workers {
        let (p, c) = dpdk::mbuf_ring(&s.eal, &format!("bfd_up_{w}"), BFD_RING_SLOTS)?;
        from_workers.push(c);
        worker_rings.push(BfdRings {
            to_control: Some(p),
            from_control: None,
        });
    }
    let (down_p, down_c) = dpdk::mbuf_ring(&s.eal, "bfd_down", BFD_RING_SLOTS)?;
    if let Some(w0) = worker_rings.first_mut() {
        w0.from_control = Some(down_c);
    }
    let layout = PortLayout {
        ports: config
            .ports
            .iter()
            .zip(s.ports.iter())
            .map(|(plan, port)| {
                (
                    plan.device.clone(),
                    port.monitor(),
                    plan.interfaces.iter().map(|i| i.id).collect(),
                    plan.internal,
                )
            })
            .collect(),
    };
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed).map_err(|e| RunError::Setup(format!("OS random generator: {e}")))?;
    let control = BfdControl::new(
        &config.bfd,
        s.router.clone(),
        s.pool,
        from_workers,
        down_p,
        layout,
        seed,
        0,
    );
    Ok((worker_rings, control))
}

/// Report export: one SP/SC ring per worker (the producing ends returned, one per worker),
/// drained by the exporter thread; nothing without `export` in the configuration.
#[allow(clippy::type_complexity)]
fn start_exporter(
    eal: &Eal,
    config: &Config,
    workers: usize,
    shared: &Shared,
) -> Result<(Vec<Producer>, Option<JoinHandle<std::io::Result<()>>>), RunError> {
    let Some(e) = &config.export else {
        return Ok((Vec::new(), None));
    };
    // Before any ring or thread: a collector that cannot be reached stops the router here,
    // instead of an exporter thread that ends at once while the workers fill its rings.
    let socket = export::collector_socket(e.collector)
        .map_err(|err| RunError::Setup(format!("report export: {}: {err}", e.collector)))?;
    let mut export_in = Vec::new();
    let mut export_out = Vec::new();
    for w in 0..workers {
        let (p, c) = dpdk::mbuf_ring(eal, &format!("export_{w}"), RING_SLOTS)?;
        export_in.push(p);
        export_out.push(c);
    }
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
    let (st, d) = (shared.export_stats.clone(), shared.done.clone());
    let thread = std::thread::Builder::new()
        .name("report-export".into())
        .spawn(move || export::run_exporter(cfg, socket, export_out, st, d))
        .map_err(|e| RunError::Setup(format!("exporter thread: {e}")))?;
    Ok((export_in, Some(thread)))
}

/// The software distribution rings of `workers` workers and `ports` ports (none without
/// software distribution).
fn dist_rings(
    eal: &Eal,
    software: bool,
    workers: usize,
    ports: usize,
) -> Result<DistRings, RunError> {
    let mut r = DistRings::default();
    if !software {
        return Ok(r);
    }
    for w in 0..workers {
        let (mut to, mut from, mut mine) = (Vec::new(), Vec::new(), Vec::new());
        for p in 0..ports {
            let (in_p, in_c) = dpdk::mbuf_ring(eal, &format!("d_in_{w}_{p}"), RING_SLOTS)?;
            let (out_p, out_c) = dpdk::mbuf_ring(eal, &format!("d_out_{w}_{p}"), RING_SLOTS)?;
            to.push(in_p);
            from.push(out_c);
            mine.push((in_c, out_p));
        }
        r.to_workers.push(to);
        r.from_workers.push(from);
        r.workers.push(mine);
    }
    Ok(r)
}

/// A worker's rx sources (with their port index) and tx sinks (by port index).
type WorkerIo = (Vec<(usize, Source)>, Vec<Sink>);

/// The rx sources and tx sinks of worker `q`, one per port: its own rx and tx queue, or
/// with software distribution (`rings` given) its rings.
fn worker_io(
    ports: &mut [Port],
    q: u16,
    rings: Option<Vec<(Consumer, Producer)>>,
) -> Result<WorkerIo, RunError> {
    let mut rx = Vec::new();
    let mut tx = Vec::new();
    if let Some(rings) = rings {
        if rings.len() != ports.len() {
            return Err(RunError::Setup("worker ring missing".into()));
        }
        for (i, (input, output)) in rings.into_iter().enumerate() {
            // The worker's own ring: numbered as the rx queue it would poll without software
            // distribution (rings of different workers are told apart).
            rx.push((i, Source::Ring(input, q)));
            tx.push(Sink::Ring(output));
        }
        return Ok((rx, tx));
    }
    for (i, p) in ports.iter_mut().enumerate() {
        let r = p
            .rx_queue(q)
            .ok_or_else(|| RunError::Setup("rx queue taken".into()))?;
        rx.push((i, Source::Queue(r)));
        tx.push(Sink::Queue(
            p.tx_queue(q)
                .ok_or_else(|| RunError::Setup("tx queue taken".into()))?,
        ));
    }
    Ok((rx, tx))
}

/// Fault injection for the tests (feature `fault-injection`): the worker whose index this
/// environment variable holds panics as it starts (read once at start; no cost per packet).
#[cfg(feature = "fault-injection")]
pub const FAULT_PANIC_WORKER: &str = "IDINT_ROUTER_TEST_PANIC_WORKER";

/// The worker that is to panic as it starts (tests only; always none without the feature).
fn fault_worker() -> Option<usize> {
    #[cfg(feature = "fault-injection")]
    {
        std::env::var(FAULT_PANIC_WORKER)
            .ok()
            .and_then(|v| v.parse().ok())
    }
    #[cfg(not(feature = "fault-injection"))]
    {
        None
    }
}

/// Starts a worker on every worker lcore, with its queues or rings and its export ring.
#[allow(clippy::type_complexity)]
fn launch_workers(
    s: &mut Setup,
    config: &Config,
    rings: Vec<Vec<(Consumer, Producer)>>,
    export_in: Vec<Producer>,
    bfd: Vec<BfdRings>,
    failed: &Arc<AtomicBool>,
) -> Result<(Vec<Arc<WorkerStats>>, Vec<LcoreHandle>), RunError> {
    let software = s.lcores.software;
    let mut rings = rings.into_iter();
    let mut bfd = bfd.into_iter();
    let mut export_in = export_in.into_iter();
    let mut stats = Vec::new();
    let mut handles = Vec::new();
    let fault_worker = fault_worker();
    for (w, &lcore) in s.lcores.workers.iter().enumerate() {
        let q = w as u16;
        let mine = if software {
            Some(rings.next().unwrap_or_default())
        } else {
            None
        };
        let (rx, tx) = worker_io(&mut s.ports, q, mine)?;
        let mut seed = [0u8; 32];
        getrandom::fill(&mut seed)
            .map_err(|e| RunError::Setup(format!("OS random generator: {e}")))?;
        let st = Arc::new(WorkerStats::default());
        stats.push(st.clone());
        let measurements = Measurements {
            clock: s.clock,
            node_id: config.node_id,
            started_ns: s.started_ns,
            ports: s.samples.clone(),
            tables: s.tables.clone(),
            energy: config.energy,
        };
        let tx_queue = if software { 0 } else { q };
        // The first worker originates the probes.
        let probes = if w == 0 {
            probe_source(config, s.started_ns)?.map(|p| Probes::new(p, s.provider.clone()))
        } else {
            None
        };
        let worker = Worker {
            clock: s.shared_clock.clone(),
            #[cfg(feature = "measurement-aids")]
            aids: config.aids,
            idle_sleep_us: config.idle_sleep_us,
            probes,
            tables: s.tables.clone(),
            router: s.router.clone(),
            stats: st,
            pool: s.pool,
            keys: DrkeyKeys {
                cache: KeyCache::new(s.provider.clone(), config.cache_keys),
                local: config.router.local_ia,
            },
            seed,
            telemetry: RouterTelemetry::new(measurements, rx, tx, tx_queue, DpdkTsc),
            exporter: export_in.next().map(|r| RingExporter::new(s.pool, r)),
            bfd: bfd.next().unwrap_or_default(),
            scmp_rate: config.scmp_rate,
            scmp_burst: config.scmp_burst,
        };
        let panic_on_start = fault_worker == Some(w);
        let guard = FailGuard(failed.clone());
        handles.push(dpdk::launch(&s.eal, lcore, move || {
            let _guard = guard;
            assert!(!panic_on_start, "fault injection asked worker {w} to panic");
            worker.run();
            0
        })?);
    }
    Ok((stats, handles))
}

/// The probe source of `[probes]` (none without it): sent from the router's internal
/// address, verified by the AS's collector, every path first probed at `start_ns`.
fn probe_source(
    config: &Config,
    start_ns: u64,
) -> Result<Option<scion_dp::probe::ProbeSource>, RunError> {
    let Some(p) = &config.probes else {
        return Ok(None);
    };
    let ia = config.router.local_ia;
    let me = idint_wire::HostAddr::from(config.router.internal_addr.ip());
    let collector = idint_wire::HostAddr::from(p.verifier);
    let mut source = scion_dp::probe::ProbeSource::new(ia, me, p.verifier_ia, collector);
    for (i, t) in p.targets.iter().enumerate() {
        source.add(t.clone(), start_ns).map_err(|e| {
            config_error(
                config,
                "probes.paths",
                format!("{}: path[{i}]: {e}", p.paths_file.display()),
            )
        })?;
    }
    eprintln!(
        "idint-router: probing {} path(s) every {} ms, verifier {} {} ({})",
        p.targets.len(),
        p.interval_ns / 1_000_000,
        p.verifier_ia,
        p.verifier,
        if p.request.encrypt {
            "encrypted"
        } else {
            "not encrypted"
        }
    );
    Ok(Some(source))
}

/// Starts the distributor on its lcore (software distribution only) with queue 0 of every
/// port and the distributor's ends of the rings.
fn launch_distributor(
    s: &mut Setup,
    idle_sleep_us: u32,
    rings: &mut DistRings,
    shared: &Shared,
) -> Result<Option<LcoreHandle>, RunError> {
    let Some(lcore) = s.lcores.distributor else {
        return Ok(None);
    };
    let mut rx = Vec::new();
    let mut tx = Vec::new();
    for p in s.ports.iter_mut() {
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
        to_workers: std::mem::take(&mut rings.to_workers),
        from_workers: std::mem::take(&mut rings.from_workers),
        stats: shared.dist_stats.clone(),
        done: shared.dist_done.clone(),
        idle_sleep_us,
    };
    let guard = FailGuard(shared.failed.clone());
    Ok(Some(dpdk::launch(&s.eal, lcore, move || {
        let _guard = guard;
        d.run();
        0
    })?))
}

/// Stops everything in order (the stop request, then the workers, the distributor, the
/// exporter and the control thread) and joins it; the first failure, if any.
fn shut_down(running: Running, shared: &Shared) -> Option<RunError> {
    dpdk::request_stop();
    let mut failure: Option<RunError> = None;
    for h in running.workers {
        if let Err(e) = h.join() {
            failure.get_or_insert(e.into());
        }
    }
    shared.dist_done.store(true, Ordering::Release);
    if let Some(Err(e)) = running.distributor.map(LcoreHandle::join) {
        failure.get_or_insert(e.into());
    }
    shared.done.store(true, Ordering::Release);
    if let Some(t) = running.exporter {
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
    if let Some(t) = running.control {
        let _ = t.join();
    }
    failure
}

/// Closes the ports, drops the remaining ring ends and cleans EAL up; `failure`, or the
/// clean-up's failure if there was none before.
fn clean_up(s: Setup, rings: DistRings, mut failure: Option<RunError>) -> Option<RunError> {
    let Setup {
        eal,
        ports,
        control,
        ..
    } = s;
    drop(ports); // stops and closes the ports (net_pcap flushes its output file)
    // Rings not handed to a thread (none normally), an unused listener.
    drop((rings, control));
    // SAFETY: nothing DPDK is used after this point: every lcore function has returned (all
    // handles joined by `shut_down`), the exporter and control threads are joined (their
    // rings, monitors and pool references went with them), the ports and queues are closed
    // and dropped, the remaining ring ends are dropped, and `run` returns right after; the
    // pool (`&'static`) is not used again by anything.
    #[allow(unsafe_code)]
    let cleaned = unsafe { eal.cleanup() };
    if let Err(e) = cleaned {
        failure.get_or_insert(e.into());
    }
    failure
}
