//! Software flow distribution, for ports with fewer queues than workers: one distributor lcore
//! polls every port's single rx queue, hashes each packet's SCION flow onto a worker (so a
//! flow stays in order on one worker) and hands it over on that worker's ring; it also drains
//! the workers' output rings into the ports' single tx queues.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::underlay;
use dpdk::{Consumer, MbufBurst, Producer, RxQueue, TxQueue};

/// What the distributor did.
#[derive(Debug, Default)]
pub struct DistStats {
    /// Frames received from the ports.
    pub rx: AtomicU64,
    /// Frames dropped because a worker's input ring was full.
    pub ring_full: AtomicU64,
    /// Frames sent to the ports.
    pub tx: AtomicU64,
    /// Frames dropped because a tx queue was full.
    pub tx_full: AtomicU64,
    /// Frames still waiting for a worker when the router stopped (freed, not processed).
    pub discarded: AtomicU64,
}

impl DistStats {
    /// `(name, value)` pairs.
    pub fn named(&self) -> [(&'static str, u64); 5] {
        [
            ("dist_rx", self.rx.load(Ordering::Relaxed)),
            ("dist_ring_full", self.ring_full.load(Ordering::Relaxed)),
            ("dist_tx", self.tx.load(Ordering::Relaxed)),
            ("dist_tx_full", self.tx_full.load(Ordering::Relaxed)),
            ("dist_discarded", self.discarded.load(Ordering::Relaxed)),
        ]
    }
}

/// The flow hash of a frame: the SCION flow ID and the ISD-AS and host addresses (the same
/// for every packet of a flow), else the raw frame start. FNV-1a, 64 bits.
#[inline]
pub fn flow_hash(frame: &[u8]) -> u64 {
    const PRIME: u64 = 0x0100_0000_01b3;
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |b: &[u8]| {
        for &x in b {
            h = (h ^ u64::from(x)).wrapping_mul(PRIME);
        }
    };
    // Frames of VLAN ports still carry their tag here (the worker removes it).
    match underlay::parse_tagged(frame) {
        Ok(r) if r.len >= 12 => {
            let s = &frame[r.offset..r.offset + r.len];
            eat(&[s[1] & 0x0f, s[2], s[3]]);
            // Address header: ISD-ASes (16 bytes) and the two hosts, their lengths from the
            // DL/SL fields (4, 8, 12 or 16 bytes each). Nothing of the path: an EPIC path
            // starts with a per-packet ID, and one flow must stay on one worker.
            let types = s[9];
            let hosts = 4 * (usize::from((types >> 4) & 3) + 1) + 4 * (usize::from(types & 3) + 1);
            let end = s.len().min(12 + 16 + hosts);
            eat(&s[12.min(end)..end]);
        }
        _ => eat(&frame[..frame.len().min(64)]),
    }
    h
}

/// The distributor's queues and rings.
pub struct Distributor {
    /// Rx queue of every port (index = port index).
    pub rx: Vec<RxQueue>,
    /// Tx queue of every port.
    pub tx: Vec<TxQueue>,
    /// Input rings (their producing ends): `to_workers[worker][port]`.
    pub to_workers: Vec<Vec<Producer>>,
    /// Output rings (their consuming ends): `from_workers[worker][port]`.
    pub from_workers: Vec<Vec<Consumer>>,
    /// Counters.
    pub stats: Arc<DistStats>,
    /// Set once the workers have stopped: drain their output rings, then return.
    pub done: Arc<AtomicBool>,
    /// Longest idle pause, µs (0: busy polling; see [`router_core::idle`]).
    pub idle_sleep_us: u32,
}

impl Distributor {
    /// Polls until [`dpdk::stop_requested`] (then stops receiving) and `done` (then returns
    /// once the workers' output rings are empty).
    pub fn run(mut self) {
        let workers = self.to_workers.len();
        let ports = self.rx.len();
        let mut input = MbufBurst::new();
        // Per-worker staging for the port being polled.
        let mut staged: Vec<MbufBurst> = (0..workers).map(|_| MbufBurst::new()).collect();
        let mut out = MbufBurst::new();
        let (mut rx, mut full, mut tx, mut tx_full) = (0u64, 0u64, 0u64, 0u64);
        let mut loops = 0u32;
        let mut idle = router_core::idle::IdleBackoff::new(self.idle_sleep_us);
        loop {
            let stopping = dpdk::stop_requested();
            let mut work = 0;
            if !stopping {
                for p in 0..ports {
                    let n = self.rx[p].rx_burst(&mut input);
                    if n == 0 {
                        continue;
                    }
                    work += n;
                    rx += n as u64;
                    for m in input.drain() {
                        let w = (flow_hash(m.data()) % workers as u64) as usize;
                        if let Err(m) = staged[w].push(m) {
                            drop(m);
                            full += 1;
                        }
                    }
                    for (w, b) in staged.iter_mut().enumerate() {
                        self.to_workers[w][p].enqueue(b);
                        full += b.len() as u64;
                        b.clear();
                    }
                }
            }
            for w in 0..workers {
                for p in 0..ports {
                    let n = self.from_workers[w][p].dequeue(&mut out);
                    if n == 0 {
                        continue;
                    }
                    work += n;
                    let sent = self.tx[p].tx_burst(&mut out);
                    tx += sent as u64;
                    tx_full += out.len() as u64;
                    out.clear();
                }
            }
            // Published every 1024 rounds, busy or not (`/metrics` reads them).
            loops = loops.wrapping_add(1);
            if loops.is_multiple_of(1024) {
                self.stats.rx.store(rx, Ordering::Relaxed);
                self.stats.ring_full.store(full, Ordering::Relaxed);
                self.stats.tx.store(tx, Ordering::Relaxed);
                self.stats.tx_full.store(tx_full, Ordering::Relaxed);
            }
            // Workers have stopped and their output rings are drained: done.
            if work == 0 && stopping && self.done.load(Ordering::Acquire) {
                break;
            }
            if work != 0 {
                idle.busy();
            } else {
                let pause = idle.empty();
                if pause != 0 {
                    // Only after a run of empty rounds (see `router_core::idle`).
                    std::thread::sleep(std::time::Duration::from_micros(u64::from(pause)));
                }
            }
        }
        // What the workers did not take before they stopped is counted (and freed with the
        // rings once their ends are dropped): every frame received is accounted for.
        let discarded: u64 = self
            .to_workers
            .iter()
            .flatten()
            .map(|ring| u64::from(ring.count()))
            .sum();
        drop(self.to_workers);
        self.stats.discarded.store(discarded, Ordering::Relaxed);
        self.stats.rx.store(rx, Ordering::Relaxed);
        self.stats.ring_full.store(full, Ordering::Relaxed);
        self.stats.tx.store(tx, Ordering::Relaxed);
        self.stats.tx_full.store(tx_full, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::SocketAddr;

    fn frame(flow: u32, payload_len: u16, src_port: u16) -> Vec<u8> {
        let mut scion = vec![0u8; 60];
        scion[1..4].copy_from_slice(&flow.to_be_bytes()[1..]);
        scion[6..8].copy_from_slice(&payload_len.to_be_bytes());
        scion[12..20].copy_from_slice(&[0, 1, 0xff, 0, 0, 0, 0, 1]);
        let src: SocketAddr = format!("10.0.0.1:{src_port}").parse().unwrap();
        underlay_frame(&scion, src, "10.0.0.2:30042".parse().unwrap())
    }

    /// `scion` in an Ethernet/IPv4/UDP frame from `src` to `dst`.
    fn underlay_frame(scion: &[u8], src: SocketAddr, dst: SocketAddr) -> Vec<u8> {
        let mut f = vec![0u8; underlay::V4_HDR_LEN + scion.len()];
        f[underlay::V4_HDR_LEN..].copy_from_slice(scion);
        assert!(underlay::write(
            &mut f,
            [1; 6],
            [2; 6],
            &src,
            &dst,
            scion.len()
        ));
        f
    }

    #[test]
    fn same_flow_same_hash_other_flows_spread() {
        // Payload length and underlay port do not matter; the flow ID does.
        assert_eq!(
            flow_hash(&frame(7, 10, 1000)),
            flow_hash(&frame(7, 99, 2000))
        );
        assert_ne!(
            flow_hash(&frame(7, 10, 1000)),
            flow_hash(&frame(8, 10, 1000))
        );
        let mut buckets = [0u32; 4];
        for f in 0..400 {
            buckets[(flow_hash(&frame(f, 10, 1000)) % 4) as usize] += 1;
        }
        assert!(buckets.iter().all(|&b| b > 60), "{buckets:?}");
        // Not SCION/UDP: still hashed, no panic.
        let _ = flow_hash(&[0u8; 3]);
    }

    /// SCION/UDP frame with an EPIC-HP path (path type 3), IPv4 hosts (DL = SL = 0);
    /// `pkt_counter` is the per-packet counter in the EPIC PktID.
    fn epic_frame(flow: u32, pkt_counter: u32) -> Vec<u8> {
        let mut scion = vec![0u8; 36 + 16 + 4 + 8 + 12 + 12];
        scion[0] = 0; // version 0, TC 0
        scion[1..4].copy_from_slice(&flow.to_be_bytes()[1..]);
        scion[4] = 17; // NextHdr UDP
        scion[5] = (scion.len() / 4) as u8;
        scion[8] = 3; // PathType EPIC
        scion[9] = 0; // DT/DL/ST/SL: IPv4 hosts
        scion[12..20].copy_from_slice(&[0, 1, 0xff, 0, 0, 0, 0, 2]); // dst IA
        scion[20..28].copy_from_slice(&[0, 1, 0xff, 0, 0, 0, 0, 1]); // src IA
        scion[28..32].copy_from_slice(&[10, 2, 0, 9]); // dst host
        scion[32..36].copy_from_slice(&[10, 1, 0, 5]); // src host
        // EPIC path: PktID = TsRel (4) + Counter (4), PHVF, LHVF, then the SCION path.
        scion[36..40].copy_from_slice(&1234u32.to_be_bytes());
        scion[40..44].copy_from_slice(&pkt_counter.to_be_bytes());
        underlay_frame(
            &scion,
            "10.0.0.1:50000".parse().unwrap(),
            "10.0.0.2:50000".parse().unwrap(),
        )
    }

    #[test]
    fn epic_packets_of_one_flow_hash_to_one_worker() {
        let workers = 2u64;
        let w: Vec<u64> = (0..16)
            .map(|c| flow_hash(&epic_frame(7, c)) % workers)
            .collect();
        assert!(
            w.iter().all(|x| *x == w[0]),
            "one flow spread over workers: {w:?}"
        );
    }
}
