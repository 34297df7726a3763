//! How the I/O layer hands packets to a burst: [`BurstPacket`] (one packet of a burst),
//! [`PacketSlot`] (a plain byte-slice implementation) and the burst size [`MAX_BURST`].
//!
//! A leaf: it depends only on [`crate::outcome`], so the processor and the ID-INT stage can
//! both use it without depending on each other.

use crate::outcome::{Disposition, Ingress};

/// Largest batch handled in one pass of
/// [`Processor::process_burst`](crate::Processor::process_burst) (longer slices are
/// processed in chunks of this size).
pub const MAX_BURST: usize = 64;

/// One packet of a burst, as the I/O layer presents it.
pub trait BurstPacket {
    /// The writable buffer holding the SCION packet from its first byte; it may extend past the
    /// packet (room for an SCMP reply that quotes it).
    fn buffer(&mut self) -> &mut [u8];
    /// Length of the SCION packet in the buffer.
    fn len(&self) -> usize;
    /// Whether the packet is empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Where the packet arrived.
    fn ingress(&self) -> Ingress;
    /// Where the decision is written (written in place: a large value moved through the
    /// stack costs a store-forwarding stall per packet).
    fn disposition_mut(&mut self) -> &mut Option<Disposition>;
    /// Records the decision of a forwarded packet. By default into
    /// [`Self::disposition_mut`]; an implementation may keep the common
    /// [`Disposition::Forward`] in a compact field of its own instead, so that the value is
    /// never copied whole (a wide load of a value just built by narrow stores cannot be
    /// forwarded from them: a stall of a dozen cycles per packet).
    #[inline(always)]
    fn set_disposition(&mut self, d: Disposition) {
        *self.disposition_mut() = Some(d);
    }
}

/// A [`BurstPacket`] over a plain byte slice.
#[derive(Debug)]
pub struct PacketSlot<'a> {
    /// Buffer (packet first, then free room).
    pub buf: &'a mut [u8],
    /// Packet length.
    pub len: usize,
    /// Arrival.
    pub ingress: Ingress,
    /// Decision, once processed.
    pub disposition: Option<Disposition>,
}

impl BurstPacket for PacketSlot<'_> {
    fn buffer(&mut self) -> &mut [u8] {
        self.buf
    }
    fn len(&self) -> usize {
        self.len
    }
    fn ingress(&self) -> Ingress {
        self.ingress
    }
    fn disposition_mut(&mut self) -> &mut Option<Disposition> {
        &mut self.disposition
    }
}
