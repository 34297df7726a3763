//! Safe layer over `dpdk-sys`: EAL (once per process), mempools, ports with probed
//! capabilities, an owning mbuf type, rx/tx bursts that keep ownership of unsent mbufs right,
//! lcore launch that catches panics, the TSC, and stop signals.
//!
//! This is the only module of the crate with `unsafe` code; every block carries a
//! `// SAFETY:` comment.
#![allow(unsafe_code)]

use core::ffi::{CStr, c_char, c_int, c_void};
use core::marker::PhantomData;
use core::ptr::{self, NonNull};
use std::ffi::CString;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use dpdk_sys as sys;

/// Largest burst an [`MbufBurst`] holds.
pub const MAX_BURST: usize = 64;

/// Data room of the router's mbufs (DPDK's default: 2048 bytes plus headroom).
pub const MBUF_BUF_SIZE: u16 = sys::RTE_MBUF_DEFAULT_BUF_SIZE as u16;

/// A failed DPDK call: what was attempted, the error number and DPDK's text for it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{op}: {text} (error {code})")]
pub struct DpdkError {
    /// The operation that failed.
    pub op: String,
    /// Positive errno value (from `rte_errno` or the negated return value).
    pub code: i32,
    /// `rte_strerror(code)`.
    pub text: String,
}

impl DpdkError {
    /// An error from an explicit error number.
    pub fn from_code(op: impl Into<String>, code: i32) -> Self {
        let code = code.abs();
        // SAFETY: rte_strerror accepts any value and returns a NUL-terminated string that
        // stays valid at least until the next call on this thread; we copy it at once.
        let text = unsafe { CStr::from_ptr(sys::rte_strerror(code)) }
            .to_string_lossy()
            .into_owned();
        DpdkError {
            op: op.into(),
            code,
            text,
        }
    }

    /// An error from the calling thread's `rte_errno`.
    pub fn from_errno(op: impl Into<String>) -> Self {
        // SAFETY: reads this thread's rte_errno.
        let code = unsafe { sys::rust_rte_errno() };
        Self::from_code(op, code)
    }

    /// An error that DPDK did not number (a precondition checked on the Rust side).
    pub fn other(op: impl Into<String>, text: impl Into<String>) -> Self {
        DpdkError {
            op: op.into(),
            code: 0,
            text: text.into(),
        }
    }
}

/// Maps a DPDK `int` return (negative errno on failure) to a result.
fn check(op: impl FnOnce() -> String, ret: c_int) -> Result<c_int, DpdkError> {
    if ret < 0 {
        Err(DpdkError::from_code(op(), ret))
    } else {
        Ok(ret)
    }
}

static EAL_STARTED: AtomicBool = AtomicBool::new(false);

/// While alive, file descriptor 1 (stdout) refers to stderr. EAL prints its usage text on
/// stdout when it rejects its arguments; the router keeps stdout for its JSON summary.
struct StdoutToStderr {
    /// A duplicate of the original stdout, restored on drop.
    saved: c_int,
}

impl StdoutToStderr {
    /// Points stdout at stderr; `None` (nothing changed) if the descriptors cannot be copied.
    fn new() -> Option<Self> {
        use std::io::Write as _;
        let _ = std::io::stdout().flush();
        // SAFETY: dup only creates a new descriptor for fd 1; no memory is involved.
        let saved = unsafe { libc::dup(1) };
        if saved < 0 {
            return None;
        }
        // SAFETY: makes fd 1 a copy of fd 2; `saved` keeps the original open for the restore.
        if unsafe { libc::dup2(2, 1) } < 0 {
            // SAFETY: `saved` is our own descriptor, closed once.
            unsafe { libc::close(saved) };
            return None;
        }
        Some(StdoutToStderr { saved })
    }
}

impl Drop for StdoutToStderr {
    fn drop(&mut self) {
        // SAFETY: flushes every C stdio stream (a null argument means all) so what EAL wrote
        // through stdio lands on stderr; then puts the original stdout back on fd 1 and
        // closes our copy of it, which nothing else uses.
        unsafe {
            libc::fflush(ptr::null_mut());
            libc::dup2(self.saved, 1);
            libc::close(self.saved);
        }
    }
}

/// The initialised Environment Abstraction Layer. At most one exists per process (EAL cannot
/// be initialised twice); dropping it does not clean up, [`Eal::cleanup`] does.
#[derive(Debug)]
pub struct Eal {
    _private: (),
}

impl Eal {
    /// Initialises EAL with `args` (without the program name). Adds `-d <PMD_DIR>` so the
    /// driver plugins (`net_null`, `net_ring`, `net_pcap`, ...) load, unless `args` has a `-d`.
    /// Fails if EAL was initialised before in this process. What EAL prints on stdout while it
    /// initialises (its usage text, on bad arguments) goes to stderr.
    pub fn init(args: &[String]) -> Result<Eal, DpdkError> {
        if EAL_STARTED.swap(true, Ordering::SeqCst) {
            return Err(DpdkError::other(
                "rte_eal_init",
                "EAL is already initialised in this process",
            ));
        }
        let mut all: Vec<CString> = Vec::with_capacity(args.len() + 3);
        all.push(c"idint-router".to_owned());
        for a in args {
            all.push(
                CString::new(a.as_str())
                    .map_err(|_| DpdkError::other("rte_eal_init", format!("NUL in {a:?}")))?,
            );
        }
        if !args.iter().any(|a| a == "-d") {
            all.push(c"-d".to_owned());
            all.push(sys::PMD_DIR.to_owned());
        }
        // EAL may keep pointers into argv and permute it: hand it copies that live forever.
        let mut argv: Vec<*mut c_char> = all.into_iter().map(CString::into_raw).collect();
        let argc = c_int::try_from(argv.len())
            .map_err(|_| DpdkError::other("rte_eal_init", "too many arguments"))?;
        let redirect = StdoutToStderr::new();
        // SAFETY: argc/argv describe NUL-terminated strings leaked for the whole process; the
        // flag above makes this the only initialisation.
        let ret = unsafe { sys::rte_eal_init(argc, argv.as_mut_ptr()) };
        // Read rte_errno before anything else can change it.
        let failed = (ret < 0).then(|| DpdkError::from_errno("rte_eal_init"));
        drop(redirect);
        std::mem::forget(argv);
        if let Some(e) = failed {
            return Err(e);
        }
        Ok(Eal { _private: () })
    }

    /// TSC ticks per second (calibrated by EAL).
    pub fn tsc_hz(&self) -> u64 {
        // SAFETY: EAL is initialised.
        unsafe { sys::rte_get_tsc_hz() }
    }

    /// The main lcore (the thread that called [`Eal::init`]).
    pub fn main_lcore(&self) -> u32 {
        // SAFETY: EAL is initialised; reads its configuration.
        unsafe { sys::rte_get_main_lcore() }
    }

    /// The enabled worker lcores (every lcore of `-l` except the main one), ascending.
    pub fn worker_lcores(&self) -> Vec<u32> {
        let mut out = Vec::new();
        let mut i = u32::MAX;
        loop {
            // SAFETY: EAL is initialised; skip_main = 1, wrap = 0.
            i = unsafe { sys::rte_get_next_lcore(i, 1, 0) };
            if i >= sys::RTE_MAX_LCORE {
                return out;
            }
            out.push(i);
        }
    }

    /// Number of available ethdev ports.
    pub fn port_count(&self) -> u16 {
        // SAFETY: EAL is initialised.
        unsafe { sys::rte_eth_dev_count_avail() }
    }

    /// The port id of the device named `name` (e.g. `net_pcap0`, `0000:01:00.0`).
    pub fn port_by_name(&self, name: &str) -> Result<u16, DpdkError> {
        let c = CString::new(name)
            .map_err(|_| DpdkError::other("port lookup", format!("NUL in {name:?}")))?;
        let mut id = u16::MAX;
        // SAFETY: valid C string and out-pointer.
        let ret = unsafe { sys::rte_eth_dev_get_port_by_name(c.as_ptr(), &mut id) };
        check(|| format!("no DPDK port named {name:?}"), ret)?;
        Ok(id)
    }

    /// Releases EAL's resources. Every port must be closed and every mempool freed before.
    pub fn cleanup(self) -> Result<(), DpdkError> {
        // SAFETY: consuming `self` means no more EAL calls from safe code of this layer that
        // requires an `Eal`; callers close ports and pools first (documented).
        let ret = unsafe { sys::rte_eal_cleanup() };
        check(|| "rte_eal_cleanup".into(), ret).map(|_| ())
    }
}

/// Reads the time-stamp counter.
#[inline(always)]
pub fn rdtsc() -> u64 {
    // The instruction itself on x86-64 (what DPDK's `rte_rdtsc` is), so the packet path pays
    // no call into the wrapper library.
    #[cfg(target_arch = "x86_64")]
    // SAFETY: RDTSC has no preconditions and exists on every x86-64 CPU.
    let t = unsafe { core::arch::x86_64::_rdtsc() };
    #[cfg(not(target_arch = "x86_64"))]
    // SAFETY: reading the time-stamp counter has no preconditions.
    let t = unsafe { sys::rte_rdtsc() };
    t
}

/// The EAL lcore id of the calling thread (`u32::MAX` = not an EAL thread).
pub fn lcore_id() -> u32 {
    // SAFETY: reads a thread-local value.
    unsafe { sys::rte_lcore_id() }
}

/// A pool of packet buffers (`rte_pktmbuf_pool_create`). Freed on drop: drop it only after
/// the ports that receive into it are closed and all its mbufs are back.
#[derive(Debug)]
pub struct Mempool {
    ptr: NonNull<sys::rte_mempool>,
}

// SAFETY: a DPDK mempool is multi-producer/multi-consumer safe; the handle is a pointer.
unsafe impl Send for Mempool {}
// SAFETY: as above; all operations used through `&Mempool` are thread safe.
unsafe impl Sync for Mempool {}

impl Mempool {
    /// Creates a pool of `n` mbufs of [`MBUF_BUF_SIZE`] with a per-lcore cache of `cache`.
    pub fn new(_eal: &Eal, name: &str, n: u32, cache: u32) -> Result<Mempool, DpdkError> {
        let c = CString::new(name)
            .map_err(|_| DpdkError::other("mempool", format!("NUL in {name:?}")))?;
        // SAFETY: EAL is initialised (we hold an `Eal`); valid name; sizes are checked by DPDK.
        let p = unsafe {
            sys::rte_pktmbuf_pool_create(c.as_ptr(), n, cache, 0, MBUF_BUF_SIZE, sys::SOCKET_ID_ANY)
        };
        NonNull::new(p)
            .map(|ptr| Mempool { ptr })
            .ok_or_else(|| DpdkError::from_errno(format!("mempool {name:?} of {n} mbufs")))
    }

    /// Mbufs currently free in the pool.
    pub fn available(&self) -> u32 {
        // SAFETY: live pool.
        unsafe { sys::rte_mempool_avail_count(self.ptr.as_ptr()) }
    }

    /// Mbufs currently taken from the pool.
    pub fn in_use(&self) -> u32 {
        // SAFETY: live pool.
        unsafe { sys::rte_mempool_in_use_count(self.ptr.as_ptr()) }
    }

    /// Takes one empty mbuf (`None` if the pool is exhausted).
    pub fn alloc(&self) -> Option<Mbuf> {
        // SAFETY: live pool; the returned mbuf (if any) is exclusively ours.
        NonNull::new(unsafe { sys::rte_pktmbuf_alloc(self.ptr.as_ptr()) }).map(|ptr| Mbuf { ptr })
    }

    /// An mbuf holding a copy of `data` (`None` if the pool is empty or `data` does not fit).
    pub fn alloc_with(&self, data: &[u8]) -> Option<Mbuf> {
        let mut m = self.alloc()?;
        m.append(data.len())?.copy_from_slice(data);
        Some(m)
    }
}

impl Drop for Mempool {
    fn drop(&mut self) {
        // SAFETY: the pool is ours; by contract its users (ports, mbufs) are gone.
        unsafe { sys::rte_mempool_free(self.ptr.as_ptr()) }
    }
}

/// An owned packet buffer; freed back to its pool on drop.
#[repr(transparent)]
#[derive(Debug)]
pub struct Mbuf {
    ptr: NonNull<sys::rte_mbuf>,
}

// SAFETY: an mbuf we own exclusively can move between threads (DPDK frees into the pool from
// any thread).
unsafe impl Send for Mbuf {}

impl Mbuf {
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
    pub fn trim(&mut self, n: u16) -> bool {
        // SAFETY: owned mbuf; DPDK checks the length.
        unsafe { sys::rte_pktmbuf_trim(self.raw(), n) == 0 }
    }

    /// Head room in bytes.
    pub fn headroom(&self) -> u16 {
        // SAFETY: owned mbuf.
        unsafe { sys::rte_pktmbuf_headroom(self.raw()) }
    }

    /// Tail room of the last segment in bytes.
    pub fn tailroom(&self) -> u16 {
        // SAFETY: owned mbuf.
        unsafe { sys::rte_pktmbuf_tailroom(self.raw()) }
    }
}

impl Drop for Mbuf {
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

/// Up to [`MAX_BURST`] owned mbufs in a fixed array (no allocation per burst). Mbufs still in
/// the burst when it is dropped are freed.
pub struct MbufBurst {
    ptrs: [*mut sys::rte_mbuf; MAX_BURST],
    len: usize,
}

// SAFETY: the burst owns its mbufs exclusively (see `Mbuf`).
unsafe impl Send for MbufBurst {}

impl Default for MbufBurst {
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
        self.ptrs[self.len] = m.raw();
        core::mem::forget(m);
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
    pub fn clear(&mut self) {
        self.drain();
    }
}

impl Drop for MbufBurst {
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

/// Asks the CPU to bring the cache line at `p` into all cache levels; nothing on other
/// architectures than x86-64.
#[inline(always)]
fn prefetch_line(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch never faults and has no other effect, whatever the address.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(p.cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
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
        // SAFETY: entries below `len` are non-null owned mbufs; each is yielded once.
        Some(Mbuf {
            ptr: unsafe { NonNull::new_unchecked(p) },
        })
    }
}

impl Drop for Drain<'_> {
    fn drop(&mut self) {
        for m in self.by_ref() {
            drop(m);
        }
    }
}

/// What a port can do, probed from its driver.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PortCaps {
    /// DPDK port id.
    pub id: u16,
    /// Driver name (e.g. `net_pcap`).
    pub driver: String,
    /// Most rx queues.
    pub max_rx_queues: u16,
    /// Most tx queues.
    pub max_tx_queues: u16,
    /// RSS hash types the port supports (0 = no RSS).
    pub rss_hash_types: u64,
    /// Rx offload capability bits.
    pub rx_offloads: u64,
    /// Tx offload capability bits.
    pub tx_offloads: u64,
    /// The port's MAC address.
    pub mac: [u8; 6],
}

/// Tx offload bit: IPv4 header checksum.
pub const TX_OFFLOAD_IPV4_CKSUM: u64 = 1 << 1;
/// Tx offload bit: UDP checksum.
pub const TX_OFFLOAD_UDP_CKSUM: u64 = 1 << 2;
/// RSS hash types used when RSS is on: IPv4, IPv4/UDP, IPv6, IPv6/UDP.
pub const RSS_HASH_IP_UDP: u64 = (1 << 2) | (1 << 4) | (1 << 8) | (1 << 10);

impl PortCaps {
    /// Whether the port can spread traffic over rx queues with RSS.
    pub fn rss(&self) -> bool {
        self.rss_hash_types & RSS_HASH_IP_UDP != 0
    }

    /// Whether the port computes IPv4 and UDP checksums on transmit.
    pub fn tx_checksum(&self) -> bool {
        self.tx_offloads & (TX_OFFLOAD_IPV4_CKSUM | TX_OFFLOAD_UDP_CKSUM)
            == (TX_OFFLOAD_IPV4_CKSUM | TX_OFFLOAD_UDP_CKSUM)
    }
}

/// Port counters (`rte_eth_stats`, the totals).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct PortStats {
    /// Packets received.
    pub rx_packets: u64,
    /// Packets sent.
    pub tx_packets: u64,
    /// Bytes received.
    pub rx_bytes: u64,
    /// Bytes sent.
    pub tx_bytes: u64,
    /// Packets the hardware dropped (rx queue full).
    pub rx_missed: u64,
    /// Receive errors.
    pub rx_errors: u64,
    /// Transmit errors.
    pub tx_errors: u64,
    /// Rx mbuf allocation failures.
    pub rx_nombuf: u64,
}

/// How to set a port up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortSetup {
    /// Rx queues.
    pub rx_queues: u16,
    /// Tx queues.
    pub tx_queues: u16,
    /// Rx descriptors per queue.
    pub rx_desc: u16,
    /// Tx descriptors per queue.
    pub tx_desc: u16,
}

/// Probes the capabilities of port `id`.
pub fn probe_port(_eal: &Eal, id: u16) -> Result<PortCaps, DpdkError> {
    // SAFETY: plain query of a port id.
    if unsafe { sys::rte_eth_dev_is_valid_port(id) } == 0 {
        return Err(DpdkError::other("probe", format!("no port {id}")));
    }
    let mut info = sys::rte_eth_dev_info::default();
    // SAFETY: valid port id; `info` is a valid out-pointer.
    check(|| format!("port {id}: info"), unsafe {
        sys::rte_eth_dev_info_get(id, &mut info)
    })?;
    let driver = if info.driver_name.is_null() {
        String::new()
    } else {
        // SAFETY: the driver name is a static NUL-terminated string of the driver.
        unsafe { CStr::from_ptr(info.driver_name) }
            .to_string_lossy()
            .into_owned()
    };
    let mut mac = sys::rte_ether_addr::default();
    // SAFETY: valid port; valid out-pointer.
    check(|| format!("port {id}: MAC address"), unsafe {
        sys::rte_eth_macaddr_get(id, &mut mac)
    })?;
    Ok(PortCaps {
        id,
        driver,
        max_rx_queues: info.max_rx_queues,
        max_tx_queues: info.max_tx_queues,
        rss_hash_types: info.flow_type_rss_offloads,
        rx_offloads: info.rx_offload_capa,
        tx_offloads: info.tx_offload_capa,
        mac: mac.addr_bytes,
    })
}

/// The started device; stopped and closed when the last handle (port or queue) is gone.
#[derive(Debug)]
struct Started {
    id: u16,
    _pool: Arc<Mempool>,
}

impl Drop for Started {
    fn drop(&mut self) {
        // SAFETY: the port was started by us; no queue handle is left (each holds an `Arc`
        // of this), so nobody polls it any more.
        unsafe {
            let _ = sys::rte_eth_dev_stop(self.id);
            let _ = sys::rte_eth_dev_close(self.id);
        }
    }
}

/// A configured and started port. The device is stopped and closed when the port and every
/// queue handed out from it are dropped; the mempool it receives into lives as long.
#[derive(Debug)]
pub struct Port {
    caps: PortCaps,
    setup: PortSetup,
    started: Arc<Started>,
    rx_taken: Vec<bool>,
    tx_taken: Vec<bool>,
}

impl Port {
    /// Configures `caps.id` with `setup` (RSS over IP/UDP when more than one rx queue and the
    /// port supports it), sets up its queues receiving into `pool` and starts it.
    pub fn start(
        eal: &Eal,
        caps: PortCaps,
        setup: PortSetup,
        pool: Arc<Mempool>,
    ) -> Result<Port, DpdkError> {
        let _ = eal;
        let id = caps.id;
        if setup.rx_queues == 0 || setup.rx_queues > caps.max_rx_queues {
            return Err(DpdkError::other(
                format!("port {id} ({})", caps.driver),
                format!(
                    "{} rx queues requested, the port has 1..={}",
                    setup.rx_queues, caps.max_rx_queues
                ),
            ));
        }
        if setup.tx_queues == 0 || setup.tx_queues > caps.max_tx_queues {
            return Err(DpdkError::other(
                format!("port {id} ({})", caps.driver),
                format!(
                    "{} tx queues requested, the port has 1..={}",
                    setup.tx_queues, caps.max_tx_queues
                ),
            ));
        }
        let mut conf = sys::rte_eth_conf::default();
        if setup.rx_queues > 1 && caps.rss() {
            conf.rxmode.mq_mode = sys::rte_eth_rx_mq_mode_RTE_ETH_MQ_RX_RSS;
            conf.rx_adv_conf.rss_conf.rss_hf = caps.rss_hash_types & RSS_HASH_IP_UDP;
        }
        // SAFETY: valid port id; `conf` lives across the call (DPDK copies it).
        check(|| format!("port {id}: configure"), unsafe {
            sys::rte_eth_dev_configure(id, setup.rx_queues, setup.tx_queues, &conf)
        })?;
        // SAFETY: valid port id.
        let socket = unsafe { sys::rte_eth_dev_socket_id(id) };
        let socket = u32::try_from(socket).unwrap_or(sys::SOCKET_ID_ANY as u32);
        for q in 0..setup.rx_queues {
            // SAFETY: the port is configured with these queues; null conf = driver defaults;
            // the pool outlives the port (the port holds an `Arc`).
            check(|| format!("port {id}: rx queue {q}"), unsafe {
                sys::rte_eth_rx_queue_setup(
                    id,
                    q,
                    setup.rx_desc,
                    socket,
                    ptr::null(),
                    pool.ptr.as_ptr(),
                )
            })?;
        }
        for q in 0..setup.tx_queues {
            // SAFETY: as above.
            check(|| format!("port {id}: tx queue {q}"), unsafe {
                sys::rte_eth_tx_queue_setup(id, q, setup.tx_desc, socket, ptr::null())
            })?;
        }
        // SAFETY: configured port with all queues set up.
        check(|| format!("port {id}: start"), unsafe {
            sys::rte_eth_dev_start(id)
        })?;
        // SAFETY: started port; -ENOTSUP is fine (virtual devices).
        let _ = unsafe { sys::rte_eth_promiscuous_enable(id) };
        Ok(Port {
            started: Arc::new(Started { id, _pool: pool }),
            caps,
            setup,
            rx_taken: vec![false; usize::from(setup.rx_queues)],
            tx_taken: vec![false; usize::from(setup.tx_queues)],
        })
    }

    /// The port id.
    pub fn id(&self) -> u16 {
        self.caps.id
    }

    /// The probed capabilities.
    pub fn caps(&self) -> &PortCaps {
        &self.caps
    }

    /// The queue setup.
    pub fn setup(&self) -> PortSetup {
        self.setup
    }

    /// Rx queue `q`, handed out once (a queue is polled by exactly one thread).
    pub fn rx_queue(&mut self, q: u16) -> Option<RxQueue> {
        let t = self.rx_taken.get_mut(usize::from(q))?;
        if *t {
            return None;
        }
        *t = true;
        Some(RxQueue {
            port: self.caps.id,
            queue: q,
            _started: self.started.clone(),
        })
    }

    /// Tx queue `q`, handed out once.
    pub fn tx_queue(&mut self, q: u16) -> Option<TxQueue> {
        let t = self.tx_taken.get_mut(usize::from(q))?;
        if *t {
            return None;
        }
        *t = true;
        Some(TxQueue {
            port: self.caps.id,
            queue: q,
            _started: self.started.clone(),
        })
    }

    /// Current counters.
    pub fn stats(&self) -> Result<PortStats, DpdkError> {
        port_stats(self.caps.id)
    }

    /// Link state: (up, speed in Mbit/s).
    pub fn link(&self) -> (bool, u32) {
        port_link(self.caps.id)
    }
}

/// Counters of port `id` (any thread; the driver's stats call).
pub fn port_stats(id: u16) -> Result<PortStats, DpdkError> {
    let mut s = sys::rte_eth_stats::default();
    // SAFETY: `s` is a valid out-pointer; an invalid port id is reported as an error.
    check(|| format!("port {id}: stats"), unsafe {
        sys::rte_eth_stats_get(id, &mut s)
    })?;
    Ok(PortStats {
        rx_packets: s.ipackets,
        tx_packets: s.opackets,
        rx_bytes: s.ibytes,
        tx_bytes: s.obytes,
        rx_missed: s.imissed,
        rx_errors: s.ierrors,
        tx_errors: s.oerrors,
        rx_nombuf: s.rx_nombuf,
    })
}

/// Link state of port `id`: (up, speed in Mbit/s).
pub fn port_link(id: u16) -> (bool, u32) {
    let mut l = sys::rte_eth_link::default();
    // SAFETY: valid out-pointer; the call does not wait.
    let ret = unsafe { sys::rte_eth_link_get_nowait(id, &mut l) };
    if ret < 0 {
        return (false, 0);
    }
    (l.link_status() != 0, l.link_speed)
}

/// One rx queue of a started port, polled by one thread.
#[derive(Debug)]
pub struct RxQueue {
    port: u16,
    queue: u16,
    _started: Arc<Started>,
}

impl RxQueue {
    /// Port id.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Queue index.
    pub fn queue(&self) -> u16 {
        self.queue
    }

    /// A probe of this queue's fill level, for the thread that polls it.
    pub fn probe(&self) -> BufferProbe {
        BufferProbe {
            kind: ProbeKind::Queue {
                port: self.port,
                queue: self.queue,
                _started: self._started.clone(),
            },
            _not_sync: PhantomData,
        }
    }

    /// Receives up to the free room of `burst`; returns how many arrived.
    #[inline]
    pub fn rx_burst(&mut self, burst: &mut MbufBurst) -> usize {
        let room = (MAX_BURST - burst.len) as u16;
        if room == 0 {
            return 0;
        }
        // SAFETY: this handle is the only poller of the queue (handed out once); the array
        // has `room` free slots after `len`; received mbufs become owned by the burst.
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

/// Reads how many packets wait in a receive buffer: a NIC rx queue (descriptors filled by the
/// NIC and not yet polled) or the mbuf ring a distributor fills for a worker. Meant for the
/// thread that polls the buffer (it may be moved there, not shared).
#[derive(Debug, Clone)]
pub struct BufferProbe {
    kind: ProbeKind,
    /// Not shared between threads (the poller reads its own queue).
    _not_sync: PhantomData<std::cell::Cell<()>>,
}

#[derive(Debug, Clone)]
enum ProbeKind {
    Queue {
        port: u16,
        queue: u16,
        /// Keeps the port started.
        _started: Arc<Started>,
    },
    Ring {
        ring: Arc<MbufRing>,
        id: u16,
    },
}

impl BufferProbe {
    /// A probe of a software ring, identified as `id`.
    pub fn ring(r: Arc<MbufRing>, id: u16) -> Self {
        BufferProbe {
            kind: ProbeKind::Ring { ring: r, id },
            _not_sync: PhantomData,
        }
    }

    /// The buffer's identifier: the rx queue index, or the id a ring was given.
    pub fn id(&self) -> u16 {
        match &self.kind {
            ProbeKind::Queue { queue, .. } => *queue,
            ProbeKind::Ring { id, .. } => *id,
        }
    }

    /// Packets waiting now; `None` if the driver cannot tell (virtual devices such as
    /// `net_pcap` and `net_null` do not implement the count).
    #[inline]
    pub fn depth(&self) -> Option<u32> {
        match &self.kind {
            ProbeKind::Queue { port, queue, .. } => {
                // SAFETY: the port is started and kept so by `_started`, the queue index was
                // set up; the driver only reads its descriptor ring (no ownership changes),
                // and the probe is used by the queue's polling thread (it is not `Sync`).
                let n = unsafe { sys::rte_eth_rx_queue_count(*port, *queue) };
                u32::try_from(n).ok()
            }
            ProbeKind::Ring { ring, .. } => Some(ring.count()),
        }
    }
}

/// One tx queue of a started port, used by one thread.
#[derive(Debug)]
pub struct TxQueue {
    port: u16,
    queue: u16,
    _started: Arc<Started>,
}

impl TxQueue {
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
        // SAFETY: this handle is the only user of the queue; the first `len` entries are
        // owned mbufs; DPDK takes ownership of the first `n` it returns.
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

/// A function running on a worker lcore; joined with [`LcoreHandle::join`].
#[derive(Debug)]
pub struct LcoreHandle {
    lcore: u32,
    panic: Arc<Mutex<Option<String>>>,
}

/// How a launched lcore function ended badly.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LcoreError {
    /// The function panicked (message).
    #[error("lcore {0} panicked: {1}")]
    Panicked(u32, String),
    /// DPDK could not launch it.
    #[error(transparent)]
    Launch(#[from] DpdkError),
}

struct LaunchArg {
    f: Box<dyn FnOnce() -> i32 + Send>,
    panic: Arc<Mutex<Option<String>>>,
}

unsafe extern "C" fn trampoline(arg: *mut c_void) -> c_int {
    // SAFETY: `arg` is the `Box<LaunchArg>` leaked by `launch`, taken back exactly once here.
    let arg = unsafe { Box::from_raw(arg.cast::<LaunchArg>()) };
    let LaunchArg { f, panic } = *arg;
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(rc) => rc,
        Err(p) => {
            let msg = p
                .downcast_ref::<&str>()
                .map(|s| (*s).to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "panic".into());
            if let Ok(mut slot) = panic.lock() {
                *slot = Some(msg);
            }
            -1
        }
    }
}

/// Runs `f` on worker lcore `lcore`. A panic in `f` is caught (it must not unwind into C)
/// and reported by [`LcoreHandle::join`].
pub fn launch(
    _eal: &Eal,
    lcore: u32,
    f: impl FnOnce() -> i32 + Send + 'static,
) -> Result<LcoreHandle, DpdkError> {
    let panic = Arc::new(Mutex::new(None));
    let arg = Box::into_raw(Box::new(LaunchArg {
        f: Box::new(f),
        panic: panic.clone(),
    }));
    // SAFETY: `trampoline` has the lcore_function_t signature and takes back `arg`; the
    // argument is leaked until it runs.
    let ret = unsafe { sys::rte_eal_remote_launch(Some(trampoline), arg.cast(), lcore) };
    if ret < 0 {
        // SAFETY: the launch failed, so the trampoline never runs; reclaim the argument.
        drop(unsafe { Box::from_raw(arg) });
        return Err(DpdkError::from_code(
            format!("launch on lcore {lcore}"),
            ret,
        ));
    }
    Ok(LcoreHandle { lcore, panic })
}

impl LcoreHandle {
    /// The lcore.
    pub fn lcore(&self) -> u32 {
        self.lcore
    }

    /// Waits for the function to return; its return value, or the panic it raised.
    pub fn join(self) -> Result<i32, LcoreError> {
        // SAFETY: the lcore was launched by us and is waited for once.
        let rc = unsafe { sys::rte_eal_wait_lcore(self.lcore) };
        if let Some(msg) = self.panic.lock().ok().and_then(|mut p| p.take()) {
            return Err(LcoreError::Panicked(self.lcore, msg));
        }
        Ok(rc)
    }
}

/// A single-producer/single-consumer ring of mbufs between two threads (`rte_ring`), for
/// software flow distribution.
#[derive(Debug)]
pub struct MbufRing {
    ptr: NonNull<sys::rte_ring>,
}

// SAFETY: an rte_ring is safe to use from one producer and one consumer thread at a time;
// `enqueue`/`dequeue` take `&self` but callers keep to one producer and one consumer (the
// ring is created with SP/SC flags and the router hands each end to one thread).
unsafe impl Send for MbufRing {}
// SAFETY: see above.
unsafe impl Sync for MbufRing {}

impl MbufRing {
    /// A ring with room for `size - 1` mbufs (`size` a power of two).
    pub fn new(_eal: &Eal, name: &str, size: u32) -> Result<MbufRing, DpdkError> {
        let c =
            CString::new(name).map_err(|_| DpdkError::other("ring", format!("NUL in {name:?}")))?;
        // SAFETY: valid name; DPDK checks the size.
        let p = unsafe {
            sys::rte_ring_create(
                c.as_ptr(),
                size,
                sys::SOCKET_ID_ANY,
                sys::RING_F_SP_ENQ | sys::RING_F_SC_DEQ,
            )
        };
        NonNull::new(p)
            .map(|ptr| MbufRing { ptr })
            .ok_or_else(|| DpdkError::from_errno(format!("ring {name:?}")))
    }

    /// Moves the burst's mbufs into the ring; those that do not fit stay in the burst.
    /// Only one thread may enqueue.
    #[inline]
    pub fn enqueue(&self, burst: &mut MbufBurst) -> usize {
        if burst.len == 0 {
            return 0;
        }
        // SAFETY: single producer by contract; the first `len` entries are owned mbufs whose
        // ownership passes to the ring for the `n` enqueued.
        let n = unsafe {
            sys::rte_ring_enqueue_burst(
                self.ptr.as_ptr(),
                burst.ptrs.as_ptr().cast::<*mut c_void>(),
                burst.len as u32,
                ptr::null_mut(),
            )
        } as usize;
        burst.ptrs.copy_within(n..burst.len, 0);
        burst.len -= n;
        n
    }

    /// Moves mbufs from the ring into the burst's free room. Only one thread may dequeue.
    #[inline]
    pub fn dequeue(&self, burst: &mut MbufBurst) -> usize {
        let room = (MAX_BURST - burst.len) as u32;
        // SAFETY: single consumer by contract; `room` free slots after `len`; dequeued mbufs
        // become owned by the burst.
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

    /// Mbufs waiting in the ring.
    pub fn count(&self) -> u32 {
        // SAFETY: live ring; reading the count is thread safe.
        unsafe { sys::rte_ring_count(self.ptr.as_ptr()) }
    }
}

impl Drop for MbufRing {
    fn drop(&mut self) {
        let mut b = MbufBurst::new();
        while self.dequeue(&mut b) > 0 {
            b.clear();
        }
        // SAFETY: our ring, now empty and no longer used.
        unsafe { sys::rte_ring_free(self.ptr.as_ptr()) }
    }
}

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_sig: c_int) {
    STOP.store(true, Ordering::SeqCst);
}

/// Installs handlers for SIGINT and SIGTERM that set the flag returned by [`stop_requested`].
pub fn install_stop_signals() -> Result<(), DpdkError> {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: an all-zero sigaction is a valid starting value; the handler only stores to
        // an atomic (async-signal-safe).
        unsafe {
            let mut sa: libc::sigaction = core::mem::zeroed();
            sa.sa_sigaction = on_signal as extern "C" fn(c_int) as usize;
            libc::sigemptyset(&mut sa.sa_mask);
            if libc::sigaction(sig, &sa, ptr::null_mut()) != 0 {
                return Err(DpdkError::other("sigaction", "cannot install handler"));
            }
        }
    }
    Ok(())
}

/// Whether SIGINT or SIGTERM arrived (or [`request_stop`] was called).
#[inline]
pub fn stop_requested() -> bool {
    STOP.load(Ordering::Relaxed)
}

/// Asks every loop watching [`stop_requested`] to end.
pub fn request_stop() {
    STOP.store(true, Ordering::SeqCst);
}
