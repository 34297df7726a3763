use super::*;

/// A valid non-core `topology.json` of AS `ia` with these routers (the test kit's).
fn topo(ia: &str, routers: &[test_kit::chain::TopoRouter<'_>]) -> String {
    test_kit::chain::topology_json(ia, false, routers)
}

fn ia(s: &str) -> IsdAsn {
    s.parse().unwrap()
}

fn hf(i: u32, e: u32) -> v1::HopField {
    v1::HopField {
        cons_ingress: i,
        cons_egress: e,
        exp_time: 63,
    }
}

fn info(cons_dir: bool) -> v1::InfoField {
    v1::InfoField {
        cons_dir,
        ..Default::default()
    }
}

#[test]
fn up_and_down_segments_merge_at_the_crossing() {
    // Up segment A(leaf) -> B(core), against construction; down segment B -> C.
    let p = v1::Path {
        seg_lens: vec![2, 2],
        info_fields: vec![info(false), info(true)],
        hop_fields: vec![hf(1, 0), hf(0, 2), hf(0, 3), hf(4, 0)],
        ..Default::default()
    };
    let l = HopLayout::of(Some(&p)).unwrap();
    assert_eq!(l.as_hops, 3);
    assert_eq!(&l.ifs[..3], &[(0, 1), (2, 3), (4, 0)]);
    assert_eq!(&l.hop_of[..4], &[0, 1, 1, 2]);
    let mut bad = p.clone();
    bad.seg_lens = vec![2, 3];
    assert_eq!(HopLayout::of(Some(&bad)), Err(LayoutError::Inconsistent));
    assert!(matches!(HopLayout::of(None), Err(LayoutError::NoPath)));
}

#[test]
fn numbers_no_scion_path_holds_are_refused_not_truncated() {
    let p = v1::Path {
        seg_lens: vec![2],
        info_fields: vec![info(true)],
        hop_fields: vec![hf(0, 1), hf(1, 0)],
        ..Default::default()
    };
    assert!(HopLayout::of(Some(&p)).is_ok());
    // 65537 would be interface 1 cut to 16 bits.
    for (k, ingress) in [(0, false), (1, true)] {
        let mut bad = p.clone();
        if ingress {
            bad.hop_fields[k].cons_ingress = 65_537;
        } else {
            bad.hop_fields[k].cons_egress = 65_537;
        }
        assert_eq!(HopLayout::of(Some(&bad)), Err(LayoutError::OutOfRange));
    }
    assert_eq!(
        HopLayout::build(&[64], &[true], &[(0, 1); 64]),
        Err(LayoutError::OutOfRange)
    );
}

impl PartialEq for HopLayout {
    fn eq(&self, o: &Self) -> bool {
        self.as_hops == o.as_hops && self.ifs == o.ifs && self.hop_of == o.hop_of
    }
}

struct Recording(Mutex<Vec<TopologyChange>>);
impl TopologySink for Recording {
    fn changed(&self, c: &[TopologyChange]) -> Result<(), NotPersisted> {
        self.0.lock().unwrap().extend_from_slice(c);
        Ok(())
    }
}

/// A sink whose queue is full.
struct Full;

impl TopologySink for Full {
    fn changed(&self, _: &[TopologyChange]) -> Result<(), NotPersisted> {
        Err(NotPersisted("queue full".into()))
    }
}

#[test]
fn an_import_the_store_cannot_take_fails_and_changes_nothing() {
    let t = TopologyHandle::new();
    t.set_sink(Arc::new(Full));
    let e = t
        .import_topology_json(&topo(
            "1-ff00:0:a",
            &[("ra", Some(1), &[(1, "1-ff00:0:b", Some(2))])],
        ))
        .unwrap_err();
    assert!(matches!(e, ImportError::NotPersisted(_)), "{e}");
    let (a, b) = (ia("1-ff00:0:a"), ia("1-ff00:0:b"));
    let hop = |ia, ingress, egress| PathHop {
        ia,
        ingress,
        egress,
    };
    let e = t
        .import_path(&PathDescription {
            hops: vec![hop(a, 0, 1), hop(b, 2, 0)],
        })
        .unwrap_err();
    assert!(matches!(e, ImportError::NotPersisted(_)), "{e}");
    let snap = t.snapshot();
    assert!(snap.ases.is_empty() && snap.paths.is_empty() && snap.links.is_empty());
    assert_eq!(t.generation(), 0);
}

#[test]
fn changes_written_behind_rebuild_the_same_topology() {
    let t = TopologyHandle::new();
    let sink = Arc::new(Recording(Mutex::new(Vec::new())));
    t.set_sink(sink.clone());
    t.import_topology_json(&topo(
        "1-ff00:0:a",
        &[("ra", Some(1), &[(1, "1-ff00:0:b", Some(2))])],
    ))
    .unwrap();
    let (a, b) = (ia("1-ff00:0:a"), ia("1-ff00:0:b"));
    let p = t
        .import_path(&PathDescription {
            hops: vec![
                PathHop {
                    ia: a,
                    ingress: 0,
                    egress: 1,
                },
                PathHop {
                    ia: b,
                    ingress: 2,
                    egress: 0,
                },
            ],
        })
        .unwrap();
    // Re-importing the same thing changes nothing and writes nothing.
    let n = sink.0.lock().unwrap().len();
    t.import_path(&PathDescription {
        hops: p.hops.clone(),
    })
    .unwrap();
    assert_eq!(sink.0.lock().unwrap().len(), n);
    let restored = TopologyHandle::new();
    restored.restore(sink.0.lock().unwrap().iter());
    let (x, y) = (t.snapshot(), restored.snapshot());
    assert_eq!(x.ases, y.ases);
    assert_eq!(x.links, y.links);
    assert_eq!(x.paths, y.paths);
    assert!(y.has_router(a, 1));
    let l = HopLayout::of(Some(&v1::Path {
        seg_lens: vec![2],
        info_fields: vec![info(true)],
        hop_fields: vec![hf(0, 1), hf(2, 0)],
        ..Default::default()
    }))
    .unwrap();
    assert!(matches!(y.map(a, b, &l), Mapping::Known { id, .. } if id == p.id));
}

fn hop(s: &str, ingress: u16, egress: u16) -> PathHop {
    PathHop {
        ia: ia(s),
        ingress,
        egress,
    }
}

#[test]
fn path_ids_cover_every_hop_and_shared_interfaces_map_by_walking() {
    let t = TopologyHandle::new();
    let via = |m: &str| PathDescription {
        hops: vec![
            hop("1-ff00:0:a", 0, 1),
            hop(m, 2, 3),
            hop("1-ff00:0:c", 4, 0),
        ],
    };
    let (p1, p2) = (via("1-ff00:0:b"), via("1-ff00:0:e"));
    let ps = t.import_paths(&[p1.clone(), p2.clone()]).unwrap();
    assert_ne!(ps[0].id, ps[1].id, "paths differing in a middle AS");
    assert_eq!(t.snapshot().paths.len(), 2);
    assert_eq!(t.snapshot().paths[&ps[0].id].hops, p1.hops);
    // A report's path shows only interfaces: ambiguous until the interfaces say which.
    let l = HopLayout::of(Some(&v1::Path {
        seg_lens: vec![3],
        info_fields: vec![info(true)],
        hop_fields: vec![hf(0, 1), hf(2, 3), hf(4, 0)],
        ..Default::default()
    }))
    .unwrap();
    let (a, c) = (ia("1-ff00:0:a"), ia("1-ff00:0:c"));
    assert!(matches!(
        t.snapshot().map(a, c, &l),
        Mapping::Unknown { .. }
    ));
    t.import_topology_json(&topo(
        "1-ff00:0:a",
        &[("ra", Some(1), &[(1, "1-ff00:0:e", Some(2))])],
    ))
    .unwrap();
    t.import_topology_json(&topo(
        "1-ff00:0:e",
        &[("re", Some(1), &[(3, "1-ff00:0:c", None)])],
    ))
    .unwrap();
    match t.snapshot().map(a, c, &l) {
        Mapping::Known { id, .. } => assert_eq!(id, ps[1].id),
        m => panic!("{m:?}"),
    }
    // One bad path refuses the whole import.
    let bad = PathDescription {
        hops: vec![hop("1-ff00:0:a", 0, 0), hop("1-ff00:0:f", 0, 0)],
    };
    let e = t.import_paths(&[via("1-ff00:0:f"), bad]).unwrap_err();
    assert!(e.message().starts_with("path 1:"), "{e}");
    assert_eq!(t.snapshot().paths.len(), 2);
}

#[test]
fn a_topology_file_replaces_what_it_names_and_keeps_the_rest_consistent() {
    let t = TopologyHandle::new();
    let x = ia("1-ff00:0:a");
    // Learned from a report, then named by the file.
    t.update(|t, ch| add_router(t, ch, x, 7));
    assert_eq!(
        t.import_topology_json(&topo(
            "1-ff00:0:a",
            &[
                ("r1", Some(1), &[(1, "1-ff00:0:b", None)]),
                ("r2", Some(2), &[(2, "1-ff00:0:c", None)]),
            ],
        ))
        .unwrap(),
        1
    );
    t.import_topology_json(&topo(
        "1-ff00:0:a",
        &[("br7", Some(7), &[(2, "1-ff00:0:c", None)])],
    ))
    .unwrap();
    let s = t.snapshot();
    let a = &s.ases[&x];
    let names: Vec<&str> = a.routers.keys().map(String::as_str).collect();
    assert_eq!(names, ["br7", "r1", "r2"], "node-7 is br7 now");
    assert_eq!(
        a.routers["r2"].interfaces,
        Vec::<u16>::new(),
        "2 moved to br7"
    );
    assert_eq!(a.interfaces[&2].router.as_deref(), Some("br7"));
    assert_eq!(a.interfaces[&1].router.as_deref(), Some("r1"));
    // Re-importing an empty AS is no change; a new one is.
    assert_eq!(t.import_topology_json(&topo("1-ff00:0:b", &[])).unwrap(), 1);
    assert_eq!(t.import_topology_json(&topo("1-ff00:0:b", &[])).unwrap(), 0);
}

#[test]
fn every_as_of_an_appliance_file_is_imported_and_incomplete_files_are_refused() {
    let t = TopologyHandle::new();
    let text = r#"{ "isd_as": {
  "1-ff00:0:a": { "router": { "id": 1, "internal_address": "10.0.0.1:30042", "interfaces": {
"1": { "address": "192.0.2.1:50000", "remote_address": "192.0.2.2:50000",
       "remote_isd_as": "1-ff00:0:b", "link_type": "CORE", "remote_interface_id": 2 } } } },
  "1-ff00:0:b": { "router": { "internal_address": "10.0.1.1:30042", "interfaces": {
"2": { "address": "192.0.2.2:50000", "remote_address": "192.0.2.1:50000",
       "remote_isd_as": "1-ff00:0:a", "link_type": "core", "remote_interface_id": 1 } } } } } }"#;
    assert_eq!(
        t.import_topology_json(text).unwrap(),
        3,
        "two ASes, one link"
    );
    let s = t.snapshot();
    let (a, b) = (ia("1-ff00:0:a"), ia("1-ff00:0:b"));
    let ra = &s.ases[&a].routers["br1-ff00_0_a-1"];
    assert_eq!((ra.node_id, &ra.interfaces[..]), (Some(1), &[1][..]));
    assert!(s.ases[&a].core, "an AS with a core link is core");
    assert_eq!(s.ases[&b].routers["br1-ff00_0_b-1"].node_id, None);
    assert_eq!(s.ases[&a].interfaces[&1].link_type.as_deref(), Some("core"));
    assert!(s.links.contains(&Link::new((a, 1), (b, 2))));
    // One bad AS refuses the file; incomplete routers and interfaces are refused.
    let bad = text.replace(
        r#""remote_isd_as": "1-ff00:0:a""#,
        r#""remote_isd_as": "1-ff00:0:b""#,
    );
    let e = t.import_topology_json(&bad).unwrap_err();
    assert!(e.message().contains("links 1-ff00:0:b to itself"), "{e}");
    for (text, field) in [
        (r#"{"isd_as":"1-ff00:0:c"}"#, "border_routers"),
        (
            r#"{"isd_as":"1-ff00:0:c","border_routers":{"r":{"interfaces":{}}}}"#,
            "border_routers.r.internal_addr",
        ),
        (
            r#"{"isd_as":"1-ff00:0:c","border_routers":{"r":{"internal_addr":"10.0.0.1:30042","interfaces":{"1":{"isd_as":"1-ff00:0:a"}}}}}"#,
            "border_routers.r.interfaces.1.link_to",
        ),
    ] {
        let e = t.import_topology_json(text).unwrap_err();
        assert!(e.message().starts_with("topology.json: field `"), "{e}");
        assert!(e.message().contains(&format!("`{field}`")), "{e}");
    }
    assert!(!t.snapshot().ases.contains_key(&ia("1-ff00:0:c")));
}

#[test]
fn a_signature_shared_with_a_known_path_of_another_shape_maps_to_nothing() {
    let (a, b, c) = (ia("1-ff00:0:a"), ia("1-ff00:0:b"), ia("1-ff00:0:c"));
    let hop = |ia, ingress, egress| PathHop {
        ia,
        ingress,
        egress,
    };
    let known = PathDescription {
        hops: vec![hop(a, 0, 1), hop(b, 2, 3), hop(c, 4, 0)],
    };
    let t = TopologyHandle::new();
    let known_id = t.import_path(&known).unwrap().id;
    // A report's path of four AS hops, whose signature is made to name the known path
    // (as a hash collision would): it must not be taken for it.
    let p = v1::Path {
        seg_lens: vec![4],
        info_fields: vec![info(true)],
        hop_fields: vec![hf(0, 1), hf(2, 3), hf(4, 5), hf(6, 0)],
        ..Default::default()
    };
    let l = HopLayout::of(Some(&p)).unwrap();
    let mut topo = Topology::clone(&t.snapshot());
    let sig = topo.signature(a, c, l.ifs[..l.as_hops].iter().copied());
    topo.by_ifs.entry(sig).or_default().push(known_id);
    assert!(matches!(topo.map(a, c, &l), Mapping::Unknown { .. }));
    // The same interfaces towards another destination are not the known path either.
    let three = v1::Path {
        seg_lens: vec![3],
        hop_fields: vec![hf(0, 1), hf(2, 3), hf(4, 0)],
        ..p
    };
    let l = HopLayout::of(Some(&three)).unwrap();
    let sig = topo.signature(a, b, l.ifs[..l.as_hops].iter().copied());
    topo.by_ifs.entry(sig).or_default().push(known_id);
    assert!(matches!(topo.map(a, b, &l), Mapping::Unknown { .. }));
    // The known path itself still maps.
    assert!(matches!(topo.map(a, c, &l), Mapping::Known { id, .. } if id == known_id));
}

#[test]
fn a_walk_that_comes_back_to_an_as_is_no_path() {
    let (a, b) = (ia("1-ff00:0:a"), ia("1-ff00:0:b"));
    let t = TopologyHandle::new();
    t.import_topology_json(&topo(
        "1-ff00:0:a",
        &[(
            "ra",
            Some(1),
            &[(1, "1-ff00:0:b", Some(2)), (4, "1-ff00:0:b", Some(3))],
        )],
    ))
    .unwrap();
    t.import_topology_json(&topo(
        "1-ff00:0:b",
        &[(
            "rb",
            Some(2),
            &[(2, "1-ff00:0:a", Some(1)), (3, "1-ff00:0:a", Some(4))],
        )],
    ))
    .unwrap();
    // A -1-> B -3-> A: the interfaces connect, but the walk visits A twice.
    let p = v1::Path {
        seg_lens: vec![3],
        info_fields: vec![info(true)],
        hop_fields: vec![hf(0, 1), hf(2, 3), hf(4, 0)],
        ..Default::default()
    };
    let l = HopLayout::of(Some(&p)).unwrap();
    assert!(matches!(
        t.snapshot().map(a, a, &l),
        Mapping::Unknown { .. }
    ));
    // Without the return, the same interfaces walk.
    let p = v1::Path {
        seg_lens: vec![2],
        hop_fields: vec![hf(0, 1), hf(2, 0)],
        ..p
    };
    let l = HopLayout::of(Some(&p)).unwrap();
    assert!(matches!(t.snapshot().map(a, b, &l), Mapping::Walked { .. }));
}

#[test]
fn paths_map_by_import_or_by_walking_imported_interfaces() {
    let t = TopologyHandle::new();
    let p = v1::Path {
        seg_lens: vec![3],
        info_fields: vec![info(true)],
        hop_fields: vec![hf(0, 1), hf(2, 3), hf(4, 0)],
        ..Default::default()
    };
    let l = HopLayout::of(Some(&p)).unwrap();
    let (a, b, c) = (ia("1-ff00:0:a"), ia("1-ff00:0:b"), ia("1-ff00:0:c"));
    assert!(matches!(
        t.snapshot().map(a, c, &l),
        Mapping::Unknown { .. }
    ));
    // Interfaces of A and B lead to C.
    t.import_topology_json(&topo(
        "1-ff00:0:a",
        &[("ra", Some(1), &[(1, "1-ff00:0:b", Some(2))])],
    ))
    .unwrap();
    assert!(matches!(
        t.snapshot().map(a, c, &l),
        Mapping::Unknown { .. }
    ));
    t.import_topology_json(&topo(
        "1-ff00:0:b",
        &[(
            "rb",
            Some(2),
            &[(2, "1-ff00:0:a", None), (3, "1-ff00:0:c", None)],
        )],
    ))
    .unwrap();
    // B's interface 3 leads to C, but neither it nor a file of C says which interface of C
    // the link ends at: C's ingress 4 is only the report's word.
    assert!(matches!(
        t.snapshot().map(a, c, &l),
        Mapping::Unknown { .. }
    ));
    t.import_topology_json(&topo(
        "1-ff00:0:b",
        &[(
            "rb",
            Some(2),
            &[(2, "1-ff00:0:a", None), (3, "1-ff00:0:c", Some(4))],
        )],
    ))
    .unwrap();
    match t.snapshot().map(a, c, &l) {
        Mapping::Walked { ases, .. } => assert_eq!(&ases[..], &[a, b, c]),
        m => panic!("{m:?}"),
    }
    // Walking to the wrong destination fails.
    assert!(matches!(
        t.snapshot().map(a, b, &l),
        Mapping::Unknown { .. }
    ));
    let imported = t
        .import_path(&PathDescription {
            hops: vec![
                PathHop {
                    ia: a,
                    ingress: 0,
                    egress: 1,
                },
                PathHop {
                    ia: b,
                    ingress: 2,
                    egress: 3,
                },
                PathHop {
                    ia: c,
                    ingress: 4,
                    egress: 0,
                },
            ],
        })
        .unwrap();
    match t.snapshot().map(a, c, &l) {
        Mapping::Known { id, ases } => {
            assert_eq!(id, imported.id);
            assert_eq!(&ases[..], &[a, b, c]);
        }
        m => panic!("{m:?}"),
    }
    assert!(t.snapshot().links.contains(&Link::new((b, 3), (c, 4))));
    assert_eq!(t.snapshot().router_name(a, 1), Some("ra"));
    assert!(t.import_topology_json("{}").is_err());
    assert!(t.import_path(&PathDescription { hops: vec![] }).is_err());
}
