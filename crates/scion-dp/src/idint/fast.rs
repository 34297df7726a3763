//! The straight-line push: the common case (well-formed request, main option first, no
//! DelayHops, no aggregation, room for the entry, not at this router's sink) in one pass over
//! the bytes, leaving a plan for the flow's next packets (`planned`).

use idint_wire::AddrType;
use idint_wire::ext::opt_type;
use idint_wire::idint::Entry;
use idint_wire::idint::entry::{entry_len, flags as eflags};
use idint_wire::scion::ScionHeader;

use crate::bytes::{read_u48_le, read_u64, read_u128_le};
use crate::config::Router;
use crate::hook::Forwarded;
use crate::outcome::{Disposition, Ingress};
use crate::telemetry::{HopContext, TelemetrySource};

use super::emit::{emit_entry, gather};
use super::keys::{VerifierId, VerifierKeys};
use super::nonces::NonceSource;
use super::planned::{EntryPlan, FlowPlan, NO_BURST, VerifierAt, route_key};
use super::sealing::{Seal, seal_or_defer};
use super::sink::ReportExporter;
use super::{IdIntStage, Out, Role};

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
}
