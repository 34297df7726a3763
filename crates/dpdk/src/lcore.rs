//! Launching functions on worker lcores (panics caught), and the calling thread's lcore id.

use core::ffi::{c_int, c_void};
use core::marker::PhantomData;
use std::sync::{Arc, Mutex};

use dpdk_sys as sys;

use crate::eal::Eal;
use crate::error::DpdkError;

/// A function running on a worker lcore; joined with [`LcoreHandle::join`].
///
/// Invariant: the handle stays on the main lcore (it is neither `Send` nor `Sync`), the only
/// thread DPDK allows to wait for a worker lcore. Dropping it without joining leaves the
/// function running (it owns everything it captured).
///
/// ```compile_fail,E0277
/// fn needs_send<T: Send>() {}
/// needs_send::<dpdk::LcoreHandle>();
/// ```
#[derive(Debug)]
pub struct LcoreHandle {
    lcore: u32,
    panic: Arc<Mutex<Option<String>>>,
    /// Neither `Send` nor `Sync`: joined on the main lcore.
    _main_thread: PhantomData<*const ()>,
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

/// Runs `f` on worker lcore `lcore` (one of [`Eal::worker_lcores`]; others are refused). A
/// panic in `f` is caught (it must not unwind into C) and reported by [`LcoreHandle::join`].
/// Called on the main lcore (it needs the [`Eal`], which stays there).
pub fn launch(
    eal: &Eal,
    lcore: u32,
    f: impl FnOnce() -> i32 + Send + 'static,
) -> Result<LcoreHandle, DpdkError> {
    // DPDK indexes its lcore table with `lcore` unchecked: only enabled workers may pass.
    if !eal.worker_lcores().contains(&lcore) {
        return Err(DpdkError::other(
            format!("launch on lcore {lcore}"),
            "not an enabled worker lcore",
        ));
    }
    let panic = Arc::new(Mutex::new(None));
    let arg = Box::into_raw(Box::new(LaunchArg {
        f: Box::new(f),
        panic: panic.clone(),
    }));
    // SAFETY: called on the main lcore (we hold the `Eal`); `lcore` is an enabled worker;
    // `trampoline` has the lcore_function_t signature and takes back `arg`, which is leaked
    // until it runs.
    let ret = unsafe { sys::rte_eal_remote_launch(Some(trampoline), arg.cast(), lcore) };
    if ret < 0 {
        // SAFETY: the launch failed, so the trampoline never runs; reclaim the argument.
        drop(unsafe { Box::from_raw(arg) });
        return Err(DpdkError::from_code(
            format!("launch on lcore {lcore}"),
            ret,
        ));
    }
    Ok(LcoreHandle {
        lcore,
        panic,
        _main_thread: PhantomData,
    })
}

impl LcoreHandle {
    /// The lcore.
    pub fn lcore(&self) -> u32 {
        self.lcore
    }

    /// Waits for the function to return; its return value, or the panic it raised.
    pub fn join(self) -> Result<i32, LcoreError> {
        // SAFETY: on the main lcore (the handle is not `Send`); the lcore is an enabled worker
        // launched by us, waited for once.
        let rc = unsafe { sys::rte_eal_wait_lcore(self.lcore) };
        if let Some(msg) = self.panic.lock().ok().and_then(|mut p| p.take()) {
            return Err(LcoreError::Panicked(self.lcore, msg));
        }
        Ok(rc)
    }
}

/// The EAL lcore id of the calling thread (`u32::MAX` = not an EAL thread).
pub fn lcore_id() -> u32 {
    // SAFETY: reads a thread-local value.
    unsafe { sys::rte_lcore_id() }
}

/// Number of lcore ids DPDK knows (`RTE_MAX_LCORE`): lcore ids are below it.
pub const MAX_LCORE: u32 = sys::RTE_MAX_LCORE;
