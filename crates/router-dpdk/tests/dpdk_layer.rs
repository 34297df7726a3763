//! The safe DPDK layer against the real DPDK: EAL once per process (a second init is refused),
//! mempool accounting, owning mbufs, `net_ring` loopback bursts, tx ownership of unsent
//! mbufs, `rte_ring` hand-over, probed port capabilities and lcore launch that catches panics.
//!
//! EAL initialises once per process, so everything runs in one test function.

use std::sync::Arc;

use router_dpdk::dpdk::{
    self, Eal, LcoreError, MAX_BURST, Mbuf, MbufBurst, MbufRing, Mempool, Port, PortSetup,
};

const POOL: u32 = 4095;

#[test]
fn eal_pool_mbufs_ports_rings_lcores() {
    let args: Vec<String> = [
        "--no-huge",
        "--no-pci",
        "--no-shconf",
        "-l",
        "0-1",
        "-m",
        "256",
        "--log-level=*:error",
        "--vdev=net_ring0",
        "--vdev=net_null0",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let eal = Eal::init(&args).expect("EAL init");
    let again = Eal::init(&args).expect_err("second init");
    assert!(again.to_string().contains("already initialised"), "{again}");
    assert!(eal.tsc_hz() > 0);
    assert_eq!(eal.worker_lcores(), vec![1]);
    assert_eq!(eal.port_count(), 2);

    // --- errors carry DPDK's text -------------------------------------------------------------
    let e = eal.port_by_name("net_nope0").expect_err("no such port");
    assert!(e.to_string().contains("net_nope0") && e.code != 0, "{e}");
    let e = Mempool::new(&eal, "dup", 511, 0).and_then(|_p| Mempool::new(&eal, "dup", 511, 0));
    let e = e.expect_err("duplicate pool name");
    assert_eq!(e.code, 17, "EEXIST: {e}");
    assert!(!e.text.is_empty());

    // --- mempool and mbufs ----------------------------------------------------------------------
    let pool = Arc::new(Mempool::new(&eal, "layer_pool", POOL, 0).expect("pool"));
    assert_eq!(pool.available(), POOL);
    {
        let mut m = pool.alloc_with(b"hello mbuf").expect("mbuf");
        assert_eq!(pool.in_use(), 1);
        assert_eq!(m.data(), b"hello mbuf");
        assert_eq!(m.pkt_len(), 10);
        assert_eq!(m.segments(), 1);
        let head = m.headroom();
        assert!(m.prepend(4));
        assert_eq!(m.headroom(), head - 4);
        assert!(m.adj(4));
        assert!(m.trim(5));
        assert_eq!(m.data(), b"hello");
        let room = m.room_mut(0).expect("single segment").len();
        assert_eq!(room, 5 + usize::from(m.tailroom()));
        assert!(m.set_len(8));
        assert_eq!(m.data().len(), 8);
        assert!(!m.set_len(room + 1), "past the buffer");
        assert!(m.room_mut(room + 1).is_none());
        assert!(!m.adj(9), "longer than the data");
        assert!(m.append(usize::from(u16::MAX) + 1).is_none());
    }
    assert_eq!(pool.available(), POOL, "dropped mbufs return to the pool");

    // --- ports --------------------------------------------------------------------------------
    let ring_id = eal.port_by_name("net_ring0").unwrap();
    let caps = dpdk::probe_port(&eal, ring_id).expect("probe");
    assert_eq!(caps.driver, "net_ring");
    assert!(caps.max_rx_queues >= 1 && caps.max_tx_queues >= 1);
    let too_many = PortSetup {
        rx_queues: caps.max_rx_queues + 1,
        tx_queues: 1,
        rx_desc: 128,
        tx_desc: 128,
    };
    let e = Port::start(&eal, caps.clone(), too_many, pool.clone()).expect_err("too many queues");
    assert!(e.to_string().contains("rx queues requested"), "{e}");
    let setup = PortSetup {
        rx_queues: 1,
        tx_queues: 1,
        rx_desc: 128,
        tx_desc: 128,
    };
    let mut port = Port::start(&eal, caps, setup, pool.clone()).expect("start");
    let mut rx = port.rx_queue(0).expect("rx 0");
    assert!(port.rx_queue(0).is_none(), "a queue is handed out once");
    assert!(port.rx_queue(1).is_none());
    let mut tx = port.tx_queue(0).expect("tx 0");

    // net_ring loops tx back into rx: same bytes, same order.
    let mut burst = MbufBurst::new();
    for i in 0..10u8 {
        burst.push(pool.alloc_with(&[i; 60]).unwrap()).unwrap();
    }
    assert_eq!(tx.tx_burst(&mut burst), 10);
    assert!(burst.is_empty(), "sent mbufs leave the burst");
    let mut back = MbufBurst::new();
    assert_eq!(rx.rx_burst(&mut back), 10);
    for (i, m) in back.as_mut_slice().iter().enumerate() {
        assert_eq!(m.data(), &[i as u8; 60]);
    }
    assert_eq!(pool.in_use(), 10);
    drop(back);
    assert_eq!(pool.in_use(), 0, "a dropped burst frees its mbufs");
    let st = port.stats().unwrap();
    assert_eq!((st.tx_packets, st.rx_packets), (10, 10));

    // Unsent mbufs stay owned by the caller: fill the port's ring until tx refuses.
    let mut sent_total = 0;
    let mut kept = 0;
    for _ in 0..64 {
        let mut b = MbufBurst::new();
        while !b.is_full() {
            match pool.alloc() {
                Some(m) => b.push(m).unwrap(),
                None => break,
            }
        }
        let n = b.len();
        assert!(n > 0, "pool exhausted before net_ring's ring filled");
        let s = tx.tx_burst(&mut b);
        sent_total += s;
        assert_eq!(b.len(), n - s, "unsent mbufs remain in the burst");
        if !b.is_empty() {
            kept = b.len();
            // Still ours: readable, and freed by the drop below.
            for m in b.as_mut_slice() {
                assert_eq!(m.pkt_len(), 0);
            }
            break;
        }
    }
    assert!(kept > 0, "net_ring's ring filled up");
    assert_eq!(
        pool.in_use() as usize,
        sent_total,
        "only the driver's mbufs are out"
    );
    let mut drain = MbufBurst::new();
    while rx.rx_burst(&mut drain) > 0 {
        drain.clear();
    }
    assert_eq!(pool.in_use(), 0);

    // Pushing into a full burst gives the mbuf back.
    let mut full = MbufBurst::new();
    for _ in 0..MAX_BURST {
        full.push(pool.alloc().unwrap()).unwrap();
    }
    let extra: Mbuf = pool.alloc().unwrap();
    assert!(full.push(extra).is_err());
    drop(full);
    assert_eq!(pool.in_use(), 0);

    // --- rte_ring hand-over ---------------------------------------------------------------------
    let ring = MbufRing::new(&eal, "layer_ring", 64).expect("ring");
    let mut b = MbufBurst::new();
    for i in 0..5u8 {
        b.push(pool.alloc_with(&[i]).unwrap()).unwrap();
    }
    assert_eq!(ring.enqueue(&mut b), 5);
    assert_eq!(ring.count(), 5);
    // A probe of a worker's ring reads its depth and carries the worker's buffer id.
    let ring = std::sync::Arc::new(ring);
    let probe = dpdk::BufferProbe::ring(ring.clone(), 3);
    assert_eq!((probe.id(), probe.depth()), (3, Some(5)));
    drop(probe);
    let ring = std::sync::Arc::into_inner(ring).expect("only owner");
    let mut out = MbufBurst::new();
    assert_eq!(ring.dequeue(&mut out), 5);
    let firsts: Vec<u8> = out.drain().map(|m| m.data()[0]).collect();
    assert_eq!(firsts, vec![0, 1, 2, 3, 4]);
    b.push(pool.alloc().unwrap()).unwrap();
    ring.enqueue(&mut b);
    drop(ring); // frees what is still queued
    assert_eq!(pool.in_use(), 0);

    // --- lcores -------------------------------------------------------------------------------
    let p2 = pool.clone();
    let h = dpdk::launch(&eal, 1, move || {
        let m = p2.alloc_with(b"from the worker").unwrap();
        assert_eq!(dpdk::lcore_id(), 1);
        drop(m);
        42
    })
    .unwrap();
    assert_eq!(h.join(), Ok(42));
    let h = dpdk::launch(&eal, 1, || panic!("worker blew up")).unwrap();
    match h.join() {
        Err(LcoreError::Panicked(1, msg)) => assert!(msg.contains("worker blew up"), "{msg}"),
        other => panic!("expected a caught panic, got {other:?}"),
    }
    // The lcore is usable again after the panic.
    let h = dpdk::launch(&eal, 1, || 7).unwrap();
    assert_eq!(h.join(), Ok(7));
    assert_eq!(pool.in_use(), 0);

    // --- shutdown -------------------------------------------------------------------------------
    // The queues keep the port open: dropping the port first does not close it under them.
    drop(port);
    assert_eq!(rx.rx_burst(&mut MbufBurst::new()), 0);
    drop((rx, tx));
    drop(pool);
    eal.cleanup().expect("cleanup");
}
