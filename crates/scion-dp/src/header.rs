//! Facts about SCION headers that the data plane reads in place, shared by packet processing,
//! SCMP replies and ID-INT: common-header byte offsets that `idint_wire::scion` does not name,
//! the flag bits of info and hop fields, and peering hops. A leaf: depends on nothing else in
//! the crate.

use idint_wire::path::{InfoField, PathMeta};

/// Common header: offset of NextHdr.
pub(crate) const NEXT_HDR_AT: usize = 4;
/// Common header: offset of HdrLen (the header length in 4-byte units).
pub(crate) const HDR_LEN_AT: usize = 5;
/// Common header: offset of PayloadLen (16 bits).
pub(crate) const PAYLOAD_LEN_AT: usize = 6;
/// Common header: offset of PathType.
pub(crate) const PATH_TYPE_AT: usize = 8;
/// Common header: offset of the address-type byte (DT/DL in the high nibble, ST/SL low).
pub(crate) const ADDR_TYPES_AT: usize = 9;
/// EPIC-HP fields before the SCION path: offset of the PHVF (after the 8-byte packet ID).
pub(crate) const EPIC_PHVF_AT: usize = 8;
/// EPIC-HP fields: offset of the LHVF.
pub(crate) const EPIC_LHVF_AT: usize = 12;
/// PathType value of a standard SCION path.
pub(crate) const PATH_TYPE_SCION: u8 = 1;

/// Path meta header, first byte: the CurrHF bits (below the 2 CurrINF bits).
pub(crate) const CURR_HF_MASK: u8 = 0x3f;

/// Info field, first byte: the Peer flag.
pub(crate) const INFO_PEER: u8 = 0x02;
/// Info field, first byte: the ConsDir flag.
pub(crate) const INFO_CONS_DIR: u8 = 0x01;
/// Info field: offset of SegID (16 bits).
pub(crate) const INFO_SEG_ID_AT: usize = 2;
/// Info field: offset of the timestamp (32 bits).
pub(crate) const INFO_TIMESTAMP_AT: usize = 4;
/// Hop field, first byte: the ConsIngress router alert.
pub(crate) const HOP_INGRESS_ALERT: u8 = 0x02;
/// Hop field, first byte: the ConsEgress router alert.
pub(crate) const HOP_EGRESS_ALERT: u8 = 0x01;

/// Whether the current hop is a peering hop (`None` if the peering flag is set on a path whose
/// segment lengths do not allow peering).
pub(crate) fn peering_of(meta: &PathMeta, info: &InfoField) -> Option<bool> {
    if !info.peer {
        return Some(false);
    }
    let [s0, s1, s2] = meta.seg_len;
    if s0 == 0 || s1 == 0 || s2 != 0 {
        return None;
    }
    Some(meta.curr_hf + 1 == s0 || meta.curr_hf == s0)
}
