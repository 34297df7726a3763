//! AS-internal nodes: routers inside an AS (not border routers) that write or aggregate
//! their own entry ([`IdIntStage::process_internal`]).

use idint_wire::IsdAsn;
use idint_wire::idint::IdInt;
use idint_wire::path::epic::EPIC_PREFIX_LEN;
use idint_wire::scion::ScionHeader;

use crate::header::{CURR_HF_MASK, EXT_LEN_AT, ext_header_len};

use crate::telemetry::{HopContext, TelemetrySource};

use super::IdIntStage;
use super::keys::VerifierKeys;
use super::nonces::NonceSource;
use super::roles::{Role, Skip};
use super::sink::ReportExporter;

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
                PathType::Epic => h.path_offset() + EPIC_PREFIX_LEN,
                _ => return,
            };
            match pkt.get(sp) {
                Some(&b) if sp < h.header_len() => (h.header_len(), b & CURR_HF_MASK),
                _ => return,
            }
        };
        let Some(hbh_len) = pkt.get(hl + EXT_LEN_AT).map(|&l| ext_header_len(l)) else {
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
}
