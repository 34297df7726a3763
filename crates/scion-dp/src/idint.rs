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
//! load when the burst shares a verifier). The first well-formed push of a flow leaves a
//! *plan* (its checks, decisions and entry layout; the last 4 are kept); the flow's next
//! packets (in the burst, in later bursts, or single packets) with the same request bytes,
//! roles, top entry, padding and verifier location are checked against it by comparing those
//! bytes instead of walking the stack again (another verifier in the same place only costs
//! its key lookup). A plan's key is trusted only at the time it was found: a packet at
//! another time looks its key up again, since it may fall into another DRKey epoch. Results
//! are identical to packet-by-packet processing through the general path (tested, and
//! fuzzed with mutated packets following an unmutated one, in one burst, in two and singly).

use aes::cipher::Array;
use idint_wire::crypto::{Aes128Enc, xor_arrays};
use idint_wire::ext::opt_type;
use idint_wire::idint::crypto::seal_entry;
use idint_wire::idint::entry::{NONCE_LEN, NONCE_OFFSET, SlotValue, entry_len, flags as eflags};
use idint_wire::idint::{
    AggregationFunction, AggregationMode, Entry, EntryRepr, IdInt, Metadata, PushOutcome,
};
use idint_wire::scion::ScionHeader;
use idint_wire::{AddrType, HostAddr, IsdAsn};

use alloc::boxed::Box;

use crate::burst::{BurstPacket, MAX_BURST};
use crate::bytes::{read_u48_le, read_u64, read_u128_le};
use crate::config::Router;
pub use crate::hook::{Forwarded, ForwardingHook};
use crate::outcome::{Disposition, DropReason, Ingress};
use crate::telemetry::{HopContext, TelemetrySource, read_instruction};

/// A key found by [`VerifierKeys::find`]: a name the implementation gives out (for a cache,
/// the slot and the insertion that filled it), meaningless to anyone else.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyHandle {
    /// Where the implementation keeps the key.
    pub index: u32,
    /// Which version of that place holds it.
    pub generation: u64,
}

/// The AS→host keys a router uses for ID-INT entries.
///
/// Lookups are two-phase so that a burst can seal entries under many keys at once: [`find`]
/// (which may derive and evict) gives handles, [`key`] turns any number of them into keys
/// through a shared borrow.
///
/// [`find`]: VerifierKeys::find
/// [`key`]: VerifierKeys::key
pub trait VerifierKeys {
    /// Finds this AS's ID-INT key for `host` in `ia` valid at `now_ns` (Unix ns), or `None` if
    /// it is not available now (the packet then carries no entry from this router).
    fn find(&mut self, ia: IsdAsn, host: &HostAddr, now_ns: u64) -> Option<KeyHandle>;

    /// [`VerifierKeys::find`] for an IPv4 (`v6 == false`: the address in the top 32 bits of
    /// `host`) or IPv6 host given as integers, as the data plane holds it. The default builds
    /// the [`HostAddr`] and calls `find`.
    #[inline(always)]
    fn find_ip(&mut self, ia: IsdAsn, v6: bool, host: u128, now_ns: u64) -> Option<KeyHandle> {
        let h = if v6 {
            HostAddr::V6(core::net::Ipv6Addr::from(host))
        } else {
            HostAddr::V4(core::net::Ipv4Addr::from((host >> 96) as u32))
        };
        self.find(ia, &h, now_ns)
    }

    /// The key a handle from [`VerifierKeys::find`] names, or `None` once it is not held any
    /// more (a later `find` evicted it); never a different key.
    fn key(&self, handle: KeyHandle) -> Option<&Aes128Enc>;

    /// [`VerifierKeys::find`] and [`VerifierKeys::key`] in one step.
    #[inline]
    fn as_host_key(&mut self, ia: IsdAsn, host: &HostAddr, now_ns: u64) -> Option<&Aes128Enc> {
        let h = self.find(ia, host, now_ns)?;
        self.key(h)
    }

    /// How lookups went so far, for operators sizing a cache (zero for a store that keeps
    /// no counters).
    fn lookups(&self) -> KeyLookups {
        KeyLookups::default()
    }
}

/// Counters of a [`VerifierKeys`] store.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KeyLookups {
    /// Lookups answered from held keys.
    pub hits: u64,
    /// Lookups that had to derive (or fetch) the key.
    pub misses: u64,
    /// Held keys replaced to make room.
    pub evictions: u64,
}

/// [`VerifierKeys`] from a worker's DRKey key cache: the level-2 AS→host keys of protocol
/// ID-INT issued by `local` (the router's AS), valid at the packet's processing time. A key
/// the cache cannot produce (the provider has no level-1 key) is `None`, counted as `no_key`.
#[cfg(feature = "drkey")]
pub struct DrkeyKeys {
    /// The worker's cache.
    pub cache: drkey::cache::KeyCache,
    /// This router's AS.
    pub local: IsdAsn,
}

#[cfg(feature = "drkey")]
impl VerifierKeys for DrkeyKeys {
    /// Inlined into the caller, which has just built `host`: a call would read it back
    /// through memory (a store-forwarding stall per packet).
    #[inline(always)]
    fn find(&mut self, ia: IsdAsn, host: &HostAddr, now_ns: u64) -> Option<KeyHandle> {
        let id = drkey::cache::KeyId {
            protocol: drkey::Protocol::IDINT,
            src: self.local,
            dst: ia,
            host: *host,
        };
        let h = self.cache.find(&id, now_ns / 1_000_000_000).ok()?;
        Some(KeyHandle {
            index: h.index,
            generation: h.generation,
        })
    }

    /// The packed id straight from the integers (no [`HostAddr`] built and taken apart).
    #[inline(always)]
    fn find_ip(&mut self, ia: IsdAsn, v6: bool, host: u128, now_ns: u64) -> Option<KeyHandle> {
        let addr = if v6 { host } else { host >> 96 };
        let id = drkey::cache::PackedKeyId::ip(drkey::Protocol::IDINT, self.local, ia, v6, addr);
        let h = self.cache.find_packed(&id, now_ns / 1_000_000_000).ok()?;
        Some(KeyHandle {
            index: h.index,
            generation: h.generation,
        })
    }

    #[inline]
    fn key(&self, h: KeyHandle) -> Option<&Aes128Enc> {
        self.cache.key(drkey::cache::KeyHandle {
            index: h.index,
            generation: h.generation,
        })
    }

    fn lookups(&self) -> KeyLookups {
        let s = self.cache.stats();
        KeyLookups {
            hits: s.hits,
            misses: s.misses,
            evictions: s.evictions,
        }
    }
}

/// Nonces for encrypted entries: 96 bits, never repeating under a key, unpredictable.
pub trait NonceSource {
    /// The next nonce.
    fn nonce(&mut self) -> [u8; 12];
}

/// A fast CSPRNG for nonces: AES-128 in counter mode under a secret random key (each nonce is
/// 12 bytes of one block). Seed it from the operating system's generator, one per worker.
pub struct CtrDrbg {
    cipher: Aes128Enc,
    counter: u128,
    /// Nonces generated ahead (one pipelined AES pass per refill).
    ready: [[u8; 16]; DRBG_AHEAD],
    used: usize,
}

const DRBG_AHEAD: usize = 32;

impl CtrDrbg {
    /// A generator from 32 secret random bytes (key and initial counter).
    pub fn new(seed: [u8; 32]) -> Self {
        let mut key = [0u8; 16];
        key.copy_from_slice(&seed[..16]);
        let mut ctr = [0u8; 16];
        ctr.copy_from_slice(&seed[16..]);
        CtrDrbg {
            cipher: idint_wire::crypto::aes128(&key),
            counter: u128::from_be_bytes(ctr),
            ready: [[0; 16]; DRBG_AHEAD],
            used: DRBG_AHEAD,
        }
    }

    #[cold]
    fn refill(&mut self) {
        for b in self.ready.iter_mut() {
            *b = self.counter.to_be_bytes();
            self.counter = self.counter.wrapping_add(1);
        }
        idint_wire::crypto::encrypt_blocks(&self.cipher, &mut self.ready);
        self.used = 0;
    }
}

impl core::fmt::Debug for CtrDrbg {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("CtrDrbg { .. }")
    }
}

impl NonceSource for CtrDrbg {
    #[inline]
    fn nonce(&mut self) -> [u8; 12] {
        if self.used == DRBG_AHEAD {
            self.refill();
        }
        let mut n = [0u8; 12];
        n.copy_from_slice(&self.ready[self.used][..12]);
        self.used += 1;
        n
    }
}

/// A packet whose telemetry ends here, as handed to the exporter.
#[derive(Debug, Clone, Copy)]
pub struct SinkRecord<'a> {
    /// The whole SCION packet with this router's entry, before the options are stripped.
    pub packet: &'a [u8],
    /// Where it arrived.
    pub ingress: Ingress,
    /// Processing time, Unix ns.
    pub receive_ns: u64,
}

/// Takes telemetry that ends at this router (infrastructure-mode sink). Implementations copy
/// what they need and return at once (the worker is waiting); building and sending reports
/// happens elsewhere.
pub trait ReportExporter {
    /// Accepts a record; `false` if it could not be taken (for example a full queue), which
    /// is counted.
    fn export(&mut self, record: &SinkRecord<'_>) -> bool;
}

/// An exporter for routers without the sink role: refuses everything.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoExport;

impl ReportExporter for NoExport {
    fn export(&mut self, _record: &SinkRecord<'_>) -> bool {
        false
    }
}

/// What the ID-INT stage did, per worker.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IdIntCounters {
    /// Packets with ID-INT options seen after a forwarding decision.
    pub packets: u64,
    /// New entries written.
    pub pushed: u64,
    /// Entries aggregated into the top entry.
    pub aggregated: u64,
    /// Entries encrypted.
    pub encrypted: u64,
    /// Packets whose stack had no room (X set).
    pub stack_full: u64,
    /// Packets skipped because of DelayHops.
    pub delayed: u64,
    /// Packets forwarded without an entry because no key was available.
    pub no_key: u64,
    /// Entries written (counted in `pushed` or `aggregated`) whose key was gone by the time
    /// the burst sealed them: they carry zeros and a zero MAC, which verifiers reject.
    pub unsealed: u64,
    /// Packets with malformed ID-INT options (forwarded unchanged).
    pub malformed: u64,
    /// Packets with an unsupported version or verifier (forwarded unchanged).
    pub unsupported: u64,
    /// Records taken by the exporter.
    pub exported: u64,
    /// Records the exporter refused.
    pub export_refused: u64,
    /// Packets whose options were stripped at the sink.
    pub stripped: u64,
    /// Packets dropped at the sink as their D flag asked.
    pub consumed: u64,
}

impl IdIntCounters {
    /// Counts a packet whose ID-INT options cannot be used (`IdInt::locate` failed): as
    /// unsupported (a version or verifier type this router does not know) or malformed.
    fn unusable(&mut self, e: &idint_wire::Error) {
        self.packets += 1;
        if matches!(e, idint_wire::Error::Unsupported { .. }) {
            self.unsupported += 1;
        } else {
            self.malformed += 1;
        }
    }

    /// `(metric name, value)` pairs with stable names.
    pub fn named(&self) -> [(&'static str, u64); 14] {
        [
            ("idint_packets", self.packets),
            ("idint_pushed", self.pushed),
            ("idint_aggregated", self.aggregated),
            ("idint_encrypted", self.encrypted),
            ("idint_stack_full", self.stack_full),
            ("idint_delayed", self.delayed),
            ("idint_no_key", self.no_key),
            ("idint_unsealed", self.unsealed),
            ("idint_malformed", self.malformed),
            ("idint_unsupported", self.unsupported),
            ("idint_exported", self.exported),
            ("idint_export_refused", self.export_refused),
            ("idint_stripped", self.stripped),
            ("idint_consumed", self.consumed),
        ]
    }

    /// Adds another worker's counters (saturating: a counter never wraps back to small).
    pub fn merge(&mut self, o: &IdIntCounters) {
        self.packets = self.packets.saturating_add(o.packets);
        self.pushed = self.pushed.saturating_add(o.pushed);
        self.aggregated = self.aggregated.saturating_add(o.aggregated);
        self.encrypted = self.encrypted.saturating_add(o.encrypted);
        self.stack_full = self.stack_full.saturating_add(o.stack_full);
        self.delayed = self.delayed.saturating_add(o.delayed);
        self.no_key = self.no_key.saturating_add(o.no_key);
        self.unsealed = self.unsealed.saturating_add(o.unsealed);
        self.malformed = self.malformed.saturating_add(o.malformed);
        self.unsupported = self.unsupported.saturating_add(o.unsupported);
        self.exported = self.exported.saturating_add(o.exported);
        self.export_refused = self.export_refused.saturating_add(o.export_refused);
        self.stripped = self.stripped.saturating_add(o.stripped);
        self.consumed = self.consumed.saturating_add(o.consumed);
    }
}

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
    /// The burst slot of the packet being processed, if sealing may be deferred.
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

/// Why the stage left a packet alone.
enum Skip {
    Malformed,
    Unsupported,
}

/// The bytes of the slot width `len`.
#[inline]
fn fit(value: u64, len: usize) -> u64 {
    if len >= 8 {
        value
    } else {
        value & ((1u64 << (8 * len)) - 1)
    }
}

/// Combines an existing slot with a new one (see the module docs).
fn aggregate_slot(
    f: AggregationFunction,
    old: Option<SlotValue>,
    new: Option<SlotValue>,
    width: usize,
) -> Option<SlotValue> {
    let old = old.filter(|o| usize::from(o.len) == width);
    match (old, new) {
        (None, n) => n,
        (o, None) => o,
        (Some(o), Some(n)) => {
            let v = match f {
                AggregationFunction::Last => n.value,
                AggregationFunction::Min => o.value.min(n.value),
                AggregationFunction::Max => o.value.max(n.value),
                AggregationFunction::Sum => fit(o.value.wrapping_add(n.value), width),
                AggregationFunction::First | AggregationFunction::Unknown(_) => o.value,
            };
            Some(SlotValue {
                len: n.len,
                value: v,
            })
        }
    }
}

/// Aggregates `new` into `old` with the main option's functions.
pub fn aggregate(
    old: &Metadata,
    new: &Metadata,
    functions: [AggregationFunction; 4],
    widths: [usize; 4],
) -> Metadata {
    let mut m = Metadata {
        node_id: new.node_id.or(old.node_id),
        node_count: match (old.node_count, new.node_count) {
            (Some(a), Some(b)) => Some(a.saturating_add(b)),
            (a, b) => b.or(a),
        },
        ingress_if: old.ingress_if.or(new.ingress_if),
        egress_if: new.egress_if.or(old.egress_if),
        slots: [None; 4],
    };
    for k in 0..4 {
        m.slots[k] = aggregate_slot(functions[k], old.slots[k], new.slots[k], widths[k]);
    }
    m
}

impl<K: VerifierKeys, S: TelemetrySource, N: NonceSource, X: ReportExporter> ForwardingHook
    for IdIntStage<K, S, N, X>
{
    #[inline]
    fn after_forwarding(
        &mut self,
        router: &Router,
        buf: &mut [u8],
        pkt: &Forwarded,
        d: &mut Disposition,
    ) {
        // Only packets that carry a hop-by-hop header can carry ID-INT.
        let len = pkt.len;
        if len < 6 || buf.len() < len || buf[4] != idint_wire::ext::HBH {
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
        self.apply(router, buf, pkt, out, d);
    }

    #[inline]
    fn after_forwarding_in_burst(
        &mut self,
        router: &Router,
        buf: &mut [u8],
        pkt: &Forwarded,
        d: &mut Disposition,
        slot: usize,
    ) {
        self.defer_slot = u8::try_from(slot).ok();
        self.after_forwarding(router, buf, pkt, d);
        self.defer_slot = None;
    }

    fn finish_burst<P: BurstPacket>(&mut self, pkts: &mut [P]) {
        self.counters.unsealed += self.batch.run(&mut self.keys, pkts);
    }
}

/// Where a packet goes, as the ID-INT roles see it.
#[derive(Clone, Copy)]
struct Out {
    ifid: u16,
    egress: bool,
    last: bool,
}

impl<K: VerifierKeys, S: TelemetrySource, N: NonceSource, X: ReportExporter>
    IdIntStage<K, S, N, X>
{
    /// For a router configured as an **AS-internal node** (not a border router) that a SCION
    /// packet crosses inside `local_ia`: writes or aggregates this node's entry. Mode 0: the
    /// node pushes its own (closing) entry; mode 1: it aggregates into the entry this AS's
    /// ingress router opened (or pushes one); mode 2: nothing (border routers only); mode 3:
    /// it aggregates into the AS's internal summary entry, pushing it if the top entry is not
    /// one. `ports` are the node's ingress and egress port numbers (the interface bitmap
    /// items). Packets without ID-INT, or with a path other than SCION/EPIC, are left alone.
    pub fn process_internal(
        &mut self,
        local_ia: IsdAsn,
        buf: &mut [u8],
        len: usize,
        ports: (u16, u16),
        now_ns: u64,
    ) {
        use idint_wire::scion::PathType;
        let Some(pkt) = buf.get_mut(..len) else {
            return;
        };
        let (hl, hop) = {
            let Ok(h) = ScionHeader::new_checked(&*pkt) else {
                return;
            };
            if h.next_header() != idint_wire::scion::NextHdr::HopByHop {
                return;
            }
            let sp = match h.path_type() {
                PathType::Scion => h.path_offset(),
                PathType::Epic => h.path_offset() + 16,
                _ => return,
            };
            match pkt.get(sp) {
                Some(&b) if sp < h.header_len() => (h.header_len(), b & 0x3f),
                _ => return,
            }
        };
        let Some(hbh_len) = pkt.get(hl + 1).map(|&l| (usize::from(l) + 1) * 4) else {
            return;
        };
        if hl + hbh_len > len {
            return;
        }
        let (head, rest) = pkt.split_at_mut(hl);
        let mut idint = match IdInt::locate(&mut rest[..hbh_len]) {
            Ok(Some(v)) => v,
            Ok(None) => return,
            Err(e) => {
                self.counters.unusable(&e);
                return;
            }
        };
        self.counters.packets += 1;
        let ctx = HopContext {
            ingress_if: ports.0,
            egress_if: ports.1,
            len,
            now_ns,
        };
        let role = Role {
            first: false,
            egress: false,
            last: false,
            internal: true,
        };
        match self.write(local_ia, head, &mut idint, role, hop, &ctx, (hl, None)) {
            Ok(()) => {}
            Err(Skip::Malformed) => self.counters.malformed += 1,
            Err(Skip::Unsupported) => self.counters.unsupported += 1,
        }
    }

    #[inline(never)]
    fn apply(
        &mut self,
        router: &Router,
        buf: &mut [u8],
        f: &Forwarded,
        out: Out,
        d: &mut Disposition,
    ) {
        let len = f.len;
        let pkt = &mut buf[..len];
        let hl = usize::from(pkt[5]) * 4;
        let Some(hbh_len) = pkt.get(hl + 1).map(|&l| (usize::from(l) + 1) * 4) else {
            return;
        };
        if hl + hbh_len > len {
            return;
        }
        let (head, rest) = pkt.split_at_mut(hl);
        let hbh = &mut rest[..hbh_len];
        if self.fast
            && (self.push_planned(router, head, hbh, hl, f, out)
                || self.fast_push(router, head, hbh, hl, f, out, d))
        {
            return;
        }
        self.apply_general(router, buf, f, out, d, hl, hbh_len);
    }

    /// Everything [`Self::fast_push`] leaves, in a function of its own: inlined into
    /// [`Self::apply`], its state made the fast path's frame large and its registers spill.
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    fn apply_general(
        &mut self,
        router: &Router,
        buf: &mut [u8],
        f: &Forwarded,
        out: Out,
        d: &mut Disposition,
        hl: usize,
        hbh_len: usize,
    ) {
        let (len, ingress, now_ns) = (f.len, f.ingress, f.now_ns);
        let (head, rest) = buf[..len].split_at_mut(hl);
        let hbh = &mut rest[..hbh_len];
        let sink_here;
        let discard;
        {
            // The main option is almost always the first option: skip the option walk then.
            let found = if hbh.get(2) == Some(&opt_type::IDINT_MAIN) {
                IdInt::new_checked(&mut *hbh, 2).map(Some)
            } else {
                IdInt::locate(&mut *hbh)
            };
            let mut idint = match found {
                Ok(Some(v)) => v,
                Ok(None) => return,
                Err(e) => {
                    self.counters.unusable(&e);
                    return;
                }
            };
            self.counters.packets += 1;
            let main = idint.main();
            sink_here =
                self.sink && main.infrastructure() && matches!(d, Disposition::Deliver { .. });
            discard = main.discard();
            let ctx = HopContext {
                ingress_if: ingress.ifid(),
                egress_if: out.ifid,
                len,
                now_ns,
            };
            let role = Role {
                first: matches!(ingress, Ingress::External(_)),
                egress: out.egress,
                last: out.last,
                internal: false,
            };
            let defer = if sink_here { None } else { self.defer_slot };
            match self.write(
                router.local_ia(),
                head,
                &mut idint,
                role,
                f.hop,
                &ctx,
                (hl, defer),
            ) {
                Ok(()) => {}
                Err(Skip::Malformed) => self.counters.malformed += 1,
                Err(Skip::Unsupported) => self.counters.unsupported += 1,
            }
        }
        if !sink_here {
            return;
        }
        let record = SinkRecord {
            packet: &buf[..len],
            ingress,
            receive_ns: now_ns,
        };
        if self.exporter.export(&record) {
            self.counters.exported += 1;
        } else {
            self.counters.export_refused += 1;
        }
        if discard {
            self.counters.consumed += 1;
            *d = Disposition::Drop(DropReason::TelemetryConsumed);
        } else {
            // A sender may have put more than one (malformed) ID-INT request into the header:
            // none of them reaches the host.
            let mut stripped = false;
            while let Ok(Some(v)) = IdInt::locate(&mut buf[hl..hl + hbh_len]) {
                v.strip();
                stripped = true;
            }
            if stripped {
                self.counters.stripped += 1;
            }
        }
    }

    /// The common case in one straight pass over the bytes: a well-formed request whose main
    /// option is the first HBH option, no DelayHops, no aggregation into an existing entry,
    /// room for the new entry, not ending at this router's sink. Checks exactly what
    /// `IdInt::locate` checks; anything else returns `false` before writing anything and the
    /// general path decides (tested and fuzzed for identical results).
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn fast_push(
        &mut self,
        router: &Router,
        head: &[u8],
        hbh: &mut [u8],
        hl: usize,
        f: &Forwarded,
        out: Out,
        d: &Disposition,
    ) -> bool {
        use idint_wire::idint::main_option::flags as mflags;
        let n = hbh.len();
        if n < 2 + 22 || hbh[2] != opt_type::IDINT_MAIN {
            return false;
        }
        let request = read_u128_le(hbh, 0);
        let mlen = usize::from(hbh[3]) + 2;
        let (f0, f1) = (hbh[4], hbh[5]);
        // Version 0, R clear; a probe ending at this sink takes the general path.
        if f0 & 0xe1 != 0
            || (f0 & mflags::I != 0 && self.sink && matches!(d, Disposition::Deliver { .. }))
        {
            return false;
        }
        let (vrf, vtl) = ((f1 >> 4) & 3, f1 & 0xf);
        let want = match (vrf, vtl) {
            (0, 0) => 34,
            (0, 3) => 46,
            (1 | 2, 0) => 22,
            _ => return false,
        };
        let mode = f1 >> 6;
        let first = matches!(f.ingress, Ingress::External(_));
        if mlen != want || (mode == 1 && !first) || hbh[8] >> 2 != 0 {
            return false;
        }
        let s = 2 + mlen;
        let end = s + usize::from(hbh[6]) * 4;
        let tos = usize::from(hbh[7]) * 4;
        let t = s + tos;
        if end > n || t + entry_len(false, 0) > end || hbh[s] != opt_type::IDINT_ENTRY {
            return false;
        }
        let free = t + usize::from(hbh[t + 1]) + 2;
        if hbh[t] != opt_type::IDINT_ENTRY
            || free > end
            || (hbh[t + 2] & eflags::S != 0) != (tos == 0)
            || Entry::new_unchecked(&hbh[t..free]).check_len().is_err()
        {
            return false;
        }
        let mut p = free;
        while p < end {
            p += match hbh[p] {
                opt_type::PAD1 => 1,
                opt_type::PADN if p + 1 < end => 2 + usize::from(hbh[p + 1]),
                _ => return false,
            };
        }
        if p != end {
            return false;
        }
        let (id, at) = match vrf {
            0 => {
                let t = if vtl == 0 {
                    AddrType::IPV4
                } else {
                    AddrType::IPV6
                };
                let at = VerifierAt {
                    types: None,
                    ia_at: 2 + 22,
                    host_at: 2 + 30,
                    v6: vtl != 0,
                };
                (
                    VerifierId::new(read_u64(hbh, 2 + 22), t, &hbh[2 + 30..2 + mlen]),
                    at,
                )
            }
            _ => {
                let Ok(h) = ScionHeader::new_checked(head) else {
                    return false;
                };
                let dst_len = h.dst_addr_type().addr_len();
                let (id, ia_at, host_at, t) = if vrf == 2 {
                    let id =
                        VerifierId::new(h.src_ia().to_u64(), h.src_addr_type(), h.src_host_bytes());
                    (id, 20, 28 + dst_len, h.src_addr_type())
                } else {
                    let id =
                        VerifierId::new(h.dst_ia().to_u64(), h.dst_addr_type(), h.dst_host_bytes());
                    (id, 12, 28, h.dst_addr_type())
                };
                let at = VerifierAt {
                    types: Some(head[9]),
                    ia_at: ia_at as u8,
                    host_at: host_at as u8,
                    v6: t == AddrType::IPV6,
                };
                (id, at)
            }
        };
        if id.ty != AddrType::IPV4.nibble() && id.ty != AddrType::IPV6.nibble() {
            return false;
        }
        let ctx = HopContext {
            ingress_if: f.ingress.ifid(),
            egress_if: out.ifid,
            len: f.len,
            now_ns: f.now_ns,
        };
        let IdIntStage {
            keys,
            source,
            nonces,
            counters,
            batch,
            defer_slot,
            ..
        } = self;
        let defer = *defer_slot;
        // A `match`, not `Option::or_else`: the closure made that a call, and the call read
        // the recalled handle back through memory just after it was stored in pieces (a
        // store-forwarding stall on every packet).
        let recalled = match defer {
            Some(_) => batch.recall(&id),
            None => None,
        };
        let close = out.last || mode == 0;
        let encrypt = close && f0 & mflags::E != 0;
        let instructions = [hbh[12], hbh[13], hbh[14], hbh[15]].map(idint_wire::idint::Instruction);
        let g = gather(source, router.local_ia(), hbh[10] >> 4, &instructions, &ctx);
        let len = entry_len(encrypt, g.md_len);
        let e_end = free + len;
        if e_end > end {
            // Full: the general path sets X (and looks the key up itself: not here too).
            return false;
        }
        let found = match recalled {
            Some(h) => Some(h),
            None => keys.find_ip(id.ia(), id.v6(), id.host, ctx.now_ns),
        };
        let Some(handle) = found else {
            counters.packets += 1;
            counters.no_key += 1;
            return true;
        };
        // One padding option from the top entry to the end of the stack: the plan for the next
        // packets of the flow checks its header instead of walking the padding.
        let pad = [hbh[free], hbh.get(free + 1).copied().unwrap_or(0)];
        let single_pad = pad[0] == opt_type::PADN && free + 2 + usize::from(pad[1]) == end;
        // Re-cover the rest of the first padding option the entry overlaps (headers only).
        let mut q = free;
        while q < e_end {
            q += if hbh[q] == opt_type::PAD1 {
                1
            } else {
                2 + usize::from(hbh[q + 1])
            };
        }
        idint_wire::ext::write_padding_headers(&mut hbh[e_end..q.min(end)]);
        hbh[7] = ((free - s) / 4) as u8;
        let mut prev_mac = [0u8; 4];
        prev_mac.copy_from_slice(&hbh[free - 4..free]);
        let role = Role {
            first,
            egress: out.egress,
            last: out.last,
            internal: false,
        };
        let e = &mut hbh[free..e_end];
        emit_entry(
            e,
            &g,
            role,
            f.hop,
            encrypt.then(|| nonces.nonce()),
            prev_mac,
        );
        let job = Seal {
            defer,
            at: hl + free,
            prev_mac,
            id,
            handle,
            now_ns: ctx.now_ns,
        };
        counters.packets += 1;
        if seal_or_defer(keys, batch, e, &job).is_none() {
            counters.unsealed += 1;
        }
        counters.pushed += 1;
        if encrypt {
            counters.encrypted += 1;
        }
        if defer.is_some() {
            batch.last = Some((id, handle));
        }
        // The entry's verifier is the table's last one if the entry was deferred.
        let deferred = defer.is_some() && batch.n_ids > 0 && batch.ids[batch.n_ids - 1] == id;
        if single_pad {
            let route = route_key(f, out);
            batch.keep_plan(FlowPlan {
                request,
                route,
                top: read_u48_le(hbh, t),
                s: s as u16,
                t: t as u16,
                free: free as u16,
                end: end as u16,
                pad,
                new_tos: hbh[7],
                encrypt,
                role,
                at,
                id,
                id_ix: batch.n_ids.saturating_sub(1) as u8,
                burst: if deferred { batch.burst } else { NO_BURST },
                handle,
                found_ns: ctx.now_ns,
                entry: EntryPlan::new(&hbh[free..e_end], &g, &instructions),
            });
        }
        true
    }

    /// A packet of a flow an earlier fast push planned for (same request bytes and roles, in
    /// this burst, an earlier one or an earlier single packet): the bytes that push's checks
    /// and decisions depended on are compared with the plan's instead of being walked again;
    /// `false` (nothing written) if any differs.
    #[inline(always)]
    fn push_planned(
        &mut self,
        router: &Router,
        head: &[u8],
        hbh: &mut [u8],
        hl: usize,
        f: &Forwarded,
        out: Out,
    ) -> bool {
        let IdIntStage {
            keys,
            source,
            nonces,
            counters,
            batch,
            defer_slot,
            ..
        } = self;
        let defer = *defer_slot;
        if hbh.len() < 16 {
            return false;
        }
        let (request, route) = (read_u128_le(hbh, 0), route_key(f, out));
        let Some(k) = batch.plans.iter().position(|p| {
            p.as_ref()
                .is_some_and(|p| p.request == request && p.route == route)
        }) else {
            return false;
        };
        let Some(plan) = batch.plans[k].as_ref() else {
            return false;
        };
        let (t, free, end) = (
            usize::from(plan.t),
            usize::from(plan.free),
            usize::from(plan.end),
        );
        // The same first 16 bytes give the same HBH length, stack bounds and TOS; the same
        // top entry header the same entry length and the same checks on it.
        if hbh.len() < end
            || read_u48_le(hbh, t) != plan.top
            || hbh[usize::from(plan.s)] != opt_type::IDINT_ENTRY
            || hbh[free..free + 2] != plan.pad
        {
            return false;
        }
        let (encrypt, role, new_tos, at) = (plan.encrypt, plan.role, plan.new_tos, plan.at);
        // Not before the planned entry is known to fit: a full stack takes the general path,
        // which looks the key up (and asks the source) itself.
        if free + usize::from(plan.entry.len) > end {
            return false;
        }
        let same = at.holds(head, hbh, &plan.id);
        // The common case: the plan's verifier, its key found at this very time and (for a
        // deferred entry) its index in this burst's verifier table. Nothing to update.
        let (id, handle, id_ix) = if same
            && plan.found_ns == f.now_ns
            && (defer.is_none() || plan.burst == batch.burst)
        {
            (plan.id, plan.handle, plan.id_ix)
        } else {
            // Another verifier of the same kind in the same place (another destination host,
            // say): everything holds but the key.
            let id = if same {
                plan.id
            } else {
                let Some(id) = at.read(head, hbh) else {
                    return false;
                };
                id
            };
            // The plan's key if it was found for this verifier at this very time, else
            // looked up (a later time may fall into another key epoch; not `recall`: the
            // plan's verifier is the one this flow saw last).
            let handle = if same && plan.found_ns == f.now_ns {
                plan.handle
            } else {
                let Some(h) = keys.find_ip(id.ia(), id.v6(), id.host, f.now_ns) else {
                    counters.packets += 1;
                    counters.no_key += 1;
                    return true;
                };
                h
            };
            // A deferred entry names its verifier by its index in the burst's table.
            let (id_ix, burst) = match defer {
                Some(_) if same && plan.burst == batch.burst => (plan.id_ix, plan.burst),
                Some(_) => match batch.push_id(&id) {
                    Some(ix) => (ix, batch.burst),
                    None => return false,
                },
                None if same => (plan.id_ix, plan.burst),
                None => (0, NO_BURST),
            };
            if let Some(p) = batch.plans[k].as_mut() {
                p.id = id;
                p.handle = handle;
                p.found_ns = f.now_ns;
                p.id_ix = id_ix;
                p.burst = burst;
            }
            (id, handle, id_ix)
        };
        let ctx = HopContext {
            ingress_if: f.ingress.ifid(),
            egress_if: out.ifid,
            len: f.len,
            now_ns: f.now_ns,
        };
        // The entry plan by reference (a copy of it per packet cost ~25 instructions).
        let Some(ep) = batch.plans[k].as_ref().map(|p| &p.entry) else {
            return false;
        };
        // The values, asked for as `gather` asks (node id, then the slots in order).
        let node_id = if hbh[10] & 0x80 != 0 {
            source.node_id()
        } else {
            None
        };
        let mut values = [0u64; 4];
        let mut supplied = 0u8;
        let local_ia = router.local_ia();
        for (r, &(_, code, _)) in ep.reads[..usize::from(ep.n_reads)].iter().enumerate() {
            if let Some(v) = read_instruction(source, local_ia, code, &ctx) {
                values[r] = v;
                supplied |= 1 << r;
            }
        }
        // The planned layout if the source supplied the same items as for the planning
        // packet; else the entry is laid out from what it did supply.
        let planned = node_id.is_some() == (ep.mask & 0x8 != 0) && supplied == ep.supplied;
        let g = if planned {
            None
        } else {
            let mut g = Gathered {
                node_id: node_id.unwrap_or(0),
                ingress_if: ctx.ingress_if,
                egress_if: ctx.egress_if,
                mask: ((hbh[10] >> 4) & 0x7) | if node_id.is_some() { 0x8 } else { 0 },
                values: [0; 4],
                widths: [0; 4],
                md_len: 0,
            };
            g.md_len = usize::from(BITMAP_BYTES[usize::from(g.mask)]);
            for (r, &(k, _, w)) in ep.reads[..usize::from(ep.n_reads)].iter().enumerate() {
                if supplied & (1 << r) != 0 {
                    g.values[usize::from(k)] = values[r];
                    g.widths[usize::from(k)] = usize::from(w);
                    g.md_len += usize::from(w);
                }
            }
            Some(g)
        };
        let len = match &g {
            None => usize::from(ep.len),
            Some(g) => entry_len(encrypt, g.md_len),
        };
        let e_end = free + len;
        if e_end > end {
            // Full: the general path sets X.
            return false;
        }
        // The padding option the entry overlaps ran to the end of the stack (at most 257
        // bytes): what is left of it is one option.
        match end - e_end {
            0 => {}
            1 => hbh[e_end] = opt_type::PAD1,
            r => {
                hbh[e_end] = opt_type::PADN;
                hbh[e_end + 1] = (r - 2) as u8;
            }
        }
        hbh[7] = new_tos;
        let mut prev_mac = [0u8; 4];
        prev_mac.copy_from_slice(&hbh[free - 4..free]);
        let e = &mut hbh[free..e_end];
        if let Some(g) = &g {
            emit_entry(e, g, role, f.hop, encrypt.then(|| nonces.nonce()), prev_mac);
        } else {
            // As `emit_entry` writes it, with the header and the layout from the plan.
            emit_planned(
                e,
                ep,
                encrypt.then(|| nonces.nonce()),
                node_id,
                &ctx,
                &values,
                prev_mac,
            );
        }
        counters.packets += 1;
        // Queued as it is (a job is free: one per packet of the burst); a single packet's
        // entry, or one too long to batch, is sealed now.
        let queued = match defer {
            Some(slot) if len <= BATCH_ENTRY_MAX => {
                batch.queue(slot, hl + free, len, encrypt, handle, id_ix, ctx.now_ns)
            }
            _ => false,
        };
        if !queued {
            let job = Seal {
                defer: None,
                at: hl + free,
                prev_mac,
                id,
                handle,
                now_ns: ctx.now_ns,
            };
            if seal_or_defer(keys, batch, e, &job).is_none() {
                counters.unsealed += 1;
            }
        }
        counters.pushed += 1;
        if encrypt {
            counters.encrypted += 1;
        }
        true
    }

    /// Writes (or aggregates) this router's entry. `(hbh_at, defer)`: where the HBH header
    /// starts in the packet and, in a burst, the packet's slot (its MAC may then be deferred).
    #[allow(clippy::too_many_arguments)]
    fn write(
        &mut self,
        local_ia: IsdAsn,
        head: &[u8],
        idint: &mut IdInt<&mut [u8]>,
        role: Role,
        hop: u8,
        ctx: &HopContext,
        (hbh_at, defer): (usize, Option<u8>),
    ) -> Result<(), Skip> {
        let IdIntStage {
            keys,
            source,
            nonces,
            counters,
            batch,
            ..
        } = self;
        let main = idint.main();
        if main.version() != 0 {
            return Err(Skip::Unsupported);
        }
        let mode = main.mode();
        if role.internal && mode == AggregationMode::PerBorderRouter {
            // Mode 2 records border routers only.
            return Ok(());
        }
        let close = role.last || mode == AggregationMode::Off;
        let delay = main.delay_hops();
        if delay > 0 {
            // Border routers count the hops (AS-internal nodes, unknown to the source, do not).
            if close && !role.internal {
                idint.main_mut().set_delay_hops(delay - 1);
            }
            counters.delayed += 1;
            return Ok(());
        }
        let Some(top) = idint.top() else {
            return Err(Skip::Malformed);
        };
        // The verifier as raw integers (cheap to compare); a HostAddr is built only when the
        // key has to be looked up.
        let id = match main.verifier_code() {
            0 => {
                let b = main.as_bytes();
                let t = main.verifier_addr_type();
                VerifierId::new(read_u64(b, 22), t, &b[30..30 + t.addr_len()])
            }
            code @ (1 | 2) => {
                let h = ScionHeader::new_checked(head).map_err(|_| Skip::Malformed)?;
                if code == 2 {
                    VerifierId::new(h.src_ia().to_u64(), h.src_addr_type(), h.src_host_bytes())
                } else {
                    VerifierId::new(h.dst_ia().to_u64(), h.dst_addr_type(), h.dst_host_bytes())
                }
            }
            _ => return Err(Skip::Unsupported),
        };
        if id.ty != AddrType::IPV4.nibble() && id.ty != AddrType::IPV6.nibble() {
            return Err(Skip::Unsupported);
        }
        // In a burst, the previous packet's verifier is remembered with its key's handle.
        let remembered = defer.and_then(|_| batch.recall(&id));
        let Some(handle) = remembered.or_else(|| keys.find(id.ia(), &id.host(), ctx.now_ns)) else {
            counters.no_key += 1;
            return Ok(());
        };
        let encrypt = close && main.encrypt();
        let bitmap = main.inst_bitmap();
        let instructions = main.instructions();

        let f = top.flags;
        let state = f & (eflags::S | eflags::I | eflags::E | eflags::C);
        // Open = written by this AS's ingress router (mode 1) or by an internal node (mode 3)
        // and not closed yet.
        let merge = match (role.internal, mode) {
            (false, AggregationMode::PerAs) => !role.first && state == eflags::I,
            (true, AggregationMode::PerAs) => state == eflags::I,
            (true, AggregationMode::PerBorderRouterAndInternal) => state == 0,
            _ => false,
        };
        // Only into an entry of this AS: its hop field must be this AS's (an entry left open
        // by an earlier AS whose egress router could not close it, say with the stack full,
        // has the same flags).
        let merge = merge
            && idint
                .entry_at(top.offset)
                .is_ok_and(|e| hop_of_this_as(head, hop, e.hop()));

        if !merge {
            // The common case: write the new entry straight into the stack.
            let g = gather(source, local_ia, bitmap, &instructions, ctx);
            let len = entry_len(encrypt, g.md_len);
            let at = match idint.reserve(len).map_err(|_| Skip::Malformed)? {
                PushOutcome::Pushed { offset } => offset,
                PushOutcome::StackFull => {
                    counters.stack_full += 1;
                    return Ok(());
                }
            };
            let e = idint.bytes_mut(at, len);
            let nonce = encrypt.then(|| nonces.nonce());
            emit_entry(e, &g, role, hop, nonce, top.mac);
            let job = Seal {
                defer,
                at: hbh_at + at,
                prev_mac: top.mac,
                id,
                handle,
                now_ns: ctx.now_ns,
            };
            if seal_or_defer(keys, batch, e, &job).is_none() {
                counters.unsealed += 1;
            }
            if defer.is_some() {
                batch.last = Some((id, handle));
            }
            counters.pushed += 1;
            if encrypt {
                counters.encrypted += 1;
            }
            return Ok(());
        }

        let mut md = Metadata::default();
        if bitmap & 0x8 != 0 {
            md.node_id = source.node_id();
        }
        if bitmap & 0x4 != 0 {
            md.node_count = Some(1);
        }
        if bitmap & 0x2 != 0 {
            md.ingress_if = Some(ctx.ingress_if);
        }
        if bitmap & 0x1 != 0 {
            md.egress_if = Some(ctx.egress_if);
        }
        let mut widths = [0usize; 4];
        for (k, ins) in instructions.iter().enumerate() {
            let w = ins.data_len();
            widths[k] = w;
            if w == 0 || ins.reserved_bit() {
                continue;
            }
            if let Some(v) = read_instruction(source, local_ia, ins.0, ctx) {
                md.slots[k] = Some(SlotValue {
                    len: w as u8,
                    value: fit(v, w),
                });
            }
        }
        let old = idint
            .entry_at(top.offset)
            .and_then(|e| EntryRepr::parse(&e))
            .map_err(|_| Skip::Malformed)?;
        let prev_mac = idint.mac_below(top.offset).ok_or(Skip::Malformed)?;
        let entry = EntryRepr {
            source: false,
            ingress: old.ingress,
            egress: role.last,
            aggregated: true,
            nonce: encrypt.then(|| nonces.nonce()),
            hop: old.hop,
            metadata: aggregate(
                &old.metadata,
                &md,
                idint.main().aggregation_functions(),
                widths,
            ),
            mac: [0; 4],
        };
        let at = match idint.replace_tos(&entry).map_err(|_| Skip::Malformed)? {
            PushOutcome::Pushed { offset } => offset,
            PushOutcome::StackFull => {
                counters.stack_full += 1;
                return Ok(());
            }
        };
        let Ok(mut e) = idint.entry_at_mut(at) else {
            return Err(Skip::Malformed);
        };
        if let Some(key) = keys.key(handle) {
            seal_entry(key, &mut e, prev_mac);
        } else {
            let key = keys
                .as_host_key(id.ia(), &id.host(), ctx.now_ns)
                .ok_or(Skip::Malformed)?;
            seal_entry(key, &mut e, prev_mac);
        }
        counters.aggregated += 1;
        if encrypt {
            counters.encrypted += 1;
        }
        Ok(())
    }
}

/// Whether hop field `entry_hop` belongs to the AS that the packet (SCION header `head`) is in
/// while its current hop field is `hop`: the same hop field, or the one before it when the
/// segments cross inside this AS (`hop` starts a later segment that is not a peering segment:
/// across a peering link the segments change between two ASes).
fn hop_of_this_as(head: &[u8], hop: u8, entry_hop: u8) -> bool {
    use idint_wire::path::PathMeta;
    use idint_wire::path::epic::EPIC_PREFIX_LEN;
    use idint_wire::scion::PathType;
    if entry_hop == hop {
        return true;
    }
    if hop == 0 || entry_hop != hop - 1 {
        return false;
    }
    let Ok(h) = ScionHeader::new_checked(head) else {
        return false;
    };
    let sp = match h.path_type() {
        PathType::Scion => h.path_offset(),
        PathType::Epic => h.path_offset() + EPIC_PREFIX_LEN,
        _ => return false,
    };
    let Some(m) = head.get(sp..sp + 4) else {
        return false;
    };
    let meta = PathMeta::from_u32(u32::from_be_bytes([m[0], m[1], m[2], m[3]]));
    let (s0, s1) = (meta.seg_len[0], meta.seg_len[1]);
    let segment = if hop == s0 {
        1
    } else if s1 > 0 && hop == s0 + s1 {
        2
    } else {
        return false;
    };
    // The info field's Peer flag.
    head.get(sp + 4 + 8 * segment)
        .is_some_and(|&flags| flags & 0x02 == 0)
}

/// A verifier (ISD-AS and IPv4/IPv6 host) as plain integers.
#[derive(Clone, Copy, PartialEq, Eq)]
struct VerifierId {
    ia: u64,
    host: u128,
    ty: u8,
}

impl VerifierId {
    /// From raw host bytes (4 for IPv4, 16 for IPv6; anything else keeps its type only and
    /// is refused by the caller).
    #[inline]
    fn new(ia: u64, t: AddrType, raw: &[u8]) -> Self {
        let host = if let Ok(b) = <[u8; 16]>::try_from(raw) {
            u128::from_be_bytes(b)
        } else if let Ok(b) = <[u8; 4]>::try_from(raw) {
            u128::from(u32::from_be_bytes(b)) << 96
        } else {
            0
        };
        VerifierId {
            ia,
            host,
            ty: t.nibble(),
        }
    }

    fn ia(&self) -> IsdAsn {
        IsdAsn::from_u64(self.ia)
    }

    fn v6(&self) -> bool {
        self.ty == AddrType::IPV6.nibble()
    }

    fn host(&self) -> HostAddr {
        let b = self.host.to_be_bytes();
        if self.ty == AddrType::IPV4.nibble() {
            HostAddr::V4(core::net::Ipv4Addr::new(b[0], b[1], b[2], b[3]))
        } else {
            HostAddr::V6(core::net::Ipv6Addr::from(b))
        }
    }
}

/// The checks and decisions of a fast push, kept for the next packets of the burst that carry
/// the same request along the same route to the same verifier (`FlowPlan::request`,
/// `route`, `top`, `pad` and the verifier compared byte for byte): they take the same
/// decisions without walking the stack again. Only values, nonce and MAC differ per packet.
#[derive(Clone, Copy)]
struct FlowPlan {
    /// HBH bytes 0-15 (extension header; main option type, length, flags, mode, verifier
    /// kind, StackLen, TOS, DelayHops, bitmap, aggregation functions, instructions).
    request: u128,
    /// The roles and the hop index ([`route_key`]).
    route: u32,
    /// The top entry's first 6 bytes (type, length, flags, hop, mask and lengths), at `t`.
    top: u64,
    /// Start of the stack (the source entry's type byte is checked there too).
    s: u16,
    t: u16,
    /// End of the top entry (where the new entry goes) and end of the stack.
    free: u16,
    end: u16,
    /// The header of the one padding option that covered `free..end`.
    pad: [u8; 2],
    /// The new TOS byte.
    new_tos: u8,
    encrypt: bool,
    role: Role,
    at: VerifierAt,
    id: VerifierId,
    /// `id`'s index in the verifier table of burst number `burst` (meaningless in any
    /// other burst: the table is refilled per burst).
    id_ix: u8,
    burst: u64,
    /// `id`'s key, found at `found_ns`: trusted only at that same time (a later packet may
    /// fall into another key epoch), and only while the store still holds it (its handle).
    handle: KeyHandle,
    found_ns: u64,
    entry: EntryPlan,
}

/// The entry a plan writes while the source supplies the same items as for the planning
/// packet: everything but the values, the nonce and the MAC is fixed.
#[derive(Clone, Copy)]
struct EntryPlan {
    /// The first 6 bytes (type, length, flags, hop, mask and slot lengths).
    head: [u8; 6],
    len: u8,
    /// The Mask nibble written (node id 8, node count 4, ingress 2, egress 1).
    mask: u8,
    /// The slots the source is asked for, in order: (slot index, instruction code, width);
    /// and which of them it supplied (bit `r` for `reads[r]`).
    reads: [(u8, u8, u8); 4],
    n_reads: u8,
    supplied: u8,
}

impl EntryPlan {
    /// The layout of `e`, just written from `g` for `instructions`.
    fn new(e: &[u8], g: &Gathered, instructions: &[idint_wire::idint::Instruction; 4]) -> Self {
        let mut p = EntryPlan {
            head: [0; 6],
            len: e.len() as u8,
            mask: g.mask,
            reads: [(0, 0, 0); 4],
            n_reads: 0,
            supplied: 0,
        };
        p.head.copy_from_slice(&e[..6]);
        for (k, ins) in instructions.iter().enumerate() {
            let w = ins.data_len();
            if w == 0 || ins.reserved_bit() {
                continue;
            }
            let r = usize::from(p.n_reads);
            p.reads[r] = (k as u8, ins.0, w as u8);
            if g.widths[k] != 0 {
                p.supplied |= 1 << r;
            }
            p.n_reads += 1;
        }
        p
    }
}

/// Where a request's verifier is: in the main option (`types: None`; offsets in the HBH
/// header) or the SCION address header (`types`: its address-type byte; offsets in it).
#[derive(Clone, Copy)]
struct VerifierAt {
    types: Option<u8>,
    ia_at: u8,
    host_at: u8,
    v6: bool,
}

impl VerifierAt {
    /// The verifier of a packet whose verifier sits where this one's did (`None` if the
    /// address types differ or the bytes are not there).
    #[inline(always)]
    fn read(&self, head: &[u8], hbh: &[u8]) -> Option<VerifierId> {
        let bytes = match self.types {
            Some(t) if head.get(9) == Some(&t) => head,
            Some(_) => return None,
            None => hbh,
        };
        let (ia_at, host_at) = (usize::from(self.ia_at), usize::from(self.host_at));
        let (t, n) = if self.v6 {
            (AddrType::IPV6, 16)
        } else {
            (AddrType::IPV4, 4)
        };
        let ia = bytes.get(ia_at..ia_at + 8)?;
        let host = bytes.get(host_at..host_at + n)?;
        Some(VerifierId::new(
            u64::from_be_bytes(ia.try_into().ok()?),
            t,
            host,
        ))
    }

    /// Whether a packet whose verifier sits where this one's did has verifier `id` (raw
    /// integer compares, no [`VerifierId`] built).
    #[inline(always)]
    fn holds(&self, head: &[u8], hbh: &[u8], id: &VerifierId) -> bool {
        let bytes = match self.types {
            Some(t) if head.get(9) == Some(&t) => head,
            Some(_) => return false,
            None => hbh,
        };
        let (ia_at, host_at) = (usize::from(self.ia_at), usize::from(self.host_at));
        let Some(ia) = bytes.get(ia_at..ia_at + 8) else {
            return false;
        };
        let host = if self.v6 {
            match bytes.get(host_at..host_at + 16) {
                Some(h) => u128::from_be_bytes(h.try_into().unwrap_or([0; 16])),
                None => return false,
            }
        } else {
            match bytes.get(host_at..host_at + 4) {
                Some(h) => u128::from(u32::from_be_bytes(h.try_into().unwrap_or([0; 4]))) << 96,
                None => return false,
            }
        };
        u64::from_be_bytes(ia.try_into().unwrap_or([0; 8])) == id.ia && host == id.host
    }
}

/// What of the forwarding decision an entry depends on: the roles and the hop index.
#[inline(always)]
fn route_key(f: &Forwarded, out: Out) -> u32 {
    u32::from(matches!(f.ingress, Ingress::External(_)))
        | (u32::from(out.egress) << 1)
        | (u32::from(out.last) << 2)
        | (u32::from(f.hop) << 8)
}

/// Plans kept.
const PLANS: usize = 4;

/// A [`FlowPlan::burst`] no burst has.
const NO_BURST: u64 = u64::MAX;

// The burst pass tracks its jobs in 64-bit masks.
const _: () = assert!(MAX_BURST <= 64);

/// Entries up to this length are sealed in the burst pass (router entries are at most 64).
const BATCH_ENTRY_MAX: usize = 80;
const BATCH_BLOCKS: usize = BATCH_ENTRY_MAX / 16;
/// Keystream blocks of one batched entry (everything after the nonce: at most 80 - 18 bytes).
const BATCH_KS: usize = (BATCH_ENTRY_MAX - NONCE_OFFSET - NONCE_LEN).div_ceil(16);

/// One deferred entry: where it is and its key. Its bytes stay in the packet (MAC field
/// holding the previous entry's MAC, i.e. exactly the MAC input) until the burst pass reads
/// them.
#[derive(Clone, Copy)]
struct SealJob {
    slot: u8,
    n_blocks: u8,
    n_ks: u8,
    len: u8,
    at: u16,
    handle: KeyHandle,
    /// The verifier (index in [`SealBatch::ids`]), to look the key up again should the
    /// handle have gone stale.
    id: u8,
}

impl Default for SealJob {
    fn default() -> Self {
        SealJob {
            slot: 0,
            n_blocks: 0,
            n_ks: 0,
            len: 0,
            at: 0,
            handle: KeyHandle {
                index: 0,
                generation: 0,
            },
            id: 0,
        }
    }
}

const NO_VERIFIER: VerifierId = VerifierId {
    ia: 0,
    host: 0,
    ty: 0,
};

/// The entries of a burst waiting for their MACs (and keystreams): sealed together at the end
/// of the burst, the AES chains of every entry in flight at once, whatever their keys.
struct SealBatch {
    jobs: [SealJob; MAX_BURST],
    n: usize,
    /// The verifier of the last deferred entry and its key: consecutive packets of a flow
    /// skip the key lookup.
    last: Option<(VerifierId, KeyHandle)>,
    /// The plans of the last fast pushes with different requests or roles, for the next
    /// packets of their flows (packets of a few flows interleave in a burst), kept from burst
    /// to burst and for single packets: a plan's key is looked up again whenever the time
    /// differs from when it was found.
    plans: [Option<FlowPlan>; PLANS],
    /// Number of the current burst (the verifier table `ids` belongs to it).
    burst: u64,
    /// Where the next new plan goes (round robin).
    next_plan: usize,
    /// The verifiers of the burst's jobs (consecutive jobs of a verifier share an entry).
    ids: [VerifierId; MAX_BURST],
    n_ids: usize,
    now_ns: u64,
    /// Scratch of the burst pass, kept here so that it is not zeroed per burst (only what a
    /// burst writes is read): the MAC input blocks (block `s` of entry `i` at `[s][i]`) and
    /// the keystream blocks.
    blocks: [[[u8; 16]; MAX_BURST]; BATCH_BLOCKS],
    ks: [[u8; 16]; MAX_BURST * BATCH_KS],
    macs: [[u8; 16]; MAX_BURST],
}

impl core::fmt::Debug for SealBatch {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SealBatch")
            .field("pending", &self.n)
            .finish_non_exhaustive()
    }
}

/// `KEEP_MASK[k]`: `k` bytes of ones, then zeros.
const KEEP_MASK: [[u8; 16]; 17] = {
    let mut t = [[0u8; 16]; 17];
    let mut k = 0;
    while k <= 16 {
        let mut b = 0;
        while b < k {
            t[k][b] = 0xff;
            b += 1;
        }
        k += 1;
    }
    t
};

/// `bytes[at..at + 16]` with only its first `keep` bytes (the rest zero), read with one
/// 16-byte load when the buffer allows. Blocks stay byte arrays: as `u128` they went through
/// general registers and were stored in halves that the AES loads then could not forward.
#[inline(always)]
fn load_block(bytes: &[u8], at: usize, keep: usize) -> [u8; 16] {
    let mask = &KEEP_MASK[keep.min(16)];
    match bytes
        .get(at..at + 16)
        .and_then(|b| <&[u8; 16]>::try_from(b).ok())
    {
        Some(b) => {
            let mut out = [0u8; 16];
            for ((o, b), m) in out.iter_mut().zip(b).zip(mask) {
                *o = b & m;
            }
            out
        }
        None => {
            let mut b = [0u8; 16];
            for (k, d) in b.iter_mut().enumerate().take(keep) {
                *d = bytes.get(at + k).copied().unwrap_or(0);
            }
            b
        }
    }
}

/// XORs the first `keep` bytes of `x` into `bytes[at..]` (one 16-byte read-modify-write
/// when the buffer allows: the bytes past `keep` are XORed with zero).
#[inline(always)]
fn xor_block(bytes: &mut [u8], at: usize, x: &[u8; 16], keep: usize) {
    let mask = &KEEP_MASK[keep.min(16)];
    if let Some(b) = bytes
        .get_mut(at..at + 16)
        .and_then(|b| <&mut [u8; 16]>::try_from(b).ok())
    {
        let v = u128::from_le_bytes(*b) ^ (u128::from_le_bytes(*x) & u128::from_le_bytes(*mask));
        *b = v.to_le_bytes();
        return;
    }
    for (k, x) in x.iter().enumerate().take(keep) {
        if let Some(d) = bytes.get_mut(at + k) {
            *d ^= x;
        }
    }
}

impl SealBatch {
    fn new() -> Box<Self> {
        Box::new(SealBatch {
            jobs: [SealJob::default(); MAX_BURST],
            n: 0,
            last: None,
            plans: [None; PLANS],
            burst: 0,
            next_plan: 0,
            ids: [NO_VERIFIER; MAX_BURST],
            n_ids: 0,
            now_ns: 0,
            blocks: [[[0; 16]; MAX_BURST]; BATCH_BLOCKS],
            ks: [[0; 16]; MAX_BURST * BATCH_KS],
            macs: [[0; 16]; MAX_BURST],
        })
    }

    /// The key handle of verifier `id` if the previous deferred entry of this burst had it.
    #[inline]
    fn recall(&self, id: &VerifierId) -> Option<KeyHandle> {
        match self.last {
            Some((v, h)) if v == *id => Some(h),
            _ => None,
        }
    }

    /// Queues the entry `e` (burst slot `slot`, described by `job`, its MAC field holding the
    /// previous MAC); false if it must be sealed now (too long, batch full).
    #[inline(always)]
    fn defer(&mut self, slot: u8, e: &[u8], job: &Seal) -> bool {
        let len = e.len();
        let at = job.at;
        if len > BATCH_ENTRY_MAX || self.n == MAX_BURST || at > usize::from(u16::MAX) {
            return false;
        }
        let Some(id) = self.id_index(&job.id) else {
            return false;
        };
        self.queue(
            slot,
            at,
            len,
            e[2] & eflags::C != 0,
            job.handle,
            id,
            job.now_ns,
        )
    }

    /// Keeps `plan`: in place of the plan for the same request and roles, else of the oldest.
    #[inline(always)]
    fn keep_plan(&mut self, plan: FlowPlan) {
        let k = match self.plans.iter().position(|p| {
            p.as_ref()
                .is_some_and(|p| p.request == plan.request && p.route == plan.route)
        }) {
            Some(k) => k,
            None => {
                let k = self.next_plan % PLANS;
                self.next_plan = k + 1;
                k
            }
        };
        self.plans[k] = Some(plan);
    }

    /// The index of verifier `id` in [`Self::ids`]: the last one's if equal, else appended
    /// (`None` once the table is full: the entry is then sealed at once).
    #[inline(always)]
    fn id_index(&mut self, id: &VerifierId) -> Option<u8> {
        if let Some(k) = self.n_ids.checked_sub(1)
            && self.ids[k] == *id
        {
            return Some(k as u8);
        }
        self.push_id(id)
    }

    /// Appends verifier `id` to [`Self::ids`]; its index (`None` once the table is full).
    #[inline(always)]
    fn push_id(&mut self, id: &VerifierId) -> Option<u8> {
        let k = self.n_ids;
        *self.ids.get_mut(k)? = *id;
        self.n_ids = k + 1;
        Some(k as u8)
    }

    /// Queues an entry of `len` bytes at `at` in burst slot `slot` (the caller checked it
    /// fits: `len <= BATCH_ENTRY_MAX`, a free job, `at` within 16 bits), with its key and
    /// verifier.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn queue(
        &mut self,
        slot: u8,
        at: usize,
        len: usize,
        encrypted: bool,
        handle: KeyHandle,
        id: u8,
        now_ns: u64,
    ) -> bool {
        let Some(j) = self.jobs.get_mut(self.n) else {
            return false;
        };
        if at > usize::from(u16::MAX) {
            return false;
        }
        j.slot = slot;
        j.handle = handle;
        j.id = id;
        j.len = len as u8;
        j.at = at as u16;
        j.n_blocks = len.div_ceil(16) as u8;
        j.n_ks = if encrypted {
            (len - NONCE_OFFSET - NONCE_LEN).div_ceil(16) as u8
        } else {
            0
        };
        self.now_ns = now_ns;
        self.n += 1;
        true
    }

    /// Seals every queued entry into its packet. Not inlined: once per burst, and inlined into
    /// the burst loop it made that loop's code worse (more instructions per packet).
    /// Returns how many entries could not be sealed because their key was no longer
    /// available (their MAC stays zero, so verifiers reject them).
    #[inline(never)]
    fn run<P: BurstPacket, K: VerifierKeys>(&mut self, keys: &mut K, pkts: &mut [P]) -> u64 {
        use aes::cipher::BlockCipherEncrypt;
        use idint_wire::crypto::{cbc_mac_lanes, encrypt_blocks};
        // The last verifier's handle is only trusted within the burst; plans keep theirs
        // with the time they were found (see `FlowPlan::found_ns`), and their indices into
        // the verifier table with the burst they belong to.
        self.last = None;
        self.burst += 1;
        let n_ids = core::mem::take(&mut self.n_ids);
        let n = core::mem::take(&mut self.n);
        if n == 0 {
            return 0;
        }
        let SealBatch {
            jobs,
            blocks,
            ks,
            macs,
            now_ns,
            ids,
            ..
        } = self;
        let ids = &ids[..n_ids];
        let (jobs, now_ns) = (&jobs[..n], *now_ns);
        let macs = &mut macs[..n];
        let enc_from = NONCE_OFFSET + NONCE_LEN;
        // The MAC inputs and counter blocks, read from the packets; an entry whose bytes are
        // not there (not expected) is left alone. Bit `i` of `there` / `sealed`: job `i`.
        let mut n_blocks = [0u8; MAX_BURST];
        let mut n_ks = 0;
        let mut there = 0u64;
        let h0 = jobs[0].handle;
        let mut one_key = true;
        for (i, j) in jobs.iter().enumerate() {
            one_key &= j.handle == h0;
            let Some(pkt) = pkts.get_mut(usize::from(j.slot)) else {
                continue;
            };
            let buf = pkt.buffer();
            let (at, len) = (usize::from(j.at), usize::from(j.len));
            if at + len > buf.len() {
                continue;
            }
            there |= 1 << i;
            n_blocks[i] = j.n_blocks;
            for (s, row) in blocks.iter_mut().enumerate().take(usize::from(j.n_blocks)) {
                row[i] = load_block(buf, at + 16 * s, len - 16 * s);
            }
            if j.n_ks > 0 {
                let mut nonce = [0u8; 12];
                nonce.copy_from_slice(&buf[at + NONCE_OFFSET..at + enc_from]);
                for c in 0..j.n_ks {
                    let b = &mut ks[n_ks];
                    b[..12].copy_from_slice(&nonce);
                    b[12..].copy_from_slice(&u32::from(c).to_be_bytes());
                    n_ks += 1;
                }
            }
        }
        let mut sealed = 0u64;
        {
            let keys: &K = keys;
            match keys.key(h0) {
                // The common case (the burst's entries share a verifier): every chain and
                // keystream block in one pass with the key schedule loaded once.
                Some(k) if one_key => {
                    cbc_mac_lanes(k, &blocks[..], &n_blocks, macs);
                    encrypt_blocks(k, &mut ks[..n_ks]);
                    sealed = there;
                }
                _ => {
                    // Step `s` advances every chain by one block, whatever their keys, so
                    // the AES computations of different entries overlap.
                    let mut ciphers: [Option<&Aes128Enc>; MAX_BURST] = [None; MAX_BURST];
                    for (i, j) in jobs.iter().enumerate() {
                        if there & (1 << i) != 0 {
                            ciphers[i] = keys.key(j.handle);
                            if ciphers[i].is_some() {
                                sealed |= 1 << i;
                            }
                        }
                    }
                    macs.fill([0; 16]);
                    let steps = n_blocks.iter().copied().max().unwrap_or(0);
                    for (s, row) in blocks.iter().enumerate().take(usize::from(steps)) {
                        for i in 0..n {
                            if let Some(k) = ciphers[i]
                                && s < usize::from(n_blocks[i])
                            {
                                let mut x = Array::from(xor_arrays(&macs[i], &row[i]));
                                k.encrypt_block(&mut x);
                                macs[i] = x.into();
                            }
                        }
                    }
                    let mut from = 0;
                    for (i, j) in jobs.iter().enumerate() {
                        let m = if there & (1 << i) != 0 {
                            usize::from(j.n_ks)
                        } else {
                            0
                        };
                        if let Some(k) = ciphers[i] {
                            encrypt_blocks(k, &mut ks[from..from + m]);
                        }
                        from += m;
                    }
                }
            }
        }
        // A handle that went stale within the burst (a later lookup evicted its key): look the
        // key up again and seal that entry on its own.
        let mut from = 0;
        for (i, j) in jobs
            .iter()
            .enumerate()
            .take(if sealed != there { n } else { 0 })
        {
            let here = there & (1 << i) != 0;
            let m = if here { usize::from(j.n_ks) } else { 0 };
            if here
                && sealed & (1 << i) == 0
                && let Some(id) = ids.get(usize::from(j.id))
                && let Some(k) = keys.as_host_key(id.ia(), &id.host(), now_ns)
            {
                let mut mac = [0u8; 16];
                for row in blocks.iter().take(usize::from(n_blocks[i])) {
                    let mut x = Array::from(xor_arrays(&mac, &row[i]));
                    k.encrypt_block(&mut x);
                    mac = x.into();
                }
                macs[i] = mac;
                encrypt_blocks(k, &mut ks[from..from + m]);
                sealed |= 1 << i;
            }
            from += m;
        }
        let mut lost = 0;
        let mut from = 0;
        for (i, j) in jobs.iter().enumerate() {
            if there & (1 << i) == 0 {
                continue;
            }
            let m = usize::from(j.n_ks);
            let stream = &ks[from..from + m];
            from += m;
            let Some(pkt) = pkts.get_mut(usize::from(j.slot)) else {
                continue;
            };
            let buf = pkt.buffer();
            let (at, len) = (usize::from(j.at), usize::from(j.len));
            let Some(e) = buf.get_mut(at..at + len) else {
                continue;
            };
            if sealed & (1 << i) == 0 {
                // Never leave unprotected values behind: the entry keeps its shape, carries
                // zeros and a zero MAC (verifiers reject it).
                e[NONCE_OFFSET..].fill(0);
                lost += 1;
                continue;
            }
            e[len - 4..].copy_from_slice(&macs[i][..4]);
            for (c, k) in stream.iter().enumerate() {
                let p = at + enc_from + 16 * c;
                xor_block(buf, p, k, at + len - p);
            }
        }
        lost
    }
}

/// The values of a new entry, gathered before its length is known (kept as integers: no
/// byte staging buffer that would be read back with wider loads).
struct Gathered {
    node_id: u32,
    ingress_if: u16,
    egress_if: u16,
    /// The Mask nibble of the entry (items actually present).
    mask: u8,
    values: [u64; 4],
    widths: [usize; 4],
    md_len: usize,
}

/// Reads the bitmap items and the instruction values this router can supply.
#[inline(always)]
fn gather<S: TelemetrySource>(
    source: &mut S,
    local_ia: IsdAsn,
    bitmap: u8,
    instructions: &[idint_wire::idint::Instruction; 4],
    ctx: &HopContext,
) -> Gathered {
    let mut g = Gathered {
        node_id: 0,
        ingress_if: ctx.ingress_if,
        egress_if: ctx.egress_if,
        mask: bitmap & 0x7,
        values: [0; 4],
        widths: [0; 4],
        md_len: 0,
    };
    if bitmap & 0x8 != 0
        && let Some(id) = source.node_id()
    {
        g.node_id = id;
        g.mask |= 0x8;
    }
    g.md_len = usize::from(BITMAP_BYTES[usize::from(g.mask)]);
    for (k, ins) in instructions.iter().enumerate() {
        let w = ins.data_len();
        if w == 0 || ins.reserved_bit() {
            continue;
        }
        if let Some(v) = read_instruction(source, local_ia, ins.0, ctx) {
            g.values[k] = v;
            g.widths[k] = w;
            g.md_len += w;
        }
    }
    g
}

/// Bytes of the bitmap items for each Mask value (node id 4, node count 2, interfaces 2 + 2).
const BITMAP_BYTES: [u8; 16] = {
    let mut t = [0u8; 16];
    let mut m = 0;
    while m < 16 {
        t[m] = (if m & 8 != 0 { 4 } else { 0 })
            + (if m & 4 != 0 { 2 } else { 0 })
            + (if m & 2 != 0 { 2 } else { 0 })
            + (if m & 1 != 0 { 2 } else { 0 });
        m += 1;
    }
    t
};

/// Writes the low `w` bytes (2, 4, 6 or 8) of `v` big-endian at `e[p..]` with fixed-size
/// stores.
#[inline(always)]
fn put_be(e: &mut [u8], p: usize, v: u64, w: usize) {
    match w {
        2 => e[p..p + 2].copy_from_slice(&(v as u16).to_be_bytes()),
        4 => e[p..p + 4].copy_from_slice(&(v as u32).to_be_bytes()),
        6 => {
            e[p..p + 2].copy_from_slice(&((v >> 32) as u16).to_be_bytes());
            e[p + 2..p + 6].copy_from_slice(&(v as u32).to_be_bytes());
        }
        _ => e[p..p + 8].copy_from_slice(&v.to_be_bytes()),
    }
}

/// Writes a new plaintext entry into `e`, which has exactly its length, with `prev_mac` (the
/// MAC of the entry below) in its MAC field: the entry is then exactly its MAC input.
#[inline(always)]
fn emit_entry(
    e: &mut [u8],
    g: &Gathered,
    role: Role,
    hop: u8,
    nonce: Option<[u8; 12]>,
    prev_mac: [u8; 4],
) {
    let len = e.len();
    e[0] = opt_type::IDINT_ENTRY;
    e[1] = (len - 2) as u8;
    e[2] = (u8::from(role.first) * eflags::I)
        | (u8::from(role.egress) * eflags::E)
        | (u8::from(nonce.is_some()) * eflags::C);
    e[3] = (hop & 0x3f) << 2;
    let ml = g.widths.map(|w| (w / 2) as u16);
    let word = (u16::from(g.mask) << 12) | (ml[0] << 9) | (ml[1] << 6) | (ml[2] << 3) | ml[3];
    e[4..6].copy_from_slice(&word.to_be_bytes());
    let mut p = NONCE_OFFSET;
    if let Some(n) = nonce {
        e[p..p + NONCE_LEN].copy_from_slice(&n);
        p += NONCE_LEN;
    }
    if g.mask & 0x8 != 0 {
        put_be(e, p, u64::from(g.node_id), 4);
        p += 4;
    }
    for (bit, v) in [(0x4, 1), (0x2, g.ingress_if), (0x1, g.egress_if)] {
        if g.mask & bit != 0 {
            put_be(e, p, u64::from(v), 2);
            p += 2;
        }
    }
    for k in 0..4 {
        let w = g.widths[k];
        if w != 0 {
            put_be(e, p, g.values[k], w);
            p += w;
        }
    }
    // Zero padding (0-3 bytes) and the MAC field: `len - p` is 4 to 7, so two fixed 4-byte
    // stores cover it (a loop here became a call to memset per packet).
    e[p..p + 4].fill(0);
    e[len - 4..].copy_from_slice(&prev_mac);
}

/// Writes a new plaintext entry into `e` (exactly its length) in the layout `ep` planned:
/// what [`emit_entry`] writes for the same items, header bytes taken from the plan. `values[r]`
/// is the value of `ep.reads[r]` (every read of the plan was supplied). Kept apart from
/// `emit_entry` on purpose: sharing the metadata writer between the two cost 25 instructions
/// per packet on this path (callgrind, 8 B authenticated).
#[inline(always)]
fn emit_planned(
    e: &mut [u8],
    ep: &EntryPlan,
    nonce: Option<[u8; 12]>,
    node_id: Option<u32>,
    ctx: &HopContext,
    values: &[u64; 4],
    prev_mac: [u8; 4],
) {
    let len = e.len();
    e[..6].copy_from_slice(&ep.head);
    let mut p = NONCE_OFFSET;
    if let Some(n) = nonce {
        e[p..p + NONCE_LEN].copy_from_slice(&n);
        p += NONCE_LEN;
    }
    if let Some(id) = node_id {
        put_be(e, p, u64::from(id), 4);
        p += 4;
    }
    for (bit, v) in [(0x4, 1), (0x2, ctx.ingress_if), (0x1, ctx.egress_if)] {
        if ep.mask & bit != 0 {
            put_be(e, p, u64::from(v), 2);
            p += 2;
        }
    }
    for (r, (&(_, _, w), &v)) in ep.reads[..usize::from(ep.n_reads)]
        .iter()
        .zip(values)
        .enumerate()
    {
        if ep.supplied & (1 << r) != 0 {
            let w = usize::from(w);
            put_be(e, p, v, w);
            p += w;
        }
    }
    e[p..p + 4].fill(0);
    e[len - 4..].copy_from_slice(&prev_mac);
}

/// Where a written entry's MAC comes from.
struct Seal {
    /// Burst slot, if the MAC may be deferred to the end of the burst.
    defer: Option<u8>,
    /// Offset of the entry in the packet.
    at: usize,
    prev_mac: [u8; 4],
    id: VerifierId,
    /// The verifier's key.
    handle: KeyHandle,
    now_ns: u64,
}

/// Queues the entry's MAC (and keystream) for the end of the burst, or seals it now. `None`
/// if its key is not available any more (not expected: it was found moments before); the
/// entry's values, nonce and MAC are then zeroed.
#[inline(always)]
fn seal_or_defer<K: VerifierKeys>(
    keys: &mut K,
    batch: &mut SealBatch,
    e: &mut [u8],
    job: &Seal,
) -> Option<()> {
    if let Some(slot) = job.defer
        && batch.defer(slot, e, job)
    {
        return Some(());
    }
    if let Some(key) = keys.key(job.handle) {
        seal_entry(key, &mut Entry::new_unchecked(e), job.prev_mac);
        return Some(());
    }
    let Some(key) = keys.as_host_key(job.id.ia(), &job.id.host(), job.now_ns) else {
        // Never leave unprotected values behind (as the burst pass does): the entry keeps
        // its shape, carries zeros and a zero MAC, which verifiers reject.
        if let Some(rest) = e.get_mut(NONCE_OFFSET..) {
            rest.fill(0);
        }
        return None;
    };
    seal_entry(key, &mut Entry::new_unchecked(e), job.prev_mac);
    Some(())
}

#[derive(Clone, Copy)]
struct Role {
    first: bool,
    egress: bool,
    last: bool,
    /// An AS-internal node, not a border router.
    internal: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merged_counters_saturate() {
        let mut a = IdIntCounters {
            packets: u64::MAX - 1,
            ..IdIntCounters::default()
        };
        let b = IdIntCounters {
            packets: 5,
            pushed: 2,
            ..IdIntCounters::default()
        };
        a.merge(&b);
        assert_eq!((a.packets, a.pushed), (u64::MAX, 2));
    }

    fn s(len: u8, value: u64) -> Option<SlotValue> {
        Some(SlotValue { len, value })
    }

    #[test]
    fn every_aggregation_function() {
        let cases = [
            (AggregationFunction::First, 5, 9, 5),
            (AggregationFunction::Last, 5, 9, 9),
            (AggregationFunction::Min, 5, 9, 5),
            (AggregationFunction::Min, 9, 5, 5),
            (AggregationFunction::Max, 5, 9, 9),
            (AggregationFunction::Max, 9, 5, 9),
            (AggregationFunction::Sum, 5, 9, 14),
            (AggregationFunction::Unknown(6), 5, 9, 5),
        ];
        for (f, a, b, want) in cases {
            assert_eq!(aggregate_slot(f, s(4, a), s(4, b), 4), s(4, want), "{f:?}");
        }
    }

    #[test]
    fn sums_wrap_in_the_slot_width() {
        let f = AggregationFunction::Sum;
        assert_eq!(aggregate_slot(f, s(2, 0xfff0), s(2, 0x20), 2), s(2, 0x10));
        assert_eq!(aggregate_slot(f, s(4, 0xffff_ffff), s(4, 1), 4), s(4, 0));
        assert_eq!(
            aggregate_slot(f, s(6, 0xffff_ffff_ffff), s(6, 2), 6),
            s(6, 1)
        );
        assert_eq!(aggregate_slot(f, s(8, u64::MAX), s(8, 3), 8), s(8, 2));
    }

    #[test]
    fn empty_sides_and_wrong_lengths() {
        for f in [
            AggregationFunction::First,
            AggregationFunction::Min,
            AggregationFunction::Sum,
        ] {
            assert_eq!(aggregate_slot(f, None, s(4, 7), 4), s(4, 7));
            assert_eq!(aggregate_slot(f, s(4, 7), None, 4), s(4, 7));
            assert_eq!(aggregate_slot(f, None, None, 4), None);
            // A stored slot of the wrong length is ignored.
            assert_eq!(aggregate_slot(f, s(2, 1), s(4, 7), 4), s(4, 7));
            assert_eq!(aggregate_slot(f, s(2, 1), None, 4), None);
        }
    }

    #[test]
    fn bitmap_items_merge() {
        let old = Metadata {
            node_id: Some(1),
            node_count: Some(u16::MAX),
            ingress_if: Some(2),
            egress_if: None,
            slots: [None; 4],
        };
        let new = Metadata {
            node_id: Some(3),
            node_count: Some(1),
            ingress_if: Some(0),
            egress_if: Some(5),
            slots: [None; 4],
        };
        let m = aggregate(&old, &new, [AggregationFunction::Last; 4], [0; 4]);
        assert_eq!(m.node_id, Some(3));
        assert_eq!(m.node_count, Some(u16::MAX), "saturates");
        assert_eq!((m.ingress_if, m.egress_if), (Some(2), Some(5)));
    }

    /// A SCION header with a two-segment path (3 + 2 hop fields), current hop `hop`, the
    /// second info field's Peer flag `peer`.
    fn two_segment_header(hop: u8, peer: bool) -> alloc::vec::Vec<u8> {
        use idint_wire::path::scion::{HopField, InfoField, PathMeta, ScionPathRepr};
        use idint_wire::scion::{FlowId, NextHdr, PathType, ScionRepr};
        let mut infos = [InfoField::default(); 3];
        infos[0].peer = peer;
        infos[1].peer = peer;
        let path = ScionPathRepr {
            meta: PathMeta {
                curr_inf: u8::from(hop >= 3),
                curr_hf: hop,
                reserved: 0,
                seg_len: [3, 2, 0],
            },
            infos,
            hops: [HopField::default(); 64],
        };
        let mut pb = alloc::vec![0u8; path.buffer_len()];
        path.emit(&mut pb).unwrap();
        let repr = ScionRepr {
            version: 0,
            traffic_class: 0,
            flow_id: FlowId::new(1).unwrap(),
            next_header: NextHdr::from(17),
            path_type: PathType::Scion,
            path_len: pb.len(),
            payload_len: 0,
            dst_ia: "1-ff00:0:2".parse().unwrap(),
            src_ia: "1-ff00:0:1".parse().unwrap(),
            dst_host: HostAddr::V4(core::net::Ipv4Addr::new(10, 0, 0, 2)),
            src_host: HostAddr::V4(core::net::Ipv4Addr::new(10, 0, 0, 1)),
        };
        let mut v = alloc::vec![0u8; repr.header_len()];
        repr.emit(&mut v).unwrap();
        let at = repr.address_end();
        v[at..].copy_from_slice(&pb);
        v
    }

    #[test]
    fn entries_of_this_as_by_hop_field() {
        // Within a segment only the current hop field is this AS's.
        let h = two_segment_header(1, false);
        assert!(hop_of_this_as(&h, 1, 1));
        assert!(!hop_of_this_as(&h, 1, 0), "the previous AS");
        assert!(!hop_of_this_as(&h, 1, 2));
        // Hop 3 starts the second segment: crossing inside this AS, hop 2 is this AS's too.
        let h = two_segment_header(3, false);
        assert!(hop_of_this_as(&h, 3, 3));
        assert!(hop_of_this_as(&h, 3, 2), "segment crossover in this AS");
        assert!(!hop_of_this_as(&h, 3, 1));
        // Across a peering link the segments change between two ASes.
        let h = two_segment_header(3, true);
        assert!(hop_of_this_as(&h, 3, 3));
        assert!(!hop_of_this_as(&h, 3, 2), "the peer AS's hop field");
        // No header to read: only the current hop field.
        assert!(hop_of_this_as(&[], 3, 3));
        assert!(!hop_of_this_as(&[], 3, 2));
    }

    #[test]
    fn nonces_do_not_repeat() {
        let mut g = CtrDrbg::new([7; 32]);
        let a: alloc::vec::Vec<[u8; 12]> = (0..1000).map(|_| g.nonce()).collect();
        for (i, x) in a.iter().enumerate() {
            assert!(a[i + 1..].iter().all(|y| y != x));
        }
        let mut h = CtrDrbg::new([8; 32]);
        assert_ne!(h.nonce(), CtrDrbg::new([7; 32]).nonce());
    }
}
