//! Fixed-size bursts of owned mbufs and their draining iterator (with prefetching).

use core::ptr::{self, NonNull};

use dpdk_sys as sys;

use crate::cpu::prefetch_line;
use crate::mbuf::Mbuf;

/// Largest burst an [`MbufBurst`] holds.
pub const MAX_BURST: usize = 64;

/// Up to [`MAX_BURST`] owned mbufs in a fixed array (no allocation per burst). Mbufs still in
/// the burst when it is dropped are freed.
///
/// Invariant: the first `len` entries are non-null mbufs owned by the burst (see [`Mbuf`]).
/// A burst can move between threads with its mbufs (`Send`); it is not `Sync`.
pub struct MbufBurst {
    pub(crate) ptrs: [*mut sys::rte_mbuf; MAX_BURST],
    pub(crate) len: usize,
}

// SAFETY: the burst owns its mbufs exclusively (see `Mbuf`).
unsafe impl Send for MbufBurst {}

impl Default for MbufBurst {
    #[inline]
    fn default() -> Self {
        MbufBurst {
            ptrs: [ptr::null_mut(); MAX_BURST],
            len: 0,
        }
    }
}

impl core::fmt::Debug for MbufBurst {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("MbufBurst").field("len", &self.len).finish()
    }
}

impl MbufBurst {
    /// An empty burst.
    #[inline]
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of mbufs held.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the burst is empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether no more mbufs fit.
    #[inline]
    pub fn is_full(&self) -> bool {
        self.len == MAX_BURST
    }

    /// Adds an mbuf; gives it back if the burst is full.
    #[inline]
    pub fn push(&mut self, m: Mbuf) -> Result<(), Mbuf> {
        if self.len == MAX_BURST {
            return Err(m);
        }
        self.ptrs[self.len] = m.into_raw();
        self.len += 1;
        Ok(())
    }

    /// The mbufs, mutably.
    #[inline]
    pub fn as_mut_slice(&mut self) -> &mut [Mbuf] {
        // SAFETY: `Mbuf` is a transparent non-null pointer; the first `len` entries are
        // non-null owned mbufs; the slice borrows the burst mutably.
        unsafe { core::slice::from_raw_parts_mut(self.ptrs.as_mut_ptr().cast::<Mbuf>(), self.len) }
    }

    /// Takes every mbuf out, in order; the burst is empty afterwards (mbufs the iterator did
    /// not yield are freed when it is dropped).
    #[inline]
    pub fn drain(&mut self) -> Drain<'_> {
        let len = self.len;
        self.len = 0;
        Drain {
            burst: self,
            next: 0,
            len,
            ahead: 0,
        }
    }

    /// As [`Self::drain`], and while it goes the header of the mbuf `2 * ahead` places beyond
    /// each one yielded and the first three cache lines of packet data of the one `ahead`
    /// places beyond are prefetched (the first ones before the first is yielded), so that
    /// reading a packet's headers does not wait on memory.
    #[inline]
    pub fn drain_prefetching(&mut self, ahead: usize) -> Drain<'_> {
        let len = self.len;
        self.len = 0;
        let d = Drain {
            burst: self,
            next: 0,
            len,
            ahead,
        };
        for i in 0..(2 * ahead).min(d.len) {
            d.prefetch_header(i);
        }
        for i in 0..ahead.min(d.len) {
            d.prefetch(i);
        }
        d
    }

    /// Frees every mbuf.
    #[inline]
    pub fn clear(&mut self) {
        self.drain();
    }
}

impl Drop for MbufBurst {
    #[inline]
    fn drop(&mut self) {
        self.clear();
    }
}

/// Iterator of [`MbufBurst::drain`].
pub struct Drain<'a> {
    burst: &'a mut MbufBurst,
    next: usize,
    len: usize,
    /// How far ahead packet data is prefetched (0: not at all).
    ahead: usize,
}

impl Drain<'_> {
    /// Prefetches the first cache line of the header of mbuf `i` (where its data address and
    /// lengths are), if it is still to come.
    #[inline(always)]
    fn prefetch_header(&self, i: usize) {
        if i < self.next || i >= self.len {
            return;
        }
        prefetch_line(self.burst.ptrs[i].cast::<u8>());
    }

    /// Prefetches the first three cache lines of the data of mbuf `i`, if it is still to come.
    #[inline(always)]
    fn prefetch(&self, i: usize) {
        if i < self.next || i >= self.len {
            return;
        }
        // SAFETY: entries below `len` not yielded yet are valid mbufs this burst owns, so
        // their header fields can be read.
        let data = unsafe { sys::pktmbuf_mtod(self.burst.ptrs[i]) };
        for line in 0..3 {
            prefetch_line(data.wrapping_add(64 * line));
        }
    }
}

impl Iterator for Drain<'_> {
    type Item = Mbuf;
    #[inline]
    fn next(&mut self) -> Option<Mbuf> {
        if self.next == self.len {
            return None;
        }
        if self.ahead != 0 {
            self.prefetch_header(self.next + 2 * self.ahead);
            self.prefetch(self.next + self.ahead);
        }
        let p = self.burst.ptrs[self.next];
        self.next += 1;
        // SAFETY: entries below `len` are non-null owned mbufs; each is yielded once (the
        // burst's `len` was reset when the drain began).
        Some(unsafe { Mbuf::from_raw(NonNull::new_unchecked(p)) })
    }
}

impl Drop for Drain<'_> {
    #[inline]
    fn drop(&mut self) {
        for m in self.by_ref() {
            drop(m);
        }
    }
}
