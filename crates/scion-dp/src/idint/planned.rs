//! Planned pushes: a flow's first fast push leaves a plan (`plan`: its checks, decisions
//! and entry layout); the flow's next packets are checked against it byte for byte instead
//! of walking the stack again ([`IdIntStage::push_planned`]).

use idint_wire::ext::opt_type;
use idint_wire::idint::entry::entry_len;

use crate::bytes::{read_u48_le, read_u128_le};
use crate::config::Router;
use crate::hook::Forwarded;
use crate::outcome::Ingress;
use crate::telemetry::{HopContext, TelemetrySource, read_instruction};

use super::IdIntStage;
use super::emit::{BITMAP_BYTES, Gathered, emit_entry, emit_planned};
use super::keys::VerifierKeys;
use super::layout::{INST_BITMAP, INST_BITMAP_SHIFT, REQUEST_END, TOS, item};
use super::nonces::NonceSource;
use super::plan::NO_BURST;
use super::roles::Out;
use super::sealing::{BATCH_ENTRY_MAX, Seal, seal_or_defer};
use super::sink::ReportExporter;

impl<K: VerifierKeys, S: TelemetrySource, N: NonceSource, X: ReportExporter>
    IdIntStage<K, S, N, X>
{
    /// A packet of a flow an earlier fast push planned for (same request bytes and roles, in
    /// this burst, an earlier one or an earlier single packet): the bytes that push's checks
    /// and decisions depended on are compared with the plan's instead of being walked again;
    /// `false` (nothing written) if any differs.
    #[inline(always)]
    pub(super) fn push_planned(
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
        if hbh.len() < REQUEST_END {
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
        let node_id = if hbh[INST_BITMAP] & (item::NODE_ID << INST_BITMAP_SHIFT) != 0 {
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
        let planned =
            node_id.is_some() == (ep.mask & item::NODE_ID != 0) && supplied == ep.supplied;
        let g = if planned {
            None
        } else {
            let mut g = Gathered {
                node_id: node_id.unwrap_or(0),
                ingress_if: ctx.ingress_if,
                egress_if: ctx.egress_if,
                mask: ((hbh[INST_BITMAP] >> INST_BITMAP_SHIFT) & item::ALWAYS)
                    | if node_id.is_some() { item::NODE_ID } else { 0 },
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
        hbh[TOS] = new_tos;
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
}

/// What of the forwarding decision an entry depends on: the roles and the hop index.
#[inline(always)]
pub(super) fn route_key(f: &Forwarded, out: Out) -> u32 {
    u32::from(matches!(f.ingress, Ingress::External(_)))
        | (u32::from(out.egress) << 1)
        | (u32::from(out.last) << 2)
        | (u32::from(f.hop) << 8)
}
