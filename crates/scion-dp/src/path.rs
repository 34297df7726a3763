//! Facts about SCION path headers shared by packet processing, SCMP replies and ID-INT
//! (peering hops, info-field flags). A leaf: depends on nothing else in the crate.

use idint_wire::path::{InfoField, PathMeta};

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
