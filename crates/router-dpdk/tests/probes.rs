//! Infrastructure mode: a router configured with `[probes]` originates probes on its paths
//! at the configured interval; they leave by the path's egress interface as valid SCION with
//! the configured ID-INT request (verifier = the AS's collector, encrypted when configured),
//! the router's own entry filled, the queue length from the measured transmit buffer.

mod common;

use common::*;
use drkey::Protocol;
use drkey::provider::{Level1Provider, LocalProvider};
use idint_wire::HostAddr;
use idint_wire::crypto::Aes128Enc;
use idint_wire::idint::verify::{ReplayWindow, decode_entries, open};
use idint_wire::idint::{IdInt, Instruction, Verifier};
use idint_wire::packet::Packet;
use idint_wire::scion::ScionHeader;
use std::net::Ipv4Addr;
use wire_tools::pcap::PcapReader;

/// The AS's collector (the probes' verifier).
const COLLECTOR: Ipv4Addr = Ipv4Addr::new(10, 123, 10, 5);
/// The router's internal address (the probes' source host).
const ROUTER_HOST: Ipv4Addr = Ipv4Addr::new(10, 123, 10, 1);
/// Probe interval of the tests, ms.
const INTERVAL_MS: u64 = 200;

/// K(router -> collector), the key the router signs its source entries with.
fn source_key(now_s: u64) -> Aes128Enc {
    let cfg = router_config();
    let keys = scion_topology::MasterKeys::load(example_dir().join("keys")).unwrap();
    let p = LocalProvider::new(cfg.local_ia, &keys.master0, 86_400).unwrap();
    let (_, l1) = p
        .level1(Protocol::IDINT, cfg.local_ia, cfg.local_ia, now_s)
        .unwrap();
    let ha = drkey::host_as(&l1.cipher(), &HostAddr::V4(ROUTER_HOST)).unwrap();
    drkey::host_host(&ha.cipher(), &HostAddr::V4(COLLECTOR))
        .unwrap()
        .cipher()
}

/// The raw SCION path of a packet leaving br1a on interface 2 (valid hop field MACs), hex.
fn path_hex(now: u64) -> String {
    let p = outbound(now, 2, false, None, b"");
    let h = ScionHeader::new_checked(&p[..]).unwrap();
    h.path_bytes().iter().map(|b| format!("{b:02x}")).collect()
}

/// Runs a router with probes (`encrypt`; software distribution if `software`) for 2 s;
/// returns the frames it sent with their capture times, and the run's time bounds.
fn run_probing(
    encrypt: bool,
    software: bool,
) -> (Vec<(u64, Vec<u8>)>, serde_json::Value, u64, u64) {
    let now = now_s();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("probe-paths.toml"),
        format!(
            "# probes of the test\n[[path]]\ndst_ia = \"1-ff00:0:2\"\ndst_host = \"{DST_HOST}\"\n\
             dst_port = 40000\npath = \"{}\"\n",
            path_hex(now)
        ),
    )
    .unwrap();
    let (inp, outp) = (dir.path().join("in.pcap"), dir.path().join("out.pcap"));
    write_pcap(&inp, &[]);
    let vdev = format!(
        "net_pcap0,rx_pcap={},tx_pcap={}",
        inp.display(),
        outp.display()
    );
    let probes = format!(
        "\n[probes]\npaths = \"probe-paths.toml\"\ninterval_ms = {INTERVAL_MS}\n\
         instructions = [0x82, 0x83, 0x4f, 0x4e]\nencrypt = {encrypt}\nverifier = \"{COLLECTOR}\"\n"
    );
    let cfg = write_config(dir.path(), &[vdev], "net_pcap0", &probes);
    if software {
        let t = std::fs::read_to_string(&cfg)
            .unwrap()
            .replace("\"-l\", \"0-1\"", "\"--lcores=0@0,1@1,2@1\"");
        std::fs::write(
            &cfg,
            t.replace(
                "[idint]",
                "[dataplane]\ndistribution = \"software\"\n\n[idint]",
            ),
        )
        .unwrap();
    }
    let t0 = now_s() * 1_000_000_000;
    let out = run_router(&["--config", cfg.to_str().unwrap(), "--duration", "2"]);
    let t1 = now_s() * 1_000_000_000 + 1_000_000_000;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "router failed: {stderr}");
    assert!(
        stderr.contains("probing 1 path(s) every 200 ms"),
        "{stderr}"
    );
    let f = std::fs::File::open(&outp).unwrap();
    let mut r = PcapReader::new(std::io::BufReader::new(f)).unwrap();
    let mut sent = Vec::new();
    while let Some(rec) = r.next_record().unwrap() {
        sent.push((rec.timestamp_ns, rec.data));
    }
    (sent, serde_json::from_slice(&out.stdout).unwrap(), t0, t1)
}

/// Checks every probe sent; returns the router entries' queue length items.
fn check_probes(encrypt: bool, software: bool) -> Vec<Option<u64>> {
    let (sent, summary, t0, t1) = run_probing(encrypt, software);
    // 2 s at one probe per 200 ms (the first at start; probes are due-checked every 5 ms).
    assert!(
        (7..=11).contains(&sent.len()),
        "{} probes in 2 s: {summary:#}",
        sent.len()
    );
    assert_eq!(
        summary["io"]["probes_sent"],
        sent.len() as u64,
        "{summary:#}"
    );
    assert_eq!(summary["io"]["probe_errors"], 0, "{summary:#}");
    let gaps: Vec<u64> = sent.windows(2).map(|w| w[1].0 - w[0].0).collect();
    // Each probe is due one interval after the last one was due (the first at start, sent
    // once the worker runs: the first gap may be shorter).
    for g in &gaps[1..] {
        assert!(
            (150_000_000..=260_000_000).contains(g),
            "probes {g} ns apart, configured {INTERVAL_MS} ms: {gaps:?}"
        );
    }
    let source_key = source_key(t0 / 1_000_000_000);
    let entry_key = as_key_for(t0 / 1_000_000_000, router_config().local_ia, COLLECTOR);
    let mut window = ReplayWindow::<64>::new(60_000_000_000, 5_000_000_000);
    let mut queue_lens = Vec::new();
    for (k, (_, f)) in sent.iter().enumerate() {
        let (_, dst, dmac, _, mut scion) = split(f);
        assert_eq!(
            dst.to_string(),
            IF2_REMOTE,
            "probe {k} leaves by interface 2"
        );
        assert_eq!(dmac, IF2_MAC);
        let pkt = Packet::parse(&scion).expect("valid SCION");
        let range = pkt.hbh_range().expect("an ID-INT hop-by-hop option");
        let mut st = IdInt::locate(&mut scion[range]).unwrap().unwrap();
        let main = st.main();
        assert!(main.infrastructure() && main.discard(), "probe {k}");
        assert_eq!(main.encrypt(), encrypt, "probe {k}");
        assert_eq!(
            main.verifier(),
            Verifier::ThirdParty {
                ia: router_config().local_ia,
                host: HostAddr::V4(COLLECTOR)
            }
        );
        assert_eq!(
            main.instructions(),
            [0x82, 0x83, 0x4f, 0x4e].map(Instruction)
        );
        // The collector's keys verify (and decrypt) the stack.
        let n = open(&mut st, &mut window, t1, &source_key, |i, _| {
            (i == 1).then_some(&entry_key)
        })
        .unwrap_or_else(|e| panic!("probe {k}: the collector cannot verify it: {e}"));
        assert_eq!(n, 2, "source entry + this router's entry");
        let entries: Vec<_> = decode_entries(&st).map(|e| e.unwrap()).collect();
        assert!(entries[0].source);
        let e = &entries[1];
        assert_eq!(e.encrypted, encrypt);
        assert_eq!(e.metadata.node_id, Some(77));
        let ingress = e.metadata.slots[0].expect("ingress timestamp").value;
        let egress = e.metadata.slots[1].expect("egress timestamp").value;
        let (lo, hi) = (t0 % (1 << 48), t1 % (1 << 48));
        assert!(lo <= ingress && ingress <= egress && egress <= hi);
        assert_eq!(e.metadata.slots[3].map(|s| s.value), Some(0), "tx queue 0");
        queue_lens.push(e.metadata.slots[2].map(|s| s.value));
    }
    queue_lens
}

#[test]
fn probes_leave_at_the_interval_verified_by_the_collector_unencrypted() {
    let q = check_probes(false, false);
    // net_pcap has no tx descriptor status: the queue length is not invented.
    assert!(q.iter().all(Option::is_none), "{q:?}");
}

#[test]
fn probes_leave_encrypted_with_the_queue_length_of_the_distribution_ring() {
    let q = check_probes(true, true);
    // The worker's ring to the distributor is measured (the probe was alone in it).
    assert!(q.iter().all(|v| *v == Some(0)), "{q:?}");
}
