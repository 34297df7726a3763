//! What processing decides for a packet, and the reasons it counts.

use core::fmt;
use core::net::SocketAddr;

use idint_wire::scmp::msg_type;

/// The SCMP codes the router sends. `idint_wire::scmp::ParamProblemCode` names the Parameter
/// Problem codes too, but its conversion to the wire value is not `const`.
mod scmp_code {
    /// The code of a type that defines a single one.
    pub(super) const ONLY: u8 = 0;
    /// Destination Unreachable: no route to the destination.
    pub(super) const NO_ROUTE: u8 = 0;
    /// Parameter Problem: invalid packet size.
    pub(super) const INVALID_PACKET_SIZE: u8 = 19;
    /// Parameter Problem: invalid source address.
    pub(super) const INVALID_SOURCE_ADDRESS: u8 = 33;
    /// Parameter Problem: invalid destination address.
    pub(super) const INVALID_DESTINATION_ADDRESS: u8 = 34;
    /// Parameter Problem: invalid path.
    pub(super) const INVALID_PATH: u8 = 48;
    /// Parameter Problem: unknown ConsIngress interface in the current hop field.
    pub(super) const UNKNOWN_HOP_FIELD_INGRESS: u8 = 49;
    /// Parameter Problem: unknown ConsEgress interface in the current hop field.
    pub(super) const UNKNOWN_HOP_FIELD_EGRESS: u8 = 50;
    /// Parameter Problem: invalid hop field MAC.
    pub(super) const INVALID_HOP_FIELD_MAC: u8 = 51;
    /// Parameter Problem: path expired.
    pub(super) const PATH_EXPIRED: u8 = 52;
    /// Parameter Problem: invalid segment change.
    pub(super) const INVALID_SEGMENT_CHANGE: u8 = 53;
}

/// Where a packet came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Ingress {
    /// The AS-internal network (an end host or service), not a sibling router's link.
    Internal,
    /// The link this router keeps to the sibling router that owns interface `ifid`. A sibling
    /// router that owns several interfaces has one link, which any of them names.
    Sibling(u16),
    /// This router's own inter-AS link of interface `ifid`.
    External(u16),
}

impl Ingress {
    /// The ingress interface ID as the SCION rules see it: the interface for an external link,
    /// 0 for the internal network and for sibling links.
    #[inline]
    pub const fn ifid(self) -> u16 {
        match self {
            Ingress::External(id) => id,
            Ingress::Internal | Ingress::Sibling(_) => 0,
        }
    }
}

/// The decision for one packet. The packet bytes in the caller's buffer have been updated
/// accordingly (path fields advanced, flags cleared, or replaced by an SCMP reply).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Disposition {
    /// Send on this router's own external link of interface `ifid`.
    Forward {
        /// Egress interface.
        ifid: u16,
    },
    /// Hand over unchanged to the sibling router that owns interface `ifid`.
    Sibling {
        /// The egress interface (owned by the sibling).
        ifid: u16,
        /// The sibling's internal address.
        addr: SocketAddr,
    },
    /// Deliver to a host or service in the local AS at this underlay address.
    Deliver {
        /// Underlay destination (IP and UDP port).
        addr: SocketAddr,
    },
    /// The buffer now holds an SCMP message of `len` bytes: send it back where the packet came
    /// from (the ingress link; for [`Ingress::Internal`] the packet's underlay source).
    Reply {
        /// Length of the reply in the buffer.
        len: usize,
        /// Why the router answered.
        scmp: ScmpReason,
        /// SCMP pointer (Parameter Problem), else 0.
        pointer: u16,
    },
    /// A BFD control packet for the link it arrived on (for the control plane).
    Bfd,
    /// An SCMP error was due but is not sent because the packet is itself an SCMP error
    /// (counted as the drop [`DropReason::ScmpSuppressed`]).
    Suppressed {
        /// The error the packet would have got.
        scmp: ScmpReason,
        /// Its pointer.
        pointer: u16,
    },
    /// Nothing is sent.
    Drop(DropReason),
}

/// Why the router answered with an SCMP message (type and code via [`ScmpReason::type_code`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum ScmpReason {
    /// 1/0: no instance of the destination service.
    NoRoute,
    /// 4/19: PayloadLen does not match the packet.
    InvalidPacketSize,
    /// 4/33: bad source ISD-AS or host address.
    InvalidSourceAddress,
    /// 4/34: bad destination ISD-AS or host address.
    InvalidDestinationAddress,
    /// 4/48: the link types of ingress and egress do not allow this transit.
    InvalidPath,
    /// 4/49: the hop field's ingress interface is not the one the packet arrived on / unknown.
    UnknownHopFieldIngress,
    /// 4/50: the hop field's egress interface is unknown.
    UnknownHopFieldEgress,
    /// 4/51: hop-field MAC verification failed.
    InvalidHopFieldMac,
    /// 4/52: the hop field expired.
    PathExpired,
    /// 4/53: a segment change the link types do not allow.
    InvalidSegmentChange,
    /// 5/0: the egress link of this router is down.
    ExternalInterfaceDown,
    /// 6/0: the sibling router owning the egress interface is unreachable.
    InternalConnectivityDown,
    /// 131/0: traceroute reply to a request with a router alert for this router.
    TracerouteReply,
}

impl ScmpReason {
    /// Number of reasons (size of counter arrays).
    pub const COUNT: usize = 13;
    /// Every reason, in counter order.
    pub const ALL: [ScmpReason; Self::COUNT] = [
        ScmpReason::NoRoute,
        ScmpReason::InvalidPacketSize,
        ScmpReason::InvalidSourceAddress,
        ScmpReason::InvalidDestinationAddress,
        ScmpReason::InvalidPath,
        ScmpReason::UnknownHopFieldIngress,
        ScmpReason::UnknownHopFieldEgress,
        ScmpReason::InvalidHopFieldMac,
        ScmpReason::PathExpired,
        ScmpReason::InvalidSegmentChange,
        ScmpReason::ExternalInterfaceDown,
        ScmpReason::InternalConnectivityDown,
        ScmpReason::TracerouteReply,
    ];

    /// SCMP type and code.
    pub const fn type_code(self) -> (u8, u8) {
        use msg_type::*;
        use scmp_code::*;
        match self {
            ScmpReason::NoRoute => (DEST_UNREACHABLE, NO_ROUTE),
            ScmpReason::InvalidPacketSize => (PARAMETER_PROBLEM, INVALID_PACKET_SIZE),
            ScmpReason::InvalidSourceAddress => (PARAMETER_PROBLEM, INVALID_SOURCE_ADDRESS),
            ScmpReason::InvalidDestinationAddress => {
                (PARAMETER_PROBLEM, INVALID_DESTINATION_ADDRESS)
            }
            ScmpReason::InvalidPath => (PARAMETER_PROBLEM, INVALID_PATH),
            ScmpReason::UnknownHopFieldIngress => (PARAMETER_PROBLEM, UNKNOWN_HOP_FIELD_INGRESS),
            ScmpReason::UnknownHopFieldEgress => (PARAMETER_PROBLEM, UNKNOWN_HOP_FIELD_EGRESS),
            ScmpReason::InvalidHopFieldMac => (PARAMETER_PROBLEM, INVALID_HOP_FIELD_MAC),
            ScmpReason::PathExpired => (PARAMETER_PROBLEM, PATH_EXPIRED),
            ScmpReason::InvalidSegmentChange => (PARAMETER_PROBLEM, INVALID_SEGMENT_CHANGE),
            ScmpReason::ExternalInterfaceDown => (EXTERNAL_INTERFACE_DOWN, ONLY),
            ScmpReason::InternalConnectivityDown => (INTERNAL_CONNECTIVITY_DOWN, ONLY),
            ScmpReason::TracerouteReply => (TRACEROUTE_REPLY, ONLY),
        }
    }

    /// A short stable name for metrics labels.
    pub const fn name(self) -> &'static str {
        match self {
            ScmpReason::NoRoute => "no_route",
            ScmpReason::InvalidPacketSize => "invalid_packet_size",
            ScmpReason::InvalidSourceAddress => "invalid_source_address",
            ScmpReason::InvalidDestinationAddress => "invalid_destination_address",
            ScmpReason::InvalidPath => "invalid_path",
            ScmpReason::UnknownHopFieldIngress => "unknown_hop_field_ingress",
            ScmpReason::UnknownHopFieldEgress => "unknown_hop_field_egress",
            ScmpReason::InvalidHopFieldMac => "invalid_hop_field_mac",
            ScmpReason::PathExpired => "path_expired",
            ScmpReason::InvalidSegmentChange => "invalid_segment_change",
            ScmpReason::ExternalInterfaceDown => "external_interface_down",
            ScmpReason::InternalConnectivityDown => "internal_connectivity_down",
            ScmpReason::TracerouteReply => "traceroute_reply",
        }
    }
}

impl fmt::Display for ScmpReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (t, c) = self.type_code();
        write!(f, "{} ({t}/{c})", self.name())
    }
}

/// Why a packet was dropped without an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum DropReason {
    /// The common/address header or the path does not parse.
    Malformed,
    /// A path type the router does not forward (COLIBRI, unknown, Empty without BFD).
    UnsupportedPath,
    /// CurrINF does not match the segment of CurrHF.
    CurrInfMismatch,
    /// A segment with fewer than 2 hop fields (without the peering flag).
    SingletonSegment,
    /// The peering flag on a path whose segment lengths do not allow peering.
    BadPeeringPath,
    /// A packet in AS transit that did not arrive over the sibling link of its ingress
    /// interface.
    TransitNotFromSibling,
    /// A remote destination whose hop field gives egress interface 0 (spec behaviour; the
    /// reference router reflects it to the internal network, `scion-dp.md` §7 D7).
    EgressZero,
    /// The path is already at its last hop but the packet has to leave the AS.
    PathAtEnd,
    /// An SCMP error was due, but the packet is itself an SCMP error.
    ScmpSuppressed,
    /// An SCMP error was due but no reply can be built (path not reversible, no room).
    ScmpUnbuildable,
    /// A router alert on a packet that is not a traceroute request (spec behaviour; the
    /// reference router reflects it, `scion-dp.md` §7 D5).
    AlertNotTraceroute,
    /// The upper layer of a locally delivered packet gives no usable port.
    NoLocalPort,
    /// A OneHop packet failed one of its checks.
    OneHopRejected,
    /// An external ingress interface the router model does not know.
    UnknownIngress,
    /// An EPIC packet whose timestamp is too old or too far in the future.
    EpicStale,
    /// An EPIC packet whose hop validation field does not verify.
    EpicBadHvf,
    /// An ID-INT infrastructure-mode packet with the D flag ended at its sink: its telemetry
    /// was exported and the packet is not delivered, as requested (not an error).
    TelemetryConsumed,
}

impl DropReason {
    /// Number of reasons (size of counter arrays).
    pub const COUNT: usize = 17;
    /// Every reason, in counter order.
    pub const ALL: [DropReason; Self::COUNT] = [
        DropReason::Malformed,
        DropReason::UnsupportedPath,
        DropReason::CurrInfMismatch,
        DropReason::SingletonSegment,
        DropReason::BadPeeringPath,
        DropReason::TransitNotFromSibling,
        DropReason::EgressZero,
        DropReason::PathAtEnd,
        DropReason::ScmpSuppressed,
        DropReason::ScmpUnbuildable,
        DropReason::AlertNotTraceroute,
        DropReason::NoLocalPort,
        DropReason::OneHopRejected,
        DropReason::UnknownIngress,
        DropReason::EpicStale,
        DropReason::EpicBadHvf,
        DropReason::TelemetryConsumed,
    ];

    /// A short stable name for metrics labels.
    pub const fn name(self) -> &'static str {
        match self {
            DropReason::Malformed => "malformed",
            DropReason::UnsupportedPath => "unsupported_path",
            DropReason::CurrInfMismatch => "curr_inf_mismatch",
            DropReason::SingletonSegment => "singleton_segment",
            DropReason::BadPeeringPath => "bad_peering_path",
            DropReason::TransitNotFromSibling => "transit_not_from_sibling",
            DropReason::EgressZero => "egress_zero",
            DropReason::PathAtEnd => "path_at_end",
            DropReason::ScmpSuppressed => "scmp_suppressed",
            DropReason::ScmpUnbuildable => "scmp_unbuildable",
            DropReason::AlertNotTraceroute => "alert_not_traceroute",
            DropReason::NoLocalPort => "no_local_port",
            DropReason::OneHopRejected => "onehop_rejected",
            DropReason::UnknownIngress => "unknown_ingress",
            DropReason::EpicStale => "epic_stale",
            DropReason::EpicBadHvf => "epic_bad_hvf",
            DropReason::TelemetryConsumed => "telemetry_consumed",
        }
    }
}

impl fmt::Display for DropReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Per-worker counters of every disposition and reason. Plain integers: each worker owns one
/// and the I/O layer sums them for export.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counters {
    /// Packets forwarded on an own external link.
    pub forwarded: u64,
    /// Packets handed to a sibling router.
    pub to_sibling: u64,
    /// Packets delivered to a local host or service.
    pub delivered: u64,
    /// BFD packets passed to the control plane.
    pub bfd: u64,
    /// SCMP replies sent, by reason.
    pub replies: [u64; ScmpReason::COUNT],
    /// Drops, by reason.
    pub drops: [u64; DropReason::COUNT],
}

impl Counters {
    /// Counts one disposition.
    #[inline]
    pub fn record(&mut self, d: &Disposition) {
        match *d {
            Disposition::Forward { .. } => self.forwarded += 1,
            Disposition::Sibling { .. } => self.to_sibling += 1,
            Disposition::Deliver { .. } => self.delivered += 1,
            Disposition::Bfd => self.bfd += 1,
            Disposition::Reply { scmp, .. } => self.replies[scmp as usize] += 1,
            Disposition::Drop(r) => self.drops[r as usize] += 1,
            Disposition::Suppressed { .. } => self.drops[DropReason::ScmpSuppressed as usize] += 1,
        }
    }

    /// Replies sent for `reason`.
    pub fn replies_for(&self, reason: ScmpReason) -> u64 {
        self.replies[reason as usize]
    }

    /// Drops for `reason`.
    pub fn drops_for(&self, reason: DropReason) -> u64 {
        self.drops[reason as usize]
    }

    /// Every packet counted, saturating at `u64::MAX` (never wraps or panics).
    pub fn total(&self) -> u64 {
        [self.forwarded, self.to_sibling, self.delivered, self.bfd]
            .iter()
            .chain(&self.replies)
            .chain(&self.drops)
            .fold(0u64, |t, &n| t.saturating_add(n))
    }

    /// Adds another worker's counters. Each sum saturates at `u64::MAX`: exported counters
    /// stay monotonic (a wrap would look like a counter reset to Prometheus) and the addition
    /// never panics.
    pub fn merge(&mut self, other: &Counters) {
        let add = |a: &mut u64, b: u64| *a = a.saturating_add(b);
        add(&mut self.forwarded, other.forwarded);
        add(&mut self.to_sibling, other.to_sibling);
        add(&mut self.delivered, other.delivered);
        add(&mut self.bfd, other.bfd);
        for (a, b) in self.replies.iter_mut().zip(other.replies.iter()) {
            add(a, *b);
        }
        for (a, b) in self.drops.iter_mut().zip(other.drops.iter()) {
            add(a, *b);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reason_tables_are_in_discriminant_order() {
        for (i, r) in ScmpReason::ALL.iter().enumerate() {
            assert_eq!(*r as usize, i);
        }
        for (i, r) in DropReason::ALL.iter().enumerate() {
            assert_eq!(*r as usize, i);
        }
    }

    #[test]
    fn counters_record_and_merge() {
        let mut a = Counters::default();
        a.record(&Disposition::Forward { ifid: 1 });
        a.record(&Disposition::Drop(DropReason::EpicStale));
        a.record(&Disposition::Reply {
            len: 100,
            scmp: ScmpReason::PathExpired,
            pointer: 0,
        });
        let mut b = a.clone();
        b.merge(&a);
        assert_eq!(b.forwarded, 2);
        assert_eq!(b.drops_for(DropReason::EpicStale), 2);
        assert_eq!(b.replies_for(ScmpReason::PathExpired), 2);
        assert_eq!(b.total(), 6);
    }

    #[test]
    fn counters_total_and_merge_saturate() {
        let mut a = Counters {
            forwarded: u64::MAX,
            ..Counters::default()
        };
        a.record(&Disposition::Bfd);
        a.record(&Disposition::Drop(DropReason::EpicStale));
        assert_eq!(a.total(), u64::MAX);
        let mut b = Counters {
            forwarded: 1,
            ..Counters::default()
        };
        b.drops[DropReason::EpicStale as usize] = u64::MAX;
        b.replies[ScmpReason::PathExpired as usize] = 3;
        a.merge(&b);
        assert_eq!(a.forwarded, u64::MAX);
        assert_eq!(a.bfd, 1);
        assert_eq!(a.drops_for(DropReason::EpicStale), u64::MAX);
        assert_eq!(a.replies_for(ScmpReason::PathExpired), 3);
        assert_eq!(a.total(), u64::MAX);
    }
}
