//! Owned mbufs and an mbuf with its writable room located once.

use core::ptr::NonNull;

use dpdk_sys as sys;

/// An owned packet buffer; freed back to its pool on drop.
///
/// Invariants: the mbuf is exclusively ours (reference count 1, a direct buffer from a pool
/// alloc, an rx burst or a ring hand-over) and belongs to a [`crate::Mempool`], which lives
/// for the process, so it cannot outlive its pool. It can move to another thread (`Send`);
/// it is not `Sync` (nothing needs to share one).
///
/// ```compile_fail,E0277
/// fn needs_sync<T: Sync>() {}
/// needs_sync::<dpdk::Mbuf>();
/// ```
#[repr(transparent)]
#[derive(Debug)]
pub struct Mbuf {
    ptr: NonNull<sys::rte_mbuf>,
}

// SAFETY: an mbuf we own exclusively can move between threads (DPDK frees into the pool from
// any thread).
unsafe impl Send for Mbuf {}

impl Mbuf {
    /// Takes ownership of `ptr`.
    ///
    /// # Safety
    ///
    /// `ptr` is a valid mbuf of a process-lifetime pool, owned by nobody else (no other
    /// `Mbuf` or DPDK structure refers to it).
    #[inline(always)]
    pub(crate) unsafe fn from_raw(ptr: NonNull<sys::rte_mbuf>) -> Mbuf {
        Mbuf { ptr }
    }

    /// Gives up ownership: the caller frees or hands over the mbuf.
    #[inline(always)]
    pub(crate) fn into_raw(self) -> *mut sys::rte_mbuf {
        let p = self.ptr.as_ptr();
        core::mem::forget(self);
        p
    }

    #[inline(always)]
    fn raw(&self) -> *mut sys::rte_mbuf {
        self.ptr.as_ptr()
    }

    /// Bytes of packet data (all segments).
    #[inline]
    pub fn pkt_len(&self) -> usize {
        // SAFETY: valid owned mbuf.
        unsafe { (*self.raw()).pkt_len as usize }
    }

    /// Number of segments.
    #[inline]
    pub fn segments(&self) -> u16 {
        // SAFETY: valid owned mbuf.
        unsafe { (*self.raw()).nb_segs }
    }

    /// Port the mbuf was received on.
    #[inline]
    pub fn port(&self) -> u16 {
        // SAFETY: valid owned mbuf.
        unsafe { (*self.raw()).port }
    }

    /// The data of the first segment.
    #[inline]
    pub fn data(&self) -> &[u8] {
        // SAFETY: we own the mbuf; the slice borrows `self`.
        unsafe { sys::pktmbuf_data(self.raw()) }
    }

    /// The data of the first segment, writable.
    #[inline]
    pub fn data_mut(&mut self) -> &mut [u8] {
        // SAFETY: we own the mbuf exclusively (refcount 1, direct buffer from rx or alloc);
        // the slice borrows `self` mutably.
        unsafe { sys::pktmbuf_data_mut(self.raw()) }
    }

    /// The buffer from `offset` bytes into the data up to the end of the buffer (data plus
    /// tail room) of a single-segment mbuf; `None` for chained mbufs or a too large offset.
    #[inline]
    pub fn room_mut(&mut self, offset: usize) -> Option<&mut [u8]> {
        let m = self.raw();
        // SAFETY: we own the mbuf exclusively; `data_off + offset .. buf_len` lies inside the
        // buffer (checked); the slice borrows `self` mutably.
        unsafe {
            if (*m).nb_segs != 1 {
                return None;
            }
            let start = usize::from((*m).data_off) + offset;
            let end = usize::from((*m).buf_len);
            if start > end {
                return None;
            }
            Some(core::slice::from_raw_parts_mut(
                (*m).buf_addr.cast::<u8>().add(start),
                end - start,
            ))
        }
    }

    /// The mbuf with its room from `offset` (see [`Self::room_mut`]) located once, for a
    /// packet whose buffer is asked for many times; the mbuf back if it has no such room.
    #[inline]
    pub fn with_room(mut self, offset: usize) -> Result<RoomMbuf, Mbuf> {
        let Some(r) = self.room_mut(offset) else {
            return Err(self);
        };
        let (room, len) = (NonNull::from(&mut *r).cast::<u8>(), r.len());
        Ok(RoomMbuf { m: self, room, len })
    }

    /// Sets the data length of a single-segment mbuf (`false` if it does not fit or the mbuf
    /// is chained).
    #[inline]
    pub fn set_len(&mut self, len: usize) -> bool {
        let m = self.raw();
        // SAFETY: owned mbuf; the new length is checked against the buffer.
        unsafe {
            if (*m).nb_segs != 1 || usize::from((*m).data_off) + len > usize::from((*m).buf_len) {
                return false;
            }
            (*m).data_len = len as u16;
            (*m).pkt_len = len as u32;
        }
        true
    }

    /// Appends `n` bytes at the end and returns them (`None` if the tail room is short).
    #[inline]
    pub fn append(&mut self, n: usize) -> Option<&mut [u8]> {
        let n16 = u16::try_from(n).ok()?;
        // SAFETY: owned mbuf; DPDK checks the tail room and returns null if it is short.
        let p = unsafe { sys::rte_pktmbuf_append(self.raw(), n16) }.cast::<u8>();
        if p.is_null() {
            return None;
        }
        // SAFETY: `p .. p + n` was just added to the mbuf's data; borrows `self`.
        Some(unsafe { core::slice::from_raw_parts_mut(p, n) })
    }

    /// Prepends `n` bytes in the head room (`false` if it is short).
    #[inline]
    pub fn prepend(&mut self, n: u16) -> bool {
        // SAFETY: owned mbuf; DPDK checks the head room.
        !unsafe { sys::rte_pktmbuf_prepend(self.raw(), n) }.is_null()
    }

    /// Removes `n` bytes from the start (`false` if the first segment is shorter).
    #[inline]
    pub fn adj(&mut self, n: u16) -> bool {
        // SAFETY: owned mbuf; DPDK checks the length.
        !unsafe { sys::rte_pktmbuf_adj(self.raw(), n) }.is_null()
    }

    /// Removes `n` bytes from the end (`false` if the last segment is shorter).
    #[inline]
    pub fn trim(&mut self, n: u16) -> bool {
        // SAFETY: owned mbuf; DPDK checks the length.
        unsafe { sys::rte_pktmbuf_trim(self.raw(), n) == 0 }
    }

    /// Head room in bytes.
    #[inline]
    pub fn headroom(&self) -> u16 {
        // SAFETY: owned mbuf.
        unsafe { sys::rte_pktmbuf_headroom(self.raw()) }
    }

    /// Tail room of the last segment in bytes.
    #[inline]
    pub fn tailroom(&self) -> u16 {
        // SAFETY: owned mbuf.
        unsafe { sys::rte_pktmbuf_tailroom(self.raw()) }
    }
}

impl Drop for Mbuf {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: we own the mbuf; it is not used after this.
        unsafe { sys::rte_pktmbuf_free(self.raw()) }
    }
}

/// An owned single-segment mbuf whose room from a fixed offset (see [`Mbuf::room_mut`]) was
/// located once: [`RoomMbuf::room`] then costs no reads of the mbuf header (the header's cache
/// line may be gone by the time the packet is processed).
#[derive(Debug)]
pub struct RoomMbuf {
    m: Mbuf,
    room: NonNull<u8>,
    len: usize,
}

// SAFETY: as `Mbuf`: the mbuf and the room it points into are owned exclusively.
unsafe impl Send for RoomMbuf {}

impl RoomMbuf {
    /// The room, writable.
    #[inline]
    pub fn room(&mut self) -> &mut [u8] {
        // SAFETY: `room .. room + len` was the room of `m` when located, and `m`, owned
        // exclusively, has not changed since (only `into_mbuf` gives access to it); the slice
        // borrows `self` mutably.
        unsafe { core::slice::from_raw_parts_mut(self.room.as_ptr(), self.len) }
    }

    /// The mbuf again (for changing its data or sending it).
    #[inline]
    pub fn into_mbuf(self) -> Mbuf {
        self.m
    }
}
