//! A token bucket on the TSC, for the SCMP error replies of one worker: a flood of packets
//! that each ask for an SCMP reply (bad MAC, expired path, unknown interface) cannot turn
//! the router into a reflector. Per worker, so no sharing; integer arithmetic only, no
//! allocation, nothing but the caller's TSC reading.

/// Default replies per second and worker.
pub const DEFAULT_RATE: u32 = 1_000;
/// Default burst: replies a worker sends at once after a quiet spell.
pub const DEFAULT_BURST: u32 = 100;

/// A token bucket refilled at `rate` tokens per second up to `burst`.
#[derive(Debug, Clone)]
pub struct TokenBucket {
    /// TSC ticks per token (`u64::MAX`: never refilled, a rate of 0).
    ticks_per_token: u64,
    /// Most tokens held.
    burst: u32,
    /// Tokens held.
    tokens: u32,
    /// TSC up to which tokens were credited.
    credited: u64,
}

impl TokenBucket {
    /// A full bucket of `burst` tokens refilled at `rate` per second, for a TSC of `tsc_hz`
    /// read `now`. A rate of 0 never refills (only the first `burst` pass; with `burst` 0,
    /// nothing does).
    pub fn new(rate: u32, burst: u32, tsc_hz: u64, now: u64) -> Self {
        let ticks_per_token = if rate == 0 {
            u64::MAX
        } else {
            (tsc_hz / u64::from(rate)).max(1)
        };
        TokenBucket {
            ticks_per_token,
            burst,
            tokens: burst,
            credited: now,
        }
    }

    /// Takes a token at TSC `now` if there is one (refilling for the time since the last
    /// credit first).
    #[inline]
    pub fn allow(&mut self, now: u64) -> bool {
        if self.tokens == 0 {
            let elapsed = now.wrapping_sub(self.credited);
            // A TSC that went backwards (another core's, slightly behind) credits nothing.
            if elapsed < u64::MAX / 2 {
                let earned = elapsed / self.ticks_per_token;
                if earned > 0 {
                    self.tokens = u32::try_from(earned).unwrap_or(u32::MAX).min(self.burst);
                    self.credited = if self.tokens == self.burst {
                        now
                    } else {
                        self.credited
                            .wrapping_add(earned.saturating_mul(self.ticks_per_token))
                    };
                }
            }
        }
        if self.tokens == 0 {
            return false;
        }
        self.tokens -= 1;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A TSC of 1 GHz.
    const HZ: u64 = 1_000_000_000;

    #[test]
    fn a_burst_then_the_rate() {
        let t0 = 5 * HZ;
        let mut b = TokenBucket::new(1_000, 10, HZ, t0);
        assert_eq!((0..100).filter(|_| b.allow(t0)).count(), 10, "the burst");
        // One per millisecond after that.
        assert!(!b.allow(t0 + 999_999));
        assert!(b.allow(t0 + 1_000_000));
        assert!(!b.allow(t0 + 1_000_001));
        // Over one second: 1000 more, never more than the burst at once.
        let mut passed = 0;
        for us in 1..=1_000_000u64 {
            if b.allow(t0 + 1_000_000 + us * 1_000) {
                passed += 1;
            }
        }
        assert_eq!(passed, 1_000);
        let later = t0 + 100 * HZ;
        assert_eq!((0..100).filter(|_| b.allow(later)).count(), 10, "capped");
    }

    #[test]
    fn zero_rate_and_odd_clocks() {
        let mut b = TokenBucket::new(0, 2, HZ, 0);
        assert!(b.allow(0) && b.allow(1));
        assert!(!b.allow(1_000 * HZ), "never refilled");
        let mut none = TokenBucket::new(1_000, 0, HZ, 0);
        assert!(!none.allow(HZ), "burst 0: nothing");
        // A TSC behind the last credit credits nothing and does not wrap.
        let mut b = TokenBucket::new(1_000, 1, HZ, 10 * HZ);
        assert!(b.allow(10 * HZ));
        assert!(!b.allow(9 * HZ));
        assert!(b.allow(10 * HZ + 1_000_000));
        // The TSC wrapping around keeps counting.
        let mut b = TokenBucket::new(1_000, 1, HZ, u64::MAX - 10);
        assert!(b.allow(u64::MAX - 10));
        assert!(b.allow(1_000_000));
    }
}
