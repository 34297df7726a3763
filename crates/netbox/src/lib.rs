//! The network in a box: a multi-AS SCION network with ID-INT on one machine.
//!
//! * [`plan`]: the ASes, routers, links and hosts with every address (pure data);
//! * [`paths`]: SCION paths between every two ASes, MACed with the ASes' keys;
//! * [`files`]: every configuration file the processes read, with fresh secrets;
//! * [`sim`]: every path checked through real scion-dp routers in memory;
//! * [`netns`], [`procs`]: namespaces, veths and bridges; the processes in them;
//! * [`run`]: the main job (with [`hosts`], [`faults`], [`captures`], [`store`], [`api`],
//!   [`checks`] and [`report`]).

pub mod api;
pub mod captures;
pub mod checks;
pub mod faults;
pub mod files;
pub mod hosts;
pub mod netns;
pub mod paths;
pub mod plan;
pub mod procs;
pub mod report;
pub mod run;
pub mod sim;
pub mod store;

#[cfg(test)]
mod tests {
    use super::*;

    /// Every generated path is forwarded end to end by the generated routers.
    #[test]
    fn every_path_is_delivered_by_the_generated_routers() {
        for net in [plan::Network::demo(), plan::Network::small()] {
            let dir = tempfile::tempdir().unwrap();
            let layout = files::Layout::new(dir.path());
            let now_s = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_secs();
            let all = paths::all_paths(&net);
            let storage = files::Storage {
                postgres_url: "postgres://x@127.0.0.1/x".into(),
                victoria_url: "http://127.0.0.1:1".into(),
            };
            let (_, raws) =
                files::write_all(&net, &layout, now_s, &all, "127.0.0.1:1", &storage).unwrap();
            let sim = sim::SimNetwork::load(&net, &layout).unwrap();
            for (p, raw) in all.iter().zip(&raws) {
                let crossed = sim
                    .send(&net, p, raw, now_s * 1_000_000_000)
                    .unwrap_or_else(|e| panic!("{}: {e}", p.name(&net)));
                // At least one router per AS on the path.
                assert!(crossed.len() >= p.hops.len(), "{}", p.name(&net));
            }
            // A hop field MACed with another key is refused somewhere.
            let mut bad = raws[0].clone();
            let last = bad.len() - 1;
            bad[last] ^= 1;
            assert!(
                sim.send(&net, &all[0], &bad, now_s * 1_000_000_000)
                    .is_err()
            );
        }
    }
}
