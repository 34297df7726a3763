//! A border router's data-plane configuration (`scion_dp::config::RouterConfig`) from the
//! topology model (feature `router-config`).

use std::path::Path;

use scion_dp::config::{self as dp, InterfaceConfig, Owner, Router, RouterConfig};

use crate::{DispatchedPorts, LinkType, MasterKeys, Topology, TopologyError};

impl From<LinkType> for dp::LinkType {
    fn from(t: LinkType) -> Self {
        match t {
            LinkType::Core => dp::LinkType::Core,
            LinkType::Parent => dp::LinkType::Parent,
            LinkType::Child => dp::LinkType::Child,
            LinkType::Peer => dp::LinkType::Peer,
        }
    }
}

impl From<DispatchedPorts> for dp::DispatchedPorts {
    fn from(p: DispatchedPorts) -> Self {
        match p {
            DispatchedPorts::None => dp::DispatchedPorts::None,
            DispatchedPorts::All => dp::DispatchedPorts::All,
            DispatchedPorts::Range(lo, hi) => dp::DispatchedPorts::Range(lo, hi),
        }
    }
}

impl MasterKeys {
    /// The hop-field forwarding key derived from `master0` (PBKDF2, as the SCION router).
    pub fn forwarding_key(&self) -> [u8; 16] {
        scion_dp::hop_mac::forwarding_key(&self.master0)
    }
}

impl Topology {
    /// The data-plane configuration of router `id`, with the forwarding key derived from
    /// `keys_dir/master0.key`. Checked with [`Topology::check_router`] and validated with
    /// [`Router::new`] so a returned config is accepted.
    pub fn router_config(
        &self,
        id: &str,
        keys_dir: impl AsRef<Path>,
    ) -> Result<RouterConfig, TopologyError> {
        let keys = MasterKeys::load(keys_dir)?;
        self.router_config_with_key(id, keys.forwarding_key())
    }

    /// As [`Topology::router_config`], with the forwarding key given directly.
    pub fn router_config_with_key(
        &self,
        id: &str,
        forwarding_key: [u8; 16],
    ) -> Result<RouterConfig, TopologyError> {
        self.check_router(id)?;
        let (asys, me) = self.find_router(id)?;
        let mut interfaces = Vec::new();
        for r in &asys.routers {
            let owner = if r.id == me.id {
                Owner::Local
            } else {
                Owner::Sibling(r.internal_addr)
            };
            for i in &r.interfaces {
                interfaces.push(InterfaceConfig {
                    id: i.id,
                    link_type: i.link_type.into(),
                    neighbor_ia: i.neighbor_ia,
                    owner,
                });
            }
        }
        interfaces.sort_by_key(|i| i.id);
        let config = RouterConfig {
            local_ia: asys.ia,
            core: asys.core,
            internal_addr: me.internal_addr,
            interfaces,
            services: asys.services.clone(),
            dispatched_ports: asys.dispatched_ports.into(),
            forwarding_key,
        };
        Router::new(config.clone()).map_err(|reason| TopologyError::Config {
            file: self.file.clone(),
            id: id.to_string(),
            reason: reason.to_string(),
        })?;
        Ok(config)
    }
}
