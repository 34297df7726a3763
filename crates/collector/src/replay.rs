//! Replay suppression across all sources: a (timestamp, port) pair may appear once per source
//! (source AS and host) within the freshness window.
//!
//! Freshness (stale / future) is `idint_wire`'s [`ReplayWindow::fresh`]; remembered pairs live
//! in a hash set bounded by `capacity` and expire in arrival order once older than the window.

use std::collections::VecDeque;

use idint_wire::idint::verify::{ReplayError, ReplayWindow};
use idint_wire::{HostAddr, IsdAsn};
use rustc_hash::FxHashSet;

/// Who sent a report: its ISD-AS and host, exactly (a hash of them could be made to collide,
/// and another source's pairs then count against this one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Source {
    ia: u64,
    kind: u8,
    host: [u8; 16],
}

impl Source {
    /// The source `host` in `ia`.
    pub fn new(ia: IsdAsn, host: &HostAddr) -> Self {
        Source {
            ia: ia.to_u64(),
            kind: host.addr_type().nibble(),
            host: host.to_bytes().0,
        }
    }
}

/// A source plus its (full timestamp, port) pair.
type Pair = (Source, u64, u16);

/// Replay filter for every source the collector hears from.
pub struct ReplayFilter {
    clock: ReplayWindow<1>,
    window_ns: u64,
    seen: FxHashSet<Pair>,
    order: VecDeque<Pair>,
    capacity: usize,
}

impl ReplayFilter {
    /// Accepts timestamps at most `window_ns` old and `skew_ns` ahead, remembering at most
    /// `capacity` pairs (beyond that reports are refused with [`ReplayError::Full`]).
    pub fn new(window_ns: u64, skew_ns: u64, capacity: usize) -> Self {
        ReplayFilter {
            clock: ReplayWindow::new(window_ns, skew_ns),
            window_ns,
            seen: FxHashSet::default(),
            order: VecDeque::new(),
            capacity,
        }
    }

    /// The full time of a fresh 48-bit timestamp, and whether `(source, full, port)` is new.
    pub fn check(
        &self,
        source: Source,
        ts48: u64,
        port: u16,
        now_ns: u64,
    ) -> Result<u64, ReplayError> {
        let full = self.clock.fresh(ts48, now_ns)?;
        if self.seen.contains(&(source, full, port)) {
            return Err(ReplayError::Replayed);
        }
        Ok(full)
    }

    /// Records a pair checked by [`Self::check`] (after its MACs verified).
    pub fn record(
        &mut self,
        source: Source,
        full: u64,
        port: u16,
        now_ns: u64,
    ) -> Result<(), ReplayError> {
        let oldest_ok = now_ns.saturating_sub(self.window_ns);
        while let Some(&front) = self.order.front() {
            if front.1 >= oldest_ok {
                break;
            }
            self.order.pop_front();
            self.seen.remove(&front);
        }
        if self.seen.len() >= self.capacity {
            return Err(ReplayError::Full);
        }
        let p = (source, full, port);
        if !self.seen.insert(p) {
            return Err(ReplayError::Replayed);
        }
        self.order.push_back(p);
        Ok(())
    }

    /// Pairs remembered now.
    pub fn len(&self) -> usize {
        self.seen.len()
    }

    /// Whether nothing is remembered.
    pub fn is_empty(&self) -> bool {
        self.seen.is_empty()
    }

    /// Forgets every pair (benchmarks replay the same reports).
    pub fn clear(&mut self) {
        self.seen.clear();
        self.order.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;
    const NOW: u64 = 1_763_800_000 * S;
    const WRAP: u64 = 1 << 48;

    fn src(last: u8) -> Source {
        let ia: IsdAsn = "1-ff00:0:110".parse().unwrap();
        Source::new(ia, &HostAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, last)))
    }

    #[test]
    fn pairs_are_per_source_and_expire() {
        let mut f = ReplayFilter::new(60 * S, S, 3);
        let ts = (NOW - S) % WRAP;
        let full = f.check(src(1), ts, 7, NOW).unwrap();
        f.record(src(1), full, 7, NOW).unwrap();
        assert_eq!(f.check(src(1), ts, 7, NOW), Err(ReplayError::Replayed));
        // Another source may use the same pair.
        let full2 = f.check(src(2), ts, 7, NOW).unwrap();
        f.record(src(2), full2, 7, NOW).unwrap();
        f.record(src(2), full2 + 1, 7, NOW).unwrap();
        assert_eq!(f.record(src(2), full2 + 2, 7, NOW), Err(ReplayError::Full));
        assert!(matches!(
            f.check(src(1), (NOW - 61 * S) % WRAP, 7, NOW),
            Err(ReplayError::Stale { .. })
        ));
        // A minute later, the old pairs are gone and room is free again.
        let later = NOW + 61 * S;
        let t2 = f.check(src(1), later % WRAP, 7, later).unwrap();
        f.record(src(1), t2, 7, later).unwrap();
        assert_eq!(f.len(), 1);
    }
}
