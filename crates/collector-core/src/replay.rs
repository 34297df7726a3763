//! Replay suppression across all sources: a (timestamp, port) pair may appear once per source
//! (source AS and host) within the freshness window.
//!
//! Freshness (stale / future) is `idint_wire`'s [`ReplayWindow::fresh`]; remembered pairs live
//! in a hash set bounded by `capacity` and expire in arrival order once older than the window.
//!
//! The memory lives in the process: a filter remembers nothing from before it was made, so a
//! report stamped earlier than that ([`ReplayFilter::remembers_since`]) could have been
//! accepted by the collector that ran before a restart. The pipeline refuses such reports
//! ([`ReplayFilter::predates_memory`]) rather than let a replay through: what a restart costs
//! is the reports in flight across it (and, for a source whose clock lags, the first
//! moments of its lag).

use std::collections::VecDeque;

use idint_wire::idint::verify::{ReplayError, ReplayWindow};
use idint_wire::{HostAddr, IsdAsn};
use rustc_hash::{FxHashMap, FxHashSet};

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

/// Which of several collector instances owns a source: the one whose replay memory holds its
/// (timestamp, port) pairs. Sources are spread over instances by a fixed hash of their
/// ISD-AS and host (the same in every instance, unlike the per-worker spread), so a report
/// replayed to another instance than the one that accepted it is refused there as foreign.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Share {
    /// This instance, `0..instances`.
    pub index: u32,
    /// Instances in the cluster (at least 1).
    pub instances: u32,
}

impl Share {
    /// A cluster of one: every source is this instance's.
    pub const ALONE: Share = Share {
        index: 0,
        instances: 1,
    };

    /// The instance that owns source `host` in `ia`.
    pub fn owner(instances: u32, ia: IsdAsn, host: &HostAddr) -> u32 {
        // FNV-1a over the ISD-AS, the address type and the address.
        const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
        const PRIME: u64 = 0x0000_0100_0000_01b3;
        let (bytes, len) = host.to_bytes();
        let mut h = OFFSET;
        let kind = [host.addr_type().nibble()];
        for b in ia
            .to_u64()
            .to_be_bytes()
            .iter()
            .chain(&kind)
            .chain(&bytes[..len])
        {
            h = (h ^ u64::from(*b)).wrapping_mul(PRIME);
        }
        (h % u64::from(instances.max(1))) as u32
    }

    /// Whether this instance owns source `host` in `ia`.
    pub fn owns(&self, ia: IsdAsn, host: &HostAddr) -> bool {
        self.instances <= 1 || Self::owner(self.instances, ia, host) == self.index
    }
}

/// A source plus its (full timestamp, port) pair.
type Pair = (Source, u64, u16);

/// Why a pair was not recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordError {
    /// Replayed, or the whole memory is full.
    Replay(ReplayError),
    /// The source holds its quota of pairs ([`ReplayFilter::with_source_quota`]).
    SourceQuota,
}

/// Replay filter for every source the collector hears from.
pub struct ReplayFilter {
    clock: ReplayWindow<1>,
    window_ns: u64,
    seen: FxHashSet<Pair>,
    order: VecDeque<Pair>,
    capacity: usize,
    /// Pairs remembered per source now, and the most one source may hold.
    per_source: FxHashMap<Source, usize>,
    source_quota: usize,
    /// Source time (ns) from which every accepted pair is remembered; 0: no bound.
    since_ns: u64,
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
            per_source: FxHashMap::default(),
            source_quota: capacity,
            since_ns: 0,
        }
    }

    /// The same filter, letting one source hold at most `quota` pairs (so that one source,
    /// even a genuine one, cannot fill the memory and lock the others out).
    pub fn with_source_quota(mut self, quota: usize) -> Self {
        self.source_quota = quota;
        self
    }

    /// The same filter, knowing that it remembers nothing accepted before source time
    /// `since_ns` (Unix ns; the time it starts to run): see [`Self::predates_memory`].
    pub fn remembers_since(mut self, since_ns: u64) -> Self {
        self.since_ns = since_ns;
        self
    }

    /// Whether a report with full source timestamp `full` (from [`Self::check`]) is older
    /// than this filter's memory, so that it may have been accepted before and cannot be
    /// checked.
    pub fn predates_memory(&self, full: u64) -> bool {
        full < self.since_ns
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
    ) -> Result<(), RecordError> {
        let oldest_ok = now_ns.saturating_sub(self.window_ns);
        while let Some(&front) = self.order.front() {
            if front.1 >= oldest_ok {
                break;
            }
            self.order.pop_front();
            self.seen.remove(&front);
            if let Some(n) = self.per_source.get_mut(&front.0) {
                *n -= 1;
                if *n == 0 {
                    self.per_source.remove(&front.0);
                }
            }
        }
        if self.seen.len() >= self.capacity {
            return Err(RecordError::Replay(ReplayError::Full));
        }
        let held = self.per_source.get(&source).copied().unwrap_or(0);
        if held >= self.source_quota {
            return Err(RecordError::SourceQuota);
        }
        let p = (source, full, port);
        if !self.seen.insert(p) {
            return Err(RecordError::Replay(ReplayError::Replayed));
        }
        *self.per_source.entry(source).or_default() += 1;
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
        self.per_source.clear();
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
    fn reports_older_than_the_memory_cannot_be_checked() {
        let start = NOW - 10 * S;
        let f = ReplayFilter::new(60 * S, S, 16).remembers_since(start);
        // Fresh by the window, but stamped before the filter existed.
        let old = f.check(src(1), (start - 1) % WRAP, 7, NOW).unwrap();
        assert!(f.predates_memory(old));
        let new = f.check(src(1), start % WRAP, 7, NOW).unwrap();
        assert!(!f.predates_memory(new));
        // Without a start, nothing predates the memory.
        let g = ReplayFilter::new(60 * S, S, 16);
        assert!(!g.predates_memory(old));
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
        assert_eq!(
            f.record(src(2), full2 + 2, 7, NOW),
            Err(RecordError::Replay(ReplayError::Full))
        );
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

    #[test]
    fn one_source_cannot_take_more_than_its_quota_and_gets_it_back_as_pairs_expire() {
        let mut f = ReplayFilter::new(60 * S, S, 100).with_source_quota(3);
        let t = NOW - S;
        for k in 0..3 {
            f.record(src(1), t + k, 7, NOW).unwrap();
        }
        assert_eq!(
            f.record(src(1), t + 3, 7, NOW),
            Err(RecordError::SourceQuota)
        );
        // Others still have room.
        for k in 0..3 {
            f.record(src(2), t + k, 7, NOW).unwrap();
        }
        // Once its pairs expire, the source may record again.
        let later = NOW + 61 * S;
        f.record(src(1), later, 7, later).unwrap();
        assert_eq!(f.len(), 1);
    }
}
