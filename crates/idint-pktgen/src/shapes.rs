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

/// Every shape of the requested kinds for AS `local` with interfaces `sides`.
pub(crate) fn enumerate(local: IsdAsn, sides: &[Side], kinds: &[Kind]) -> Vec<Shape> {
    use LinkType::{Child, Core, Parent, Peer};
    let want = |k: Kind| kinds.contains(&k);
    let mut out = Vec::new();
    for a in sides {
        for b in sides {
            if a.id == b.id || (a.sibling.is_some() && b.sibling.is_some()) {
                continue;
            }
            let pair = format!("{}->{}", name(a), name(b));
            // Same segment (no effective crossover).
            let dirs: &[bool] = match (a.link, b.link) {
                (Core, Core) => &[true, false],
                (Parent, Child) => &[true],
                (Child, Parent) => &[false],
                _ => &[],
            };
            for &c in dirs {
                let (s, hop_ix) = if c {
                    (
                        seg(
                            true,
                            false,
                            vec![
                                hop(a.neighbor, 0, a.remote_if),
                                hop(local, a.id, b.id),
                                hop(b.neighbor, b.remote_if, 0),
                            ],
                        ),
                        1,
                    )
                } else {
                    (
                        seg(
                            false,
                            false,
                            vec![
                                hop(b.neighbor, 0, b.remote_if),
                                hop(local, b.id, a.id),
                                hop(a.neighbor, a.remote_if, 0),
                            ],
                        ),
                        1,
                    )
                };
                let base = Shape {
                    kind: Kind::Transit,
                    label: format!("transit {pair} C={}", u8::from(c)),
                    ingress: ingress_of(a),
                    src_ia: a.neighbor,
                    dst_ia: b.neighbor,
                    segs: vec![s],
                    pos: Position {
                        seg: 0,
                        hop: hop_ix,
                        external: a.sibling.is_none(),
                    },
                    outcome: outcome_of(b),
                    epic: false,
                };
                if want(Kind::Epic) && a.sibling.is_none() && b.sibling.is_none() {
                    out.push(Shape {
                        kind: Kind::Epic,
                        label: format!("epic {}", base.label),
                        epic: true,
                        ..base.clone()
                    });
                }
                if want(Kind::Transit) {
                    out.push(base);
                }
            }
            // Segment change at this AS.
            let xover = matches!(
                (a.link, b.link),
                (Core, Child) | (Child, Core) | (Child, Child)
            );
            if xover && want(Kind::Crossover) {
                let (s0, l_ix) = if a.link == Child {
                    (
                        seg(
                            false,
                            false,
                            vec![hop(local, 0, a.id), hop(a.neighbor, a.remote_if, 0)],
                        ),
                        0,
                    )
                } else {
                    (
                        seg(
                            true,
                            false,
                            vec![hop(a.neighbor, 0, a.remote_if), hop(local, a.id, 0)],
                        ),
                        1,
                    )
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
                out.push(Shape {
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
            // Peering: child <-> peer, both links on this router.
            if want(Kind::Peering) && a.sibling.is_none() && b.sibling.is_none() {
                let peer_path = |peer: &Side| {
                    let far = far_as(peer.neighbor, local);
                    (
                        far,
                        vec![hop(peer.neighbor, peer.remote_if, 7), hop(far, 8, 0)],
                    )
                };
                match (a.link, b.link) {
                    (Child, Peer) => {
                        let (far, other) = peer_path(b);
                        out.push(Shape {
                            kind: Kind::Peering,
                            label: format!("peering {pair}"),
                            ingress: Ingress::External(a.id),
                            src_ia: a.neighbor,
                            dst_ia: far,
                            segs: vec![
                                seg(
                                    false,
                                    true,
                                    vec![hop(local, b.id, a.id), hop(a.neighbor, a.remote_if, 0)],
                                ),
                                seg(true, true, other),
                            ],
                            pos: Position {
                                seg: 0,
                                hop: 0,
                                external: true,
                            },
                            outcome: Outcome::Forward(b.id),
                            epic: false,
                        });
                    }
                    (Peer, Child) => {
                        let (far, other) = peer_path(a);
                        out.push(Shape {
                            kind: Kind::Peering,
                            label: format!("peering {pair}"),
                            ingress: Ingress::External(a.id),
                            src_ia: far,
                            dst_ia: b.neighbor,
                            segs: vec![
                                seg(false, true, other),
                                seg(
                                    true,
                                    true,
                                    vec![hop(local, a.id, b.id), hop(b.neighbor, b.remote_if, 0)],
                                ),
                            ],
                            pos: Position {
                                seg: 1,
                                hop: 0,
                                external: true,
                            },
                            outcome: Outcome::Forward(b.id),
                            epic: false,
                        });
                    }
                    _ => {}
                }
            }
        }
    }
    for s in sides.iter().filter(|s| s.sibling.is_none()) {
        // Inbound: delivered to a host of this AS.
        if matches!(s.link, Core | Parent | Child) {
            let (sg, ix) = if s.link == Child {
                (
                    seg(
                        false,
                        false,
                        vec![hop(local, 0, s.id), hop(s.neighbor, s.remote_if, 0)],
                    ),
                    0,
                )
            } else {
                (
                    seg(
                        true,
                        false,
                        vec![hop(s.neighbor, 0, s.remote_if), hop(local, s.id, 0)],
                    ),
                    1,
                )
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
            if want(Kind::Epic) {
                out.push(Shape {
                    kind: Kind::Epic,
                    label: format!("epic {}", base.label),
                    epic: true,
                    ..base.clone()
                });
            }
            if want(Kind::In) {
                out.push(base);
            }
            // Outbound: from a host of this AS.
            let (sg, ix) = if s.link == Parent {
                (
                    seg(
                        false,
                        false,
                        vec![hop(s.neighbor, 0, s.remote_if), hop(local, s.id, 0)],
                    ),
                    1,
                )
            } else {
                (
                    seg(
                        true,
                        false,
                        vec![hop(local, 0, s.id), hop(s.neighbor, s.remote_if, 0)],
                    ),
                    0,
                )
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
            if want(Kind::Epic) {
                out.push(Shape {
                    kind: Kind::Epic,
                    label: format!("epic {}", base.label),
                    epic: true,
                    ..base.clone()
                });
            }
            if want(Kind::Out) {
                out.push(base);
            }
        }
    }
    out
}
