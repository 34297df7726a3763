//! What the first processing stage hands to the second: [`Pending`] (one packet) and
//! [`Scratch`] (a burst's worth of them). A leaf: uses only the path views.

use idint_wire::path::scion::{HOP_LEN, INFO_LEN, META_LEN};

use super::path::{Hop, Info, Meta, field};
use crate::burst::MAX_BURST;
use crate::outcome::Ingress;

/// EPIC-HP role of this router for the packet (decided before processing moves the path).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) enum EpicRole {
    /// Not an EPIC packet.
    #[default]
    None,
    /// EPIC, but neither the penultimate nor the last hop: no HVF check here.
    Transit,
    /// Penultimate hop: check PHVF.
    Penultimate,
    /// Last hop: check LHVF.
    Last,
}

impl EpicRole {
    /// The role of the router at the current hop of an EPIC-HP path.
    #[inline(always)]
    pub(super) fn at(meta: Meta) -> EpicRole {
        if meta.is_last_hop() {
            EpicRole::Last
        } else if meta.is_penultimate_hop() {
            EpicRole::Penultimate
        } else {
            EpicRole::Transit
        }
    }
}

/// What stage one learned about a SCION-path packet.
#[derive(Debug, Clone, Copy)]
pub(super) struct Pending {
    /// Where the packet came from.
    pub(super) ingress: Ingress,
    /// Offset of the SCION path (after the EPIC fields for EPIC).
    pub(super) sp: usize,
    /// The path meta header.
    pub(super) meta: Meta,
    /// The current info field (SegID already restored against construction direction).
    pub(super) info: Info,
    /// The current hop field.
    pub(super) hop: Hop,
    /// Whether the current hop is a peering hop.
    pub(super) peering: bool,
    /// Whether the destination ISD-AS is this AS.
    pub(super) dst_local: bool,
    /// This router's EPIC-HP role.
    pub(super) epic: EpicRole,
}

impl Default for Pending {
    fn default() -> Self {
        Pending {
            ingress: Ingress::Internal,
            sp: 0,
            meta: Meta::default(),
            info: Info::default(),
            hop: Hop::default(),
            peering: false,
            dst_local: false,
            epic: EpicRole::None,
        }
    }
}

impl Pending {
    /// Offset of info field `i` in the packet.
    #[inline(always)]
    pub(super) fn info_at(&self, i: usize) -> usize {
        self.sp + META_LEN + INFO_LEN * i
    }
    /// Offset of hop field `j` in the packet.
    #[inline(always)]
    pub(super) fn hop_at(&self, j: usize) -> usize {
        self.sp + META_LEN + INFO_LEN * self.meta.num_infos() + HOP_LEN * j
    }
    /// The current hop field's offset as an SCMP pointer.
    #[inline(always)]
    pub(super) fn hop_ptr(&self) -> u16 {
        self.hop_at(self.meta.curr_hf()) as u16
    }
}

/// What stage one of the transit fast path hands to stage two. Stage one makes the path
/// updates of a forward right away; stage two only checks the MAC and, should it not match,
/// undoes them (see [`Engine::fast_two`](super::engine::Engine)).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct FastPending {
    /// The current hop field's MAC as the low 48 bits.
    pub(super) mac: u64,
    /// Offset of the SCION path.
    pub(super) sp: u16,
    /// The interface the packet arrived on.
    pub(super) in_if: u16,
    /// The egress interface; 0 marks a slot that takes the general stage two.
    pub(super) egress: u16,
    /// CurrHF as the packet arrived.
    pub(super) hop: u8,
    /// The common header's next-header byte (what the hook is asked whether it wants).
    pub(super) next_hdr: u8,
}

/// Per-burst working memory, allocated once per processor so a burst costs no initialisation.
pub(super) struct Scratch {
    /// Stage one's findings, one slot per packet that needs stage two.
    pub(super) pending: [Pending; MAX_BURST],
    /// The fast path's findings, same slots; `egress` 0 where the general path took over.
    pub(super) fast: [FastPending; MAX_BURST],
    /// The CMAC input blocks, replaced in place by the MACs.
    pub(super) blocks: [[u8; field::mac_input::LEN]; MAX_BURST],
    /// Each slot's packet index in the burst.
    pub(super) index: [u8; MAX_BURST],
}

impl Scratch {
    /// Zeroed scratch space.
    pub(super) fn new() -> Self {
        Scratch {
            pending: [Pending::default(); MAX_BURST],
            fast: [FastPending::default(); MAX_BURST],
            blocks: [[0u8; field::mac_input::LEN]; MAX_BURST],
            index: [0u8; MAX_BURST],
        }
    }
}
