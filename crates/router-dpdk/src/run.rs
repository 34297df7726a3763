//! Wiring: EAL, mempool, ports, forwarding tables, workers on lcores, the wait for a signal
//! or the configured duration, and the final summary.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use drkey::cache::KeyCache;
use drkey::provider::LocalProvider;
use scion_dp::Ingress;
use scion_dp::config::Router;
use scion_dp::idint::DrkeyKeys;

use crate::config::Config;
use crate::dpdk::{self, DpdkError, Eal, LcoreError, Mempool, Port, PortSetup};
use crate::stats::{Snapshot, WorkerStats};
use crate::worker::{IfEgress, RouterTelemetry, Tables, TscClock, Worker};

/// Run options from the command line.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Stop after this long (else at SIGINT/SIGTERM).
    pub duration: Option<Duration>,
    /// Also write the summary JSON here.
    pub summary: Option<PathBuf>,
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
}

/// Runs the router until stopped; returns the summary (JSON text).
pub fn run(config: Config, opts: &Options) -> Result<String, RunError> {
    let eal = Eal::init(&config.eal)?;
    let workers = eal.worker_lcores();
    if workers.is_empty() {
        return Err(RunError::Setup(
            "no worker lcore: give EAL at least two lcores (e.g. -l 0-1); the main lcore runs the control loop".into(),
        ));
    }
    let nq = u16::try_from(workers.len()).map_err(|_| RunError::Setup("too many lcores".into()))?;
    let pool = Arc::new(Mempool::new(&eal, "router_pool", config.mbufs, 256)?);
    let router = Arc::new(
        Router::new(config.router.clone())
            .map_err(|e| RunError::Setup(format!("router model: {e}")))?,
    );

    let mut ports = Vec::new();
    let mut port_macs = Vec::new();
    let mut port_ids = Vec::new();
    let mut ingress = Vec::new();
    let mut egress: Vec<Option<IfEgress>> = vec![None; 1 + usize::from(u16::MAX)];
    let mut internal_port = 0;
    for (i, plan) in config.ports.iter().enumerate() {
        let id = eal.port_by_name(&plan.device).map_err(|e| {
            RunError::Setup(format!(
                "port[{i}] device {:?}: {e} (is it in the EAL arguments, e.g. --vdev or -a?)",
                plan.device
            ))
        })?;
        let caps = dpdk::probe_port(&eal, id)?;
        if caps.max_rx_queues < nq || caps.max_tx_queues < nq {
            return Err(RunError::Setup(format!(
                "port[{i}] {:?} ({}) has {} rx / {} tx queues, {} workers need one each",
                plan.device, caps.driver, caps.max_rx_queues, caps.max_tx_queues, nq
            )));
        }
        let port = Port::start(
            &eal,
            caps,
            PortSetup {
                rx_queues: nq,
                tx_queues: nq,
                rx_desc: config.rx_desc,
                tx_desc: config.tx_desc,
            },
            pool.clone(),
        )?;
        let mut local = Vec::new();
        for ifc in &plan.interfaces {
            local.push((ifc.local, Ingress::External(ifc.id)));
            egress[usize::from(ifc.id)] = Some(IfEgress {
                port: i,
                local: ifc.local,
                remote: ifc.remote,
                mac: config.neighbors.get(&ifc.remote.ip()).copied(),
            });
        }
        if plan.internal {
            local.push((config.router.internal_addr, Ingress::Internal));
            internal_port = i;
        }
        ingress.push(local);
        port_macs.push(port.caps().mac);
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
    });

    let provider = Arc::new(
        LocalProvider::new(config.router.local_ia, &config.master0, config.epoch_secs)
            .map_err(|e| RunError::Setup(format!("DRKey: {e}")))?,
    );
    let clock = TscClock::new(eal.tsc_hz());
    let started_ns = clock.now_ns();
    dpdk::install_stop_signals()?;

    let mut stats = Vec::new();
    let mut handles = Vec::new();
    for (w, &lcore) in workers.iter().enumerate() {
        let q = w as u16;
        let mut rx = Vec::new();
        let mut tx = Vec::new();
        for (i, p) in ports.iter_mut().enumerate() {
            let r = p
                .rx_queue(q)
                .ok_or_else(|| RunError::Setup("rx queue taken".into()))?;
            rx.push((i, r));
            tx.push(
                p.tx_queue(q)
                    .ok_or_else(|| RunError::Setup("tx queue taken".into()))?,
            );
        }
        let mut seed = [0u8; 32];
        getrandom::fill(&mut seed)
            .map_err(|e| RunError::Setup(format!("OS random generator: {e}")))?;
        let s = Arc::new(WorkerStats::default());
        stats.push(s.clone());
        let worker = Worker {
            rx,
            tx,
            tables: tables.clone(),
            router: router.clone(),
            stats: s,
            keys: DrkeyKeys {
                cache: KeyCache::new(provider.clone(), 1024),
                local: config.router.local_ia,
            },
            seed,
            telemetry: RouterTelemetry {
                clock,
                node_id: config.node_id,
                started_ns,
                rx_ns: started_ns,
            },
        };
        handles.push(dpdk::launch(&eal, lcore, move || {
            worker.run();
            0
        })?);
    }

    let start = Instant::now();
    while !dpdk::stop_requested() {
        if opts.duration.is_some_and(|d| start.elapsed() >= d) {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let signalled = dpdk::stop_requested();
    dpdk::request_stop();
    let mut failure = None;
    for h in handles {
        if let Err(e) = h.join() {
            failure.get_or_insert(e);
        }
    }
    let elapsed = start.elapsed().as_secs_f64();
    let snap = Snapshot::sum(stats.iter().map(|s| &**s));
    let mut port_json = Vec::new();
    for (plan, p) in config.ports.iter().zip(ports.iter()) {
        let st = p.stats().unwrap_or_default();
        port_json.push(serde_json::json!({
            "device": plan.device,
            "driver": p.caps().driver,
            "interfaces": plan.interfaces.iter().map(|i| i.id).collect::<Vec<_>>(),
            "internal": plan.internal,
            "stats": st,
        }));
    }
    let mut summary = snap.to_json();
    summary["router_id"] = config.router_id.clone().into();
    summary["workers"] = workers.len().into();
    summary["elapsed_s"] = elapsed.into();
    summary["stopped_by_signal"] = signalled.into();
    summary["rx_mpps"] = (snap.io.rx_frames as f64 / elapsed.max(1e-9) / 1e6).into();
    summary["ports"] = port_json.into();
    let text = serde_json::to_string_pretty(&summary).unwrap_or_default();
    drop(ports); // stops and closes the ports (net_pcap flushes its output file)
    drop(pool);
    if let Some(path) = &opts.summary {
        std::fs::write(path, &text)
            .map_err(|e| RunError::Setup(format!("{}: {e}", path.display())))?;
    }
    eal.cleanup()?;
    if let Some(e) = failure {
        return Err(e.into());
    }
    Ok(text)
}
