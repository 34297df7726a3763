//! Wall-clock time from the CPU's time-stamp counter: a fixed-point conversion (no division
//! per packet), corrected against the system clock by the control thread and shared with the
//! workers through a sequence lock. The caller reads the counters; nothing here does I/O.

use std::sync::atomic::{AtomicU64, Ordering};

/// Wall-clock time from the TSC: Unix ns at a reference TSC value plus elapsed ticks, converted
/// with a multiplication by a fixed-point ns-per-tick factor (no division per packet).
#[derive(Debug, Clone, Copy)]
pub struct TscClock {
    tsc0: u64,
    unix_ns0: u64,
    /// TSC ticks per second.
    hz: u64,
    /// ns per tick in units of 2^-[`NS_SHIFT`].
    ns_per_tick: u128,
}

/// Fractional bits of [`TscClock`]'s ns-per-tick factor: the rounded factor drifts by less
/// than 1 ns per 2^47 ticks (half a day at 3 GHz) from the exact conversion.
const NS_SHIFT: u32 = 48;

impl TscClock {
    /// A clock ticking at (nominally) `hz` that read `unix_ns0` (Unix ns) at TSC value
    /// `tsc0`: the caller reads both clocks.
    pub fn new(hz: u64, tsc0: u64, unix_ns0: u64) -> Self {
        let hz = hz.max(1);
        TscClock {
            tsc0,
            unix_ns0,
            hz,
            ns_per_tick: ((1_000_000_000u128 << NS_SHIFT) + u128::from(hz) / 2) / u128::from(hz),
        }
    }

    /// Unix ns at TSC value `tsc`.
    #[inline]
    pub fn unix_ns(&self, tsc: u64) -> u64 {
        let dt = tsc.wrapping_sub(self.tsc0);
        let half = 1u128 << (NS_SHIFT - 1);
        self.unix_ns0 + ((u128::from(dt) * self.ns_per_tick + half) >> NS_SHIFT) as u64
    }

    /// The declared TSC frequency, ticks per second.
    #[inline]
    pub fn hz(&self) -> u64 {
        self.hz
    }

    /// The calibration pair: (TSC, Unix ns) this clock counts from.
    pub fn anchor(&self) -> (u64, u64) {
        (self.tsc0, self.unix_ns0)
    }

    /// This clock corrected against the system clock, which read `real_ns` at TSC `tsc`
    /// (`start`: the pair the rate is measured from, `(tsc, real_ns)`; reset by a step). The declared TSC frequency is only
    /// nominal (on the development VM DPDK says 2.6 GHz, the kernel measured 2596.144 MHz: the
    /// uncorrected clock lost 5 s an hour), so the rate becomes the one measured since `start`,
    /// plus a slew that absorbs the clock's current error over the next [`SLEW_NS`]
    /// (limited to ±[`MAX_SLEW_PPM`]): the result continues this clock's reading at `tsc`, so
    /// time never jumps, unless the error exceeds [`STEP_NS`] (the system clock was set): then
    /// it steps to the system clock.
    pub fn resynced(&self, tsc: u64, real_ns: u64, start: &mut (u64, u64)) -> TscClock {
        let now = self.unix_ns(tsc);
        let error = i128::from(real_ns) - i128::from(now);
        if error.unsigned_abs() > u128::from(STEP_NS) {
            // The system clock was set: the rate is measured afresh from here.
            *start = (tsc, real_ns);
            return TscClock {
                tsc0: tsc,
                unix_ns0: real_ns,
                ..*self
            };
        }
        // ns per tick × 2^NS_SHIFT, measured over the whole run once it is long enough.
        let (ticks, ns) = (tsc.wrapping_sub(start.0), real_ns.saturating_sub(start.1));
        let rate = if ns >= MIN_RATE_SPAN_NS && ticks > 0 {
            (u128::from(ns) << NS_SHIFT) / u128::from(ticks)
        } else {
            self.ns_per_tick
        };
        // The error spread over the next SLEW_NS: a relative rate change of error / SLEW_NS.
        let max = i128::from(SLEW_NS) * i128::from(MAX_SLEW_PPM) / 1_000_000;
        let slew = error.clamp(-max, max);
        let adjusted = (rate as i128) + (rate as i128) * slew / i128::from(SLEW_NS);
        TscClock {
            tsc0: tsc,
            unix_ns0: now,
            hz: self.hz,
            ns_per_tick: adjusted.max(1) as u128,
        }
    }
}

/// How long a clock correction takes to absorb the error (see [`TscClock::resynced`]).
pub const SLEW_NS: u64 = 1_000_000_000;
/// Largest rate correction for the error, parts per million.
pub const MAX_SLEW_PPM: u64 = 500;
/// An error beyond this is a step of the system clock: followed at once.
pub const STEP_NS: u64 = 100_000_000;
/// The rate is measured once the run is this long (before, the declared frequency).
const MIN_RATE_SPAN_NS: u64 = 1_000_000_000;

/// The router's clock as the control thread corrects it ([`TscClock::resynced`]), read by the
/// workers a few hundred times a second (a sequence lock: no lock, no allocation).
#[derive(Debug)]
pub struct SharedClock {
    seq: AtomicU64,
    tsc0: AtomicU64,
    unix_ns0: AtomicU64,
    hz: AtomicU64,
    rate_hi: AtomicU64,
    rate_lo: AtomicU64,
}

impl SharedClock {
    /// Starts with `c`.
    pub fn new(c: TscClock) -> Self {
        let s = SharedClock {
            seq: AtomicU64::new(0),
            tsc0: AtomicU64::new(0),
            unix_ns0: AtomicU64::new(0),
            hz: AtomicU64::new(0),
            rate_hi: AtomicU64::new(0),
            rate_lo: AtomicU64::new(0),
        };
        s.store(&c);
        s
    }

    /// Publishes `c` (one writer: the control thread).
    pub fn store(&self, c: &TscClock) {
        let s = self.seq.load(Ordering::Relaxed);
        self.seq.store(s.wrapping_add(1), Ordering::Relaxed);
        std::sync::atomic::fence(Ordering::Release);
        self.tsc0.store(c.tsc0, Ordering::Relaxed);
        self.unix_ns0.store(c.unix_ns0, Ordering::Relaxed);
        self.hz.store(c.hz, Ordering::Relaxed);
        self.rate_hi
            .store((c.ns_per_tick >> 64) as u64, Ordering::Relaxed);
        self.rate_lo.store(c.ns_per_tick as u64, Ordering::Relaxed);
        self.seq.store(s.wrapping_add(2), Ordering::Release);
    }

    /// The clock last published.
    pub fn load(&self) -> TscClock {
        loop {
            let s1 = self.seq.load(Ordering::Acquire);
            if s1 & 1 == 1 {
                std::hint::spin_loop();
                continue;
            }
            let c = TscClock {
                tsc0: self.tsc0.load(Ordering::Relaxed),
                unix_ns0: self.unix_ns0.load(Ordering::Relaxed),
                hz: self.hz.load(Ordering::Relaxed),
                ns_per_tick: (u128::from(self.rate_hi.load(Ordering::Relaxed)) << 64)
                    | u128::from(self.rate_lo.load(Ordering::Relaxed)),
            };
            std::sync::atomic::fence(Ordering::Acquire);
            if self.seq.load(Ordering::Relaxed) == s1 {
                return c;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A TSC declared at 2.6 GHz that runs at 2596.144 MHz (as on the development VM), the
    /// clock resynced every 100 ms: it converges on the system clock, never goes back, and the
    /// shared copy reads what was stored.
    #[test]
    fn corrected_clock_follows_the_system_clock() {
        let (declared, true_hz) = (2_600_000_000u64, 2_596_144_000u64);
        let c0 = TscClock {
            tsc0: 1_000_000,
            unix_ns0: 1_763_800_000_000_000_000,
            hz: declared,
            ns_per_tick: ((1_000_000_000u128 << NS_SHIFT) + u128::from(declared) / 2)
                / u128::from(declared),
        };
        let real_at = |tsc: u64| {
            c0.unix_ns0 + (u128::from(tsc - c0.tsc0) * 1_000_000_000 / u128::from(true_hz)) as u64
        };
        let shared = SharedClock::new(c0);
        let mut start = c0.anchor();
        let step = true_hz / 10;
        let mut tsc = c0.tsc0;
        let mut last = 0u64;
        let mut errors = Vec::new();
        for _ in 0..600 {
            // A minute of 100 ms steps; times read every 10 ms in between are monotonic.
            for k in 1..=10 {
                let t = shared.load().unix_ns(tsc + step * k / 10);
                assert!(t >= last, "clock went back");
                last = t;
            }
            tsc += step;
            let c = shared.load();
            let next = c.resynced(tsc, real_at(tsc), &mut start);
            assert!(next.unix_ns(tsc).abs_diff(c.unix_ns(tsc)) <= 1, "no jump");
            shared.store(&next);
            assert_eq!(shared.load().anchor(), next.anchor());
            errors.push(next.unix_ns(tsc + step).abs_diff(real_at(tsc + step)));
        }
        // Uncorrected, the clock would be 89 ms behind after a minute.
        let uncorrected = c0.unix_ns(tsc).abs_diff(real_at(tsc));
        assert!(uncorrected > 80_000_000, "{uncorrected}");
        // Corrected: within a microsecond after the first seconds.
        let worst_late = errors[100..].iter().max().copied().unwrap();
        assert!(worst_late < 1_000, "{worst_late} ns");
        // A step of the system clock (set by hand) is followed at once.
        let c = shared.load();
        let stepped = c.resynced(tsc, real_at(tsc) + 5_000_000_000, &mut start);
        assert_eq!(stepped.unix_ns(tsc), real_at(tsc) + 5_000_000_000);
        assert_eq!(start, (tsc, real_at(tsc) + 5_000_000_000));
        // And tracked from there, the rate measured from the step on.
        let mut c = stepped;
        for _ in 0..300 {
            tsc += step;
            c = c.resynced(tsc, real_at(tsc) + 5_000_000_000, &mut start);
        }
        let err = c
            .unix_ns(tsc + step)
            .abs_diff(real_at(tsc + step) + 5_000_000_000);
        assert!(err < 1_000, "{err} ns after a step");
    }

    #[test]
    fn tsc_conversion_matches_exact_division() {
        for hz in [
            1,
            999_999_937,
            2_000_000_000,
            2_445_000_000,
            3_700_123_456,
            5_000_000_000,
        ] {
            let c = TscClock::new(hz, 0x1234_5678, 1_763_800_000_000_000_000);
            let exact =
                |dt: u64| c.unix_ns0 + (u128::from(dt) * 1_000_000_000 / u128::from(c.hz)) as u64;
            // Up to a day of ticks (any hz), sampled densely near 0 and sparsely beyond.
            let day = u64::try_from(u128::from(hz) * 86_400).unwrap();
            let mut dt = 0u64;
            while dt <= day {
                let got = c.unix_ns(c.tsc0.wrapping_add(dt));
                let want = exact(dt);
                assert!(got.abs_diff(want) <= 1, "hz {hz} dt {dt}: {got} vs {want}");
                dt = dt * 3 / 2 + 7;
            }
            assert_eq!(
                c.unix_ns(c.tsc0.wrapping_add(hz)),
                c.unix_ns0 + 1_000_000_000
            );
        }
    }
}
