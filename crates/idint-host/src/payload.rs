//! The UDP payloads of `idint-ping`: the ping and its reply, in a compact big-endian
//! encoding. Decoding takes any bytes and never panics.
//!
//! Both start with the same 8-byte header, then the body of their kind:
//!
//! ```text
//! header:  magic "IP" (0x49 0x50) | version 1 | kind (1 ping, 2 reply) | seq u32
//! ping:    sent_ns u64 | n u8 | n x ISD-AS u64        (the AS of every hop field, travel order)
//! reply:   sent_ns u64 (echoed) | status u8 (0 verified, else a Reason code) | flags u8
//!          (bit 0: entries left out to fit the MTU) | Inst1..Inst4 u8 x 4
//!          | source timestamp u64 (the request's, 48 bits) | n u8 | n x entry
//! entry:   index u8 | entry flags u8 (S 0x80, I 0x40, E 0x20, A 0x10, C 0x08) | hop u8
//!          | present u8 (0x80 node id, 0x40 ingress IF, 0x20 egress IF, 0x08 >> k slot k)
//!          | ISD-AS u64 (0: unknown) | node id u32? | ingress IF u16? | egress IF u16?
//!          | per present slot: length u8 (2, 4, 6 or 8) + that many value bytes
//! ```
//!
//! A reply carries what the destination verified: every entry of the stack, the source entry
//! first, its values as the routers wrote them (decrypted).

use idint_wire::IsdAsn;
use idint_wire::idint::entry::SlotValue;
use idint_wire::idint::{Instruction, Metadata};

use crate::reason::Reason;

/// First two bytes of every payload.
pub const MAGIC: [u8; 2] = *b"IP";
/// Encoding version.
pub const VERSION: u8 = 1;
/// Kind byte of a ping.
pub const KIND_PING: u8 = 1;
/// Kind byte of a reply.
pub const KIND_REPLY: u8 = 2;
/// Length of the common header.
pub const HEADER_LEN: usize = 8;
/// Most hop fields a ping lists (a SCION path's maximum).
pub const MAX_PING_HOPS: usize = 64;
/// Most entries a reply holds (a stack's maximum).
pub const MAX_REPLY_ENTRIES: usize = 255;
/// Reply flag: entries were left out to fit the MTU.
pub const FLAG_TRUNCATED: u8 = 0x01;
/// Longest encoding of one reply entry.
pub const MAX_ENTRY_LEN: usize = 4 + 8 + 4 + 2 + 2 + 4 * 9;

const PRESENT_NODE: u8 = 0x80;
const PRESENT_INGRESS: u8 = 0x40;
const PRESENT_EGRESS: u8 = 0x20;
const PRESENT_SLOT1: u8 = 0x08;

/// Why a payload could not be decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PayloadError {
    /// Fewer bytes than the encoding needs.
    #[error("payload truncated")]
    Truncated,
    /// Not an idint-ping payload (magic or version).
    #[error("not an idint-ping payload")]
    Foreign,
    /// Another kind than expected.
    #[error("payload kind {0}, expected another")]
    Kind(u8),
    /// A field holds a value the encoding does not allow.
    #[error("invalid payload field {0}")]
    Invalid(&'static str),
    /// Bytes after the encoding's end.
    #[error("{0} bytes after the payload")]
    Trailing(usize),
}

/// A ping.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ping {
    /// Sequence number.
    pub seq: u32,
    /// Sender clock at sending, Unix ns.
    pub sent_ns: u64,
    /// The AS of every hop field of the path, in travel order (empty for the empty path).
    pub hop_ias: Vec<IsdAsn>,
}

/// One verified entry of the stack, as a reply carries it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HopValues {
    /// Position in the stack (0 = source entry).
    pub index: u8,
    /// Entry flags (S, I, E, A, C as on the wire).
    pub flags: u8,
    /// Hop-field index the entry was written at.
    pub hop: u8,
    /// The AS of that hop field (as the ping named it), if known.
    pub ia: Option<IsdAsn>,
    /// Node id, interfaces and the four slots.
    pub metadata: Metadata,
}

/// Entry flag bits (as the wire's flags byte).
pub mod entry_flags {
    /// Source entry.
    pub const SOURCE: u8 = 0x80;
    /// Written by the AS-ingress router.
    pub const INGRESS: u8 = 0x40;
    /// Written by the AS-egress router.
    pub const EGRESS: u8 = 0x20;
    /// Aggregated.
    pub const AGGREGATED: u8 = 0x10;
    /// Was encrypted.
    pub const ENCRYPTED: u8 = 0x08;
}

/// A reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// The ping's sequence number.
    pub seq: u32,
    /// The ping's `sent_ns`, echoed.
    pub sent_ns: u64,
    /// `None`: the telemetry verified; else why not.
    pub failure: Option<Reason>,
    /// Entries were left out to fit the MTU.
    pub truncated: bool,
    /// The instructions of the request (slot 1-4).
    pub instructions: [Instruction; 4],
    /// The request's source timestamp (48 bits, ns).
    pub source_ts: u64,
    /// The verified entries in stack order (empty when verification failed).
    pub entries: Vec<HopValues>,
}

struct Reader<'a> {
    b: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], PayloadError> {
        if self.b.len() < n {
            return Err(PayloadError::Truncated);
        }
        let (h, t) = self.b.split_at(n);
        self.b = t;
        Ok(h)
    }
    fn u8(&mut self) -> Result<u8, PayloadError> {
        Ok(self.take(1)?[0])
    }
    fn be(&mut self, n: usize) -> Result<u64, PayloadError> {
        Ok(self
            .take(n)?
            .iter()
            .fold(0u64, |a, &x| (a << 8) | u64::from(x)))
    }
    fn finish(self) -> Result<(), PayloadError> {
        match self.b.len() {
            0 => Ok(()),
            n => Err(PayloadError::Trailing(n)),
        }
    }
}

/// Appends the low `n` bytes of `v` (at most 8).
fn put_be(out: &mut Vec<u8>, v: u64, n: usize) {
    out.extend_from_slice(&v.to_be_bytes()[8 - n.min(8)..]);
}

fn header(out: &mut Vec<u8>, kind: u8, seq: u32) {
    out.extend_from_slice(&MAGIC);
    out.push(VERSION);
    out.push(kind);
    out.extend_from_slice(&seq.to_be_bytes());
}

/// Reads the header; returns (kind, seq, the rest).
fn read_header(b: &[u8]) -> Result<(u8, u32, Reader<'_>), PayloadError> {
    let mut r = Reader { b };
    let h = r.take(HEADER_LEN)?;
    if h[..2] != MAGIC || h[2] != VERSION {
        return Err(PayloadError::Foreign);
    }
    Ok((h[3], u32::from_be_bytes([h[4], h[5], h[6], h[7]]), r))
}

impl Ping {
    /// Bytes [`Self::encode`] writes.
    pub fn encoded_len(&self) -> usize {
        HEADER_LEN + 8 + 1 + 8 * self.hop_ias.len()
    }

    /// Appends the encoding to `out`; `None` (nothing written) if it lists more than
    /// [`MAX_PING_HOPS`] hops.
    pub fn encode(&self, out: &mut Vec<u8>) -> Option<()> {
        if self.hop_ias.len() > MAX_PING_HOPS {
            return None;
        }
        header(out, KIND_PING, self.seq);
        out.extend_from_slice(&self.sent_ns.to_be_bytes());
        out.push(self.hop_ias.len() as u8);
        for ia in &self.hop_ias {
            out.extend_from_slice(&ia.to_u64().to_be_bytes());
        }
        Some(())
    }

    /// Decodes a ping.
    pub fn decode(b: &[u8]) -> Result<Self, PayloadError> {
        let (kind, seq, mut r) = read_header(b)?;
        if kind != KIND_PING {
            return Err(PayloadError::Kind(kind));
        }
        let sent_ns = r.be(8)?;
        let n = usize::from(r.u8()?);
        if n > MAX_PING_HOPS {
            return Err(PayloadError::Invalid("hop count"));
        }
        let mut hop_ias = Vec::with_capacity(n);
        for _ in 0..n {
            hop_ias.push(IsdAsn::from_u64(r.be(8)?));
        }
        r.finish()?;
        Ok(Ping {
            seq,
            sent_ns,
            hop_ias,
        })
    }
}

impl HopValues {
    /// Bytes this entry takes in a reply.
    pub fn encoded_len(&self) -> usize {
        let m = &self.metadata;
        4 + 8
            + if m.node_id.is_some() { 4 } else { 0 }
            + if m.ingress_if.is_some() { 2 } else { 0 }
            + if m.egress_if.is_some() { 2 } else { 0 }
            + m.slots
                .iter()
                .flatten()
                .map(|s| 1 + usize::from(s.len))
                .sum::<usize>()
    }

    fn encode(&self, out: &mut Vec<u8>) {
        let m = &self.metadata;
        let mut present = 0u8;
        present |= if m.node_id.is_some() { PRESENT_NODE } else { 0 };
        present |= if m.ingress_if.is_some() {
            PRESENT_INGRESS
        } else {
            0
        };
        present |= if m.egress_if.is_some() {
            PRESENT_EGRESS
        } else {
            0
        };
        for (k, s) in m.slots.iter().enumerate() {
            if s.is_some() {
                present |= PRESENT_SLOT1 >> k;
            }
        }
        out.extend_from_slice(&[self.index, self.flags, self.hop, present]);
        out.extend_from_slice(&self.ia.map_or(0, IsdAsn::to_u64).to_be_bytes());
        if let Some(n) = m.node_id {
            out.extend_from_slice(&n.to_be_bytes());
        }
        if let Some(i) = m.ingress_if {
            out.extend_from_slice(&i.to_be_bytes());
        }
        if let Some(e) = m.egress_if {
            out.extend_from_slice(&e.to_be_bytes());
        }
        for s in m.slots.iter().flatten() {
            // Slot lengths are 2, 4, 6 or 8 (`Metadata::validate`); never more than 8 here.
            let len = s.len.min(8);
            out.push(len);
            put_be(out, s.value, usize::from(len));
        }
    }

    fn decode(r: &mut Reader<'_>) -> Result<Self, PayloadError> {
        let h = r.take(4)?;
        let (index, flags, hop, present) = (h[0], h[1], h[2], h[3]);
        if present & 0x10 != 0 {
            return Err(PayloadError::Invalid("present"));
        }
        let ia = match r.be(8)? {
            0 => None,
            v => Some(IsdAsn::from_u64(v)),
        };
        let mut m = Metadata::default();
        if present & PRESENT_NODE != 0 {
            m.node_id = Some(r.be(4)? as u32);
        }
        if present & PRESENT_INGRESS != 0 {
            m.ingress_if = Some(r.be(2)? as u16);
        }
        if present & PRESENT_EGRESS != 0 {
            m.egress_if = Some(r.be(2)? as u16);
        }
        for k in 0..4 {
            if present & (PRESENT_SLOT1 >> k) != 0 {
                let len = r.u8()?;
                if !matches!(len, 2 | 4 | 6 | 8) {
                    return Err(PayloadError::Invalid("slot length"));
                }
                let value = r.be(usize::from(len))?;
                m.slots[k] = Some(SlotValue { len, value });
            }
        }
        Ok(HopValues {
            index,
            flags,
            hop,
            ia,
            metadata: m,
        })
    }
}

impl Reply {
    /// Bytes of the reply without entries.
    pub const FIXED_LEN: usize = HEADER_LEN + 8 + 1 + 1 + 4 + 8 + 1;

    /// Appends the encoding to `out`, with as many entries (in order) as fit in `max_len`
    /// bytes; if some are left out the truncated flag is set. `None` (nothing written) if not
    /// even the fixed part fits.
    pub fn encode(&self, out: &mut Vec<u8>, max_len: usize) -> Option<()> {
        if max_len < Self::FIXED_LEN {
            return None;
        }
        let mut room = max_len - Self::FIXED_LEN;
        let mut n = 0usize;
        for e in self.entries.iter().take(MAX_REPLY_ENTRIES) {
            let l = e.encoded_len();
            if l > room {
                break;
            }
            room -= l;
            n += 1;
        }
        let truncated = self.truncated || n < self.entries.len();
        header(out, KIND_REPLY, self.seq);
        out.extend_from_slice(&self.sent_ns.to_be_bytes());
        out.push(self.failure.map_or(0, Reason::code));
        out.push(if truncated { FLAG_TRUNCATED } else { 0 });
        out.extend(self.instructions.iter().map(|i| i.0));
        out.extend_from_slice(&self.source_ts.to_be_bytes());
        out.push(n as u8);
        for e in &self.entries[..n] {
            e.encode(out);
        }
        Some(())
    }

    /// Decodes a reply.
    pub fn decode(b: &[u8]) -> Result<Self, PayloadError> {
        let (kind, seq, mut r) = read_header(b)?;
        if kind != KIND_REPLY {
            return Err(PayloadError::Kind(kind));
        }
        let sent_ns = r.be(8)?;
        let failure = match r.u8()? {
            0 => None,
            c => Some(Reason::from_code(c).ok_or(PayloadError::Invalid("status"))?),
        };
        let flags = r.u8()?;
        if flags & !FLAG_TRUNCATED != 0 {
            return Err(PayloadError::Invalid("flags"));
        }
        let inst = r.take(4)?;
        let instructions = [inst[0], inst[1], inst[2], inst[3]].map(Instruction);
        let source_ts = r.be(8)?;
        let n = usize::from(r.u8()?);
        let mut entries = Vec::with_capacity(n);
        for _ in 0..n {
            entries.push(HopValues::decode(&mut r)?);
        }
        r.finish()?;
        Ok(Reply {
            seq,
            sent_ns,
            failure,
            truncated: flags & FLAG_TRUNCATED != 0,
            instructions,
            source_ts,
            entries,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(i: u8) -> HopValues {
        HopValues {
            index: i,
            flags: entry_flags::INGRESS | entry_flags::ENCRYPTED,
            hop: i / 2,
            ia: Some(IsdAsn::from_u64(0x0001_ff00_0000_0110 + u64::from(i))),
            metadata: Metadata {
                node_id: Some(u32::from(i) + 1),
                node_count: None,
                ingress_if: Some(41),
                egress_if: None,
                slots: [
                    Some(SlotValue {
                        len: 6,
                        value: 0xabcd_0000_0001,
                    }),
                    Some(SlotValue { len: 4, value: 7 }),
                    None,
                    Some(SlotValue { len: 4, value: 99 }),
                ],
            },
        }
    }

    fn reply(n: u8) -> Reply {
        Reply {
            seq: 9,
            sent_ns: 1_763_800_000_000_000_000,
            failure: None,
            truncated: false,
            instructions: [0x82, 0x4f, 0x4d, 0x4a].map(Instruction),
            source_ts: 0x1234_5678_9abc,
            entries: (0..n).map(entry).collect(),
        }
    }

    #[test]
    fn ping_round_trips() {
        let p = Ping {
            seq: 3,
            sent_ns: 5,
            hop_ias: vec![
                "1-ff00:0:111".parse().unwrap(),
                "2-ff00:0:211".parse().unwrap(),
            ],
        };
        let mut b = Vec::new();
        p.encode(&mut b).unwrap();
        assert_eq!(b.len(), p.encoded_len());
        assert_eq!(Ping::decode(&b), Ok(p));
        for cut in 0..b.len() {
            assert!(Ping::decode(&b[..cut]).is_err());
        }
        b.push(0);
        assert_eq!(Ping::decode(&b), Err(PayloadError::Trailing(1)));
    }

    #[test]
    fn reply_round_trips_and_truncates_to_fit() {
        let r = reply(5);
        let mut b = Vec::new();
        r.encode(&mut b, 1500).unwrap();
        assert_eq!(Reply::decode(&b), Ok(r.clone()));
        assert_eq!(Ping::decode(&b), Err(PayloadError::Kind(KIND_REPLY)));
        let mut small = Vec::new();
        let room = Reply::FIXED_LEN + 2 * entry(0).encoded_len();
        r.encode(&mut small, room).unwrap();
        let d = Reply::decode(&small).unwrap();
        assert!(d.truncated);
        assert_eq!(d.entries, r.entries[..2]);
        assert!(r.encode(&mut Vec::new(), Reply::FIXED_LEN - 1).is_none());
        let failed = Reply {
            failure: Some(Reason::BadMac),
            entries: vec![],
            ..r
        };
        let mut b = Vec::new();
        failed.encode(&mut b, 1500).unwrap();
        assert_eq!(Reply::decode(&b), Ok(failed));
    }

    #[test]
    fn foreign_bytes_are_refused() {
        assert_eq!(Reply::decode(b"GET / HTTP/1.1"), Err(PayloadError::Foreign));
        assert_eq!(Reply::decode(&[]), Err(PayloadError::Truncated));
    }
}
