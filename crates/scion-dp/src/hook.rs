//! The processor's extension point: [`ForwardingHook`] runs on every packet with a SCION path
//! that the processor has checked up to its hop field's MAC ([`Forwarded`] says what it knows
//! about it); the ID-INT stage is one.
//!
//! A leaf of the crate's module graph above [`crate::config`], [`crate::outcome`] and
//! [`crate::burst`]: the processor calls hooks and the ID-INT stage implements one, without
//! either depending on the other.

use crate::burst::BurstPacket;
use crate::config::Router;
use crate::outcome::{Disposition, Ingress};

/// What the processor knows about a packet it forwards or delivers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Forwarded {
    /// Packet length (the packet is `buf[..len]`).
    pub len: usize,
    /// Where it arrived.
    pub ingress: Ingress,
    /// The hop-field index it arrived with.
    pub hop: u8,
    /// Processing time, Unix ns.
    pub now_ns: u64,
}

/// Something the processor runs on every packet with a SCION path once its hop field's MAC
/// was checked, whatever the decision (the hook looks at it: forwarded, handed to a sibling,
/// delivered, or an SCMP error), with the packet already updated for forwarding. Packets
/// decided before that step (empty and OneHop paths, malformed packets) do not reach it.
pub trait ForwardingHook {
    /// Whether the hook acts on a packet whose SCION common header names `next_hdr` as its
    /// next header. A burst may skip the hook for a forward it does not want (the processor
    /// has read the byte already; the hook need not touch the packet to say no). By default
    /// every packet is wanted.
    #[inline(always)]
    fn wants(&self, next_hdr: u8) -> bool {
        let _ = next_hdr;
        true
    }

    /// Acts on the packet; may change the decision.
    fn after_forwarding(
        &mut self,
        router: &Router,
        buf: &mut [u8],
        pkt: &Forwarded,
        d: &mut Disposition,
    );

    /// As [`Self::after_forwarding`] for packet `slot` of a burst; work that does not change
    /// the decision may be deferred to [`Self::finish_burst`].
    #[inline]
    fn after_forwarding_in_burst(
        &mut self,
        router: &Router,
        buf: &mut [u8],
        pkt: &Forwarded,
        d: &mut Disposition,
        slot: usize,
    ) {
        let _ = slot;
        self.after_forwarding(router, buf, pkt, d);
    }

    /// Completes deferred work on the burst's packets (`pkts` is the same burst, indexed by
    /// `slot`). Called once per burst of at most
    /// [`MAX_BURST`](crate::process::MAX_BURST) packets.
    #[inline]
    fn finish_burst<P: BurstPacket>(&mut self, pkts: &mut [P]) {
        let _ = pkts;
    }
}

impl ForwardingHook for () {
    #[inline(always)]
    fn wants(&self, _: u8) -> bool {
        false
    }

    #[inline(always)]
    fn after_forwarding(&mut self, _: &Router, _: &mut [u8], _: &Forwarded, _: &mut Disposition) {}
}
