//! Packet processing: the ordered checks and updates of `scion-dp.md` §2.4 for SCION paths,
//! OneHop (§2.9), EPIC-HP (§3), BFD hand-off, local delivery (§2.7) and SCMP replies (§2.8).
//!
//! Every packet goes through two stages: [`Processor`] first runs the checks that need no
//! AES (steps 1-10) and produces the current hop's CMAC input block, then finishes with the
//! computed MAC (steps 11-21). [`Processor::process_burst`] runs the first stage over a whole
//! batch, computes all MACs in one pipelined AES call, then finishes each packet; the
//! single-packet [`Processor::process`] runs the same two stages back to back.
//!
//! Where the reference router differs from the specification, this code follows the
//! specification (`scion-dp.md` §7):
//! * D1: local deliveries to a port outside `dispatched_ports` go to port 30041;
//! * D5: a router alert on a packet that is not a traceroute request drops it (Go reflects it
//!   back out of its ingress link);
//! * D7: a remote destination whose hop field gives egress 0 is dropped (Go forwards it to the
//!   internal network, back to its sender).
//!
//! SCMP pointers are byte offsets into the offending packet; for EPIC-HP they include the 16
//! bytes of EPIC fields before the SCION path (the reference router omits them).
//!
//! The modules, in the order a packet meets them:
//! * `path`: register views of the path meta header, info and hop fields (a leaf);
//! * `state`: what stage one hands to stage two (a leaf);
//! * `fast`: the transit fast path, both stages;
//! * `checks`: stage one of the general pipeline (steps 0-10);
//! * `transit`: stage two (steps 11-21);
//! * `epic`, `onehop`: EPIC-HP validation and OneHop paths;
//! * `engine`: SCMP replies and local delivery, the outcomes every step may end in.
//!
//! The step modules add methods to `engine::Engine`; the leaves use none of them.

use alloc::boxed::Box;
use idint_wire::crypto::BLOCK_LEN;

pub use crate::burst::{BurstPacket, MAX_BURST, PacketSlot};
use crate::config::Router;
use crate::hook::{Forwarded, ForwardingHook};
use crate::outcome::{Counters, Disposition, Ingress};

use engine::Engine;
use state::{Pending, Scratch};

mod checks;
mod engine;
mod epic;
mod fast;
mod onehop;
mod path;
mod state;
mod transit;

/// How many packets ahead of the one being processed a burst prefetches.
const PREFETCH_AHEAD: usize = 4;
/// Offset of the second cache line [`prefetch`] touches.
const CACHE_LINE: usize = 64;

/// Touches the first two cache lines of `buf` (common, address and the start of the path
/// header) so they travel into L1 while earlier packets are processed. A plain load whose
/// value is not waited for works as a prefetch without `unsafe` intrinsics: the caller folds
/// the bytes into one value it hands to [`core::hint::black_box`] once per burst.
#[inline(always)]
fn prefetch(buf: &[u8]) -> u8 {
    // One length check for both lines; a buffer that short is not worth a prefetch.
    buf.first_chunk::<{ CACHE_LINE + 1 }>()
        .map_or(0, |b| b[0] ^ b[CACHE_LINE])
}

/// A worker's packet processor: the shared router model plus this worker's counters and
/// burst scratch space. One per worker core; the [`Router`] is shared.
pub struct Processor<'r> {
    engine: Engine<'r>,
    counters: Counters,
    scratch: Box<Scratch>,
}

impl core::fmt::Debug for Processor<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Processor")
            .field("router", self.engine.router)
            .field("counters", &self.counters)
            .finish_non_exhaustive()
    }
}

impl<'r> Processor<'r> {
    /// A processor for `router` with zeroed counters.
    pub fn new(router: &'r Router) -> Self {
        Processor {
            engine: Engine { router, fast: true },
            counters: Counters::default(),
            scratch: Box::new(Scratch::new()),
        }
    }

    /// The same processor without the transit fast path (every packet through the general
    /// pipeline); for tests that check the two agree.
    #[cfg(feature = "measurement-aids")]
    pub fn without_fast_path(mut self) -> Self {
        self.engine.fast = false;
        self
    }

    /// The router model.
    pub fn router(&self) -> &'r Router {
        self.engine.router
    }

    /// Counters of everything processed so far.
    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    /// Processes one packet in place. `buf[..len]` is the SCION packet (common header first)
    /// as it arrived at `ingress`; `buf` may be longer (room for an SCMP reply). `now_ns` is
    /// the current Unix time in nanoseconds. ID-INT options are left untouched (see
    /// [`Self::process_with`]).
    #[inline]
    pub fn process(
        &mut self,
        buf: &mut [u8],
        len: usize,
        ingress: Ingress,
        now_ns: u64,
    ) -> Disposition {
        self.process_with(buf, len, ingress, now_ns, &mut ())
    }

    /// As [`Self::process`], then runs `hook` (for example an
    /// [`IdIntStage`](crate::idint::IdIntStage)) on the packet where [`ForwardingHook`] says.
    #[inline]
    pub fn process_with<H: ForwardingHook>(
        &mut self,
        buf: &mut [u8],
        len: usize,
        ingress: Ingress,
        now_ns: u64,
        hook: &mut H,
    ) -> Disposition {
        let e = self.engine;
        let d = if let Some((f, block)) =
            e.fast_one(buf, len, ingress, now_ns, &mut fast::PathLayout::default())
        {
            let mac = e.router.hop_mac().compute(&block);
            let mut d = match e.fast_two(buf, len, &f, &mac) {
                Ok(ifid) => Disposition::Forward { ifid },
                Err(d) => d,
            };
            let f = Forwarded {
                len,
                ingress,
                hop: f.hop,
                now_ns,
            };
            hook.after_forwarding(e.router, buf, &f, &mut d);
            d
        } else {
            let mut p = Pending::default();
            let mut block = [0u8; BLOCK_LEN];
            match e.stage_one(buf, len, ingress, now_ns, &mut p, &mut block) {
                Some(d) => d,
                None => {
                    let mac = e.router.hop_mac().compute(&block);
                    let mut d = e.stage_two(buf, len, &p, &mac, now_ns);
                    let f = Forwarded {
                        len,
                        ingress,
                        hop: p.meta.curr_hf() as u8,
                        now_ns,
                    };
                    hook.after_forwarding(e.router, buf, &f, &mut d);
                    d
                }
            }
        };
        self.counters.record(&d);
        d
    }

    /// Processes a batch: every packet's decision is given to it with
    /// [`BurstPacket::disposition_mut`]. The hop-field MACs of the whole batch are computed in
    /// one pipelined AES pass. ID-INT options are left untouched.
    pub fn process_burst<P: BurstPacket>(&mut self, pkts: &mut [P], now_ns: u64) {
        self.process_burst_with(pkts, now_ns, &mut ());
    }

    /// As [`Self::process_burst`], then runs `hook` on the packets where [`ForwardingHook`]
    /// says (skipping fast-path forwards it does not [want](ForwardingHook::wants)).
    pub fn process_burst_with<P: BurstPacket, H: ForwardingHook>(
        &mut self,
        pkts: &mut [P],
        now_ns: u64,
        hook: &mut H,
    ) {
        let e = self.engine;
        let s = &mut *self.scratch;
        let counters = &mut self.counters;
        for chunk in pkts.chunks_mut(MAX_BURST) {
            let mut n = 0;
            let mut touched = 0;
            let mut last = fast::PathLayout::default();
            for i in 0..chunk.len() {
                // The headers of packets a few slots ahead travel into L1 while this one is
                // processed (packet buffers arrive from DMA in L2/L3 at best).
                if let Some(ahead) = chunk.get_mut(i + PREFETCH_AHEAD) {
                    touched ^= prefetch(ahead.buffer());
                }
                let pkt = &mut chunk[i];
                let len = pkt.len();
                let ingress = pkt.ingress();
                if let Some((f, block)) = e.fast_one(pkt.buffer(), len, ingress, now_ns, &mut last)
                {
                    s.fast[n] = f;
                    s.blocks[n] = block;
                    s.index[n] = i as u8;
                    n += 1;
                    continue;
                }
                // The general stage one writes straight into the burst's slot (no copy of the
                // state).
                s.fast[n].egress = 0;
                let (p, block) = (&mut s.pending[n], &mut s.blocks[n]);
                match e.stage_one(pkt.buffer(), len, ingress, now_ns, p, block) {
                    Some(d) => {
                        counters.record(&d);
                        *pkt.disposition_mut() = Some(d);
                    }
                    None => {
                        s.index[n] = i as u8;
                        n += 1;
                    }
                }
            }
            core::hint::black_box(touched);
            e.router.hop_mac().compute_batch(&mut s.blocks[..n]);
            for k in 0..n {
                let slot = usize::from(s.index[k]);
                let pkt = &mut chunk[slot];
                let f = &s.fast[k];
                // A fast-path forward the hook does not want needs neither its buffer nor
                // the hook: the MAC compare and the decision.
                if f.egress != 0 && !hook.wants(f.next_hdr) && e.fast_mac_ok(f, &s.blocks[k]) {
                    counters.forwarded += 1;
                    pkt.set_disposition(Disposition::Forward { ifid: f.egress });
                    continue;
                }
                let len = pkt.len();
                let buf = pkt.buffer();
                // Each branch hands its own decision on, so that a forward is counted without a
                // look at which decision it is.
                let mut finish = |buf: &mut [u8], mut d: Disposition, ingress: Ingress, hop: u8| {
                    let f = Forwarded {
                        len,
                        ingress,
                        hop,
                        now_ns,
                    };
                    hook.after_forwarding_in_burst(e.router, buf, &f, &mut d, slot);
                    counters.record(&d);
                    d
                };
                let d = if f.egress != 0 {
                    let ingress = Ingress::External(f.in_if);
                    match e.fast_two(buf, len, f, &s.blocks[k]) {
                        Ok(ifid) => finish(buf, Disposition::Forward { ifid }, ingress, f.hop),
                        Err(d) => finish(buf, d, ingress, f.hop),
                    }
                } else {
                    let p = &s.pending[k];
                    let d = e.stage_two(buf, len, p, &s.blocks[k], now_ns);
                    finish(buf, d, p.ingress, p.meta.curr_hf() as u8)
                };
                pkt.set_disposition(d);
            }
            hook.finish_burst(chunk);
        }
    }
}
