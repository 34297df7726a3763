//! Templated pushes: a flow's first fast push leaves a template (`plan`: its checks,
//! decisions and plaintext entry); the flow's next packets are checked against it byte for
//! byte instead of walking the stack again, and their entry is written from its bytes
//! ([`IdIntStage::push_planned`]).

use idint_wire::ext::opt_type;
use idint_wire::idint::entry::{MAC_LEN, NONCE_LEN, NONCE_OFFSET, entry_len};

use crate::burst::MAX_BURST;
use crate::bytes::{read_u48_le, read_u128_le};
use crate::config::Router;
use crate::hook::Forwarded;
use crate::outcome::Ingress;
use crate::telemetry::{HopContext, TelemetrySource, read_instruction};

use super::IdIntStage;
use super::emit::emit_entry;
use super::keys::VerifierId;
use super::keys::VerifierKeys;
use super::layout::{INST_BITMAP, INST_BITMAP_SHIFT, REQUEST_END, TOS};
use super::nonces::NonceSource;
use super::plan::{FlowPlan, NO_BURST, padding_tail};
use super::roles::Out;
use super::sealing::{BATCH_ENTRY_MAX, Seal, push_id, seal_or_defer};
use super::sink::ReportExporter;

impl<K: VerifierKeys, S: TelemetrySource, N: NonceSource, X: ReportExporter>
    IdIntStage<K, S, N, X>
{
    /// A packet of a flow an earlier fast push left a template for (same request bytes,
    /// roles and interfaces, in this burst, an earlier one or an earlier single packet): the
    /// bytes that push's checks and decisions depended on are compared with the template's
    /// instead of being walked again, and the entry is the template's bytes with this
    /// packet's values, nonce and previous MAC; `false` (nothing written) if any differs.
    /// `defer`: the packet's burst slot, if its sealing may be deferred.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub(super) fn push_planned(
        &mut self,
        router: &Router,
        head: &[u8],
        hbh: &mut [u8],
        hl: usize,
        f: &Forwarded,
        out: Out,
        defer: Option<u8>,
    ) -> bool {
        let IdIntStage {
            keys,
            source,
            nonces,
            counters,
            batch,
            ..
        } = self;
        if hbh.len() < REQUEST_END {
            return false;
        }
        // The packet's context first: its ingress interface then serves the route key too.
        let ctx = HopContext {
            ingress_if: f.ingress.ifid(),
            egress_if: out.ifid,
            len: f.len,
            now_ns: f.now_ns,
        };
        let (request, route) = (read_u128_le(hbh, 0), route_key_of(f, out, ctx.ingress_if));
        let burst = batch.burst;
        // `k`: where the plan is kept (its entries' shape and verifier are read there when
        // the entry is queued or sealed, not copied).
        let Some(k) = batch.plans.iter().position(|p| {
            p.as_ref()
                .is_some_and(|p| p.request == request && p.route == route)
        }) else {
            return false;
        };
        let Some(Some(plan)) = batch.plans.get_mut(k) else {
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
        // The template's entry fits: the same request bytes give the same stack bounds.
        let same = plan.at.holds(head, hbh, &plan.raw);
        // The common case: the plan's verifier, its key found at this very time and (for a
        // deferred entry) its index in this burst's verifier table. Nothing to update.
        if !(same && plan.found_ns == f.now_ns && (defer.is_none() || plan.burst == burst)) {
            let table = (&mut batch.ids, &mut batch.n_ids);
            match rekey(
                keys,
                plan,
                table,
                burst,
                head,
                hbh,
                f.now_ns,
                defer.is_some(),
                same,
            ) {
                Rekey::Ready => {}
                Rekey::NoKey => {
                    counters.packets += 1;
                    counters.no_key += 1;
                    return true;
                }
                Rekey::Other => return false,
            }
        }
        // The per-burst values: those of this burst's refresh, else asked for again. The
        // others are asked for now, as `gather` asks (slots in order).
        let mut fresh = true;
        if !(defer.is_some() && plan.values_burst == burst) {
            fresh = plan.entry.refresh(source, router.local_ia(), &ctx);
            plan.values_burst = if fresh && defer.is_some() {
                burst
            } else {
                NO_BURST
            };
        }
        let ep = &plan.entry;
        let mut values = [0u64; 4];
        let mut supplied = 0u8;
        for (d, r) in ep.per_packet[..usize::from(ep.n_per_packet)]
            .iter()
            .enumerate()
        {
            if let Some(v) = read_instruction(source, router.local_ia(), r.code, &ctx) {
                values[d] = v;
                supplied |= 1 << d;
            }
        }
        let job_len = plan.job.len();
        let encrypt = plan.encrypt;
        let nonce = encrypt.then(|| nonces.nonce());
        let mut prev_mac = [0u8; MAC_LEN];
        prev_mac.copy_from_slice(&hbh[free - MAC_LEN..free]);
        let len = if supplied == ep.supplied && fresh {
            let len = usize::from(ep.len);
            ep.write(&mut hbh[free..free + len], nonce, &values, prev_mac);
            // What is left of the padding option (at most 257 bytes) the entry overlaps.
            let e_end = free + len;
            match plan.tail_len {
                0 => {}
                1 => hbh[e_end] = plan.tail[0],
                _ => hbh[e_end..e_end + 2].copy_from_slice(&plan.tail),
            }
            len
        } else {
            // The source supplied other items than for the learning packet: the entry is
            // laid out from what it did supply.
            let v = Supplied {
                values: &values,
                supplied,
                nonce,
                prev_mac,
            };
            match emit_supplied(source, router, hbh, plan, &ctx, f.hop, &v) {
                Some(len) => len,
                // Full: the general path sets X.
                None => return false,
            }
        };
        let e_end = free + len;
        hbh[TOS] = plan.new_tos;
        let e = &mut hbh[free..e_end];
        counters.packets += 1;
        // Queued as it is (a job is free: one per packet of the burst); a single packet's
        // entry, or one too long to batch, is sealed now.
        let queued = match defer {
            Some(slot) if len == usize::from(job_len) => {
                batch.queue_planned(slot, hl + free, k, ctx.now_ns)
            }
            Some(slot) if len <= BATCH_ENTRY_MAX => match &batch.plans[k] {
                Some(p) => {
                    let (handle, id_ix) = (p.handle, p.id_ix);
                    batch.queue(slot, hl + free, len, encrypt, handle, id_ix, ctx.now_ns)
                }
                None => false,
            },
            _ => false,
        };
        if !queued {
            // The plan is still kept at `k` (nothing replaces plans here).
            let sealed = match &batch.plans[k] {
                Some(p) => {
                    let job = Seal {
                        defer: None,
                        at: hl + free,
                        prev_mac,
                        id: p.id,
                        handle: p.handle,
                        now_ns: ctx.now_ns,
                    };
                    seal_or_defer(keys, batch, e, &job).is_some()
                }
                None => {
                    // Never leave unprotected values behind (as `seal_or_defer`).
                    if let Some(rest) = e.get_mut(NONCE_OFFSET..) {
                        rest.fill(0);
                    }
                    false
                }
            };
            if !sealed {
                counters.unsealed += 1;
            }
        }
        counters.pushed += 1;
        if encrypt {
            counters.encrypted += 1;
        }
        true
    }
}

/// What a packet's source supplied when it differs from the template's.
struct Supplied<'a> {
    /// The per-packet values (as for `EntryPlan::write`) and which were supplied.
    values: &'a [u64; 4],
    supplied: u8,
    nonce: Option<[u8; NONCE_LEN]>,
    prev_mac: [u8; MAC_LEN],
}

/// Writes the entry of a packet whose source supplied other items than for the packet the
/// template was learnt from, laid out from what it did supply (as `gather` and
/// [`emit_entry`] lay it out); its length, or `None` (nothing written) if it does not fit.
#[inline(never)]
fn emit_supplied<S: TelemetrySource>(
    source: &mut S,
    router: &Router,
    hbh: &mut [u8],
    plan: &FlowPlan,
    ctx: &HopContext,
    hop: u8,
    v: &Supplied<'_>,
) -> Option<usize> {
    let (free, end) = (usize::from(plan.free), usize::from(plan.end));
    let bitmap = hbh[INST_BITMAP] >> INST_BITMAP_SHIFT;
    let g = plan
        .entry
        .gathered(source, router.local_ia(), bitmap, ctx, v.values, v.supplied);
    let len = entry_len(plan.encrypt, g.md_len);
    if free + len > end {
        return None;
    }
    emit_entry(
        &mut hbh[free..free + len],
        &g,
        plan.role,
        hop,
        v.nonce,
        v.prev_mac,
    );
    // What is left of the padding option the entry overlaps.
    let (tail, n) = padding_tail(free + len, end);
    hbh[free + len..free + len + usize::from(n)].copy_from_slice(&tail[..usize::from(n)]);
    Some(len)
}

/// What [`rekey`] found.
enum Rekey {
    /// The template's verifier, key and verifier index are the packet's.
    Ready,
    /// The verifier has no key (the packet is forwarded unchanged).
    NoKey,
    /// The template does not apply.
    Other,
}

/// Brings template `plan` up to date for a packet whose verifier sits where the template's did
/// (`same`: it is the template's verifier) at time `now_ns`: its verifier, its key (looked
/// up again whenever the time differs from when it was found: a later time may fall into
/// another key epoch; not `recall`: the template's verifier is the one this flow saw last)
/// and, for a deferred entry, its index in the verifier table (`ids`, `n_ids`) of burst
/// number `burst`.
#[inline(never)]
#[allow(clippy::too_many_arguments)]
fn rekey<K: VerifierKeys>(
    keys: &mut K,
    plan: &mut FlowPlan,
    (ids, n_ids): (&mut [VerifierId; MAX_BURST], &mut usize),
    burst: u64,
    head: &[u8],
    hbh: &[u8],
    now_ns: u64,
    defer: bool,
    same: bool,
) -> Rekey {
    // Another verifier of the same kind in the same place (another destination host, say):
    // everything holds but the key.
    let (id, raw) = if same {
        (plan.id, plan.raw)
    } else {
        match (plan.at.read(head, hbh), plan.at.raw(head, hbh)) {
            (Some(id), Some(raw)) => (id, raw),
            _ => return Rekey::Other,
        }
    };
    let handle = if same && plan.found_ns == now_ns {
        plan.handle
    } else {
        match keys.find_ip(id.ia(), id.v6(), id.host, now_ns) {
            Some(h) => h,
            None => return Rekey::NoKey,
        }
    };
    // A deferred entry names its verifier by its index in the burst's table.
    let (id_ix, burst) = match defer {
        true if same && plan.burst == burst => (plan.id_ix, plan.burst),
        true => match push_id(ids, n_ids, &id) {
            Some(ix) => (ix, burst),
            None => return Rekey::Other,
        },
        false if same => (plan.id_ix, plan.burst),
        false => (0, NO_BURST),
    };
    plan.id = id;
    plan.raw = raw;
    plan.handle = handle;
    plan.found_ns = now_ns;
    plan.id_ix = id_ix;
    plan.burst = burst;
    plan.job = plan.job.with_key(handle, id_ix);
    Rekey::Ready
}

/// What of the forwarding decision an entry depends on: the roles, the hop index and the
/// ingress and egress interfaces (written into the entry's bitmap items).
#[inline(always)]
pub(super) fn route_key(f: &Forwarded, out: Out) -> u64 {
    route_key_of(f, out, f.ingress.ifid())
}

/// [`route_key`] with the ingress interface id already read.
#[inline(always)]
fn route_key_of(f: &Forwarded, out: Out, ingress_if: u16) -> u64 {
    u64::from(matches!(f.ingress, Ingress::External(_)))
        | (u64::from(out.egress) << ROUTE_EGRESS)
        | (u64::from(out.last) << ROUTE_LAST)
        | (u64::from(f.hop) << ROUTE_HOP)
        | (u64::from(ingress_if) << ROUTE_INGRESS_IF)
        | (u64::from(out.ifid) << ROUTE_EGRESS_IF)
}

/// Bits of [`route_key`]: the egress and last-BR roles (the first-BR role is bit 0), the hop
/// index (8 bits) and the two interface ids (16 bits each).
const ROUTE_EGRESS: u32 = 1;
const ROUTE_LAST: u32 = 2;
const ROUTE_HOP: u32 = 8;
const ROUTE_INGRESS_IF: u32 = 16;
const ROUTE_EGRESS_IF: u32 = 32;
