//! The traffic a router configuration allows: one [`Shape`] per (kind, ingress, egress,
//! direction), each with its segments and where the packet stands when it arrives.

use std::net::SocketAddr;

use idint_wire::IsdAsn;
use scion_dp::Ingress;
use scion_dp::config::LinkType;

use crate::Kind;
use crate::path::{Position, SegHop, SegSpec};

/// One interface of the AS as the generator sees it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Side {
    pub id: u16,
    pub link: LinkType,
    pub neighbor: IsdAsn,
    /// The neighbour's interface ID on this link (from the topology, else `id`).
    pub remote_if: u16,
    /// `None` if this router owns it, else the owning sibling's internal address.
    pub sibling: Option<SocketAddr>,
}

/// What the router under test should do with a shape's packets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    Forward(u16),
    Sibling(u16, SocketAddr),
    Deliver,
}

/// A packet pattern: everything but the flow-dependent fields.
#[derive(Debug, Clone)]
pub(crate) struct Shape {
    pub kind: Kind,
    pub label: String,
    pub ingress: Ingress,
    pub src_ia: IsdAsn,
    pub dst_ia: IsdAsn,
    pub segs: Vec<SegSpec>,
    pub pos: Position,
    pub outcome: Outcome,
    pub epic: bool,
}

fn hop(ia: IsdAsn, i: u16, e: u16) -> SegHop {
    SegHop {
        ia,
        cons_ingress: i,
        cons_egress: e,
    }
}

fn seg(cons_dir: bool, peer: bool, hops: Vec<SegHop>) -> SegSpec {
    SegSpec {
        cons_dir,
        peer,
        hops,
    }
}

/// An AS behind `n` (destination or source beyond a peering neighbour).
pub(crate) fn far_as(n: IsdAsn, local: IsdAsn) -> IsdAsn {
    let f = IsdAsn::from_u64(n.to_u64() ^ 0xfa00);
    if f == local || f == n {
        IsdAsn::from_u64(n.to_u64() ^ 0xfb01)
    } else {
        f
    }
}

fn ingress_of(s: &Side) -> Ingress {
    match s.sibling {
        None => Ingress::External(s.id),
        Some(_) => Ingress::Sibling(s.id),
    }
}

fn outcome_of(s: &Side) -> Outcome {
    match s.sibling {
        None => Outcome::Forward(s.id),
        Some(a) => Outcome::Sibling(s.id, a),
    }
}

fn name(s: &Side) -> String {
    match s.sibling {
        None => format!("{}({})", s.id, s.link),
        Some(_) => format!("sib{}({})", s.id, s.link),
    }
}

/// Every shape of the requested kinds for AS `local` with interfaces `sides`: for every
/// ordered pair of interfaces (not both on siblings) its transit, crossover and peering
/// shapes, then for every interface of this router its inbound and outbound shapes, in that
/// order (the order numbers the shapes, so it is kept stable).
pub(crate) fn enumerate(local: IsdAsn, sides: &[Side], kinds: &[Kind]) -> Vec<Shape> {
    let mut e = Enumerator {
        local,
        kinds,
        out: Vec::new(),
    };
    for a in sides {
        for b in sides {
            if a.id == b.id || (a.sibling.is_some() && b.sibling.is_some()) {
                continue;
            }
            let pair = format!("{}->{}", name(a), name(b));
            e.transit(a, b, &pair);
            e.crossover(a, b, &pair);
            e.peering(a, b, &pair);
        }
    }
    for s in sides.iter().filter(|s| s.sibling.is_none()) {
        e.inbound(s);
        e.outbound(s);
    }
    e.out
}

/// The shapes found so far and what to look for.
struct Enumerator<'k> {
    local: IsdAsn,
    kinds: &'k [Kind],
    out: Vec<Shape>,
}

impl Enumerator<'_> {
    fn want(&self, k: Kind) -> bool {
        self.kinds.contains(&k)
    }

    /// Adds `base` if its kind is wanted, preceded by its EPIC-HP variant if EPIC is wanted
    /// and `epic_possible`.
    fn push_with_epic(&mut self, base: Shape, epic_possible: bool) {
        if epic_possible && self.want(Kind::Epic) {
            self.out.push(Shape {
                kind: Kind::Epic,
                label: format!("epic {}", base.label),
                epic: true,
                ..base.clone()
            });
        }
        if self.want(base.kind) {
            self.out.push(base);
        }
    }

    /// Transit within one segment (no effective crossover): core-core in both directions,
    /// parent to child down the segment, child to parent up it.
    fn transit(&mut self, a: &Side, b: &Side, pair: &str) {
        use LinkType::{Child, Core, Parent};
        let local = self.local;
        let dirs: &[bool] = match (a.link, b.link) {
            (Core, Core) => &[true, false],
            (Parent, Child) => &[true],
            (Child, Parent) => &[false],
            _ => &[],
        };
        for &c in dirs {
            let hops = if c {
                vec![
                    hop(a.neighbor, 0, a.remote_if),
                    hop(local, a.id, b.id),
                    hop(b.neighbor, b.remote_if, 0),
                ]
            } else {
                vec![
                    hop(b.neighbor, 0, b.remote_if),
                    hop(local, b.id, a.id),
                    hop(a.neighbor, a.remote_if, 0),
                ]
            };
            let base = Shape {
                kind: Kind::Transit,
                label: format!("transit {pair} C={}", u8::from(c)),
                ingress: ingress_of(a),
                src_ia: a.neighbor,
                dst_ia: b.neighbor,
                segs: vec![seg(c, false, hops)],
                pos: Position {
                    seg: 0,
                    hop: 1,
                    external: a.sibling.is_none(),
                },
                outcome: outcome_of(b),
                epic: false,
            };
            let epic_possible = a.sibling.is_none() && b.sibling.is_none();
            self.push_with_epic(base, epic_possible);
        }
    }

    /// A segment change at this AS: core or child in, child or core out.
    fn crossover(&mut self, a: &Side, b: &Side, pair: &str) {
        use LinkType::{Child, Core};
        let local = self.local;
        let xover = matches!(
            (a.link, b.link),
            (Core, Child) | (Child, Core) | (Child, Child)
        );
        if !xover || !self.want(Kind::Crossover) {
            return;
        }
        let (s0, l_ix) = if a.link == Child {
            let hops = vec![hop(local, 0, a.id), hop(a.neighbor, a.remote_if, 0)];
            (seg(false, false, hops), 0)
        } else {
            let hops = vec![hop(a.neighbor, 0, a.remote_if), hop(local, a.id, 0)];
            (seg(true, false, hops), 1)
        };
        let s1 = seg(
            true,
            false,
            vec![hop(local, 0, b.id), hop(b.neighbor, b.remote_if, 0)],
        );
        // From a sibling, the ingress BR has already switched to the new segment.
        let pos = if a.sibling.is_some() {
            Position {
                seg: 1,
                hop: 0,
                external: false,
            }
        } else {
            Position {
                seg: 0,
                hop: l_ix,
                external: true,
            }
        };
        self.out.push(Shape {
            kind: Kind::Crossover,
            label: format!("crossover {pair}"),
            ingress: ingress_of(a),
            src_ia: a.neighbor,
            dst_ia: b.neighbor,
            segs: vec![s0, s1],
            pos,
            outcome: outcome_of(b),
            epic: false,
        });
    }

    /// Peering, child to peer or peer to child, both links on this router.
    fn peering(&mut self, a: &Side, b: &Side, pair: &str) {
        use LinkType::{Child, Peer};
        if !self.want(Kind::Peering) || a.sibling.is_some() || b.sibling.is_some() {
            return;
        }
        let local = self.local;
        // The path beyond the peer: its hop and an AS behind it.
        let peer_path = |peer: &Side| {
            let far = far_as(peer.neighbor, local);
            (
                far,
                vec![hop(peer.neighbor, peer.remote_if, 7), hop(far, 8, 0)],
            )
        };
        let (src_ia, dst_ia, segs, seg_ix) = match (a.link, b.link) {
            (Child, Peer) => {
                let (far, other) = peer_path(b);
                let mine = vec![hop(local, b.id, a.id), hop(a.neighbor, a.remote_if, 0)];
                let segs = vec![seg(false, true, mine), seg(true, true, other)];
                (a.neighbor, far, segs, 0)
            }
            (Peer, Child) => {
                let (far, other) = peer_path(a);
                let mine = vec![hop(local, a.id, b.id), hop(b.neighbor, b.remote_if, 0)];
                let segs = vec![seg(false, true, other), seg(true, true, mine)];
                (far, b.neighbor, segs, 1)
            }
            _ => return,
        };
        self.out.push(Shape {
            kind: Kind::Peering,
            label: format!("peering {pair}"),
            ingress: Ingress::External(a.id),
            src_ia,
            dst_ia,
            segs,
            pos: Position {
                seg: seg_ix,
                hop: 0,
                external: true,
            },
            outcome: Outcome::Forward(b.id),
            epic: false,
        });
    }

    /// Inbound on interface `s`: delivered to a host of this AS.
    fn inbound(&mut self, s: &Side) {
        let local = self.local;
        if s.link == LinkType::Peer {
            return;
        }
        let (sg, ix) = if s.link == LinkType::Child {
            let hops = vec![hop(local, 0, s.id), hop(s.neighbor, s.remote_if, 0)];
            (seg(false, false, hops), 0)
        } else {
            let hops = vec![hop(s.neighbor, 0, s.remote_if), hop(local, s.id, 0)];
            (seg(true, false, hops), 1)
        };
        let base = Shape {
            kind: Kind::In,
            label: format!("in {}", name(s)),
            ingress: Ingress::External(s.id),
            src_ia: s.neighbor,
            dst_ia: local,
            segs: vec![sg],
            pos: Position {
                seg: 0,
                hop: ix,
                external: true,
            },
            outcome: Outcome::Deliver,
            epic: false,
        };
        self.push_with_epic(base, true);
    }

    /// Outbound on interface `s`: from a host of this AS.
    fn outbound(&mut self, s: &Side) {
        let local = self.local;
        if s.link == LinkType::Peer {
            return;
        }
        let (sg, ix) = if s.link == LinkType::Parent {
            let hops = vec![hop(s.neighbor, 0, s.remote_if), hop(local, s.id, 0)];
            (seg(false, false, hops), 1)
        } else {
            let hops = vec![hop(local, 0, s.id), hop(s.neighbor, s.remote_if, 0)];
            (seg(true, false, hops), 0)
        };
        let base = Shape {
            kind: Kind::Out,
            label: format!("out {}", name(s)),
            ingress: Ingress::Internal,
            src_ia: local,
            dst_ia: s.neighbor,
            segs: vec![sg],
            pos: Position {
                seg: 0,
                hop: ix,
                external: false,
            },
            outcome: Outcome::Forward(s.id),
            epic: false,
        };
        self.push_with_epic(base, true);
    }
}
