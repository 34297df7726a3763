//! Stage two of the general pipeline (steps 11-21 of `scion-dp.md` §2.4), with the current
//! hop's full CMAC: MAC check, router alerts, local delivery, then for a packet that goes on
//! the phases [`Engine::crossover`] (step 14), [`Engine::egress`] (steps 15-17) and
//! [`Engine::leave`] (steps 18-21).

use idint_wire::crypto::BLOCK_LEN;

use super::engine::Engine;
use super::path::field::hop as hop_field;
use super::path::{Hop, Info, write_meta, write_seg_id};
use super::state::{EpicRole, Pending};
use crate::config::{InterfaceConfig, LinkType, Owner};
use crate::header::{HOP_EGRESS_ALERT, HOP_INGRESS_ALERT};
use crate::outcome::{Disposition, DropReason, ScmpReason};
use crate::reply::ReplyRequest;

/// The interface a packet that goes on leaves the AS through (found by [`Engine::egress`]).
struct Egress<'r> {
    /// The egress interface.
    ifid: u16,
    /// Its configuration.
    out: &'r InterfaceConfig,
    /// Whether this router owns it (else a sibling does).
    owned: bool,
}

impl<'r> Engine<'r> {
    /// Steps 11-21 with the current hop's full CMAC.
    #[inline(always)]
    pub(super) fn stage_two(
        &self,
        buf: &mut [u8],
        len: usize,
        p: &Pending,
        mac: &[u8; BLOCK_LEN],
        now_ns: u64,
    ) -> Disposition {
        let ingress = p.ingress;
        let in_if = ingress.ifid();
        // Step 11: hop-field MAC.
        if !p.hop.mac_matches(mac) {
            return self.error(
                buf,
                len,
                ingress,
                ScmpReason::InvalidHopFieldMac,
                p.hop_ptr(),
            );
        }
        let mut last_mac = *mac;
        // Step 12: router alert for the ingress router.
        if in_if != 0 && alert_for_ingress(p.hop, p.info) {
            clear_alert(buf, p.hop_at(p.meta.curr_hf()), p.info.cons_dir(), true);
            return self.traceroute(buf, len, ingress, in_if);
        }
        // Step 13: local delivery.
        if p.dst_local {
            let d = self.deliver(buf, len, ingress);
            if p.epic == EpicRole::None {
                return d;
            }
            return self.epic_gate(buf, len, p, &last_mac, now_ns, d);
        }
        let mut q = *p;
        let xover = match self.crossover(buf, len, &mut q, &mut last_mac, now_ns) {
            Ok(x) => x,
            Err(d) => return d,
        };
        let egress = match self.egress(buf, len, &q, xover) {
            Ok(e) => e,
            Err(d) => return d,
        };
        let d = self.leave(buf, len, &q, egress);
        if p.epic == EpicRole::None {
            return d;
        }
        self.epic_gate(buf, len, p, &last_mac, now_ns, d)
    }

    /// Step 14: at a segment crossover (not at a peering hop), moves `q` and the packet to the
    /// next segment's first hop and checks that hop's expiry and MAC (`last_mac` becomes its
    /// CMAC). Returns whether the packet crossed over.
    #[inline(always)]
    fn crossover(
        &self,
        buf: &mut [u8],
        len: usize,
        q: &mut Pending,
        last_mac: &mut [u8; BLOCK_LEN],
        now_ns: u64,
    ) -> Result<bool, Disposition> {
        let ingress = q.ingress;
        let xover = q.meta.is_xover() && !q.peering;
        if xover {
            let Some(m) = q.meta.advanced() else {
                return Err(Disposition::Drop(DropReason::Malformed));
            };
            q.meta = m;
            write_meta(buf, q.sp, m);
            q.info = Info::read(buf, q.info_at(m.curr_inf()));
            q.hop = Hop::read(buf, q.hop_at(m.curr_hf()));
            if q.hop.expiry_ns(q.info) < now_ns {
                return Err(self.error(buf, len, ingress, ScmpReason::PathExpired, q.hop_ptr()));
            }
            *last_mac = self.router.hop_mac().compute(&q.hop.mac_input(q.info));
            if !q.hop.mac_matches(last_mac) {
                let reason = ScmpReason::InvalidHopFieldMac;
                return Err(self.error(buf, len, ingress, reason, q.hop_ptr()));
            }
        }
        Ok(xover)
    }

    /// Steps 15-17: the egress interface the hop field names must exist (and be this router's
    /// if the packet came from inside the AS), and at the ingress router the link types must
    /// allow the transit (or, after `xover`, the segment change).
    #[inline(always)]
    fn egress(
        &self,
        buf: &mut [u8],
        len: usize,
        q: &Pending,
        xover: bool,
    ) -> Result<Egress<'r>, Disposition> {
        let ingress = q.ingress;
        let in_if = ingress.ifid();
        let router = self.router;
        // Step 15-16: the egress interface.
        let (egress, bad_egress) = if q.info.cons_dir() {
            (q.hop.cons_egress(), ScmpReason::UnknownHopFieldEgress)
        } else {
            (q.hop.cons_ingress(), ScmpReason::UnknownHopFieldIngress)
        };
        if egress == 0 {
            // D7: the specification has no egress 0 for a remote destination.
            return Err(Disposition::Drop(DropReason::EgressZero));
        }
        let Some(out) = router.interface(egress) else {
            return Err(self.error(buf, len, ingress, bad_egress, q.hop_ptr()));
        };
        let owned = out.owner == Owner::Local;
        if in_if == 0 && !owned {
            return Err(self.error(buf, len, ingress, bad_egress, q.hop_ptr()));
        }
        // Step 17: link types (the ingress router checks; from inside it was checked already).
        if in_if != 0 {
            let Some(inc) = router.interface(in_if) else {
                return Err(Disposition::Drop(DropReason::UnknownIngress));
            };
            let pair = (inc.link_type, out.link_type);
            if xover {
                if !matches!(
                    pair,
                    (LinkType::Core, LinkType::Child)
                        | (LinkType::Child, LinkType::Core)
                        | (LinkType::Child, LinkType::Child)
                ) {
                    let ptr = q.info_at(q.meta.curr_inf()) as u16;
                    let reason = ScmpReason::InvalidSegmentChange;
                    return Err(self.error(buf, len, ingress, reason, ptr));
                }
            } else if !matches!(
                pair,
                (LinkType::Core, LinkType::Core)
                    | (LinkType::Child, LinkType::Parent)
                    | (LinkType::Parent, LinkType::Child)
                    | (LinkType::Child, LinkType::Peer)
                    | (LinkType::Peer, LinkType::Child)
            ) {
                let reason = ScmpReason::InvalidPath;
                return Err(self.error(buf, len, ingress, reason, q.hop_ptr()));
            }
        }
        Ok(Egress {
            ifid: egress,
            out,
            owned,
        })
    }

    /// Steps 18-21: the egress router's alert, the egress link state, then out through this
    /// router's link (SegID and path updated) or over to the sibling that owns it.
    #[inline(always)]
    fn leave(&self, buf: &mut [u8], len: usize, q: &Pending, e: Egress<'_>) -> Disposition {
        let ingress = q.ingress;
        let (egress, owned) = (e.ifid, e.owned);
        // Step 18: router alert for the egress router.
        if owned && alert_for_egress(q.hop, q.info) {
            clear_alert(buf, q.hop_at(q.meta.curr_hf()), q.info.cons_dir(), false);
            return self.traceroute(buf, len, ingress, egress);
        }
        // Step 19: the egress link must be up.
        if !self.router.link_up(egress) {
            let (reason, ifid, eg) = if owned {
                (ScmpReason::ExternalInterfaceDown, egress, 0)
            } else {
                (ScmpReason::InternalConnectivityDown, ingress.ifid(), egress)
            };
            let req = ReplyRequest {
                reason,
                pointer: 0,
                ifid,
                egress: eg,
            };
            return self.reply(buf, len, ingress, req);
        }
        // Step 20-21: leave through this router's link, or hand over to the sibling.
        match e.out.owner {
            Owner::Local => {
                let Some(next) = q.meta.advanced() else {
                    return Disposition::Drop(DropReason::PathAtEnd);
                };
                if q.info.cons_dir() && !q.peering {
                    let seg = q.info.seg_id() ^ q.hop.mac_head();
                    write_seg_id(buf, q.info_at(q.meta.curr_inf()), seg);
                }
                write_meta(buf, q.sp, next);
                Disposition::Forward { ifid: egress }
            }
            Owner::Sibling(addr) => Disposition::Sibling { ifid: egress, addr },
        }
    }
}

/// Whether the hop carries a router alert for the router where the packet enters the AS.
#[inline(always)]
fn alert_for_ingress(hop: Hop, info: Info) -> bool {
    if info.cons_dir() {
        hop.ingress_alert()
    } else {
        hop.egress_alert()
    }
}

/// Whether the hop carries a router alert for the router where the packet leaves the AS.
#[inline(always)]
fn alert_for_egress(hop: Hop, info: Info) -> bool {
    if info.cons_dir() {
        hop.egress_alert()
    } else {
        hop.ingress_alert()
    }
}

/// Clears the alert flag that triggered (`at_ingress`: the one for the entering router).
fn clear_alert(buf: &mut [u8], hop_at: usize, cons_dir: bool, at_ingress: bool) {
    // Flag bits in the hop field's first byte: ConsIngress and ConsEgress.
    let ingress_flag = cons_dir == at_ingress;
    buf[hop_at + hop_field::FLAGS] &= if ingress_flag {
        !HOP_INGRESS_ALERT
    } else {
        !HOP_EGRESS_ALERT
    };
}
