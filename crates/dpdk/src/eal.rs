//! The Environment Abstraction Layer: initialised once per process, cleaned up at most once.

use core::ffi::{c_char, c_int};
use core::marker::PhantomData;
use core::ptr;
use std::ffi::CString;
use std::sync::atomic::{AtomicBool, Ordering};

use dpdk_sys as sys;

use crate::error::{DpdkError, check};

static EAL_STARTED: AtomicBool = AtomicBool::new(false);

/// While alive, file descriptor 1 (stdout) refers to stderr. EAL prints its usage text on
/// stdout when it rejects its arguments; callers may keep stdout for their own output.
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

/// The initialised Environment Abstraction Layer.
///
/// Invariants:
/// * At most one `Eal` exists per process, ever: EAL cannot be initialised twice, not even
///   after [`Eal::cleanup`].
/// * The `Eal` stays on the thread that called [`Eal::init`] (it is neither `Send` nor
///   `Sync`): that thread is EAL's main lcore, the only one allowed to launch functions on the
///   worker lcores and wait for them ([`crate::launch`], [`crate::LcoreHandle::join`]).
/// * Dropping it does nothing (EAL stays up for the rest of the process); [`Eal::cleanup`]
///   tears EAL down and is `unsafe`, because every DPDK pointer dangles afterwards.
///
/// ```compile_fail,E0277
/// // The main-lcore handle cannot move to another thread.
/// fn needs_send<T: Send>(_: T) {}
/// fn f(eal: dpdk::Eal) { needs_send(eal) }
/// ```
///
/// ```compile_fail,E0133
/// // Tearing EAL down is not possible from safe code.
/// fn f(eal: dpdk::Eal) { let _ = eal.cleanup(); }
/// ```
#[derive(Debug)]
pub struct Eal {
    /// Neither `Send` nor `Sync`: the main lcore's handle.
    _main_thread: PhantomData<*const ()>,
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
        Ok(Eal {
            _main_thread: PhantomData,
        })
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
            // SAFETY: EAL is initialised; skip_main = 1, wrap = 0; any `i` is accepted.
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

    /// Releases EAL's resources (`rte_eal_cleanup`): DPDK memory is unmapped, so every DPDK
    /// pointer dangles afterwards.
    ///
    /// # Safety
    ///
    /// Nothing of this crate may be used after the call, on any thread: no [`crate::Mempool`]
    /// (pools live for the process, so the caller must make sure no code reaches its
    /// `&'static` handles any more), no [`crate::Mbuf`], burst or ring handle still holding
    /// mbufs, no port, queue or [`crate::PortMonitor`], and every function launched on a worker
    /// lcore has returned (its [`crate::LcoreHandle`] joined). Dropping those handles first
    /// (ports close when their last handle goes) is the caller's duty; typically this is the
    /// last thing `main` does before it returns.
    pub unsafe fn cleanup(self) -> Result<(), DpdkError> {
        // SAFETY: the caller guarantees that no DPDK object is used any more (see above);
        // consuming `self` ends the main-lcore handle.
        let ret = unsafe { sys::rte_eal_cleanup() };
        check(|| "rte_eal_cleanup".into(), ret).map(|_| ())
    }
}
