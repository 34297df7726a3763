//! The repository's example configuration, `configs/collector.toml`, is valid and names files
//! that exist (its paths are relative to the repository root, where the collector starts).

use std::path::Path;

use collector::config::Config;

#[test]
fn the_shipped_example_configuration_loads() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let text = std::fs::read_to_string(root.join("configs/collector.toml")).unwrap();
    let cfg = Config::from_toml(&text, Vec::<(String, String)>::new()).unwrap();
    assert_eq!(cfg.collector.isd_as, "1-ff00:0:1");
    assert_eq!(cfg.storage.timeseries, "victoria");
    assert!(cfg.storage.postgres_url.is_some());
    let master = cfg.collector.master_key.as_ref().unwrap();
    assert!(root.join(master).is_file(), "{}", master.display());
    assert!(!cfg.topology.files.is_empty());
    for f in &cfg.topology.files {
        assert!(root.join(f).is_file(), "{}", f.display());
    }
}
