//! Classic libpcap files: reading and writing, and getting the SCION bytes out of the
//! underlay (Ethernet / optional 802.1Q / IPv4 or IPv6 / UDP) of each record.

use std::io::{self, Read, Write};

/// Link type Ethernet.
pub const LINKTYPE_ETHERNET: u32 = 1;
/// Link type raw IP (IPv4 or IPv6, told apart by the version nibble).
pub const LINKTYPE_RAW: u32 = 101;
/// Link type IPv4.
pub const LINKTYPE_IPV4: u32 = 228;
/// Link type IPv6.
pub const LINKTYPE_IPV6: u32 = 229;
/// Link type "user 0": this project writes bare SCION packets (no underlay) with it.
pub const LINKTYPE_SCION: u32 = 147;

const MAGIC_US: u32 = 0xa1b2_c3d4;
const MAGIC_NS: u32 = 0xa1b2_3c4d;
/// Records larger than this are rejected as corrupt (jumbo frames fit easily).
const MAX_RECORD: u32 = 256 * 1024;

/// One captured packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// Capture time, nanoseconds since the Unix epoch.
    pub timestamp_ns: u64,
    /// Captured bytes.
    pub data: Vec<u8>,
    /// Length of the packet on the wire (may exceed `data.len()` if truncated by the capture).
    pub orig_len: u32,
}

/// Streaming pcap reader.
pub struct PcapReader<R: Read> {
    inner: R,
    swapped: bool,
    nanos: bool,
    link_type: u32,
}

fn invalid(msg: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg.into())
}

impl<R: Read> PcapReader<R> {
    /// Reads the global header.
    pub fn new(mut inner: R) -> io::Result<Self> {
        let mut h = [0u8; 24];
        inner.read_exact(&mut h).map_err(|e| {
            if e.kind() == io::ErrorKind::UnexpectedEof {
                invalid("not a pcap file: shorter than the 24-byte global header")
            } else {
                e
            }
        })?;
        let magic_le = u32::from_le_bytes([h[0], h[1], h[2], h[3]]);
        let magic_be = u32::from_be_bytes([h[0], h[1], h[2], h[3]]);
        let (swapped, nanos) = match (magic_le, magic_be) {
            (MAGIC_US, _) => (false, false),
            (MAGIC_NS, _) => (false, true),
            (_, MAGIC_US) => (true, false),
            (_, MAGIC_NS) => (true, true),
            _ if &h[..4] == b"\x0a\x0d\x0d\x0a" => {
                return Err(invalid(
                    "pcapng files are not supported; convert with `editcap -F pcap`",
                ));
            }
            _ => return Err(invalid(format!("not a pcap file: magic {:02x?}", &h[..4]))),
        };
        let mut r = PcapReader {
            inner,
            swapped,
            nanos,
            link_type: 0,
        };
        r.link_type = r.u32(&h[20..24]);
        Ok(r)
    }

    fn u32(&self, b: &[u8]) -> u32 {
        let a = [b[0], b[1], b[2], b[3]];
        if self.swapped {
            u32::from_be_bytes(a)
        } else {
            u32::from_le_bytes(a)
        }
    }

    /// The file's link type.
    pub fn link_type(&self) -> u32 {
        self.link_type
    }

    /// The next record, or `None` at a clean end of file.
    pub fn next_record(&mut self) -> io::Result<Option<Record>> {
        let mut h = [0u8; 16];
        let mut got = 0;
        while got < h.len() {
            let n = self.inner.read(&mut h[got..])?;
            if n == 0 {
                return if got == 0 {
                    Ok(None)
                } else {
                    Err(invalid("pcap record header cut short at end of file"))
                };
            }
            got += n;
        }
        let (sec, frac, incl, orig) = (
            self.u32(&h[0..4]),
            self.u32(&h[4..8]),
            self.u32(&h[8..12]),
            self.u32(&h[12..16]),
        );
        if incl > MAX_RECORD {
            return Err(invalid(format!(
                "pcap record of {incl} bytes: file is corrupt"
            )));
        }
        let mut data = vec![0u8; incl as usize];
        self.inner
            .read_exact(&mut data)
            .map_err(|_| invalid("pcap record data cut short at end of file"))?;
        let frac_ns = if self.nanos {
            u64::from(frac)
        } else {
            u64::from(frac) * 1000
        };
        Ok(Some(Record {
            timestamp_ns: u64::from(sec) * 1_000_000_000 + frac_ns,
            data,
            orig_len: orig,
        }))
    }
}

/// Pcap writer (little endian, nanosecond timestamps).
pub struct PcapWriter<W: Write> {
    inner: W,
}

impl<W: Write> PcapWriter<W> {
    /// Writes the global header for `link_type`.
    pub fn new(mut inner: W, link_type: u32) -> io::Result<Self> {
        let mut h = Vec::with_capacity(24);
        h.extend_from_slice(&MAGIC_NS.to_le_bytes());
        h.extend_from_slice(&2u16.to_le_bytes());
        h.extend_from_slice(&4u16.to_le_bytes());
        h.extend_from_slice(&0i32.to_le_bytes());
        h.extend_from_slice(&0u32.to_le_bytes());
        h.extend_from_slice(&65535u32.to_le_bytes());
        h.extend_from_slice(&link_type.to_le_bytes());
        inner.write_all(&h)?;
        Ok(PcapWriter { inner })
    }

    /// Appends one packet.
    pub fn write(&mut self, timestamp_ns: u64, data: &[u8]) -> io::Result<()> {
        let len = u32::try_from(data.len()).map_err(|_| invalid("packet too large for pcap"))?;
        let sec = u32::try_from(timestamp_ns / 1_000_000_000)
            .map_err(|_| invalid("timestamp beyond 2106"))?;
        let mut h = [0u8; 16];
        h[0..4].copy_from_slice(&sec.to_le_bytes());
        h[4..8].copy_from_slice(&((timestamp_ns % 1_000_000_000) as u32).to_le_bytes());
        h[8..12].copy_from_slice(&len.to_le_bytes());
        h[12..16].copy_from_slice(&len.to_le_bytes());
        self.inner.write_all(&h)?;
        self.inner.write_all(data)
    }

    /// Flushes and returns the inner writer.
    pub fn finish(mut self) -> io::Result<W> {
        self.inner.flush()?;
        Ok(self.inner)
    }
}

/// Underlay facts of one record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Underlay {
    /// Source IP address and UDP port, if the record had an IP/UDP underlay.
    pub src: Option<std::net::SocketAddr>,
    /// Destination IP address and UDP port.
    pub dst: Option<std::net::SocketAddr>,
}

/// Finds the SCION packet in a record of the given link type: the UDP payload of an
/// Ethernet/IP/UDP frame, or the whole record for [`LINKTYPE_SCION`].
pub fn scion_payload(link_type: u32, frame: &[u8]) -> Result<(Underlay, &[u8]), String> {
    let none = Underlay {
        src: None,
        dst: None,
    };
    let ip = match link_type {
        LINKTYPE_SCION => return Ok((none, frame)),
        LINKTYPE_ETHERNET => {
            let mut off = 12;
            let mut ethertype = be16(frame, off).ok_or("Ethernet header truncated")?;
            while ethertype == 0x8100 || ethertype == 0x88a8 {
                off += 4;
                ethertype = be16(frame, off).ok_or("VLAN tag truncated")?;
            }
            if ethertype != 0x0800 && ethertype != 0x86dd {
                return Err(format!("not IP (EtherType {ethertype:#06x})"));
            }
            &frame[off + 2..]
        }
        LINKTYPE_RAW | LINKTYPE_IPV4 | LINKTYPE_IPV6 => frame,
        other => return Err(format!("unsupported pcap link type {other}")),
    };
    let (src_ip, dst_ip, proto, l4): (std::net::IpAddr, std::net::IpAddr, u8, &[u8]) =
        match ip.first().map(|b| b >> 4) {
            Some(4) => {
                let ihl = usize::from(ip[0] & 0xf) * 4;
                if ihl < 20 || ip.len() < ihl {
                    return Err("IPv4 header truncated".into());
                }
                let total = usize::from(be16(ip, 2).unwrap_or(0)).clamp(ihl, ip.len());
                let s: [u8; 4] = ip[12..16].try_into().unwrap_or_default();
                let d: [u8; 4] = ip[16..20].try_into().unwrap_or_default();
                (s.into(), d.into(), ip[9], &ip[ihl..total])
            }
            Some(6) => {
                if ip.len() < 40 {
                    return Err("IPv6 header truncated".into());
                }
                let s: [u8; 16] = ip[8..24].try_into().unwrap_or_default();
                let d: [u8; 16] = ip[24..40].try_into().unwrap_or_default();
                let plen = usize::from(be16(ip, 4).unwrap_or(0));
                (
                    s.into(),
                    d.into(),
                    ip[6],
                    &ip[40..(40 + plen).min(ip.len())],
                )
            }
            _ => return Err("not an IPv4 or IPv6 packet".into()),
        };
    if proto != 17 {
        return Err(format!("not UDP (IP protocol {proto})"));
    }
    if l4.len() < 8 {
        return Err("UDP header truncated".into());
    }
    let (sport, dport) = (be16(l4, 0).unwrap_or(0), be16(l4, 2).unwrap_or(0));
    let udp_len = usize::from(be16(l4, 4).unwrap_or(0)).clamp(8, l4.len());
    Ok((
        Underlay {
            src: Some(std::net::SocketAddr::new(src_ip, sport)),
            dst: Some(std::net::SocketAddr::new(dst_ip, dport)),
        },
        &l4[8..udp_len],
    ))
}

fn be16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*b.get(at)?, *b.get(at + 1)?]))
}

/// Wraps a SCION packet in Ethernet/IPv4/UDP (checksum 0 for UDP, valid IPv4 header checksum).
pub fn ethernet_ipv4_udp(
    src: std::net::SocketAddrV4,
    dst: std::net::SocketAddrV4,
    payload: &[u8],
) -> Vec<u8> {
    let mut f = Vec::with_capacity(42 + payload.len());
    f.extend_from_slice(&[0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1, 0x08, 0x00]);
    let total = (20 + 8 + payload.len()) as u16;
    let mut ip = [0u8; 20];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&total.to_be_bytes());
    ip[8] = 64;
    ip[9] = 17;
    ip[12..16].copy_from_slice(&src.ip().octets());
    ip[16..20].copy_from_slice(&dst.ip().octets());
    let mut sum: u32 = ip
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], c[1]])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    ip[10..12].copy_from_slice(&(!(sum as u16)).to_be_bytes());
    f.extend_from_slice(&ip);
    f.extend_from_slice(&src.port().to_be_bytes());
    f.extend_from_slice(&dst.port().to_be_bytes());
    f.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
    f.extend_from_slice(&[0, 0]);
    f.extend_from_slice(payload);
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_then_read_round_trip_with_underlay() {
        let payload = [1u8, 2, 3, 4, 5];
        let frame = ethernet_ipv4_udp(
            "10.0.0.1:50000".parse().unwrap(),
            "10.0.0.2:30042".parse().unwrap(),
            &payload,
        );
        let mut w = PcapWriter::new(Vec::new(), LINKTYPE_ETHERNET).unwrap();
        w.write(1_704_067_800_123_456_789, &frame).unwrap();
        let bytes = w.finish().unwrap();
        let mut r = PcapReader::new(&bytes[..]).unwrap();
        assert_eq!(r.link_type(), LINKTYPE_ETHERNET);
        let rec = r.next_record().unwrap().unwrap();
        assert_eq!(rec.timestamp_ns, 1_704_067_800_123_456_789);
        let (u, scion) = scion_payload(r.link_type(), &rec.data).unwrap();
        assert_eq!(scion, &payload);
        assert_eq!(u.dst.unwrap().to_string(), "10.0.0.2:30042");
        assert!(r.next_record().unwrap().is_none());
    }

    #[test]
    fn bad_files_are_errors_not_panics() {
        assert!(PcapReader::new(&b"short"[..]).is_err());
        assert!(PcapReader::new(&[0u8; 24][..]).is_err());
        let mut w = PcapWriter::new(Vec::new(), LINKTYPE_SCION).unwrap();
        w.write(0, &[9; 10]).unwrap();
        let bytes = w.finish().unwrap();
        for cut in 25..bytes.len() {
            let mut r = PcapReader::new(&bytes[..cut]).unwrap();
            assert!(r.next_record().is_err(), "cut at {cut}");
        }
        for cut in 0..42 {
            let frame = ethernet_ipv4_udp(
                "10.0.0.1:1".parse().unwrap(),
                "10.0.0.2:2".parse().unwrap(),
                &[],
            );
            let _ = scion_payload(LINKTYPE_ETHERNET, &frame[..cut]);
        }
    }
}
