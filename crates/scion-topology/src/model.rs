//! The topology vocabulary that is not plain addresses: link types and the AS's dispatched
//! end-host ports, as `topology.json` writes them.

use std::fmt;
use std::str::FromStr;

/// SCION link type of an inter-AS interface, from this AS's point of view (`link_to`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LinkType {
    /// Core link (between core ASes).
    Core,
    /// The neighbour is our parent (provider).
    Parent,
    /// The neighbour is our child (customer).
    Child,
    /// Peering link.
    Peer,
}

impl LinkType {
    /// Every link type with its name in `topology.json`.
    const NAMES: [(&'static str, LinkType); 4] = [
        ("core", LinkType::Core),
        ("parent", LinkType::Parent),
        ("child", LinkType::Child),
        ("peer", LinkType::Peer),
    ];

    /// The name `topology.json` uses.
    pub fn name(self) -> &'static str {
        Self::NAMES
            .iter()
            .find(|(_, t)| *t == self)
            .map_or("?", |(n, _)| n)
    }
}

/// A `link_to` value that is not a link type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnknownLinkType;

impl FromStr for LinkType {
    type Err = UnknownLinkType;
    /// Parses `core`, `parent`, `child` or `peer`, case-insensitively (as SCION reads them).
    fn from_str(s: &str) -> Result<Self, UnknownLinkType> {
        Self::NAMES
            .iter()
            .find(|(name, _)| s.eq_ignore_ascii_case(name))
            .map(|(_, t)| *t)
            .ok_or(UnknownLinkType)
    }
}

impl fmt::Display for LinkType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// End-host port range of the AS (`dispatched_ports`): local deliveries to ports outside it go
/// to the default end-host port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DispatchedPorts {
    /// No port is dispatched directly.
    None,
    /// Every port 1-65535.
    All,
    /// An inclusive range, `1 <= start <= end`.
    Range(u16, u16),
}

/// A `dispatched_ports` value that is not `"START-END"` (1 <= START <= END), `"all"` or empty.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BadPortRange;

impl FromStr for DispatchedPorts {
    type Err = BadPortRange;
    /// Parses `"START-END"`, `"all"` or an empty string (none).
    fn from_str(s: &str) -> Result<Self, BadPortRange> {
        let s = s.trim();
        if s.is_empty() {
            return Ok(DispatchedPorts::None);
        }
        if s.eq_ignore_ascii_case("all") {
            return Ok(DispatchedPorts::All);
        }
        let (lo, hi) = s.split_once('-').ok_or(BadPortRange)?;
        let lo: u16 = lo.trim().parse().map_err(|_| BadPortRange)?;
        let hi: u16 = hi.trim().parse().map_err(|_| BadPortRange)?;
        if lo == 0 || lo > hi {
            return Err(BadPortRange);
        }
        Ok(DispatchedPorts::Range(lo, hi))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_types_parse_as_scion_writes_them() {
        for (name, t) in LinkType::NAMES {
            assert_eq!(name.parse(), Ok(t));
            assert_eq!(name.to_uppercase().parse(), Ok(t));
            assert_eq!(t.to_string(), name);
        }
        assert_eq!("sibling".parse::<LinkType>(), Err(UnknownLinkType));
    }

    #[test]
    fn port_ranges() {
        assert_eq!("".parse(), Ok(DispatchedPorts::None));
        assert_eq!(" ALL ".parse(), Ok(DispatchedPorts::All));
        assert_eq!(
            "31000 - 32000".parse(),
            Ok(DispatchedPorts::Range(31000, 32000))
        );
        assert_eq!("5-5".parse(), Ok(DispatchedPorts::Range(5, 5)));
        for bad in ["0-10", "10-5", "1-65536", "x-2", "7", "-"] {
            assert_eq!(bad.parse::<DispatchedPorts>(), Err(BadPortRange), "{bad:?}");
        }
    }
}

/// An interface's `bfd` settings as `topology.json` writes them (every field optional: what
/// is missing falls back to the router's defaults, scionproto's 3 x 200 ms unless configured).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BfdSettings {
    /// `disable`: no BFD session on this link (the link counts as up; BFD packets dropped).
    pub disable: Option<bool>,
    /// `detect_mult`: the detection time multiplier (1..=255).
    pub detect_mult: Option<u8>,
    /// `desired_min_tx_interval`, a Go duration such as `"200ms"`.
    pub desired_min_tx: Option<core::time::Duration>,
    /// `required_min_rx_interval`, a Go duration such as `"200ms"`.
    pub required_min_rx: Option<core::time::Duration>,
}

/// Parses a Go duration of one or more `<integer><unit>` terms (`ns`, `us`, `µs`, `ms`, `s`,
/// `m`, `h`), e.g. `"200ms"` or `"1m30s"`; `None` if malformed or out of range.
pub fn parse_duration(s: &str) -> Option<core::time::Duration> {
    const UNITS: [(&str, u64); 8] = [
        ("ns", 1),
        ("us", 1_000),
        ("µs", 1_000),
        ("μs", 1_000),
        ("ms", 1_000_000),
        ("s", 1_000_000_000),
        ("m", 60_000_000_000),
        ("h", 3_600_000_000_000),
    ];
    if s == "0" {
        return Some(core::time::Duration::ZERO);
    }
    let mut rest = s;
    let mut total: u64 = 0;
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        if digits == 0 {
            return None;
        }
        let n: u64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        // Longest unit first ("ms" before "m").
        let (unit, scale) = UNITS
            .iter()
            .filter(|(u, _)| rest.starts_with(u))
            .max_by_key(|(u, _)| u.len())?;
        rest = &rest[unit.len()..];
        total = total.checked_add(n.checked_mul(*scale)?)?;
    }
    Some(core::time::Duration::from_nanos(total))
}

#[cfg(test)]
mod duration_tests {
    use super::parse_duration;
    use core::time::Duration;

    #[test]
    fn go_durations() {
        assert_eq!(parse_duration("200ms"), Some(Duration::from_millis(200)));
        assert_eq!(parse_duration("1m30s"), Some(Duration::from_secs(90)));
        assert_eq!(parse_duration("50us"), Some(Duration::from_micros(50)));
        assert_eq!(parse_duration("0"), Some(Duration::ZERO));
        for bad in ["", "ms", "200", "2x", "-1s", "1.5s"] {
            assert_eq!(parse_duration(bad), None, "{bad}");
        }
    }
}
