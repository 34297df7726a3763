use super::*;

#[test]
fn macs() {
    assert_eq!(parse_mac("02:00:0a:FF:00:01"), Some([2, 0, 10, 255, 0, 1]));
    assert_eq!(parse_mac("02-00-0a-ff-00-01"), Some([2, 0, 10, 255, 0, 1]));
    assert_eq!(parse_mac("02:00:0a:ff:00"), None);
    assert_eq!(parse_mac("02:00:0a:ff:00:01:02"), None);
    assert_eq!(parse_mac("2:00:0a:ff:00:01"), None);
    assert_eq!(parse_mac("zz:00:0a:ff:00:01"), None);
    assert_eq!(parse_mac("02:00-0a:ff-00:01"), None, "mixed separators");
    assert_eq!(parse_mac("02-00:0a:ff:00:01"), None, "mixed separators");
    assert_eq!(parse_mac("02.00.0a.ff.00.01"), None);
    assert_eq!(parse_mac(""), None);
}

/// A working configuration for router br1a of the shared example topology, with `extra`
/// appended (TOML) after `edit` of the base text.
fn example(edit: impl Fn(&str) -> String, extra: &str) -> Result<Config, ConfigError> {
    let ex = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/scion/config_examples/router_benchmark");
    let base = format!(
        "topology = {:?}\nkeys = {:?}\nrouter_id = \"br1a\"\neal = []\n\n\
         [[port]]\ndevice = \"net_null0\"\ninterfaces = [2, 3]\ninternal = true\n\n\
         [[neighbor]]\nip = \"10.123.2.2\"\nmac = \"02:00:00:00:02:02\"\n",
        ex.join("topology.json"),
        ex.join("keys"),
    );
    Config::parse(
        &format!("{}\n{extra}", edit(&base)),
        Path::new("/x/router.toml"),
    )
}

/// `example` with `extra` must fail with `/x/router.toml: {needle}...`.
#[track_caller]
fn refused(extra: &str, needle: &str) {
    refused_edit(|t| t.to_string(), extra, needle);
}

#[track_caller]
fn refused_edit(edit: impl Fn(&str) -> String, extra: &str, needle: &str) {
    let e = example(edit, extra).expect_err(needle).to_string();
    assert!(
        e.starts_with(&format!("/x/router.toml: {needle}")),
        "{needle:?} does not start {e:?}"
    );
}

/// The repository's example configuration (`configs/router.toml`, used by the main job)
/// loads and is what its comments say.
#[test]
fn the_shipped_example_configuration_loads() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs/router.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let c = Config::parse(&text, &path).unwrap();
    assert_eq!(c.router_id, "br1a");
    assert_eq!(c.router.local_ia.to_string(), "1-ff00:0:1");
    assert_eq!(c.ports.len(), 1);
    assert!(c.eal.iter().any(|a| a == "--no-huge"), "{:?}", c.eal);
    assert_eq!(c.node_id, Some(1));
}

/// The example topology with `bfd` objects on interfaces 2 (disabled) and 3 (multiplier
/// 7), written once into the target directory.
fn bfd_topology() -> PathBuf {
    let ex = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/scion/config_examples/router_benchmark/topology.json");
    let text = std::fs::read_to_string(ex).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let ifs = &mut v["border_routers"]["br1a"]["interfaces"];
    ifs["2"]["bfd"] = serde_json::json!({ "disable": true });
    ifs["3"]["bfd"] = serde_json::json!({ "detect_mult": 7 });
    let dir = std::env::temp_dir().join(format!("bfd-topology-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("topology.json");
    std::fs::write(&p, serde_json::to_string(&v).unwrap()).unwrap();
    p
}

#[test]
fn bfd_packets_find_their_session_by_link_and_path_type() {
    use crate::bfd::{ControlPacket, Discard, Received, Via};
    let c = example(|t| t.to_string(), "").unwrap();
    let plan = &c.bfd;
    let r = |onehop: bool, src: &str| Received {
        onehop,
        src_ia: c.router.local_ia,
        src_host: Some(src.parse().unwrap()),
        packet: Err::<ControlPacket, _>(Discard::Truncated),
    };
    assert_eq!(
        plan.session_for(Via::External(3), &r(true, "10.123.3.3")),
        Some(1)
    );
    // Empty path on an external link, OneHop from a sibling, unknown sibling: none.
    assert_eq!(
        plan.session_for(Via::External(3), &r(false, "10.123.3.3")),
        None
    );
    assert_eq!(
        plan.session_for(Via::External(9), &r(true, "10.123.3.3")),
        None
    );
    assert_eq!(
        plan.session_for(Via::Internal(None), &r(false, "10.123.10.2")),
        Some(2)
    );
    assert_eq!(
        plan.session_for(Via::Internal(None), &r(true, "10.123.10.2")),
        None
    );
    assert_eq!(
        plan.session_for(Via::Internal(None), &r(false, "10.123.10.9")),
        None
    );
}

#[test]
fn bfd_sessions_per_interface_and_sibling_with_reference_defaults() {
    let c = example(|t| t.to_string(), "").unwrap();
    let links: Vec<_> = c.bfd.sessions.iter().map(|s| s.link).collect();
    assert_eq!(links.len(), 3, "{links:?}");
    assert!(matches!(links[0], BfdLink::External { ifid: 2, .. }));
    assert!(matches!(links[1], BfdLink::External { ifid: 3, .. }));
    assert_eq!(
        links[2],
        BfdLink::Sibling {
            addr: "10.123.10.2:30042".parse().unwrap()
        }
    );
    assert_eq!(c.bfd.sessions[2].interfaces, vec![4]);
    for s in &c.bfd.sessions {
        assert!(!s.settings.disable);
        assert_eq!(s.settings.params(), crate::bfd::Params::default());
    }
    let c = example(
        |t| t.to_string(),
        "[bfd]\ndisable = true\ndetect_mult = 5\ndesired_min_tx_interval = \"50ms\"\n",
    )
    .unwrap();
    for s in &c.bfd.sessions {
        assert!(s.settings.disable);
        assert_eq!(s.settings.detect_mult, 5);
        assert_eq!(
            s.settings.desired_min_tx,
            std::time::Duration::from_millis(50)
        );
    }
    refused("[bfd]\ndetect_mult = 0\n", "bfd.detect_mult");
    // Per-interface overrides from the topology win over the defaults.
    let c = example(
        |t| {
            t.replace(
                "topology = ",
                &format!("topology = {:?}\n#", bfd_topology().display()),
            )
        },
        "[bfd]\ndetect_mult = 5\n",
    )
    .unwrap();
    let two = &c.bfd.sessions[0];
    assert!(two.settings.disable);
    let three = &c.bfd.sessions[1];
    assert_eq!(three.settings.detect_mult, 7);
    assert_eq!(c.bfd.sessions[2].settings.detect_mult, 5);
    refused(
        "[bfd]\nrequired_min_rx_interval = \"soon\"\n",
        "bfd.required_min_rx_interval",
    );
}

#[test]
fn example_is_valid() {
    let c = example(|t| t.to_string(), "").unwrap();
    assert_eq!(c.ports.len(), 1);
}

#[test]
fn pci_devices_are_named_as_dpdk_names_their_ports() {
    let pci = |t: &str| t.replace("net_null0", "3B:00.1");
    let c = example(pci, "").unwrap();
    assert_eq!(c.ports[0].device, "0000:3b:00.1");
    // The same device with and without its PCI domain is one device.
    refused_edit(
        pci,
        "[[port]]\ndevice = \"0000:3b:00.1\"\ninterfaces = [1]",
        "port[1].device: device \"0000:3b:00.1\" configured twice",
    );
}

#[test]
fn receivers_sharing_an_address_on_one_port_are_refused() {
    // In scionproto's router test topology, br1-ff00_0_110-1's interface 1 has the router's
    // internal address.
    let ex = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/scion/config_examples/router_control_testdata");
    let config = |ports: &str| {
        Config::parse(
            &format!(
                "topology = {:?}\nkeys = {:?}\nrouter_id = \"br1-ff00_0_110-1\"\neal = []\n\n{ports}",
                ex.join("topology.json"),
                ex.join("keys"),
            ),
            Path::new("/x/router.toml"),
        )
    };
    let e = config("[[port]]\ndevice = \"net_null0\"\ninterfaces = [1]\ninternal = true\n")
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with(
            "/x/router.toml: port[0]: interface 1 and the internal network both receive on \
             127.0.0.1:50000"
        ),
        "{e}"
    );
    // On two ports the port tells them apart.
    config(
        "[[port]]\ndevice = \"net_null0\"\ninterfaces = [1]\n\n\
         [[port]]\ndevice = \"net_null1\"\ninternal = true\n",
    )
    .unwrap();
}

#[test]
fn port_must_carry_something() {
    refused(
        "[[port]]\ndevice = \"net_null1\"",
        "port[1]: device \"net_null1\" carries no SCION interface and not the internal network",
    );
    refused(
        "[[port]]\ndevice = \"net_null1\"\ninterfaces = []\ninternal = false",
        "port[1]: device",
    );
}

#[cfg(feature = "measurement-aids")]
#[test]
fn io_only_is_off_unless_asked() {
    assert!(!example(|t| t.to_string(), "").unwrap().aids.io_only);
    let c = example(|t| t.to_string(), "[dataplane]\nio_only = true").unwrap();
    assert!(c.aids.io_only);
}

#[cfg(not(feature = "measurement-aids"))]
#[test]
fn measurement_aids_are_refused_by_production_builds() {
    refused(
        "[dataplane]\nio_only = false",
        "dataplane.io_only: a measurement aid for benchmarks; this build of idint-router \
         does not have it (cargo feature `measurement-aids`)",
    );
    refused(
        "[dataplane]\nidint_lower_bound = \"sealed\"",
        "dataplane.idint_lower_bound: a measurement aid",
    );
}

#[cfg(feature = "measurement-aids")]
#[test]
fn io_only_refuses_sections_it_cannot_apply() {
    for section in [
        "[idint]\nnode_id = 1",
        "[export]\ncollector = \"127.0.0.1:4740\"",
        "[drkey]",
    ] {
        let name = section.split(']').next().unwrap_or_default();
        refused(
            &format!("[dataplane]\nio_only = true\n{section}"),
            &format!(
                "dataplane.io_only: io_only = true forwards frames untouched (no SCION or \
                 ID-INT processing), so the {name}] section cannot apply"
            ),
        );
    }
    // Without io_only the same sections are fine.
    example(|t| t.to_string(), "[idint]\nnode_id = 1\n[drkey]").unwrap();
}

#[cfg(feature = "measurement-aids")]
#[test]
fn the_lower_bound_aid_is_off_unless_asked_and_needs_processing() {
    use scion_dp::lower_bound::Mode;
    let mode = |v: &str| {
        example(
            |t| t.to_string(),
            &format!("[dataplane]\nidint_lower_bound = {v}"),
        )
        .unwrap()
        .aids
        .idint_lower_bound
    };
    let default = example(|t| t.to_string(), "")
        .unwrap()
        .aids
        .idint_lower_bound;
    assert_eq!(default, Mode::Off);
    assert_eq!(mode("\"off\""), Mode::Off);
    assert_eq!(mode("\"sealed\""), Mode::Sealed);
    assert_eq!(mode("\"unsealed\""), Mode::Unsealed);
    refused(
        "[dataplane]\nidint_lower_bound = \"on\"",
        "dataplane.idint_lower_bound: \"on\": expected \"off\", \"sealed\" or \"unsealed\"",
    );
    refused(
        "[dataplane]\nio_only = true\nidint_lower_bound = \"sealed\"",
        "dataplane.idint_lower_bound: io_only = true does no ID-INT processing",
    );
}

#[test]
fn idle_sleep_and_probes_are_checked() {
    assert_eq!(
        example(|t| t.to_string(), "").unwrap().idle_sleep_us,
        DEFAULT_IDLE_SLEEP_US
    );
    let c = example(|t| t.to_string(), "[dataplane]\nidle_sleep_us = 0").unwrap();
    assert_eq!(c.idle_sleep_us, 0, "busy polling");
    refused(
        "[dataplane]\nidle_sleep_us = 20000",
        "dataplane.idle_sleep_us: 20000 is outside 0 ..= 10000",
    );
    assert!(example(|t| t.to_string(), "").unwrap().probes.is_none());
    refused("[probes]\npaths = \"p.toml\"", "probes.verifier: missing");
    refused(
        "[probes]\npaths = \"nope.toml\"\nverifier = \"10.0.0.5\"",
        "probes.paths: /x/nope.toml: cannot read",
    );
    refused(
        "[export]\ncollector = \"127.0.0.1:4740\"\n[probes]\npaths = \"nope.toml\"",
        "probes.paths: /x/nope.toml",
    );
    let e = example(
        |t| t.to_string(),
        "[probes]\npaths = \"p.toml\"\ncolour = 1",
    )
    .expect_err("unknown key")
    .to_string();
    assert!(e.contains("unknown field") && e.contains("colour"), "{e}");
}

#[test]
fn export_values_are_checked_not_clamped() {
    let export = |rest: &str| format!("[export]\ncollector = \"127.0.0.1:4740\"\n{rest}");
    refused(
        &export("flush_ms = 0"),
        "export.flush_ms: 0 is outside 1 ..= 10000",
    );
    refused(
        &export("flush_ms = 99999999"),
        "export.flush_ms: 99999999 is outside 1 ..= 10000",
    );
    for ok in [1, 10_000] {
        let c = example(|t| t.to_string(), &export(&format!("flush_ms = {ok}"))).unwrap();
        assert_eq!(c.export.map(|e| e.flush_ms), Some(ok));
    }
    for (collector, why) in [
        ("127.0.0.1:0", "port 0"),
        ("0.0.0.0:4740", "the unspecified address"),
        ("[::]:4740", "the unspecified address"),
        ("224.0.0.1:4740", "a multicast address"),
        ("[ff02::1]:4740", "a multicast address"),
        ("255.255.255.255:4740", "the broadcast address"),
    ] {
        let e = example(
            |t| t.to_string(),
            &format!("[export]\ncollector = \"{collector}\""),
        )
        .expect_err(collector)
        .to_string();
        assert!(
            e.starts_with("/x/router.toml: export.collector: ") && e.contains(why),
            "{collector}: {e}"
        );
    }
    example(|t| t.to_string(), "[export]\ncollector = \"[::1]:4740\"").unwrap();
}

#[test]
fn next_hops_are_unicast() {
    for (mac, why) in [
        ("00:00:00:00:00:00", "the all-zero MAC"),
        ("ff:ff:ff:ff:ff:ff", "the broadcast MAC"),
        ("01:00:5e:00:00:01", "a multicast MAC"),
        ("33-33-00-00-00-01", "a multicast MAC"),
    ] {
        refused_edit(
            |t| t.replace("02:00:00:00:02:02", mac),
            "",
            &format!("neighbor[0].mac: {mac:?} is {why}"),
        );
        refused_edit(
            |t| {
                t.replace(
                    "internal = true",
                    &format!("internal = true\ndefault_next_hop_mac = \"{mac}\""),
                )
            },
            "",
            &format!("port[0].default_next_hop_mac: {mac:?} is {why}"),
        );
    }
    refused_edit(
        |t| t.replace("02:00:00:00:02:02", "02:00-00:00-02:02"),
        "",
        "neighbor[0].mac: \"02:00-00:00-02:02\" is not a MAC address",
    );
    for (ip, why) in [
        ("0.0.0.0", "the unspecified address"),
        ("::", "the unspecified address"),
        ("255.255.255.255", "the broadcast address"),
        ("224.0.0.1", "a multicast address"),
        ("ff02::1", "a multicast address"),
        (
            "::ffff:10.123.2.2",
            "an IPv4-mapped IPv6 address (write the IPv4 address 10.123.2.2)",
        ),
    ] {
        refused_edit(
            |t| t.replace("\"10.123.2.2\"", &format!("{ip:?}")),
            "",
            &format!("neighbor[0].ip: {ip} is {why}"),
        );
    }
    // The duplicate the mapped form used to hide.
    refused(
        "[[neighbor]]\nip = \"::ffff:10.123.2.2\"\nmac = \"02:00:00:00:02:03\"",
        "neighbor[1].ip: ::ffff:10.123.2.2 is an IPv4-mapped IPv6 address",
    );
}

#[test]
fn neighbour_ageing_errors_name_the_right_item() {
    refused(
        "[dataplane]\nneighbor_refresh_secs = 0",
        "dataplane.neighbor_refresh_secs: 0",
    );
    refused(
        "[dataplane]\nneighbor_refresh_secs = 60\nneighbor_expire_secs = 60",
        "dataplane.neighbor_expire_secs: neighbour entries must be refreshed (after 60 s) \
         before they expire (after 60 s)",
    );
}

#[test]
fn eal_arguments_are_checked_before_eal_runs() {
    refused_edit(
        |t| t.replace("eal = []", "eal = [\"--no-huge\", \"-h\"]"),
        "",
        "eal: \"-h\" makes DPDK print its usage",
    );
    refused_edit(
        |t| t.replace("eal = []", "eal = [\"-l\", \"0\"]"),
        "",
        "eal: -l 0 gives 1 lcore",
    );
}

#[test]
fn toml_errors_name_file_and_key() {
    let e = Config::parse("topology = 3\nrouter_id = \"x\"", Path::new("/x/r.toml"))
        .expect_err("bad type");
    let s = e.to_string();
    assert!(s.starts_with("/x/r.toml:"), "{s}");
    assert!(s.contains("topology"), "{s}");
    let e = Config::parse(
        "topology = \"t.json\"\nrouter_id = \"x\"\nbogus = 1",
        Path::new("/x/r.toml"),
    )
    .expect_err("unknown key");
    assert!(e.to_string().contains("bogus"), "{e}");
    let e = Config::parse(
        "topology = \"/nonexistent/t.json\"\nrouter_id = \"x\"",
        Path::new("/x/r.toml"),
    )
    .expect_err("missing topology");
    assert!(e.to_string().contains("/nonexistent/t.json"), "{e}");
}

#[test]
fn port_subnets_default_to_the_internal_address_and_are_checked() {
    let c = example(|t| t.to_string(), "").unwrap();
    let internal = c.router.internal_addr.ip();
    assert_eq!(
        c.ports[0].subnets,
        vec![crate::tables::Subnet::around(internal)]
    );
    let c = example(
        |t| {
            t.replace(
                "internal = true",
                "internal = true\nsubnets = [\"10.0.0.0/8\", \"fd00::/48\"]",
            )
        },
        "",
    )
    .unwrap();
    assert_eq!(c.ports[0].subnets.len(), 2);
    refused_edit(
        |t| {
            t.replace(
                "internal = true",
                "internal = true\nsubnets = [\"10.0.0.1/8\"]",
            )
        },
        "",
        "port[0].subnets: \"10.0.0.1/8\": host bits set",
    );
}

#[test]
fn scmp_rate_limit_defaults_and_bounds() {
    let c = example(|t| t.to_string(), "").unwrap();
    assert_eq!(
        (c.scmp_rate, c.scmp_burst),
        (
            crate::ratelimit::DEFAULT_RATE,
            crate::ratelimit::DEFAULT_BURST
        )
    );
    let c = example(
        |t| t.to_string(),
        "[dataplane]\nscmp_rate = 0\nscmp_burst = 5",
    )
    .unwrap();
    assert_eq!((c.scmp_rate, c.scmp_burst), (0, 5));
    refused("[dataplane]\nscmp_rate = 1000001", "dataplane.scmp_rate");
    refused("[dataplane]\nscmp_burst = 100001", "dataplane.scmp_burst");
}
