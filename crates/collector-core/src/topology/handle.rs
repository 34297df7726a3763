//! [`TopologyHandle`]: the shared, versioned topology, its imports and its sink.

use super::*;

impl Default for TopologyHandle {
    fn default() -> Self {
        Self::new()
    }
}

impl TopologyHandle {
    /// An empty topology.
    pub fn new() -> Self {
        TopologyHandle {
            writer: Mutex::new(Topology::default()),
            snapshot: RwLock::new(Arc::new(Topology::default())),
            generation: AtomicU64::new(0),
            unknown: Mutex::new(BTreeMap::new()),
            unknown_capacity: UNKNOWN_PATHS_KEPT,
            sink: RwLock::new(None),
        }
    }

    /// Sets where changes are written behind.
    pub fn set_sink(&self, sink: Arc<dyn TopologySink>) {
        if let Ok(mut s) = self.sink.write() {
            *s = Some(sink);
        }
    }

    /// Changes since start; readers refresh their snapshot when it moves.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// The current snapshot.
    pub fn snapshot(&self) -> Arc<Topology> {
        self.snapshot.read().map(|s| s.clone()).unwrap_or_default()
    }

    /// Paths that could not be mapped.
    pub fn unknown_paths(&self) -> Vec<UnknownPath> {
        self.unknown
            .lock()
            .map(|u| u.values().cloned().collect())
            .unwrap_or_default()
    }

    /// Hands changes learned from reports to the sink; one that cannot take them counts the
    /// refusal (the facts stay known in memory and are learned again from later reports).
    pub(super) fn emit(&self, changes: &[TopologyChange]) {
        if let Ok(s) = self.sink.read()
            && let Some(s) = s.as_ref()
        {
            let _ = s.changed(changes);
        }
    }

    /// Hands a rejected report to the sink.
    pub fn quarantined(&self, q: &crate::counters::Quarantined) {
        if let Ok(s) = self.sink.read()
            && let Some(s) = s.as_ref()
        {
            s.quarantined(q);
        }
    }

    /// The sink, if any.
    pub fn sink(&self) -> Option<Arc<dyn TopologySink>> {
        self.sink.read().ok().and_then(|s| s.clone())
    }

    /// Applies `f` to the topology; publishes a new snapshot and writes the changes behind if
    /// it returned any.
    pub fn update<R>(&self, f: impl FnOnce(&mut Topology, &mut Vec<TopologyChange>) -> R) -> R {
        let mut changes = Vec::new();
        let r = {
            let mut w = match self.writer.lock() {
                Ok(w) => w,
                Err(p) => p.into_inner(),
            };
            let r = f(&mut w, &mut changes);
            if !changes.is_empty() {
                w.reindex();
                let snap = Arc::new(w.clone());
                if let Ok(mut s) = self.snapshot.write() {
                    *s = snap;
                }
                self.generation.fetch_add(1, Ordering::AcqRel);
            }
            r
        };
        self.emit(&changes);
        r
    }

    /// As [`Self::update`] for changes that must be persisted (imports): `f` works on a copy,
    /// which replaces the topology only if the sink took every change; otherwise nothing
    /// changes and the import fails with [`ImportError::NotPersisted`].
    pub fn update_persisted<R>(
        &self,
        f: impl FnOnce(&mut Topology, &mut Vec<TopologyChange>) -> Result<R, ImportError>,
    ) -> Result<R, ImportError> {
        let mut w = match self.writer.lock() {
            Ok(w) => w,
            Err(p) => p.into_inner(),
        };
        let mut next = w.clone();
        let mut changes = Vec::new();
        let r = f(&mut next, &mut changes)?;
        if changes.is_empty() {
            return Ok(r);
        }
        if let Some(sink) = self.sink() {
            sink.changed(&changes)
                .map_err(|e| ImportError::NotPersisted(format!("not persisted: {}", e.0)))?;
        }
        next.reindex();
        *w = next;
        let snap = Arc::new(w.clone());
        if let Ok(mut s) = self.snapshot.write() {
            *s = snap;
        }
        self.generation.fetch_add(1, Ordering::AcqRel);
        Ok(r)
    }

    /// Loads a persisted topology (for example rows read back from PostgreSQL at start) as
    /// the changes that built it; nothing is written back to the sink.
    pub fn restore<'a>(&self, changes: impl IntoIterator<Item = &'a TopologyChange>) {
        let mut w = match self.writer.lock() {
            Ok(w) => w,
            Err(p) => p.into_inner(),
        };
        for c in changes {
            match c {
                TopologyChange::As { ia, info } => {
                    w.ases.insert(*ia, info.clone());
                }
                TopologyChange::Link(l) => {
                    w.links.insert(*l);
                }
                TopologyChange::InternalLink(l) => {
                    w.internal_links.insert(*l);
                }
                TopologyChange::Path(p) => {
                    w.insert_path(p.clone());
                }
                TopologyChange::UnknownPath(u) => {
                    if let Ok(mut m) = self.unknown.lock()
                        && m.len() < self.unknown_capacity
                    {
                        m.insert(u.id, u.clone());
                    }
                }
            }
        }
        w.reindex();
        let snap = Arc::new(w.clone());
        if let Ok(mut s) = self.snapshot.write() {
            *s = snap;
        }
        self.generation.fetch_add(1, Ordering::AcqRel);
    }

    /// Imports a SCION `topology.json` (every AS it describes, all or nothing; see
    /// `scion_topology::Topology::parse` for what is refused); returns the number of changes. Routers
    /// known before and not in the file are kept, without the interfaces and node ids the
    /// file gives to others. An AS seen for the first time is a change even when empty.
    pub fn import_topology_json(&self, text: &str) -> Result<usize, ImportError> {
        let ases = parse_topology_json(text)?;
        self.update_persisted(|t, ch| {
            for (ia, info) in &ases {
                merge_as(t, ch, *ia, info);
            }
            Ok(ch.len())
        })
    }

    /// Imports a path description; returns the path.
    pub fn import_path(&self, d: &PathDescription) -> Result<PathInfo, ImportError> {
        let mut v = self.import_paths(std::slice::from_ref(d))?;
        v.pop()
            .ok_or_else(|| ImportError::Invalid("no path imported".into()))
    }

    /// Imports path descriptions, all or nothing: every one is checked before any is
    /// applied. Returns the paths, in order.
    pub fn import_paths(&self, ds: &[PathDescription]) -> Result<Vec<PathInfo>, ImportError> {
        let paths = ds
            .iter()
            .enumerate()
            .map(|(k, d)| {
                check_path(d).map_err(|e| {
                    if ds.len() == 1 {
                        e
                    } else {
                        ImportError::Invalid(format!("path {k}: {e}"))
                    }
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        self.update_persisted(|t, ch| {
            // Ids are 64-bit hashes: refuse (whole) an import whose id is taken by other hops.
            for (k, p) in paths.iter().enumerate() {
                if let Some(old) = t.paths.get(&p.id)
                    && old.hops != p.hops
                {
                    return Err(ImportError::Invalid(format!(
                        "path {k}: id {:016x} is taken by another path",
                        p.id
                    )));
                }
            }
            for p in &paths {
                add_path(t, ch, p.clone());
            }
            Ok(())
        })?;
        Ok(paths)
    }

    /// Records a path that could not be mapped, counting sightings; at capacity the path
    /// seen least often is forgotten. The pipeline records only paths of reports whose source
    /// entry verified.
    pub fn record_unknown(&self, src: IsdAsn, dst: IsdAsn, id: u64, layout: &HopLayout) {
        let first = {
            let Ok(mut u) = self.unknown.lock() else {
                return;
            };
            if let Some(e) = u.get_mut(&id) {
                e.reports += 1;
                None
            } else {
                if u.len() >= self.unknown_capacity {
                    // Full: the path seen least often makes room (ties: the smallest id).
                    let least = u.values().min_by_key(|e| (e.reports, e.id)).map(|e| e.id);
                    if let Some(least) = least {
                        u.remove(&least);
                    }
                }
                let e = UnknownPath {
                    id,
                    src,
                    dst,
                    interfaces: layout.ifs[..layout.as_hops].to_vec(),
                    reports: 1,
                };
                u.insert(id, e.clone());
                Some(e)
            }
        };
        if let Some(e) = first {
            self.emit(&[TopologyChange::UnknownPath(e)]);
        }
    }
}
