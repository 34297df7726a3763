//! What a router can measure, and how ID-INT instructions map onto it.
//!
//! The I/O layer implements [`TelemetrySource`] over its real measurements (clock, port and
//! queue counters, configured energy figures). Every method has a default that answers `None`:
//! a source answers only what it actually measures, and an instruction whose value is `None`
//! leaves its slot empty (ML = 0) — nothing is ever invented. [`read_instruction`] is the one
//! place that maps the instruction table (`idint.md` §6.1) onto the source.
//!
//! Semantics chosen where the specification is silent: every router that writes or aggregates
//! an entry reports *its own* view of the packet — its receive and send timestamps, the
//! counters of the ports the packet used on this router (interface 0 = the internal network
//! port) — regardless of the table's "written at ingress/egress" column, which only says
//! where a value is naturally measured. Aggregation then combines the routers' values.

use core::net::{Ipv4Addr, Ipv6Addr};

use idint_wire::IsdAsn;

/// The packet a value is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HopContext {
    /// Interface the packet arrived on (0 = internal network or a sibling router's link).
    pub ingress_if: u16,
    /// Interface the packet leaves on (0 = delivered inside the AS).
    pub egress_if: u16,
    /// Packet length in bytes (SCION header included, underlay excluded).
    pub len: usize,
    /// Time the processor was given for this packet (Unix ns).
    pub now_ns: u64,
}

/// Direction of a port counter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Direction {
    /// Received.
    Rx,
    /// Transmitted.
    Tx,
}

/// Kind of a port counter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CounterKind {
    /// Packets.
    Packets,
    /// Bytes.
    Bytes,
    /// Packets dropped.
    Drops,
}

/// A queue or buffer measurement of the egress port.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QueueMetric {
    /// Queue identifier.
    QueueId,
    /// Instantaneous queue length (packets).
    QueueLen,
    /// Average queue length (packets).
    QueueLenAvg,
    /// Buffer identifier.
    BufferId,
    /// Instantaneous buffer occupancy (packets).
    BufferOccupancy,
    /// Average buffer occupancy (packets).
    BufferOccupancyAvg,
}

/// Device description items (instructions [`code::DEVICE_TYPE_ROLE`], [`code::DEVICE_VENDOR`],
/// [`code::DEVICE_MODEL`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DeviceItem {
    /// Role (high byte) and type (low byte), instruction [`code::DEVICE_TYPE_ROLE`].
    TypeRole,
    /// Vendor OUI, instruction [`code::DEVICE_VENDOR`].
    Vendor,
    /// Vendor-assigned model, instruction [`code::DEVICE_MODEL`].
    Model,
}

/// Environmental readings (instructions 0x05-0x09).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Environment {
    /// CPU temperature, K.
    CpuTemperature,
    /// ASIC temperature, K.
    AsicTemperature,
    /// Fan speed, RPM.
    FanSpeed,
    /// Total power draw, W.
    PowerDraw,
    /// Energy mix: byte 0 renewable/255, byte 1 nuclear/255.
    EnergyMix,
}

/// Everything a router can report about a packet and itself. Implemented by the I/O layer;
/// every method defaults to "not measured".
///
/// Reads should be cheap and have no side effects a packet could observe: a method may be
/// called more than once for the same packet (a full telemetry stack, for example, is only
/// known after the values were read on the fast path, and the general path reads them
/// again), and what is written comes from one of those calls.
pub trait TelemetrySource {
    /// Node ID written for the bitmap item 0x8 (the router id of the topology).
    fn node_id(&self) -> Option<u32> {
        None
    }
    /// Whether the value of instruction `code` (a `&mut self` measurement) is the same for
    /// every packet of a burst with the same interfaces and time (taken once at the burst's
    /// start, say, or changed only between bursts through
    /// [`IdIntStage::source_mut`](crate::idint::IdIntStage::source_mut)), and asking for it
    /// has no effect a later call could see: the stage may then ask once per burst and flow
    /// template instead of per packet ([`per_burst`] codes always are). The default: no code.
    fn steady_in_burst(&self, _code: u8) -> bool {
        false
    }
    /// When the packet was received, Unix ns.
    fn ingress_timestamp_ns(&mut self, _ctx: &HopContext) -> Option<u64> {
        None
    }
    /// When the packet is sent, Unix ns (the source's best estimate at processing time).
    fn egress_timestamp_ns(&mut self, _ctx: &HopContext) -> Option<u64> {
        None
    }
    /// A counter of the port behind SCION interface `ifid` (0 = internal port).
    fn interface_counter(
        &mut self,
        _ifid: u16,
        _dir: Direction,
        _kind: CounterKind,
    ) -> Option<u64> {
        None
    }
    /// A counter summed over all ports of this router.
    fn total_counter(&mut self, _dir: Direction, _kind: CounterKind) -> Option<u64> {
        None
    }
    /// Current link utilisation of interface `ifid`, kbit/s.
    fn link_utilisation_kbps(&mut self, _ifid: u16, _dir: Direction) -> Option<u32> {
        None
    }
    /// Configured or negotiated speed of interface `ifid`, Mbit/s.
    fn interface_speed_mbps(&mut self, _ifid: u16) -> Option<u32> {
        None
    }
    /// A queue or buffer measurement of the port of interface `ifid`.
    fn queue(&mut self, _ifid: u16, _metric: QueueMetric) -> Option<u32> {
        None
    }
    /// CPU and memory usage as fractions of 255.
    fn cpu_memory_usage(&mut self) -> Option<(u8, u8)> {
        None
    }
    /// Energy spent forwarding this packet, nJ.
    fn energy_per_packet_nj(&mut self, _ctx: &HopContext) -> Option<u32> {
        None
    }
    /// CO2 emitted forwarding this packet, pg.
    fn co2_per_packet_pg(&mut self, _ctx: &HopContext) -> Option<u32> {
        None
    }
    /// An IPv4 address of this node.
    fn node_ipv4(&self) -> Option<Ipv4Addr> {
        None
    }
    /// An IPv6 address of this node.
    fn node_ipv6(&self) -> Option<Ipv6Addr> {
        None
    }
    /// Software version (major, minor, patch).
    fn software_version(&self) -> Option<(u16, u16, u16)> {
        None
    }
    /// Seconds since the router started.
    fn uptime_s(&mut self) -> Option<u32> {
        None
    }
    /// Device description.
    fn device(&self, _item: DeviceItem) -> Option<u32> {
        None
    }
    /// Environmental readings.
    fn environment(&mut self, _item: Environment) -> Option<u16> {
        None
    }
    /// GPS position (latitude, longitude) in degrees.
    fn position(&self) -> Option<(f32, f32)> {
        None
    }
}

/// A source that measures nothing: every slot stays empty.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoTelemetry;

impl TelemetrySource for NoTelemetry {}

/// How [`read_instruction`] packs the values made of several parts.
mod value {
    /// [`super::code::CPU_MEMORY_USAGE`]: CPU usage in the byte above memory usage.
    pub(super) const CPU_USAGE_SHIFT: u32 = 8;
    /// [`super::code::SOFTWARE_VERSION`]: major version, 10 bits from bit 22.
    pub(super) const MAJOR_SHIFT: u32 = 22;
    /// The major version's bits.
    pub(super) const MAJOR_MASK: u16 = 0x3ff;
    /// Minor version, 10 bits from bit 12.
    pub(super) const MINOR_SHIFT: u32 = 12;
    /// The minor version's bits.
    pub(super) const MINOR_MASK: u16 = 0x3ff;
    /// Patch level, the low 12 bits.
    pub(super) const PATCH_MASK: u16 = 0xfff;
    /// [`super::code::NODE_IPV6_HIGH`]: the high 64 bits of the address.
    pub(super) const IPV6_HIGH_SHIFT: u32 = 64;
}

/// ID-INT instruction codes (`idint.md` §6.1), the values of Inst1..Inst4 this router
/// answers in [`read_instruction`].
pub mod code {
    /// ISD number of the router's AS.
    pub const ISD: u8 = 0x01;
    /// BR link type (no agreed encoding: never supplied).
    pub const BR_LINK_TYPE: u8 = 0x02;
    /// Device type and role.
    pub const DEVICE_TYPE_ROLE: u8 = 0x03;
    /// CPU and memory usage.
    pub const CPU_MEMORY_USAGE: u8 = 0x04;
    /// CPU temperature.
    pub const CPU_TEMPERATURE: u8 = 0x05;
    /// ASIC temperature.
    pub const ASIC_TEMPERATURE: u8 = 0x06;
    /// Fan speed.
    pub const FAN_SPEED: u8 = 0x07;
    /// Total power draw.
    pub const POWER_DRAW: u8 = 0x08;
    /// Energy mix.
    pub const ENERGY_MIX: u8 = 0x09;
    /// Device vendor (ethernet oui).
    pub const DEVICE_VENDOR: u8 = 0x41;
    /// Device model.
    pub const DEVICE_MODEL: u8 = 0x42;
    /// Software version.
    pub const SOFTWARE_VERSION: u8 = 0x43;
    /// Node ipv4 address.
    pub const NODE_IPV4: u8 = 0x44;
    /// Ingress interface speed.
    pub const INGRESS_IF_SPEED: u8 = 0x45;
    /// Egress interface speed.
    pub const EGRESS_IF_SPEED: u8 = 0x46;
    /// GPS latitude.
    pub const GPS_LATITUDE: u8 = 0x47;
    /// GPS longitude.
    pub const GPS_LONGITUDE: u8 = 0x48;
    /// Uptime.
    pub const UPTIME: u8 = 0x49;
    /// Forwarding energy per packet.
    pub const FORWARDING_ENERGY: u8 = 0x4a;
    /// CO2 per packet.
    pub const CO2_PER_PACKET: u8 = 0x4b;
    /// Ingress link rx utilisation.
    pub const INGRESS_LINK_RX_UTILISATION: u8 = 0x4c;
    /// Egress link tx utilisation.
    pub const EGRESS_LINK_TX_UTILISATION: u8 = 0x4d;
    /// Queue id.
    pub const QUEUE_ID: u8 = 0x4e;
    /// Instantaneous queue length.
    pub const QUEUE_LEN: u8 = 0x4f;
    /// Average queue length.
    pub const QUEUE_LEN_AVG: u8 = 0x50;
    /// Buffer id.
    pub const BUFFER_ID: u8 = 0x51;
    /// Instantaneous buffer occupancy.
    pub const BUFFER_OCCUPANCY: u8 = 0x52;
    /// Average buffer occupancy.
    pub const BUFFER_OCCUPANCY_AVG: u8 = 0x53;
    /// AS number of the router's AS.
    pub const ASN: u8 = 0x81;
    /// Ingress timestamp.
    pub const INGRESS_TIMESTAMP: u8 = 0x82;
    /// Egress timestamp.
    pub const EGRESS_TIMESTAMP: u8 = 0x83;
    /// Ingress scion-interface packet count.
    pub const INGRESS_IF_PACKETS: u8 = 0x84;
    /// Egress scion-interface packet count.
    pub const EGRESS_IF_PACKETS: u8 = 0x85;
    /// Ingress scion-interface drop count.
    pub const INGRESS_IF_DROPS: u8 = 0x86;
    /// Egress scion-interface drop count.
    pub const EGRESS_IF_DROPS: u8 = 0x87;
    /// Ingress scion-interface byte count.
    pub const INGRESS_IF_BYTES: u8 = 0x88;
    /// Egress scion-interface byte count.
    pub const EGRESS_IF_BYTES: u8 = 0x89;
    /// Ingress total packet count.
    pub const INGRESS_TOTAL_PACKETS: u8 = 0x8a;
    /// Egress total packet count.
    pub const EGRESS_TOTAL_PACKETS: u8 = 0x8b;
    /// Ingress total drop count.
    pub const INGRESS_TOTAL_DROPS: u8 = 0x8c;
    /// Egress total drop count.
    pub const EGRESS_TOTAL_DROPS: u8 = 0x8d;
    /// Ingress total byte count.
    pub const INGRESS_TOTAL_BYTES: u8 = 0x8e;
    /// Egress total byte count.
    pub const EGRESS_TOTAL_BYTES: u8 = 0x8f;
    /// Node ipv6 address, bytes 0-7.
    pub const NODE_IPV6_HIGH: u8 = 0xc1;
    /// Node ipv6 address, bytes 8-15.
    pub const NODE_IPV6_LOW: u8 = 0xc2;
}

/// Whether instruction `code`'s value comes from the router's identity or from a `&self`
/// method of the source (device, software version, addresses, position): it cannot change
/// while the stage holds the source (only [`IdIntStage::source_mut`] can change it, between
/// bursts), so a burst may ask for it once. Counters, clocks, queues and the like (`&mut self`
/// methods) are asked for per packet, unless the source says they are steady in a burst
/// ([`TelemetrySource::steady_in_burst`]).
///
/// [`IdIntStage::source_mut`]: crate::idint::IdIntStage::source_mut
pub fn per_burst(code: u8) -> bool {
    matches!(
        code,
        code::ISD
            | code::ASN
            | code::DEVICE_TYPE_ROLE
            | code::DEVICE_VENDOR
            | code::DEVICE_MODEL
            | code::SOFTWARE_VERSION
            | code::NODE_IPV4
            | code::GPS_LATITUDE
            | code::GPS_LONGITUDE
            | code::NODE_IPV6_HIGH
            | code::NODE_IPV6_LOW
    )
}

/// The value of instruction `code` for a packet, from the source (or from the router's own
/// identity for ISD and ASN). `None` for NOP, unassigned codes and what the source does not
/// measure. Values are returned unmasked; the caller fits them to the slot width.
pub fn read_instruction<S: TelemetrySource + ?Sized>(
    source: &mut S,
    local_ia: IsdAsn,
    code: u8,
    ctx: &HopContext,
) -> Option<u64> {
    use CounterKind::{Bytes, Drops, Packets};
    use Direction::{Rx, Tx};
    let (i, e) = (ctx.ingress_if, ctx.egress_if);
    let v = match code {
        code::ISD => u64::from(local_ia.isd().0),
        code::DEVICE_TYPE_ROLE => u64::from(source.device(DeviceItem::TypeRole)?),
        code::CPU_MEMORY_USAGE => {
            let (cpu, mem) = source.cpu_memory_usage()?;
            (u64::from(cpu) << value::CPU_USAGE_SHIFT) | u64::from(mem)
        }
        code::CPU_TEMPERATURE => u64::from(source.environment(Environment::CpuTemperature)?),
        code::ASIC_TEMPERATURE => u64::from(source.environment(Environment::AsicTemperature)?),
        code::FAN_SPEED => u64::from(source.environment(Environment::FanSpeed)?),
        code::POWER_DRAW => u64::from(source.environment(Environment::PowerDraw)?),
        code::ENERGY_MIX => u64::from(source.environment(Environment::EnergyMix)?),
        code::DEVICE_VENDOR => u64::from(source.device(DeviceItem::Vendor)?),
        code::DEVICE_MODEL => u64::from(source.device(DeviceItem::Model)?),
        code::SOFTWARE_VERSION => {
            let (ma, mi, pa) = source.software_version()?;
            use value::*;
            (u64::from(ma & MAJOR_MASK) << MAJOR_SHIFT)
                | (u64::from(mi & MINOR_MASK) << MINOR_SHIFT)
                | u64::from(pa & PATCH_MASK)
        }
        code::NODE_IPV4 => u64::from(u32::from(source.node_ipv4()?)),
        code::INGRESS_IF_SPEED => u64::from(source.interface_speed_mbps(i)?),
        code::EGRESS_IF_SPEED => u64::from(source.interface_speed_mbps(e)?),
        code::GPS_LATITUDE => u64::from(source.position()?.0.to_bits()),
        code::GPS_LONGITUDE => u64::from(source.position()?.1.to_bits()),
        code::UPTIME => u64::from(source.uptime_s()?),
        code::FORWARDING_ENERGY => u64::from(source.energy_per_packet_nj(ctx)?),
        code::CO2_PER_PACKET => u64::from(source.co2_per_packet_pg(ctx)?),
        code::INGRESS_LINK_RX_UTILISATION => u64::from(source.link_utilisation_kbps(i, Rx)?),
        code::EGRESS_LINK_TX_UTILISATION => u64::from(source.link_utilisation_kbps(e, Tx)?),
        code::QUEUE_ID => u64::from(source.queue(e, QueueMetric::QueueId)?),
        code::QUEUE_LEN => u64::from(source.queue(e, QueueMetric::QueueLen)?),
        code::QUEUE_LEN_AVG => u64::from(source.queue(e, QueueMetric::QueueLenAvg)?),
        code::BUFFER_ID => u64::from(source.queue(e, QueueMetric::BufferId)?),
        code::BUFFER_OCCUPANCY => u64::from(source.queue(e, QueueMetric::BufferOccupancy)?),
        code::BUFFER_OCCUPANCY_AVG => u64::from(source.queue(e, QueueMetric::BufferOccupancyAvg)?),
        code::ASN => local_ia.to_u64() & 0xffff_ffff_ffff,
        code::INGRESS_TIMESTAMP => source.ingress_timestamp_ns(ctx)?,
        code::EGRESS_TIMESTAMP => source.egress_timestamp_ns(ctx)?,
        code::INGRESS_IF_PACKETS => source.interface_counter(i, Rx, Packets)?,
        code::EGRESS_IF_PACKETS => source.interface_counter(e, Tx, Packets)?,
        code::INGRESS_IF_DROPS => source.interface_counter(i, Rx, Drops)?,
        code::EGRESS_IF_DROPS => source.interface_counter(e, Tx, Drops)?,
        code::INGRESS_IF_BYTES => source.interface_counter(i, Rx, Bytes)?,
        code::EGRESS_IF_BYTES => source.interface_counter(e, Tx, Bytes)?,
        code::INGRESS_TOTAL_PACKETS => source.total_counter(Rx, Packets)?,
        code::EGRESS_TOTAL_PACKETS => source.total_counter(Tx, Packets)?,
        code::INGRESS_TOTAL_DROPS => source.total_counter(Rx, Drops)?,
        code::EGRESS_TOTAL_DROPS => source.total_counter(Tx, Drops)?,
        code::INGRESS_TOTAL_BYTES => source.total_counter(Rx, Bytes)?,
        code::EGRESS_TOTAL_BYTES => source.total_counter(Tx, Bytes)?,
        code::NODE_IPV6_HIGH => (u128::from(source.node_ipv6()?) >> value::IPV6_HIGH_SHIFT) as u64,
        code::NODE_IPV6_LOW => u128::from(source.node_ipv6()?) as u64,
        // `code::BR_LINK_TYPE` has no agreed encoding; NOP and unassigned codes carry nothing.
        _ => return None,
    };
    Some(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use idint_wire::idint::{INSTRUCTIONS, Instruction};

    struct Everything;
    impl TelemetrySource for Everything {
        fn ingress_timestamp_ns(&mut self, c: &HopContext) -> Option<u64> {
            Some(c.now_ns)
        }
        fn interface_counter(&mut self, ifid: u16, d: Direction, k: CounterKind) -> Option<u64> {
            Some(u64::from(ifid) * 100 + (d as u64) * 10 + k as u64)
        }
        fn node_ipv6(&self) -> Option<Ipv6Addr> {
            Some(Ipv6Addr::new(0xfd00, 1, 2, 3, 4, 5, 6, 7))
        }
        fn software_version(&self) -> Option<(u16, u16, u16)> {
            Some((1, 2, 3))
        }
    }

    #[test]
    fn values_come_from_the_source_or_nowhere() {
        let ia: IsdAsn = "1-ff00:0:110".parse().unwrap();
        let ctx = HopContext {
            ingress_if: 1,
            egress_if: 2,
            len: 100,
            now_ns: 77,
        };
        // A source that measures nothing yields nothing except the router's own identity.
        for row in INSTRUCTIONS {
            let v = read_instruction(&mut NoTelemetry, ia, row.code, &ctx);
            match row.code {
                code::ISD => assert_eq!(v, Some(1)),
                code::ASN => assert_eq!(v, Some(0xff00_0000_0110)),
                _ => assert_eq!(v, None, "{:#x}", row.code),
            }
        }
        let mut s = Everything;
        assert_eq!(
            read_instruction(&mut s, ia, code::INGRESS_TIMESTAMP, &ctx),
            Some(77)
        );
        assert_eq!(
            read_instruction(&mut s, ia, code::INGRESS_IF_PACKETS, &ctx),
            Some(100)
        );
        assert_eq!(
            read_instruction(&mut s, ia, code::EGRESS_IF_BYTES, &ctx),
            Some(211)
        );
        assert_eq!(
            read_instruction(&mut s, ia, code::NODE_IPV6_HIGH, &ctx),
            Some(0xfd00_0001_0002_0003)
        );
        assert_eq!(
            read_instruction(&mut s, ia, code::NODE_IPV6_LOW, &ctx),
            Some(0x0004_0005_0006_0007)
        );
        assert_eq!(
            read_instruction(&mut s, ia, code::SOFTWARE_VERSION, &ctx),
            Some((1 << 22) | (2 << 12) | 3)
        );
        assert_eq!(read_instruction(&mut s, ia, Instruction::NOP.0, &ctx), None);
        const UNASSIGNED: u8 = 0x3f;
        assert_eq!(read_instruction(&mut s, ia, UNASSIGNED, &ctx), None);
    }
}
