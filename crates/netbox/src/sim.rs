//! The box without a network: every path sent through real scion-dp routers built from the
//! generated `topology.json` and keys, hop by hop, as the DPDK routers will forward it. A path
//! the routers would drop is found here, before any namespace exists, with the reason.

use std::net::{IpAddr, SocketAddr};

use idint_wire::HostAddr;
use idint_wire::crypto::aes128;
use idint_wire::scion::PathType;
use scion_dp::config::Router;
use scion_dp::probe::{ProbeRequest, ProbeSource, ProbeTarget};
use scion_dp::{Disposition, Ingress, Processor};
use scion_topology::Topology;

use crate::files::{HOST_PORT, Layout};
use crate::paths::BoxPath;
use crate::plan::{INTERNAL_PORT, Network};

/// Longest walk: a loop in the box would otherwise never end.
const MAX_STEPS: usize = 32;
/// Packet buffer size (the box's MTU with room to spare).
const BUF_LEN: usize = 2048;

/// Every router of the box as scion-dp sees it, by (AS, router) index.
pub struct SimNetwork {
    routers: Vec<Vec<Router>>,
}

impl SimNetwork {
    /// Routers from the files in `layout` (written by [`crate::files::write_all`]).
    pub fn load(net: &Network, layout: &Layout) -> Result<Self, String> {
        let mut routers = Vec::new();
        for (i, a) in net.ases.iter().enumerate() {
            let dir = layout.as_dir(net, i);
            let topo = Topology::load(dir.join("topology.json")).map_err(|e| e.to_string())?;
            let mut rs = Vec::new();
            for node in &a.routers {
                let cfg = topo
                    .router_config(&node.name, dir.join("keys"))
                    .map_err(|e| e.to_string())?;
                rs.push(Router::new(cfg).map_err(|e| format!("{}: {e:?}", node.name))?);
            }
            routers.push(rs);
        }
        Ok(SimNetwork { routers })
    }

    /// Sends a packet from the source AS's host along `path` (raw bytes `raw`) at `now_ns`;
    /// the routers it crossed (AS, router) and where it ended: `Ok` if delivered to the
    /// destination AS's host.
    pub fn send(
        &self,
        net: &Network,
        path: &BoxPath,
        raw: &[u8],
        now_ns: u64,
    ) -> Result<Vec<(usize, usize)>, String> {
        let src = &net.ases[path.src];
        let dst = &net.ases[path.dst];
        let host = HostAddr::V4(src.host());
        let mut probes = ProbeSource::new(src.ia, host, src.ia, host);
        probes
            .add(
                ProbeTarget {
                    dst_ia: dst.ia,
                    dst_host: HostAddr::V4(dst.host()),
                    dst_port: HOST_PORT,
                    path_type: PathType::Scion,
                    path: raw.to_vec(),
                    interval_ns: 1,
                    request: ProbeRequest::default(),
                },
                0,
            )
            .map_err(|e| format!("path refused: {e}"))?;
        let mut buf = vec![0u8; BUF_LEN];
        let key = aes128(&[0; 16]);
        let len = match probes.poll(now_ns, &key, &mut buf) {
            Some(Ok(p)) => p.len,
            Some(Err(e)) => return Err(format!("packet not built: {e}")),
            None => return Err("no packet due".into()),
        };
        // The host sends to the router owning the path's first egress interface.
        let first = net
            .interface(path.src, path.first_egress())
            .map(|(_, own, _)| own.router)
            .ok_or("first egress interface unknown")?;
        let (mut at, mut ingress) = ((path.src, first), Ingress::Internal);
        let mut crossed = Vec::new();
        for _ in 0..MAX_STEPS {
            crossed.push(at);
            let router = &self.routers[at.0][at.1];
            let d = Processor::new(router).process(&mut buf, len, ingress, now_ns);
            match d {
                Disposition::Forward { ifid } => {
                    let (_, _, far) = net
                        .interface(at.0, ifid)
                        .ok_or(format!("forwarded to unknown interface {ifid}"))?;
                    at = (far.as_ix, far.router);
                    ingress = Ingress::External(far.ifid);
                }
                Disposition::Sibling { ifid, addr } => {
                    let (_, own, _) = net
                        .interface(at.0, ifid)
                        .ok_or(format!("handed over for unknown interface {ifid}"))?;
                    let expect = net.ases[at.0].routers[own.router].internal;
                    if addr != SocketAddr::new(IpAddr::V4(expect), INTERNAL_PORT) {
                        return Err(format!("sibling address {addr}, expected {expect}"));
                    }
                    // The receiver names the link by any interface the sender owns.
                    let sender_if = net
                        .router_links(at.0, at.1)
                        .map(|(_, e, _)| e.ifid)
                        .next()
                        .ok_or("sender owns no interface")?;
                    at = (at.0, own.router);
                    ingress = Ingress::Sibling(sender_if);
                }
                Disposition::Deliver { addr } => {
                    return if at.0 == path.dst && addr.ip() == IpAddr::V4(dst.host()) {
                        Ok(crossed)
                    } else {
                        Err(format!("delivered to {addr} in AS index {}", at.0))
                    };
                }
                other => return Err(format!("at {:?}: {other:?}", at)),
            }
        }
        Err("too many hops (a forwarding loop)".into())
    }
}
