//! Setting up: EAL, the lcores' roles, the ports and the forwarding tables.

use std::sync::Arc;

use scion_dp::Ingress;

use super::{RunError, config_error};
use crate::config::{Config, Distribution};
use crate::worker::{IfEgress, Tables};
use dpdk::{DpdkError, Eal, Mempool, Port, PortCaps, PortSetup};
use router_core::tables::PortNeighbors;

/// Initialises EAL with the configured arguments. EAL's refusal of its arguments (`EINVAL`)
/// or of a device they name (`ENODEV`) is a configuration error of `eal`.
pub(super) fn init_eal(config: &Config) -> Result<Eal, RunError> {
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
pub(super) fn missing_port(config: &Config, index: usize, device: &str, e: &DpdkError) -> RunError {
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

/// Which lcores do what: with software distribution the first worker lcore runs the
/// distributor.
pub(super) struct Lcores {
    /// Whether packets reach the workers by software distribution.
    pub software: bool,
    /// The distributor's lcore.
    pub distributor: Option<u32>,
    /// The workers' lcores.
    pub workers: Vec<u32>,
}

/// The worker lcores EAL gave (at least one besides the main lcore).
pub(super) fn worker_lcores(config: &Config, eal: &Eal) -> Result<Vec<u32>, RunError> {
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

/// Fewest worker lcores with which `auto` picks software distribution although the ports have
/// queues for every worker: the distributor takes one, and at least two must remain to spread
/// flows over.
pub(super) const AUTO_SOFTWARE_MIN_LCORES: usize = 3;

/// What `distribution = "auto"` picks with `lcores` worker lcores: software distribution when
/// a port has too few queues (`short`), or when the ports carry SCION links (`links`) and
/// there are lcores enough for a distributor and two workers. Each link is one underlay UDP
/// 5-tuple, so RSS would put all of a link's packets on one queue; the distributor hashes the
/// SCION flow (flow ID, ISD-ASes, hosts) instead, as the reference router does. RSS stays where
/// it spreads: a port without links (the internal network, many hosts) or one worker.
pub(super) fn auto_software(lcores: usize, short: bool, links: bool) -> bool {
    short || (links && lcores >= AUTO_SOFTWARE_MIN_LCORES)
}

/// Chooses between RSS queues and software distribution (`dataplane.distribution` and the
/// ports' queue counts `probed`) and assigns the `workers` lcores.
pub(super) fn plan_lcores(
    config: &Config,
    workers: Vec<u32>,
    probed: &[PortCaps],
) -> Result<Lcores, RunError> {
    let nw = u16::try_from(workers.len()).map_err(|_| RunError::Setup("too many lcores".into()))?;
    let short = probed
        .iter()
        .zip(&config.ports)
        .find(|(c, _)| c.max_rx_queues < nw || c.max_tx_queues < nw);
    let links = config.ports.iter().any(|p| !p.interfaces.is_empty());
    let software = match (config.distribution, short) {
        (Distribution::Software, _) => true,
        (Distribution::Auto, s) => auto_software(workers.len(), s.is_some(), links),
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
pub(super) fn start_ports(
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
    let siblings = sibling_links(&config.router);
    let tables = Arc::new(Tables {
        ports: port_macs,
        port_ids,
        ingress,
        egress,
        internal_port,
        internal_addr: config.router.internal_addr,
        neighbors: config.neighbors.iter().map(|(a, m)| (*a, *m)).collect(),
        learned: config
            .ports
            .iter()
            .map(|p| {
                PortNeighbors::new(
                    LEARNED_NEIGHBOURS,
                    config.neighbor_aging,
                    port_next_hops(config, p),
                    p.subnets.clone(),
                )
            })
            .collect(),
        siblings,
        default_macs: config
            .ports
            .iter()
            .map(|p| p.default_next_hop_mac)
            .collect(),
        vlans: config.ports.iter().map(|p| p.vlan).collect(),
    });
    Ok((ports, tables))
}

/// Slots of each learned-neighbour table (ARP, NDP; one of each per port).
const LEARNED_NEIGHBOURS: usize = 4096;

/// The next hops of port `p`, which ARP/NDP on it may always teach: the link peers of its
/// interfaces and, on the internal port, the sibling routers.
fn port_next_hops(config: &Config, p: &crate::config::PortPlan) -> Vec<std::net::IpAddr> {
    let mut hops: Vec<std::net::IpAddr> = p.interfaces.iter().map(|i| i.remote.ip()).collect();
    if p.internal {
        hops.extend(sibling_links(&config.router).iter().map(|(a, _)| a.ip()));
    }
    hops
}

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

#[cfg(test)]
mod tests {
    use scion_dp::config::{InterfaceConfig, LinkType, Owner, RouterConfig};

    #[test]
    fn auto_spreads_links_in_software_and_keeps_rss_where_it_spreads() {
        use super::auto_software;
        // Too few queues: software, whatever else.
        assert!(auto_software(2, true, true));
        assert!(auto_software(3, true, false));
        // Links and lcores for a distributor and two workers: software.
        assert!(auto_software(3, false, true));
        assert!(auto_software(8, false, true));
        // One or two worker lcores: the queues (the distributor would leave one worker).
        assert!(!auto_software(1, false, true));
        assert!(!auto_software(2, false, true));
        // No SCION link on the ports (many internal hosts): RSS spreads.
        assert!(!auto_software(8, false, false));
    }

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
