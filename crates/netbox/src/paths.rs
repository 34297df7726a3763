//! SCION paths between every two ASes of the box, with hop fields MACed by the ASes' own
//! forwarding keys. There is no control plane in the box: the segments a beaconing control
//! plane would find are enumerated from the links instead (up to the source's core AS, a core
//! segment between core ASes, down to the destination; a peering shortcut where the two ASes
//! peer), then built and MACed by idint-pktgen's path builder.

use idint_pktgen::keys::KeyRing;
use idint_pktgen::path::{Position, SegHop, SegSpec, build};
use idint_wire::IsdAsn;
use serde::Serialize;

use crate::plan::{LinkKind, Network};

/// Hop-field expiry: (63 + 1) x 24 h / 256 = 6 hours after the info field's timestamp.
pub const EXP_TIME: u8 = 63;
/// Seconds a path with [`EXP_TIME`] stays valid.
pub const VALID_SECS: u64 = (EXP_TIME as u64 + 1) * 86_400 / 256;

/// What kind of path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PathKind {
    /// Up, core and/or down segments through the core.
    Core,
    /// A peering shortcut.
    Peering,
}

/// One AS on a path: the interfaces the packet enters and leaves it by (0 at the ends).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct AsHop {
    /// The AS.
    #[serde(serialize_with = "ia_text")]
    pub ia: IsdAsn,
    /// Ingress interface (0 at the source).
    pub ingress: u16,
    /// Egress interface (0 at the destination).
    pub egress: u16,
}

fn ia_text<S: serde::Serializer>(ia: &IsdAsn, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(ia)
}

/// A path between two ASes of the box.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BoxPath {
    /// Index of the source AS.
    pub src: usize,
    /// Index of the destination AS.
    pub dst: usize,
    /// Core or peering.
    pub kind: PathKind,
    /// The segments, in travel order.
    pub segs: Vec<SegSpec>,
    /// The ASes in travel order.
    pub hops: Vec<AsHop>,
}

impl BoxPath {
    /// `111>211 peering`.
    pub fn name(&self, net: &Network) -> String {
        let kind = match self.kind {
            PathKind::Core => "core",
            PathKind::Peering => "peering",
        };
        format!(
            "{}>{} {kind}",
            net.ases[self.src].number, net.ases[self.dst].number
        )
    }

    /// The path header as the source host sends it, MACed with `keys` for info-field
    /// timestamp `timestamp_s`.
    pub fn raw(&self, keys: &mut KeyRing, timestamp_s: u32) -> Vec<u8> {
        let first = &self.segs[0];
        let pos = Position {
            seg: 0,
            hop: if first.cons_dir {
                0
            } else {
                first.hops.len() - 1
            },
            external: false,
        };
        let built = build(&self.segs, pos, timestamp_s, EXP_TIME, 0, keys);
        let mut out = vec![0u8; built.repr.buffer_len()];
        built
            .repr
            .emit(&mut out)
            .expect("a path of at most 3 segments and 64 hops emits");
        out
    }

    /// One entry per hop field, in travel order (the crossover AS twice), as the hosts' paths
    /// file lists them.
    pub fn hop_fields(&self) -> Vec<AsHop> {
        hop_field_hops(&self.segs)
    }

    /// The first egress interface: the source AS's router that owns it is the first hop.
    pub fn first_egress(&self) -> u16 {
        self.hops[0].egress
    }
}

fn hop(ia: IsdAsn, cons_ingress: u16, cons_egress: u16) -> SegHop {
    SegHop {
        ia,
        cons_ingress,
        cons_egress,
    }
}

/// The up segment of non-core `leaf` (travelled from the leaf to its parent), or none.
fn up(net: &Network, leaf: usize) -> Option<SegSpec> {
    let (parent, p_if, c_if) = net.parent(leaf)?;
    Some(SegSpec {
        cons_dir: false,
        peer: false,
        hops: vec![
            hop(net.ases[parent].ia, 0, p_if),
            hop(net.ases[leaf].ia, c_if, 0),
        ],
    })
}

/// The down segment to non-core `leaf`, or none.
fn down(net: &Network, leaf: usize) -> Option<SegSpec> {
    up(net, leaf).map(|mut s| {
        s.cons_dir = true;
        s
    })
}

/// The core AS a path from or to `ix` goes through: itself, or its parent.
fn core_of(net: &Network, ix: usize) -> Option<usize> {
    if net.ases[ix].core {
        Some(ix)
    } else {
        net.parent(ix).map(|(p, _, _)| p)
    }
}

/// The core segment from core AS `from` to core AS `to` (constructed from `to`, travelled
/// against construction), over their core link.
fn core_seg(net: &Network, from: usize, to: usize) -> Option<SegSpec> {
    let l = net.links.iter().find(|l| {
        l.kind == LinkKind::Core
            && ((l.a.as_ix == from && l.b.as_ix == to) || (l.a.as_ix == to && l.b.as_ix == from))
    })?;
    let (f, t) = if l.a.as_ix == from {
        (&l.a, &l.b)
    } else {
        (&l.b, &l.a)
    };
    Some(SegSpec {
        cons_dir: false,
        peer: false,
        hops: vec![
            hop(net.ases[to].ia, 0, t.ifid),
            hop(net.ases[from].ia, f.ifid, 0),
        ],
    })
}

/// One entry per hop field of `segs`, in travel order, interfaces in travel direction (an AS
/// where two segments meet has two).
fn hop_field_hops(segs: &[SegSpec]) -> Vec<AsHop> {
    let mut out = Vec::new();
    for s in segs {
        let travel: Vec<&SegHop> = if s.cons_dir {
            s.hops.iter().collect()
        } else {
            s.hops.iter().rev().collect()
        };
        for h in travel {
            let (ingress, egress) = if s.cons_dir {
                (h.cons_ingress, h.cons_egress)
            } else {
                (h.cons_egress, h.cons_ingress)
            };
            out.push(AsHop {
                ia: h.ia,
                ingress,
                egress,
            });
        }
    }
    out
}

/// The ASes of `segs` in travel order, merging the AS where two segments meet.
fn as_hops(segs: &[SegSpec]) -> Vec<AsHop> {
    let mut out: Vec<AsHop> = Vec::new();
    for h in hop_field_hops(segs) {
        match out.last_mut() {
            // The segment's first AS is the previous one's last: one AS hop.
            Some(last) if last.ia == h.ia && last.egress == 0 => last.egress = h.egress,
            _ => out.push(h),
        }
    }
    out
}

/// Every path from `src` to `dst` (distinct ASes): the one through the core, and a peering
/// shortcut where the two peer.
pub fn paths_between(net: &Network, src: usize, dst: usize) -> Vec<BoxPath> {
    let mut out = Vec::new();
    if src == dst {
        return out;
    }
    let (Some(cs), Some(cd)) = (core_of(net, src), core_of(net, dst)) else {
        return out;
    };
    let mut segs = Vec::new();
    if src != cs {
        segs.extend(up(net, src));
    }
    if cs != cd {
        match core_seg(net, cs, cd) {
            Some(s) => segs.push(s),
            None => return out,
        }
    }
    if dst != cd {
        segs.extend(down(net, dst));
    }
    if !segs.is_empty() {
        out.push(BoxPath {
            src,
            dst,
            kind: PathKind::Core,
            hops: as_hops(&segs),
            segs,
        });
    }
    for l in net.links.iter().filter(|l| l.kind == LinkKind::Peer) {
        let (s_end, d_end) = if l.a.as_ix == src && l.b.as_ix == dst {
            (&l.a, &l.b)
        } else if l.b.as_ix == src && l.a.as_ix == dst {
            (&l.b, &l.a)
        } else {
            continue;
        };
        // Each side's peering hop field: ConsIngress = the peering interface, ConsEgress =
        // what its regular hop field has (0: both ends are the segments' last ASes).
        let segs = vec![
            SegSpec {
                cons_dir: false,
                peer: true,
                hops: vec![hop(net.ases[src].ia, s_end.ifid, 0)],
            },
            SegSpec {
                cons_dir: true,
                peer: true,
                hops: vec![hop(net.ases[dst].ia, d_end.ifid, 0)],
            },
        ];
        out.push(BoxPath {
            src,
            dst,
            kind: PathKind::Peering,
            hops: as_hops(&segs),
            segs,
        });
    }
    out
}

/// Every path between every ordered pair of ASes.
pub fn all_paths(net: &Network) -> Vec<BoxPath> {
    let n = net.ases.len();
    (0..n)
        .flat_map(|s| (0..n).map(move |d| (s, d)))
        .flat_map(|(s, d)| paths_between(net, s, d))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pair_has_a_path_and_the_peers_two() {
        let net = Network::demo();
        let all = all_paths(&net);
        let n = net.ases.len();
        for s in 0..n {
            for d in (0..n).filter(|&d| d != s) {
                assert!(
                    all.iter().any(|p| p.src == s && p.dst == d),
                    "no path {s}->{d}"
                );
            }
        }
        let peering: Vec<_> = all.iter().filter(|p| p.kind == PathKind::Peering).collect();
        assert_eq!(peering.len(), 2);
    }

    #[test]
    fn as_hops_join_segments_at_the_crossover_as() {
        let net = Network::demo();
        let (s, d) = (
            net.as_index("1-ff00:0:111".parse().unwrap()).unwrap(),
            net.as_index("2-ff00:0:211".parse().unwrap()).unwrap(),
        );
        let core = &paths_between(&net, s, d)[0];
        let text: Vec<String> = core
            .hops
            .iter()
            .map(|h| format!("{} {}>{}", h.ia, h.ingress, h.egress))
            .collect();
        assert_eq!(
            text,
            [
                "1-ff00:0:111 0>1",
                "1-ff00:0:110 1>3",
                "2-ff00:0:210 1>2",
                "2-ff00:0:211 1>0"
            ]
        );
    }
}
