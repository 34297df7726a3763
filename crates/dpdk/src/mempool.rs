//! Packet buffer pools that live for the rest of the process.

use core::ptr::NonNull;
use std::ffi::CString;

use dpdk_sys as sys;

use crate::eal::Eal;
use crate::error::DpdkError;
use crate::mbuf::Mbuf;

/// Data room of the mbufs of a [`Mempool`] (DPDK's default: 2048 bytes plus headroom).
pub const MBUF_BUF_SIZE: u16 = sys::RTE_MBUF_DEFAULT_BUF_SIZE as u16;

/// A pool of packet buffers (`rte_pktmbuf_pool_create`).
///
/// Invariant: a pool is never freed. [`Mempool::new`] leaks it and hands out a
/// `&'static Mempool`, so every [`Mbuf`] taken from it (and every mbuf a port receives into
/// it) can never outlive it, whatever thread the mbuf ends up on. (DPDK cannot free a pool
/// while mbufs are out anyway; a router creates its pools once at start-up.) The pool
/// itself is multi-producer/multi-consumer safe, so the handle is `Send` and `Sync`.
///
/// ```compile_fail,E0507
/// // A pool cannot be taken out of its `&'static` handle, hence never dropped.
/// fn f(eal: &dpdk::Eal) {
///     let pool: &'static dpdk::Mempool = dpdk::Mempool::new(eal, "p", 511, 0).unwrap();
///     drop(*pool);
/// }
/// ```
#[derive(Debug)]
pub struct Mempool {
    ptr: NonNull<sys::rte_mempool>,
}

// SAFETY: a DPDK pktmbuf pool is multi-producer/multi-consumer safe (alloc and free from any
// thread; threads without an lcore id bypass the per-lcore caches); the handle is a pointer to
// a pool that is never freed.
unsafe impl Send for Mempool {}
// SAFETY: as above; every operation through `&Mempool` is thread safe.
unsafe impl Sync for Mempool {}

impl Mempool {
    /// Creates a pool of `n` mbufs of [`MBUF_BUF_SIZE`] with a per-lcore cache of `cache`,
    /// which lives for the rest of the process.
    pub fn new(eal: &Eal, name: &str, n: u32, cache: u32) -> Result<&'static Mempool, DpdkError> {
        Self::on_socket(eal, name, n, cache, None)
    }

    /// A pool as [`Mempool::new`] in the memory of NUMA socket `socket` (that of the NIC it
    /// serves, so that the NIC's DMA and the workers stay on one node; `None`: any socket).
    pub fn on_socket(
        _eal: &Eal,
        name: &str,
        n: u32,
        cache: u32,
        socket: Option<u32>,
    ) -> Result<&'static Mempool, DpdkError> {
        let c = CString::new(name)
            .map_err(|_| DpdkError::other("mempool", format!("NUL in {name:?}")))?;
        let socket = socket
            .and_then(|s| i32::try_from(s).ok())
            .unwrap_or(sys::SOCKET_ID_ANY);
        // SAFETY: EAL is initialised (we hold an `Eal`); valid name; sizes and the socket id
        // are checked by DPDK.
        let p =
            unsafe { sys::rte_pktmbuf_pool_create(c.as_ptr(), n, cache, 0, MBUF_BUF_SIZE, socket) };
        let ptr = NonNull::new(p)
            .ok_or_else(|| DpdkError::from_errno(format!("mempool {name:?} of {n} mbufs")))?;
        Ok(Box::leak(Box::new(Mempool { ptr })))
    }

    /// The raw pool, for queue setup.
    pub(crate) fn raw(&self) -> *mut sys::rte_mempool {
        self.ptr.as_ptr()
    }

    /// Mbufs currently free in the pool.
    pub fn available(&self) -> u32 {
        // SAFETY: the pool is never freed.
        unsafe { sys::rte_mempool_avail_count(self.ptr.as_ptr()) }
    }

    /// Mbufs currently taken from the pool.
    pub fn in_use(&self) -> u32 {
        // SAFETY: the pool is never freed.
        unsafe { sys::rte_mempool_in_use_count(self.ptr.as_ptr()) }
    }

    /// Takes one empty mbuf (`None` if the pool is exhausted).
    #[inline]
    pub fn alloc(&self) -> Option<Mbuf> {
        // SAFETY: the pool is never freed and thread safe; the returned mbuf (if any) is
        // exclusively ours, with a reference count of 1.
        let p = unsafe { sys::rte_pktmbuf_alloc(self.ptr.as_ptr()) };
        // SAFETY: a non-null result is a fresh mbuf of a process-lifetime pool.
        NonNull::new(p).map(|p| unsafe { Mbuf::from_raw(p) })
    }

    /// An mbuf holding a copy of `data` (`None` if the pool is empty or `data` does not fit).
    #[inline]
    pub fn alloc_with(&self, data: &[u8]) -> Option<Mbuf> {
        let mut m = self.alloc()?;
        m.append(data.len())?.copy_from_slice(data);
        Some(m)
    }
}
