//! Per-queue rx/tx handles of a started port: the packet path's bursts.

use core::cell::Cell;
use core::marker::PhantomData;
use std::sync::Arc;

use dpdk_sys as sys;

use crate::burst::{MAX_BURST, MbufBurst};
use crate::port::Started;

/// One rx queue of a started port.
///
/// Invariant: exactly one handle per queue exists ([`crate::Port::rx_queue`] hands each out once),
/// and it is used by one thread at a time: it is `Send` (to move to its lcore once) but
/// neither `Clone` nor `Sync`, so even the read-only [`RxQueue::depth`] (a driver call that
/// must not run in parallel with the queue's polling) happens on the polling thread. It keeps
/// the port started.
///
/// ```compile_fail,E0599
/// fn f(q: dpdk::RxQueue) { let _ = q.clone(); }
/// ```
///
/// ```compile_fail,E0277
/// fn needs_sync<T: Sync>() {}
/// needs_sync::<dpdk::RxQueue>();
/// ```
#[derive(Debug)]
pub struct RxQueue {
    port: u16,
    queue: u16,
    _started: Arc<Started>,
    /// `Send` but not `Sync`.
    _not_sync: PhantomData<Cell<()>>,
}

impl RxQueue {
    /// The handle of rx queue `queue` of the started port.
    pub(crate) fn new(started: Arc<Started>, queue: u16) -> Self {
        RxQueue {
            port: started.id,
            queue,
            _started: started,
            _not_sync: PhantomData,
        }
    }

    /// Port id.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Queue index.
    pub fn queue(&self) -> u16 {
        self.queue
    }

    /// Packets waiting in the queue now (descriptors filled by the NIC and not yet polled);
    /// `None` if the driver cannot tell (virtual devices such as `net_pcap` and `net_null`
    /// do not implement the count).
    #[inline]
    pub fn depth(&self) -> Option<u32> {
        // SAFETY: the port is started and kept so by `_started`, the queue index was set up;
        // the driver only reads its descriptor ring, and it runs on the queue's only polling
        // thread (the handle is unique and not `Sync`, and polling needs `&mut self`).
        let n = unsafe { sys::rte_eth_rx_queue_count(self.port, self.queue) };
        u32::try_from(n).ok()
    }

    /// Receives up to the free room of `burst`; returns how many arrived.
    #[inline]
    pub fn rx_burst(&mut self, burst: &mut MbufBurst) -> usize {
        let room = (MAX_BURST - burst.len) as u16;
        if room == 0 {
            return 0;
        }
        // SAFETY: this handle is the only poller of the queue (handed out once, not `Sync`);
        // the array has `room` free slots after `len`; received mbufs (from the queue's
        // process-lifetime pool) become owned by the burst.
        let n = unsafe {
            sys::rte_eth_rx_burst(
                self.port,
                self.queue,
                burst.ptrs.as_mut_ptr().add(burst.len),
                room,
            )
        };
        burst.len += usize::from(n);
        usize::from(n)
    }
}

/// One tx queue of a started port.
///
/// Invariant: as [`RxQueue`]: one handle per queue, `Send` but neither `Clone` nor `Sync`, so
/// one thread at a time sends on it; it keeps the port started.
///
/// ```compile_fail,E0599
/// fn f(q: dpdk::TxQueue) { let _ = q.clone(); }
/// ```
///
/// ```compile_fail,E0277
/// fn needs_sync<T: Sync>() {}
/// needs_sync::<dpdk::TxQueue>();
/// ```
#[derive(Debug)]
pub struct TxQueue {
    port: u16,
    queue: u16,
    /// Descriptors of the queue's ring.
    desc: u16,
    _started: Arc<Started>,
    /// `Send` but not `Sync`.
    _not_sync: PhantomData<Cell<()>>,
}

impl TxQueue {
    /// The handle of tx queue `queue` of the started port.
    pub(crate) fn new(started: Arc<Started>, queue: u16, desc: u16) -> Self {
        TxQueue {
            port: started.id,
            queue,
            desc,
            _started: started,
            _not_sync: PhantomData,
        }
    }

    /// Port id.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The status of the descriptor `offset` places after the one the next packet takes.
    #[inline]
    fn status(&self, offset: u16) -> i32 {
        // SAFETY: the port is started and kept so by `_started`, the queue index was set up;
        // the driver only reads the queue's descriptor ring, and this runs on the queue's
        // only sending thread (the handle is unique, not `Sync`; `&self` of that thread).
        unsafe { sys::rte_eth_tx_descriptor_status(self.port, self.queue, offset) }
    }

    /// Packets waiting in the queue now: descriptors handed to the NIC and not yet sent
    /// (`RTE_ETH_TX_DESC_FULL`), found by a binary search over the ring from the next free
    /// descriptor (the oldest are sent first, so the waiting ones are the last before it;
    /// drivers report in steps of their free threshold). `None` if the driver cannot tell
    /// (virtual devices such as `net_pcap`, `net_null`, `net_ring` and `net_af_packet` have
    /// no descriptor status).
    pub fn depth(&self) -> Option<u32> {
        let full = sys::RTE_ETH_TX_DESC_FULL as i32;
        let last = self.desc.checked_sub(1)?;
        let s = self.status(last);
        if s < 0 {
            return None;
        }
        if s != full {
            return Some(0);
        }
        // The smallest offset that is FULL: every one from it to `last` is waiting.
        let (mut lo, mut hi) = (0u16, last);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.status(mid) == full {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        Some(u32::from(self.desc - lo))
    }

    /// Sends the burst's mbufs. The sent ones leave the burst (the driver owns them); the
    /// unsent ones stay in it, in order, still owned by the caller. Returns how many were sent.
    #[inline]
    pub fn tx_burst(&mut self, burst: &mut MbufBurst) -> usize {
        if burst.len == 0 {
            return 0;
        }
        // SAFETY: this handle is the only user of the queue (handed out once, not `Sync`); the
        // first `len` entries are owned mbufs; DPDK takes ownership of the first `n` it
        // returns, the rest stay owned by the burst.
        let n = usize::from(unsafe {
            sys::rte_eth_tx_burst(
                self.port,
                self.queue,
                burst.ptrs.as_mut_ptr(),
                burst.len as u16,
            )
        });
        burst.ptrs.copy_within(n..burst.len, 0);
        burst.len -= n;
        n
    }
}
