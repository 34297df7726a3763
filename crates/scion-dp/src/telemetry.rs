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

/// Device description items (instructions 0x03, 0x41, 0x42).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DeviceItem {
    /// Role (high byte) and type (low byte), instruction 0x03.
    TypeRole,
    /// Vendor OUI, instruction 0x41.
    Vendor,
    /// Vendor-assigned model, instruction 0x42.
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
        0x01 => u64::from(local_ia.isd().0),
        0x03 => u64::from(source.device(DeviceItem::TypeRole)?),
        0x04 => {
            let (cpu, mem) = source.cpu_memory_usage()?;
            (u64::from(cpu) << 8) | u64::from(mem)
        }
        0x05 => u64::from(source.environment(Environment::CpuTemperature)?),
        0x06 => u64::from(source.environment(Environment::AsicTemperature)?),
        0x07 => u64::from(source.environment(Environment::FanSpeed)?),
        0x08 => u64::from(source.environment(Environment::PowerDraw)?),
        0x09 => u64::from(source.environment(Environment::EnergyMix)?),
        0x41 => u64::from(source.device(DeviceItem::Vendor)?),
        0x42 => u64::from(source.device(DeviceItem::Model)?),
        0x43 => {
            let (ma, mi, pa) = source.software_version()?;
            (u64::from(ma & 0x3ff) << 22) | (u64::from(mi & 0x3ff) << 12) | u64::from(pa & 0xfff)
        }
        0x44 => u64::from(u32::from(source.node_ipv4()?)),
        0x45 => u64::from(source.interface_speed_mbps(i)?),
        0x46 => u64::from(source.interface_speed_mbps(e)?),
        0x47 => u64::from(source.position()?.0.to_bits()),
        0x48 => u64::from(source.position()?.1.to_bits()),
        0x49 => u64::from(source.uptime_s()?),
        0x4a => u64::from(source.energy_per_packet_nj(ctx)?),
        0x4b => u64::from(source.co2_per_packet_pg(ctx)?),
        0x4c => u64::from(source.link_utilisation_kbps(i, Rx)?),
        0x4d => u64::from(source.link_utilisation_kbps(e, Tx)?),
        0x4e => u64::from(source.queue(e, QueueMetric::QueueId)?),
        0x4f => u64::from(source.queue(e, QueueMetric::QueueLen)?),
        0x50 => u64::from(source.queue(e, QueueMetric::QueueLenAvg)?),
        0x51 => u64::from(source.queue(e, QueueMetric::BufferId)?),
        0x52 => u64::from(source.queue(e, QueueMetric::BufferOccupancy)?),
        0x53 => u64::from(source.queue(e, QueueMetric::BufferOccupancyAvg)?),
        0x81 => local_ia.to_u64() & 0xffff_ffff_ffff,
        0x82 => source.ingress_timestamp_ns(ctx)?,
        0x83 => source.egress_timestamp_ns(ctx)?,
        0x84 => source.interface_counter(i, Rx, Packets)?,
        0x85 => source.interface_counter(e, Tx, Packets)?,
        0x86 => source.interface_counter(i, Rx, Drops)?,
        0x87 => source.interface_counter(e, Tx, Drops)?,
        0x88 => source.interface_counter(i, Rx, Bytes)?,
        0x89 => source.interface_counter(e, Tx, Bytes)?,
        0x8a => source.total_counter(Rx, Packets)?,
        0x8b => source.total_counter(Tx, Packets)?,
        0x8c => source.total_counter(Rx, Drops)?,
        0x8d => source.total_counter(Tx, Drops)?,
        0x8e => source.total_counter(Rx, Bytes)?,
        0x8f => source.total_counter(Tx, Bytes)?,
        0xc1 => (u128::from(source.node_ipv6()?) >> 64) as u64,
        0xc2 => u128::from(source.node_ipv6()?) as u64,
        // 0x02 (BR link type) has no agreed encoding; NOP and unassigned codes carry nothing.
        _ => return None,
    };
    Some(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use idint_wire::idint::INSTRUCTIONS;

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
                0x01 => assert_eq!(v, Some(1)),
                0x81 => assert_eq!(v, Some(0xff00_0000_0110)),
                _ => assert_eq!(v, None, "{:#x}", row.code),
            }
        }
        let mut s = Everything;
        assert_eq!(read_instruction(&mut s, ia, 0x82, &ctx), Some(77));
        assert_eq!(read_instruction(&mut s, ia, 0x84, &ctx), Some(100));
        assert_eq!(read_instruction(&mut s, ia, 0x89, &ctx), Some(211));
        assert_eq!(
            read_instruction(&mut s, ia, 0xc1, &ctx),
            Some(0xfd00_0001_0002_0003)
        );
        assert_eq!(
            read_instruction(&mut s, ia, 0xc2, &ctx),
            Some(0x0004_0005_0006_0007)
        );
        assert_eq!(
            read_instruction(&mut s, ia, 0x43, &ctx),
            Some((1 << 22) | (2 << 12) | 3)
        );
        assert_eq!(read_instruction(&mut s, ia, 0x00, &ctx), None);
        assert_eq!(read_instruction(&mut s, ia, 0x3f, &ctx), None);
    }
}
