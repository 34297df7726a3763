//! Counters shared between the workers and the control thread: plain atomics, written by
//! one worker each (published a few hundred times per second, not per packet) and summed by
//! readers.

use std::sync::atomic::{AtomicU64, Ordering};

use scion_dp::idint::{IdIntCounters, KeyLookups};
use scion_dp::{Counters, DropReason, ScmpReason};

pub use router_core::counters::{IO_FIELDS, IoCounters};

const DP_FIELDS: usize = 4 + ScmpReason::COUNT + DropReason::COUNT;
const II_FIELDS: usize = 14;
const KEY_FIELDS: usize = 3;

fn dp_to_array(c: &Counters) -> [u64; DP_FIELDS] {
    let mut a = [0u64; DP_FIELDS];
    a[0] = c.forwarded;
    a[1] = c.to_sibling;
    a[2] = c.delivered;
    a[3] = c.bfd;
    a[4..4 + ScmpReason::COUNT].copy_from_slice(&c.replies);
    a[4 + ScmpReason::COUNT..].copy_from_slice(&c.drops);
    a
}

fn dp_from_array(a: &[u64; DP_FIELDS]) -> Counters {
    let mut c = Counters {
        forwarded: a[0],
        to_sibling: a[1],
        delivered: a[2],
        bfd: a[3],
        ..Counters::default()
    };
    c.replies.copy_from_slice(&a[4..4 + ScmpReason::COUNT]);
    c.drops.copy_from_slice(&a[4 + ScmpReason::COUNT..]);
    c
}

fn ii_to_array(c: &IdIntCounters) -> [u64; II_FIELDS] {
    c.named().map(|(_, v)| v)
}

fn ii_from_array(a: &[u64; II_FIELDS]) -> IdIntCounters {
    IdIntCounters {
        packets: a[0],
        pushed: a[1],
        aggregated: a[2],
        encrypted: a[3],
        stack_full: a[4],
        delayed: a[5],
        no_key: a[6],
        unsealed: a[7],
        malformed: a[8],
        unsupported: a[9],
        exported: a[10],
        export_refused: a[11],
        stripped: a[12],
        consumed: a[13],
    }
}

/// `(name, value)` pairs of key lookup counters.
pub fn key_lookups_named(k: &KeyLookups) -> [(&'static str, u64); KEY_FIELDS] {
    [
        ("hits", k.hits),
        ("misses", k.misses),
        ("evictions", k.evictions),
    ]
}

/// The published counters of one worker.
#[derive(Debug)]
pub struct WorkerStats {
    io: [AtomicU64; IO_FIELDS],
    dp: [AtomicU64; DP_FIELDS],
    ii: [AtomicU64; II_FIELDS],
    keys: [AtomicU64; KEY_FIELDS],
}

impl Default for WorkerStats {
    fn default() -> Self {
        WorkerStats {
            io: std::array::from_fn(|_| AtomicU64::new(0)),
            dp: std::array::from_fn(|_| AtomicU64::new(0)),
            ii: std::array::from_fn(|_| AtomicU64::new(0)),
            keys: std::array::from_fn(|_| AtomicU64::new(0)),
        }
    }
}

/// A snapshot of every counter (one worker or a sum).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// I/O counters.
    pub io: IoCounters,
    /// scion-dp dispositions.
    pub dp: Counters,
    /// ID-INT stage counters.
    pub idint: IdIntCounters,
    /// ID-INT key lookups (the worker's DRKey cache).
    pub keys: KeyLookups,
}

impl WorkerStats {
    /// Publishes the worker's current values (called by its worker only).
    pub fn publish(&self, io: &IoCounters, dp: &Counters, ii: &IdIntCounters, keys: &KeyLookups) {
        for (a, v) in self.io.iter().zip(io.to_array()) {
            a.store(v, Ordering::Relaxed);
        }
        for (a, v) in self.dp.iter().zip(dp_to_array(dp)) {
            a.store(v, Ordering::Relaxed);
        }
        for (a, v) in self.ii.iter().zip(ii_to_array(ii)) {
            a.store(v, Ordering::Relaxed);
        }
        for (a, v) in self.keys.iter().zip(key_lookups_named(keys)) {
            a.store(v.1, Ordering::Relaxed);
        }
    }

    /// The last published values.
    pub fn snapshot(&self) -> Snapshot {
        let io = std::array::from_fn(|i| self.io[i].load(Ordering::Relaxed));
        let dp = std::array::from_fn(|i| self.dp[i].load(Ordering::Relaxed));
        let ii = std::array::from_fn(|i| self.ii[i].load(Ordering::Relaxed));
        let k: [u64; KEY_FIELDS] = std::array::from_fn(|i| self.keys[i].load(Ordering::Relaxed));
        Snapshot {
            io: IoCounters::from_array(io),
            dp: dp_from_array(&dp),
            idint: ii_from_array(&ii),
            keys: KeyLookups {
                hits: k[0],
                misses: k[1],
                evictions: k[2],
            },
        }
    }
}

impl Snapshot {
    /// Sum over workers.
    pub fn sum<'a>(it: impl IntoIterator<Item = &'a WorkerStats>) -> Snapshot {
        let mut s = Snapshot::default();
        for w in it {
            let x = w.snapshot();
            s.io.merge(&x.io);
            s.dp.merge(&x.dp);
            s.idint.merge(&x.idint);
            s.keys.hits += x.keys.hits;
            s.keys.misses += x.keys.misses;
            s.keys.evictions += x.keys.evictions;
        }
        s
    }

    /// The snapshot as JSON: io, dispositions, replies and drops by reason, ID-INT.
    pub fn to_json(&self) -> serde_json::Value {
        let mut replies = serde_json::Map::new();
        for r in ScmpReason::ALL {
            replies.insert(r.name().into(), self.dp.replies_for(r).into());
        }
        let mut drops = serde_json::Map::new();
        for r in DropReason::ALL {
            drops.insert(r.name().into(), self.dp.drops_for(r).into());
        }
        let mut ii = serde_json::Map::new();
        for (k, v) in self.idint.named() {
            ii.insert(k.into(), v.into());
        }
        serde_json::json!({
            "io": self.io,
            "forwarded": self.dp.forwarded,
            "to_sibling": self.dp.to_sibling,
            "delivered": self.dp.delivered,
            "bfd": self.dp.bfd,
            "scmp_replies": replies,
            "drops": drops,
            "idint": ii,
            "idint_keys": key_lookups_named(&self.keys)
                .into_iter()
                .map(|(k, v)| (k.to_string(), serde_json::Value::from(v)))
                .collect::<serde_json::Map<_, _>>(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn publish_snapshot_sum_roundtrip() {
        let mut dp = Counters::default();
        dp.record(&scion_dp::Disposition::Forward { ifid: 1 });
        dp.record(&scion_dp::Disposition::Drop(DropReason::Malformed));
        let ii = IdIntCounters {
            pushed: 3,
            consumed: 9,
            ..Default::default()
        };
        let io = IoCounters {
            rx_frames: 5,
            unroutable: 2,
            ndp_learned: 3,
            ..Default::default()
        };
        let a = WorkerStats::default();
        let b = WorkerStats::default();
        a.publish(
            &io,
            &dp,
            &ii,
            &KeyLookups {
                hits: 4,
                misses: 1,
                evictions: 0,
            },
        );
        b.publish(
            &io,
            &dp,
            &ii,
            &KeyLookups {
                hits: 2,
                misses: 3,
                evictions: 1,
            },
        );
        assert_eq!(a.snapshot().dp, dp);
        assert_eq!(a.snapshot().idint, ii);
        let s = Snapshot::sum([&a, &b]);
        assert_eq!(s.io.rx_frames, 10);
        assert_eq!(s.io.unroutable, 4);
        assert_eq!(s.dp.forwarded, 2);
        assert_eq!(s.dp.drops_for(DropReason::Malformed), 2);
        assert_eq!(s.idint.consumed, 18);
        let j = s.to_json();
        assert_eq!(j["drops"]["malformed"], 2);
        assert_eq!(j["io"]["rx_frames"], 10);
        assert_eq!(j["io"]["ndp_learned"], 6);
        assert_eq!(s.io.named()[14], ("ndp_learned", 6));
        assert_eq!(
            s.keys,
            KeyLookups {
                hits: 6,
                misses: 4,
                evictions: 1
            }
        );
        assert_eq!(j["idint_keys"]["misses"], 4);
        assert_eq!(j["idint_keys"]["evictions"], 1);
    }
}
