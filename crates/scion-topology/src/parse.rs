//! JSON -> [`Topology`], field by field, with the dotted path of every field in errors.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::Path;

use crate::{BfdSettings, DispatchedPorts, LinkType, parse_duration};
use idint_wire::{IsdAsn, Svc};
use serde_json::{Map, Value};

use crate::{
    AsTopology, BorderRouter, Conflict, FieldError, Format, Interface, MIN_MTU, Topology,
    TopologyError, Underlay, json_keys, router_name,
};

/// Parsing context: the file name and helpers that build errors naming it.
struct Ctx<'a> {
    file: &'a Path,
}

type R<T> = Result<T, TopologyError>;

impl Ctx<'_> {
    fn err<T>(&self, field: &str, reason: FieldError) -> R<T> {
        Err(TopologyError::Field {
            file: self.file.to_path_buf(),
            field: field.to_string(),
            reason,
        })
    }

    fn invalid<T>(&self, field: &str, why: impl Into<String>) -> R<T> {
        self.err(field, FieldError::Invalid(why.into()))
    }

    fn get<'v>(&self, obj: &'v Map<String, Value>, key: &str, path: &str) -> R<&'v Value> {
        match obj.get(key) {
            Some(v) if !v.is_null() => Ok(v),
            _ => self.err(path, FieldError::Missing),
        }
    }

    fn opt<'v>(obj: &'v Map<String, Value>, key: &str) -> Option<&'v Value> {
        obj.get(key).filter(|v| !v.is_null())
    }

    fn obj<'v>(&self, v: &'v Value, path: &str) -> R<&'v Map<String, Value>> {
        v.as_object()
            .map_or_else(|| self.err(path, FieldError::WrongType("an object")), Ok)
    }

    fn str<'v>(&self, v: &'v Value, path: &str) -> R<&'v str> {
        v.as_str()
            .map_or_else(|| self.err(path, FieldError::WrongType("a string")), Ok)
    }

    fn ia(&self, v: &Value, path: &str) -> R<IsdAsn> {
        let s = self.str(v, path)?;
        self.ia_str(s, path)
    }

    /// A concrete ISD-AS: ISD 0 and AS 0 are wildcards ("any"), which name no AS.
    fn ia_str(&self, s: &str, path: &str) -> R<IsdAsn> {
        let ia: IsdAsn = s
            .parse()
            .or_else(|e| self.invalid(path, format!("{s:?}: {e}")))?;
        if ia.isd().0 == 0 || ia.asn().value() == 0 {
            return self.invalid(
                path,
                format!(
                    "{s:?} is a wildcard (ISD 0 or AS 0 means \"any\"); a topology names one \
                     concrete AS"
                ),
            );
        }
        Ok(ia)
    }

    fn u16(&self, v: &Value, path: &str) -> R<u16> {
        match v.as_u64() {
            Some(n) => u16::try_from(n)
                .or_else(|_| self.invalid(path, format!("{n} does not fit in 16 bits"))),
            None => self.err(path, FieldError::WrongType("an integer 0..=65535")),
        }
    }

    fn opt_u16(&self, obj: &Map<String, Value>, key: &str, path: &str) -> R<Option<u16>> {
        Self::opt(obj, key)
            .map(|v| {
                let field = if path.is_empty() {
                    key.to_string()
                } else {
                    format!("{path}.{key}")
                };
                self.u16(v, &field)
            })
            .transpose()
    }

    /// An MTU field: at least [`MIN_MTU`] bytes.
    fn mtu(&self, obj: &Map<String, Value>, key: &str, path: &str) -> R<Option<u16>> {
        let v = self.opt_u16(obj, key, path)?;
        if let Some(m) = v
            && m < MIN_MTU
        {
            let field = if path.is_empty() {
                key.to_string()
            } else {
                format!("{path}.{key}")
            };
            return self.invalid(
                &field,
                format!(
                    "MTU {m} is below the minimum of {MIN_MTU} bytes (the IPv6 minimum link MTU, \
                     which leaves room for the largest SCION header of 1020 bytes plus UDP)"
                ),
            );
        }
        Ok(v)
    }

    /// An interface's optional `bfd` object (`disable`, `detect_mult`,
    /// `desired_min_tx_interval`, `required_min_rx_interval`).
    fn bfd(&self, ifc: &Map<String, Value>, path: &str) -> R<BfdSettings> {
        let Some(v) = Self::opt(ifc, "bfd") else {
            return Ok(BfdSettings::default());
        };
        let bp = format!("{path}.bfd");
        let o = self.obj(v, &bp)?;
        let mut b = BfdSettings::default();
        if let Some(v) = Self::opt(o, "disable") {
            match v.as_bool() {
                Some(d) => b.disable = Some(d),
                None => {
                    return self.err(&format!("{bp}.disable"), FieldError::WrongType("a boolean"));
                }
            }
        }
        if let Some(v) = Self::opt(o, "detect_mult") {
            match v
                .as_u64()
                .and_then(|n| u8::try_from(n).ok())
                .filter(|&n| n > 0)
            {
                Some(n) => b.detect_mult = Some(n),
                None => {
                    return self.invalid(
                        &format!("{bp}.detect_mult"),
                        format!("{v} is not a detection multiplier (1 to 255)"),
                    );
                }
            }
        }
        let dur = |key: &str| -> R<Option<core::time::Duration>> {
            let Some(v) = Self::opt(o, key) else {
                return Ok(None);
            };
            let fp = format!("{bp}.{key}");
            let s = self.str(v, &fp)?;
            match parse_duration(s).filter(|d| !d.is_zero()) {
                Some(d) => Ok(Some(d)),
                None => self.invalid(
                    &fp,
                    format!("{s:?} is not a positive duration (e.g. \"200ms\")"),
                ),
            }
        };
        b.desired_min_tx = dur("desired_min_tx_interval")?;
        b.required_min_rx = dur("required_min_rx_interval")?;
        Ok(b)
    }

    /// A router's optional ID-INT node id `id` (an extension of the format): 32 bits.
    fn node_id(&self, router: &Map<String, Value>, path: &str) -> R<Option<u32>> {
        let Some(v) = Self::opt(router, "id") else {
            return Ok(None);
        };
        match v.as_u64().and_then(|n| u32::try_from(n).ok()) {
            Some(n) => Ok(Some(n)),
            None => self.invalid(
                &format!("{path}.id"),
                format!("{v} is not a node id (0 to {})", u32::MAX),
            ),
        }
    }

    /// An optional `remote_interface_id`: 0 is reserved (no interface).
    fn remote_ifid(&self, obj: &Map<String, Value>, path: &str) -> R<Option<u16>> {
        let v = self.opt_u16(obj, "remote_interface_id", path)?;
        if v == Some(0) {
            return self.invalid(
                &format!("{path}.remote_interface_id"),
                "interface ID 0 is reserved (it means \"no interface\"); give the neighbour's \
                 interface ID or omit the field",
            );
        }
        Ok(v)
    }

    fn addr(&self, v: &Value, path: &str) -> R<SocketAddr> {
        let s = self.str(v, path)?;
        s.parse().or_else(|_| {
            self.invalid(
                path,
                format!("{s:?} is not an \"ip:port\" (IPv6: \"[ip]:port\") address"),
            )
        })
    }

    /// An address another node sends to or this router sends to: a unicast IP (not
    /// unspecified, multicast or broadcast) and a non-zero port. `what` says what it is for.
    fn endpoint(&self, v: &Value, path: &str, what: &str) -> R<SocketAddr> {
        let a = self.unicast(v, path, what)?;
        if a.port() == 0 {
            return self.invalid(
                path,
                format!("{a}: port 0 is not a port one can send to; {what} needs a real port"),
            );
        }
        Ok(a)
    }

    /// An address with a unicast IP (not unspecified, multicast or broadcast), any port.
    fn unicast(&self, v: &Value, path: &str, what: &str) -> R<SocketAddr> {
        let a = self.addr(v, path)?;
        if let Some(kind) = not_unicast(a.ip()) {
            return self.invalid(
                path,
                format!(
                    "{a}: {} is {kind}; {what} must be a unicast address",
                    a.ip()
                ),
            );
        }
        Ok(a)
    }

    /// A local underlay address; `":port"` means any IP of `remote`'s address family. The port
    /// must not be 0 (the neighbour must know it), an explicit IP must not be multicast or
    /// broadcast and must have `remote`'s family (one link, one IP version).
    fn local_addr(
        &self,
        v: &Value,
        path: &str,
        remote: SocketAddr,
        remote_path: &str,
    ) -> R<SocketAddr> {
        let s = self.str(v, path)?;
        let a = if let Some(port) = s.strip_prefix(':') {
            let port: u16 = port
                .parse()
                .or_else(|_| self.invalid(path, format!("{s:?}: bad port")))?;
            let ip = match remote.ip() {
                IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
                IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
            };
            SocketAddr::new(ip, port)
        } else {
            self.addr(v, path)?
        };
        if a.port() == 0 {
            return self.invalid(
                path,
                format!(
                    "{s:?}: port 0 would let the system pick a port, which the neighbour (whose \
                     remote address this is) cannot know"
                ),
            );
        }
        if !a.ip().is_unspecified()
            && let Some(kind) = not_unicast(a.ip())
        {
            return self.invalid(
                path,
                format!("{s:?}: {} is {kind}, not an address of this router", a.ip()),
            );
        }
        if a.is_ipv4() != remote.is_ipv4() {
            let fam = |x: SocketAddr| if x.is_ipv4() { "IPv4" } else { "IPv6" };
            return self.invalid(
                path,
                format!(
                    "{s:?} is {} but the other end ({remote_path} = {remote}) is {}; both ends \
                     of a link use the same IP version",
                    fam(a),
                    fam(remote)
                ),
            );
        }
        Ok(a)
    }

    /// An interface ID key: a decimal number 1..=65535 written canonically (no sign, no
    /// leading zeros, no spaces), so that one interface has one spelling.
    fn ifid(&self, key: &str, path: &str) -> R<u16> {
        if key.is_empty() || !key.bytes().all(|c| c.is_ascii_digit()) {
            return self.invalid(
                path,
                format!("interface ID {key:?} is not a decimal number (digits only)"),
            );
        }
        match key.parse::<u16>() {
            Ok(0) => self.invalid(path, "interface ID 0 is reserved"),
            Ok(id) if id.to_string() != key => self.invalid(
                path,
                format!("interface ID {key:?} has leading zeros; write it as \"{id}\""),
            ),
            Ok(id) => Ok(id),
            Err(_) => self.invalid(
                path,
                format!("interface ID {key:?} does not fit in 16 bits (1..=65535)"),
            ),
        }
    }

    fn link_type(&self, v: &Value, path: &str) -> R<LinkType> {
        let s = self.str(v, path)?;
        s.parse().or_else(|_| {
            self.invalid(
                path,
                format!("{s:?}: link type must be core, parent, child or peer"),
            )
        })
    }

    fn ports(&self, obj: &Map<String, Value>, path: &str) -> R<DispatchedPorts> {
        match Self::opt(obj, "dispatched_ports") {
            None => Ok(DispatchedPorts::None),
            Some(v) => {
                let s = self.str(v, path)?;
                // scionproto reads "-" like "" (no dispatched ports; Go validatePortRange).
                if s.trim() == "-" {
                    return Ok(DispatchedPorts::None);
                }
                s.parse().or_else(|_| {
                    self.invalid(
                        path,
                        format!(
                            "{s:?}: must be \"START-END\" (1 <= START <= END), \"all\", \"-\" or \
                             empty"
                        ),
                    )
                })
            }
        }
    }

    fn core_attr(&self, obj: &Map<String, Value>, path: &str) -> R<Option<bool>> {
        let Some(v) = Self::opt(obj, "attributes") else {
            return Ok(None);
        };
        let Some(list) = v.as_array() else {
            return self.err(path, FieldError::WrongType("a list of strings"));
        };
        let mut core = false;
        for (i, a) in list.iter().enumerate() {
            let s = self.str(a, &format!("{path}[{i}]"))?;
            core |= s.eq_ignore_ascii_case("core");
        }
        Ok(Some(core))
    }
}

/// Why `ip` cannot be a unicast endpoint, if it cannot.
fn not_unicast(ip: IpAddr) -> Option<&'static str> {
    if ip.is_unspecified() {
        Some("the unspecified address")
    } else if ip.is_multicast() {
        Some("a multicast address")
    } else if ip == IpAddr::V4(Ipv4Addr::BROADCAST) {
        Some("the broadcast address")
    } else {
        None
    }
}

/// Whether two local addresses would receive the same packets: same port and the same IP, or
/// one of them the unspecified address (bind to any) of the other's family.
fn overlaps(a: SocketAddr, b: SocketAddr) -> bool {
    a.port() == b.port()
        && a.is_ipv4() == b.is_ipv4()
        && (a.ip() == b.ip() || a.ip().is_unspecified() || b.ip().is_unspecified())
}

/// An interface with the dotted paths of its local and remote underlay fields.
struct Parsed {
    ifc: Interface,
    local_path: String,
    remote_path: String,
}

/// A router from its interfaces: sorted by ID, with the conflicts between its own links'
/// addresses, and an internal address without a port, recorded for
/// [`crate::Topology::check_router`] (they only matter to the router that runs them, so they
/// do not make the file invalid: scionproto's own test topologies give other routers
/// internal addresses with port 0).
fn router(
    id: String,
    node_id: Option<u32>,
    internal_addr: SocketAddr,
    internal_path: &str,
    mut parsed: Vec<Parsed>,
) -> BorderRouter {
    parsed.sort_by_key(|p| p.ifc.id);
    let mut conflicts = Vec::new();
    if internal_addr.port() == 0 {
        conflicts.push(Conflict {
            field: internal_path.to_string(),
            reason: format!(
                "{internal_addr}: port 0 is not a port one can send to; {INTERNAL_ADDR} needs a \
                 real port"
            ),
        });
    }
    for (k, p) in parsed.iter().enumerate() {
        let u = p.ifc.underlay;
        if u.local == u.remote {
            conflicts.push(Conflict {
                field: p.remote_path.clone(),
                reason: format!(
                    "{} is also this interface's local address ({}); the two ends of a link \
                     cannot be one UDP socket",
                    u.remote, p.local_path
                ),
            });
        }
        if let Some(q) = parsed[..k]
            .iter()
            .find(|q| overlaps(q.ifc.underlay.local, u.local))
        {
            conflicts.push(Conflict {
                field: p.local_path.clone(),
                reason: format!(
                    "{} overlaps interface {}'s local address {} ({}); the router tells its \
                     links apart by local address, so packets of one would arrive as the other's",
                    u.local, q.ifc.id, q.ifc.underlay.local, q.local_path
                ),
            });
        }
    }
    BorderRouter {
        id,
        internal_addr,
        node_id,
        interfaces: parsed.into_iter().map(|p| p.ifc).collect(),
        conflicts,
    }
}

const INTERNAL_ADDR: &str = "the router's internal address (its SCION host address, where \
                             AS-internal traffic reaches it)";
const REMOTE_ADDR: &str = "the neighbour router's end of the link";

pub(crate) fn topology(text: &str, file: &Path) -> R<Topology> {
    let cx = Ctx { file };
    let root: Value = serde_json::from_str(text).map_err(|e| TopologyError::Json {
        file: file.to_path_buf(),
        reason: e.to_string(),
    })?;
    // JSON readers keep one of two equal keys: refuse instead of dropping one silently.
    if let Some(d) = json_keys::first_duplicate(text) {
        return cx.invalid(
            &d.path,
            format!(
                "key {:?} appears twice in the same object (again on line {}); only one can be \
                 meant",
                d.key, d.line
            ),
        );
    }
    let root = cx.obj(&root, "(top level)")?;
    let (format, ases) = match cx.get(root, "isd_as", "isd_as")? {
        Value::String(_) => (Format::Reference, vec![reference(&cx, root)?]),
        Value::Object(map) => {
            if Ctx::opt(root, "border_routers").is_some() {
                return cx.invalid(
                    "border_routers",
                    "a reference-format key in an appliance-format file (`isd_as` is an \
                     object): each AS there describes its router under `router`",
                );
            }
            let mut ases: Vec<(&str, AsTopology)> = Vec::new();
            for (key, body) in map {
                let a = appliance(&cx, key, body)?;
                if let Some((other, _)) = ases.iter().find(|(_, b)| b.ia == a.ia) {
                    return cx.invalid(
                        &format!("isd_as.{key}"),
                        format!(
                            "the same AS as \"{other}\" ({}), written differently; an AS is \
                             described once",
                            a.ia
                        ),
                    );
                }
                ases.push((key, a));
            }
            if ases.is_empty() {
                return cx.invalid("isd_as", "no AS in the file");
            }
            (
                Format::Appliance,
                ases.into_iter().map(|(_, a)| a).collect(),
            )
        }
        _ => {
            return cx.err(
                "isd_as",
                FieldError::WrongType("a string (reference format) or an object (appliance)"),
            );
        }
    };
    // Interface IDs are unique within an AS.
    for a in &ases {
        let mut seen = BTreeMap::new();
        for r in &a.routers {
            for i in &r.interfaces {
                if let Some(other) = seen.insert(i.id, r.id.as_str()) {
                    return cx.invalid(
                        &format!("border_routers.{}.interfaces.{}", r.id, i.id),
                        format!("interface {} is also defined by router {other}", i.id),
                    );
                }
            }
        }
    }
    Ok(Topology {
        file: file.to_path_buf(),
        format,
        ases,
    })
}

/// First `addr` of a service table (`control_service.<id>.addr`), in id order.
fn service(
    cx: &Ctx<'_>,
    root: &Map<String, Value>,
    key: &str,
    svc: Svc,
) -> R<Option<(Svc, SocketAddr)>> {
    let Some(v) = Ctx::opt(root, key) else {
        return Ok(None);
    };
    let table = cx.obj(v, key)?;
    let mut first = None;
    for (id, inst) in table {
        let path = format!("{key}.{id}");
        let inst = cx.obj(inst, &path)?;
        let addr = cx.addr(
            cx.get(inst, "addr", &format!("{path}.addr"))?,
            &format!("{path}.addr"),
        )?;
        first.get_or_insert((svc, addr));
    }
    Ok(first)
}

fn reference(cx: &Ctx<'_>, root: &Map<String, Value>) -> R<AsTopology> {
    let ia = cx.ia(&root["isd_as"], "isd_as")?;
    let core = cx.core_attr(root, "attributes")?.unwrap_or(false);
    let mtu = cx.mtu(root, "mtu", "")?;
    let dispatched_ports = cx.ports(root, "dispatched_ports")?;
    let mut services = Vec::new();
    services.extend(service(cx, root, "control_service", Svc::CS)?);
    services.extend(service(cx, root, "discovery_service", Svc::DS)?);
    let brs = cx.obj(
        cx.get(root, "border_routers", "border_routers")?,
        "border_routers",
    )?;
    let mut routers: Vec<BorderRouter> = Vec::new();
    for (id, br) in brs {
        let path = format!("border_routers.{id}");
        let br = cx.obj(br, &path)?;
        let ia_path = format!("{path}.internal_addr");
        let internal_addr = cx.unicast(
            cx.get(br, "internal_addr", &ia_path)?,
            &ia_path,
            INTERNAL_ADDR,
        )?;
        if let Some(other) = routers.iter().find(|r| r.internal_addr == internal_addr) {
            return cx.invalid(
                &ia_path,
                format!(
                    "{internal_addr} is also the internal address of router {}; each router \
                     needs its own (packets for one would reach the other)",
                    other.id
                ),
            );
        }
        let node_id = cx.node_id(br, &path)?;
        if let Some(n) = node_id
            && let Some(other) = routers.iter().find(|r| r.node_id == Some(n))
        {
            return cx.invalid(
                &format!("{path}.id"),
                format!(
                    "border routers {:?} and {id:?} both have id {n}; a node id names one \
                     router of the AS",
                    other.id
                ),
            );
        }
        let mut interfaces = Vec::new();
        if let Some(ifs) = Ctx::opt(br, "interfaces") {
            let ifs_path = format!("{path}.interfaces");
            for (key, ifc) in cx.obj(ifs, &ifs_path)? {
                let p = format!("{ifs_path}.{key}");
                interfaces.push(reference_interface(cx, key, ifc, &p)?);
            }
        }
        routers.push(router(
            id.clone(),
            node_id,
            internal_addr,
            &ia_path,
            interfaces,
        ));
    }
    Ok(AsTopology {
        ia,
        core,
        mtu,
        dispatched_ports,
        services,
        routers,
    })
}

fn reference_interface(cx: &Ctx<'_>, key: &str, ifc: &Value, p: &str) -> R<Parsed> {
    let id = cx.ifid(key, p)?;
    let ifc = cx.obj(ifc, p)?;
    let neighbor_ia = cx.ia(
        cx.get(ifc, "isd_as", &format!("{p}.isd_as"))?,
        &format!("{p}.isd_as"),
    )?;
    let link_type = cx.link_type(
        cx.get(ifc, "link_to", &format!("{p}.link_to"))?,
        &format!("{p}.link_to"),
    )?;
    let up = format!("{p}.underlay");
    let underlay = cx.obj(cx.get(ifc, "underlay", &up)?, &up)?;
    let remote_path = format!("{up}.remote");
    let remote = cx.endpoint(
        cx.get(underlay, "remote", &remote_path)?,
        &remote_path,
        REMOTE_ADDR,
    )?;
    // `public` is the older (SCIONLab) name of `local`; `bind` overrode its IP.
    if Ctx::opt(underlay, "bind").is_some() {
        return cx.invalid(
            &format!("{up}.bind"),
            "the deprecated `bind` (an IP overriding `public`'s) is not supported; put the \
             address to bind in `local`",
        );
    }
    let (lkey, lval) = match (Ctx::opt(underlay, "local"), Ctx::opt(underlay, "public")) {
        (Some(v), Some(old)) if v != old => {
            return cx.invalid(
                &format!("{up}.public"),
                format!(
                    "both `local` ({v}) and its older name `public` ({old}) are given, with \
                     different values; give only `local`"
                ),
            );
        }
        (Some(v), _) => ("local", v),
        (None, Some(v)) => ("public", v),
        (None, None) => return cx.err(&format!("{up}.local"), FieldError::Missing),
    };
    let local_path = format!("{up}.{lkey}");
    let local = cx.local_addr(lval, &local_path, remote, &remote_path)?;
    if let Some(prov) = Ctx::opt(underlay, "provider") {
        let pp = format!("{up}.provider");
        let s = cx.str(prov, &pp)?;
        if !s.eq_ignore_ascii_case("udpip") && !s.is_empty() {
            return cx.invalid(&pp, format!("{s:?}: only the udpip underlay is supported"));
        }
    }
    let remote_interface_id = cx.remote_ifid(ifc, p)?;
    if link_type == LinkType::Peer && remote_interface_id.is_none() {
        return cx.invalid(
            &format!("{p}.remote_interface_id"),
            "required for a peer link",
        );
    }
    Ok(Parsed {
        ifc: Interface {
            id,
            neighbor_ia,
            link_type,
            remote_interface_id,
            mtu: cx.mtu(ifc, "mtu", p)?,
            underlay: Underlay { local, remote },
            bfd: cx.bfd(ifc, p)?,
        },
        local_path,
        remote_path,
    })
}

fn appliance(cx: &Ctx<'_>, ia_key: &str, body: &Value) -> R<AsTopology> {
    let path = format!("isd_as.{ia_key}");
    let ia = cx.ia_str(ia_key, &path)?;
    let body = cx.obj(body, &path)?;
    if Ctx::opt(body, "border_routers").is_some() {
        return cx.invalid(
            &format!("{path}.border_routers"),
            "a reference-format key: an appliance-format AS describes its one router under \
             `router`",
        );
    }
    let mut services = Vec::new();
    for (key, svc) in [("control", Svc::CS), ("discovery", Svc::DS)] {
        if let Some(v) = Ctx::opt(body, key) {
            let p = format!("{path}.{key}");
            let o = cx.obj(v, &p)?;
            let ap = format!("{p}.address");
            services.push((svc, cx.addr(cx.get(o, "address", &ap)?, &ap)?));
        }
    }
    let rp = format!("{path}.router");
    let router_obj = cx.obj(cx.get(body, "router", &rp)?, &rp)?;
    let iap = format!("{rp}.internal_address");
    let internal_addr = cx.unicast(
        cx.get(router_obj, "internal_address", &iap)?,
        &iap,
        INTERNAL_ADDR,
    )?;
    let mut interfaces = Vec::new();
    if let Some(ifs) = Ctx::opt(router_obj, "interfaces") {
        let ifs_path = format!("{rp}.interfaces");
        for (key, ifc) in cx.obj(ifs, &ifs_path)? {
            let p = format!("{ifs_path}.{key}");
            let id = cx.ifid(key, &p)?;
            let ifc = cx.obj(ifc, &p)?;
            let f = |k: &str| format!("{p}.{k}");
            let remote = cx.endpoint(
                cx.get(ifc, "remote_address", &f("remote_address"))?,
                &f("remote_address"),
                REMOTE_ADDR,
            )?;
            let local = cx.local_addr(
                cx.get(ifc, "address", &f("address"))?,
                &f("address"),
                remote,
                &f("remote_address"),
            )?;
            let neighbor_ia = cx.ia(
                cx.get(ifc, "remote_isd_as", &f("remote_isd_as"))?,
                &f("remote_isd_as"),
            )?;
            let link_type =
                cx.link_type(cx.get(ifc, "link_type", &f("link_type"))?, &f("link_type"))?;
            let remote_interface_id = cx.remote_ifid(ifc, &p)?;
            if link_type == LinkType::Peer && remote_interface_id.is_none() {
                return cx.invalid(&f("remote_interface_id"), "required for a peer link");
            }
            interfaces.push(Parsed {
                ifc: Interface {
                    id,
                    neighbor_ia,
                    link_type,
                    remote_interface_id,
                    mtu: cx.mtu(ifc, "scion_mtu", &p)?,
                    underlay: Underlay { local, remote },
                    bfd: cx.bfd(ifc, &p)?,
                },
                local_path: f("address"),
                remote_path: f("remote_address"),
            });
        }
    }
    let core_flag = match Ctx::opt(body, "core") {
        Some(Value::Bool(b)) => Some(*b),
        Some(_) => return cx.err(&format!("{path}.core"), FieldError::WrongType("a boolean")),
        None => None,
    };
    let attr_path = format!("{path}.attributes");
    let core = match (core_flag, cx.core_attr(body, &attr_path)?) {
        (Some(c), Some(a)) if c != a => {
            return cx.invalid(
                &attr_path,
                format!(
                    "`attributes` says the AS is {}core but `core` is {c}; give one of them, \
                     or make them agree",
                    if a { "" } else { "not " }
                ),
            );
        }
        (Some(c), _) | (None, Some(c)) => c,
        (None, None) => interfaces.iter().any(|p| p.ifc.link_type == LinkType::Core),
    };
    Ok(AsTopology {
        ia,
        core,
        mtu: cx.mtu(body, "internal_scion_mtu", &path)?,
        dispatched_ports: cx.ports(body, &format!("{path}.dispatched_ports"))?,
        services,
        routers: vec![router(
            router_name(ia, 1),
            cx.node_id(router_obj, &rp)?,
            internal_addr,
            &iap,
            interfaces,
        )],
    })
}

#[cfg(test)]
mod tests;
