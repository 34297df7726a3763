//! Queue handles moved to a worker lcore (the way a router uses them): a `net_null` port's rx
//! and tx queues are polled on lcore 1 while the main thread reads the port's counters
//! through a `PortMonitor`; SP/SC ring ends on either side carry what the worker saw.
//!
//! A test binary of its own (EAL initialises once per process), with its own file prefix.
#![allow(unsafe_code)]

use std::time::{Duration, Instant};

use dpdk::{Eal, MbufBurst, Mempool, Port, PortSetup};

#[test]
fn queues_polled_on_a_worker_lcore() {
    let args: Vec<String> = [
        "--no-huge",
        "--no-pci",
        "--no-shconf",
        "--file-prefix=dpdk_lcore_queues",
        "-l",
        "0-1",
        "-m",
        "128",
        "--log-level=*:error",
        "--vdev=net_null0",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let eal = Eal::init(&args).expect("EAL init");
    let pool = Mempool::new(&eal, "lq_pool", 2047, 32).expect("pool");
    let id = eal.port_by_name("net_null0").expect("net_null0");
    let caps = dpdk::probe_port(&eal, id).expect("probe");
    assert_eq!(caps.driver, "net_null");
    let setup = PortSetup {
        rx_queues: 1,
        tx_queues: 1,
        rx_desc: 128,
        tx_desc: 128,
    };
    let mut port = Port::start(&eal, caps, setup, pool).expect("start");
    let (mut rx, mut tx) = (port.rx_queue(0).unwrap(), port.tx_queue(0).unwrap());
    let monitor = port.monitor();
    let (mut report, mut reports) = dpdk::mbuf_ring(&eal, "lq_reports", 64).expect("ring");

    const FRAMES: u64 = 20_000;
    // The queues and the producing ring end move to lcore 1 and are used only there.
    let worker = dpdk::launch(&eal, 1, move || {
        assert_eq!(dpdk::lcore_id(), 1);
        // net_null cannot count its rx descriptors; asked on the polling thread.
        assert_eq!(rx.depth(), None);
        let mut burst = MbufBurst::new();
        let mut got = 0u64;
        while got < FRAMES {
            let n = rx.rx_burst(&mut burst);
            got += n as u64;
            while !burst.is_empty() {
                tx.tx_burst(&mut burst);
            }
        }
        // One mbuf to the main thread saying how many frames went through.
        let mut one = MbufBurst::new();
        one.push(pool.alloc_with(&got.to_le_bytes()).unwrap())
            .unwrap();
        assert_eq!(report.enqueue(&mut one), 1);
        0
    })
    .expect("launch");

    // Meanwhile the counters are read here.
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut reports_burst = MbufBurst::new();
    while reports.dequeue(&mut reports_burst) == 0 {
        monitor.stats().expect("stats while the worker polls");
        assert!(Instant::now() < deadline, "worker did not finish");
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(worker.join(), Ok(0));
    let mut done = reports_burst.drain();
    let m = done.next().unwrap();
    let got = u64::from_le_bytes(m.data()[..8].try_into().unwrap());
    assert!(got >= FRAMES);
    drop((m, done));
    let st = monitor.stats().expect("stats");
    assert_eq!((st.rx_packets, st.tx_packets), (got, got));
    let _link = monitor.link();

    drop((port, monitor, reports));
    assert_eq!(pool.in_use(), 0, "every mbuf is back");
    // SAFETY: the worker returned (joined), the port (queues moved into the worker's closure,
    // dropped when it returned), monitor, ring ends and mbufs are gone; nothing DPDK follows.
    unsafe { eal.cleanup() }.expect("cleanup");
}
