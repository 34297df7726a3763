//! Idle back-off of a poll-mode loop: after a run of empty polls the loop pauses, for
//! progressively longer up to a configured maximum, and returns to full-speed polling on the
//! first packet. A loaded loop never pauses (each packet resets the run), so throughput is
//! unchanged; an idle one sleeps most of the time instead of burning its CPU. The decision
//! is here; the I/O shell does the sleeping.

/// Empty polls in a row before the first pause (at ~50 ns per empty poll of a few queues,
/// some tens of microseconds of spinning: bursts that follow each other closely never pause).
pub const EMPTY_POLLS_BEFORE_PAUSE: u32 = 1024;
/// The first pause, µs; each further empty poll doubles it up to the maximum.
pub const FIRST_PAUSE_US: u32 = 1;

/// Back-off state of one polling loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IdleBackoff {
    /// Longest pause, µs (0: never pause: pure busy polling).
    max_us: u32,
    /// Empty polls since the last packet.
    empty: u32,
    /// The next pause, µs.
    next_us: u32,
}

impl IdleBackoff {
    /// Back-off pausing at most `max_us` µs at a time (0: never).
    pub fn new(max_us: u32) -> Self {
        IdleBackoff {
            max_us,
            empty: 0,
            next_us: FIRST_PAUSE_US.min(max_us),
        }
    }

    /// A poll that found work: back to full speed.
    #[inline(always)]
    pub fn busy(&mut self) {
        self.empty = 0;
    }

    /// A poll that found nothing: how long to pause now, µs (0: poll again at once).
    #[inline]
    pub fn empty(&mut self) -> u32 {
        if self.max_us == 0 {
            return 0;
        }
        if self.empty < EMPTY_POLLS_BEFORE_PAUSE {
            self.empty += 1;
            if self.empty < EMPTY_POLLS_BEFORE_PAUSE {
                return 0;
            }
            // The run starts: from the first pause again.
            self.next_us = FIRST_PAUSE_US.min(self.max_us);
        }
        let pause = self.next_us;
        self.next_us = self.next_us.saturating_mul(2).min(self.max_us);
        pause
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pauses_only_after_a_run_of_empty_polls_and_doubles_to_the_maximum() {
        let mut b = IdleBackoff::new(100);
        for _ in 1..EMPTY_POLLS_BEFORE_PAUSE {
            assert_eq!(b.empty(), 0);
        }
        let pauses: Vec<u32> = (0..10).map(|_| b.empty()).collect();
        assert_eq!(pauses, [1, 2, 4, 8, 16, 32, 64, 100, 100, 100]);
        // The first packet: full speed again, and the next idle run starts from 1 µs.
        b.busy();
        for _ in 1..EMPTY_POLLS_BEFORE_PAUSE {
            assert_eq!(b.empty(), 0);
        }
        assert_eq!(b.empty(), 1);
    }

    #[test]
    fn zero_means_busy_polling() {
        let mut b = IdleBackoff::new(0);
        for _ in 0..10 * EMPTY_POLLS_BEFORE_PAUSE {
            assert_eq!(b.empty(), 0);
        }
    }
}
