//! Planned pushes: a flow's first fast push leaves a [`FlowPlan`] (its checks, decisions and
//! entry layout); the flow's next packets are checked against it byte for byte instead of
//! walking the stack again.

use idint_wire::AddrType;
use idint_wire::ext::opt_type;
use idint_wire::idint::entry::entry_len;

use crate::bytes::{read_u48_le, read_u128_le};
use crate::config::Router;
use crate::header::ADDR_TYPES_AT;
use crate::hook::Forwarded;
use crate::outcome::Ingress;
use crate::telemetry::{HopContext, TelemetrySource, read_instruction};

use super::emit::{BITMAP_BYTES, Gathered, emit_entry, emit_planned};
use super::keys::{KeyHandle, VerifierId, VerifierKeys};
use super::layout::{INST_BITMAP, REQUEST_END, TOS, item};
use super::nonces::NonceSource;
use super::sealing::{BATCH_ENTRY_MAX, Seal, SealBatch, seal_or_defer};
use super::sink::ReportExporter;
use super::{IdIntStage, Out, Role};

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
        let node_id = if hbh[INST_BITMAP] & (item::NODE_ID << 4) != 0 {
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
                mask: ((hbh[INST_BITMAP] >> 4) & item::ALWAYS)
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

/// The checks and decisions of a fast push, kept for the next packets of the burst that carry
/// the same request along the same route to the same verifier (`FlowPlan::request`,
/// `route`, `top`, `pad` and the verifier compared byte for byte): they take the same
/// decisions without walking the stack again. Only values, nonce and MAC differ per packet.
#[derive(Clone, Copy)]
pub(super) struct FlowPlan {
    /// HBH bytes 0-15 (extension header; main option type, length, flags, mode, verifier
    /// kind, StackLen, TOS, DelayHops, bitmap, aggregation functions, instructions).
    pub(super) request: u128,
    /// The roles and the hop index ([`route_key`]).
    pub(super) route: u32,
    /// The top entry's first 6 bytes (type, length, flags, hop, mask and lengths), at `t`.
    pub(super) top: u64,
    /// Start of the stack (the source entry's type byte is checked there too).
    pub(super) s: u16,
    pub(super) t: u16,
    /// End of the top entry (where the new entry goes) and end of the stack.
    pub(super) free: u16,
    pub(super) end: u16,
    /// The header of the one padding option that covered `free..end`.
    pub(super) pad: [u8; 2],
    /// The new TOS byte.
    pub(super) new_tos: u8,
    pub(super) encrypt: bool,
    pub(super) role: Role,
    pub(super) at: VerifierAt,
    pub(super) id: VerifierId,
    /// `id`'s index in the verifier table of burst number `burst` (meaningless in any
    /// other burst: the table is refilled per burst).
    pub(super) id_ix: u8,
    pub(super) burst: u64,
    /// `id`'s key, found at `found_ns`: trusted only at that same time (a later packet may
    /// fall into another key epoch), and only while the store still holds it (its handle).
    pub(super) handle: KeyHandle,
    pub(super) found_ns: u64,
    pub(super) entry: EntryPlan,
}

/// The entry a plan writes while the source supplies the same items as for the planning
/// packet: everything but the values, the nonce and the MAC is fixed.
#[derive(Clone, Copy)]
pub(super) struct EntryPlan {
    /// The first 6 bytes (type, length, flags, hop, mask and slot lengths).
    pub(super) head: [u8; 6],
    pub(super) len: u8,
    /// The Mask nibble written (node id 8, node count 4, ingress 2, egress 1).
    pub(super) mask: u8,
    /// The slots the source is asked for, in order: (slot index, instruction code, width);
    /// and which of them it supplied (bit `r` for `reads[r]`).
    pub(super) reads: [(u8, u8, u8); 4],
    pub(super) n_reads: u8,
    pub(super) supplied: u8,
}

impl EntryPlan {
    /// The layout of `e`, just written from `g` for `instructions`.
    pub(super) fn new(
        e: &[u8],
        g: &Gathered,
        instructions: &[idint_wire::idint::Instruction; 4],
    ) -> Self {
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
pub(super) struct VerifierAt {
    pub(super) types: Option<u8>,
    pub(super) ia_at: u8,
    pub(super) host_at: u8,
    pub(super) v6: bool,
}

impl VerifierAt {
    /// The verifier of a packet whose verifier sits where this one's did (`None` if the
    /// address types differ or the bytes are not there).
    #[inline(always)]
    pub(super) fn read(&self, head: &[u8], hbh: &[u8]) -> Option<VerifierId> {
        let bytes = match self.types {
            Some(t) if head.get(ADDR_TYPES_AT) == Some(&t) => head,
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
    pub(super) fn holds(&self, head: &[u8], hbh: &[u8], id: &VerifierId) -> bool {
        let bytes = match self.types {
            Some(t) if head.get(ADDR_TYPES_AT) == Some(&t) => head,
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
pub(super) fn route_key(f: &Forwarded, out: Out) -> u32 {
    u32::from(matches!(f.ingress, Ingress::External(_)))
        | (u32::from(out.egress) << 1)
        | (u32::from(out.last) << 2)
        | (u32::from(f.hop) << 8)
}

/// Plans kept.
pub(super) const PLANS: usize = 4;

/// A [`FlowPlan::burst`] no burst has.
pub(super) const NO_BURST: u64 = u64::MAX;

impl SealBatch {
    /// Keeps `plan`: in place of the plan for the same request and roles, else of the oldest.
    #[inline(always)]
    pub(super) fn keep_plan(&mut self, plan: FlowPlan) {
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
}
