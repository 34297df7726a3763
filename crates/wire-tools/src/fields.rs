//! Every field of a SCION packet as idint-wire decodes it, named and formatted like the
//! Wireshark dissector `tools/wireshark/scion-idint.lua` shows it in `tshark -T json`: the
//! reference the dissector is tested against (`tests/dissector.rs`), and the
//! `idint-decode --fields` output.
//!
//! Fields come in dissection order (SCION header, address header, path, extension headers and
//! their options, layer 4). Unsigned integers are decimal, except the fields the dissector
//! shows in hex (`0x` and the field's full width); flags are `1`/`0`; byte strings are
//! lower-case hex with `:` between bytes; ISD-AS and AS numbers in SCION's text form. The
//! quoted packet of an SCMP error is one byte string (the dissector decodes it best-effort
//! below that field). BFD is left to Wireshark's own dissector (no `scion.*` fields).

use std::fmt::Write as _;

use idint_wire::ext::{ExtHeader, opt_type};
use idint_wire::idint::entry::Entry;
use idint_wire::idint::{IdInt, MainOption, Verifier};
use idint_wire::packet::{L4, Packet, PathView};
use idint_wire::path::{HopField, InfoField, ScionPath};
use idint_wire::scion::NextHdr;
use idint_wire::scmp::{ScmpRepr, block_len};
use idint_wire::spao::SpaoRepr;
use idint_wire::{HostAddr, IsdAsn};

/// The decoded fields of one packet.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fields {
    /// `(field name, value)` in dissection order.
    pub fields: Vec<(&'static str, String)>,
    /// Why the packet is malformed, if it is (then `fields` may stop early).
    pub malformed: Option<String>,
}

impl Fields {
    fn push(&mut self, name: &'static str, value: impl ToString) {
        self.fields.push((name, value.to_string()));
    }

    fn flag(&mut self, name: &'static str, set: bool) {
        self.push(name, u8::from(set));
    }

    fn bytes(&mut self, name: &'static str, b: &[u8]) {
        self.push(name, colon_hex(b));
    }

    fn malformed(&mut self, why: impl ToString) {
        if self.malformed.is_none() {
            self.malformed = Some(why.to_string());
        }
    }

    /// The fields as one JSON object: `{"malformed": null|"why", "fields": [[name, value], ...]}`.
    pub fn to_json(&self) -> String {
        let mut s = String::from("{\"malformed\":");
        match &self.malformed {
            Some(m) => json_str(&mut s, m),
            None => s.push_str("null"),
        }
        s.push_str(",\"fields\":[");
        for (i, (k, v)) in self.fields.iter().enumerate() {
            if i > 0 {
                s.push(',');
            }
            s.push('[');
            json_str(&mut s, k);
            s.push(',');
            json_str(&mut s, v);
            s.push(']');
        }
        s.push_str("]}");
        s
    }
}

fn json_str(out: &mut String, v: &str) {
    out.push('"');
    for c in v.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// `aa:bb:cc`.
pub fn colon_hex(b: &[u8]) -> String {
    let mut s = String::with_capacity(b.len() * 3);
    for (i, x) in b.iter().enumerate() {
        if i > 0 {
            s.push(':');
        }
        let _ = write!(s, "{x:02x}");
    }
    s
}

fn hex16(v: u16) -> String {
    format!("{v:#06x}")
}

/// Decodes `bytes` (a SCION packet, common header first) into its fields.
pub fn decode(bytes: &[u8]) -> Fields {
    let mut f = Fields::default();
    let p = match Packet::parse(bytes) {
        Ok(p) => p,
        Err(e) => {
            f.malformed(e);
            return f;
        }
    };
    let h = &p.header;
    f.push("scion.version", h.version());
    f.push("scion.traffic_class", h.traffic_class());
    f.push("scion.flow_id", h.flow_id().value());
    f.push("scion.next_hdr", u8::from(h.next_header()));
    f.push("scion.hdr_len", h.hdr_len_raw());
    f.push("scion.payload_len", h.payload_len());
    f.push("scion.path_type", u8::from(h.path_type()));
    let (dt, st) = (h.dst_addr_type(), h.src_addr_type());
    f.push("scion.dst_type", dt.host_type());
    f.push("scion.dst_len", dt.len_code());
    f.push("scion.src_type", st.host_type());
    f.push("scion.src_len", st.len_code());
    f.push("scion.rsv", h.reserved());
    ia(
        &mut f,
        h.dst_ia(),
        ["scion.dst_ia", "scion.dst_isd", "scion.dst_as"],
    );
    ia(
        &mut f,
        h.src_ia(),
        ["scion.src_ia", "scion.src_isd", "scion.src_as"],
    );
    host(
        &mut f,
        h.dst_host(),
        h.dst_host_bytes(),
        [
            "scion.dst_host_ipv4",
            "scion.dst_host_ipv6",
            "scion.dst_host_svc",
            "scion.dst_host_raw",
        ],
    );
    host(
        &mut f,
        h.src_host(),
        h.src_host_bytes(),
        [
            "scion.src_host_ipv4",
            "scion.src_host_ipv6",
            "scion.src_host_svc",
            "scion.src_host_raw",
        ],
    );
    match p.path {
        PathView::Empty => {}
        PathView::Scion(s) => scion_path(&mut f, &s),
        PathView::OneHop(o) => {
            info(&mut f, &o.info);
            hop(&mut f, &o.first);
            hop(&mut f, &o.second);
        }
        PathView::Epic(e) => {
            f.push("scion.path.epic.timestamp", e.epic_ts());
            f.push("scion.path.epic.counter", e.counter());
            f.bytes("scion.path.epic.phvf", &e.phvf());
            f.bytes("scion.path.epic.lhvf", &e.lhvf());
            scion_path(&mut f, &e.scion_path());
        }
    }
    if !p.payload_len_matches() {
        f.malformed(format_args!(
            "PayloadLen {}: {} bytes missing, {} trailing",
            h.payload_len(),
            p.missing,
            p.trailing
        ));
    }
    if let Some((_, e)) = p.hbh
        && !extension(&mut f, &e, true)
    {
        return f;
    }
    if let Some((_, e)) = p.e2e
        && !extension(&mut f, &e, false)
    {
        return f;
    }
    match p.l4 {
        L4::Udp(u) => {
            f.push("scion.udp.srcport", u.src_port());
            f.push("scion.udp.dstport", u.dst_port());
            f.push("scion.udp.length", u.len());
            f.push("scion.udp.checksum", hex16(u.checksum()));
            let b = u.into_inner();
            let end = usize::from(u.len());
            if end > 8 {
                f.bytes("scion.payload", &b[8..end]);
            }
        }
        L4::Scmp(s) => scmp(&mut f, s.into_inner()),
        L4::Other(NextHdr::Bfd, b) if !b.is_empty() => {}
        L4::Other(_, b) => {
            if !b.is_empty() {
                f.bytes("scion.payload", b);
            }
        }
    }
    f
}

fn ia(f: &mut Fields, ia: IsdAsn, names: [&'static str; 3]) {
    f.push(names[0], ia);
    f.push(names[1], ia.isd().0);
    f.push(names[2], ia.asn());
}

fn host(f: &mut Fields, h: HostAddr, raw: &[u8], names: [&'static str; 4]) {
    match h {
        HostAddr::V4(a) => f.push(names[0], a),
        HostAddr::V6(a) => f.push(names[1], a),
        HostAddr::Svc(s) => f.push(names[2], hex16(s.0)),
        HostAddr::Other { .. } => f.bytes(names[3], raw),
    }
}

fn info(f: &mut Fields, x: &InfoField) {
    f.flag("scion.path.info.peer", x.peer);
    f.flag("scion.path.info.cons_dir", x.cons_dir);
    f.push("scion.path.info.seg_id", hex16(x.seg_id));
    f.push("scion.path.info.timestamp", x.timestamp);
}

fn hop(f: &mut Fields, h: &HopField) {
    f.flag("scion.path.hop.ingress_alert", h.ingress_alert);
    f.flag("scion.path.hop.egress_alert", h.egress_alert);
    f.push("scion.path.hop.exp_time", h.exp_time);
    f.push("scion.path.hop.cons_ingress", h.cons_ingress);
    f.push("scion.path.hop.cons_egress", h.cons_egress);
    f.bytes("scion.path.hop.mac", &h.mac);
}

fn scion_path(f: &mut Fields, p: &ScionPath<&[u8]>) {
    let m = p.meta();
    f.push("scion.path.curr_inf", m.curr_inf);
    f.push("scion.path.curr_hf", m.curr_hf);
    f.push("scion.path.rsv", m.reserved);
    f.push("scion.path.seg0_len", m.seg_len[0]);
    f.push("scion.path.seg1_len", m.seg_len[1]);
    f.push("scion.path.seg2_len", m.seg_len[2]);
    for i in 0..m.num_infos() {
        match p.info(i) {
            Ok(x) => info(f, &x),
            Err(e) => f.malformed(e),
        }
    }
    for j in 0..m.num_hops() {
        match p.hop(j) {
            Ok(h) => hop(f, &h),
            Err(e) => f.malformed(e),
        }
    }
}

/// One extension header and its options; `false` if it is malformed (decoding stops).
fn extension(f: &mut Fields, e: &ExtHeader<&[u8]>, hbh: bool) -> bool {
    let (nh, el) = if hbh {
        ("scion.hbh.next_hdr", "scion.hbh.ext_len")
    } else {
        ("scion.e2e.next_hdr", "scion.e2e.ext_len")
    };
    f.push(nh, e.next_header());
    f.push(el, e.ext_len());
    let b: &[u8] = e.into_inner();
    let mut main: Option<[u8; 4]> = None;
    for o in e.options() {
        let o = match o {
            Ok(o) => o,
            Err(err) => {
                f.malformed(err);
                return false;
            }
        };
        f.push("scion.opt.type", o.opt_type);
        if o.opt_type == opt_type::PAD1 {
            continue;
        }
        f.push("scion.opt.len", o.data.len());
        let raw = &b[o.offset..o.offset + o.total_len()];
        if hbh && o.opt_type == opt_type::IDINT_MAIN && main.is_none() {
            match MainOption::new_checked(raw) {
                Ok(m) => {
                    main_option(f, &m);
                    main = Some(m.instructions().map(|i| i.0));
                }
                Err(err) => {
                    f.malformed(err);
                    return false;
                }
            }
        } else if hbh && o.opt_type == opt_type::IDINT_ENTRY {
            match Entry::new_checked(raw) {
                Ok(en) => entry(f, &en),
                Err(err) => {
                    f.malformed(err);
                    return false;
                }
            }
        } else if !hbh && o.opt_type == opt_type::SPAO {
            match SpaoRepr::parse(o.data) {
                Ok(s) => {
                    f.push("scion.spao.spi", s.spi.0);
                    f.push("scion.spao.algorithm", s.algorithm);
                    f.push("scion.spao.timestamp", s.timestamp);
                    if !s.authenticator.is_empty() {
                        f.bytes("scion.spao.authenticator", s.authenticator);
                    }
                }
                Err(err) => {
                    f.malformed(err);
                    return false;
                }
            }
        } else if o.opt_type != opt_type::PADN && !o.data.is_empty() {
            f.bytes("scion.opt.data", o.data);
        }
    }
    if main.is_some() {
        // The structure a router and a verifier rely on: IdInt::locate and the full check.
        match IdInt::locate(b) {
            Ok(Some(s)) => {
                if let Err(err) = s.check() {
                    f.malformed(err);
                    return false;
                }
            }
            Ok(None) => {}
            Err(err) => {
                f.malformed(err);
                return false;
            }
        }
    }
    true
}

fn main_option(f: &mut Fields, m: &MainOption<&[u8]>) {
    let raw = m.as_bytes();
    f.push("scion.idint.version", m.version());
    f.flag("scion.idint.flags.infrastructure", m.infrastructure());
    f.flag("scion.idint.flags.discard", m.discard());
    f.flag("scion.idint.flags.encrypt", m.encrypt());
    f.flag("scion.idint.flags.stack_full", m.stack_full());
    f.flag("scion.idint.flags.reserved", m.flags() & 1 != 0);
    f.push("scion.idint.mode", m.mode() as u8);
    f.push("scion.idint.verifier", m.verifier_code());
    let vt = m.verifier_addr_type();
    f.push("scion.idint.verifier_type", vt.host_type());
    f.push("scion.idint.verifier_len", vt.len_code());
    f.push("scion.idint.stack_len", m.stack_len_words());
    f.push("scion.idint.tos", m.tos_words());
    f.push("scion.idint.delay_hops", m.delay_hops());
    let bm = m.inst_bitmap();
    f.push("scion.idint.inst_bitmap", format!("{bm:#06x}"));
    f.flag("scion.idint.inst_bitmap.node_id", bm & 0x8 != 0);
    f.flag("scion.idint.inst_bitmap.node_count", bm & 0x4 != 0);
    f.flag("scion.idint.inst_bitmap.ingress_if", bm & 0x2 != 0);
    f.flag("scion.idint.inst_bitmap.egress_if", bm & 0x1 != 0);
    let afs = m.aggregation_functions();
    for (name, af) in [
        "scion.idint.af1",
        "scion.idint.af2",
        "scion.idint.af3",
        "scion.idint.af4",
    ]
    .into_iter()
    .zip(afs)
    {
        f.push(name, u8::from(af));
    }
    for i in m.instructions() {
        f.push("scion.idint.inst", format!("{:#04x}", i.0));
    }
    f.push("scion.idint.source_ts", m.source_timestamp());
    f.push("scion.idint.source_port", m.source_port());
    if let Verifier::ThirdParty { ia: v_ia, host } = m.verifier() {
        ia(
            f,
            v_ia,
            [
                "scion.idint.verifier_ia",
                "scion.idint.verifier_isd",
                "scion.idint.verifier_as",
            ],
        );
        match host {
            HostAddr::V4(a) => f.push("scion.idint.verifier_ipv4", a),
            HostAddr::V6(a) => f.push("scion.idint.verifier_ipv6", a),
            _ => f.bytes("scion.idint.verifier_raw", &raw[30..]),
        }
    }
}

fn entry(f: &mut Fields, e: &Entry<&[u8]>) {
    f.flag("scion.idint.entry.source", e.is_source());
    f.flag("scion.idint.entry.ingress", e.ingress());
    f.flag("scion.idint.entry.egress", e.egress());
    f.flag("scion.idint.entry.aggregated", e.aggregated());
    f.flag("scion.idint.entry.encrypted", e.encrypted());
    f.push("scion.idint.entry.hop", e.hop());
    f.push("scion.idint.entry.mask", format!("{:#06x}", e.mask()));
    let lens = e.slot_lens();
    for (name, len) in [
        "scion.idint.entry.ml1",
        "scion.idint.entry.ml2",
        "scion.idint.entry.ml3",
        "scion.idint.entry.ml4",
    ]
    .into_iter()
    .zip(lens)
    {
        f.push(name, len / 2);
    }
    if let Some(n) = e.nonce() {
        f.bytes("scion.idint.entry.nonce", &n);
    }
    let b = e.as_bytes();
    let md_start = e.metadata_offset();
    let mac_start = e.total_len() - 4;
    if e.encrypted() {
        if mac_start > md_start {
            f.bytes("scion.idint.entry.encrypted_data", &b[md_start..mac_start]);
        }
    } else {
        match e.metadata() {
            Ok(md) => {
                if let Some(v) = md.node_id {
                    f.push("scion.idint.entry.node_id", v);
                }
                if let Some(v) = md.node_count {
                    f.push("scion.idint.entry.node_count", v);
                }
                if let Some(v) = md.ingress_if {
                    f.push("scion.idint.entry.ingress_if", v);
                }
                if let Some(v) = md.egress_if {
                    f.push("scion.idint.entry.egress_if", v);
                }
                for (name, s) in [
                    "scion.idint.entry.slot1",
                    "scion.idint.entry.slot2",
                    "scion.idint.entry.slot3",
                    "scion.idint.entry.slot4",
                ]
                .into_iter()
                .zip(md.slots)
                {
                    if let Some(s) = s {
                        f.push(name, s.value);
                    }
                }
            }
            Err(err) => f.malformed(err),
        }
        let pad_start = md_start + e.metadata_len();
        if mac_start > pad_start {
            f.bytes("scion.idint.entry.padding", &b[pad_start..mac_start]);
        }
    }
    f.bytes("scion.idint.entry.mac", &e.mac());
}

fn scmp(f: &mut Fields, b: &[u8]) {
    let r = match ScmpRepr::parse(b) {
        Ok(r) => r,
        Err(e) => {
            f.malformed(e);
            return;
        }
    };
    let (t, code) = (b[0], b[1]);
    f.push("scion.scmp.type", t);
    f.push("scion.scmp.code", code);
    f.push(
        "scion.scmp.checksum",
        hex16(u16::from_be_bytes([b[2], b[3]])),
    );
    let (rest, quoted) = match r {
        ScmpRepr::DestinationUnreachable { quote, .. } => (quote, true),
        ScmpRepr::PacketTooBig { mtu, quote, .. } => {
            f.push("scion.scmp.mtu", mtu);
            (quote, true)
        }
        ScmpRepr::ParameterProblem { pointer, quote, .. } => {
            f.push("scion.scmp.pointer", pointer);
            (quote, true)
        }
        ScmpRepr::ExternalInterfaceDown {
            ia,
            interface,
            quote,
            ..
        } => {
            f.push("scion.scmp.ia", ia);
            f.push("scion.scmp.interface", interface);
            (quote, true)
        }
        ScmpRepr::InternalConnectivityDown {
            ia,
            ingress,
            egress,
            quote,
            ..
        } => {
            f.push("scion.scmp.ia", ia);
            f.push("scion.scmp.ingress_if", ingress);
            f.push("scion.scmp.egress_if", egress);
            (quote, true)
        }
        ScmpRepr::Echo { id, seq, data, .. } => {
            f.push("scion.scmp.id", id);
            f.push("scion.scmp.seq", seq);
            (data, false)
        }
        ScmpRepr::Traceroute {
            id,
            seq,
            ia,
            interface,
            data,
            ..
        } => {
            f.push("scion.scmp.id", id);
            f.push("scion.scmp.seq", seq);
            f.push("scion.scmp.ia", ia);
            f.push("scion.scmp.interface", interface);
            (data, false)
        }
        ScmpRepr::Other { body, .. } => (body, false),
    };
    debug_assert_eq!(rest.len(), b.len() - 4 - block_len(t));
    if !rest.is_empty() {
        if quoted {
            f.bytes("scion.scmp.quote", rest);
        } else {
            f.bytes("scion.scmp.data", rest);
        }
    }
}
