//! The control thread (`/metrics`, `/health`) and the main lcore's loop while the router
//! runs: port samples for the telemetry, clock corrections, the wait for a stop.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::RunError;
use crate::config::Config;
use crate::distribute::DistStats;
use crate::export::ExportStats;
use crate::stats::{Snapshot, WorkerStats};
use dpdk::Port;
use router_core::clock::SharedClock;
use router_core::telemetry::{PortReading, PortSample};

/// Reads every port's counters into the shared samples (rates over `interval_ns`).
pub(super) fn sample_ports(ports: &[Port], samples: &[PortSample], interval_ns: u64) {
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

/// The system clock, Unix ns (0 before 1970).
pub(super) fn unix_now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

/// What the control thread reads: every worker's counters, the exporter's and the
/// distributor's, and when to stop.
pub(super) struct ControlShared {
    /// Every worker's counters.
    pub stats: Vec<Arc<WorkerStats>>,
    /// The exporter's counters.
    pub export_stats: Arc<ExportStats>,
    /// The distributor's counters.
    pub dist_stats: Arc<DistStats>,
    /// Set when the thread is to stop.
    pub done: Arc<AtomicBool>,
    /// BFD sessions and link state.
    pub bfd: Arc<crate::bfd::BfdStats>,
    /// Set when a worker or the distributor died.
    pub failed: Arc<AtomicBool>,
}

/// Serves `/metrics` (Prometheus text of the summed counters and the ports' statistics) and
/// `/health` on `listener` in a thread of its own until `shared.done`.
pub(super) fn spawn_control(
    listener: std::net::TcpListener,
    monitors: Vec<(String, dpdk::PortMonitor)>,
    shared: ControlShared,
) -> Result<std::thread::JoinHandle<()>, RunError> {
    let ControlShared {
        stats,
        export_stats,
        dist_stats,
        done,
        bfd,
        failed,
    } = shared;
    let bfd2 = bfd.clone();
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
                    let mut text = crate::http::prometheus(&snap, &ps, &extra);
                    text.push_str(&bfd.prometheus());
                    text
                },
                || {
                    let snap = Snapshot::sum(stats.iter().map(|s| &**s));
                    let dead = failed.load(Ordering::Acquire);
                    let ok = !dead && !dpdk::stop_requested();
                    let status = match (dead, ok) {
                        (true, _) => "failed",
                        (false, true) => "ok",
                        (false, false) => "stopping",
                    };
                    let body = serde_json::json!({
                        "status": status,
                        "workers": stats.len(),
                        "rx_frames": snap.io.rx_frames,
                        "links": bfd2.health(),
                    });
                    (ok, body.to_string())
                },
            )
        })
        .map_err(|e| RunError::Setup(format!("control thread: {e}")))
}

/// Binds the `/metrics` and `/health` listener of `control.http`, if configured.
pub(super) fn bind_control(config: &Config) -> Result<Option<std::net::TcpListener>, RunError> {
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

/// Longest the main lcore sleeps between looks at the stop conditions.
const POLL_SLEEP: Duration = Duration::from_millis(20);
/// Shortest sleep of the main lcore (BFD timers due sooner are late by up to this).
const MIN_SLEEP: Duration = Duration::from_millis(1);
/// How often the ports are sampled and the clock corrected.
const SAMPLE_EVERY: Duration = Duration::from_millis(100);
/// How long `/health` reports a dead worker before the router stops (so that a monitor
/// polling it sees why the process is about to exit).
pub(super) const FAILURE_GRACE: Duration = Duration::from_secs(1);

/// The main lcore's loop while the router runs: runs BFD and the ports' link state (`bfd`),
/// samples the ports for the telemetry and corrects the shared clock against the system
/// clock (starting from `clock`) until a stop signal, the end of `opts.duration`, or
/// [`FAILURE_GRACE`] after `failed` was set (a worker or the distributor died). Returns
/// whether a signal stopped it.
pub(super) fn until_stopped(
    opts: &super::Options,
    ports: &[Port],
    samples: &[PortSample],
    shared_clock: &SharedClock,
    clock: router_core::clock::TscClock,
    bfd: &mut crate::bfd::BfdControl,
    failed: &AtomicBool,
) -> bool {
    let start = Instant::now();
    let mono_ns = || start.elapsed().as_nanos() as u64;
    let mut last_sample = Instant::now();
    // Where the TSC rate is measured from (see `TscClock::resynced`).
    let mut rate_from = clock.anchor();
    let mut failed_at: Option<Instant> = None;
    while !dpdk::stop_requested() {
        if opts.duration.is_some_and(|d| start.elapsed() >= d) {
            break;
        }
        if failed_at.is_none() && failed.load(Ordering::Acquire) {
            eprintln!(
                "idint-router: a worker lcore stopped unexpectedly (its queues are not polled); \
                 stopping the router"
            );
            failed_at = Some(Instant::now());
        }
        if failed_at.is_some_and(|t| t.elapsed() >= FAILURE_GRACE) {
            break;
        }
        bfd.step(mono_ns(), (unix_now_ns() / 1_000_000_000) as u32);
        let wait = Duration::from_nanos(bfd.next_event_ns().saturating_sub(mono_ns()));
        std::thread::sleep(wait.clamp(MIN_SLEEP, POLL_SLEEP));
        if last_sample.elapsed() >= SAMPLE_EVERY {
            let ns = last_sample.elapsed().as_nanos() as u64;
            last_sample = Instant::now();
            sample_ports(ports, samples, ns);
            let (tsc, real) = (dpdk::rdtsc(), unix_now_ns());
            shared_clock.store(&shared_clock.load().resynced(tsc, real, &mut rate_from));
        }
    }
    dpdk::stop_requested()
}
