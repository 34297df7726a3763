//! The roles a router plays for a packet, as the ID-INT rules see them (see the module docs of
//! [`crate::idint`]): where the packet goes ([`Out`]), which roles follow ([`Role`]), and why
//! a packet is left alone ([`Skip`]).

/// Where a packet goes, as the ID-INT roles see it.
#[derive(Clone, Copy)]
pub(super) struct Out {
    pub(super) ifid: u16,
    pub(super) egress: bool,
    pub(super) last: bool,
}

/// The roles this router plays for a packet.
#[derive(Clone, Copy)]
pub(super) struct Role {
    pub(super) first: bool,
    pub(super) egress: bool,
    pub(super) last: bool,
    /// An AS-internal node, not a border router.
    pub(super) internal: bool,
}

/// Why the stage left a packet alone.
pub(super) enum Skip {
    Malformed,
    Unsupported,
}
