//! `idint-router --check-config FILE`: everything about a configuration that can be checked
//! without starting DPDK: the TOML, `topology.json` and `keys/`, the ports and interfaces,
//! neighbours, the EAL arguments (as far as they can be read), the probe paths, the mbuf pool
//! against what the configuration pins, and whether the report collector can be sent to.
//! What only EAL can tell (devices probing, queue counts of the NICs, hugepages) is left to
//! the start.

use std::fmt::Write as _;
use std::path::Path;

use crate::config::{Config, ConfigError, Distribution};
use crate::run::pool_demand;

/// Checks the configuration at `path`; a report of what it sets up, or the first error (file,
/// item and reason).
pub fn check_config(path: &Path) -> Result<String, ConfigError> {
    let config = Config::load(path)?;
    let item = |item: &str, reason: String| ConfigError::Item {
        file: config.file.clone(),
        item: item.to_string(),
        reason,
    };
    let lcores = crate::eal_args::lcore_count(&config.eal);
    // The distribution modes the start may choose, with their worker counts: with software
    // distribution one lcore besides the main one is the distributor.
    let modes: Vec<(bool, usize)> = match (lcores, config.distribution) {
        (None, _) => Vec::new(),
        (Some(n), Distribution::Queues) => vec![(false, n - 1)],
        (Some(n), Distribution::Software) => vec![(true, n.saturating_sub(2))],
        (Some(n), Distribution::Auto) => vec![(false, n - 1), (true, n.saturating_sub(2))],
    };
    if config.distribution == Distribution::Software && lcores.is_some_and(|n| n < 3) {
        return Err(item(
            "eal",
            "distribution = \"software\" needs a distributor and a worker lcore besides the \
             main one (e.g. -l 0-2)"
                .into(),
        ));
    }
    let mut most = 0u64;
    for &(software, workers) in modes.iter().filter(|(_, w)| *w > 0) {
        let demand = pool_demand(&config, workers, software);
        most = most.max(router_core::pool::need(&demand).total());
        if let Some(n) = config.mbufs {
            router_core::pool::check(n, &demand).map_err(|r| {
                let mode = if software {
                    "software distribution"
                } else {
                    "NIC queues"
                };
                item("dataplane.mbufs", format!("{r} (with {mode})"))
            })?;
        }
    }
    if let Some(e) = &config.export {
        crate::export::collector_socket(e.collector).map_err(|err| {
            item(
                "export.collector",
                format!("{}: cannot be sent to from here: {err}", e.collector),
            )
        })?;
    }
    Ok(report(&config, lcores, most))
}

/// What a valid configuration sets up, for the operator.
fn report(config: &Config, lcores: Option<usize>, pinned: u64) -> String {
    let r = &config.router;
    let mut s = String::new();
    let _ = writeln!(s, "{}: configuration OK", config.file.display());
    let _ = writeln!(
        s,
        "  router {} of {} (internal address {}), {} interface(s), {} sibling interface(s)",
        config.router_id,
        r.local_ia,
        r.internal_addr,
        config
            .ports
            .iter()
            .map(|p| p.interfaces.len())
            .sum::<usize>(),
        r.interfaces.len()
            - config
                .ports
                .iter()
                .map(|p| p.interfaces.len())
                .sum::<usize>(),
    );
    for (i, p) in config.ports.iter().enumerate() {
        let ifs: Vec<String> = p.interfaces.iter().map(|i| i.id.to_string()).collect();
        let subnets: Vec<String> = p.subnets.iter().map(|n| n.to_string()).collect();
        let _ = writeln!(
            s,
            "  port[{i}] {}: interfaces [{}]{}{}{}",
            p.device,
            ifs.join(", "),
            if p.internal { ", internal network" } else { "" },
            p.vlan.map(|v| format!(", VLAN {v}")).unwrap_or_default(),
            if subnets.is_empty() {
                String::new()
            } else {
                format!(", subnets {}", subnets.join(" "))
            },
        );
    }
    let _ = match lcores {
        Some(n) => writeln!(
            s,
            "  lcores: {n} (main + workers; distribution {:?})",
            config.distribution
        ),
        None => writeln!(
            s,
            "  lcores: not given by -l/-c (EAL decides; pool not checked)"
        ),
    };
    let _ = match config.mbufs {
        Some(n) => writeln!(s, "  mbufs: {n} (configuration pins at most {pinned})"),
        None => writeln!(
            s,
            "  mbufs: sized at start (configuration pins at most {pinned})"
        ),
    };
    if let Some(e) = &config.export {
        let _ = writeln!(s, "  export: reports to {}", e.collector);
    }
    if let Some(p) = &config.probes {
        let _ = writeln!(
            s,
            "  probes: {} path(s) every {} ms",
            p.targets.len(),
            p.interval_ns / 1_000_000
        );
    }
    let _ = writeln!(
        s,
        "  SCMP replies: {} at once, {} per second and worker",
        config.scmp_burst, config.scmp_rate
    );
    s
}
