//! Imports: topology.json files and path descriptions checked and merged into a [`Topology`].

use super::*;

/// Merges the AS `ia` as a topology file describes it into `t`: the file's routers and
/// interfaces replace what they name (a known router with one of the file's node ids is the
/// file's router now), other known routers stay with the interfaces the file does not claim;
/// the file's links are added.
pub(super) fn merge_as(t: &mut Topology, ch: &mut Vec<TopologyChange>, ia: IsdAsn, info: &AsInfo) {
    let new = !t.ases.contains_key(&ia);
    let entry = t.ases.entry(ia).or_default();
    let mut merged = info.clone();
    let numbered: BTreeSet<u32> = info.routers.values().filter_map(|r| r.node_id).collect();
    for (name, r) in entry.routers.iter() {
        if merged.routers.contains_key(name) || r.node_id.is_some_and(|n| numbered.contains(&n)) {
            continue;
        }
        let mut r = r.clone();
        // Interfaces the file defines belong to the file's routers now.
        r.interfaces.retain(|i| !info.interfaces.contains_key(i));
        for i in &r.interfaces {
            if let Some(x) = entry.interfaces.get(i) {
                merged.interfaces.insert(*i, x.clone());
            }
        }
        merged.routers.insert(name.clone(), r);
    }
    if new || *entry != merged {
        *entry = merged.clone();
        ch.push(TopologyChange::As { ia, info: merged });
    }
    for i in info.interfaces.values() {
        if let (Some(n), Some(nif)) = (i.neighbor_ia, i.neighbor_if) {
            let l = Link::new((ia, i.ifid), (n, nif));
            if t.links.insert(l) {
                ch.push(TopologyChange::Link(l));
            }
        }
    }
}

/// Adds a path and its links; records the changes.
pub fn add_path(t: &mut Topology, ch: &mut Vec<TopologyChange>, p: PathInfo) {
    let before = t.links.clone();
    if t.insert_path(p.clone()) {
        ch.push(TopologyChange::Path(p));
        for l in t.links.difference(&before) {
            ch.push(TopologyChange::Link(*l));
        }
    }
}

/// Records a router learned from a report's node id (if not yet known).
pub fn add_router(t: &mut Topology, ch: &mut Vec<TopologyChange>, ia: IsdAsn, node_id: u32) {
    if t.has_router(ia, node_id) {
        return;
    }
    let a = t.ases.entry(ia).or_default();
    let name = format!("node-{node_id}");
    a.routers.insert(
        name.clone(),
        RouterInfo {
            name,
            node_id: Some(node_id),
            interfaces: Vec::new(),
        },
    );
    ch.push(TopologyChange::As {
        ia,
        info: a.clone(),
    });
}

/// Records an AS-internal link (if new).
pub fn add_internal_link(t: &mut Topology, ch: &mut Vec<TopologyChange>, l: InternalLink) {
    if t.internal_links.insert(l) {
        ch.push(TopologyChange::InternalLink(l));
    }
}

/// Checks a path description and makes the path of it.
pub(super) fn check_path(d: &PathDescription) -> Result<PathInfo, ImportError> {
    let e = |m: String| Err(ImportError::Invalid(m));
    let (Some(first), Some(last)) = (d.hops.first(), d.hops.last()) else {
        return e("a path needs at least one hop".into());
    };
    if d.hops.len() > MAX_HOPS {
        return e(format!("more than {MAX_HOPS} hops"));
    }
    if first.ingress != 0 || last.egress != 0 {
        return e("the first hop's ingress and the last hop's egress must be 0".into());
    }
    let n = d.hops.len();
    for (k, h) in d.hops.iter().enumerate() {
        if k > 0 && h.ingress == 0 {
            return e(format!(
                "hop {k} ({}): ingress 0 is only allowed at the first hop",
                h.ia
            ));
        }
        if k + 1 < n && h.egress == 0 {
            return e(format!(
                "hop {k} ({}): egress 0 is only allowed at the last hop",
                h.ia
            ));
        }
        if let Some(j) = d.hops[..k].iter().position(|x| x.ia == h.ia) {
            return e(format!(
                "hops {j} and {k} are both in {} (a path visits an AS once)",
                h.ia
            ));
        }
    }
    Ok(PathInfo {
        id: path_id_of(&d.hops),
        src: first.ia,
        dst: last.ia,
        hops: d.hops.clone(),
        origin: PathOrigin::Imported,
    })
}

/// The ASes of a `topology.json` file (scionproto or appliance format, read by
/// `scion-topology`), as the collector keeps them. The file must be a valid topology; the
/// collector adds one rule: an interface does not lead back into its own AS.
pub(super) fn parse_topology_json(text: &str) -> Result<Vec<(IsdAsn, AsInfo)>, ImportError> {
    let topo = scion_topology::Topology::parse(text, "topology.json")
        .map_err(|e| ImportError::Invalid(e.to_string()))?;
    topo.ases.iter().map(as_info).collect()
}

/// One AS of a topology file: its routers (by name, with their node ids) and interfaces.
pub(super) fn as_info(a: &scion_topology::AsTopology) -> Result<(IsdAsn, AsInfo), ImportError> {
    let mut info = AsInfo {
        core: a.core,
        ..AsInfo::default()
    };
    for r in &a.routers {
        let mut ifids = Vec::with_capacity(r.interfaces.len());
        for i in &r.interfaces {
            if i.neighbor_ia == a.ia {
                return Err(ImportError::Invalid(format!(
                    "topology.json: interface {} links {} to itself",
                    i.id, a.ia
                )));
            }
            ifids.push(i.id);
            info.interfaces.insert(
                i.id,
                InterfaceInfo {
                    ifid: i.id,
                    router: Some(r.id.clone()),
                    neighbor_ia: Some(i.neighbor_ia),
                    neighbor_if: i.remote_interface_id,
                    link_type: Some(i.link_type.name().to_string()),
                },
            );
        }
        ifids.sort_unstable();
        info.routers.insert(
            r.id.clone(),
            RouterInfo {
                name: r.id.clone(),
                node_id: r.node_id,
                interfaces: ifids,
            },
        );
    }
    Ok((a.ia, info))
}
