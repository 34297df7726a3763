//! End-to-end check of the bindings against the real DPDK: EAL without hugepages or PCI, a
//! pktmbuf pool, a `net_ring` port whose tx loops back to its rx, a `net_null` port, an
//! `rte_ring`, `rte_errno` and the TSC.
//!
//! EAL can be initialised only once per process, so everything runs in one test function.
#![allow(unsafe_code)]

use core::ffi::{CStr, c_char, c_int, c_void};
use core::ptr;
use std::ffi::CString;

use dpdk_sys::*;

const BURST: usize = 32;
const RING_DESC: u16 = 256;
const POOL_SIZE: u32 = 2047;

/// EAL arguments; `-d` points EAL at the driver plugin directory (`net_null`, `net_ring`, ...).
fn eal_args() -> Vec<CString> {
    let mut args: Vec<CString> = [
        "test",
        "--no-huge",
        "--no-pci",
        "--no-shconf",
        "-l",
        "0",
        "--vdev=net_null0",
        "--vdev=net_ring0",
        "--log-level=*:error",
        "-m",
        "256",
    ]
    .iter()
    .map(|a| CString::new(*a).expect("no NUL"))
    .collect();
    args.push(CString::new("-d").expect("no NUL"));
    args.push(PMD_DIR.to_owned());
    args
}

/// `rte_strerror(rte_errno)` of the calling thread.
fn errno_text() -> String {
    // SAFETY: both calls only read per-thread state; rte_strerror returns a static or
    // thread-local NUL-terminated string.
    unsafe {
        let e = rust_rte_errno();
        format!(
            "rte_errno {e}: {}",
            CStr::from_ptr(rte_strerror(e)).to_string_lossy()
        )
    }
}

/// Looks up a port by its vdev name.
fn port_by_name(name: &CStr) -> u16 {
    let mut port = u16::MAX;
    // SAFETY: `name` is a valid C string and `port` a valid out-pointer.
    let ret = unsafe { rte_eth_dev_get_port_by_name(name.as_ptr(), &mut port) };
    assert_eq!(ret, 0, "no port named {name:?}");
    port
}

/// Configures `port` with one rx and one tx queue (defaults everywhere) and starts it.
fn start_port(port: u16, pool: *mut rte_mempool) {
    // SAFETY: all-zero is rte_eth_dev_info's documented initial state; the call fills it.
    let mut info: rte_eth_dev_info = unsafe { core::mem::zeroed() };
    // SAFETY: `port` is a valid port id and `info` a valid out-pointer.
    assert_eq!(unsafe { rte_eth_dev_info_get(port, &mut info) }, 0);
    assert!(info.max_rx_queues >= 1 && info.max_tx_queues >= 1);
    assert!(!info.driver_name.is_null());

    // All-zero rte_eth_conf = no multi-queue mode, no offloads.
    let conf = rte_eth_conf::default();
    // SAFETY: valid port id; `conf` lives across the call (DPDK copies it).
    let ret = unsafe { rte_eth_dev_configure(port, 1, 1, &conf) };
    assert_eq!(ret, 0, "configure port {port}: {ret}");

    // SAFETY: a port id EAL gave us; returns a NUMA node or SOCKET_ID_ANY.
    let socket = unsafe { rte_eth_dev_socket_id(port) };
    let socket = u32::try_from(socket).unwrap_or(SOCKET_ID_ANY as u32);
    // SAFETY: the port is configured with one queue each way; a null conf means driver
    // defaults; `pool` is a live pktmbuf pool that outlives the port.
    unsafe {
        let ret = rte_eth_rx_queue_setup(port, 0, RING_DESC, socket, ptr::null(), pool);
        assert_eq!(ret, 0, "rx queue setup port {port}: {ret}");
        let ret = rte_eth_tx_queue_setup(port, 0, RING_DESC, socket, ptr::null());
        assert_eq!(ret, 0, "tx queue setup port {port}: {ret}");
        let ret = rte_eth_dev_start(port);
        assert_eq!(ret, 0, "start port {port}: {ret}");
        let ret = rte_eth_promiscuous_enable(port);
        assert!(ret == 0 || ret == -95, "promiscuous port {port}: {ret}"); // -ENOTSUP is fine
    }
}

fn port_stats(port: u16) -> rte_eth_stats {
    let mut stats = rte_eth_stats::default();
    // SAFETY: valid, started port; `stats` is a valid out-pointer.
    assert_eq!(unsafe { rte_eth_stats_get(port, &mut stats) }, 0);
    stats
}

#[test]
fn eal_ports_mbufs_rings_tsc() {
    // --- EAL ------------------------------------------------------------------------------
    let args = eal_args();
    // EAL may keep pointers into argv and may permute it: hand it leaked copies.
    let mut argv: Vec<*mut c_char> = args.iter().map(|a| a.clone().into_raw()).collect();
    let argc = c_int::try_from(argv.len()).expect("few args");
    // SAFETY: argc/argv describe NUL-terminated strings that live for the whole process;
    // this is the only EAL initialisation in this process.
    let ret = unsafe { rte_eal_init(argc, argv.as_mut_ptr()) };
    assert!(ret >= 0, "rte_eal_init failed: {}", errno_text());
    assert_eq!(ret, argc - 1, "EAL should consume every argument");

    // --- lcores -----------------------------------------------------------------------------
    // SAFETY: EAL is initialised; these only read EAL's lcore configuration and this thread's
    // per-lcore id.
    unsafe {
        assert_eq!(rte_lcore_count(), 1);
        assert_eq!(rte_lcore_id(), 0, "the main thread runs on lcore 0 (-l 0)");
        assert_eq!(rte_get_main_lcore(), 0);
        // First enabled lcore from the start, then none after the main one.
        assert_eq!(rte_get_next_lcore(u32::MAX, 0, 0), 0);
        assert_eq!(rte_get_next_lcore(u32::MAX, 1, 0), RTE_MAX_LCORE);
        let socket = rte_socket_id();
        assert!(
            socket == 0 || socket == SOCKET_ID_ANY as u32,
            "socket {socket}"
        );
    }

    // --- TSC --------------------------------------------------------------------------------
    // SAFETY: EAL calibrated the TSC during init; reading it has no preconditions.
    let (hz, t0) = unsafe { (rte_get_tsc_hz(), rte_rdtsc()) };
    assert!(hz > 0, "TSC frequency");
    std::thread::sleep(std::time::Duration::from_millis(2));
    // SAFETY: as above.
    let t1 = unsafe { rte_rdtsc() };
    assert!(t1 > t0, "rdtsc advances: {t0} -> {t1}");
    // 2 ms sleep: at least 1 ms worth of cycles (upper bound loose: a busy CI machine).
    assert!(
        t1 - t0 >= hz / 1000 && t1 - t0 < 10 * hz,
        "{} cycles at {hz} Hz",
        t1 - t0
    );

    // --- mempool ----------------------------------------------------------------------------
    let pool_name = c"dpdk_sys_test_pool";
    // SAFETY: valid name; sizes within limits; EAL is initialised.
    let pool = unsafe {
        rte_pktmbuf_pool_create(
            pool_name.as_ptr(),
            POOL_SIZE,
            64,
            0,
            RTE_MBUF_DEFAULT_BUF_SIZE as u16,
            rte_socket_id() as c_int,
        )
    };
    assert!(!pool.is_null(), "pool create: {}", errno_text());
    // SAFETY: `pool` is live.
    assert_eq!(unsafe { rte_mempool_avail_count(pool) }, POOL_SIZE);

    // A second pool with the same name fails and sets rte_errno (EEXIST) on this lcore.
    // SAFETY: as above; a null result is handled.
    unsafe {
        rust_rte_errno_set(0);
        let dup = rte_pktmbuf_pool_create(pool_name.as_ptr(), 63, 0, 0, 2048, -1);
        assert!(dup.is_null());
        assert_eq!(
            rust_rte_errno(),
            17,
            "EEXIST expected, got {}",
            errno_text()
        );
    }

    // --- ports ------------------------------------------------------------------------------
    // SAFETY: EAL is initialised.
    assert_eq!(
        unsafe { rte_eth_dev_count_avail() },
        2,
        "net_null0 + net_ring0"
    );
    let null_port = port_by_name(c"net_null0");
    let ring_port = port_by_name(c"net_ring0");
    assert_ne!(null_port, ring_port);
    let mut missing = 0u16;
    // SAFETY: valid C string and out-pointer.
    assert!(unsafe { rte_eth_dev_get_port_by_name(c"net_nope0".as_ptr(), &mut missing) } < 0);

    start_port(null_port, pool);
    start_port(ring_port, pool);

    let mut mac = rte_ether_addr::default();
    // SAFETY: valid port, valid out-pointer.
    assert_eq!(unsafe { rte_eth_macaddr_get(ring_port, &mut mac) }, 0);
    assert_eq!(mac.addr_bytes.len(), RTE_ETHER_ADDR_LEN as usize);

    // --- mbuf -------------------------------------------------------------------------------
    let payload: Vec<u8> = (0..100u8).map(|i| i.wrapping_mul(7) ^ 0x5a).collect();
    // SAFETY: `pool` is live; `m` is checked for null and owned by us until tx.
    let m = unsafe { rte_pktmbuf_alloc(pool) };
    assert!(!m.is_null(), "mbuf alloc: {}", errno_text());
    // SAFETY: `m` is a freshly allocated mbuf we own exclusively.
    unsafe {
        assert_eq!((*m).data_len, 0);
        assert_eq!(u32::from((*m).data_off), RTE_PKTMBUF_HEADROOM);
        assert_eq!(rte_pktmbuf_headroom(m), RTE_PKTMBUF_HEADROOM as u16);
        // The Rust-side mtod (buf_addr + data_off) agrees with the C macro.
        assert_eq!(pktmbuf_mtod(m), rust_rte_pktmbuf_mtod(m).cast::<u8>());

        let tail = rte_pktmbuf_append(m, payload.len() as u16).cast::<u8>();
        assert!(!tail.is_null());
        assert_eq!(tail, pktmbuf_mtod(m));
        ptr::copy_nonoverlapping(payload.as_ptr(), tail, payload.len());
        assert_eq!((*m).data_len as usize, payload.len());
        assert_eq!(rust_rte_pktmbuf_data_len(m) as usize, payload.len());
        assert_eq!(rust_rte_pktmbuf_pkt_len(m) as usize, payload.len());

        // prepend then adj: a 4-byte header in front, then removed again.
        let head = rte_pktmbuf_prepend(m, 4).cast::<u8>();
        assert!(!head.is_null());
        head.copy_from_nonoverlapping([0xde, 0xad, 0xbe, 0xef].as_ptr(), 4);
        assert_eq!((*m).pkt_len as usize, payload.len() + 4);
        assert_eq!(&pktmbuf_data(m)[..4], &[0xde, 0xad, 0xbe, 0xef]);
        let after = rte_pktmbuf_adj(m, 4).cast::<u8>();
        assert_eq!(after, pktmbuf_mtod(m));
        assert_eq!(pktmbuf_data(m), &payload[..]);

        // trim then append: the tail room is reused and the bytes are still there.
        assert_eq!(rte_pktmbuf_trim(m, 10), 0);
        assert_eq!((*m).data_len as usize, payload.len() - 10);
        assert!(!rte_pktmbuf_append(m, 10).is_null());
        assert_eq!(pktmbuf_data(m), &payload[..]);
    }
    // SAFETY: `pool` is live.
    assert_eq!(unsafe { rte_mempool_avail_count(pool) }, POOL_SIZE - 1);

    // --- net_ring: tx loops back to rx ------------------------------------------------------
    let before = port_stats(ring_port);
    let mut tx = [m];
    // SAFETY: the port is started with tx queue 0; `tx` holds one mbuf we own. On success the
    // driver owns it.
    let sent = unsafe { rte_eth_tx_burst(ring_port, 0, tx.as_mut_ptr(), 1) };
    assert_eq!(sent, 1, "net_ring tx");

    let mut rx = [ptr::null_mut::<rte_mbuf>(); BURST];
    // SAFETY: the port is started with rx queue 0; `rx` has room for BURST pointers.
    let got = unsafe { rte_eth_rx_burst(ring_port, 0, rx.as_mut_ptr(), BURST as u16) };
    assert_eq!(got, 1, "net_ring loops its tx back to its rx");
    let back = rx[0];
    assert_eq!(back, m, "net_ring passes the same mbuf pointer");
    // SAFETY: we own the received mbuf; nobody else touches it.
    unsafe {
        assert_eq!(pktmbuf_data(back), &payload[..]);
        assert_eq!((*back).pkt_len as usize, payload.len());
        assert_eq!((*back).nb_segs, 1);
        rte_pktmbuf_free(back);
    }
    // SAFETY: `pool` is live.
    assert_eq!(unsafe { rte_mempool_avail_count(pool) }, POOL_SIZE);

    let after = port_stats(ring_port);
    assert_eq!(after.opackets - before.opackets, 1);
    assert_eq!(after.ipackets - before.ipackets, 1);
    assert_eq!(after.q_opackets[0] - before.q_opackets[0], 1);
    assert_eq!(after.q_ipackets[0] - before.q_ipackets[0], 1);
    assert_eq!(after.oerrors, 0);

    // --- net_null: rx makes packets from the pool, tx frees them ----------------------------
    // SAFETY: started port, queue 0, room for BURST pointers.
    let got = unsafe { rte_eth_rx_burst(null_port, 0, rx.as_mut_ptr(), BURST as u16) };
    assert_eq!(got as usize, BURST, "net_null fills every rx burst");
    // SAFETY: `pool` is live.
    assert_eq!(
        unsafe { rte_mempool_avail_count(pool) },
        POOL_SIZE - BURST as u32
    );
    for &p in &rx[..BURST] {
        // SAFETY: received mbufs are ours until tx.
        assert!(unsafe { (*p).pkt_len } > 0);
    }
    // SAFETY: started port, queue 0; all BURST mbufs are ours. Unsent ones stay ours.
    let sent = unsafe { rte_eth_tx_burst(null_port, 0, rx.as_mut_ptr(), BURST as u16) };
    for &p in &rx[usize::from(sent)..BURST] {
        // SAFETY: not taken by the driver, so still ours to free.
        unsafe { rte_pktmbuf_free(p) };
    }
    assert_eq!(usize::from(sent), BURST);
    // SAFETY: `pool` is live.
    assert_eq!(unsafe { rte_mempool_avail_count(pool) }, POOL_SIZE);
    let null_stats = port_stats(null_port);
    assert_eq!(null_stats.ipackets, BURST as u64);
    assert_eq!(null_stats.opackets, BURST as u64);

    // --- rte_ring ---------------------------------------------------------------------------
    // SAFETY: valid name, power-of-two size, EAL initialised.
    let ring = unsafe {
        rte_ring_create(
            c"dpdk_sys_test_ring".as_ptr(),
            64,
            SOCKET_ID_ANY,
            RING_F_SP_ENQ | RING_F_SC_DEQ,
        )
    };
    assert!(!ring.is_null(), "ring create: {}", errno_text());
    let mut values: Vec<u64> = (1..=10).collect();
    let objs: Vec<*mut c_void> = values.iter_mut().map(|v| ptr::from_mut(v).cast()).collect();
    let mut free_space = 0u32;
    // SAFETY: single producer (this thread); `objs` holds 10 pointers.
    let n = unsafe { rte_ring_enqueue_burst(ring, objs.as_ptr(), 10, &mut free_space) };
    assert_eq!(n, 10);
    assert_eq!(free_space, 63 - 10, "a 64-slot ring holds 63 objects");
    // SAFETY: `ring` is live.
    assert_eq!(unsafe { rte_ring_count(ring) }, 10);
    let mut out = [ptr::null_mut::<c_void>(); 16];
    let mut available = 0u32;
    // SAFETY: single consumer (this thread); `out` has room for 16 pointers.
    let n = unsafe { rte_ring_dequeue_burst(ring, out.as_mut_ptr(), 16, &mut available) };
    assert_eq!(n, 10);
    assert_eq!(available, 0);
    assert_eq!(&out[..10], &objs[..], "FIFO order, same pointers");
    // SAFETY: the pointers point into `values`, which is still alive.
    assert_eq!(unsafe { *out[9].cast::<u64>() }, 10);
    // SAFETY: `ring` is live and no longer used.
    unsafe { rte_ring_free(ring) };

    // --- shutdown ---------------------------------------------------------------------------
    for port in [null_port, ring_port] {
        // SAFETY: started ports; no other thread uses them.
        unsafe {
            assert_eq!(rte_eth_dev_stop(port), 0);
            assert_eq!(rte_eth_dev_close(port), 0);
        }
    }
    // SAFETY: every mbuf is back in the pool and the ports that referenced it are closed.
    unsafe { rte_mempool_free(pool) };
    // SAFETY: no DPDK object is used after this point.
    assert_eq!(unsafe { rte_eal_cleanup() }, 0);
}
