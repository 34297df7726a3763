//! Ports: probed capabilities, configuration and start, counters; the queue handles are in
//! [`crate::queue`].

use core::ffi::CStr;
use core::ptr;
use std::sync::{Arc, Mutex};

use dpdk_sys as sys;

use crate::eal::Eal;
use crate::error::{DpdkError, check};
use crate::mempool::Mempool;
use crate::queue::{RxQueue, TxQueue};

/// What a port can do, probed from its driver.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PortCaps {
    /// DPDK port id.
    pub id: u16,
    /// Driver name (e.g. `net_pcap`).
    pub driver: String,
    /// Most rx queues.
    pub max_rx_queues: u16,
    /// Most tx queues.
    pub max_tx_queues: u16,
    /// RSS hash types the port supports (0 = no RSS).
    pub rss_hash_types: u64,
    /// Rx offload capability bits.
    pub rx_offloads: u64,
    /// Tx offload capability bits.
    pub tx_offloads: u64,
    /// The port's MAC address.
    pub mac: [u8; 6],
    /// The NUMA socket the device is attached to (`None`: unknown, e.g. a virtual device).
    pub socket: Option<u32>,
}

/// Tx offload bit: IPv4 header checksum.
pub const TX_OFFLOAD_IPV4_CKSUM: u64 = 1 << 1;
/// Tx offload bit: UDP checksum.
pub const TX_OFFLOAD_UDP_CKSUM: u64 = 1 << 2;
/// RSS hash type `RTE_ETH_RSS_IPV4` (`rte_ethdev.h`; bindgen does not expand `RTE_BIT64`).
pub const RSS_IPV4: u64 = 1 << 2;
/// RSS hash type `RTE_ETH_RSS_NONFRAG_IPV4_UDP`.
pub const RSS_NONFRAG_IPV4_UDP: u64 = 1 << 5;
/// RSS hash type `RTE_ETH_RSS_IPV6`.
pub const RSS_IPV6: u64 = 1 << 8;
/// RSS hash type `RTE_ETH_RSS_NONFRAG_IPV6_UDP`.
pub const RSS_NONFRAG_IPV6_UDP: u64 = 1 << 11;
/// RSS hash types used when RSS is on: IPv4, IPv4/UDP, IPv6, IPv6/UDP (SCION's underlay is
/// UDP; the TCP types would leave its packets hashed on the addresses alone).
pub const RSS_HASH_IP_UDP: u64 = RSS_IPV4 | RSS_NONFRAG_IPV4_UDP | RSS_IPV6 | RSS_NONFRAG_IPV6_UDP;

impl PortCaps {
    /// Whether the port can spread traffic over rx queues with RSS.
    pub fn rss(&self) -> bool {
        self.rss_hash_types & RSS_HASH_IP_UDP != 0
    }

    /// Whether the port computes IPv4 and UDP checksums on transmit.
    pub fn tx_checksum(&self) -> bool {
        self.tx_offloads & (TX_OFFLOAD_IPV4_CKSUM | TX_OFFLOAD_UDP_CKSUM)
            == (TX_OFFLOAD_IPV4_CKSUM | TX_OFFLOAD_UDP_CKSUM)
    }
}

/// Port counters (`rte_eth_stats`, the totals).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct PortStats {
    /// Packets received.
    pub rx_packets: u64,
    /// Packets sent.
    pub tx_packets: u64,
    /// Bytes received.
    pub rx_bytes: u64,
    /// Bytes sent.
    pub tx_bytes: u64,
    /// Packets the hardware dropped (rx queue full).
    pub rx_missed: u64,
    /// Receive errors.
    pub rx_errors: u64,
    /// Transmit errors.
    pub tx_errors: u64,
    /// Rx mbuf allocation failures.
    pub rx_nombuf: u64,
}

/// How to set a port up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortSetup {
    /// Rx queues.
    pub rx_queues: u16,
    /// Tx queues.
    pub tx_queues: u16,
    /// Rx descriptors per queue.
    pub rx_desc: u16,
    /// Tx descriptors per queue.
    pub tx_desc: u16,
}

/// Probes the capabilities of port `id`.
pub fn probe_port(_eal: &Eal, id: u16) -> Result<PortCaps, DpdkError> {
    // SAFETY: plain query of a port id.
    if unsafe { sys::rte_eth_dev_is_valid_port(id) } == 0 {
        return Err(DpdkError::other("probe", format!("no port {id}")));
    }
    let mut info = sys::rte_eth_dev_info::default();
    // SAFETY: valid port id; `info` is a valid out-pointer.
    check(|| format!("port {id}: info"), unsafe {
        sys::rte_eth_dev_info_get(id, &mut info)
    })?;
    let driver = if info.driver_name.is_null() {
        String::new()
    } else {
        // SAFETY: the driver name is a static NUL-terminated string of the driver.
        unsafe { CStr::from_ptr(info.driver_name) }
            .to_string_lossy()
            .into_owned()
    };
    let mut mac = sys::rte_ether_addr::default();
    // SAFETY: valid port; valid out-pointer.
    check(|| format!("port {id}: MAC address"), unsafe {
        sys::rte_eth_macaddr_get(id, &mut mac)
    })?;
    Ok(PortCaps {
        id,
        driver,
        max_rx_queues: info.max_rx_queues,
        max_tx_queues: info.max_tx_queues,
        rss_hash_types: info.flow_type_rss_offloads,
        rx_offloads: info.rx_offload_capa,
        tx_offloads: info.tx_offload_capa,
        mac: mac.addr_bytes,
        socket: port_socket(id),
    })
}

/// The NUMA socket of port `id` (`rte_eth_dev_socket_id`; `None` when DPDK does not know).
fn port_socket(id: u16) -> Option<u32> {
    // SAFETY: plain query of a valid port id.
    let socket = unsafe { sys::rte_eth_dev_socket_id(id) };
    u32::try_from(socket).ok()
}

/// The started device; stopped and closed when the last handle (port, queue or monitor) is
/// gone.
#[derive(Debug)]
pub(crate) struct Started {
    pub(crate) id: u16,
    /// Serialises the control-path reads (counters, link) of handles on different threads:
    /// DPDK does not allow two threads in driver calls on the same port at once (some drivers
    /// accumulate hardware counters in software while reading them).
    control: Mutex<()>,
}

impl Started {
    /// Counters of the port.
    fn stats(&self) -> Result<PortStats, DpdkError> {
        let id = self.id;
        let _one_at_a_time = self.control.lock().unwrap_or_else(|e| e.into_inner());
        let mut s = sys::rte_eth_stats::default();
        // SAFETY: the port is started and stays so while `self` lives; no other thread is in
        // a control call on it (the lock); `s` is a valid out-pointer.
        check(|| format!("port {id}: stats"), unsafe {
            sys::rte_eth_stats_get(id, &mut s)
        })?;
        Ok(PortStats {
            rx_packets: s.ipackets,
            tx_packets: s.opackets,
            rx_bytes: s.ibytes,
            tx_bytes: s.obytes,
            rx_missed: s.imissed,
            rx_errors: s.ierrors,
            tx_errors: s.oerrors,
            rx_nombuf: s.rx_nombuf,
        })
    }

    /// Link state of the port: (up, speed in Mbit/s).
    fn link(&self) -> (bool, u32) {
        let _one_at_a_time = self.control.lock().unwrap_or_else(|e| e.into_inner());
        let mut l = sys::rte_eth_link::default();
        // SAFETY: as in `stats`; valid out-pointer; the call does not wait.
        let ret = unsafe { sys::rte_eth_link_get_nowait(self.id, &mut l) };
        if ret < 0 {
            return (false, 0);
        }
        (l.link_status() != 0, l.link_speed)
    }
}

impl Drop for Started {
    fn drop(&mut self) {
        // SAFETY: the port was started by us; no queue handle or monitor is left (each holds
        // an `Arc` of this), so nobody polls or reads it any more.
        unsafe {
            let _ = sys::rte_eth_dev_stop(self.id);
            let _ = sys::rte_eth_dev_close(self.id);
        }
    }
}

/// A configured and started port.
///
/// Invariants: each rx and tx queue is handed out at most once (so exactly one thread polls
/// it); the device is stopped and closed only when the port, every queue handed out from it
/// and every [`PortMonitor`] of it are dropped; the mempool it receives into lives for the
/// process.
#[derive(Debug)]
pub struct Port {
    caps: PortCaps,
    setup: PortSetup,
    started: Arc<Started>,
    rx_taken: Vec<bool>,
    tx_taken: Vec<bool>,
}

impl Port {
    /// Configures `caps.id` with `setup` (RSS over IP/UDP when more than one rx queue and the
    /// port supports it), sets up its queues receiving into `pool` and starts it.
    pub fn start(
        eal: &Eal,
        caps: PortCaps,
        setup: PortSetup,
        pool: &'static Mempool,
    ) -> Result<Port, DpdkError> {
        let _ = eal;
        let id = caps.id;
        if setup.rx_queues == 0 || setup.rx_queues > caps.max_rx_queues {
            return Err(DpdkError::other(
                format!("port {id} ({})", caps.driver),
                format!(
                    "{} rx queues requested, the port has 1..={}",
                    setup.rx_queues, caps.max_rx_queues
                ),
            ));
        }
        if setup.tx_queues == 0 || setup.tx_queues > caps.max_tx_queues {
            return Err(DpdkError::other(
                format!("port {id} ({})", caps.driver),
                format!(
                    "{} tx queues requested, the port has 1..={}",
                    setup.tx_queues, caps.max_tx_queues
                ),
            ));
        }
        let mut conf = sys::rte_eth_conf::default();
        if setup.rx_queues > 1 && caps.rss() {
            conf.rxmode.mq_mode = sys::rte_eth_rx_mq_mode_RTE_ETH_MQ_RX_RSS;
            conf.rx_adv_conf.rss_conf.rss_hf = caps.rss_hash_types & RSS_HASH_IP_UDP;
        }
        // SAFETY: valid port id; `conf` lives across the call (DPDK copies it).
        check(|| format!("port {id}: configure"), unsafe {
            sys::rte_eth_dev_configure(id, setup.rx_queues, setup.tx_queues, &conf)
        })?;
        let socket = caps.socket.unwrap_or(sys::SOCKET_ID_ANY as u32);
        for q in 0..setup.rx_queues {
            // SAFETY: the port is configured with these queues; null conf = driver defaults;
            // the pool lives for the process.
            check(|| format!("port {id}: rx queue {q}"), unsafe {
                sys::rte_eth_rx_queue_setup(id, q, setup.rx_desc, socket, ptr::null(), pool.raw())
            })?;
        }
        for q in 0..setup.tx_queues {
            // SAFETY: as above.
            check(|| format!("port {id}: tx queue {q}"), unsafe {
                sys::rte_eth_tx_queue_setup(id, q, setup.tx_desc, socket, ptr::null())
            })?;
        }
        // SAFETY: configured port with all queues set up.
        check(|| format!("port {id}: start"), unsafe {
            sys::rte_eth_dev_start(id)
        })?;
        // SAFETY: started port; -ENOTSUP is fine (virtual devices).
        let _ = unsafe { sys::rte_eth_promiscuous_enable(id) };
        Ok(Port {
            started: Arc::new(Started {
                id,
                control: Mutex::new(()),
            }),
            caps,
            setup,
            rx_taken: vec![false; usize::from(setup.rx_queues)],
            tx_taken: vec![false; usize::from(setup.tx_queues)],
        })
    }

    /// The port id.
    pub fn id(&self) -> u16 {
        self.caps.id
    }

    /// The probed capabilities.
    pub fn caps(&self) -> &PortCaps {
        &self.caps
    }

    /// The queue setup.
    pub fn setup(&self) -> PortSetup {
        self.setup
    }

    /// Rx queue `q`, handed out once (a queue is polled by exactly one thread).
    pub fn rx_queue(&mut self, q: u16) -> Option<RxQueue> {
        let t = self.rx_taken.get_mut(usize::from(q))?;
        if *t {
            return None;
        }
        *t = true;
        Some(RxQueue::new(self.started.clone(), q))
    }

    /// Tx queue `q`, handed out once.
    pub fn tx_queue(&mut self, q: u16) -> Option<TxQueue> {
        let t = self.tx_taken.get_mut(usize::from(q))?;
        if *t {
            return None;
        }
        *t = true;
        Some(TxQueue::new(self.started.clone(), q, self.setup.tx_desc))
    }

    /// A handle that reads this port's counters and link state from any thread and keeps the
    /// device open while it exists.
    pub fn monitor(&self) -> PortMonitor {
        PortMonitor {
            started: self.started.clone(),
        }
    }

    /// Current counters.
    pub fn stats(&self) -> Result<PortStats, DpdkError> {
        self.started.stats()
    }

    /// Link state: (up, speed in Mbit/s).
    pub fn link(&self) -> (bool, u32) {
        self.started.link()
    }
}

/// Reads the counters and link state of a started port, from any thread (it is `Clone`,
/// `Send` and `Sync`: these are control-path reads DPDK allows next to the polling threads).
///
/// Invariants: the device stays open (not stopped or closed) while a monitor exists, and the
/// reads of all handles of one port (monitors and the [`Port`]) are serialised by a lock, so
/// no two threads are in the driver's control path of the port at once. Not on the packet
/// path.
#[derive(Debug, Clone)]
pub struct PortMonitor {
    started: Arc<Started>,
}

impl PortMonitor {
    /// The port id.
    pub fn id(&self) -> u16 {
        self.started.id
    }

    /// Current counters.
    pub fn stats(&self) -> Result<PortStats, DpdkError> {
        self.started.stats()
    }

    /// Link state: (up, speed in Mbit/s).
    pub fn link(&self) -> (bool, u32) {
        self.started.link()
    }
}

#[cfg(test)]
mod rss_tests {
    use super::*;

    /// The RSS hash types the router asks for are the IP and IP/UDP ones of `rte_ethdev.h`
    /// (DPDK 22.11: `RTE_ETH_RSS_IPV4` bit 2, `NONFRAG_IPV4_UDP` 5, `IPV6` 8,
    /// `NONFRAG_IPV6_UDP` 11), never the TCP ones (bits 4 and 10): SCION's underlay is UDP.
    #[test]
    fn rss_hashes_ip_and_udp_not_tcp() {
        let (ipv4, ipv4_udp, ipv6, ipv6_udp) = (1u64 << 2, 1u64 << 5, 1u64 << 8, 1u64 << 11);
        let (ipv4_tcp, ipv6_tcp) = (1u64 << 4, 1u64 << 10);
        assert_eq!(RSS_HASH_IP_UDP, ipv4 | ipv4_udp | ipv6 | ipv6_udp);
        assert_eq!(RSS_HASH_IP_UDP & (ipv4_tcp | ipv6_tcp), 0);
    }
}
