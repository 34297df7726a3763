//! A process-wide stop flag, set by SIGINT/SIGTERM or on request.

use core::ffi::c_int;
use core::ptr;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::error::DpdkError;

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
