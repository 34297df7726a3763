//! The straight-line push: the common case (well-formed request, main option first, no
//! DelayHops, no aggregation, room for the entry, not at this router's sink) in one pass over
//! the bytes, leaving a plan for the flow's next packets (`planned`).

use idint_wire::AddrType;
use idint_wire::ext::opt_type;
use idint_wire::idint::Entry;
use idint_wire::idint::entry::{MAC_LEN, entry_len, flags as eflags};
use idint_wire::idint::main_option::BASE_LEN;
use idint_wire::scion::{DST_HOST_OFFSET, DST_IA_OFFSET, SRC_IA_OFFSET, ScionHeader};

use crate::bytes::{read_u48_le, read_u64, read_u128_le};
use crate::config::Router;
use crate::header::ADDR_TYPES_AT;
use crate::hook::Forwarded;
use crate::outcome::{Disposition, Ingress};
use crate::telemetry::{HopContext, TelemetrySource};

use super::IdIntStage;
use super::emit::{EntryPlan, emit_entry, gather};
use super::keys::{VerifierId, VerifierKeys};
use super::layout::mode::{
    MODE_OFF, MODE_PER_AS, MODE_SHIFT, VERIFIER_ADDR_IPV4, VERIFIER_ADDR_IPV6, VERIFIER_ADDR_MASK,
    VERIFIER_DESTINATION, VERIFIER_MASK, VERIFIER_SHIFT, VERIFIER_SOURCE, VERIFIER_THIRD_PARTY,
};
use super::layout::{
    DELAY_HOPS, DELAY_HOPS_SHIFT, ENTRY_FLAGS, INST_BITMAP, INST_BITMAP_SHIFT, INSTRUCTIONS, MAIN,
    MAIN_DATA_LEN, MAIN_FLAGS, MAIN_LEN_V4, MAIN_LEN_V6, MAIN_MODE, OPT_DATA_LEN, OPT_HDR,
    STACK_LEN, TOS, VERIFIER_HOST, VERIFIER_IA, VERSION_MASK, WORD, item,
};
use super::nonces::NonceSource;
use super::plan::{FlowPlan, NO_BURST, VerifierAt, padding_tail};
use super::planned::route_key;
use super::roles::{Out, Role};
use super::sealing::{JobShape, Seal, seal_or_defer};
use super::sink::ReportExporter;

impl<K: VerifierKeys, S: TelemetrySource, N: NonceSource, X: ReportExporter>
    IdIntStage<K, S, N, X>
{
    /// The common case in one straight pass over the bytes: a well-formed request whose main
    /// option is the first HBH option, no DelayHops, no aggregation into an existing entry,
    /// room for the new entry, not ending at this router's sink. Checks exactly what
    /// `IdInt::locate` checks; anything else returns `false` before writing anything and the
    /// general path decides (tested and fuzzed for identical results).
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub(super) fn fast_push(
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
        if n < MAIN + BASE_LEN || hbh[MAIN] != opt_type::IDINT_MAIN {
            return false;
        }
        let request = read_u128_le(hbh, 0);
        let mlen = usize::from(hbh[MAIN_DATA_LEN]) + OPT_HDR;
        let (f0, f1) = (hbh[MAIN_FLAGS], hbh[MAIN_MODE]);
        // Version 0, R clear; a probe ending at this sink takes the general path.
        if f0 & (VERSION_MASK | mflags::R) != 0
            || (f0 & mflags::I != 0 && self.sink && matches!(d, Disposition::Deliver { .. }))
        {
            return false;
        }
        let (vrf, vtl) = (
            (f1 >> VERIFIER_SHIFT) & VERIFIER_MASK,
            f1 & VERIFIER_ADDR_MASK,
        );
        let want = match (vrf, vtl) {
            (VERIFIER_THIRD_PARTY, VERIFIER_ADDR_IPV4) => MAIN_LEN_V4,
            (VERIFIER_THIRD_PARTY, VERIFIER_ADDR_IPV6) => MAIN_LEN_V6,
            (VERIFIER_DESTINATION | VERIFIER_SOURCE, VERIFIER_ADDR_IPV4) => BASE_LEN,
            _ => return false,
        };
        let mode = f1 >> MODE_SHIFT;
        let first = matches!(f.ingress, Ingress::External(_));
        if mlen != want
            || (mode == MODE_PER_AS && !first)
            || hbh[DELAY_HOPS] >> DELAY_HOPS_SHIFT != 0
        {
            return false;
        }
        let s = MAIN + mlen;
        let end = s + usize::from(hbh[STACK_LEN]) * WORD;
        let tos = usize::from(hbh[TOS]) * WORD;
        let t = s + tos;
        if end > n || t + entry_len(false, 0) > end || hbh[s] != opt_type::IDINT_ENTRY {
            return false;
        }
        let free = t + usize::from(hbh[t + OPT_DATA_LEN]) + OPT_HDR;
        if hbh[t] != opt_type::IDINT_ENTRY
            || free > end
            || (hbh[t + ENTRY_FLAGS] & eflags::S != 0) != (tos == 0)
            || Entry::new_unchecked(&hbh[t..free]).check_len().is_err()
        {
            return false;
        }
        let mut p = free;
        while p < end {
            p += match hbh[p] {
                opt_type::PAD1 => 1,
                opt_type::PADN if p + OPT_DATA_LEN < end => {
                    OPT_HDR + usize::from(hbh[p + OPT_DATA_LEN])
                }
                _ => return false,
            };
        }
        if p != end {
            return false;
        }
        let (id, at) = match vrf {
            VERIFIER_THIRD_PARTY => {
                let t = if vtl == VERIFIER_ADDR_IPV4 {
                    AddrType::IPV4
                } else {
                    AddrType::IPV6
                };
                let at = VerifierAt {
                    types: None,
                    ia_at: VERIFIER_IA as u8,
                    host_at: VERIFIER_HOST as u8,
                    v6: vtl != VERIFIER_ADDR_IPV4,
                };
                (
                    VerifierId::new(
                        read_u64(hbh, VERIFIER_IA),
                        t,
                        &hbh[VERIFIER_HOST..MAIN + mlen],
                    ),
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
                    (
                        id,
                        SRC_IA_OFFSET,
                        DST_HOST_OFFSET + dst_len,
                        h.src_addr_type(),
                    )
                } else {
                    let id =
                        VerifierId::new(h.dst_ia().to_u64(), h.dst_addr_type(), h.dst_host_bytes());
                    (id, DST_IA_OFFSET, DST_HOST_OFFSET, h.dst_addr_type())
                };
                let at = VerifierAt {
                    types: Some(head[ADDR_TYPES_AT]),
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
        let close = out.last || mode == MODE_OFF;
        let encrypt = close && f0 & mflags::E != 0;
        let i = INSTRUCTIONS;
        let instructions =
            [hbh[i], hbh[i + 1], hbh[i + 2], hbh[i + 3]].map(idint_wire::idint::Instruction);
        let bitmap = hbh[INST_BITMAP] >> INST_BITMAP_SHIFT;
        let g = gather(source, router.local_ia(), bitmap, &instructions, &ctx);
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
        let pad = [
            hbh[free],
            hbh.get(free + OPT_DATA_LEN).copied().unwrap_or(0),
        ];
        let single_pad = pad[0] == opt_type::PADN && free + OPT_HDR + usize::from(pad[1]) == end;
        // Re-cover the rest of the first padding option the entry overlaps (headers only).
        let mut q = free;
        while q < e_end {
            q += if hbh[q] == opt_type::PAD1 {
                1
            } else {
                OPT_HDR + usize::from(hbh[q + OPT_DATA_LEN])
            };
        }
        idint_wire::ext::write_padding_headers(&mut hbh[e_end..q.min(end)]);
        hbh[TOS] = ((free - s) / WORD) as u8;
        let mut prev_mac = [0u8; MAC_LEN];
        prev_mac.copy_from_slice(&hbh[free - MAC_LEN..free]);
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
        // The flow's template: the plaintext entry, before it is sealed.
        let entry = EntryPlan::new(e, &g, &instructions, bitmap & item::NODE_ID != 0, source);
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
        let raw = at.raw(head, hbh);
        let (tail, tail_len) = padding_tail(e_end, end);
        if single_pad
            && let Some(entry) = entry
            && let Some(raw) = raw
        {
            let route = route_key(f, out);
            let id_ix = batch.n_ids.saturating_sub(1) as u8;
            batch.keep_plan(FlowPlan {
                request,
                route,
                top: read_u48_le(hbh, t),
                s: s as u16,
                t: t as u16,
                free: free as u16,
                end: end as u16,
                pad,
                tail,
                tail_len,
                new_tos: hbh[TOS],
                encrypt,
                role,
                at,
                id,
                raw,
                id_ix,
                burst: if deferred { batch.burst } else { NO_BURST },
                handle,
                found_ns: ctx.now_ns,
                job: JobShape::new(usize::from(entry.len), encrypt, handle, id_ix),
                entry,
                values_burst: NO_BURST,
            });
        }
        true
    }
}
