//! EPIC-HP at the penultimate and last hop (`scion-dp.md` §3): the hop validation field check
//! that follows the SCION forwarding decision.

use idint_wire::HostAddr;
use idint_wire::crypto::BLOCK_LEN;
use idint_wire::path::scion::META_LEN;
use idint_wire::scion::ScionHeader;

use super::engine::Engine;
use super::path::field;
use super::state::{EpicRole, Pending};
use crate::bytes::{read_u32, read_u64};
use crate::epic::{HVF_LEN, HvfInput, timestamp_fresh, verify_hvf};
use crate::header::{EPIC_LHVF_AT, EPIC_PHVF_AT, EPIC_PKT_ID_AT, EPIC_TS_SHIFT};
use crate::outcome::{Disposition, DropReason};
use crate::reply::EPIC_PREFIX;

impl Engine<'_> {
    /// EPIC-HP at the penultimate and last hop: a packet the SCION rules would send on is
    /// dropped unless its timestamp is fresh and its PHVF/LHVF verifies under the full CMAC of
    /// the hop verified last.
    #[inline(never)]
    pub(super) fn epic_gate(
        &self,
        buf: &[u8],
        len: usize,
        p: &Pending,
        auth: &[u8; BLOCK_LEN],
        now_ns: u64,
        d: Disposition,
    ) -> Disposition {
        let sends = matches!(
            d,
            Disposition::Forward { .. } | Disposition::Sibling { .. } | Disposition::Deliver { .. }
        );
        if !sends || !matches!(p.epic, EpicRole::Penultimate | EpicRole::Last) {
            return d;
        }
        let hdr = ScionHeader::new_unchecked(&buf[..len]);
        let e = &buf[p.sp - EPIC_PREFIX..p.sp];
        let pkt_id = read_u64(e, EPIC_PKT_ID_AT);
        let at = if p.epic == EpicRole::Last {
            EPIC_LHVF_AT
        } else {
            EPIC_PHVF_AT
        };
        let mut hvf = [0u8; HVF_LEN];
        hvf.copy_from_slice(&e[at..at + HVF_LEN]);
        // Info field 0 comes right after the meta header.
        let info0_ts = read_u32(buf, p.sp + META_LEN + field::info::TIMESTAMP.start);
        if !timestamp_fresh(info0_ts, (pkt_id >> EPIC_TS_SHIFT) as u32, now_ns) {
            return Disposition::Drop(DropReason::EpicStale);
        }
        let Ok(src_host) = HostAddr::parse(hdr.src_addr_type(), hdr.src_host_bytes()) else {
            return Disposition::Drop(DropReason::EpicBadHvf);
        };
        let input = HvfInput {
            info0_timestamp: info0_ts,
            pkt_id,
            src_ia: hdr.src_ia(),
            src_host: &src_host,
            payload_len: hdr.payload_len(),
        };
        if verify_hvf(auth, &input, &hvf) {
            d
        } else {
            Disposition::Drop(DropReason::EpicBadHvf)
        }
    }
}
