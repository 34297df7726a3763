//! DRKey epochs: validity windows of secret values and the keys derived from them.

/// Shortest epoch SCION allows (6 minutes), seconds.
pub const MIN_DURATION: u32 = 6 * 60;
/// Longest epoch SCION allows (3 days), seconds.
pub const MAX_DURATION: u32 = 3 * 24 * 3600;
/// Grace period during which the previous epoch's key is still accepted, seconds.
pub const GRACE_PERIOD: u32 = 5;

/// A validity window `[begin, end)` in Unix seconds (as encoded in secret-value derivation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Epoch {
    /// First second of validity.
    pub begin: u32,
    /// First second after validity.
    pub end: u32,
}

impl Epoch {
    /// A window, or `None` if `end <= begin`.
    pub const fn new(begin: u32, end: u32) -> Option<Self> {
        if end > begin {
            Some(Epoch { begin, end })
        } else {
            None
        }
    }

    /// Whether `t` (Unix seconds) lies in the window.
    pub const fn contains(&self, t: u64) -> bool {
        t >= self.begin as u64 && t < self.end as u64
    }

    /// Whether `t` lies in the window or in the grace period after it.
    pub const fn accepts(&self, t: u64) -> bool {
        t >= self.begin as u64 && t < self.end as u64 + GRACE_PERIOD as u64
    }

    /// The epoch of a fixed-duration schedule (aligned to the Unix epoch) that contains `t`,
    /// or `None` if `duration` is outside 6 min ..= 3 days or the epoch would end after 2106.
    pub fn containing(t: u64, duration: u32) -> Option<Self> {
        if !(MIN_DURATION..=MAX_DURATION).contains(&duration) {
            return None;
        }
        let d = u64::from(duration);
        let begin = t / d * d;
        Epoch::new(u32::try_from(begin).ok()?, u32::try_from(begin + d).ok()?)
    }

    /// The following epoch of the same length, or `None` if it would end after 2106 or this
    /// window is empty or inverted (`end <= begin`, which [`Epoch::new`] refuses but the public
    /// fields allow): it has no length to repeat.
    pub fn next(&self) -> Option<Self> {
        let len = self.end.checked_sub(self.begin)?;
        Epoch::new(self.end, self.end.checked_add(len)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boundaries_and_grace() {
        let e = Epoch::containing(1_704_067_800, 3600).unwrap();
        assert_eq!((e.begin, e.end), (1_704_067_200, 1_704_070_800));
        assert!(e.contains(u64::from(e.begin)));
        assert!(!e.contains(u64::from(e.end)));
        assert!(e.accepts(u64::from(e.end) + 4));
        assert!(!e.accepts(u64::from(e.end) + 5));
        assert!(!e.accepts(u64::from(e.begin) - 1));
        let n = e.next().unwrap();
        assert_eq!(n.begin, e.end);
        assert!(n.contains(u64::from(e.end)));
        assert_eq!(Epoch::containing(u64::from(e.end), 3600), Some(n));
        assert!(Epoch::containing(0, 60).is_none());
        assert!(Epoch::containing(0, MAX_DURATION + 1).is_none());
        assert!(Epoch::new(5, 5).is_none());
        assert!(Epoch::containing(u64::from(u32::MAX), 3600).is_none());
    }

    #[test]
    fn next_of_an_invalid_or_last_epoch_is_none() {
        assert_eq!(Epoch { begin: 10, end: 5 }.next(), None);
        assert_eq!(Epoch { begin: 7, end: 7 }.next(), None);
        assert_eq!(
            Epoch {
                begin: 0,
                end: u32::MAX
            }
            .next(),
            None
        );
        assert_eq!(
            Epoch { begin: 10, end: 15 }.next(),
            Some(Epoch { begin: 15, end: 20 })
        );
    }
}
