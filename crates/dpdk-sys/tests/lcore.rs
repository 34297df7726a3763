//! Worker lcores: EAL with two lcores (`-l 0-1`), a function launched on the worker with
//! `rte_eal_remote_launch` and joined with `rte_eal_wait_lcore`. Checks that the wrapped
//! per-lcore values (`rte_lcore_id`, `rte_errno`) are per thread.
//!
//! Runs in its own process (its own test binary), since EAL initialises once per process.
#![allow(unsafe_code)]

use core::ffi::{CStr, c_char, c_int, c_void};
use core::sync::atomic::{AtomicU32, Ordering};
use std::ffi::CString;

use dpdk_sys::*;

/// What the worker saw, written by the worker and read by the main lcore after the join.
#[derive(Default)]
struct Seen {
    lcore: AtomicU32,
    socket: AtomicU32,
    tsc_nonzero: AtomicU32,
}

/// Runs on the worker lcore.
///
/// # Safety
///
/// `arg` must point to a live `Seen`.
unsafe extern "C" fn worker(arg: *mut c_void) -> c_int {
    // SAFETY: the main lcore passes a `Seen` that outlives the launch (it waits for us).
    let seen = unsafe { &*arg.cast::<Seen>() };
    // SAFETY: we run on an EAL lcore; these read this thread's per-lcore state and the TSC.
    unsafe {
        seen.lcore.store(rte_lcore_id(), Ordering::Relaxed);
        seen.socket.store(rte_socket_id(), Ordering::Relaxed);
        seen.tsc_nonzero
            .store(u32::from(rte_rdtsc() != 0), Ordering::Relaxed);
        // rte_errno is per lcore: set it here, the main lcore must not see it.
        rust_rte_errno_set(4242);
        if rust_rte_errno() != 4242 {
            return -1;
        }
    }
    7
}

#[test]
fn remote_launch_on_worker_lcore() {
    let args: Vec<CString> = [
        "lcore_test",
        "--no-huge",
        "--no-pci",
        "--no-shconf",
        "-l",
        "0-1",
        "--log-level=*:error",
        "-m",
        "128",
    ]
    .iter()
    .map(|a| CString::new(*a).expect("no NUL"))
    .collect();
    // EAL may keep pointers into argv and may permute it: hand it leaked copies.
    let mut argv: Vec<*mut c_char> = args.iter().map(|a| a.clone().into_raw()).collect();
    let argc = c_int::try_from(argv.len()).expect("few args");
    // SAFETY: argc/argv describe NUL-terminated strings that live for the whole process; this
    // is the only EAL initialisation in this process.
    let ret = unsafe { rte_eal_init(argc, argv.as_mut_ptr()) };
    assert!(ret >= 0, "rte_eal_init failed: rte_errno {}", {
        // SAFETY: reads this thread's rte_errno.
        unsafe { rust_rte_errno() }
    });

    // SAFETY: EAL is initialised; these read its lcore configuration.
    let (count, main, next) = unsafe {
        (
            rte_lcore_count(),
            rte_get_main_lcore(),
            rte_get_next_lcore(u32::MAX, 1, 0),
        )
    };
    assert_eq!(count, 2);
    assert_eq!(main, 0);
    assert_eq!(next, 1, "the only worker is lcore 1");
    // SAFETY: as above; lcore 1 is the last one.
    assert_eq!(unsafe { rte_get_next_lcore(next, 1, 0) }, RTE_MAX_LCORE);

    let seen = Seen::default();
    // SAFETY: sets this (main) thread's rte_errno.
    unsafe { rust_rte_errno_set(0) };
    // SAFETY: `worker` matches lcore_function_t; `seen` outlives the launch because we wait
    // for the worker before `seen` goes out of scope.
    let ret = unsafe {
        rte_eal_remote_launch(
            Some(worker),
            core::ptr::from_ref(&seen).cast_mut().cast(),
            next,
        )
    };
    assert_eq!(ret, 0, "remote launch");
    // SAFETY: lcore `next` was launched above; waiting joins it.
    let rc = unsafe { rte_eal_wait_lcore(next) };
    assert_eq!(rc, 7, "worker's return value");

    assert_eq!(seen.lcore.load(Ordering::Relaxed), 1);
    let socket = seen.socket.load(Ordering::Relaxed);
    assert!(
        socket == 0 || socket == SOCKET_ID_ANY as u32,
        "worker socket {socket}"
    );
    assert_eq!(seen.tsc_nonzero.load(Ordering::Relaxed), 1);
    // SAFETY: reads this thread's rte_errno and lcore id.
    unsafe {
        assert_eq!(rust_rte_errno(), 0, "rte_errno is per lcore");
        assert_eq!(rte_lcore_id(), 0);
        let text = CStr::from_ptr(rte_strerror(4242));
        assert!(!text.to_bytes().is_empty());
    }

    // A non-EAL thread has no lcore id.
    let id = std::thread::spawn(|| {
        // SAFETY: rte_lcore_id only reads a thread-local value.
        unsafe { rte_lcore_id() }
    })
    .join()
    .expect("thread");
    assert_eq!(id, LCORE_ID_ANY);

    // SAFETY: the worker is idle again; nothing uses EAL afterwards.
    unsafe {
        rte_eal_mp_wait_lcore();
        assert_eq!(rte_eal_cleanup(), 0);
    }
}
