//! The safe DPDK layer against the real DPDK: EAL once per process (a second init is refused),
//! mempool accounting, owning mbufs, `net_ring` loopback bursts, tx ownership of unsent
//! mbufs, SP/SC `rte_ring` hand-over through its two ends, probed port capabilities, port
//! lifetime (queues and monitors keep it open) and lcore launch that catches panics.
//!
//! EAL initialises once per process, so everything runs in one test function.
#![allow(unsafe_code)]

use dpdk::{Eal, LcoreError, MAX_BURST, Mbuf, MbufBurst, Mempool, Port, PortSetup};

const POOL: u32 = 4095;

#[test]
fn eal_pool_mbufs_ports_rings_lcores() {
    let args: Vec<String> = [
        "--no-huge",
        "--no-pci",
        "--no-shconf",
        "--file-prefix=dpdk_layer",
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
    let pool: &'static Mempool = Mempool::new(&eal, "layer_pool", POOL, 0).expect("pool");
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
    let e = Port::start(&eal, caps.clone(), too_many, pool).expect_err("too many queues");
    assert!(e.to_string().contains("rx queues requested"), "{e}");
    let setup = PortSetup {
        rx_queues: 1,
        tx_queues: 1,
        rx_desc: 128,
        tx_desc: 128,
    };
    let mut port = Port::start(&eal, caps, setup, pool).expect("start");
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
    let (mut prod, mut cons) = dpdk::mbuf_ring(&eal, "layer_ring", 64).expect("ring");
    let e = dpdk::mbuf_ring(&eal, "layer_ring", 64).expect_err("duplicate ring name");
    assert_eq!(e.code, 17, "EEXIST: {e}");
    let mut b = MbufBurst::new();
    for i in 0..5u8 {
        b.push(pool.alloc_with(&[i]).unwrap()).unwrap();
    }
    assert_eq!(prod.enqueue(&mut b), 5);
    assert_eq!((prod.count(), cons.count()), (5, 5));
    let mut out = MbufBurst::new();
    assert_eq!(cons.dequeue(&mut out), 5);
    let firsts: Vec<u8> = out.drain().map(|m| m.data()[0]).collect();
    assert_eq!(firsts, vec![0, 1, 2, 3, 4]);
    // A full ring leaves what does not fit in the burst (room for size - 1 = 63).
    let mut big = MbufBurst::new();
    while !big.is_full() {
        big.push(pool.alloc().unwrap()).unwrap();
    }
    assert_eq!(prod.enqueue(&mut big), 63);
    assert_eq!(big.len(), 1, "the one that did not fit stays in the burst");
    drop(big);
    // The consumer may go first: the producer's ring (and what is queued) lives on...
    drop(cons);
    b.push(pool.alloc().unwrap()).unwrap();
    assert_eq!(prod.enqueue(&mut b), 0, "still full");
    drop(b);
    assert_eq!(pool.in_use(), 63);
    // ...and the last end frees what is still queued.
    drop(prod);
    assert_eq!(pool.in_use(), 0);

    // The two ends on two threads: producer on a worker lcore, consumer here.
    let (mut prod, mut cons) = dpdk::mbuf_ring(&eal, "layer_ring2", 1024).expect("ring");
    const N: usize = 10_000;
    let h = dpdk::launch(&eal, 1, move || {
        let mut b = MbufBurst::new();
        let mut sent = 0usize;
        while sent < N {
            while !b.is_full() && sent + b.len() < N {
                let i = sent + b.len();
                match pool.alloc_with(&i.to_le_bytes()) {
                    Some(m) => b.push(m).unwrap(),
                    None => break,
                }
            }
            sent += prod.enqueue(&mut b);
        }
        0
    })
    .unwrap();
    let mut got = 0usize;
    let mut inb = MbufBurst::new();
    while got < N {
        cons.dequeue(&mut inb);
        for m in inb.drain() {
            let mut i = [0u8; 8];
            i.copy_from_slice(&m.data()[..8]);
            assert_eq!(usize::from_le_bytes(i), got, "in order, none lost");
            got += 1;
        }
    }
    assert_eq!(h.join(), Ok(0));
    assert_eq!(cons.count(), 0);
    drop(cons);
    assert_eq!(pool.in_use(), 0);

    // --- lcores -------------------------------------------------------------------------------
    let p2 = pool;
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
    // Only enabled worker lcores: not the main one, not one outside `-l`, not past DPDK's table.
    for lcore in [eal.main_lcore(), 2, dpdk::MAX_LCORE, u32::MAX] {
        let e = dpdk::launch(&eal, lcore, || 0).expect_err("not a worker lcore");
        assert!(e.to_string().contains("not an enabled worker lcore"), "{e}");
    }

    // --- shutdown -------------------------------------------------------------------------------
    // The queues keep the port open: dropping the port first does not close it under them.
    let monitor = port.monitor();
    drop(port);
    assert_eq!(rx.rx_burst(&mut MbufBurst::new()), 0);
    let _ = rx.depth(); // net_ring may not count; the call is still valid
    drop((rx, tx));
    // So does a monitor, from another thread too.
    let st = std::thread::scope(|s| s.spawn(|| monitor.stats()).join().unwrap()).unwrap();
    assert_eq!(st.tx_packets as usize, 10 + sent_total);
    assert_eq!(monitor.id(), ring_id);
    assert!(eal.port_by_name("net_ring0").is_ok(), "still open");
    drop(monitor);
    assert!(
        eal.port_by_name("net_ring0").is_err(),
        "closed (and released) with its last handle"
    );
    assert_eq!(pool.in_use(), 0);
    // SAFETY: every port, queue, monitor, ring end and mbuf is gone, the lcore functions
    // have returned, and nothing DPDK runs after this line.
    unsafe { eal.cleanup() }.expect("cleanup");
}
