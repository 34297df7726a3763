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
/// Common header: HdrLen, and each host address length, count units of this many bytes.
pub(crate) const LEN_UNIT: usize = 4;
/// Address-type byte: the shift of the destination's DT/DL nibble (the source's is the low one).
pub(crate) const DST_ADDR_TYPE_SHIFT: u32 = 4;
/// Address-type byte: the DL (or SL) bits of a nibble; the address is `LEN_UNIT * (L + 1)`
/// bytes long.
pub(crate) const ADDR_LEN_MASK: u8 = 0x3;
/// Extension header: offset of NextHdr.
pub(crate) const EXT_NEXT_HDR_AT: usize = 0;
/// Extension header: offset of ExtLen (the length in 4-byte units after the first).
pub(crate) const EXT_LEN_AT: usize = 1;
/// Extension header: the bytes that lead to the next header (NextHdr and ExtLen).
pub(crate) const EXT_FIXED_LEN: usize = 2;

/// Length in bytes of an extension header whose ExtLen is `ext_len`.
#[inline(always)]
pub(crate) fn ext_header_len(ext_len: u8) -> usize {
    (usize::from(ext_len) + 1) * LEN_UNIT
}

/// EPIC-HP fields before the SCION path: offset of the PktID (EpicTS, then Counter; 8 bytes).
pub(crate) const EPIC_PKT_ID_AT: usize = 0;
/// EPIC-HP PktID read as a `u64`: the shift of EpicTS (its high 32 bits).
pub(crate) const EPIC_TS_SHIFT: u32 = 32;
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
