//! The worker's per-burst glue around scion-dp, over any frame buffer: received frames are
//! classified into [`Slot`]s ([`classify_burst`]), scion-dp processes the slots
//! (`process_burst_with`, the caller's), and [`route_burst`] routes each one, rewrites its
//! underlay in place and queues it on its egress port's batch. The DPDK worker runs this over
//! mbufs ([`FrameBuf`] for its mbuf type), the benchmarks over [`MemFrame`]s in memory.

use scion_dp::{BurstPacket, Disposition, Ingress};

use crate::classify::{self, Classified, Frame};
use crate::counters::IoCounters;
use crate::forward::{self, Ask, EgressMacs, PacketMeta};
use crate::tables::{PortView, Tables};
use crate::underlay;

/// A received frame's buffer, as the glue changes it (a DPDK mbuf in the router).
pub trait FrameBuf: Sized {
    /// The buffer with its room from the SCION packet located once (what scion-dp writes).
    type Room: RoomBuf<Frame = Self>;
    /// Length of the frame (all segments).
    fn pkt_len(&self) -> usize;
    /// Whether the frame spans more than one segment (not handled).
    fn is_chained(&self) -> bool;
    /// The frame's bytes.
    fn data(&self) -> &[u8];
    /// The frame's bytes, writable.
    fn data_mut(&mut self) -> &mut [u8];
    /// Removes `n` bytes from the start (`false` if the frame is shorter).
    fn adj(&mut self, n: usize) -> bool;
    /// Adds `n` bytes of head room in front (`false` if there is not as much room).
    fn prepend(&mut self, n: usize) -> bool;
    /// Sets the frame's length (`false` if the buffer is too short).
    fn set_len(&mut self, len: usize) -> bool;
    /// Sets the frame's length and returns its bytes, writable (`None` if the buffer is too
    /// short).
    #[inline]
    fn resize(&mut self, len: usize) -> Option<&mut [u8]> {
        if self.set_len(len) {
            Some(self.data_mut())
        } else {
            None
        }
    }
    /// The buffer with its room from `offset` into the frame; the frame back if it has none.
    fn with_room(self, offset: usize) -> Result<Self::Room, Self>;
}

/// A frame with its room from the SCION packet located (see [`FrameBuf::with_room`]).
pub trait RoomBuf {
    /// The frame type it came from.
    type Frame;
    /// The room: the SCION packet, then free room up to the end of the buffer.
    fn room(&mut self) -> &mut [u8];
    /// The frame again.
    fn into_frame(self) -> Self::Frame;
}

/// The frames queued for one port's next tx burst.
pub trait TxBatch<F> {
    /// Queues `f`; the frame back if the batch is full.
    fn push(&mut self, f: F) -> Result<(), F>;
}

/// One packet of a burst: the frame with its room, plus what the underlay said and scion-dp
/// decided.
#[derive(Debug)]
pub struct Slot<R> {
    /// The frame (`None` once sent, dropped or handed on).
    pub m: Option<R>,
    /// Its metadata.
    pub meta: PacketMeta,
}

impl<R> Default for Slot<R> {
    fn default() -> Self {
        Slot {
            m: None,
            meta: PacketMeta::default(),
        }
    }
}

impl<R: RoomBuf> BurstPacket for Slot<R> {
    #[inline]
    fn buffer(&mut self) -> &mut [u8] {
        match self.m.as_mut() {
            Some(m) => m.room(),
            None => &mut [],
        }
    }
    #[inline]
    fn len(&self) -> usize {
        self.meta.len
    }
    #[inline]
    fn ingress(&self) -> Ingress {
        self.meta.ingress()
    }
    #[inline]
    fn disposition_mut(&mut self) -> &mut Option<Disposition> {
        self.meta.disposition_mut()
    }
    #[inline(always)]
    fn set_disposition(&mut self, d: Disposition) {
        self.meta.set_disposition(d);
    }
}

/// What the caller does beside routing: the cases that need its I/O or state.
pub trait Aside<R, Q> {
    /// Takes a packet scion-dp found to be BFD out of its slot (for the control side).
    fn bfd(&mut self, s: &mut Slot<R>, io: &mut IoCounters);
    /// Whether an SCMP error reply may be sent now (the rate limit).
    fn allow_reply(&mut self) -> bool;
    /// Asks the next hop `ask` for its MAC (ARP or NDP request queued on `out`).
    fn ask(&mut self, tables: &Tables, ask: Ask, out: &mut [Q], io: &mut IoCounters);
}

/// Moves the received `frames` into `slots` (underlay classified by [`classify::classify`]);
/// ARP and NDP answers are queued on `port`, frames that are not SCION for us dropped
/// (counted). Returns the number of slots filled.
#[inline]
pub fn classify_burst<F: FrameBuf, Q: TxBatch<F>>(
    tables: &Tables,
    port: usize,
    now_s: u32,
    frames: impl Iterator<Item = F>,
    slots: &mut [Slot<F::Room>],
    out: &mut [Q],
    io: &mut IoCounters,
) -> usize {
    // The port's VLAN and its underlay addresses, once per burst.
    let view = tables.port(port);
    let total = slots.len();
    let mut rx = Rx {
        free: slots.iter_mut(),
        frames: 0,
        bytes: 0,
    };
    match (view.vlan, view.v4) {
        // The common port (untagged, an IPv4 address) has a loop of its own, without
        // branches on the port's configuration per frame.
        (None, Some(k)) => {
            for m in frames {
                classify_frame(tables, &view, (None, Some(&k)), now_s, m, &mut rx, out, io);
            }
        }
        (vlan, v4) => {
            for m in frames {
                classify_frame(
                    tables,
                    &view,
                    (vlan, v4.as_ref()),
                    now_s,
                    m,
                    &mut rx,
                    out,
                    io,
                );
            }
        }
    }
    io.rx_frames += u64::from(rx.frames);
    io.rx_bytes += rx.bytes;
    total - rx.free.len()
}

/// The slots of a burst being filled by [`classify_burst`], and what it counted.
struct Rx<'s, R> {
    /// The slots not filled yet.
    free: std::slice::IterMut<'s, Slot<R>>,
    /// Frames and bytes received (added to the counters once per burst).
    frames: u32,
    bytes: u64,
}

/// Classifies one frame of [`classify_burst`], received on the port `view` whose VLAN and
/// IPv4 fast-path key are `(vlan, v4)`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn classify_frame<F: FrameBuf, Q: TxBatch<F>>(
    tables: &Tables,
    view: &PortView<'_>,
    (vlan, v4): (Option<u16>, Option<&underlay::V4Key>),
    now_s: u32,
    mut m: F,
    rx: &mut Rx<'_, F::Room>,
    out: &mut [Q],
    io: &mut IoCounters,
) {
    rx.frames += 1;
    rx.bytes += m.pkt_len() as u64;
    if m.is_chained() {
        io.chained += 1;
        return;
    }
    if let Some(vid) = vlan
        && !(classify::untag(m.data_mut(), vid) && m.adj(underlay::VLAN_TAG_LEN))
    {
        io.wrong_vlan += 1;
        return;
    }
    // The common case first, its answer written straight into the slot: a `Frame`
    // built by narrow stores and read back whole stalls on store forwarding.
    if let Some(k) = v4
        && let Some((offset, len)) = k.payload(m.data())
    {
        let ingress = k.what;
        fill(
            &mut rx.free,
            m,
            &Classified {
                offset,
                len,
                ingress,
            },
            io,
        );
        return;
    }
    classify_other(tables, view, now_s, m, &mut rx.free, out, io);
}

/// [`classify_burst`] for every frame but the common case (kept out of the packet loop).
#[inline(never)]
fn classify_other<F: FrameBuf, Q: TxBatch<F>>(
    tables: &Tables,
    view: &PortView<'_>,
    now_s: u32,
    mut m: F,
    free: &mut std::slice::IterMut<'_, Slot<F::Room>>,
    out: &mut [Q],
    io: &mut IoCounters,
) {
    match classify::classify(tables, view, now_s, m.data_mut(), io) {
        Frame::Scion(c) => fill(free, m, &c, io),
        Frame::Answer => queue(out, view.index, m, io),
        Frame::Drop => {}
    }
}

/// Puts the SCION frame `m` (classified `c`) into the next of the `free` slots.
#[inline(always)]
fn fill<F: FrameBuf>(
    free: &mut std::slice::IterMut<'_, Slot<F::Room>>,
    m: F,
    c: &Classified,
    io: &mut IoCounters,
) {
    let Ok(m) = m.with_room(c.offset) else {
        io.chained += 1;
        return;
    };
    let Some(s) = free.next() else {
        // More frames than slots: the caller's burst is larger than its slots.
        io.unroutable += 1;
        return;
    };
    s.meta.receive(c);
    if let Some(old) = s.m.replace(m) {
        release(old);
    }
}

/// Drops a frame a slot still held (not on the packet path: routing empties the slots).
#[cold]
#[inline(never)]
fn release<R>(m: R) {
    drop(m);
}

/// Queues `m` for sending on `port` (dropped and counted if the batch is full).
#[inline]
pub fn queue<F, Q: TxBatch<F>>(out: &mut [Q], port: usize, m: F, io: &mut IoCounters) {
    match out.get_mut(port) {
        Some(b) => {
            if b.push(m).is_err() {
                io.tx_full += 1;
            }
        }
        None => io.unroutable += 1,
    }
}

/// Routes the processed `slots` of a burst received on `port`: BFD packets and rate-limited
/// SCMP replies go to `aside`, every other packet through [`route`].
#[inline]
#[allow(clippy::too_many_arguments)]
pub fn route_burst<F: FrameBuf, Q: TxBatch<F>, A: Aside<F::Room, Q>>(
    tables: &Tables,
    port: usize,
    now_s: u32,
    slots: &mut [Slot<F::Room>],
    out: &mut [Q],
    io: &mut IoCounters,
    aside: &mut A,
) {
    // Neighbour tables change between bursts (ARP/NDP in `classify`), not within.
    let mut macs = EgressMacs::default();
    for s in slots.iter_mut() {
        // The common case in the loop, any other decision out of it.
        if s.meta.disposition_mut().is_none() && route_v4(tables, now_s, s, out, io, &mut macs) {
            continue;
        }
        route_aside(tables, port, now_s, s, (out, io, &mut macs), aside);
    }
}

/// [`route_burst`] for a packet other than the common case: BFD and rate-limited SCMP
/// replies to `aside`, the rest through [`route`].
#[inline(never)]
fn route_aside<F: FrameBuf, Q: TxBatch<F>, A: Aside<F::Room, Q>>(
    tables: &Tables,
    port: usize,
    now_s: u32,
    s: &mut Slot<F::Room>,
    (out, io, macs): (&mut [Q], &mut IoCounters, &mut EgressMacs),
    aside: &mut A,
) {
    match s.meta.disposition_mut() {
        Some(Disposition::Bfd) => {
            aside.bfd(s, io);
            return;
        }
        Some(Disposition::Reply { .. }) if !aside.allow_reply() => {
            io.scmp_rate_limited += 1;
            s.m = None;
            return;
        }
        _ => {}
    }
    let ask = |a, out: &mut [Q], io: &mut IoCounters| aside.ask(tables, a, out, io);
    route(tables, port, now_s, s, (out, io, macs), ask);
}

/// Routes a processed packet ([`forward::route`]): resizes its frame for the new underlay
/// headers, has them written and queues it on its egress port, or drops it. A next hop to
/// ask for its MAC goes to `ask` first.
#[inline]
pub fn route<F: FrameBuf, Q: TxBatch<F>>(
    tables: &Tables,
    in_port: usize,
    now_s: u32,
    s: &mut Slot<F::Room>,
    (out, io, macs): (&mut [Q], &mut IoCounters, &mut EgressMacs),
    ask: impl FnMut(Ask, &mut [Q], &mut IoCounters),
) {
    if route_v4(tables, now_s, s, out, io, macs) {
        return;
    }
    let Some(m) = s.m.take() else {
        return;
    };
    route_other(
        tables,
        in_port,
        now_s,
        &s.meta,
        m.into_frame(),
        (out, io, macs),
        ask,
    );
}

/// The common case of [`route`]: a packet forwarded on an IPv4 link
/// ([`forward::forward_v4`]) gets the link's headers where the old ones were and is queued
/// (or dropped and counted if its frame cannot hold them). `false`, nothing done, for any
/// other packet.
#[inline(always)]
fn route_v4<F: FrameBuf, Q: TxBatch<F>>(
    tables: &Tables,
    now_s: u32,
    s: &mut Slot<F::Room>,
    out: &mut [Q],
    io: &mut IoCounters,
    macs: &mut EgressMacs,
) -> bool {
    if s.meta.offset != underlay::V4_HDR_LEN || s.m.is_none() {
        return false;
    }
    let Some((port, h)) = forward::forward_v4(tables, &s.meta, now_s, macs) else {
        return false;
    };
    let Some(m) = s.m.take() else {
        return false;
    };
    let mut m = m.into_frame();
    let len = s.meta.len;
    if m.resize(underlay::V4_HDR_LEN + len)
        .is_some_and(|frame| h.write_to(frame, len))
    {
        queue(out, port, m, io);
    } else {
        io.unroutable += 1;
    }
    true
}

/// [`route`] for every packet but the common case (kept out of the packet loop).
#[inline(never)]
fn route_other<F: FrameBuf, Q: TxBatch<F>>(
    tables: &Tables,
    in_port: usize,
    now_s: u32,
    meta: &PacketMeta,
    mut m: F,
    (out, io, macs): (&mut [Q], &mut IoCounters, &mut EgressMacs),
    mut ask: impl FnMut(Ask, &mut [Q], &mut IoCounters),
) {
    let offset = meta.offset;
    let mut arrived = None;
    let r = forward::route(
        tables,
        in_port,
        now_s,
        meta,
        m.data(),
        macs,
        &mut arrived,
        io,
    );
    if let Some(a) = r.ask {
        ask(a, out, io);
    }
    let Some(e) = r.send else {
        return;
    };
    let hl = e.header_len;
    let ok = m.set_len(offset + e.len)
        && if hl < offset {
            m.adj(offset - hl)
        } else if hl > offset {
            m.prepend(hl - offset)
        } else {
            true
        };
    if ok && e.write(m.data_mut()) {
        queue(out, e.port, m, io);
    } else {
        io.unroutable += 1;
    }
}

/// Head room a [`MemFrame`] keeps in front of its frame (as a DPDK mbuf's).
pub const MEM_HEADROOM: usize = 128;
/// Bytes of a [`MemFrame`]'s buffer (as a DPDK mbuf's data room).
pub const MEM_BUF_LEN: usize = 2048 + MEM_HEADROOM;

/// A frame in a plain heap buffer with head room, as an mbuf holds it (for benchmarks and
/// tests of the burst path without DPDK).
#[derive(Debug, Clone)]
pub struct MemFrame {
    buf: Box<[u8]>,
    start: usize,
    len: usize,
}

impl MemFrame {
    /// A frame holding `bytes` after [`MEM_HEADROOM`] bytes of head room; `None` if it does
    /// not fit [`MEM_BUF_LEN`].
    pub fn new(bytes: &[u8]) -> Option<Self> {
        let mut f = MemFrame {
            buf: vec![0; MEM_BUF_LEN].into_boxed_slice(),
            start: MEM_HEADROOM,
            len: 0,
        };
        f.reset(bytes).then_some(f)
    }

    /// Holds `bytes` again from the original head room (as a fresh receive would).
    #[inline]
    pub fn reset(&mut self, bytes: &[u8]) -> bool {
        let Some(dst) = self.buf.get_mut(MEM_HEADROOM..MEM_HEADROOM + bytes.len()) else {
            return false;
        };
        dst.copy_from_slice(bytes);
        self.start = MEM_HEADROOM;
        self.len = bytes.len();
        true
    }
}

impl FrameBuf for MemFrame {
    type Room = MemRoom;
    #[inline]
    fn pkt_len(&self) -> usize {
        self.len
    }
    #[inline]
    fn is_chained(&self) -> bool {
        false
    }
    #[inline]
    fn data(&self) -> &[u8] {
        &self.buf[self.start..self.start + self.len]
    }
    #[inline]
    fn data_mut(&mut self) -> &mut [u8] {
        &mut self.buf[self.start..self.start + self.len]
    }
    #[inline]
    fn adj(&mut self, n: usize) -> bool {
        if n > self.len {
            return false;
        }
        self.start += n;
        self.len -= n;
        true
    }
    #[inline]
    fn prepend(&mut self, n: usize) -> bool {
        if n > self.start {
            return false;
        }
        self.start -= n;
        self.len += n;
        true
    }
    #[inline]
    fn set_len(&mut self, len: usize) -> bool {
        if self.start + len > self.buf.len() {
            return false;
        }
        self.len = len;
        true
    }
    #[inline]
    fn resize(&mut self, len: usize) -> Option<&mut [u8]> {
        let frame = self.buf.get_mut(self.start..)?.get_mut(..len)?;
        self.len = len;
        Some(frame)
    }
    #[inline]
    fn with_room(self, offset: usize) -> Result<MemRoom, Self> {
        let at = self.start + offset;
        if at > self.buf.len() {
            return Err(self);
        }
        Ok(MemRoom { f: self, at })
    }
}

/// A [`MemFrame`] with its room from `at`.
#[derive(Debug)]
pub struct MemRoom {
    f: MemFrame,
    at: usize,
}

impl RoomBuf for MemRoom {
    type Frame = MemFrame;
    #[inline]
    fn room(&mut self) -> &mut [u8] {
        &mut self.f.buf[self.at..]
    }
    #[inline]
    fn into_frame(self) -> MemFrame {
        self.f
    }
}

/// A tx batch of at most `cap` frames in a vector.
#[derive(Debug)]
pub struct MemBatch {
    /// The frames queued.
    pub frames: Vec<MemFrame>,
    /// Most frames queued at once.
    pub cap: usize,
}

impl TxBatch<MemFrame> for MemBatch {
    #[inline]
    fn push(&mut self, f: MemFrame) -> Result<(), MemFrame> {
        let n = self.frames.len();
        if n >= self.cap || n == self.frames.capacity() {
            return self.push_growing(f);
        }
        self.frames.push(f);
        Ok(())
    }
}

impl MemBatch {
    /// [`TxBatch::push`] into a full vector (or a full batch): kept out of the packet loop.
    #[cold]
    #[inline(never)]
    fn push_growing(&mut self, f: MemFrame) -> Result<(), MemFrame> {
        if self.frames.len() >= self.cap {
            return Err(f);
        }
        self.frames.push(f);
        Ok(())
    }
}

#[cfg(test)]
mod tests;
