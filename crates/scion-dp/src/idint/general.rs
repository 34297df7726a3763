//! The general path of a forwarded packet: locate the ID-INT options, decide the roles, push
//! a new entry or aggregate into the top one, handle DelayHops, full stacks, missing keys and
//! malformed options, and hand the packet to the sink. The fast paths (`fast`, `planned`) are
//! tried first and fall back here for anything they do not cover.

use idint_wire::ext::opt_type;
use idint_wire::idint::crypto::seal_entry;
use idint_wire::idint::entry::{SlotValue, entry_len, flags as eflags};
use idint_wire::idint::{AggregationMode, EntryRepr, IdInt, Metadata, PushOutcome};
use idint_wire::scion::ScionHeader;
use idint_wire::{AddrType, IsdAsn};

use crate::bytes::read_u64;
use crate::config::Router;
use crate::header::{EXT_LEN_AT, HDR_LEN_AT, LEN_UNIT, ext_header_len};
use crate::hook::Forwarded;
use crate::outcome::{Disposition, Ingress};
use crate::telemetry::{HopContext, TelemetrySource, read_instruction};

use super::IdIntStage;
use super::aggregation::{aggregate, fit, hop_of_this_as};
use super::emit::{emit_entry, gather};
use super::keys::{VerifierId, VerifierKeys};
use super::layout::{MAIN, OPT_VERIFIER_HOST, OPT_VERIFIER_IA, item};
use super::nonces::NonceSource;
use super::roles::{Out, Role, Skip};
use super::sealing::{Seal, seal_or_defer};
use super::sink::ReportExporter;

impl<K: VerifierKeys, S: TelemetrySource, N: NonceSource, X: ReportExporter>
    IdIntStage<K, S, N, X>
{
    /// A forwarded packet (`defer`: its burst slot, if its sealing may be deferred): the
    /// templated push, else the straight-line push or the general path.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub(super) fn apply(
        &mut self,
        router: &Router,
        buf: &mut [u8],
        f: &Forwarded,
        out: Out,
        d: &mut Disposition,
        defer: Option<u8>,
    ) {
        let len = f.len;
        let pkt = &mut buf[..len];
        let hl = usize::from(pkt[HDR_LEN_AT]) * LEN_UNIT;
        let Some(hbh_len) = pkt.get(hl + EXT_LEN_AT).map(|&l| ext_header_len(l)) else {
            return;
        };
        if hl + hbh_len > len {
            return;
        }
        let (head, rest) = pkt.split_at_mut(hl);
        let hbh = &mut rest[..hbh_len];
        if self.fast && self.push_planned(router, head, hbh, hl, f, out, defer) {
            return;
        }
        self.apply_unplanned(router, buf, f, out, d, hl, hbh_len, defer);
    }

    /// A packet no flow template covers: the straight-line push (which learns a template),
    /// else the general path. Not inlined into [`Self::apply`]: its frame and register
    /// pressure made the templated push's worse.
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    fn apply_unplanned(
        &mut self,
        router: &Router,
        buf: &mut [u8],
        f: &Forwarded,
        out: Out,
        d: &mut Disposition,
        hl: usize,
        hbh_len: usize,
        defer: Option<u8>,
    ) {
        self.defer_slot = defer;
        let (head, rest) = buf[..f.len].split_at_mut(hl);
        let hbh = &mut rest[..hbh_len];
        if !(self.fast && self.fast_push(router, head, hbh, hl, f, out, d)) {
            self.apply_general(router, buf, f, out, d, hl, hbh_len);
        }
        self.defer_slot = None;
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
            let found = if hbh.get(MAIN) == Some(&opt_type::IDINT_MAIN) {
                IdInt::new_checked(&mut *hbh, MAIN).map(Some)
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
        self.finish_at_sink(buf, f, (hl, hbh_len), discard, d);
    }

    /// Writes (or aggregates) this router's entry. `(hbh_at, defer)`: where the HBH header
    /// starts in the packet and, in a burst, the packet's slot (its MAC may then be deferred).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn write(
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
                let host = OPT_VERIFIER_HOST;
                VerifierId::new(
                    read_u64(b, OPT_VERIFIER_IA),
                    t,
                    &b[host..host + t.addr_len()],
                )
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
        if bitmap & item::NODE_ID != 0 {
            md.node_id = source.node_id();
        }
        if bitmap & item::NODE_COUNT != 0 {
            md.node_count = Some(1);
        }
        if bitmap & item::INGRESS_IF != 0 {
            md.ingress_if = Some(ctx.ingress_if);
        }
        if bitmap & item::EGRESS_IF != 0 {
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
