//! DPDK errors: what was attempted, the error number and DPDK's text for it.

use core::ffi::{CStr, c_int};

use dpdk_sys as sys;

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
        // SAFETY: reads this thread's rte_errno (a thread-local integer).
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
pub(crate) fn check(op: impl FnOnce() -> String, ret: c_int) -> Result<c_int, DpdkError> {
    if ret < 0 {
        Err(DpdkError::from_code(op(), ret))
    } else {
        Ok(ret)
    }
}
