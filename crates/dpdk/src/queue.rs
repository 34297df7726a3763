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
    _started: Arc<Started>,
    /// `Send` but not `Sync`.
    _not_sync: PhantomData<Cell<()>>,
}

impl TxQueue {
    /// The handle of tx queue `queue` of the started port.
    pub(crate) fn new(started: Arc<Started>, queue: u16) -> Self {
        TxQueue {
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
