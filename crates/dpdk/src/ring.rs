//! Single-producer/single-consumer rings of mbufs (`rte_ring`) between two threads.

use core::cell::Cell;
use core::ffi::c_void;
use core::marker::PhantomData;
use core::ptr::{self, NonNull};
use std::ffi::CString;
use std::sync::Arc;

use dpdk_sys as sys;

use crate::burst::{MAX_BURST, MbufBurst};
use crate::eal::Eal;
use crate::error::DpdkError;

/// The ring both ends share; freed (with the mbufs still in it) when both are gone.
#[derive(Debug)]
struct Shared {
    ptr: NonNull<sys::rte_ring>,
}

// SAFETY: the ring pointer is used by one producer and one consumer (each end is a unique,
// non-`Sync` handle), by `count` (thread safe) and by the drop, which runs once both ends are
// gone.
unsafe impl Send for Shared {}
// SAFETY: as above: shared access through `&Shared` is limited to the end handles' own
// operations and the thread-safe count.
unsafe impl Sync for Shared {}

impl Shared {
    fn count(&self) -> u32 {
        // SAFETY: live ring; reading the count is thread safe.
        unsafe { sys::rte_ring_count(self.ptr.as_ptr()) }
    }

    /// Moves mbufs from the ring into the burst's free room.
    ///
    /// # Safety
    ///
    /// The caller is the ring's only consumer for the duration of the call.
    #[inline(always)]
    unsafe fn dequeue(&self, burst: &mut MbufBurst) -> usize {
        let room = (MAX_BURST - burst.len) as u32;
        // SAFETY: single consumer (caller's contract); `room` free slots after `len`;
        // dequeued mbufs become owned by the burst.
        let n = unsafe {
            sys::rte_ring_dequeue_burst(
                self.ptr.as_ptr(),
                burst.ptrs.as_mut_ptr().add(burst.len).cast::<*mut c_void>(),
                room,
                ptr::null_mut(),
            )
        } as usize;
        burst.len += n;
        n
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        let mut b = MbufBurst::new();
        // SAFETY: both ends are gone (each held an `Arc` of this): we are the only consumer.
        while unsafe { self.dequeue(&mut b) } > 0 {
            b.clear();
        }
        // SAFETY: our ring, now empty and no longer used.
        unsafe { sys::rte_ring_free(self.ptr.as_ptr()) }
    }
}

/// Creates a single-producer/single-consumer ring with room for `size - 1` mbufs (`size` a
/// power of two) and returns its two ends. Mbufs still in the ring when both ends are dropped
/// are freed.
pub fn mbuf_ring(_eal: &Eal, name: &str, size: u32) -> Result<(Producer, Consumer), DpdkError> {
    let c = CString::new(name).map_err(|_| DpdkError::other("ring", format!("NUL in {name:?}")))?;
    // SAFETY: EAL is initialised (we hold an `Eal`); valid name; DPDK checks the size.
    let p = unsafe {
        sys::rte_ring_create(
            c.as_ptr(),
            size,
            sys::SOCKET_ID_ANY,
            sys::RING_F_SP_ENQ | sys::RING_F_SC_DEQ,
        )
    };
    let ptr = NonNull::new(p).ok_or_else(|| DpdkError::from_errno(format!("ring {name:?}")))?;
    let shared = Arc::new(Shared { ptr });
    Ok((
        Producer {
            ring: shared.clone(),
            _not_sync: PhantomData,
        },
        Consumer {
            ring: shared,
            _not_sync: PhantomData,
        },
    ))
}

/// The enqueueing end of an SP/SC ring (see [`mbuf_ring`]).
///
/// Invariant: the only producer of its ring: one per ring, `Send` (to move to its thread)
/// but neither `Clone` nor `Sync`, and [`Producer::enqueue`] takes `&mut self`.
///
/// ```compile_fail,E0599
/// fn f(p: dpdk::Producer) { let _ = p.clone(); }
/// ```
///
/// ```compile_fail,E0277
/// fn needs_sync<T: Sync>() {}
/// needs_sync::<dpdk::Producer>();
/// ```
#[derive(Debug)]
pub struct Producer {
    ring: Arc<Shared>,
    /// `Send` but not `Sync`.
    _not_sync: PhantomData<Cell<()>>,
}

impl Producer {
    /// Moves the burst's mbufs into the ring; those that do not fit stay in the burst.
    #[inline]
    pub fn enqueue(&mut self, burst: &mut MbufBurst) -> usize {
        if burst.len == 0 {
            return 0;
        }
        // SAFETY: this handle is the ring's only producer (unique, not `Sync`, `&mut self`);
        // the first `len` entries are owned mbufs whose ownership passes to the ring for the
        // `n` enqueued.
        let n = unsafe {
            sys::rte_ring_enqueue_burst(
                self.ring.ptr.as_ptr(),
                burst.ptrs.as_ptr().cast::<*mut c_void>(),
                burst.len as u32,
                ptr::null_mut(),
            )
        } as usize;
        burst.ptrs.copy_within(n..burst.len, 0);
        burst.len -= n;
        n
    }

    /// Mbufs waiting in the ring.
    #[inline]
    pub fn count(&self) -> u32 {
        self.ring.count()
    }
}

/// The dequeueing end of an SP/SC ring (see [`mbuf_ring`]).
///
/// Invariant: the only consumer of its ring: one per ring, `Send` (to move to its thread)
/// but neither `Clone` nor `Sync`, and [`Consumer::dequeue`] takes `&mut self`.
///
/// ```compile_fail,E0599
/// fn f(c: dpdk::Consumer) { let _ = c.clone(); }
/// ```
///
/// ```compile_fail,E0277
/// fn needs_sync<T: Sync>() {}
/// needs_sync::<dpdk::Consumer>();
/// ```
#[derive(Debug)]
pub struct Consumer {
    ring: Arc<Shared>,
    /// `Send` but not `Sync`.
    _not_sync: PhantomData<Cell<()>>,
}

impl Consumer {
    /// Moves mbufs from the ring into the burst's free room; returns how many.
    #[inline]
    pub fn dequeue(&mut self, burst: &mut MbufBurst) -> usize {
        // SAFETY: this handle is the ring's only consumer (unique, not `Sync`, `&mut self`).
        unsafe { self.ring.dequeue(burst) }
    }

    /// Mbufs waiting in the ring.
    #[inline]
    pub fn count(&self) -> u32 {
        self.ring.count()
    }
}
