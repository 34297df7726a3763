//! The router's telemetry that needs no DPDK: configured figures (energy, power), port
//! readings shared between the control thread and the workers, and the averages and
//! fractions the telemetry source reports.

use std::sync::atomic::{AtomicU64, Ordering};

use scion_dp::telemetry::{CounterKind, Direction};

/// Configured energy figures (instructions 0x08 power draw, 0x4a/0x4b energy and CO2 per
/// packet); absent values stay unmeasured.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EnergyFigures {
    /// Power draw of the router, W.
    pub power_w: Option<u16>,
    /// Energy per forwarded packet, nJ.
    pub energy_per_packet_nj: Option<u32>,
    /// CO2 per forwarded packet, pg.
    pub co2_per_packet_pg: Option<u32>,
}

/// One reading of a port's counters (the driver's statistics, drops summed).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PortReading {
    /// Packets received.
    pub rx_packets: u64,
    /// Packets sent.
    pub tx_packets: u64,
    /// Bytes received.
    pub rx_bytes: u64,
    /// Bytes sent.
    pub tx_bytes: u64,
    /// Receive drops (missed, errors, no buffer).
    pub rx_drops: u64,
    /// Transmit errors.
    pub tx_drops: u64,
}

/// Port measurements sampled by the control thread (a few times per second) and read by the
/// workers' telemetry sources: no DPDK call on the packet path.
#[derive(Debug, Default)]
pub struct PortSample {
    /// Packets received.
    pub rx_packets: AtomicU64,
    /// Packets sent.
    pub tx_packets: AtomicU64,
    /// Bytes received.
    pub rx_bytes: AtomicU64,
    /// Bytes sent.
    pub tx_bytes: AtomicU64,
    /// Receive drops (missed, errors, no mbuf).
    pub rx_drops: AtomicU64,
    /// Transmit errors.
    pub tx_drops: AtomicU64,
    /// Receive rate over the last sample interval, kbit/s.
    pub rx_kbps: AtomicU64,
    /// Transmit rate over the last sample interval, kbit/s.
    pub tx_kbps: AtomicU64,
    /// Link speed, Mbit/s (0 = unknown).
    pub speed_mbps: AtomicU64,
}

impl PortSample {
    /// Stores a new reading; rates from the byte deltas over `interval_ns`.
    pub fn update(&self, s: &PortReading, speed_mbps: u32, interval_ns: u64) {
        let rate = |new: u64, old: &AtomicU64| {
            let d = new.saturating_sub(old.load(Ordering::Relaxed));
            (u128::from(d) * 8 * 1_000_000 / u128::from(interval_ns.max(1))) as u64
        };
        self.rx_kbps
            .store(rate(s.rx_bytes, &self.rx_bytes), Ordering::Relaxed);
        self.tx_kbps
            .store(rate(s.tx_bytes, &self.tx_bytes), Ordering::Relaxed);
        self.rx_packets.store(s.rx_packets, Ordering::Relaxed);
        self.tx_packets.store(s.tx_packets, Ordering::Relaxed);
        self.rx_bytes.store(s.rx_bytes, Ordering::Relaxed);
        self.tx_bytes.store(s.tx_bytes, Ordering::Relaxed);
        self.rx_drops.store(s.rx_drops, Ordering::Relaxed);
        self.tx_drops.store(s.tx_drops, Ordering::Relaxed);
        self.speed_mbps
            .store(u64::from(speed_mbps), Ordering::Relaxed);
    }

    /// The counter of `kind` in direction `dir`.
    #[inline]
    pub fn counter(&self, dir: Direction, kind: CounterKind) -> u64 {
        let a = match (dir, kind) {
            (Direction::Rx, CounterKind::Packets) => &self.rx_packets,
            (Direction::Rx, CounterKind::Bytes) => &self.rx_bytes,
            (Direction::Rx, CounterKind::Drops) => &self.rx_drops,
            (Direction::Tx, CounterKind::Packets) => &self.tx_packets,
            (Direction::Tx, CounterKind::Bytes) => &self.tx_bytes,
            (Direction::Tx, CounterKind::Drops) => &self.tx_drops,
        };
        a.load(Ordering::Relaxed)
    }
}

/// One step of the buffer-occupancy average (weight 1/8, kept ×16): `avg_x16` moved an eighth
/// of the way to `depth`, rounded toward `depth` so that it reaches it (a step truncated toward
/// zero left an emptied buffer's average at 1 for ever).
pub fn average_x16(avg_x16: u32, depth: u32) -> u32 {
    let (d, a) = (i64::from(depth.saturating_mul(16)), i64::from(avg_x16));
    let step = d - a;
    let moved = if step >= 0 { step + 7 } else { step }.div_euclid(8);
    (a + moved).clamp(0, i64::from(u32::MAX)) as u32
}

/// `part / whole` in 255ths (clamped to 255; 0 of nothing).
pub fn fraction_255(part: u64, whole: u64) -> u8 {
    (u128::from(part.min(whole)) * 255 / u128::from(whole.max(1))) as u8
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffer_average_reaches_the_depth_both_ways() {
        // A buffer that held one packet once, then stays empty: the average returns to 0.
        let mut a = 16;
        for _ in 0..200 {
            a = average_x16(a, 0);
        }
        assert_eq!(((a + 8) / 16, a), (0, 0));
        // And climbs to a steady depth without overshooting it.
        let mut a = 0;
        for _ in 0..200 {
            a = average_x16(a, 40);
            assert!(a <= 40 * 16);
        }
        assert_eq!(a, 40 * 16);
        // An eighth of the way per step.
        assert_eq!(average_x16(0, 8), 16);
        assert_eq!(average_x16(16 * 8, 0), 16 * 7);
    }

    #[test]
    fn usage_fractions_are_clamped_255ths() {
        assert_eq!(fraction_255(0, 1000), 0);
        assert_eq!(fraction_255(500, 1000), 127);
        assert_eq!(fraction_255(1000, 1000), 255);
        // A burst that straddles the sampling point can count more busy cycles than the
        // interval: never more than all of it.
        assert_eq!(fraction_255(1500, 1000), 255);
        assert_eq!(fraction_255(0, 0), 0);
        assert_eq!(fraction_255(u64::MAX, u64::MAX), 255);
    }

    #[test]
    fn readings_become_counters_and_rates() {
        let p = PortSample::default();
        let first = PortReading {
            rx_packets: 10,
            rx_bytes: 1_000,
            ..PortReading::default()
        };
        p.update(&first, 10_000, 1_000_000_000);
        let second = PortReading {
            rx_packets: 20,
            rx_bytes: 126_000,
            tx_drops: 3,
            ..first
        };
        // 125,000 bytes in 100 ms: 10 Mbit/s.
        p.update(&second, 10_000, 100_000_000);
        assert_eq!(p.rx_kbps.load(Ordering::Relaxed), 10_000);
        assert_eq!(p.counter(Direction::Rx, CounterKind::Packets), 20);
        assert_eq!(p.counter(Direction::Rx, CounterKind::Bytes), 126_000);
        assert_eq!(p.counter(Direction::Tx, CounterKind::Drops), 3);
        assert_eq!(p.speed_mbps.load(Ordering::Relaxed), 10_000);
    }
}
