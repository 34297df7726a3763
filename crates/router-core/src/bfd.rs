//! BFD (RFC 5880, asynchronous mode) as the SCION router runs it (`doc/protocols/bfd.rst` of
//! scionproto): the 24-byte control packet, a session state machine driven by a clock the
//! caller reads, the packets carried directly in SCION (NextHdr 203; a OneHop path on an
//! external link, the Empty path to a sibling router), and the small tag the worker and the
//! control thread put in front of a SCION packet they hand each other. Sans-IO: no clock, no
//! sockets, no allocation.

use core::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use core::time::Duration;

use idint_wire::path::scion::MAC_LEN;
use idint_wire::path::{HopField, InfoField, OneHopPath};
use idint_wire::scion::{FlowId, NextHdr, PathType, ScionHeader, ScionRepr};
use idint_wire::{HostAddr, IsdAsn};
use scion_dp::hop_mac::HopMac;

/// Length of a BFD control packet without authentication.
pub const CONTROL_LEN: usize = 24;
/// The BFD protocol version (RFC 5880).
pub const VERSION: u8 = 1;
/// scionproto's default detection multiplier.
pub const DEFAULT_DETECT_MULT: u8 = 3;
/// scionproto's default desired minimum transmit interval.
pub const DEFAULT_DESIRED_MIN_TX: Duration = Duration::from_millis(200);
/// scionproto's default required minimum receive interval.
pub const DEFAULT_REQUIRED_MIN_RX: Duration = Duration::from_millis(200);
/// The transmit interval floor while a session is not Up (RFC 5880 §6.8.3: at least 1 s).
pub const SLOW_TX_US: u32 = 1_000_000;
/// Traffic class of the SCION header of BFD packets (scionproto's `0xb8`).
pub const TRAFFIC_CLASS: u8 = 0xb8;
/// Flow ID of the SCION header of BFD packets (scionproto's `0xdead`).
pub const FLOW_ID: u32 = 0xdead;
/// Hop-field expiry of the OneHop path (scionproto's `hopFieldDefaultExpTime`, ~6 h).
pub const ONEHOP_EXP_TIME: u8 = 63;
/// Seconds the OneHop info-field timestamp is set back against clock drift (as scionproto).
pub const ONEHOP_CLOCK_SLACK_S: u32 = 10;
/// HBH and E2E extension header protocol numbers.
const EXTENSIONS: [u8; 2] = [200, 201];

/// BFD session state (`Sta`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum State {
    /// AdminDown (0).
    AdminDown = 0,
    /// Down (1).
    Down = 1,
    /// Init (2).
    Init = 2,
    /// Up (3).
    Up = 3,
}

impl State {
    /// From the two `Sta` bits.
    pub const fn from_bits(b: u8) -> State {
        match b & 3 {
            0 => State::AdminDown,
            1 => State::Down,
            2 => State::Init,
            _ => State::Up,
        }
    }

    /// Lower-case name (metrics, health).
    pub const fn name(self) -> &'static str {
        match self {
            State::AdminDown => "admin_down",
            State::Down => "down",
            State::Init => "init",
            State::Up => "up",
        }
    }
}

/// Diagnostic codes this implementation sets (RFC 5880 §4.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Diag {
    /// No diagnostic.
    None = 0,
    /// Control detection time expired.
    DetectExpired = 1,
    /// Neighbor signaled session down.
    NeighborDown = 3,
}

/// A BFD control packet (no authentication section).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ControlPacket {
    /// Diagnostic (5 bits).
    pub diag: u8,
    /// Sender's session state.
    pub state: State,
    /// Poll (P).
    pub poll: bool,
    /// Final (F).
    pub final_: bool,
    /// Control plane independent (C).
    pub cpi: bool,
    /// Demand (D).
    pub demand: bool,
    /// Detection time multiplier.
    pub detect_mult: u8,
    /// My Discriminator.
    pub my_disc: u32,
    /// Your Discriminator.
    pub your_disc: u32,
    /// Desired Min TX Interval, µs.
    pub desired_min_tx_us: u32,
    /// Required Min RX Interval, µs.
    pub required_min_rx_us: u32,
    /// Required Min Echo RX Interval, µs (always 0 here: no echo function).
    pub required_min_echo_rx_us: u32,
}

/// Why a received control packet is discarded (RFC 5880 §6.8.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Discard {
    /// Shorter than the length field or than 24 bytes.
    #[error("truncated")]
    Truncated,
    /// Version other than 1.
    #[error("version")]
    Version,
    /// Length field below 24 (or 26 with authentication).
    #[error("length")]
    Length,
    /// Detect Mult zero.
    #[error("detect multiplier zero")]
    DetectMult,
    /// Multipoint bit set.
    #[error("multipoint")]
    Multipoint,
    /// My Discriminator zero.
    #[error("my discriminator zero")]
    MyDisc,
    /// Your Discriminator unknown, or zero in a state other than Down/AdminDown.
    #[error("your discriminator")]
    YourDisc,
    /// Authentication present (no authentication is configured).
    #[error("authentication")]
    Auth,
}

impl ControlPacket {
    /// Decodes and validates the checks of RFC 5880 §6.8.6 that need no session.
    pub fn parse(b: &[u8]) -> Result<Self, Discard> {
        if b.len() < CONTROL_LEN {
            return Err(Discard::Truncated);
        }
        if b[0] >> 5 != VERSION {
            return Err(Discard::Version);
        }
        let flags = b[1];
        let auth = flags & 0x04 != 0;
        let len = usize::from(b[3]);
        if len < CONTROL_LEN || (auth && len < CONTROL_LEN + 2) {
            return Err(Discard::Length);
        }
        if len > b.len() {
            return Err(Discard::Truncated);
        }
        if b[2] == 0 {
            return Err(Discard::DetectMult);
        }
        if flags & 0x01 != 0 {
            return Err(Discard::Multipoint);
        }
        if auth {
            return Err(Discard::Auth);
        }
        let u32_at = |i: usize| u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let p = ControlPacket {
            diag: b[0] & 0x1f,
            state: State::from_bits(flags >> 6),
            poll: flags & 0x20 != 0,
            final_: flags & 0x10 != 0,
            cpi: flags & 0x08 != 0,
            demand: flags & 0x02 != 0,
            detect_mult: b[2],
            my_disc: u32_at(4),
            your_disc: u32_at(8),
            desired_min_tx_us: u32_at(12),
            required_min_rx_us: u32_at(16),
            required_min_echo_rx_us: u32_at(20),
        };
        if p.my_disc == 0 {
            return Err(Discard::MyDisc);
        }
        if p.your_disc == 0 && !matches!(p.state, State::Down | State::AdminDown) {
            return Err(Discard::YourDisc);
        }
        Ok(p)
    }

    /// Encodes the 24 bytes.
    pub fn write(&self, b: &mut [u8; CONTROL_LEN]) {
        b[0] = (VERSION << 5) | (self.diag & 0x1f);
        b[1] = ((self.state as u8) << 6)
            | (u8::from(self.poll) << 5)
            | (u8::from(self.final_) << 4)
            | (u8::from(self.cpi) << 3)
            | (u8::from(self.demand) << 1);
        b[2] = self.detect_mult;
        b[3] = CONTROL_LEN as u8;
        b[4..8].copy_from_slice(&self.my_disc.to_be_bytes());
        b[8..12].copy_from_slice(&self.your_disc.to_be_bytes());
        b[12..16].copy_from_slice(&self.desired_min_tx_us.to_be_bytes());
        b[16..20].copy_from_slice(&self.required_min_rx_us.to_be_bytes());
        b[20..24].copy_from_slice(&self.required_min_echo_rx_us.to_be_bytes());
    }
}

/// A session's configured timers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Params {
    /// Detection time multiplier sent to the peer.
    pub detect_mult: u8,
    /// Desired Min TX Interval while Up, µs.
    pub desired_min_tx_us: u32,
    /// Required Min RX Interval, µs.
    pub required_min_rx_us: u32,
}

impl Default for Params {
    /// scionproto's defaults: 3 x 200 ms.
    fn default() -> Self {
        Params {
            detect_mult: DEFAULT_DETECT_MULT,
            desired_min_tx_us: duration_us(DEFAULT_DESIRED_MIN_TX),
            required_min_rx_us: duration_us(DEFAULT_REQUIRED_MIN_RX),
        }
    }
}

/// A duration in whole µs, saturating at `u32::MAX` and at least 1.
pub fn duration_us(d: Duration) -> u32 {
    u32::try_from(d.as_micros()).unwrap_or(u32::MAX).max(1)
}

/// A session's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    /// Control packets sent.
    pub sent: u64,
    /// Control packets accepted.
    pub received: u64,
    /// Control packets discarded by the session (discriminator).
    pub discarded: u64,
    /// State changes.
    pub state_changes: u64,
}

/// One BFD session in asynchronous mode (RFC 5880 §6.8), active role, no echo, no demand, no
/// authentication. Time is the caller's, in ns on any monotonic scale.
#[derive(Debug, Clone)]
pub struct Session {
    params: Params,
    local_disc: u32,
    remote_disc: u32,
    state: State,
    remote_state: State,
    diag: Diag,
    remote_min_rx_us: u32,
    remote_desired_tx_us: u32,
    remote_detect_mult: u8,
    /// A Poll Sequence is running (P set until a packet with F arrives).
    polling: bool,
    /// A packet with F is owed to the peer (it polled).
    final_due: bool,
    next_tx_ns: u64,
    last_rx_ns: u64,
    rng: u64,
    counters: Counters,
}

impl Session {
    /// A session in state Down with local discriminator `local_disc` (non-zero, random per
    /// session as `bfd.rst` asks) and a jitter seed; its first packet is due at `now_ns`.
    pub fn new(local_disc: u32, params: Params, seed: u64, now_ns: u64) -> Self {
        Session {
            params,
            local_disc: local_disc.max(1),
            remote_disc: 0,
            state: State::Down,
            remote_state: State::Down,
            diag: Diag::None,
            // RFC 5880 §6.8.1: initialised to 1.
            remote_min_rx_us: 1,
            remote_desired_tx_us: SLOW_TX_US,
            remote_detect_mult: DEFAULT_DETECT_MULT,
            polling: false,
            final_due: false,
            next_tx_ns: now_ns,
            last_rx_ns: now_ns,
            rng: seed | 1,
            counters: Counters::default(),
        }
    }

    /// The session state.
    pub fn state(&self) -> State {
        self.state
    }

    /// The last diagnostic.
    pub fn diag(&self) -> Diag {
        self.diag
    }

    /// The local discriminator.
    pub fn local_disc(&self) -> u32 {
        self.local_disc
    }

    /// The counters.
    pub fn counters(&self) -> Counters {
        self.counters
    }

    /// The configured timers.
    pub fn params(&self) -> Params {
        self.params
    }

    /// The Desired Min TX Interval advertised now: the configured one while Up, else at least
    /// one second (§6.8.3).
    fn desired_tx_us(&self) -> u32 {
        if self.state == State::Up {
            self.params.desired_min_tx_us
        } else {
            self.params.desired_min_tx_us.max(SLOW_TX_US)
        }
    }

    /// The negotiated transmit interval (§6.8.7): the larger of ours and the peer's
    /// Required Min RX.
    pub fn tx_interval(&self) -> Duration {
        let us = self.desired_tx_us().max(self.remote_min_rx_us);
        Duration::from_micros(u64::from(us))
    }

    /// The detection time (§6.8.4, asynchronous mode): the peer's multiplier times the larger
    /// of our Required Min RX and its Desired Min TX.
    pub fn detection_time(&self) -> Duration {
        let us = self
            .params
            .required_min_rx_us
            .max(self.remote_desired_tx_us);
        Duration::from_micros(u64::from(us) * u64::from(self.remote_detect_mult))
    }

    fn set_state(&mut self, s: State, diag: Diag, now_ns: u64) {
        if s == self.state {
            return;
        }
        self.state = s;
        self.diag = diag;
        self.counters.state_changes += 1;
        // Tell the peer at once (its state machine waits for ours).
        self.next_tx_ns = now_ns;
        if s == State::Up {
            // The transmit interval drops from the slow rate to the configured one: a Poll
            // Sequence announces it (§6.8.3).
            self.polling = true;
        } else {
            self.polling = false;
        }
        if s == State::Down {
            self.remote_disc = 0;
        }
    }

    /// Takes a received (parsed) control packet at `now_ns` (§6.8.6); returns the new state if
    /// it changed.
    pub fn receive(&mut self, p: &ControlPacket, now_ns: u64) -> Result<Option<State>, Discard> {
        if p.your_disc != 0 && p.your_disc != self.local_disc {
            self.counters.discarded += 1;
            return Err(Discard::YourDisc);
        }
        self.counters.received += 1;
        self.remote_disc = p.my_disc;
        self.remote_state = p.state;
        self.remote_min_rx_us = p.required_min_rx_us;
        self.remote_desired_tx_us = p.desired_min_tx_us;
        self.remote_detect_mult = p.detect_mult;
        self.last_rx_ns = now_ns;
        if p.final_ {
            self.polling = false;
        }
        if p.poll {
            self.final_due = true;
        }
        let before = self.state;
        if p.state == State::AdminDown {
            if self.state != State::Down {
                self.set_state(State::Down, Diag::NeighborDown, now_ns);
            }
        } else {
            match (self.state, p.state) {
                (State::Down, State::Down) => self.set_state(State::Init, Diag::None, now_ns),
                (State::Down, State::Init) | (State::Init, State::Init | State::Up) => {
                    self.set_state(State::Up, Diag::None, now_ns)
                }
                (State::Up, State::Down) => self.set_state(State::Down, Diag::NeighborDown, now_ns),
                _ => {}
            }
        }
        Ok((self.state != before).then_some(self.state))
    }

    /// Checks the detection timer at `now_ns`: an Init or Up session that heard nothing for the
    /// detection time goes Down (§6.8.4); returns the new state if it changed.
    pub fn check_timeout(&mut self, now_ns: u64) -> Option<State> {
        if !matches!(self.state, State::Init | State::Up) {
            return None;
        }
        let detect = self.detection_time().as_nanos() as u64;
        if now_ns.saturating_sub(self.last_rx_ns) < detect {
            return None;
        }
        self.set_state(State::Down, Diag::DetectExpired, now_ns);
        Some(State::Down)
    }

    /// The next packet to send at `now_ns`, if one is due: a Final owed to a poll at once, else
    /// the periodic packet, rescheduled with the jitter of §6.8.7 (75–100 % of the interval,
    /// 75–90 % with a multiplier of 1). None while the peer asks for no packets (Required Min
    /// RX 0). Call until `None`.
    pub fn poll_tx(&mut self, now_ns: u64) -> Option<ControlPacket> {
        if self.final_due {
            self.final_due = false;
            self.counters.sent += 1;
            return Some(self.packet(false, true));
        }
        if self.remote_min_rx_us == 0 || now_ns < self.next_tx_ns {
            return None;
        }
        let interval = self.tx_interval().as_nanos() as u64;
        self.next_tx_ns = now_ns + self.jittered(interval);
        self.counters.sent += 1;
        Some(self.packet(self.polling, false))
    }

    /// When [`Session::poll_tx`] or [`Session::check_timeout`] next has something to do.
    pub fn next_event_ns(&self) -> u64 {
        let mut t = self.next_tx_ns;
        if matches!(self.state, State::Init | State::Up) {
            let d = self.detection_time().as_nanos() as u64;
            t = t.min(self.last_rx_ns.saturating_add(d));
        }
        t
    }

    /// `interval` reduced by a random 0–25 % (10–25 % with a multiplier of 1).
    fn jittered(&mut self, interval: u64) -> u64 {
        // xorshift64*: enough for timer jitter.
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        let r = self.rng.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 32;
        let span = if self.params.detect_mult == 1 { 15 } else { 25 };
        let floor = if self.params.detect_mult == 1 { 10 } else { 0 };
        let pct = floor + r % (span + 1);
        interval - interval * pct / 100
    }

    fn packet(&self, poll: bool, final_: bool) -> ControlPacket {
        ControlPacket {
            diag: self.diag as u8,
            state: self.state,
            poll,
            final_,
            cpi: false,
            demand: false,
            detect_mult: self.params.detect_mult,
            my_disc: self.local_disc,
            your_disc: self.remote_disc,
            desired_min_tx_us: self.desired_tx_us(),
            required_min_rx_us: self.params.required_min_rx_us,
            required_min_echo_rx_us: 0,
        }
    }
}

/// The SCION framing of one session's packets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Framing {
    /// Local ISD-AS.
    pub local_ia: IsdAsn,
    /// The router's address: the link's local underlay IP, or its internal IP for a sibling.
    pub local_host: IpAddr,
    /// The peer's ISD-AS (the local one for a sibling).
    pub remote_ia: IsdAsn,
    /// The peer's address (underlay IP of the link's far end, or the sibling's internal IP).
    pub remote_host: IpAddr,
    /// The external interface (OneHop path), or 0 for a sibling (Empty path).
    pub ifid: u16,
}

fn host(ip: IpAddr) -> HostAddr {
    match ip {
        IpAddr::V4(a) => HostAddr::V4(a),
        IpAddr::V6(a) => HostAddr::V6(a),
    }
}

impl Framing {
    /// Writes the SCION packet carrying `p` into `buf` (OneHop path with the first hop's MAC
    /// for an external link, `now_s` Unix seconds; Empty path for a sibling) and returns its
    /// length; `None` if `buf` is too small.
    pub fn write(
        &self,
        p: &ControlPacket,
        mac: &HopMac,
        now_s: u32,
        buf: &mut [u8],
    ) -> Option<usize> {
        let (path_type, path_len) = if self.ifid == 0 {
            (PathType::Empty, 0)
        } else {
            (PathType::OneHop, idint_wire::path::onehop::ONEHOP_LEN)
        };
        let repr = ScionRepr {
            version: 0,
            traffic_class: TRAFFIC_CLASS,
            flow_id: FlowId::from_u20(FLOW_ID),
            next_header: NextHdr::Bfd,
            path_type,
            path_len,
            payload_len: CONTROL_LEN as u16,
            dst_ia: self.remote_ia,
            src_ia: self.local_ia,
            dst_host: host(self.remote_host),
            src_host: host(self.local_host),
        };
        let hl = repr.header_len();
        let total = hl + CONTROL_LEN;
        let out = buf.get_mut(..total)?;
        repr.emit(out).ok()?;
        if self.ifid != 0 {
            let info = InfoField {
                cons_dir: true,
                timestamp: now_s.saturating_sub(ONEHOP_CLOCK_SLACK_S),
                ..InfoField::default()
            };
            let mut first = HopField {
                exp_time: ONEHOP_EXP_TIME,
                cons_egress: self.ifid,
                ..HopField::default()
            };
            let full = mac.compute(&first.mac_input(info.seg_id, info.timestamp));
            first.mac.copy_from_slice(&full[..MAC_LEN]);
            let ohp = OneHopPath {
                info,
                first,
                second: HopField::default(),
            };
            ohp.emit(&mut out[repr.address_end()..hl]).ok()?;
        }
        let mut body = [0u8; CONTROL_LEN];
        p.write(&mut body);
        out[hl..].copy_from_slice(&body);
        Some(total)
    }
}

/// A BFD packet found in a SCION packet: its path type (OneHop from a neighbour AS, Empty from
/// a sibling), the source, and the control packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Received {
    /// Whether the path was OneHop (else Empty).
    pub onehop: bool,
    /// Source ISD-AS.
    pub src_ia: IsdAsn,
    /// Source host address, if an IP.
    pub src_host: Option<IpAddr>,
    /// The control packet (or why it was refused).
    pub packet: Result<ControlPacket, Discard>,
}

/// Finds the BFD control packet of a SCION packet (after any extension headers); `None` if it
/// is not BFD on a OneHop or Empty path.
pub fn parse_scion(pkt: &[u8]) -> Option<Received> {
    let h = ScionHeader::new_checked(pkt).ok()?;
    let onehop = match h.path_type() {
        PathType::OneHop => true,
        PathType::Empty => false,
        _ => return None,
    };
    let mut nh: u8 = h.next_header().into();
    let mut off = h.header_len();
    while EXTENSIONS.contains(&nh) {
        let ext = pkt.get(off..off + 2)?;
        nh = ext[0];
        off += (usize::from(ext[1]) + 1) * 4;
    }
    if nh != u8::from(NextHdr::Bfd) {
        return None;
    }
    let src_host = match h.src_host() {
        HostAddr::V4(a) => Some(IpAddr::V4(a)),
        HostAddr::V6(a) => Some(IpAddr::V6(a)),
        _ => None,
    };
    Some(Received {
        onehop,
        src_ia: h.src_ia(),
        src_host,
        packet: ControlPacket::parse(pkt.get(off..)?),
    })
}

/// Bytes of the tag the worker and the control thread put in front of a SCION packet they
/// hand each other over a ring (it fits in the room of the underlay headers it replaces).
pub const TAG_LEN: usize = 20;

/// The link a handed-over BFD packet came by or is to leave by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    /// The router's external link of this interface.
    External(u16),
    /// The AS-internal network; for a packet to send, the sibling's underlay address.
    Internal(Option<SocketAddr>),
}

const TAG_EXTERNAL: u8 = 1;
const TAG_INTERNAL: u8 = 2;
const TAG_INTERNAL_V4: u8 = 3;
const TAG_INTERNAL_V6: u8 = 4;

impl Via {
    /// Writes the tag into the first [`TAG_LEN`] bytes of `b` (false if shorter).
    pub fn write_tag(&self, b: &mut [u8]) -> bool {
        let Some(t) = b.get_mut(..TAG_LEN) else {
            return false;
        };
        t.fill(0);
        match *self {
            Via::External(ifid) => {
                t[0] = TAG_EXTERNAL;
                t[2..4].copy_from_slice(&ifid.to_be_bytes());
            }
            Via::Internal(None) => t[0] = TAG_INTERNAL,
            Via::Internal(Some(a)) => {
                t[2..4].copy_from_slice(&a.port().to_be_bytes());
                match a.ip() {
                    IpAddr::V4(ip) => {
                        t[0] = TAG_INTERNAL_V4;
                        t[4..8].copy_from_slice(&ip.octets());
                    }
                    IpAddr::V6(ip) => {
                        t[0] = TAG_INTERNAL_V6;
                        t[4..20].copy_from_slice(&ip.octets());
                    }
                }
            }
        }
        true
    }

    /// Reads a tag written by [`Via::write_tag`].
    pub fn read_tag(b: &[u8]) -> Option<Via> {
        let t = b.get(..TAG_LEN)?;
        let n = u16::from_be_bytes([t[2], t[3]]);
        let v4 = || Ipv4Addr::new(t[4], t[5], t[6], t[7]);
        let v6 = || {
            let mut o = [0u8; 16];
            o.copy_from_slice(&t[4..20]);
            Ipv6Addr::from(o)
        };
        Some(match t[0] {
            TAG_EXTERNAL => Via::External(n),
            TAG_INTERNAL => Via::Internal(None),
            TAG_INTERNAL_V4 => Via::Internal(Some(SocketAddr::new(v4().into(), n))),
            TAG_INTERNAL_V6 => Via::Internal(Some(SocketAddr::new(v6().into(), n))),
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use idint_wire::path::scion::{HOP_LEN, INFO_LEN};

    const MS: u64 = 1_000_000;

    fn pair() -> (Session, Session) {
        let p = Params::default();
        (Session::new(11, p, 1, 0), Session::new(22, p, 2, 0))
    }

    /// Delivers every packet `from` has due at `now` to `to`.
    fn exchange(from: &mut Session, to: &mut Session, now: u64) -> usize {
        let mut n = 0;
        while let Some(p) = from.poll_tx(now) {
            n += 1;
            let mut b = [0u8; CONTROL_LEN];
            p.write(&mut b);
            let q = ControlPacket::parse(&b).unwrap();
            assert_eq!(p, q);
            let _ = to.receive(&q, now);
        }
        n
    }

    #[test]
    fn codec_round_trip_and_checks() {
        let p = ControlPacket {
            diag: 3,
            state: State::Init,
            poll: true,
            final_: false,
            cpi: true,
            demand: false,
            detect_mult: 3,
            my_disc: 0x0102_0304,
            your_disc: 7,
            desired_min_tx_us: 200_000,
            required_min_rx_us: 300_000,
            required_min_echo_rx_us: 0,
        };
        let mut b = [0u8; CONTROL_LEN];
        p.write(&mut b);
        assert_eq!(b[0], 0x23);
        assert_eq!(b[1], 0x80 | 0x20 | 0x08);
        assert_eq!(b[3], 24);
        assert_eq!(ControlPacket::parse(&b), Ok(p));
        let bad = |f: &dyn Fn(&mut [u8; CONTROL_LEN]), e: Discard| {
            let mut c = b;
            f(&mut c);
            assert_eq!(ControlPacket::parse(&c), Err(e));
        };
        bad(&|c| c[0] = 0x43, Discard::Version);
        bad(&|c| c[3] = 20, Discard::Length);
        bad(&|c| c[3] = 30, Discard::Truncated);
        bad(&|c| c[2] = 0, Discard::DetectMult);
        bad(&|c| c[1] |= 1, Discard::Multipoint);
        let mut auth = [0u8; CONTROL_LEN + 2];
        auth[..CONTROL_LEN].copy_from_slice(&b);
        auth[1] |= 4;
        auth[3] = 26;
        assert_eq!(ControlPacket::parse(&auth), Err(Discard::Auth));
        bad(&|c| c[4..8].fill(0), Discard::MyDisc);
        bad(&|c| c[8..12].fill(0), Discard::YourDisc);
        assert_eq!(ControlPacket::parse(&b[..23]), Err(Discard::Truncated));
    }

    #[test]
    fn three_way_handshake_brings_both_up() {
        let (mut a, mut b) = pair();
        exchange(&mut a, &mut b, 0);
        assert_eq!(b.state(), State::Init);
        exchange(&mut b, &mut a, 0);
        assert_eq!(a.state(), State::Up);
        exchange(&mut a, &mut b, 0);
        assert_eq!(b.state(), State::Up);
        assert_eq!(a.counters().state_changes, 1);
        assert_eq!(b.counters().state_changes, 2);
    }

    #[test]
    fn intervals_are_negotiated_and_slow_until_up() {
        let (mut a, mut b) = pair();
        assert_eq!(a.tx_interval(), Duration::from_secs(1));
        exchange(&mut a, &mut b, 0);
        exchange(&mut b, &mut a, 0);
        exchange(&mut a, &mut b, 0);
        exchange(&mut b, &mut a, 0);
        assert_eq!(a.tx_interval(), Duration::from_millis(200));
        // The peer wants packets no faster than every 500 ms.
        let mut slow = Session::new(
            33,
            Params {
                required_min_rx_us: 500_000,
                ..Params::default()
            },
            3,
            0,
        );
        let mut p = b.packet(false, false);
        p.required_min_rx_us = 500_000;
        a.receive(&p, 0).unwrap();
        assert_eq!(a.tx_interval(), Duration::from_millis(500));
        assert_eq!(a.detection_time(), Duration::from_millis(600));
        // A peer not yet Up sends every second: 3 s before it is declared dead.
        exchange(&mut slow, &mut a, 0);
        assert_eq!(a.detection_time(), Duration::from_secs(3));
    }

    #[test]
    fn up_session_polls_and_peer_answers_final() {
        let (mut a, mut b) = pair();
        exchange(&mut a, &mut b, 0);
        exchange(&mut b, &mut a, 0);
        let p = a.poll_tx(0).unwrap();
        assert!(p.poll, "entering Up starts a poll sequence");
        b.receive(&p, 0).unwrap();
        let f = b.poll_tx(0).unwrap();
        assert!(f.final_);
        a.receive(&f, 0).unwrap();
        assert!(!a.poll_tx(300 * MS).unwrap().poll);
    }

    #[test]
    fn silence_for_the_detection_time_takes_it_down() {
        let (mut a, mut b) = pair();
        let mut now = 0;
        let mut last = 0;
        while now < 3_000 * MS {
            exchange(&mut a, &mut b, now);
            if exchange(&mut b, &mut a, now) > 0 {
                last = now;
            }
            assert_eq!(a.check_timeout(now), None);
            now += 10 * MS;
        }
        assert_eq!((a.state(), b.state()), (State::Up, State::Up));
        // b falls silent: a gives up after 3 x 200 ms, not before.
        let mut down_at = None;
        while down_at.is_none() {
            while a.poll_tx(now).is_some() {}
            if a.check_timeout(now).is_some() {
                down_at = Some(now);
            }
            now += MS;
        }
        let waited = down_at.unwrap() - last;
        assert!((600 * MS..=602 * MS).contains(&waited), "{waited}");
        assert_eq!(a.state(), State::Down);
        assert_eq!(a.diag(), Diag::DetectExpired);
        assert_eq!(a.packet(false, false).your_disc, 0);
        assert_eq!(a.tx_interval(), Duration::from_secs(1));
    }

    #[test]
    fn peer_signalling_down_takes_it_down_and_it_recovers() {
        let (mut a, mut b) = pair();
        for _ in 0..3 {
            exchange(&mut a, &mut b, 0);
            exchange(&mut b, &mut a, 0);
        }
        assert_eq!(a.state(), State::Up);
        // b restarts: a fresh session in Down with your_disc 0.
        let mut b = Session::new(44, Params::default(), 9, 0);
        exchange(&mut b, &mut a, 10 * MS);
        assert_eq!(a.state(), State::Down);
        assert_eq!(a.diag(), Diag::NeighborDown);
        exchange(&mut a, &mut b, 10 * MS);
        exchange(&mut b, &mut a, 10 * MS);
        exchange(&mut a, &mut b, 10 * MS);
        assert_eq!((a.state(), b.state()), (State::Up, State::Up));
    }

    #[test]
    fn foreign_discriminator_is_discarded() {
        let (mut a, _) = pair();
        let mut p = a.packet(false, false);
        p.my_disc = 5;
        p.your_disc = 999;
        p.state = State::Init;
        assert_eq!(a.receive(&p, 0), Err(Discard::YourDisc));
        assert_eq!(a.counters().discarded, 1);
        assert_eq!(a.state(), State::Down);
    }

    #[test]
    fn jitter_stays_within_the_rfc_bounds() {
        let mut s = Session::new(1, Params::default(), 42, 0);
        let (mut lo, mut hi) = (u64::MAX, 0);
        for _ in 0..10_000 {
            let j = s.jittered(1_000);
            lo = lo.min(j);
            hi = hi.max(j);
        }
        assert_eq!((lo, hi), (750, 1_000));
        let mut one = Session::new(
            1,
            Params {
                detect_mult: 1,
                ..Params::default()
            },
            42,
            0,
        );
        let (mut lo, mut hi) = (u64::MAX, 0);
        for _ in 0..10_000 {
            let j = one.jittered(1_000);
            lo = lo.min(j);
            hi = hi.max(j);
        }
        assert_eq!((lo, hi), (750, 900));
    }

    #[test]
    fn scion_framing_round_trips() {
        let mac = HopMac::new(&[7u8; 16]);
        let ia: IsdAsn = "1-ff00:0:1".parse().unwrap();
        let nb: IsdAsn = "1-ff00:0:2".parse().unwrap();
        let p = Session::new(5, Params::default(), 1, 0).packet(false, false);
        let ext = Framing {
            local_ia: ia,
            local_host: "10.0.0.1".parse().unwrap(),
            remote_ia: nb,
            remote_host: "10.0.0.2".parse().unwrap(),
            ifid: 4,
        };
        let mut buf = [0u8; 256];
        let n = ext.write(&p, &mac, 1_000_000, &mut buf).unwrap();
        let r = parse_scion(&buf[..n]).unwrap();
        assert!(r.onehop);
        assert_eq!((r.src_ia, r.src_host), (ia, Some(ext.local_host)));
        assert_eq!(r.packet, Ok(p));
        let h = ScionHeader::new_checked(&buf[..n]).unwrap();
        assert_eq!((h.traffic_class(), h.flow_id().value()), (0xb8, 0xdead));
        let ohp = OneHopPath::parse(h.path_bytes()).unwrap();
        assert_eq!(ohp.first.cons_egress, 4);
        assert_eq!(ohp.info.timestamp, 1_000_000 - ONEHOP_CLOCK_SLACK_S);
        let block = ohp.first.mac_input(ohp.info.seg_id, ohp.info.timestamp);
        assert!(mac.verify(&block, &ohp.first.mac));
        assert_eq!(&h.path_bytes()[INFO_LEN + HOP_LEN..], &[0u8; HOP_LEN]);
        let sib = Framing {
            remote_ia: ia,
            ifid: 0,
            ..ext
        };
        let n = sib.write(&p, &mac, 0, &mut buf).unwrap();
        let r = parse_scion(&buf[..n]).unwrap();
        assert!(!r.onehop);
        assert_eq!(r.packet, Ok(p));
        assert!(sib.write(&p, &mac, 0, &mut buf[..40]).is_none());
    }

    #[test]
    fn tags_round_trip() {
        for v in [
            Via::External(9),
            Via::Internal(None),
            Via::Internal(Some("10.1.2.3:30042".parse().unwrap())),
            Via::Internal(Some("[2001:db8::1]:50000".parse().unwrap())),
        ] {
            let mut b = [0xffu8; TAG_LEN];
            assert!(v.write_tag(&mut b));
            assert_eq!(Via::read_tag(&b), Some(v));
        }
        assert_eq!(Via::read_tag(&[0u8; TAG_LEN]), None);
        assert!(!Via::External(1).write_tag(&mut [0u8; 4]));
    }
}
