//! Human-readable, layer-by-layer printing of a SCION packet, ID-INT included. Works in
//! `no_std` (it only needs `core::fmt`); the fuzz target uses it to exercise every accessor.

use core::fmt::{self, Display, Formatter};

use crate::ext::{ExtHeader, opt_type};
use crate::idint::{Entry, IdInt, MainOption, Verifier};
use crate::packet::{L4, Packet, PathView};
use crate::path::{HopField, InfoField, ScionPath};
use crate::scmp::ScmpRepr;
use crate::spao::SpaoRepr;

/// Displays every layer of a packet; a parse error is printed in place of the layers that
/// could not be read.
#[derive(Debug, Clone, Copy)]
pub struct PrettyPacket<'a> {
    bytes: &'a [u8],
}

impl<'a> PrettyPacket<'a> {
    /// Wraps the packet bytes (SCION common header first).
    pub const fn new(bytes: &'a [u8]) -> Self {
        PrettyPacket { bytes }
    }

    /// Whether the packet parses completely, ID-INT included.
    pub fn is_complete(&self) -> bool {
        let Ok(p) = Packet::parse(self.bytes) else {
            return false;
        };
        let idint_ok = p
            .hop_by_hop()
            .is_none_or(|h| IdInt::locate(h.into_inner()).is_ok());
        idint_ok && p.payload_len_matches()
    }
}

struct Hex<'a>(&'a [u8]);

impl Display for Hex<'_> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        for b in self.0 {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

fn info(f: &mut Formatter<'_>, i: usize, x: &InfoField) -> fmt::Result {
    writeln!(
        f,
        "    InfoField {i}: C={} P={} SegID={:#06x} Timestamp={}",
        u8::from(x.cons_dir),
        u8::from(x.peer),
        x.seg_id,
        x.timestamp
    )
}

fn hop(f: &mut Formatter<'_>, j: usize, h: &HopField, current: bool) -> fmt::Result {
    writeln!(
        f,
        "    HopField {j}{}: ConsIngress={} ConsEgress={} ExpTime={} MAC={}{}{}",
        if current { " (current)" } else { "" },
        h.cons_ingress,
        h.cons_egress,
        h.exp_time,
        Hex(&h.mac),
        if h.ingress_alert {
            " [ingress alert]"
        } else {
            ""
        },
        if h.egress_alert {
            " [egress alert]"
        } else {
            ""
        },
    )
}

fn scion_path(f: &mut Formatter<'_>, p: &ScionPath<&[u8]>) -> fmt::Result {
    let m = p.meta();
    writeln!(
        f,
        "    CurrINF={} CurrHF={} SegLen={:?} ({} hops)",
        m.curr_inf,
        m.curr_hf,
        m.seg_len,
        m.num_hops()
    )?;
    for i in 0..m.num_infos() {
        match p.info(i) {
            Ok(x) => info(f, i, &x)?,
            Err(e) => writeln!(f, "    InfoField {i}: {e}")?,
        }
    }
    for j in 0..m.num_hops() {
        match p.hop(j) {
            Ok(h) => hop(f, j, &h, j == usize::from(m.curr_hf))?,
            Err(e) => writeln!(f, "    HopField {j}: {e}")?,
        }
    }
    Ok(())
}

fn idint(f: &mut Formatter<'_>, hbh: &[u8]) -> fmt::Result {
    let s = match IdInt::locate(hbh) {
        Ok(Some(s)) => s,
        Ok(None) => return Ok(()),
        Err(e) => return writeln!(f, "  ID-INT: malformed: {e}"),
    };
    let m: MainOption<&[u8]> = s.main();
    writeln!(
        f,
        "  ID-INT main option: flags{}{}{}{} mode={:?} delay_hops={} stack={}B used={}B free={}B TOS={}",
        if m.infrastructure() { " I" } else { "" },
        if m.discard() { " D" } else { "" },
        if m.encrypt() { " E" } else { "" },
        if m.stack_full() { " X(stack full)" } else { "" },
        m.mode(),
        m.delay_hops(),
        m.stack_len(),
        s.used_len(),
        s.free_len(),
        m.tos_words(),
    )?;
    match m.verifier() {
        Verifier::ThirdParty { ia, host } => writeln!(f, "    verifier: {ia},{host}")?,
        v => writeln!(f, "    verifier: {v:?}")?,
    }
    writeln!(
        f,
        "    bitmap={:#x} instructions={:?} aggregation={:?}",
        m.inst_bitmap(),
        m.instructions().map(|i| i.0),
        m.aggregation_functions()
    )?;
    let insts = m.instructions();
    for i in insts.iter().filter(|i| i.0 != 0) {
        match i.info() {
            Some(r) => writeln!(
                f,
                "      {:#04x}: {} ({} B, {:?}, {})",
                r.code, r.name, r.size, r.stage, r.unit
            )?,
            None => writeln!(f, "      {:#04x}: unassigned instruction", i.0)?,
        }
    }
    writeln!(
        f,
        "    source timestamp={} ns port={}",
        m.source_timestamp(),
        m.source_port()
    )?;
    for (n, (_, e)) in s.entries().enumerate() {
        entry(f, n, &e, &insts)?;
    }
    Ok(())
}

fn entry(
    f: &mut Formatter<'_>,
    n: usize,
    e: &Entry<&[u8]>,
    insts: &[crate::idint::Instruction; 4],
) -> fmt::Result {
    write!(f, "    entry {n}: hop={}", e.hop())?;
    for (set, name) in [
        (e.is_source(), "S"),
        (e.ingress(), "I"),
        (e.egress(), "E"),
        (e.aggregated(), "A"),
        (e.encrypted(), "C"),
    ] {
        if set {
            write!(f, " {name}")?;
        }
    }
    write!(f, " len={} MAC={}", e.total_len(), Hex(&e.mac()))?;
    if let Some(n) = e.nonce() {
        write!(f, " nonce={}", Hex(&n))?;
    }
    writeln!(f)?;
    if e.encrypted() {
        return writeln!(f, "      metadata encrypted ({} bytes)", e.metadata_len());
    }
    let Ok(md) = e.metadata() else {
        return writeln!(f, "      metadata unreadable");
    };
    if let Some(v) = md.node_id {
        writeln!(f, "      node id={v}")?;
    }
    if let Some(v) = md.node_count {
        writeln!(f, "      node count={v}")?;
    }
    if let Some(v) = md.ingress_if {
        writeln!(f, "      ingress if={v}")?;
    }
    if let Some(v) = md.egress_if {
        writeln!(f, "      egress if={v}")?;
    }
    for (k, s) in md.slots.iter().enumerate() {
        if let Some(s) = s {
            let name = insts[k].info().map_or("?", |r| r.name);
            writeln!(
                f,
                "      slot {} ({name}) = {} ({} B)",
                k + 1,
                s.value,
                s.len
            )?;
        }
    }
    Ok(())
}

fn extension(f: &mut Formatter<'_>, name: &str, off: usize, h: &ExtHeader<&[u8]>) -> fmt::Result {
    writeln!(
        f,
        "{name} at {off}: NextHdr={} len={}",
        h.next_header(),
        h.header_len()
    )?;
    for o in h.options() {
        match o {
            Ok(o) if o.opt_type == opt_type::PAD1 || o.opt_type == opt_type::PADN => {
                writeln!(f, "  padding at {} ({} B)", o.offset, o.total_len())?
            }
            Ok(o) if o.opt_type == opt_type::SPAO && name == "E2E" => match SpaoRepr::parse(o.data)
            {
                Ok(s) => writeln!(
                    f,
                    "  SPAO: SPI={:#010x} algorithm={} timestamp={} authenticator={}",
                    s.spi.0,
                    s.algorithm,
                    s.timestamp,
                    Hex(s.authenticator)
                )?,
                Err(e) => writeln!(f, "  SPAO: {e}")?,
            },
            Ok(o) if matches!(o.opt_type, opt_type::IDINT_MAIN | opt_type::IDINT_ENTRY) => {}
            Ok(o) => writeln!(
                f,
                "  option type={:#04x} at {} data={}",
                o.opt_type,
                o.offset,
                Hex(o.data)
            )?,
            Err(e) => writeln!(f, "  {e}")?,
        }
    }
    if name == "HBH" {
        idint(f, h.into_inner())?;
    }
    Ok(())
}

impl Display for PrettyPacket<'_> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let p = match Packet::parse(self.bytes) {
            Ok(p) => p,
            Err(e) => return writeln!(f, "error: {e}"),
        };
        let h = &p.header;
        writeln!(
            f,
            "SCION v{} TC={:#04x} FlowID={:#x} NextHdr={:?} HdrLen={} PayloadLen={} PathType={:?}",
            h.version(),
            h.traffic_class(),
            h.flow_id().value(),
            h.next_header(),
            h.header_len(),
            h.payload_len(),
            h.path_type()
        )?;
        writeln!(
            f,
            "  Dst {},{}  Src {},{}",
            h.dst_ia(),
            h.dst_host(),
            h.src_ia(),
            h.src_host()
        )?;
        if !p.payload_len_matches() {
            writeln!(
                f,
                "  warning: PayloadLen does not match the packet ({} bytes missing, {} trailing)",
                p.missing, p.trailing
            )?;
        }
        match p.path {
            PathView::Empty => writeln!(f, "Path: empty")?,
            PathView::Scion(s) => {
                writeln!(f, "Path: SCION")?;
                scion_path(f, &s)?;
            }
            PathView::OneHop(o) => {
                writeln!(f, "Path: OneHop")?;
                info(f, 0, &o.info)?;
                hop(f, 0, &o.first, false)?;
                hop(f, 1, &o.second, false)?;
            }
            PathView::Epic(e) => {
                writeln!(
                    f,
                    "Path: EPIC-HP EpicTS={} Counter={} PHVF={} LHVF={}",
                    e.epic_ts(),
                    e.counter(),
                    Hex(&e.phvf()),
                    Hex(&e.lhvf())
                )?;
                scion_path(f, &e.scion_path())?;
            }
        }
        if let Some((off, h)) = p.hbh {
            extension(f, "HBH", off, &h)?;
        }
        if let Some((off, h)) = p.e2e {
            extension(f, "E2E", off, &h)?;
        }
        match p.l4 {
            L4::Udp(u) => writeln!(
                f,
                "UDP {} -> {} len={} checksum={:#06x} ({})",
                u.src_port(),
                u.dst_port(),
                u.len(),
                u.checksum(),
                if u.verify_checksum(h) {
                    "valid"
                } else {
                    "INVALID"
                }
            )?,
            L4::Scmp(s) => {
                let valid = if s.verify_checksum(h) {
                    "valid"
                } else {
                    "INVALID"
                };
                match ScmpRepr::parse(s.into_inner()) {
                    Ok(r) => writeln!(
                        f,
                        "SCMP {} (checksum {:#06x} {valid})",
                        ScmpLine(&r),
                        s.checksum()
                    )?,
                    Err(e) => writeln!(f, "SCMP: {e}")?,
                }
            }
            L4::Other(proto, b) => writeln!(f, "L4 {proto:?}: {} bytes", b.len())?,
        }
        Ok(())
    }
}

struct ScmpLine<'a, 'b>(&'a ScmpRepr<'b>);

impl Display for ScmpLine<'_, '_> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match *self.0 {
            ScmpRepr::DestinationUnreachable { code, quote } => {
                write!(
                    f,
                    "Destination Unreachable code={code} quote={}B",
                    quote.len()
                )
            }
            ScmpRepr::PacketTooBig { mtu, quote, .. } => {
                write!(f, "Packet Too Big MTU={mtu} quote={}B", quote.len())
            }
            ScmpRepr::ParameterProblem {
                code,
                pointer,
                quote,
            } => {
                write!(
                    f,
                    "Parameter Problem {code:?} pointer={pointer} quote={}B",
                    quote.len()
                )
            }
            ScmpRepr::ExternalInterfaceDown { ia, interface, .. } => {
                write!(f, "External Interface Down {ia} interface={interface}")
            }
            ScmpRepr::InternalConnectivityDown {
                ia,
                ingress,
                egress,
                ..
            } => {
                write!(
                    f,
                    "Internal Connectivity Down {ia} ingress={ingress} egress={egress}"
                )
            }
            ScmpRepr::Echo {
                reply,
                id,
                seq,
                data,
                ..
            } => write!(
                f,
                "Echo {} id={id} seq={seq} data={}B",
                if reply { "Reply" } else { "Request" },
                data.len()
            ),
            ScmpRepr::Traceroute {
                reply,
                id,
                seq,
                ia,
                interface,
                ..
            } => write!(
                f,
                "Traceroute {} id={id} seq={seq} {ia} interface={interface}",
                if reply { "Reply" } else { "Request" }
            ),
            ScmpRepr::Other {
                msg_type,
                code,
                body,
            } => {
                write!(f, "type={msg_type} code={code} body={}B", body.len())
            }
        }
    }
}
