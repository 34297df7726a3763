//! Level-1 keys of other ASes fetched from a slow remote provider (the SCION control service)
//! off the pipeline: a lookup never blocks. A miss starts one fetch per (source AS, time
//! window) on a fetcher thread and answers [`ProviderError::Pending`]; the pipeline parks the
//! report and tries it again once the fetch is done. Failed fetches are remembered for
//! [`RemoteKeysConfig::miss_ttl_s`], so forged reports cannot make the collector ask again and
//! again, and fetches are rate-limited and queued in a bounded queue.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use drkey::provider::{Level1Provider, ProviderError};
use drkey::{Epoch, Key, Protocol};
use idint_wire::IsdAsn;

use crate::counters::Counters;

/// Which key: protocol, issuing AS, receiving AS.
type KeyId = (Protocol, IsdAsn, IsdAsn);

/// Epochs kept per key (the current one, the one before for the grace period, the next).
const EPOCHS_KEPT: usize = 3;
/// Remembered failures; beyond that the memory starts afresh.
const MAX_REMEMBERED_MISSES: usize = 65_536;

/// How fetches are bounded.
#[derive(Debug, Clone, Copy)]
pub struct RemoteKeysConfig {
    /// Fetches waiting for the fetcher at most; a miss beyond is refused at once.
    pub queue: usize,
    /// Fetches started per second at most.
    pub fetches_per_s: u32,
    /// How long a failed fetch is remembered (seconds of the time asked for): lookups of that
    /// key in the meantime fail at once.
    pub miss_ttl_s: u64,
    /// Width of the time windows a fetch covers (seconds): lookups of one key within one
    /// window share a fetch and a remembered failure.
    pub window_s: u64,
}

impl Default for RemoteKeysConfig {
    fn default() -> Self {
        RemoteKeysConfig {
            queue: 256,
            fetches_per_s: 20,
            miss_ttl_s: 30,
            window_s: 60,
        }
    }
}

#[derive(Default)]
struct State {
    fetched: HashMap<KeyId, Vec<(Epoch, Key)>>,
    pending: HashSet<(KeyId, u64)>,
    /// Failed fetches: (key, window) -> first time (seconds) to ask again.
    misses: HashMap<(KeyId, u64), u64>,
}

struct Inner {
    state: Mutex<State>,
    counters: Arc<Counters>,
    config: RemoteKeysConfig,
}

impl Inner {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A non-blocking [`Level1Provider`] in front of a blocking one; see the module docs.
pub struct RemoteKeys {
    inner: Arc<Inner>,
    requests: SyncSender<(KeyId, u64)>,
}

impl RemoteKeys {
    /// Starts the fetcher thread over `provider` (it stops when this is dropped); fetches
    /// are counted in `counters` (`key_fetch*`, `key_misses_remembered`).
    pub fn spawn(
        provider: Arc<dyn Level1Provider>,
        config: RemoteKeysConfig,
        counters: Arc<Counters>,
    ) -> std::io::Result<Self> {
        let inner = Arc::new(Inner {
            state: Mutex::default(),
            counters,
            config,
        });
        let (requests, rx) = sync_channel(config.queue.max(1));
        let fetcher = inner.clone();
        std::thread::Builder::new()
            .name("collector-key-fetch".into())
            .spawn(move || fetch_loop(&fetcher, provider.as_ref(), rx))?;
        Ok(RemoteKeys { inner, requests })
    }

    /// Fetches queued or running.
    pub fn pending(&self) -> usize {
        self.inner.state().pending.len()
    }

    fn window(&self, time: u64) -> u64 {
        time / self.inner.config.window_s.max(1)
    }
}

impl Level1Provider for RemoteKeys {
    fn level1(
        &self,
        protocol: Protocol,
        src: IsdAsn,
        dst: IsdAsn,
        time: u64,
    ) -> Result<(Epoch, Key), ProviderError> {
        let id = (protocol, src, dst);
        let not_found = ProviderError::NotFound {
            src,
            dst,
            protocol,
            time,
        };
        let slot = (id, self.window(time));
        let mut state = self.inner.state();
        if let Some(hit) = state
            .fetched
            .get(&id)
            .and_then(|v| v.iter().find(|(e, _)| e.contains(time)))
        {
            return Ok(hit.clone());
        }
        if state.misses.get(&slot).is_some_and(|&retry| time < retry) {
            self.inner
                .counters
                .key_misses_remembered
                .fetch_add(1, Relaxed);
            return Err(not_found);
        }
        if state.pending.contains(&slot) {
            return Err(ProviderError::Pending { src, time });
        }
        match self.requests.try_send((id, time)) {
            Ok(()) => {
                state.pending.insert(slot);
                Err(ProviderError::Pending { src, time })
            }
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                self.inner
                    .counters
                    .key_fetches_refused
                    .fetch_add(1, Relaxed);
                Err(not_found)
            }
        }
    }
}

/// The fetcher: one blocking fetch at a time, at most `fetches_per_s` a second.
fn fetch_loop(inner: &Inner, provider: &dyn Level1Provider, rx: Receiver<(KeyId, u64)>) {
    let spacing = Duration::from_secs(1) / inner.config.fetches_per_s.max(1);
    let mut last: Option<Instant> = None;
    while let Ok(((protocol, src, dst), time)) = rx.recv() {
        if let Some(wait) = last.and_then(|l| spacing.checked_sub(l.elapsed())) {
            std::thread::sleep(wait);
        }
        last = Some(Instant::now());
        inner.counters.key_fetches.fetch_add(1, Relaxed);
        let result = provider.level1(protocol, src, dst, time);
        let id = (protocol, src, dst);
        let slot = (id, time / inner.config.window_s.max(1));
        let mut state = inner.state();
        state.pending.remove(&slot);
        match result {
            Ok((epoch, key)) => {
                let kept = state.fetched.entry(id).or_default();
                kept.retain(|(e, _)| *e != epoch);
                kept.push((epoch, key));
                kept.sort_by_key(|(e, _)| std::cmp::Reverse(e.begin));
                kept.truncate(EPOCHS_KEPT);
            }
            Err(_) => {
                inner.counters.key_fetch_failures.fetch_add(1, Relaxed);
                if state.misses.len() >= MAX_REMEMBERED_MISSES {
                    state.misses.clear();
                }
                let retry = time.saturating_add(inner.config.miss_ttl_s);
                state.misses.insert(slot, retry);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    /// A provider that knows one AS's key and takes `delay` per call, counting calls.
    struct Slow {
        known: IsdAsn,
        delay: Duration,
        calls: AtomicUsize,
        calls_at: Mutex<Vec<Instant>>,
    }

    impl Level1Provider for Slow {
        fn level1(
            &self,
            protocol: Protocol,
            src: IsdAsn,
            dst: IsdAsn,
            time: u64,
        ) -> Result<(Epoch, Key), ProviderError> {
            self.calls.fetch_add(1, Relaxed);
            self.calls_at.lock().unwrap().push(Instant::now());
            std::thread::sleep(self.delay);
            if src == self.known {
                let begin = (time / 3600 * 3600) as u32;
                Ok((
                    Epoch::new(begin, begin + 3600).unwrap(),
                    Key::from_bytes([7; 16]),
                ))
            } else {
                Err(ProviderError::NotFound {
                    src,
                    dst,
                    protocol,
                    time,
                })
            }
        }
    }

    fn ia(s: &str) -> IsdAsn {
        s.parse().unwrap()
    }

    fn wait_idle(r: &RemoteKeys) {
        let start = Instant::now();
        while r.pending() > 0 {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "fetch never ended"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    fn lookups_never_block_and_each_key_is_fetched_once_per_window() {
        let slow = Arc::new(Slow {
            known: ia("1-ff00:0:b"),
            delay: Duration::from_secs(1),
            calls: AtomicUsize::new(0),
            calls_at: Mutex::default(),
        });
        let counters = Arc::new(Counters::default());
        let r =
            RemoteKeys::spawn(slow.clone(), RemoteKeysConfig::default(), counters.clone()).unwrap();
        let (b, x, me) = (ia("1-ff00:0:b"), ia("1-ff00:0:99"), ia("1-ff00:0:a"));
        let t = 1_763_800_000;
        let started = Instant::now();
        for k in 0..100 {
            for src in [b, x] {
                let e = r.level1(Protocol::IDINT, src, me, t + k % 3).unwrap_err();
                assert!(matches!(e, ProviderError::Pending { .. }), "{e}");
            }
        }
        assert!(
            started.elapsed() < Duration::from_millis(200),
            "a lookup blocked"
        );
        wait_idle(&r);
        assert_eq!(slow.calls.load(Relaxed), 2, "one fetch per key and window");
        // The fetched key is served; the failed one is a remembered miss (no new fetch).
        assert!(r.level1(Protocol::IDINT, b, me, t).is_ok());
        for _ in 0..50 {
            let e = r.level1(Protocol::IDINT, x, me, t + 1).unwrap_err();
            assert!(matches!(e, ProviderError::NotFound { .. }), "{e}");
        }
        assert_eq!(slow.calls.load(Relaxed), 2);
        assert_eq!(counters.key_misses_remembered.load(Relaxed), 50);
        assert_eq!(counters.key_fetch_failures.load(Relaxed), 1);
        // Once the miss has aged out, the key is asked for again.
        let later = t + RemoteKeysConfig::default().miss_ttl_s;
        assert!(matches!(
            r.level1(Protocol::IDINT, x, me, later),
            Err(ProviderError::Pending { .. })
        ));
        wait_idle(&r);
        assert_eq!(slow.calls.load(Relaxed), 3);
    }

    #[test]
    fn a_full_fetch_queue_refuses_at_once_and_fetches_are_rate_limited() {
        let slow = Arc::new(Slow {
            known: ia("1-ff00:0:b"),
            delay: Duration::ZERO,
            calls: AtomicUsize::new(0),
            calls_at: Mutex::default(),
        });
        let config = RemoteKeysConfig {
            queue: 2,
            fetches_per_s: 10,
            ..RemoteKeysConfig::default()
        };
        let counters = Arc::new(Counters::default());
        let r = RemoteKeys::spawn(slow.clone(), config, counters.clone()).unwrap();
        let me = ia("1-ff00:0:a");
        let t = 1_763_800_000;
        let mut refused = 0;
        for n in 0..20u64 {
            let src = IsdAsn::from_u64((1 << 48) | (0x100 + n));
            if let Err(ProviderError::NotFound { .. }) = r.level1(Protocol::IDINT, src, me, t) {
                refused += 1;
            }
        }
        // The fetcher holds one, two wait, the rest are refused (a few more may get in if
        // this loop is slower than the fetch spacing on a loaded machine).
        assert!(refused >= 12, "{refused} refused");
        assert_eq!(counters.key_fetches_refused.load(Relaxed), refused);
        wait_idle(&r);
        let calls = slow.calls_at.lock().unwrap().clone();
        assert_eq!(calls.len() as u64, 20 - refused);
        // 10 per second: consecutive fetches start at least 100 ms apart.
        for w in calls.windows(2) {
            assert!(
                w[1] - w[0] >= Duration::from_millis(99),
                "{:?}",
                w[1] - w[0]
            );
        }
    }
}
