//! Where an ID-INT request sits in the hop-by-hop header when its main option is the HBH
//! header's first option (the case the fast paths handle): byte offsets into the HBH header
//! and the field values they check, and the bitmap item bits. `idint_wire::idint::main_option` documents the
//! option's own layout; these are its offsets shifted by the HBH header's two bytes.

use idint_wire::IsdAsn;
use idint_wire::idint::main_option::BASE_LEN;

/// Bytes before an option's data: its type and its data length.
pub(crate) const OPT_HDR: usize = 2;
/// Within an option: offset of its data length byte (after the type).
pub(crate) const OPT_DATA_LEN: usize = 1;
/// Within an option: offset of its type byte.
pub(crate) const OPT_TYPE: usize = 0;
/// Within an entry option: offset of its first flags byte (S, I, E, A, C).
pub(crate) const ENTRY_FLAGS: usize = OPT_HDR;
/// Within an entry option: offset of the hop index byte ([`entry_hop`]).
pub(crate) const ENTRY_HOP: usize = OPT_HDR + 1;
/// Within an entry option: offset of the 16-bit metadata word ([`entry_md`]).
pub(crate) const ENTRY_MD: usize = OPT_HDR + 2;
/// The main option's type byte (the first option: after NextHdr and ExtLen).
pub(crate) const MAIN: usize = 2;
/// The main option's OptDataLen.
pub(crate) const MAIN_DATA_LEN: usize = MAIN + 1;
/// Version (3 bits) and the flags I, D, E, X, R.
pub(crate) const MAIN_FLAGS: usize = MAIN + 2;
/// Mode (2 bits), verifier (2), verifier type (2) and verifier length (2).
pub(crate) const MAIN_MODE: usize = MAIN + 3;
/// StackLen (4-byte words).
pub(crate) const STACK_LEN: usize = MAIN + 4;
/// TOS: the top entry's offset from the start of the stack (4-byte words).
pub(crate) const TOS: usize = MAIN + 5;
/// DelayHops (the high 6 bits).
pub(crate) const DELAY_HOPS: usize = MAIN + 6;
/// Instruction bitmap (high nibble) and the first aggregation function.
pub(crate) const INST_BITMAP: usize = MAIN + 8;
/// Inst1..Inst4, one byte each.
pub(crate) const INSTRUCTIONS: usize = MAIN + 10;
/// End of the bytes a flow plan compares as its request (extension header and main option
/// up to the instructions).
pub(crate) const REQUEST_END: usize = INSTRUCTIONS + 4;
/// Offset of a third-party verifier's ISD-AS in the main option (Vrf = 0).
pub(crate) const OPT_VERIFIER_IA: usize = BASE_LEN;
/// Offset of a third-party verifier's host address in the main option.
pub(crate) const OPT_VERIFIER_HOST: usize = OPT_VERIFIER_IA + IsdAsn::LEN;
/// The third-party verifier's ISD-AS in the HBH header.
pub(crate) const VERIFIER_IA: usize = MAIN + OPT_VERIFIER_IA;
/// The third-party verifier's host address in the HBH header.
pub(crate) const VERIFIER_HOST: usize = MAIN + OPT_VERIFIER_HOST;
/// Main option length (type and length bytes included) with a third-party IPv4 verifier.
pub(crate) const MAIN_LEN_V4: usize = OPT_VERIFIER_HOST + 4;
/// Main option length with a third-party IPv6 verifier.
pub(crate) const MAIN_LEN_V6: usize = OPT_VERIFIER_HOST + 16;
/// The version bits of [`MAIN_FLAGS`] (only version 0 is known).
pub(crate) const VERSION_MASK: u8 = 0xe0;

/// Bits of [`MAIN_MODE`]: `Mode(2) Vrf(2) VT(2) VL(2)`.
pub(crate) mod mode {
    /// The aggregation mode, the top 2 bits.
    pub(crate) const MODE_SHIFT: u32 = 6;
    /// The verifier kind (Vrf), 2 bits below the mode.
    pub(crate) const VERIFIER_SHIFT: u32 = 4;
    /// Vrf after its shift.
    pub(crate) const VERIFIER_MASK: u8 = 0x3;
    /// A third-party verifier's address type and length (VT, VL): the low 4 bits.
    pub(crate) const VERIFIER_ADDR_MASK: u8 = 0xf;
    /// Aggregation mode 0: every node pushes its own entry.
    pub(crate) const MODE_OFF: u8 = 0;
    /// Aggregation mode 1: at most one entry per AS.
    pub(crate) const MODE_PER_AS: u8 = 1;
    /// Vrf: a third-party verifier named in the main option.
    pub(crate) const VERIFIER_THIRD_PARTY: u8 = 0;
    /// Vrf: the packet's destination.
    pub(crate) const VERIFIER_DESTINATION: u8 = 1;
    /// Vrf: the packet's source.
    pub(crate) const VERIFIER_SOURCE: u8 = 2;
    /// VT/VL of an IPv4 verifier address.
    pub(crate) const VERIFIER_ADDR_IPV4: u8 = 0x0;
    /// VT/VL of an IPv6 verifier address.
    pub(crate) const VERIFIER_ADDR_IPV6: u8 = 0x3;

    const _: () = assert!(
        MODE_OFF == idint_wire::idint::AggregationMode::Off.bits()
            && MODE_PER_AS == idint_wire::idint::AggregationMode::PerAs.bits()
    );
}
/// [`DELAY_HOPS`]: the shift of DelayHops (its high 6 bits).
pub(crate) const DELAY_HOPS_SHIFT: u32 = 2;
/// [`INST_BITMAP`]: the shift of the instruction bitmap (InstF, the high nibble).
pub(crate) const INST_BITMAP_SHIFT: u32 = 4;
/// StackLen, TOS and an extension header's length count units of this many bytes.
pub(crate) const WORD: usize = 4;

/// An entry's second flags byte: `Hop(6) RSV(2)`.
pub(crate) mod entry_hop {
    /// The shift of the hop index.
    pub(crate) const SHIFT: u32 = 2;
    /// The hop index before its shift.
    pub(crate) const MASK: u8 = 0x3f;
}

/// An entry's 16-bit metadata word: `Mask(4) ML1(3) ML2(3) ML3(3) ML4(3)`.
pub(crate) mod entry_md {
    /// The shift of the Mask nibble.
    pub(crate) const MASK_SHIFT: u32 = 12;
    /// The shifts of ML1..ML4 (each a slot's length in 2-byte units).
    pub(crate) const ML_SHIFT: [u32; 4] = [9, 6, 3, 0];
    /// An ML field counts units of this many bytes.
    pub(crate) const ML_UNIT: usize = 2;
}

const _: () = assert!(ENTRY_MD + 2 == idint_wire::idint::entry::NONCE_OFFSET);
const _: () = assert!(MAIN_LEN_V4 == 34 && MAIN_LEN_V6 == 46 && REQUEST_END == 16);

/// The bitmap items, as bits of the main option's InstF nibble and of an entry's Mask nibble
/// (an entry's Mask says which items it actually carries).
pub(crate) mod item {
    /// Node ID (4 bytes).
    pub(crate) const NODE_ID: u8 = 0x8;
    /// Node count (2 bytes).
    pub(crate) const NODE_COUNT: u8 = 0x4;
    /// Ingress interface (2 bytes).
    pub(crate) const INGRESS_IF: u8 = 0x2;
    /// Egress interface (2 bytes).
    pub(crate) const EGRESS_IF: u8 = 0x1;
    /// The items a router can always supply (all but the node ID).
    pub(crate) const ALWAYS: u8 = NODE_COUNT | INGRESS_IF | EGRESS_IF;
}
