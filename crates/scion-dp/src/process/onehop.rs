//! OneHop paths (`scion-dp.md` §2.9) and the BFD hand-off: the packets that do not follow a
//! full SCION path.

use idint_wire::path::scion::{HOP_LEN, INFO_LEN, MAC_LEN};
use idint_wire::path::{HopField, OneHopPath};
use idint_wire::scion::ScionHeader;

use super::engine::Engine;
use super::path::write_seg_id;
use crate::config::Owner;
use crate::local::upper_layer;
use crate::outcome::{Disposition, DropReason, Ingress};

/// BFD protocol number.
pub(super) const BFD: u8 = 203;

/// Offset of the second hop field in a OneHop path (after the info field and the first hop).
const SECOND_HOP_AT: usize = INFO_LEN + HOP_LEN;

impl Engine<'_> {
    /// OneHop paths (§2.9): all failures are silent drops.
    #[inline(never)]
    pub(super) fn onehop(&self, buf: &mut [u8], len: usize, ingress: Ingress) -> Disposition {
        let reject = Disposition::Drop(DropReason::OneHopRejected);
        if final_next_header(&buf[..len]) == Some(BFD) {
            return Disposition::Bfd;
        }
        let hdr = ScionHeader::new_unchecked(&buf[..len]);
        let po = hdr.path_offset();
        let Ok(ohp) = OneHopPath::parse(&buf[po..hdr.header_len()]) else {
            return Disposition::Drop(DropReason::Malformed);
        };
        if !ohp.info.cons_dir {
            return reject;
        }
        let router = self.router;
        let local = router.local_ia();
        let (src_ia, dst_ia) = (hdr.src_ia(), hdr.dst_ia());
        match ingress {
            Ingress::Internal | Ingress::Sibling(_) => {
                if src_ia != local {
                    return reject;
                }
                let Some(out) = router.interface(ohp.first.cons_egress) else {
                    return reject;
                };
                if out.neighbor_ia != dst_ia || out.owner != Owner::Local {
                    return reject;
                }
                let block = ohp.first.mac_input(ohp.info.seg_id, ohp.info.timestamp);
                if !router.hop_mac().verify(&block, &ohp.first.mac) {
                    return reject;
                }
                let m = ohp.first.mac;
                write_seg_id(buf, po, ohp.info.seg_id ^ u16::from_be_bytes([m[0], m[1]]));
                Disposition::Forward {
                    ifid: ohp.first.cons_egress,
                }
            }
            Ingress::External(x) => {
                if dst_ia != local || router.interface(x).map(|i| i.neighbor_ia) != Some(src_ia) {
                    return reject;
                }
                let mut second = HopField {
                    exp_time: ohp.first.exp_time,
                    cons_ingress: x,
                    ..HopField::default()
                };
                let full = router
                    .hop_mac()
                    .compute(&second.mac_input(ohp.info.seg_id, ohp.info.timestamp));
                second.mac.copy_from_slice(&full[..MAC_LEN]);
                if second.emit(&mut buf[po + SECOND_HOP_AT..]).is_err() {
                    return Disposition::Drop(DropReason::Malformed);
                }
                match self.deliver(buf, len, ingress) {
                    Disposition::Reply { .. } => reject,
                    d => d,
                }
            }
        }
    }
}

/// The protocol after the extension headers.
pub(super) fn final_next_header(pkt: &[u8]) -> Option<u8> {
    let hdr = ScionHeader::new_checked(pkt).ok()?;
    upper_layer(pkt, hdr.header_len(), hdr.next_header().into()).map(|(p, _)| p)
}
