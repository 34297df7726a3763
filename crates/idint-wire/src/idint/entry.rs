//! ID-INT telemetry stack entries (HBH option type 254), offsets from the type byte:
//!
//! ```text
//! 0 OptType=254  1 OptDataLen  2 S I E A C Res(3)  3 Hop(6) Res(2)
//! 4 Mask(4) ML1..ML4 (3 bits each, value = length / 2)
//! 6 Nonce (12, only if C)  then metadata (bitmap items, slots 1-4), 0-3 zero padding so that
//!   the entry is a multiple of 4, and the 4-byte MAC at the end.
//! ```

use super::{BITMAP_ITEMS, Instruction, pack_3bit4, unpack_3bit4};
use crate::bytes::{read_u16, read_u32, write_u16};
use crate::error::{Error, Layer, Result, need};
use crate::ext::opt_type;

/// Smallest entry (no nonce, no metadata, 2 bytes padding).
pub const MIN_LEN: usize = 12;
/// Nonce length.
pub const NONCE_LEN: usize = 12;
/// MAC length.
pub const MAC_LEN: usize = 4;
/// Offset of the nonce (and of the metadata when there is no nonce).
pub const NONCE_OFFSET: usize = 6;
/// Largest metadata area: 10 bytes of bitmap items and four 8-byte slots.
pub const MAX_METADATA: usize = 42;

/// Flag bits of byte 2.
pub mod flags {
    /// Source entry.
    pub const S: u8 = 0x80;
    /// Written by the AS-ingress border router.
    pub const I: u8 = 0x40;
    /// Written or closed by the AS-egress border router.
    pub const E: u8 = 0x20;
    /// Aggregated from several nodes.
    pub const A: u8 = 0x10;
    /// Encrypted; nonce present.
    pub const C: u8 = 0x08;
}

/// One instruction slot value: `len` bytes (2, 4, 6 or 8), big-endian, right-aligned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SlotValue {
    /// Length in bytes.
    pub len: u8,
    /// Value (only the low `8 * len` bits are used).
    pub value: u64,
}

/// The metadata of an entry, decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Metadata {
    /// Node ID (mask 0x8, 4 bytes).
    pub node_id: Option<u32>,
    /// Node count (mask 0x4, 2 bytes).
    pub node_count: Option<u16>,
    /// Ingress interface (mask 0x2, 2 bytes).
    pub ingress_if: Option<u16>,
    /// Egress interface (mask 0x1, 2 bytes).
    pub egress_if: Option<u16>,
    /// Slots 1-4.
    pub slots: [Option<SlotValue>; 4],
}

impl Metadata {
    /// The Mask nibble.
    pub fn mask(&self) -> u8 {
        (u8::from(self.node_id.is_some()) << 3)
            | (u8::from(self.node_count.is_some()) << 2)
            | (u8::from(self.ingress_if.is_some()) << 1)
            | u8::from(self.egress_if.is_some())
    }

    /// Slot lengths in bytes (0 = absent).
    pub fn slot_lens(&self) -> [u8; 4] {
        self.slots.map(|s| s.map_or(0, |s| s.len))
    }

    /// Encoded metadata length (without padding).
    pub fn len(&self) -> usize {
        metadata_len(self.mask(), self.slot_lens())
    }

    /// Whether there is no metadata at all.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Checks that every present slot is 2, 4, 6 or 8 bytes long (what ML can encode).
    pub fn validate(&self) -> Result<()> {
        if self
            .slots
            .iter()
            .flatten()
            .all(|s| valid_slot_len(s.len) && s.len != 0)
        {
            Ok(())
        } else {
            Err(Error::invalid(Layer::IdIntEntry, "ML"))
        }
    }

    /// Decodes `b` (exactly the metadata bytes) for a mask and slot lengths in bytes (each 0,
    /// 2, 4, 6 or 8; anything else is an invalid ML).
    ///
    /// Every field is decoded into a local and the value built once at the end: filling a
    /// default value field by field and returning it made the caller copy it out with wide
    /// loads right after the narrow stores (a store-forwarding stall per entry).
    #[inline]
    pub fn parse(mask: u8, slot_lens: [u8; 4], b: &[u8]) -> Result<Self> {
        if !slot_lens.iter().all(|&l| valid_slot_len(l)) {
            return Err(Error::invalid(Layer::IdIntEntry, "ML"));
        }
        need(Layer::IdIntEntry, b, metadata_len(mask, slot_lens))?;
        let mut at = 0;
        let mut item = |bit: u8, size: usize| {
            (mask & bit != 0).then(|| {
                let v = if size == 4 {
                    read_u32(b, at)
                } else {
                    u32::from(read_u16(b, at))
                };
                at += size;
                v
            })
        };
        // In bitmap order (`BITMAP_ITEMS`): node ID, node count, ingress, egress interface.
        let node_id = item(0x8, 4);
        let node_count = item(0x4, 2).map(|v| v as u16);
        let ingress_if = item(0x2, 2).map(|v| v as u16);
        let egress_if = item(0x1, 2).map(|v| v as u16);
        let mut slot = |len: u8| {
            (len != 0).then(|| {
                let n = usize::from(len);
                let value = read_be_upto8(b, at, n);
                at += n;
                SlotValue { len, value }
            })
        };
        let slots = [
            slot(slot_lens[0]),
            slot(slot_lens[1]),
            slot(slot_lens[2]),
            slot(slot_lens[3]),
        ];
        Ok(Metadata {
            node_id,
            node_count,
            ingress_if,
            egress_if,
            slots,
        })
    }

    /// Encodes into the start of `b`; returns the bytes written. Fails (writing nothing) if
    /// [`Self::validate`] does or `b` is too short.
    pub fn emit(&self, b: &mut [u8]) -> Result<usize> {
        self.validate()?;
        let len = self.len();
        need(Layer::IdIntEntry, b, len)?;
        let mut at = 0;
        if let Some(v) = self.node_id {
            b[at..at + 4].copy_from_slice(&v.to_be_bytes());
            at += 4;
        }
        for v in [self.node_count, self.ingress_if, self.egress_if]
            .into_iter()
            .flatten()
        {
            write_u16(b, at, v);
            at += 2;
        }
        for s in self.slots.iter().flatten() {
            let n = usize::from(s.len);
            b[at..at + n].copy_from_slice(&s.value.to_be_bytes()[8 - n..]);
            at += n;
        }
        Ok(at)
    }

    /// The first slot (1-based) whose length differs from its instruction's data length, if
    /// any. NOP instructions must have empty slots.
    pub fn slot_len_mismatch(&self, instructions: &[Instruction; 4]) -> Option<usize> {
        self.slots
            .iter()
            .zip(instructions)
            .position(|(s, i)| s.is_some_and(|s| usize::from(s.len) != i.data_len()))
            .map(|p| p + 1)
    }
}

/// Whether `len` bytes is a slot length ML can encode (0 = absent, 2, 4, 6 or 8).
#[inline(always)]
const fn valid_slot_len(len: u8) -> bool {
    len <= 8 && len.is_multiple_of(2)
}

/// Bytes of bitmap metadata for each Mask value.
const BITMAP_LEN: [u8; 16] = {
    let mut t = [0u8; 16];
    let mut m = 0;
    while m < 16 {
        let mut i = 0;
        while i < BITMAP_ITEMS.len() {
            if m as u8 & BITMAP_ITEMS[i].0 != 0 {
                t[m] += BITMAP_ITEMS[i].1 as u8;
            }
            i += 1;
        }
        m += 1;
    }
    t
};

/// The big-endian value of the `n` (1-8) bytes of `b` at `at`: one 8-byte load when the
/// buffer has 8 bytes there, byte by byte otherwise (no call to copy a short value).
#[inline(always)]
fn read_be_upto8(b: &[u8], at: usize, n: usize) -> u64 {
    match b.get(at..at + 8) {
        Some(w) => u64::from_be_bytes(w.try_into().unwrap_or([0; 8])) >> (64 - 8 * n),
        None => b[at..at + n]
            .iter()
            .fold(0u64, |v, &x| (v << 8) | u64::from(x)),
    }
}

/// Metadata length for a mask and slot lengths (bytes).
pub fn metadata_len(mask: u8, slot_lens: [u8; 4]) -> usize {
    usize::from(BITMAP_LEN[usize::from(mask & 0xf)])
        + slot_lens.iter().map(|&l| usize::from(l)).sum::<usize>()
}

/// Metadata length straight from the Mask/ML word (bytes 4-5 of an entry), and whether every
/// ML value is valid (0-4).
#[inline]
fn metadata_len_from_word(w: u16) -> (usize, bool) {
    let ml = [(w >> 9) & 7, (w >> 6) & 7, (w >> 3) & 7, w & 7];
    let valid = ml.iter().all(|&v| v <= 4);
    let slots = usize::from(ml[0] + ml[1] + ml[2] + ml[3]) * 2;
    (usize::from(BITMAP_LEN[usize::from(w >> 12)]) + slots, valid)
}

/// Padding after `metadata_len` bytes of metadata so that metadata + padding ≡ 2 (mod 4).
pub const fn padding_len(metadata_len: usize) -> usize {
    (6 - metadata_len % 4) % 4
}

/// Total entry length for these contents.
pub const fn entry_len(encrypted: bool, metadata_len: usize) -> usize {
    NONCE_OFFSET
        + if encrypted { NONCE_LEN } else { 0 }
        + metadata_len
        + padding_len(metadata_len)
        + MAC_LEN
}

/// View of a stack entry, starting at its type byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Entry<T> {
    /// Wraps `buffer` without checks.
    pub const fn new_unchecked(buffer: T) -> Self {
        Entry { buffer }
    }

    /// Wraps `buffer` and runs [`Self::check_len`].
    #[inline]
    pub fn new_checked(buffer: T) -> Result<Self> {
        let e = Self::new_unchecked(buffer);
        e.check_len()?;
        Ok(e)
    }

    /// Checks type, length (multiple of 4, at least 12, within the buffer), ML values (0-4)
    /// and that nonce, metadata, padding (0-3 bytes) and MAC fill the entry exactly.
    /// Always inlined: routers call it per packet, and as a call its result came back through
    /// memory.
    #[inline(always)]
    pub fn check_len(&self) -> Result<()> {
        let b = self.buffer.as_ref();
        need(Layer::IdIntEntry, b, NONCE_OFFSET)?;
        if b[0] != opt_type::IDINT_ENTRY {
            return Err(Error::invalid(Layer::IdIntEntry, "OptType"));
        }
        let total = self.total_len();
        if total < MIN_LEN || !total.is_multiple_of(4) {
            return Err(Error::invalid(Layer::IdIntEntry, "OptDataLen"));
        }
        need(Layer::IdIntEntry, b, total)?;
        let (md, ml_valid) = metadata_len_from_word(read_u16(b, 4));
        if !ml_valid {
            return Err(Error::invalid(Layer::IdIntEntry, "ML"));
        }
        let fixed = self.metadata_offset() + MAC_LEN;
        match total.checked_sub(fixed + md) {
            Some(pad) if pad < 4 => Ok(()),
            _ => Err(Error::invalid(Layer::IdIntEntry, "OptDataLen")),
        }
    }

    /// Gives the buffer back.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    fn b(&self) -> &[u8] {
        self.buffer.as_ref()
    }

    /// Entry length including type and length bytes.
    pub fn total_len(&self) -> usize {
        usize::from(self.b()[1]) + 2
    }
    /// The entry bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.b()[..self.total_len()]
    }
    /// Raw flags byte.
    pub fn flags(&self) -> u8 {
        self.b()[2]
    }
    /// S: source entry.
    pub fn is_source(&self) -> bool {
        self.flags() & flags::S != 0
    }
    /// I: written by the ingress border router.
    pub fn ingress(&self) -> bool {
        self.flags() & flags::I != 0
    }
    /// E: written or closed by the egress border router.
    pub fn egress(&self) -> bool {
        self.flags() & flags::E != 0
    }
    /// A: aggregated.
    pub fn aggregated(&self) -> bool {
        self.flags() & flags::A != 0
    }
    /// C: encrypted (nonce present).
    pub fn encrypted(&self) -> bool {
        self.flags() & flags::C != 0
    }
    /// Hop-field index the entry relates to.
    pub fn hop(&self) -> u8 {
        self.b()[3] >> 2
    }
    /// Mask (bitmap metadata present).
    pub fn mask(&self) -> u8 {
        self.b()[4] >> 4
    }
    /// Slot lengths in bytes, decoded from ML1..ML4.
    pub fn slot_lens(&self) -> [u8; 4] {
        unpack_3bit4(read_u16(self.b(), 4)).map(|ml| ml * 2)
    }
    /// The nonce, if the entry is encrypted.
    pub fn nonce(&self) -> Option<[u8; NONCE_LEN]> {
        if !self.encrypted() {
            return None;
        }
        let mut n = [0u8; NONCE_LEN];
        n.copy_from_slice(&self.b()[NONCE_OFFSET..NONCE_OFFSET + NONCE_LEN]);
        Some(n)
    }
    /// Offset of the metadata.
    pub fn metadata_offset(&self) -> usize {
        NONCE_OFFSET + if self.encrypted() { NONCE_LEN } else { 0 }
    }
    /// Metadata length (without padding).
    pub fn metadata_len(&self) -> usize {
        metadata_len_from_word(read_u16(self.b(), 4)).0
    }
    /// The metadata bytes (plaintext only if the entry is not encrypted or was decrypted).
    pub fn metadata_bytes(&self) -> &[u8] {
        let s = self.metadata_offset();
        &self.b()[s..s + self.metadata_len()]
    }
    /// Decoded metadata.
    pub fn metadata(&self) -> Result<Metadata> {
        Metadata::parse(self.mask(), self.slot_lens(), self.metadata_bytes())
    }
    /// The 4-byte MAC field.
    pub fn mac(&self) -> [u8; MAC_LEN] {
        let t = self.total_len();
        let b = self.b();
        [b[t - 4], b[t - 3], b[t - 2], b[t - 1]]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Entry<T> {
    /// Sets the flags byte.
    pub fn set_flags(&mut self, v: u8) {
        self.buffer.as_mut()[2] = v;
    }
    /// Sets the MAC field.
    pub fn set_mac(&mut self, mac: [u8; MAC_LEN]) {
        let t = self.total_len();
        self.buffer.as_mut()[t - 4..t].copy_from_slice(&mac);
    }
    /// The metadata bytes, writable.
    pub fn metadata_bytes_mut(&mut self) -> &mut [u8] {
        let s = self.metadata_offset();
        let e = s + self.metadata_len();
        &mut self.buffer.as_mut()[s..e]
    }
    /// Everything after the nonce (metadata, padding, MAC): the part CTR encryption covers.
    pub fn encrypted_part_mut(&mut self) -> &mut [u8] {
        let s = self.metadata_offset();
        let t = self.total_len();
        &mut self.buffer.as_mut()[s..t]
    }
}

/// Owned stack entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EntryRepr {
    /// S flag.
    pub source: bool,
    /// I flag.
    pub ingress: bool,
    /// E flag.
    pub egress: bool,
    /// A flag.
    pub aggregated: bool,
    /// Nonce if the entry is encrypted (C flag).
    pub nonce: Option<[u8; NONCE_LEN]>,
    /// Hop-field index (6 bits).
    pub hop: u8,
    /// Metadata (plaintext).
    pub metadata: Metadata,
    /// MAC field.
    pub mac: [u8; MAC_LEN],
}

impl EntryRepr {
    /// Reads a checked entry. For an encrypted entry the metadata is only meaningful after
    /// decryption.
    pub fn parse<T: AsRef<[u8]>>(e: &Entry<T>) -> Result<Self> {
        e.check_len()?;
        let f = e.flags();
        Ok(EntryRepr {
            source: f & flags::S != 0,
            ingress: f & flags::I != 0,
            egress: f & flags::E != 0,
            aggregated: f & flags::A != 0,
            nonce: e.nonce(),
            hop: e.hop(),
            metadata: e.metadata()?,
            mac: e.mac(),
        })
    }

    /// The flags byte.
    pub fn flags(&self) -> u8 {
        (u8::from(self.source) * flags::S)
            | (u8::from(self.ingress) * flags::I)
            | (u8::from(self.egress) * flags::E)
            | (u8::from(self.aggregated) * flags::A)
            | (u8::from(self.nonce.is_some()) * flags::C)
    }

    /// Entry length.
    pub fn buffer_len(&self) -> usize {
        entry_len(self.nonce.is_some(), self.metadata.len())
    }

    /// Checks the fields [`Self::emit`] cannot encode: Hop above 63 and slots that are not
    /// 2, 4, 6 or 8 bytes long.
    pub fn validate(&self) -> Result<()> {
        if self.hop > 63 {
            return Err(Error::invalid(Layer::IdIntEntry, "Hop"));
        }
        self.metadata.validate()
    }

    /// Writes the entry to the start of `b`. Fails (writing nothing) if [`Self::validate`]
    /// does or `b` is shorter than [`Self::buffer_len`].
    pub fn emit(&self, b: &mut [u8]) -> Result<()> {
        self.validate()?;
        let len = self.buffer_len();
        need(Layer::IdIntEntry, b, len)?;
        b[0] = opt_type::IDINT_ENTRY;
        b[1] = (len - 2) as u8;
        b[2] = self.flags();
        b[3] = self.hop << 2;
        let ml = self.metadata.slot_lens().map(|l| l / 2);
        write_u16(
            b,
            4,
            (u16::from(self.metadata.mask()) << 12) | pack_3bit4(ml),
        );
        let mut at = NONCE_OFFSET;
        if let Some(n) = self.nonce {
            b[at..at + NONCE_LEN].copy_from_slice(&n);
            at += NONCE_LEN;
        }
        at += self.metadata.emit(&mut b[at..len - MAC_LEN])?;
        b[at..len - MAC_LEN].fill(0);
        b[len - MAC_LEN..len].copy_from_slice(&self.mac);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Second entry of the reference HBH example: I+E+C, hop 1, NodeID 2, slot1 = 3 (4 bytes),
    // slot2 = 4 (2 bytes), MAC placeholder.
    const ENTRY: [u8; 32] = [
        0xfe, 0x1e, 0x68, 0x04, 0x84, 0x40, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0,
        0, 3, 0, 4, 0xff, 0xff, 0xff, 0xff,
    ];

    #[test]
    fn deconstruct() {
        let e = Entry::new_checked(&ENTRY[..]).unwrap();
        assert!(!e.is_source() && e.ingress() && e.egress() && !e.aggregated() && e.encrypted());
        assert_eq!(e.hop(), 1);
        assert_eq!(e.mask(), 0x8);
        assert_eq!(e.slot_lens(), [4, 2, 0, 0]);
        assert_eq!(e.nonce().unwrap()[11], 2);
        assert_eq!(e.metadata_len(), 10);
        let m = e.metadata().unwrap();
        assert_eq!(m.node_id, Some(2));
        assert_eq!(m.slots[0], Some(SlotValue { len: 4, value: 3 }));
        assert_eq!(m.slots[1], Some(SlotValue { len: 2, value: 4 }));
        assert_eq!(e.mac(), [0xff; 4]);
    }

    #[test]
    fn parse_emit_round_trip() {
        let r = EntryRepr::parse(&Entry::new_checked(&ENTRY[..]).unwrap()).unwrap();
        let mut out = [0u8; 32];
        assert_eq!(r.buffer_len(), 32);
        r.emit(&mut out).unwrap();
        assert_eq!(out, ENTRY);
    }

    #[test]
    fn bad_entries() {
        for cut in 0..ENTRY.len() {
            assert!(Entry::new_checked(&ENTRY[..cut]).is_err());
        }
        let mut bad = ENTRY;
        bad[1] = 0x1d; // not a multiple of 4
        assert!(Entry::new_checked(&bad[..]).is_err());
        let mut bad = ENTRY;
        bad[5] = 0xc0; // ML2 = 7
        assert!(Entry::new_checked(&bad[..]).is_err());
        let mut bad = ENTRY;
        bad[4] = 0xf4; // mask claims 10 bytes of bitmap items: metadata no longer fits
        assert!(Entry::new_checked(&bad[..]).is_err());
    }

    #[test]
    fn metadata_parse_refuses_slot_lengths_ml_cannot_encode() {
        let ml = Err(Error::invalid(Layer::IdIntEntry, "ML"));
        assert_eq!(Metadata::parse(0, [9, 0, 0, 0], &[0; 9]), ml);
        assert_eq!(Metadata::parse(0, [0, 0, 0, 255], &[0; 255]), ml);
        assert_eq!(Metadata::parse(0, [0, 14, 0, 0], &[0; 14]), ml);
        assert_eq!(Metadata::parse(0, [3, 0, 0, 0], &[0; 3]), ml);
        let m = Metadata::parse(0, [8, 0, 0, 2], &[1; 10]).unwrap();
        assert_eq!(
            m.slots[0],
            Some(SlotValue {
                len: 8,
                value: 0x0101_0101_0101_0101
            })
        );
        assert_eq!(
            m.slots[3],
            Some(SlotValue {
                len: 2,
                value: 0x0101
            })
        );
    }

    #[test]
    fn invalid_entries_emit_nothing() {
        let mut bad_slot = EntryRepr::default();
        bad_slot.metadata.node_id = Some(7);
        for len in [0, 3, 10] {
            bad_slot.metadata.slots[1] = Some(SlotValue { len, value: 1 });
            let mut b = [0xa5u8; 64];
            assert_eq!(
                bad_slot.emit(&mut b),
                Err(Error::invalid(Layer::IdIntEntry, "ML"))
            );
            assert_eq!(
                bad_slot.metadata.emit(&mut b).map(|_| ()),
                bad_slot.validate()
            );
            assert_eq!(b, [0xa5; 64], "slot length {len}");
        }
        let bad_hop = EntryRepr {
            hop: 64,
            ..EntryRepr::default()
        };
        let mut b = [0xa5u8; 64];
        assert_eq!(
            bad_hop.emit(&mut b),
            Err(Error::invalid(Layer::IdIntEntry, "Hop"))
        );
        assert_eq!(b, [0xa5; 64]);
    }

    #[test]
    fn padding_rule() {
        for md in 0..=MAX_METADATA {
            assert_eq!((md + padding_len(md)) % 4, 2);
            assert_eq!(entry_len(false, md) % 4, 0);
            assert_eq!(entry_len(true, md) % 4, 0);
        }
        assert_eq!(entry_len(false, 0), MIN_LEN);
    }
}
