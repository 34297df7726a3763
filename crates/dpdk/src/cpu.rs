//! CPU helpers of the packet path: the time-stamp counter and cache-line prefetch.

#[cfg(not(target_arch = "x86_64"))]
use dpdk_sys as sys;

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

/// Asks the CPU to bring the cache line at `p` into all cache levels; nothing on other
/// architectures than x86-64.
#[inline(always)]
pub(crate) fn prefetch_line(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch never faults and has no other effect, whatever the address.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(p.cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}
