//! The router's whole sans-IO path over bursts of Ethernet frames in memory, as the DPDK
//! worker runs it ([`router_core::burst`]): classify -> scion-dp `process_burst` -> route,
//! underlay rewrite and egress batching. Frames live in [`MemFrame`]s (heap buffers with head
//! room, as mbufs) that circulate between the rx list and the tx batches; [`PathRig::refill`]
//! puts them back with their arrival bytes (the same-run baseline every iteration pays).
//! scion-dp runs without the ID-INT stage (transit packets carry no ID-INT).

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use router_core::burst::{self, Aside, MemBatch, MemFrame, MemRoom, Slot};
use router_core::counters::IoCounters;
use router_core::forward::Ask;
use router_core::neighbor::Aging;
use router_core::tables::{IfEgress, PortNeighbors, Tables};
use router_core::underlay;
use scion_dp::config::Router;
use scion_dp::{BurstPacket, Disposition, Ingress, Processor};

/// Packets per burst (the worker's rx burst size).
pub const BURST: usize = 32;
/// Ports: 0 internal, 1 and 2 one external link each (interfaces 1 and 2).
pub const PORTS: usize = 3;
/// The interface (and port) packets arrive by.
pub const IN_IF: u16 = 1;
/// Learned neighbours beside the links' next hops (a busy table).
const NEIGHBOURS: u32 = 256;
/// Slots of each port's learned-neighbour table.
const NEIGHBOUR_SLOTS: usize = 1024;
/// MAC of the neighbour packets arrive from.
const PEER_MAC: [u8; 6] = [7, 0, 0, 0, 0, 1];

/// The MAC of port `i`.
fn port_mac(i: usize) -> [u8; 6] {
    [2, 0, 0, 0, 0, i as u8]
}

fn addr(s: &str) -> SocketAddr {
    s.parse().expect("literal address")
}

/// Interfaces 1 and 2 (local, remote underlay addresses).
fn links() -> [(SocketAddr, SocketAddr); 2] {
    [
        (addr("192.0.2.1:50000"), addr("192.0.2.2:50000")),
        (addr("198.51.100.1:50000"), addr("198.51.100.2:50000")),
    ]
}

/// The tables of a router with an internal port and two IPv4 links, next-hop MACs learned
/// at `now_s` (not configured), among [`NEIGHBOURS`] others.
pub fn tables(now_s: u32) -> Tables {
    let mut egress = vec![None; PORTS];
    let mut ingress = vec![vec![(addr("10.0.0.1:30042"), Ingress::Internal)]];
    let learned: Vec<PortNeighbors> = (0..PORTS)
        .map(|_| PortNeighbors::new(NEIGHBOUR_SLOTS, Aging::default(), Vec::new(), Vec::new()))
        .collect();
    for (k, (local, remote)) in links().into_iter().enumerate() {
        let (port, ifid) = (k + 1, k as u16 + 1);
        egress[usize::from(ifid)] = Some(IfEgress::new(port, port_mac(port), local, remote, None));
        ingress.push(vec![(local, Ingress::External(ifid))]);
        let IpAddr::V4(next) = remote.ip() else {
            unreachable!("IPv4 links")
        };
        assert!(
            learned[port]
                .v4
                .learn(next, [7, 0, 0, 0, 0, port as u8], now_s)
        );
        for i in 0..NEIGHBOURS {
            let _ = learned[port]
                .v4
                .learn(Ipv4Addr::from(0x0a00_0000 + i), [9; 6], now_s);
        }
    }
    Tables {
        ports: (0..PORTS).map(port_mac).collect(),
        port_ids: (0..PORTS as u16).collect(),
        ingress,
        egress,
        internal_port: 0,
        internal_addr: addr("10.0.0.1:30042"),
        neighbors: Vec::new(),
        learned,
        default_macs: vec![None; PORTS],
        vlans: vec![None; PORTS],
        siblings: Vec::new(),
    }
}

/// Drops BFD packets, allows every SCMP reply, asks for nothing (none of that happens on the
/// benchmarked path).
struct Nothing;

impl Aside<MemRoom, MemBatch> for Nothing {
    fn bfd(&mut self, s: &mut Slot<MemRoom>, _: &mut IoCounters) {
        s.m = None;
    }
    fn allow_reply(&mut self) -> bool {
        true
    }
    fn ask(&mut self, _: &Tables, _: Ask, _: &mut [MemBatch], _: &mut IoCounters) {}
}

/// One burst's worth of frames, the worker's slots and tx batches, and scion-dp.
pub struct PathRig<'r> {
    /// The forwarding tables.
    pub tables: Tables,
    proc: Processor<'r>,
    /// The arrival frame (Ethernet, IPv4, UDP, SCION).
    frame: Vec<u8>,
    /// Frames of the next burst.
    rx: Vec<MemFrame>,
    slots: Vec<Slot<MemRoom>>,
    out: Vec<MemBatch>,
    /// The counters so far.
    pub io: IoCounters,
    now_ns: u64,
}

impl<'r> PathRig<'r> {
    /// A rig whose bursts are `scion` (a SCION packet arriving on interface [`IN_IF`] of
    /// `router`) [`BURST`] times, processed at `now_ns`.
    pub fn new(router: &'r Router, scion: &[u8], now_ns: u64) -> Self {
        let tables = tables(now_s(now_ns));
        let (local, remote) = links()[usize::from(IN_IF) - 1];
        let mut frame = vec![0u8; underlay::V4_HDR_LEN + scion.len()];
        frame[underlay::V4_HDR_LEN..].copy_from_slice(scion);
        let in_mac = port_mac(usize::from(IN_IF));
        assert!(underlay::write(
            &mut frame,
            PEER_MAC,
            in_mac,
            &remote,
            &local,
            scion.len()
        ));
        let rx = (0..BURST)
            .map(|_| MemFrame::new(&frame).expect("frame fits"))
            .collect();
        PathRig {
            tables,
            proc: Processor::new(router),
            frame,
            rx,
            slots: (0..BURST).map(|_| Slot::default()).collect(),
            out: (0..PORTS)
                .map(|_| MemBatch {
                    frames: Vec::with_capacity(BURST),
                    cap: BURST,
                })
                .collect(),
            io: IoCounters::default(),
            now_ns,
        }
    }

    /// The baseline: every sent frame back into the rx list with its arrival bytes.
    #[inline]
    pub fn refill(&mut self) {
        for b in self.out.iter_mut() {
            self.rx.append(&mut b.frames);
        }
        for f in self.rx.iter_mut() {
            f.reset(std::hint::black_box(&self.frame));
        }
    }

    /// The whole path over one burst: classify, scion-dp, route and rewrite into the tx
    /// batches. Returns the frames queued.
    #[inline]
    pub fn path(&mut self) -> usize {
        self.run(|proc, slots, now_ns| proc.process_burst(slots, now_ns))
    }

    /// The glue alone: as [`Self::path`] with scion-dp's decision (forward by `ifid`) set
    /// instead of computed.
    #[inline]
    pub fn glue(&mut self, ifid: u16) -> usize {
        self.run(|_, slots, _| {
            for s in slots {
                s.set_disposition(Disposition::Forward { ifid });
            }
        })
    }

    #[inline(always)]
    fn run(&mut self, dp: impl FnOnce(&mut Processor<'r>, &mut [Slot<MemRoom>], u64)) -> usize {
        let port = usize::from(IN_IF);
        let now_s = now_s(self.now_ns);
        let t = &self.tables;
        let rx = self.rx.drain(..);
        let n = burst::classify_burst(
            t,
            port,
            now_s,
            rx,
            &mut self.slots,
            &mut self.out,
            &mut self.io,
        );
        let slots = &mut self.slots[..n];
        dp(&mut self.proc, slots, self.now_ns);
        burst::route_burst(
            t,
            port,
            now_s,
            slots,
            &mut self.out,
            &mut self.io,
            &mut Nothing,
        );
        self.out.iter().map(|b| b.frames.len()).sum()
    }

    /// Replaces the next burst by `frames` (at most [`BURST`]; a frame too long for a buffer is
    /// left out). The frames of earlier bursts are dropped.
    pub fn load<'f>(&mut self, frames: impl IntoIterator<Item = &'f [u8]>) {
        for b in self.out.iter_mut() {
            b.frames.clear();
        }
        self.rx = frames
            .into_iter()
            .take(BURST)
            .filter_map(MemFrame::new)
            .collect();
    }

    /// The arrival frame the rig was built with.
    pub fn arrival_frame(&self) -> &[u8] {
        &self.frame
    }

    /// Frames queued on `port` by the last burst.
    pub fn queued(&self, port: usize) -> impl Iterator<Item = &MemFrame> {
        self.out.get(port).into_iter().flat_map(|b| b.frames.iter())
    }

    /// The first frame sent on `port` (after a burst).
    pub fn sent(&self, port: usize) -> Option<&MemFrame> {
        self.out.get(port)?.frames.first()
    }
}

/// Unix seconds of `now_ns`.
fn now_s(now_ns: u64) -> u32 {
    (now_ns / 1_000_000_000) as u32
}
