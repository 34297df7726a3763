//! Sizing the mbuf pool: every place that can hold mbufs at once, by the configuration, so a
//! pool that cannot hold them all is refused at start (with what pins how many) instead of
//! running dry under load (rx queues starved of buffers, `rx_nombuf`, silent drops), and a
//! pool left to its default is made large enough.

use std::fmt;

/// DPDK lets a per-lcore mempool cache grow to this many times its size (numerator) before it
/// flushes back to the pool (`RTE_MEMPOOL_CACHE_FLUSHTHRESH_MULTIPLIER` = 1.5).
const CACHE_FLUSH_NUM: u64 = 3;
/// ... (denominator).
const CACHE_FLUSH_DEN: u64 = 2;
/// Mbufs beyond the computed need that a pool left to its default gets (ARP/NDP requests,
/// probes, BFD packets being built, the summary's margin for rounding).
pub const HEADROOM: u64 = 1024;
/// Fewest mbufs of a pool left to its default.
pub const DEFAULT_MIN: u32 = 8191;

/// What the configuration pins: the counts the pool has to serve at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolDemand {
    /// DPDK ports.
    pub ports: usize,
    /// Rx and tx queues per port.
    pub queues: usize,
    /// Rx descriptors per queue (each holds an mbuf from the start).
    pub rx_desc: u16,
    /// Tx descriptors per queue (each may hold a sent mbuf until the NIC frees it).
    pub tx_desc: u16,
    /// Lcores taking mbufs from the pool through a per-lcore cache (main, distributor,
    /// workers).
    pub lcores: usize,
    /// Per-lcore cache size.
    pub cache: u32,
    /// Worker lcores.
    pub workers: usize,
    /// Software distribution: an input and an output ring per worker and port.
    pub software: bool,
    /// Slots of each distribution and export ring (holding `slots - 1`).
    pub ring_slots: u32,
    /// Report export: one ring per worker.
    pub export: bool,
    /// Slots of each BFD ring (one per worker to the control side, one back).
    pub bfd_ring_slots: u32,
    /// Largest burst: what a worker or the distributor holds per burst it stages.
    pub burst: usize,
}

/// How many mbufs each place can hold at once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolNeed {
    /// (what, mbufs), in a fixed order.
    pub parts: Vec<(&'static str, u64)>,
}

impl PoolNeed {
    /// The sum of every part.
    pub fn total(&self) -> u64 {
        self.parts.iter().map(|(_, n)| n).sum()
    }
}

impl fmt::Display for PoolNeed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for (what, n) in self.parts.iter().filter(|(_, n)| *n > 0) {
            if !first {
                f.write_str(" + ")?;
            }
            write!(f, "{n} {what}")?;
            first = false;
        }
        Ok(())
    }
}

/// Every place of `d` that can hold mbufs at once, and how many.
pub fn need(d: &PoolDemand) -> PoolNeed {
    let (ports, queues, workers) = (d.ports as u64, d.queues as u64, d.workers as u64);
    let usable = |slots: u32| u64::from(slots.saturating_sub(1));
    let burst = d.burst as u64;
    // A worker holds its rx burst, a staging burst per egress port and the BFD packets of a
    // burst; the distributor its rx burst, a staging burst per worker and an output burst.
    let worker_bursts = workers * burst * (ports + 2);
    let distributor_bursts = if d.software { burst * (workers + 2) } else { 0 };
    PoolNeed {
        parts: vec![
            ("rx descriptors", ports * queues * u64::from(d.rx_desc)),
            ("tx descriptors", ports * queues * u64::from(d.tx_desc)),
            (
                "lcore caches",
                d.lcores as u64 * u64::from(d.cache) * CACHE_FLUSH_NUM / CACHE_FLUSH_DEN,
            ),
            (
                "distribution rings",
                if d.software {
                    2 * workers * ports * usable(d.ring_slots)
                } else {
                    0
                },
            ),
            (
                "export rings",
                if d.export {
                    workers * usable(d.ring_slots)
                } else {
                    0
                },
            ),
            ("BFD rings", (workers + 1) * usable(d.bfd_ring_slots)),
            ("bursts in flight", worker_bursts + distributor_bursts),
        ],
    }
}

/// Whether a pool of `mbufs` holds what `d` pins; the refusal names every part.
pub fn check(mbufs: u32, d: &PoolDemand) -> Result<(), String> {
    let n = need(d);
    if u64::from(mbufs) >= n.total() {
        return Ok(());
    }
    Err(format!(
        "{mbufs} mbufs cannot hold what this configuration pins: {} mbufs ({n}; {} port(s) x {} \
         queue(s), {} worker(s)); raise mbufs to at least {}, lower rx_desc/tx_desc, or leave \
         mbufs out to size the pool automatically",
        n.total(),
        d.ports,
        d.queues,
        d.workers,
        n.total()
    ))
}

/// The size of a pool left to its default: the need plus [`HEADROOM`], rounded up to a power
/// of two minus one (DPDK's most memory-efficient pool sizes), at least [`DEFAULT_MIN`].
pub fn auto_size(d: &PoolDemand) -> u32 {
    let want = (need(d).total() + HEADROOM + 1).next_power_of_two() - 1;
    u32::try_from(want).unwrap_or(u32::MAX).max(DEFAULT_MIN)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two workers on two ports with RSS queues, export on.
    fn queues() -> PoolDemand {
        PoolDemand {
            ports: 2,
            queues: 2,
            rx_desc: 512,
            tx_desc: 512,
            lcores: 3,
            cache: 256,
            workers: 2,
            software: false,
            ring_slots: 1024,
            export: true,
            bfd_ring_slots: 256,
            burst: 64,
        }
    }

    #[test]
    fn every_place_that_holds_mbufs_is_counted() {
        let n = need(&queues());
        let part = |what| n.parts.iter().find(|(w, _)| *w == what).unwrap().1;
        assert_eq!(part("rx descriptors"), 2 * 2 * 512);
        assert_eq!(part("tx descriptors"), 2 * 2 * 512);
        assert_eq!(part("lcore caches"), 3 * 384);
        assert_eq!(part("distribution rings"), 0);
        assert_eq!(part("export rings"), 2 * 1023);
        assert_eq!(part("BFD rings"), 3 * 255);
        assert_eq!(part("bursts in flight"), 2 * 64 * 4);
        assert_eq!(n.total(), 2048 + 2048 + 1152 + 2046 + 765 + 512);
        // Software distribution: one queue per port, the rings and the distributor.
        let sw = PoolDemand {
            queues: 1,
            lcores: 4,
            software: true,
            export: false,
            ..queues()
        };
        let n = need(&sw);
        let part = |what| n.parts.iter().find(|(w, _)| *w == what).unwrap().1;
        assert_eq!(part("rx descriptors"), 2 * 512);
        assert_eq!(part("distribution rings"), 2 * 2 * 2 * 1023);
        assert_eq!(part("export rings"), 0);
        assert_eq!(part("bursts in flight"), 2 * 64 * 4 + 64 * 4);
    }

    #[test]
    fn a_small_pool_is_refused_with_the_parts_and_the_default_fits() {
        let d = queues();
        let total = need(&d).total() as u32;
        assert_eq!(check(total, &d), Ok(()));
        let e = check(total - 1, &d).unwrap_err();
        assert!(
            e.starts_with(&format!(
                "{} mbufs cannot hold what this configuration pins: {total} mbufs (2048 rx \
                 descriptors + 2048 tx descriptors + 1152 lcore caches + 2046 export rings",
                total - 1
            )),
            "{e}"
        );
        assert!(
            !e.contains("distribution rings"),
            "zero parts left out: {e}"
        );
        let auto = auto_size(&d);
        assert!(check(auto, &d).is_ok());
        assert!(u64::from(auto) >= need(&d).total() + HEADROOM);
        assert_eq!((auto + 1).count_ones(), 1, "2^n - 1: {auto}");
        // Small configurations keep the old default.
        let small = PoolDemand {
            ports: 1,
            queues: 1,
            workers: 1,
            lcores: 2,
            export: false,
            ..d
        };
        assert_eq!(auto_size(&small), DEFAULT_MIN);
        // 4096 descriptors per queue need more.
        let big = PoolDemand {
            rx_desc: 4096,
            tx_desc: 4096,
            ..d
        };
        assert!(check(DEFAULT_MIN, &big).is_err());
        assert!(auto_size(&big) > DEFAULT_MIN);
    }
}
