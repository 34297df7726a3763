//! JSON -> [`Topology`], field by field, with the dotted path of every field in errors.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::Path;

use idint_wire::{IsdAsn, Svc};
use scion_dp::config::{DispatchedPorts, LinkType};
use serde_json::{Map, Value};

use crate::{
    AsTopology, BorderRouter, FieldError, Format, Interface, Topology, TopologyError, Underlay,
    router_name,
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

    fn ia_str(&self, s: &str, path: &str) -> R<IsdAsn> {
        s.parse()
            .or_else(|e| self.invalid(path, format!("{s:?}: {e}")))
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

    fn addr(&self, v: &Value, path: &str) -> R<SocketAddr> {
        let s = self.str(v, path)?;
        s.parse().or_else(|_| {
            self.invalid(
                path,
                format!("{s:?} is not an \"ip:port\" (IPv6: \"[ip]:port\") address"),
            )
        })
    }

    /// A local underlay address; `":port"` means any IP of `family`'s address family.
    fn local_addr(&self, v: &Value, path: &str, family: IpAddr) -> R<SocketAddr> {
        let s = self.str(v, path)?;
        if let Some(port) = s.strip_prefix(':') {
            let port: u16 = port
                .parse()
                .or_else(|_| self.invalid(path, format!("{s:?}: bad port")))?;
            let ip = match family {
                IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
                IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
            };
            return Ok(SocketAddr::new(ip, port));
        }
        self.addr(v, path)
    }

    fn ifid(&self, key: &str, path: &str) -> R<u16> {
        match key.parse::<u16>() {
            Ok(0) => self.invalid(path, "interface ID 0 is reserved"),
            Ok(id) => Ok(id),
            Err(_) => self.invalid(path, format!("interface ID {key:?} is not a decimal u16")),
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
                s.parse().or_else(|_| {
                    self.invalid(
                        path,
                        format!(
                            "{s:?}: must be \"START-END\" (1 <= START <= END), \"all\" or empty"
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

pub(crate) fn topology(text: &str, file: &Path) -> R<Topology> {
    let cx = Ctx { file };
    let root: Value = serde_json::from_str(text).map_err(|e| TopologyError::Json {
        file: file.to_path_buf(),
        reason: e.to_string(),
    })?;
    let root = cx.obj(&root, "(top level)")?;
    let (format, ases) = match cx.get(root, "isd_as", "isd_as")? {
        Value::String(_) => (Format::Reference, vec![reference(&cx, root)?]),
        Value::Object(map) => {
            let mut ases = Vec::new();
            for (ia, body) in map {
                ases.push(appliance(&cx, ia, body)?);
            }
            if ases.is_empty() {
                return cx.invalid("isd_as", "no AS in the file");
            }
            (Format::Appliance, ases)
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
    let mtu = cx.opt_u16(root, "mtu", "")?;
    let dispatched_ports = cx.ports(root, "dispatched_ports")?;
    let mut services = Vec::new();
    services.extend(service(cx, root, "control_service", Svc::CS)?);
    services.extend(service(cx, root, "discovery_service", Svc::DS)?);
    let brs = cx.obj(
        cx.get(root, "border_routers", "border_routers")?,
        "border_routers",
    )?;
    let mut routers = Vec::new();
    for (id, br) in brs {
        let path = format!("border_routers.{id}");
        let br = cx.obj(br, &path)?;
        let ia_path = format!("{path}.internal_addr");
        let internal_addr = cx.addr(cx.get(br, "internal_addr", &ia_path)?, &ia_path)?;
        let mut interfaces = Vec::new();
        if let Some(ifs) = Ctx::opt(br, "interfaces") {
            let ifs_path = format!("{path}.interfaces");
            for (key, ifc) in cx.obj(ifs, &ifs_path)? {
                let p = format!("{ifs_path}.{key}");
                interfaces.push(reference_interface(cx, key, ifc, &p)?);
            }
        }
        interfaces.sort_by_key(|i| i.id);
        routers.push(BorderRouter {
            id: id.clone(),
            internal_addr,
            interfaces,
        });
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

fn reference_interface(cx: &Ctx<'_>, key: &str, ifc: &Value, p: &str) -> R<Interface> {
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
    let remote = cx.addr(cx.get(underlay, "remote", &remote_path)?, &remote_path)?;
    // `public` is the older (SCIONLab) name of `local`.
    let (lkey, lval) = match (Ctx::opt(underlay, "local"), Ctx::opt(underlay, "public")) {
        (Some(v), _) => ("local", v),
        (None, Some(v)) => ("public", v),
        (None, None) => return cx.err(&format!("{up}.local"), FieldError::Missing),
    };
    let local = cx.local_addr(lval, &format!("{up}.{lkey}"), remote.ip())?;
    if let Some(prov) = Ctx::opt(underlay, "provider") {
        let pp = format!("{up}.provider");
        let s = cx.str(prov, &pp)?;
        if !s.eq_ignore_ascii_case("udpip") && !s.is_empty() {
            return cx.invalid(&pp, format!("{s:?}: only the udpip underlay is supported"));
        }
    }
    let remote_interface_id = cx.opt_u16(ifc, "remote_interface_id", p)?;
    if link_type == LinkType::Peer && remote_interface_id.is_none() {
        return cx.invalid(
            &format!("{p}.remote_interface_id"),
            "required for a peer link",
        );
    }
    Ok(Interface {
        id,
        neighbor_ia,
        link_type,
        remote_interface_id,
        mtu: cx.opt_u16(ifc, "mtu", p)?,
        underlay: Underlay { local, remote },
    })
}

fn appliance(cx: &Ctx<'_>, ia_key: &str, body: &Value) -> R<AsTopology> {
    let path = format!("isd_as.{ia_key}");
    let ia = cx.ia_str(ia_key, &path)?;
    let body = cx.obj(body, &path)?;
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
    let router = cx.obj(cx.get(body, "router", &rp)?, &rp)?;
    let iap = format!("{rp}.internal_address");
    let internal_addr = cx.addr(cx.get(router, "internal_address", &iap)?, &iap)?;
    let mut interfaces = Vec::new();
    if let Some(ifs) = Ctx::opt(router, "interfaces") {
        let ifs_path = format!("{rp}.interfaces");
        for (key, ifc) in cx.obj(ifs, &ifs_path)? {
            let p = format!("{ifs_path}.{key}");
            let id = cx.ifid(key, &p)?;
            let ifc = cx.obj(ifc, &p)?;
            let f = |k: &str| format!("{p}.{k}");
            let remote = cx.addr(
                cx.get(ifc, "remote_address", &f("remote_address"))?,
                &f("remote_address"),
            )?;
            let local = cx.local_addr(
                cx.get(ifc, "address", &f("address"))?,
                &f("address"),
                remote.ip(),
            )?;
            let neighbor_ia = cx.ia(
                cx.get(ifc, "remote_isd_as", &f("remote_isd_as"))?,
                &f("remote_isd_as"),
            )?;
            let link_type =
                cx.link_type(cx.get(ifc, "link_type", &f("link_type"))?, &f("link_type"))?;
            let remote_interface_id = cx.opt_u16(ifc, "remote_interface_id", &p)?;
            if link_type == LinkType::Peer && remote_interface_id.is_none() {
                return cx.invalid(&f("remote_interface_id"), "required for a peer link");
            }
            interfaces.push(Interface {
                id,
                neighbor_ia,
                link_type,
                remote_interface_id,
                mtu: cx.opt_u16(ifc, "scion_mtu", &p)?,
                underlay: Underlay { local, remote },
            });
        }
    }
    interfaces.sort_by_key(|i| i.id);
    let core = match Ctx::opt(body, "core") {
        Some(Value::Bool(b)) => *b,
        Some(_) => return cx.err(&format!("{path}.core"), FieldError::WrongType("a boolean")),
        None => match cx.core_attr(body, &format!("{path}.attributes"))? {
            Some(c) => c,
            None => interfaces.iter().any(|i| i.link_type == LinkType::Core),
        },
    };
    Ok(AsTopology {
        ia,
        core,
        mtu: cx.opt_u16(body, "internal_scion_mtu", &path)?,
        dispatched_ports: cx.ports(body, &format!("{path}.dispatched_ports"))?,
        services,
        routers: vec![BorderRouter {
            id: router_name(ia, 1),
            internal_addr,
            interfaces,
        }],
    })
}
