//! ID-INT in the border router: after the forwarding decision, write this router's telemetry
//! into packets that request it (`idint.md` §9), and act as the infrastructure-mode sink.
//!
//! A worker owns one [`IdIntStage`] (keys, telemetry source, nonce generator, report exporter,
//! counters) and hands it to [`Processor::process_with`](crate::Processor::process_with) or
//! [`Processor::process_burst_with`](crate::Processor::process_burst_with). Packets never change
//! size: entries go into the space the source pre-allocated.
//!
//! # Rules, and the choices made where the specification is open (`idint.md` §14)
//!
//! * **Roles.** *First BR*: the packet arrived on one of this router's inter-AS links.
//!   *Egress*: it leaves on one. *Last BR*: egress, or it is delivered in this AS. An entry is
//!   *closed* by the last BR, or always in aggregation mode 0.
//! * **DelayHops > 0**: nothing is written; a border router that would close an entry
//!   decrements it (so in mode 0 it counts border routers, in modes 1-3 ASes, as the reference
//!   code does); AS-internal nodes, which the source cannot know of, never do.
//! * **Push or aggregate.** A first BR, or any router above the source entry, pushes a new
//!   entry (I = first BR, E = egress, Hop = the hop-field index the packet arrived with; for
//!   a segment crossover the first of the two hop fields). In mode 1 any other router
//!   aggregates into the top entry — but only if that entry is still *open* (I set, E and C
//!   clear: written by this AS's ingress router and not closed) and its hop field is this
//!   AS's (the current one, or the one before when the segments cross inside this AS), so a
//!   router never merges into another AS's entry, e.g. when this AS's ingress router had no
//!   key or an earlier AS's egress router found the stack full. Modes 0, 2 and 3 push at
//!   border routers. Aggregation sets A, keeps I and Hop, sets E = last BR.
//! * **AS-internal nodes** ([`IdIntStage::process_internal`]): mode 0 pushes (and closes)
//!   like every node; mode 1 aggregates into the open entry of the AS's ingress router;
//!   mode 2 leaves the packet alone; mode 3 aggregates into the AS's internal summary entry
//!   (flags S, I, E, C all clear, this AS's hop field) or pushes one if the top entry is not
//!   such an entry. The hop index is the packet's current hop field.
//! * **Aggregation functions** apply per slot when both values exist (the big-endian slot
//!   value as an unsigned integer, for identifiers and addresses too; in the slot width; *sum* wraps in the slot width; the unassigned functions 5-7 keep the existing value
//!   like *first*); an empty side takes the other's value; a slot whose stored length differs
//!   from its instruction's is treated as empty. Node ID and egress interface take the newer
//!   value, the ingress interface keeps the older one (the AS ingress), node count adds the
//!   newer count (saturating).
//! * **Values** come from the [`TelemetrySource`]; what it does not measure stays empty. The
//!   bitmap items are the node id of the source, a node count of 1, and the SCION interface
//!   IDs of this router's ingress and egress (0 = internal network).
//! * **Keys.** The entry's key is this AS's AS→host DRKey (protocol 2, ID-INT, protocol-
//!   specific derivation) for the verifier (source, destination or third party; IPv4/IPv6
//!   hosts only); its epoch is chosen by the router's processing time, not by the source
//!   timestamp (as the reference router). Verifiers map an entry's hop index to the AS that
//!   owns that hop field on their path. Without a key (not derivable now) the
//!   packet is forwarded unchanged and counted in `no_key`; the MAC chain stays intact.
//! * **MAC and encryption.** Every written entry is MACed, chained to the on-wire MAC of the
//!   entry below it; a closing entry is encrypted when the main option's E flag asks for it,
//!   with a fresh 96-bit nonce from the worker's [`NonceSource`]. A merged entry is not
//!   re-verified: it was written by a router of the same AS moments before.
//! * **Full stack**: X is set and nothing else changes.
//! * **Malformed or unsupported options** (bad lengths, version ≠ 0, reserved verifier type,
//!   no source entry): the packet is forwarded unchanged and counted; its verifier rejects it.
//! * **Sink (infrastructure mode).** At the last BR of a packet with the I flag that is
//!   delivered in this AS (and only if the stage's sink role is on): after writing its own
//!   entry the router hands the packet to the [`ReportExporter`], then either drops it (D set:
//!   [`DropReason::TelemetryConsumed`]) or turns the ID-INT options into padding before
//!   delivery (size unchanged).
//!
//! # Bursts
//!
//! In a burst, entries are written at once but sealed together at the end of the burst: each
//! entry waits in the packet with the previous MAC in its MAC field (exactly its MAC input),
//! and the burst pass runs every entry's CBC-MAC and keystream interleaved (one key schedule
//! load when the burst shares a verifier; when the burst's entries also share their length,
//! as a flow's templated entries do, without any per-entry decision).
//!
//! # Flow templates
//!
//! Packets of one flow share the request, roles, interfaces, verifier, key, instruction plan
//! and entry header bytes; only the measured values, the nonce and the MAC differ. The first
//! well-formed push of a flow (the straight-line push, `fast`) leaves a *template* (`plan`:
//! its checks, decisions and the plaintext entry it wrote; the last 4 are kept). The flow's
//! next packets (in the burst, in later bursts, or single packets) with the same request
//! bytes, roles, hop index, interfaces, top entry, padding and verifier location are checked
//! against it by comparing those bytes instead of parsing the stack, and their entry is one
//! copy of the template's bytes with the packet's values, nonce and previous MAC written in
//! (`planned`). The key, its DRKey epoch and the per-burst values are the template's only
//! while they are known to hold:
//!
//! * *Key.* Trusted only at the time it was found: a packet at another time (the next burst)
//!   looks it up again, since it may fall into another DRKey epoch; another verifier in the
//!   same place (another destination host) only costs its lookup.
//! * *Values.* Those of the router's identity and of the source's `&self` methods (node id,
//!   addresses, device, software version, position: [`telemetry::per_burst`]) are asked for
//!   once per burst (per packet for single packets), and so are the measurements the source
//!   says are steady in a burst ([`TelemetrySource::steady_in_burst`]: a timestamp taken at
//!   the burst's start, say); other counters, clocks, queues and the like (`&mut self`
//!   methods) per packet, in the order `gather` asks. A source that supplies
//!   other items than for the packet the template was learnt from gets its entry laid out
//!   from what it did supply (and the general path if that does not fit).
//! * Anything else (another request, route or top entry, split padding, a missing key, a full
//!   stack) takes the straight-line push or the general path, which learns a new template.
//!
//! Results are identical to packet-by-packet processing through the general path (tested,
//! including a property test over random requests and sources, `tests/idint_template.rs`,
//! and fuzzed with mutated packets following an unmutated one, in one burst, in two and
//! singly).
//!
//! [`telemetry::per_burst`]: crate::telemetry::per_burst
//!
//! # Layout
//!
//! This file holds the stage itself ([`IdIntStage`]) and its hook into the processor. The
//! rest, in reading order:
//!
//! * `general`: the general path of a forwarded packet (roles, push or aggregate, DelayHops,
//!   full stacks, missing keys, malformed options; hands over to the sink);
//! * `fast` and `planned`: the straight-line push (which learns a flow's template) and the
//!   templated pushes (`plan`: what a template holds);
//! * `internal`: AS-internal nodes ([`IdIntStage::process_internal`]);
//! * `aggregation`: the aggregation functions ([`aggregate`]) and which entries may be merged;
//! * `emit`: gathering values and laying out a new entry, from gathered values or from a
//!   template's bytes;
//! * `sealing`: MACs and keystreams, at once or deferred to the end of a burst (`uniform`:
//!   the burst pass for alike entries);
//! * `keys` ([`VerifierKeys`], `DrkeyKeys`), `nonces` ([`NonceSource`], [`CtrDrbg`]),
//!   `sink` ([`ReportExporter`], [`NoExport`]) and `counters` ([`IdIntCounters`]);
//! * `roles` (a packet's roles) and `layout` (HBH offsets of a request, bitmap item bits).
//!
//! The submodules form a DAG below this file: `roles`, `layout`, `keys`, `nonces`, `sink`,
//! `counters` and `aggregation` import no sibling; then `emit`, `plan`, `sealing`, and the
//! paths `planned`, `fast`, `general` and `internal` on top.
//!
//! [`DropReason::TelemetryConsumed`]: crate::DropReason::TelemetryConsumed

mod aggregation;
mod counters;
mod emit;
mod fast;
mod general;
mod internal;
mod keys;
pub(crate) mod layout;
mod nonces;
mod plan;
mod planned;
mod roles;
mod sealing;
mod sink;

pub use crate::hook::{Forwarded, ForwardingHook};
pub use aggregation::aggregate;
pub use counters::IdIntCounters;
#[cfg(feature = "drkey")]
pub use keys::DrkeyKeys;
pub use keys::{KeyHandle, KeyLookups, VerifierKeys};
pub use nonces::{CtrDrbg, NonceSource};
pub use sink::{NoExport, ReportExporter, SinkRecord};

use alloc::boxed::Box;

use crate::burst::BurstPacket;
use crate::config::Router;
use crate::header::{HDR_LEN_AT, NEXT_HDR_AT};
use crate::outcome::Disposition;
use crate::telemetry::TelemetrySource;
use roles::Out;
use sealing::SealBatch;

/// A worker's ID-INT state.
#[derive(Debug)]
pub struct IdIntStage<K, S, N = CtrDrbg, X = NoExport> {
    /// Key lookup.
    pub(crate) keys: K,
    /// Telemetry values.
    pub(crate) source: S,
    /// Nonces for encryption.
    pub(crate) nonces: N,
    /// Sink output.
    pub(crate) exporter: X,
    /// Whether this router acts as infrastructure-mode sink.
    pub(crate) sink: bool,
    /// What happened so far.
    pub(crate) counters: IdIntCounters,
    /// MACs and keystreams deferred to the end of a burst.
    batch: Box<SealBatch>,
    /// The burst slot of the packet being processed, if sealing may be deferred (set for
    /// the straight-line and general paths; the templated push is handed it).
    defer_slot: Option<u8>,
    /// Whether the straight-line push path is tried first.
    fast: bool,
}

impl<K: VerifierKeys, S: TelemetrySource, N: NonceSource> IdIntStage<K, S, N, NoExport> {
    /// A stage without the sink role.
    pub fn new(keys: K, source: S, nonces: N) -> Self {
        IdIntStage {
            keys,
            source,
            nonces,
            exporter: NoExport,
            sink: false,
            counters: IdIntCounters::default(),
            batch: SealBatch::new(),
            defer_slot: None,
            fast: true,
        }
    }
}

impl<K, S, N, X> IdIntStage<K, S, N, X> {
    /// What the stage did so far.
    pub fn counters(&self) -> &IdIntCounters {
        &self.counters
    }

    /// The verifier-key lookup (for its statistics).
    pub fn keys(&self) -> &K {
        &self.keys
    }

    /// The telemetry source.
    pub fn source(&self) -> &S {
        &self.source
    }

    /// The telemetry source, to update what it measures between bursts.
    pub fn source_mut(&mut self) -> &mut S {
        &mut self.source
    }

    /// The infrastructure-mode sink's exporter.
    pub fn exporter(&self) -> &X {
        &self.exporter
    }

    /// The infrastructure-mode sink's exporter, to flush or drain it.
    pub fn exporter_mut(&mut self) -> &mut X {
        &mut self.exporter
    }

    /// Whether this stage acts as infrastructure-mode sink.
    pub fn is_sink(&self) -> bool {
        self.sink
    }

    /// The nonce generator.
    pub fn nonces(&self) -> &N {
        &self.nonces
    }

    /// Takes the stage apart: its key lookup, telemetry source, nonce generator and exporter.
    pub fn into_parts(self) -> (K, S, N, X) {
        (self.keys, self.source, self.nonces, self.exporter)
    }

    /// The same stage without the straight-line push path (every packet through the general
    /// path); for tests and fuzzing that check both agree.
    #[cfg(feature = "measurement-aids")]
    pub fn without_fast_path(mut self) -> Self {
        self.fast = false;
        self
    }

    /// The same stage acting as infrastructure-mode sink, giving records to `exporter`.
    pub fn with_sink<Y: ReportExporter>(self, exporter: Y) -> IdIntStage<K, S, N, Y> {
        IdIntStage {
            keys: self.keys,
            source: self.source,
            nonces: self.nonces,
            exporter,
            sink: true,
            counters: self.counters,
            batch: self.batch,
            defer_slot: None,
            fast: self.fast,
        }
    }
}

impl<K: VerifierKeys, S: TelemetrySource, N: NonceSource, X: ReportExporter>
    IdIntStage<K, S, N, X>
{
    /// [`Self::forwarded`] out of line, for single packets (and for hooks that wrap the
    /// stage, such as the lower-bound aid, which then keep their own code small).
    #[inline(never)]
    fn forwarded_single(
        &mut self,
        router: &Router,
        buf: &mut [u8],
        pkt: &Forwarded,
        d: &mut Disposition,
    ) {
        self.forwarded(router, buf, pkt, d, None);
    }

    /// [`Self::forwarded`] for packet `slot` of a burst, its sealing deferred to the burst's
    /// end.
    #[inline]
    fn forwarded_in_burst(
        &mut self,
        router: &Router,
        buf: &mut [u8],
        pkt: &Forwarded,
        d: &mut Disposition,
        slot: usize,
    ) {
        self.forwarded(router, buf, pkt, d, u8::try_from(slot).ok());
    }

    /// The stage's hook: packets with a hop-by-hop header that are forwarded, handed to a
    /// sibling router or delivered (`defer`: the packet's burst slot, if its sealing may be
    /// deferred). Inlined into the burst loop: a flow's templated push then runs without a
    /// call.
    #[inline(always)]
    fn forwarded(
        &mut self,
        router: &Router,
        buf: &mut [u8],
        pkt: &Forwarded,
        d: &mut Disposition,
        defer: Option<u8>,
    ) {
        if !carries_hbh(buf, pkt.len) {
            return;
        }
        let out = match *d {
            Disposition::Forward { ifid } => Out {
                ifid,
                egress: true,
                last: true,
            },
            Disposition::Sibling { ifid, .. } => Out {
                ifid,
                egress: false,
                last: false,
            },
            Disposition::Deliver { .. } => Out {
                ifid: 0,
                egress: false,
                last: true,
            },
            _ => return,
        };
        self.apply(router, buf, pkt, out, d, defer);
    }
}

/// Whether the `len`-byte SCION packet in `buf` carries a hop-by-hop extension header: only
/// those can carry ID-INT.
#[inline(always)]
fn carries_hbh(buf: &[u8], len: usize) -> bool {
    len > HDR_LEN_AT && buf.len() >= len && buf[NEXT_HDR_AT] == idint_wire::ext::HBH
}

impl<K: VerifierKeys, S: TelemetrySource, N: NonceSource, X: ReportExporter> ForwardingHook
    for IdIntStage<K, S, N, X>
{
    /// Only packets with a hop-by-hop header can carry ID-INT.
    #[inline(always)]
    fn wants(&self, next_hdr: u8) -> bool {
        next_hdr == idint_wire::ext::HBH
    }

    /// A single packet: out of line (the burst loop inlines the stage's hook itself).
    #[inline]
    fn after_forwarding(
        &mut self,
        router: &Router,
        buf: &mut [u8],
        pkt: &Forwarded,
        d: &mut Disposition,
    ) {
        self.forwarded_single(router, buf, pkt, d);
    }

    /// Packets without a hop-by-hop header leave in the burst loop itself: the stage's work
    /// may be a call, but they do not pay it.
    #[inline(always)]
    fn after_forwarding_in_burst(
        &mut self,
        router: &Router,
        buf: &mut [u8],
        pkt: &Forwarded,
        d: &mut Disposition,
        slot: usize,
    ) {
        if carries_hbh(buf, pkt.len) {
            self.forwarded_in_burst(router, buf, pkt, d, slot);
        }
    }

    fn finish_burst<P: BurstPacket>(&mut self, pkts: &mut [P]) {
        self.counters.unsealed += self.batch.run(&mut self.keys, pkts);
    }
}
