//! pcap in -> router (its own process, `net_pcap`) -> pcap out, compared packet by packet
//! with what scion-dp predicts for the same input; ID-INT telemetry verified and decrypted
//! with the host API; malformed and foreign frames counted and not forwarded.

mod common;

use common::*;
use idint_wire::crypto::aes128;
use idint_wire::idint::IdInt;
use idint_wire::idint::verify::{ReplayWindow, decode_entries, open};
use idint_wire::packet::Packet;
use scion_dp::config::Router;
use scion_dp::{Disposition, Ingress, Processor, ScmpReason};

fn arp_request(mac: [u8; 6], from: &str, target: &str) -> Vec<u8> {
    let from: std::net::Ipv4Addr = from.parse().unwrap();
    let target: std::net::Ipv4Addr = target.parse().unwrap();
    let mut f = vec![0u8; 60];
    f[0..6].copy_from_slice(&[0xff; 6]);
    f[6..12].copy_from_slice(&mac);
    f[12..14].copy_from_slice(&[0x08, 0x06]);
    f[14..22].copy_from_slice(&[0, 1, 8, 0, 6, 4, 0, 1]);
    f[22..28].copy_from_slice(&mac);
    f[28..32].copy_from_slice(&from.octets());
    f[38..42].copy_from_slice(&target.octets());
    f
}

fn predict(input: &[u8], now_ns: u64) -> (Disposition, Vec<u8>) {
    let router = Router::new(router_config()).unwrap();
    let mut p = Processor::new(&router);
    let mut buf = vec![0u8; 2048];
    buf[..input.len()].copy_from_slice(input);
    let d = p.process(&mut buf, input.len(), Ingress::Internal, now_ns);
    let len = match d {
        Disposition::Reply { len, .. } => len,
        _ => input.len(),
    };
    buf.truncate(len);
    (d, buf)
}

#[test]
fn pcap_in_router_pcap_out_matches_scion_dp() {
    let now = now_s();
    let plain = packet(now, 2, false, false, b"plain payload");
    let with_idint = packet(now, 2, false, true, b"telemetry please");
    let bad_mac = packet(now, 2, true, false, b"bad mac");
    let truncated = plain[..30].to_vec();
    let mut arp = vec![0u8; 60];
    arp[12..14].copy_from_slice(&[0x08, 0x06]);
    let frames = vec![
        frame(HOST, INTERNAL, &plain),
        frame(HOST, INTERNAL, &with_idint),
        frame(HOST, INTERNAL, &bad_mac),
        frame(HOST, INTERNAL, &truncated),
        frame(HOST, "10.9.9.9:30042", &plain), // not one of the router's addresses
        arp,
        arp_request([2, 0, 0, 0, 0x10, 0x50], "10.123.10.50", "10.123.10.1"),
        arp_request([2, 0, 0, 0, 0x10, 0x50], "10.123.10.50", "10.123.10.77"),
    ];
    let PcapRun {
        summary,
        sent,
        t0,
        t1,
        ..
    } = run_on_pcap(&frames, false, "1", |t| t);

    // Counters: everything accounted for.
    assert_eq!(summary["io"]["rx_frames"], 8, "{summary:#}");
    assert_eq!(summary["forwarded"], 2, "{summary:#}");
    assert_eq!(summary["scmp_replies"]["invalid_hop_field_mac"], 1);
    assert_eq!(summary["drops"]["malformed"], 1);
    assert_eq!(summary["io"]["not_for_us"], 1);
    assert_eq!(
        summary["io"]["not_scion"], 2,
        "a zero frame, an ARP request for another host"
    );
    assert_eq!(summary["io"]["arp_replies"], 1);
    assert_eq!(summary["io"]["tx_frames"], 4);
    assert_eq!(summary["idint"]["idint_pushed"], 1);
    assert_eq!(summary["idint"]["idint_encrypted"], 1);
    assert_eq!(summary["ports"][0]["stats"]["tx_packets"], 4);

    let all = sent;
    let (arp, sent): (Vec<_>, Vec<_>) = all.into_iter().partition(|f| f[12..14] == [0x08, 0x06]);
    assert_eq!(sent.len(), 3, "forwarded, ID-INT forwarded, SCMP reply");
    assert_eq!(arp.len(), 1, "one ARP reply");
    let a = &arp[0][14..42];
    assert_eq!(&a[6..8], &[0, 2], "ARP reply");
    assert_eq!(
        &a[14..18],
        &[10, 123, 10, 1],
        "for the router's internal address"
    );
    assert_eq!(&a[18..24], &[2, 0, 0, 0, 0x10, 0x50]);
    assert_eq!(&arp[0][0..6], &[2, 0, 0, 0, 0x10, 0x50]);
    assert_eq!(&a[8..14], &arp[0][6..12], "sender MAC = the port's MAC");

    // 1. Plain packet: leaves on interface 2 with exactly the bytes scion-dp predicts.
    let (d, want) = predict(&plain, t0);
    assert_eq!(d, Disposition::Forward { ifid: 2 });
    let (src, dst, dmac, smac, scion) = split(&sent[0]);
    assert_eq!(src, IF2_LOCAL.parse().unwrap());
    assert_eq!(dst, IF2_REMOTE.parse().unwrap());
    assert_eq!(dmac, IF2_MAC);
    assert_ne!(smac, IF2_MAC);
    assert_eq!(scion, want, "forwarded bytes differ from scion-dp's");

    // 2. ID-INT packet: forwarded on interface 2; the destination verifies and decrypts the
    //    router's entry.
    let (src, dst, _, _, mut scion) = split(&sent[1]);
    assert_eq!(
        (src, dst),
        (IF2_LOCAL.parse().unwrap(), IF2_REMOTE.parse().unwrap())
    );
    assert_eq!(
        scion.len(),
        with_idint.len(),
        "ID-INT never changes the size"
    );
    let range = Packet::parse(&scion).unwrap().hbh_range().unwrap();
    let mut st = IdInt::locate(&mut scion[range]).unwrap().unwrap();
    let key = as_key(t0 / 1_000_000_000);
    let mut window = ReplayWindow::<64>::new(60_000_000_000, 5_000_000_000);
    let n = open(&mut st, &mut window, t1, &aes128(&SOURCE_KEY), |i, _| {
        (i == 1).then_some(&key)
    })
    .expect("the host verifies the router's entry");
    assert_eq!(n, 2, "source entry + router entry");
    let entries: Vec<_> = decode_entries(&st).map(|e| e.unwrap()).collect();
    let e = &entries[1];
    assert!(e.encrypted && e.egress && !e.source);
    assert_eq!(e.hop, 0);
    assert_eq!(e.metadata.node_id, Some(77));
    let ts = e.metadata.slots[0].expect("ingress timestamp").value;
    let (lo, hi) = (t0 % (1 << 48), t1 % (1 << 48));
    assert!(
        lo <= ts && ts <= hi,
        "ingress timestamp {ts} not in [{lo}, {hi}]"
    );

    // 3. Bad MAC: SCMP reply back to the host, bytes as scion-dp builds them.
    let (d, want) = predict(&bad_mac, t0);
    assert!(matches!(
        d,
        Disposition::Reply {
            scmp: ScmpReason::InvalidHopFieldMac,
            ..
        }
    ));
    let (src, dst, dmac, _, scion) = split(&sent[2]);
    assert_eq!(src, INTERNAL.parse().unwrap());
    assert_eq!(dst, HOST.parse().unwrap());
    assert_eq!(
        dmac,
        frames[2][6..12],
        "replies go back to the sender's MAC"
    );
    assert_eq!(scion, want, "SCMP reply differs from scion-dp's");
}

#[test]
fn unknown_next_hop_is_resolved_with_arp() {
    let now = now_s();
    // Interface 3's neighbour (10.123.3.3) has no configured MAC: the first burst of packets
    // is dropped and one ARP request (rate-limited) goes out; then the neighbour's ARP reply
    // arrives and the packet after it is forwarded to the learned MAC.
    let pkt = packet(now, 3, false, false, b"x");
    let peer = [0x02, 0, 0, 0, 0x03, 0x03];
    let mut reply = arp_request(peer, "10.123.3.3", "10.123.3.1");
    reply[20..22].copy_from_slice(&[0, 2]); // opcode: reply
    // More packets than one rx burst holds come first, so the reply arrives in a later burst.
    let mut all = vec![frame(HOST, INTERNAL, &pkt); dpdk::MAX_BURST];
    all.push(reply);
    all.push(frame(HOST, INTERNAL, &pkt));
    let total = dpdk::MAX_BURST as u64 + 1;
    let PcapRun { summary, sent, .. } = run_on_pcap(&all, false, "0.7", |t| t);
    assert_eq!(summary["io"]["rx_frames"], total + 1);
    assert_eq!(summary["forwarded"], total, "{summary:#}");
    assert_eq!(summary["io"]["arp_learned"], 1);
    let (arp, ip): (Vec<_>, Vec<_>) = sent.into_iter().partition(|f| f[12..14] == [0x08, 0x06]);
    assert_eq!(arp.len(), 1, "one ARP request, rate-limited");
    assert_eq!(&arp[0][0..6], &[0xff; 6], "broadcast");
    assert_eq!(&arp[0][20..22], &[0, 1], "request");
    assert_eq!(
        &arp[0][28..32],
        &[10, 123, 3, 1],
        "from the interface's address"
    );
    assert_eq!(&arp[0][38..42], &[10, 123, 3, 3], "for the neighbour");
    assert_eq!(summary["io"]["arp_requests"], 1);
    // Whatever was forwarded went to the learned MAC; whatever was not is counted.
    let missed = summary["io"]["no_next_hop_mac"].as_u64().unwrap();
    assert!(missed > 0, "the first burst had no MAC: {summary:#}");
    assert_eq!(ip.len() as u64 + missed, total);
    assert!(!ip.is_empty(), "the packet after the reply is forwarded");
    for f in &ip {
        let (src, dst, dmac, _, _) = split(f);
        assert_eq!(src, "10.123.3.1:50000".parse().unwrap());
        assert_eq!(dst, "10.123.3.3:50000".parse().unwrap());
        assert_eq!(dmac, peer);
    }
}

#[test]
fn a_gratuitous_arp_moves_a_known_neighbour_to_its_new_mac() {
    let now = now_s();
    // The neighbour of interface 3 is learned from its reply; later it announces a new MAC
    // (a failover) with a broadcast gratuitous ARP, not addressed to us: the packets after it
    // go to the new MAC at once (RFC 826 merge), not after the entry ages out.
    let pkt = packet(now, 3, false, false, b"x");
    let (old_mac, new_mac) = ([0x02, 0, 0, 0, 0x03, 0x03], [0x02, 0, 0, 0, 0x03, 0x33]);
    let mut reply = arp_request(old_mac, "10.123.3.3", "10.123.3.1");
    reply[20..22].copy_from_slice(&[0, 2]);
    let garp = arp_request(new_mac, "10.123.3.3", "10.123.3.3");
    let burst = dpdk::MAX_BURST;
    let mut all = vec![frame(HOST, INTERNAL, &pkt); burst];
    all.push(reply);
    all.extend(vec![frame(HOST, INTERNAL, &pkt); burst]);
    all.push(garp);
    all.push(frame(HOST, INTERNAL, &pkt));
    let PcapRun { summary, sent, .. } = run_on_pcap(&all, false, "0.7", |t| t);
    assert_eq!(summary["io"]["arp_learned"], 2, "{summary:#}");
    let ip: Vec<_> = sent
        .into_iter()
        .filter(|f| f[12..14] != [0x08, 0x06])
        .collect();
    let macs: Vec<[u8; 6]> = ip.iter().map(|f| split(f).2).collect();
    assert_eq!(
        macs.last(),
        Some(&new_mac),
        "the packet after the gratuitous ARP"
    );
    assert!(
        macs.contains(&old_mac),
        "those before it went to the old MAC"
    );
    // Ordered: old MAC first, then only the new one.
    let first_new = macs.iter().position(|m| *m == new_mac).unwrap();
    assert!(macs[first_new..].iter().all(|m| *m == new_mac));
}

fn v6(s: &str) -> std::net::Ipv6Addr {
    s.parse().unwrap()
}

/// A link-layer address option (type 1 source, 2 target) for `mac`.
fn ll_option(ty: u8, mac: [u8; 6]) -> Vec<u8> {
    let mut o = vec![ty, 1];
    o.extend_from_slice(&mac);
    o
}

#[test]
fn unknown_ipv6_next_hop_is_resolved_with_ndp() {
    let now = now_s();
    // As with ARP, over an IPv6 underlay: interface 3's neighbour (fd00:3::3) has no MAC; the
    // first burst is dropped and one neighbor solicitation goes out; the neighbour's
    // advertisement arrives and the packet after it leaves for the learned MAC.
    let (me, peer_ip) = (v6("fd00:3::1"), v6("fd00:3::3"));
    let pkt = packet(now, 3, false, false, b"x");
    let peer = [0x02, 0, 0, 0, 0x03, 0x03];
    let na = nd_frame(
        136,
        0x60, // solicited, override
        peer,
        (peer_ip, me),
        peer_ip,
        &ll_option(2, peer),
        255,
    );
    let mut all = vec![frame(HOST, INTERNAL, &pkt); dpdk::MAX_BURST];
    all.push(na);
    all.push(frame(HOST, INTERNAL, &pkt));
    let total = dpdk::MAX_BURST as u64 + 1;
    let PcapRun { summary, sent, .. } = run_on_pcap(&all, true, "0.7", |t| t);
    assert_eq!(summary["io"]["rx_frames"], total + 1);
    assert_eq!(summary["forwarded"], total, "{summary:#}");
    assert_eq!(summary["io"]["ndp_learned"], 1, "{summary:#}");
    assert_eq!(summary["io"]["ndp_requests"], 1, "{summary:#}");
    assert_eq!(summary["io"]["arp_requests"], 0);
    let (ns, ip): (Vec<_>, Vec<_>) = sent.into_iter().partition(|f| is_icmpv6(f));
    assert_eq!(ns.len(), 1, "one solicitation, rate-limited");
    let (src, dst, hop, msg) = icmpv6(&ns[0]);
    assert_eq!(
        &ns[0][0..6],
        &[0x33, 0x33, 0xff, 0, 0, 3],
        "solicited-node MAC"
    );
    assert_eq!(src, me, "from the interface's address");
    assert_eq!(
        dst,
        v6("ff02::1:ff00:3"),
        "to the neighbour's solicited-node group"
    );
    assert_eq!(hop, 255);
    assert_eq!(msg.len(), 32);
    assert_eq!(&msg[0..2], &[135, 0], "neighbor solicitation");
    assert_eq!(&msg[8..24], &peer_ip.octets(), "for the neighbour");
    assert_eq!(&msg[24..26], &[1, 1], "source link-layer option");
    assert_eq!(&msg[26..32], &ns[0][6..12], "= the port's MAC");
    let missed = summary["io"]["no_next_hop_mac"].as_u64().unwrap();
    assert!(missed > 0, "the first burst had no MAC: {summary:#}");
    assert_eq!(ip.len() as u64 + missed, total);
    assert!(
        !ip.is_empty(),
        "the packet after the advertisement is forwarded"
    );
    for f in &ip {
        let (src, dst, dmac, smac, _) = split(f);
        assert_eq!(src, IF3_LOCAL6.parse().unwrap());
        assert_eq!(dst, IF3_REMOTE6.parse().unwrap());
        assert_eq!(dmac, peer);
        assert_eq!(smac, ns[0][6..12]);
    }
}

#[test]
fn neighbor_solicitation_for_own_ipv6_address_is_answered() {
    let now = now_s();
    let (me, peer_ip) = (v6("fd00:3::1"), v6("fd00:3::3"));
    let peer = [0x02, 0, 0, 0, 0x03, 0x33];
    let sll = ll_option(1, peer);
    let group = v6("ff02::1:ff00:1");
    let ns = nd_frame(135, 0, peer, (peer_ip, group), me, &sll, 255);
    let mut bad_checksum = ns.clone();
    bad_checksum[60] ^= 1;
    let pkt = packet(now, 3, false, false, b"after the solicitation");
    let frames = vec![
        ns.clone(),
        // Not answered: hop limit not 255, another host's address, broken checksum.
        nd_frame(135, 0, peer, (peer_ip, group), me, &sll, 64),
        nd_frame(
            135,
            0,
            peer,
            (peer_ip, v6("ff02::1:ff00:9")),
            v6("fd00:3::9"),
            &sll,
            255,
        ),
        bad_checksum,
        // The solicitation's source option taught the router the peer's MAC.
        frame(HOST, INTERNAL, &pkt),
    ];
    let PcapRun { summary, sent, .. } = run_on_pcap(&frames, true, "0.7", |t| t);
    assert_eq!(summary["io"]["rx_frames"], 5, "{summary:#}");
    assert_eq!(summary["io"]["ndp_replies"], 1, "{summary:#}");
    assert_eq!(summary["io"]["ndp_learned"], 1, "{summary:#}");
    assert_eq!(summary["io"]["ndp_requests"], 0);
    assert_eq!(
        summary["io"]["not_scion"], 3,
        "the three refused solicitations"
    );
    assert_eq!(summary["io"]["no_next_hop_mac"], 0);
    assert_eq!(summary["forwarded"], 1);
    let (na, ip): (Vec<_>, Vec<_>) = sent.into_iter().partition(|f| is_icmpv6(f));
    assert_eq!(na.len(), 1, "one advertisement");
    assert_eq!(ip.len(), 1);
    let port_mac = split(&ip[0]).3;
    let f = &na[0];
    assert_eq!(f.len(), ns.len(), "answered in place");
    assert_eq!(&f[0..6], &peer, "back to the soliciting host");
    assert_eq!(&f[6..12], &port_mac);
    let (src, dst, hop, msg) = icmpv6(f);
    assert_eq!((src, dst, hop), (me, peer_ip, 255));
    assert_eq!(&msg[0..2], &[136, 0], "neighbor advertisement");
    assert_eq!(msg[4], 0x60, "solicited, override");
    assert_eq!(&msg[8..24], &me.octets());
    assert_eq!(&msg[24..26], &[2, 1], "target link-layer option");
    assert_eq!(&msg[26..32], &port_mac);
    let (src, dst, dmac, _, _) = split(&ip[0]);
    assert_eq!(src, IF3_LOCAL6.parse().unwrap());
    assert_eq!(dst, IF3_REMOTE6.parse().unwrap());
    assert_eq!(dmac, peer, "to the MAC learned from the solicitation");
}

#[test]
fn software_flow_distribution_keeps_flows_in_order() {
    let now = now_s();
    let mut frames = Vec::new();
    let mut inputs = Vec::new();
    for seq in 0..3u32 {
        for flow in 1..=20u32 {
            let mut p = packet(
                now,
                2,
                false,
                false,
                format!("flow {flow} seq {seq}").as_bytes(),
            );
            // The flow ID is not covered by the hop-field MAC.
            p[1] = (p[1] & 0xf0) | ((flow >> 16) as u8 & 0x0f);
            p[2..4].copy_from_slice(&(flow as u16).to_be_bytes());
            frames.push(frame(HOST, INTERNAL, &p));
            inputs.push(p);
        }
    }
    let PcapRun {
        summary, sent, t0, ..
    } = run_on_pcap(&frames, false, "1.5", |t| {
        t.replace("\"-l\", \"0-1\"", "\"--lcores=0@0,1@1,2@1,3@1\"")
    });
    assert_eq!(summary["distribution"], "software", "{summary:#}");
    assert_eq!(summary["workers"], 2);
    assert_eq!(summary["forwarded"], 60, "{summary:#}");
    assert_eq!(summary["distributor"]["dist_rx"], 60);
    assert_eq!(summary["distributor"]["dist_tx"], 60);
    assert_eq!(summary["distributor"]["dist_ring_full"], 0);
    assert_eq!(summary["distributor"]["dist_discarded"], 0);

    let sent: Vec<Vec<u8>> = sent.iter().map(|f| split(f).4).collect();
    assert_eq!(sent.len(), 60);
    // Every output is scion-dp's prediction for one input, and within a flow the order holds.
    let predicted: Vec<Vec<u8>> = inputs.iter().map(|p| predict(p, t0).1).collect();
    for flow in 1..=20u16 {
        let of_flow = |v: &Vec<Vec<u8>>| -> Vec<Vec<u8>> {
            v.iter()
                .filter(|p| u16::from_be_bytes([p[2], p[3]]) == flow)
                .cloned()
                .collect()
        };
        assert_eq!(of_flow(&sent), of_flow(&predicted), "flow {flow}");
    }
}

#[test]
fn packets_from_the_sibling_router_arrive_over_its_link() {
    let now = now_s();
    // In AS transit, entered on interface 4 (owned by sibling br1b at 10.123.10.2:30042).
    let pkt = inbound_via(now, 4, None, b"transit");
    let PcapRun { summary, .. } = run_on_pcap(
        &[
            frame("10.123.10.2:30042", INTERNAL, &pkt),
            frame(HOST, INTERNAL, &pkt),
        ],
        false,
        "0.7",
        |t| t,
    );
    assert_eq!(summary["io"]["rx_frames"], 2);
    // Only the copy from an ordinary host is refused as transit not over the sibling link;
    // scion-dp decides on the sibling's copy as it predicts for Ingress::Sibling(4).
    assert_eq!(
        summary["drops"]["transit_not_from_sibling"], 1,
        "{summary:#}"
    );
    let router = Router::new(router_config()).unwrap();
    let mut p = Processor::new(&router);
    let mut buf = vec![0u8; 2048];
    buf[..pkt.len()].copy_from_slice(&pkt);
    let d = p.process(
        &mut buf,
        pkt.len(),
        Ingress::Sibling(4),
        now * 1_000_000_000,
    );
    assert_ne!(
        d,
        Disposition::Drop(scion_dp::DropReason::TransitNotFromSibling)
    );
    let mut want = scion_dp::Counters::default();
    want.record(&d);
    want.record(&Disposition::Drop(
        scion_dp::DropReason::TransitNotFromSibling,
    ));
    assert_eq!(summary["forwarded"], want.forwarded);
    assert_eq!(summary["delivered"], want.delivered);
}

#[test]
fn default_next_hop_mac_is_used_when_nothing_else_is_known() {
    let now = now_s();
    let pkt = inbound(now, None, b"to a local host");
    let PcapRun { summary, sent, .. } =
        run_on_pcap(&[frame(IF2_REMOTE, IF2_LOCAL, &pkt)], false, "0.7", |t| {
            t.replace(
                "internal = true",
                "internal = true\ndefault_next_hop_mac = \"02:00:00:00:00:fe\"",
            )
        });
    assert_eq!(summary["delivered"], 1, "{summary:#}");
    assert_eq!(summary["io"]["no_next_hop_mac"], 0);
    assert_eq!(sent.len(), 1);
    let (src, dst, dmac, _, scion) = split(&sent[0]);
    assert_eq!(src, INTERNAL.parse().unwrap());
    assert_eq!(dst, format!("{LOCAL_HOST}:32000").parse().unwrap());
    assert_eq!(dmac, [2, 0, 0, 0, 0, 0xfe]);
    let (d, want) = {
        let router = Router::new(router_config()).unwrap();
        let mut p = Processor::new(&router);
        let mut buf = vec![0u8; 2048];
        buf[..pkt.len()].copy_from_slice(&pkt);
        let d = p.process(
            &mut buf,
            pkt.len(),
            Ingress::External(2),
            now * 1_000_000_000,
        );
        buf.truncate(pkt.len());
        (d, buf)
    };
    assert!(matches!(d, Disposition::Deliver { .. }), "{d:?}");
    assert_eq!(scion, want);
}

/// The entry the router wrote into an ID-INT packet it forwarded, verified and decrypted as
/// the destination host does.
fn router_entry(sent: &[u8], t0: u64, t1: u64) -> idint_wire::idint::verify::DecodedEntry {
    let (_, _, _, _, mut scion) = split(sent);
    let range = Packet::parse(&scion).unwrap().hbh_range().unwrap();
    let mut st = IdInt::locate(&mut scion[range]).unwrap().unwrap();
    let key = as_key(t0 / 1_000_000_000);
    let mut window = ReplayWindow::<64>::new(60_000_000_000, 5_000_000_000);
    open(&mut st, &mut window, t1, &aes128(&SOURCE_KEY), |i, _| {
        (i == 1).then_some(&key)
    })
    .expect("the host verifies the router's entry");
    decode_entries(&st).nth(1).unwrap().unwrap()
}

/// Queue id, buffer id, buffer occupancy and its average requested: what the router can
/// measure is present, what it cannot stays empty.
/// The queue and buffer items of the one packet's entry, and the worker (of two, with
/// software distribution) its flow hashes to.
fn queue_and_buffer_items(software: bool) -> ([Option<u64>; 4], u64) {
    use idint_wire::idint::Instruction;
    let now = now_s();
    let req = idint_wire::idint::RequestBuilder {
        instructions: [0x4e, 0x51, 0x52, 0x53].map(Instruction),
        ..request(now, false, false)
    };
    let p = outbound(now, 2, false, Some(req), b"queues please");
    let f = frame(HOST, INTERNAL, &p);
    let worker = router_dpdk::distribute::flow_hash(&f) % 2;
    let PcapRun {
        summary,
        sent,
        t0,
        t1,
        ..
    } = run_on_pcap(&[f], false, "1", |t| {
        if software {
            t.replace("\"-l\", \"0-1\"", "\"--lcores=0@0,1@1,2@1,3@1\"")
        } else {
            t
        }
    });
    let mode = if software { "software" } else { "queues" };
    assert_eq!(summary["distribution"], mode, "{summary:#}");
    assert_eq!(summary["idint"]["idint_pushed"], 1, "{summary:#}");
    assert_eq!(sent.len(), 1);
    let items = router_entry(&sent[0], t0, t1)
        .metadata
        .slots
        .map(|s| s.map(|s| s.value));
    (items, worker)
}

#[test]
fn queue_and_buffer_telemetry_from_nic_queues() {
    let ([queue_id, buffer_id, occupancy, average], _) = queue_and_buffer_items(false);
    assert_eq!(queue_id, Some(0), "worker 0 sends on tx queue 0");
    assert_eq!(buffer_id, Some(0), "received on rx queue 0");
    // net_pcap cannot count its rx queue: nothing is invented.
    assert_eq!(occupancy, None);
    assert_eq!(average, None);
}

#[test]
fn queue_and_buffer_telemetry_from_distribution_rings() {
    let ([queue_id, buffer_id, occupancy, _average], worker) = queue_and_buffer_items(true);
    assert_eq!(queue_id, Some(0), "the distributor sends on tx queue 0");
    // The ring of the worker the flow went to, numbered as that worker's rx queue would be.
    assert_eq!(buffer_id, Some(worker));
    // The worker's ring is read: what waited behind the packet (it was alone).
    assert_eq!(occupancy, Some(0));
}

/// `frame` with an 802.1Q tag for `vid` after its MAC addresses.
fn tagged(frame: &[u8], vid: u16) -> Vec<u8> {
    let mut f = frame[..12].to_vec();
    f.extend_from_slice(&[0x81, 0x00]);
    f.extend_from_slice(&vid.to_be_bytes());
    f.extend_from_slice(&frame[12..]);
    f
}

#[test]
fn a_vlan_port_takes_and_sends_only_its_tagged_frames() {
    let now = now_s();
    let pkt = packet(now, 2, false, false, b"over a trunk");
    let plain = frame(HOST, INTERNAL, &pkt);
    let arp = arp_request([2, 0, 0, 0, 0x10, 0x50], "10.123.10.50", "10.123.10.1");
    let frames = vec![
        tagged(&plain, 100),
        plain.clone(),             // untagged on a VLAN port
        tagged(&plain, 200),       // another VLAN
        tagged(&arp, 100),         // answered, tagged
        tagged(&plain[..15], 100), // too short to be anything
    ];
    let PcapRun { summary, sent, .. } = run_on_pcap(&frames, false, "0.7", |t| {
        t.replace("internal = true", "internal = true\nvlan = 100")
    });
    assert_eq!(summary["io"]["rx_frames"], 5, "{summary:#}");
    assert_eq!(summary["io"]["wrong_vlan"], 2, "{summary:#}");
    assert_eq!(summary["forwarded"], 1, "{summary:#}");
    assert_eq!(summary["io"]["arp_replies"], 1, "{summary:#}");
    assert_eq!(summary["io"]["not_scion"], 1, "{summary:#}");
    assert_eq!(sent.len(), 2);
    for f in &sent {
        assert_eq!(
            &f[12..16],
            &[0x81, 0x00, 0x00, 100],
            "tagged with the port's VLAN"
        );
    }
    let untag = |f: &[u8]| [&f[..12], &f[16..]].concat();
    let (arp_out, ip): (Vec<_>, Vec<_>) = sent.iter().partition(|f| f[16..18] == [0x08, 0x06]);
    let (src, dst, dmac, _, scion) = split(&untag(ip[0]));
    assert_eq!(src, IF2_LOCAL.parse().unwrap());
    assert_eq!(dst, IF2_REMOTE.parse().unwrap());
    assert_eq!(dmac, IF2_MAC);
    // Exactly what scion-dp decides for the untagged packet.
    let router = Router::new(router_config()).unwrap();
    let mut buf = pkt.clone();
    let d = Processor::new(&router).process(
        &mut buf,
        pkt.len(),
        Ingress::Internal,
        now * 1_000_000_000,
    );
    assert_eq!(d, Disposition::Forward { ifid: 2 });
    assert_eq!(scion, buf);
    let reply = untag(arp_out[0]);
    assert_eq!(&reply[20..22], &[0, 2], "ARP reply");
    assert_eq!(&reply[28..32], &[10, 123, 10, 1]);
}

/// Runs 20 ID-INT packets of one flow through the benchmark aid `dataplane.idint_lower_bound`
/// in `mode`; checks that the first took the real stage and the others the template.
#[cfg(feature = "measurement-aids")]
fn lower_bound_run(mode: &str) -> PcapRun {
    let now = now_s();
    let frames: Vec<_> = (0..20u8)
        .map(|k| frame(HOST, INTERNAL, &packet(now, 2, false, true, &[k; 40])))
        .collect();
    let run = run_on_pcap(&frames, false, "1", |t| {
        t + &format!("\n[dataplane]\nidint_lower_bound = \"{mode}\"\n")
    });
    assert_eq!(run.summary["forwarded"], 20, "{:#}", run.summary);
    assert_eq!(
        run.summary["idint"]["idint_pushed"], 20,
        "{:#}",
        run.summary
    );
    assert!(
        run.stderr.contains(
            "lower-bound ID-INT: 19 entries from the template, 1 packets through the stage"
        ),
        "{}",
        run.stderr
    );
    assert_eq!(run.sent.len(), 20);
    for (k, f) in run.sent.iter().enumerate() {
        let (_, _, _, _, scion) = split(f);
        assert_eq!(
            &scion[scion.len() - 40..],
            &[k as u8; 40],
            "payload untouched"
        );
    }
    run
}

/// Sealed template entries still verify and decrypt at the destination (same key, chained
/// MACs, a fresh nonce each).
#[cfg(feature = "measurement-aids")]
#[test]
fn lower_bound_entries_from_the_template_verify() {
    let PcapRun {
        summary,
        sent,
        t0,
        t1,
        ..
    } = lower_bound_run("sealed");
    assert_eq!(summary["idint"]["idint_encrypted"], 20, "{summary:#}");
    let mut nonces = std::collections::HashSet::new();
    for (k, f) in sent.iter().enumerate() {
        let e = router_entry(f, t0, t1);
        assert!(e.encrypted && e.egress, "frame {k}");
        // The nonce travels in the clear after the entry header.
        let (_, _, _, _, scion) = split(f);
        let range = Packet::parse(&scion).unwrap().hbh_range().unwrap();
        let mut copy = scion.clone();
        let st = IdInt::locate(&mut copy[range.clone()]).unwrap().unwrap();
        let at = range.start + st.entries().nth(1).unwrap().0 + 6;
        assert!(
            nonces.insert(scion[at..at + 12].to_vec()),
            "nonce repeated in frame {k}"
        );
    }
}

/// Unsealed template entries carry no MAC: only the first packet's entry (the real stage's)
/// verifies.
#[cfg(feature = "measurement-aids")]
#[test]
fn unsealed_lower_bound_entries_do_not_verify() {
    let PcapRun { sent, t0, t1, .. } = lower_bound_run("unsealed");
    let key = as_key(t0 / 1_000_000_000);
    for (k, f) in sent.iter().enumerate() {
        let (_, _, _, _, mut scion) = split(f);
        let range = Packet::parse(&scion).unwrap().hbh_range().unwrap();
        let mut st = IdInt::locate(&mut scion[range]).unwrap().unwrap();
        let mut window = ReplayWindow::<64>::new(60_000_000_000, 5_000_000_000);
        let verified = open(&mut st, &mut window, t1, &aes128(&SOURCE_KEY), |i, _| {
            (i == 1).then_some(&key)
        });
        assert_eq!(verified.is_ok(), k == 0, "frame {k}: {verified:?}");
    }
}

#[test]
fn a_flood_of_bad_packets_gets_rate_limited_scmp_replies() {
    // Each of these asks for an SCMP reply (invalid hop-field MAC). Read at line rate, far
    // more than the default burst of replies per worker.
    const FLOOD: usize = 600;
    let now = now_s();
    let bad_mac = packet(now, 2, true, false, b"bad mac");
    let frames: Vec<Vec<u8>> = (0..FLOOD)
        .map(|_| frame(HOST, INTERNAL, &bad_mac))
        .collect();
    let PcapRun { summary, sent, .. } = run_on_pcap(&frames, false, "1", |t| t);
    assert_eq!(summary["io"]["rx_frames"], FLOOD as u64, "{summary:#}");
    assert_eq!(
        summary["scmp_replies"]["invalid_hop_field_mac"],
        FLOOD as u64
    );
    // The default bucket: 100 at once, 1000 per second after that; the file is read in a
    // few milliseconds.
    assert!(
        sent.len() >= 100 && sent.len() < 300,
        "{} replies sent for {FLOOD} bad packets",
        sent.len()
    );
    assert_eq!(
        summary["io"]["scmp_rate_limited"].as_u64(),
        Some((FLOOD - sent.len()) as u64),
        "{summary:#}"
    );
}
