//! Reports' paths laid out as AS hops and mapped to known paths: [`HopLayout`], path ids and
//! fingerprints, and [`Topology::map`].

use super::*;

impl HopLayout {
    /// Lays out the report's path in travel direction, one AS hop per hop field except at
    /// segment crossings (the last hop of a segment and the first of the next are one AS).
    pub fn of(path: Option<&v1::Path>) -> Result<Self, LayoutError> {
        let p = path.ok_or(LayoutError::NoPath)?;
        if p.info_fields.len() > 3 || p.hop_fields.len() > MAX_HOPS {
            return Err(LayoutError::Inconsistent);
        }
        let cons: [bool; 3] =
            std::array::from_fn(|i| p.info_fields.get(i).is_some_and(|f| f.cons_dir));
        let mut hops = [(0u32, 0u32); MAX_HOPS];
        for (h, f) in hops.iter_mut().zip(&p.hop_fields) {
            *h = (f.cons_ingress, f.cons_egress);
        }
        Self::build(
            &p.seg_lens,
            &cons[..p.info_fields.len()],
            &hops[..p.hop_fields.len()],
        )
    }

    /// [`Self::of`] from the parts of a path: segment lengths, the ConsDir flag of each info
    /// field, and (ConsIngress, ConsEgress) of each hop field, as decoded.
    pub fn build(
        seg_lens: &[u32],
        cons_dir: &[bool],
        hop_fields: &[(u32, u32)],
    ) -> Result<Self, LayoutError> {
        let n: usize = seg_lens.iter().map(|&l| l as usize).sum();
        if n == 0
            || n > MAX_HOPS
            || n != hop_fields.len()
            || seg_lens.len() > 3
            || cons_dir.len() != seg_lens.len()
        {
            return Err(LayoutError::Inconsistent);
        }
        // Checked before anything is cut to its wire width: a report must not be mapped to
        // the interface its number's low bits happen to name. (After the shape checks, so that
        // both decoders, which check the shape in different places, give the same error.)
        if seg_lens.iter().any(|&l| l > 63)
            || hop_fields
                .iter()
                .any(|&(i, e)| i > u32::from(u16::MAX) || e > u32::from(u16::MAX))
        {
            return Err(LayoutError::OutOfRange);
        }
        let mut l = HopLayout {
            hop_fields: n,
            hop_of: [0; MAX_HOPS],
            as_hops: 0,
            ifs: [(0, 0); MAX_HOPS],
        };
        let mut j = 0;
        for (seg, &len) in seg_lens.iter().enumerate() {
            let cons = cons_dir[seg];
            for k in 0..len as usize {
                let (ci, ce) = (hop_fields[j].0 as u16, hop_fields[j].1 as u16);
                let (ing, eg) = if cons { (ci, ce) } else { (ce, ci) };
                // Crossing: first hop of a later segment continues the previous AS hop.
                if k == 0 && seg > 0 && l.as_hops > 0 && ing == 0 && l.ifs[l.as_hops - 1].1 == 0 {
                    l.ifs[l.as_hops - 1].1 = eg;
                } else {
                    l.ifs[l.as_hops] = (ing, eg);
                    l.as_hops += 1;
                }
                l.hop_of[j] = (l.as_hops - 1) as u8;
                j += 1;
            }
        }
        Ok(l)
    }

    /// The interface fingerprint for `src` -> `dst` over these AS hops (the id of an
    /// unmapped path; known paths are found by it).
    pub fn fingerprint(&self, src: IsdAsn, dst: IsdAsn) -> u64 {
        fingerprint(src, dst, self.ifs[..self.as_hops].iter().copied())
    }
}

impl PathShape {
    pub(super) fn of(p: &PathInfo) -> Self {
        PathShape {
            src: p.src,
            dst: p.dst,
            ifs: p.hops.iter().map(|h| (h.ingress, h.egress)).collect(),
            ases: p.hops.iter().map(|h| h.ia).collect(),
        }
    }

    /// Whether a report's path from `src` to `dst` shows exactly this path: same endpoints,
    /// same number of AS hops, same interfaces at every hop.
    pub(super) fn matches(&self, src: IsdAsn, dst: IsdAsn, layout: &HopLayout) -> bool {
        self.src == src && self.dst == dst && self.ifs[..] == layout.ifs[..layout.as_hops]
    }
}

pub(super) fn mix(h: u64, v: u64) -> u64 {
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    let x = (h ^ v).wrapping_mul(K);
    x ^ (x >> 29)
}

/// The interface fingerprint of a path: a 64-bit mix of source, destination and (ingress,
/// egress) per hop, without the ASes in between (what a report's path shows; the id of
/// unmapped paths). Not cryptographic.
pub fn fingerprint(src: IsdAsn, dst: IsdAsn, ifs: impl Iterator<Item = (u16, u16)>) -> u64 {
    let mut h = mix(mix(0xcbf2_9ce4_8422_2325, src.to_u64()), dst.to_u64());
    for (i, e) in ifs {
        h = mix(h, (u64::from(i) << 16) | u64::from(e) | (1 << 40));
    }
    h
}

/// The id of a path: a 64-bit mix of every hop's (ISD-AS, ingress, egress) in travel
/// direction, so paths differing anywhere (middle ASes included) get different ids. Not
/// cryptographic.
pub fn path_id(hops: impl Iterator<Item = (IsdAsn, u16, u16)>) -> u64 {
    let mut h = mix(0x6a09_e667_f3bc_c908, 0);
    for (ia, i, e) in hops {
        h = mix(h, ia.to_u64());
        h = mix(h, (u64::from(i) << 16) | u64::from(e) | (1 << 40));
    }
    h
}

/// [`path_id`] of a path's hops.
pub fn path_id_of(hops: &[PathHop]) -> u64 {
    path_id(hops.iter().map(|h| (h.ia, h.ingress, h.egress)))
}

impl Topology {
    /// ASes that only links and paths name (no imported topology, no router learned from a
    /// report): known to exist, nothing more.
    pub fn ases_named_only(&self) -> std::collections::BTreeSet<IsdAsn> {
        let links = self.links.iter().flat_map(|l| [l.a, l.b]);
        let paths = self
            .paths
            .values()
            .flat_map(|p| p.hops.iter().map(|h| h.ia));
        links
            .chain(paths)
            .filter(|ia| !self.ases.contains_key(ia))
            .collect()
    }

    /// Maps a laid-out path from `src` to `dst`: a known path with these interfaces (when
    /// several known paths share them, the one the imported interfaces lead along), else a
    /// walk over the imported interfaces, else unknown (id: the interface fingerprint).
    pub fn map(&self, src: IsdAsn, dst: IsdAsn, layout: &HopLayout) -> Mapping {
        let ifs = &layout.ifs[..layout.as_hops];
        let signature = self.signature(src, dst, ifs.iter().copied());
        let candidates = self.by_ifs.get(&signature).map_or(&[][..], Vec::as_slice);
        // Only paths of exactly this shape (a signature is a hash: equal ones may differ).
        let shape_of = |id: &u64| {
            self.shapes
                .get(id)
                .filter(|shape| shape.matches(src, dst, layout))
        };
        let mut known = candidates
            .iter()
            .filter_map(|id| Some((*id, shape_of(id)?)));
        if let (Some((id, shape)), None) = (known.next(), known.next()) {
            return Mapping::Known {
                id,
                ases: shape.ases.clone(),
            };
        }
        let unknown = || Mapping::Unknown {
            id: layout.fingerprint(src, dst),
        };
        let Some(Walk { ases, confirmed }) = self.walk(src, dst, layout) else {
            return unknown();
        };
        let id = path_id(ases.iter().zip(ifs).map(|(a, (i, e))| (*a, *i, *e)));
        match self.shapes.get(&id) {
            // An imported or learned path of these very hops vouches for every interface.
            Some(shape) if shape.matches(src, dst, layout) && shape.ases[..] == ases[..] => {
                Mapping::Known {
                    id,
                    ases: shape.ases.clone(),
                }
            }
            Some(_) => unknown(),
            // A new path only when the topology knows every interface it names.
            None if confirmed => Mapping::Walked {
                id,
                ases: ases.into(),
            },
            None => unknown(),
        }
    }

    /// The keyed interface signature of a path from `src` to `dst` over `ifs` (the index of
    /// known paths).
    pub(super) fn signature(
        &self,
        src: IsdAsn,
        dst: IsdAsn,
        ifs: impl Iterator<Item = (u16, u16)>,
    ) -> u64 {
        use std::hash::{BuildHasher, Hasher};
        let mut h = self.signature_key.build_hasher();
        h.write_u64(src.to_u64());
        h.write_u64(dst.to_u64());
        let mut hops = 0;
        for (i, e) in ifs {
            h.write_u32((u32::from(i) << 16) | u32::from(e));
            hops += 1;
        }
        h.write_usize(hops);
        h.finish()
    }

    /// The ASes of a walk from `src` along the imported interfaces, and whether the topology
    /// knows every interface the walk took.
    ///
    /// Every hop's egress is an interface of its AS leading to the next hop's AS, the path
    /// starts and ends in an AS (ingress 0 at the first hop, egress 0 at the last) and visits
    /// no AS twice. A later hop's ingress is *known* ([`Walk::confirmed`]) when the far end
    /// names it (the previous egress's `remote_interface_id`) or when the hop's AS has it as
    /// an interface leading back to the previous AS (and, if that interface names its far
    /// end, to the previous egress); an ingress the far end contradicts ends the walk. An
    /// ingress neither end knows (a middle hop's, when the files name no far ends, or that of
    /// a destination whose topology is not imported) may be made up: ID-INT authenticates
    /// entries, not the path's interfaces.
    pub(super) fn walk(&self, src: IsdAsn, dst: IsdAsn, layout: &HopLayout) -> Option<Walk> {
        let n = layout.as_hops;
        if n == 0 || layout.ifs[0].0 != 0 || layout.ifs[n - 1].1 != 0 {
            return None;
        }
        let mut ases = Vec::with_capacity(n);
        let mut confirmed = true;
        let mut ia = src;
        for k in 0..n {
            ases.push(ia);
            let (_, eg) = layout.ifs[k];
            if k + 1 == n {
                break;
            }
            let next = self.ases.get(&ia)?.interfaces.get(&eg)?;
            let nia = next.neighbor_ia?;
            // A path visits an AS once: a walk that comes back is no path.
            if ases.contains(&nia) {
                return None;
            }
            let ingress = layout.ifs[k + 1].0;
            match next.neighbor_if {
                Some(nif) if nif != ingress => return None,
                Some(_) => {}
                None => confirmed &= self.leads_back(nia, ingress, (ia, eg)),
            }
            ia = nia;
        }
        (ia == dst).then_some(Walk { ases, confirmed })
    }

    /// Whether AS `ia`'s imported interface `ifid` leads back to `(prev, prev_if)`: its
    /// neighbour is `prev`, and its far end, if named, is `prev_if`.
    fn leads_back(&self, ia: IsdAsn, ifid: u16, (prev, prev_if): (IsdAsn, u16)) -> bool {
        self.ases
            .get(&ia)
            .and_then(|a| a.interfaces.get(&ifid))
            .is_some_and(|i| {
                i.neighbor_ia == Some(prev) && i.neighbor_if.is_none_or(|n| n == prev_if)
            })
    }

    /// Router name for a node id in an AS, if known.
    pub fn router_name(&self, ia: IsdAsn, node_id: u32) -> Option<&str> {
        self.ases.get(&ia).and_then(|a| {
            a.routers
                .values()
                .find(|r| r.node_id == Some(node_id))
                .map(|r| r.name.as_str())
        })
    }

    /// Whether a router with this node id is known.
    pub fn has_router(&self, ia: IsdAsn, node_id: u32) -> bool {
        self.nodes.contains(&(ia.to_u64(), node_id))
    }

    pub(super) fn reindex(&mut self) {
        self.nodes = self
            .ases
            .iter()
            .flat_map(|(ia, a)| {
                a.routers
                    .values()
                    .filter_map(move |r| r.node_id.map(|n| (ia.to_u64(), n)))
            })
            .collect();
    }

    /// Adds a path; the first path of an id wins (hops are immutable per id, as in
    /// PostgreSQL), only its origin may change.
    pub(super) fn insert_path(&mut self, p: PathInfo) -> bool {
        match self.paths.get(&p.id) {
            Some(old) if *old == p || old.hops != p.hops => return false,
            _ => {}
        }
        self.shapes.insert(p.id, PathShape::of(&p));
        let key = self.signature(p.src, p.dst, p.hops.iter().map(|h| (h.ingress, h.egress)));
        let ids = self.by_ifs.entry(key).or_default();
        if !ids.contains(&p.id) {
            ids.push(p.id);
        }
        // The links along the path.
        for w in p.hops.windows(2) {
            self.links
                .insert(Link::new((w[0].ia, w[0].egress), (w[1].ia, w[1].ingress)));
        }
        self.paths.insert(p.id, p);
        true
    }
}
