//! Where an ID-INT request sits in the hop-by-hop header when its main option is the HBH
//! header's first option (the case the fast paths handle): byte offsets into the HBH header
//! and the field values they check, and the bitmap item bits. `idint_wire::idint::main_option` documents the
//! option's own layout; these are its offsets shifted by the HBH header's two bytes.

use idint_wire::IsdAsn;
use idint_wire::idint::main_option::BASE_LEN;

/// Bytes before an option's data: its type and its data length.
pub(crate) const OPT_HDR: usize = 2;
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
