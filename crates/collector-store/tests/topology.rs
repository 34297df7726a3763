//! Topology persistence against a real PostgreSQL started by `scripts/services.sh`.

use std::time::Duration;
use test_kit::require::Need;

use collector_store::topology::*;
use test_kit::services::Services;

fn as_record(ia: u64, routers: u32) -> AsRecord {
    AsRecord {
        ia,
        core: ia.is_multiple_of(2),
        mtu: Some(1472),
        routers: (1..=routers)
            .map(|n| RouterRecord {
                node_id: Some(n),
                name: format!("br-{ia:x}-{n}"),
            })
            .collect(),
        interfaces: (1..=3)
            .map(|i| InterfaceRecord {
                ifid: i,
                node_id: Some(1),
                router: Some(format!("br-{ia:x}-1")),
                link_type: "child".into(),
                neighbor_ia: Some(ia + 1),
                neighbor_ifid: Some(i + 10),
            })
            .collect(),
    }
}

fn path(fp: u64) -> PathRecord {
    PathRecord {
        fingerprint: fp,
        hops: vec![
            HopRecord {
                ia: 1 << 48 | 0x110,
                ingress: 0,
                egress: 1,
            },
            HopRecord {
                ia: 1 << 48 | 0x111,
                ingress: 2,
                egress: 0,
            },
        ],
        first_seen_ns: 1_700_000_000_000_000_000,
        learned: false,
    }
}

async fn fresh_db(s: &Services) -> TopologyDb {
    let db = TopologyDb::connect(s.url("IDINT_PG_URL"), 3).await.unwrap();
    sqlx::query(
        "TRUNCATE isd_as, router, interface, link, internal_link, path, path_hop, unknown_path, \
         quarantine",
    )
    .execute(db.pool())
    .await
    .unwrap();
    db
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn round_trip_and_quarantine_cap() {
    test_kit::require!(Need::Root, Need::Postgres);
    let s = Services::private("pg-roundtrip", 26300, &["postgres"]);
    let db = fresh_db(&s).await;
    // ISD-ASes with the top bit set survive the signed BIGINT.
    let big = 0xffff_0000_0000_0110u64;
    let changes = vec![
        Change::As(as_record(1 << 48 | 0x110, 2)),
        Change::As(as_record(big, 1)),
        Change::Link(LinkRecord {
            a: (big, 3),
            b: (1 << 48 | 0x110, 1),
        }),
        Change::Link(LinkRecord {
            a: (1 << 48 | 0x110, 1),
            b: (big, 3),
        }),
        Change::InternalLink(InternalLinkRecord {
            ia: big,
            from_node: 1,
            to_node: 2,
        }),
        Change::Path(path(u64::MAX)),
        Change::Path(PathRecord {
            hops: vec![],
            ..path(u64::MAX)
        }),
        Change::UnknownPath(UnknownPathRecord {
            fingerprint: 7,
            detail: "{\"hops\":3}".into(),
            first_seen_ns: 5,
        }),
    ];
    db.apply(&changes).await.unwrap();
    // Routers without a node id (a scionproto topology.json has none) are kept by name, with
    // the interfaces they own.
    let mut unnumbered = as_record(2 << 48 | 0x7, 1);
    for name in ["br7-a", "br7-b"] {
        unnumbered.routers.push(RouterRecord {
            node_id: None,
            name: name.into(),
        });
    }
    unnumbered.interfaces[2].node_id = None;
    unnumbered.interfaces[2].router = Some("br7-b".into());
    db.apply(&[Change::As(unnumbered.clone())]).await.unwrap();
    let snap = db.load().await.unwrap();
    let mut want = unnumbered.clone();
    want.routers.sort_by(|a, b| a.name.cmp(&b.name));
    assert_eq!(snap.ases.iter().find(|a| a.ia == want.ia), Some(&want));
    // Two routers with one node id in an AS cannot both be stored.
    let mut clash = as_record(3 << 48 | 0x7, 2);
    clash.routers[1].node_id = Some(1);
    assert!(db.apply(&[Change::As(clash)]).await.is_err());
    // Replacing an AS replaces its routers and interfaces.
    let mut smaller = as_record(1 << 48 | 0x110, 1);
    smaller.interfaces.truncate(1);
    db.apply(&[Change::As(smaller.clone())]).await.unwrap();
    let snap = db.load().await.unwrap();
    assert_eq!(snap.ases, vec![smaller, want, as_record(big, 1)]);
    assert_eq!(
        snap.links,
        vec![LinkRecord {
            a: (1 << 48 | 0x110, 1),
            b: (big, 3)
        }]
    );
    assert_eq!(
        snap.internal_links,
        vec![InternalLinkRecord {
            ia: big,
            from_node: 1,
            to_node: 2
        }]
    );
    assert_eq!(
        snap.paths,
        vec![path(u64::MAX)],
        "first record of a path wins"
    );
    assert_eq!(snap.unknown_paths.len(), 1);
    // A path's origin is stored and may change later (hops and first sighting stay).
    let learned = PathRecord {
        learned: true,
        first_seen_ns: 1,
        ..path(u64::MAX)
    };
    db.apply(&[Change::Path(learned.clone())]).await.unwrap();
    let snap = db.load().await.unwrap();
    assert_eq!(
        snap.paths,
        vec![PathRecord {
            learned: true,
            ..path(u64::MAX)
        }]
    );
    db.apply(&[Change::Path(path(u64::MAX))]).await.unwrap();
    assert_eq!(db.load().await.unwrap().paths, vec![path(u64::MAX)]);
    // Quarantine keeps the newest 3.
    for k in 0..5u8 {
        db.apply(&[Change::Quarantine(QuarantineRecord {
            received_ns: u64::from(k),
            reason: "bad_mac".into(),
            detail: format!("entry {k}"),
            report: vec![k; 4],
        })])
        .await
        .unwrap();
    }
    let q = db.quarantine(10).await.unwrap();
    assert_eq!(
        q.iter().map(|r| r.received_ns).collect::<Vec<_>>(),
        vec![4, 3, 2]
    );
    assert_eq!(q[0].report, vec![4; 4]);
    // Text PostgreSQL cannot store (NUL) is replaced, not a reason to lose the row.
    db.apply(&[Change::Quarantine(QuarantineRecord {
        received_ns: 9,
        reason: "bad\0reason".into(),
        detail: "x\0y".into(),
        report: vec![0; 2],
    })])
    .await
    .unwrap();
    let q = db.quarantine(1).await.unwrap();
    assert_eq!(
        (q[0].reason.as_str(), q[0].detail.as_str()),
        ("bad\u{fffd}reason", "x\u{fffd}y")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn write_behind_survives_a_restart() {
    test_kit::require!(Need::Root, Need::Postgres);
    let s = Services::private("pg-restart", 26400, &["postgres"]);
    let db = fresh_db(&s).await;
    let wb = WriteBehind::spawn(db.clone(), 1000);
    for k in 0..100u64 {
        wb.send(Change::Path(path(k))).unwrap();
    }
    assert_eq!(wb.flush(Duration::from_secs(10)).await, 0);
    s.stop(&["postgres"]);
    for k in 100..400u64 {
        wb.send(Change::Path(path(k))).unwrap();
    }
    // The pool gives up on a dead server after its acquire timeout: wait for a retry.
    for _ in 0..200 {
        if wb.stats().retries > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let st = wb.stats();
    assert_eq!(st.accepted, 400);
    assert!(st.pending > 0 && st.retries > 0, "{st:?}");
    // Bounded: beyond the capacity, changes are refused and counted.
    let mut refused = 0;
    for k in 400..2000u64 {
        if wb.send(Change::Path(path(k))).is_err() {
            refused += 1;
        }
    }
    assert!(refused > 0);
    assert_eq!(wb.stats().refused, refused);
    let accepted = wb.stats().accepted;
    s.start(&["postgres"]);
    assert_eq!(
        wb.flush(Duration::from_secs(30)).await,
        0,
        "{:?}",
        wb.stats()
    );
    let st = wb.stats();
    assert_eq!((st.written, st.pending), (accepted, 0), "{st:?}");
    let paths = db.load().await.unwrap().paths;
    assert_eq!(
        paths.len() as u64,
        accepted,
        "every accepted change was written"
    );
    assert!(paths.iter().all(|p| p.hops.len() == 2));
    assert_eq!(wb.close(Duration::from_secs(5)).await, 0);
    assert!(wb.send(Change::Path(path(1))).is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_errors_are_typed() {
    let e = TopologyDb::connect("postgresql://nobody:x@127.0.0.1:9/none", 10)
        .await
        .unwrap_err();
    assert!(matches!(e, DbError::Sql(_)), "{e}");
}
