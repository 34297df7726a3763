//! Topology and quarantine in PostgreSQL: typed records, migrations applied at connect, the
//! whole topology loaded at start ([`TopologyDb::load`]), changes applied in transactions, and
//! [`WriteBehind`], a bounded queue whose task writes changes in batches and retries through
//! database restarts without losing what it accepted.
//!
//! ISD-AS numbers are the 64-bit integer form (`ISD << 48 | AS`); PostgreSQL's BIGINT is
//! signed, so they are stored bit for bit (`as i64`).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sqlx::postgres::{PgPool, PgPoolOptions};
use sqlx::{Postgres, Row, Transaction};
use tokio::sync::Notify;

use crate::drain::{Task, wait_drained};

/// Why a database operation failed.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    /// Connecting or talking to PostgreSQL failed.
    #[error("PostgreSQL: {0}")]
    Sql(#[from] sqlx::Error),
    /// A migration failed.
    #[error("PostgreSQL migration: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
}

/// A border router of an AS.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct RouterRecord {
    /// Node id (as in ID-INT entries), if known; unique within the AS.
    pub node_id: Option<u32>,
    /// Name (e.g. `br1-ff00_0_110-1`), unique within the AS.
    pub name: String,
}

/// An interface of an AS.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct InterfaceRecord {
    /// Interface id.
    pub ifid: u16,
    /// Owning router's node id, if known.
    pub node_id: Option<u32>,
    /// Owning router's name, if known.
    pub router: Option<String>,
    /// Link type (`parent`, `child`, `core`, `peer`) or empty.
    pub link_type: String,
    /// Neighbour AS, if known.
    pub neighbor_ia: Option<u64>,
    /// Neighbour's interface id, if known.
    pub neighbor_ifid: Option<u16>,
}

/// An ISD-AS with its routers and interfaces (replaced as a whole when it changes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AsRecord {
    /// ISD-AS (64-bit form).
    pub ia: u64,
    /// Core AS.
    pub core: bool,
    /// MTU, if known.
    pub mtu: Option<u32>,
    /// Routers.
    pub routers: Vec<RouterRecord>,
    /// Interfaces.
    pub interfaces: Vec<InterfaceRecord>,
}

/// An inter-AS link between two interfaces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LinkRecord {
    /// One end: (ISD-AS, interface).
    pub a: (u64, u16),
    /// Other end.
    pub b: (u64, u16),
}

impl LinkRecord {
    /// The link with its ends in canonical order (the same row whichever way it was seen).
    pub fn canonical(self) -> Self {
        if self.a <= self.b {
            self
        } else {
            LinkRecord {
                a: self.b,
                b: self.a,
            }
        }
    }
}

/// A router-to-router link inside an AS.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct InternalLinkRecord {
    /// The AS.
    pub ia: u64,
    /// Upstream node id.
    pub from_node: u32,
    /// Downstream node id.
    pub to_node: u32,
}

/// One AS hop of a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct HopRecord {
    /// The AS.
    pub ia: u64,
    /// Ingress interface (0 at the source).
    pub ingress: u16,
    /// Egress interface (0 at the destination).
    pub egress: u16,
}

/// A path: its hops and fingerprint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathRecord {
    /// Fingerprint (the path's id).
    pub fingerprint: u64,
    /// Hops in travel direction.
    pub hops: Vec<HopRecord>,
    /// First seen, Unix ns.
    pub first_seen_ns: u64,
    /// Learned from reports (walked and confirmed) rather than imported; the latest change of
    /// a path sets it.
    pub learned: bool,
}

/// A path seen in reports that could not be mapped to ASes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownPathRecord {
    /// Fingerprint of the raw path.
    pub fingerprint: u64,
    /// What is known about it (free text, e.g. JSON).
    pub detail: String,
    /// First seen, Unix ns.
    pub first_seen_ns: u64,
}

/// A rejected report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuarantineRecord {
    /// Received, Unix ns.
    pub received_ns: u64,
    /// Reason (short, machine-readable).
    pub reason: String,
    /// Details.
    pub detail: String,
    /// The report as received (protobuf).
    pub report: Vec<u8>,
}

/// One change to write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// An AS, its routers and interfaces (replaces the stored ones).
    As(AsRecord),
    /// An inter-AS link.
    Link(LinkRecord),
    /// An AS-internal link.
    InternalLink(InternalLinkRecord),
    /// A path (first record wins; hops are immutable per fingerprint).
    Path(PathRecord),
    /// An unmapped path (first record wins).
    UnknownPath(UnknownPathRecord),
    /// A rejected report.
    Quarantine(QuarantineRecord),
}

/// Everything stored, as loaded at start.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// ASes by ISD-AS.
    pub ases: Vec<AsRecord>,
    /// Inter-AS links (canonical order).
    pub links: Vec<LinkRecord>,
    /// AS-internal links.
    pub internal_links: Vec<InternalLinkRecord>,
    /// Paths.
    pub paths: Vec<PathRecord>,
    /// Unmapped paths.
    pub unknown_paths: Vec<UnknownPathRecord>,
}

/// The PostgreSQL channel on which committed topology changes are announced (the payload is
/// the announcing [`TopologyDb`]'s origin tag), so that other processes on the same database
/// can load them.
pub const TOPOLOGY_CHANNEL: &str = "idint_topology";

/// The topology database.
#[derive(Debug, Clone)]
pub struct TopologyDb {
    pool: PgPool,
    quarantine_cap: u64,
    /// Tags this process's announcements (random per connection).
    origin: String,
}

/// A subscription to other processes' topology changes ([`TopologyDb::listen`]).
pub struct TopologyListener {
    listener: sqlx::postgres::PgListener,
    origin: String,
}

impl TopologyListener {
    /// Waits until another process has committed topology changes. Reconnects by itself
    /// when the connection drops (changes missed meanwhile are announced by the next one;
    /// callers load the whole topology, so nothing is lost for long).
    pub async fn changed(&mut self) -> Result<(), DbError> {
        loop {
            let n = self.listener.recv().await?;
            if n.payload() != self.origin {
                return Ok(());
            }
        }
    }
}

fn ia(v: u64) -> i64 {
    v as i64
}

fn un(v: i64) -> u64 {
    v as u64
}

impl TopologyDb {
    /// Connects to `url` (`postgresql://user:pw@host:port/db`) and applies the migrations.
    /// The quarantine keeps the newest `quarantine_cap` rows.
    pub async fn connect(url: &str, quarantine_cap: u64) -> Result<Self, DbError> {
        let pool = PgPoolOptions::new()
            .max_connections(4)
            .acquire_timeout(Duration::from_secs(2))
            .connect(url)
            .await?;
        sqlx::migrate!("./migrations").run(&pool).await?;
        let origin = {
            use std::hash::{BuildHasher, Hasher};
            let mut h = std::hash::RandomState::new().build_hasher();
            h.write_u32(std::process::id());
            format!("{:016x}", h.finish())
        };
        Ok(TopologyDb {
            pool,
            quarantine_cap,
            origin,
        })
    }

    /// Subscribes to topology changes committed by other processes on this database.
    pub async fn listen(&self) -> Result<TopologyListener, DbError> {
        let mut listener = sqlx::postgres::PgListener::connect_with(&self.pool).await?;
        listener.listen(TOPOLOGY_CHANNEL).await?;
        Ok(TopologyListener {
            listener,
            origin: self.origin.clone(),
        })
    }

    /// The connection pool (for callers with their own queries).
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// Applies changes in one transaction (all or nothing).
    pub async fn apply(&self, changes: &[Change]) -> Result<(), DbError> {
        let mut tx = self.pool.begin().await?;
        let mut quarantined = false;
        let mut topology = false;
        for c in changes {
            quarantined |= matches!(c, Change::Quarantine(_));
            topology |= !matches!(c, Change::Quarantine(_));
            apply_one(&mut tx, c).await?;
        }
        if topology {
            // Delivered when the transaction commits, and only then.
            sqlx::query("SELECT pg_notify($1, $2)")
                .bind(TOPOLOGY_CHANNEL)
                .bind(&self.origin)
                .execute(&mut *tx)
                .await?;
        }
        if quarantined {
            sqlx::query("DELETE FROM quarantine WHERE id <= (SELECT max(id) FROM quarantine) - $1")
                .bind(self.quarantine_cap as i64)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// Loads the whole topology.
    pub async fn load(&self) -> Result<Snapshot, DbError> {
        let mut snap = Snapshot::default();
        for r in sqlx::query("SELECT ia, core, mtu FROM isd_as ORDER BY ia")
            .fetch_all(&self.pool)
            .await?
        {
            snap.ases.push(AsRecord {
                ia: un(r.get(0)),
                core: r.get(1),
                mtu: r.get::<Option<i32>, _>(2).map(|m| m as u32),
                routers: Vec::new(),
                interfaces: Vec::new(),
            });
        }
        for r in sqlx::query("SELECT ia, node_id, name FROM router ORDER BY ia, name")
            .fetch_all(&self.pool)
            .await?
        {
            let a = un(r.get(0));
            if let Some(rec) = snap.ases.iter_mut().find(|x| x.ia == a) {
                rec.routers.push(RouterRecord {
                    node_id: r.get::<Option<i64>, _>(1).map(|n| n as u32),
                    name: r.get(2),
                });
            }
        }
        for r in sqlx::query(
            "SELECT ia, ifid, node_id, link_type, neighbor_ia, neighbor_ifid, router FROM \
             interface ORDER BY ia, ifid",
        )
        .fetch_all(&self.pool)
        .await?
        {
            let a = un(r.get(0));
            if let Some(rec) = snap.ases.iter_mut().find(|x| x.ia == a) {
                rec.interfaces.push(InterfaceRecord {
                    ifid: r.get::<i32, _>(1) as u16,
                    node_id: r.get::<Option<i64>, _>(2).map(|n| n as u32),
                    link_type: r.get(3),
                    neighbor_ia: r.get::<Option<i64>, _>(4).map(un),
                    neighbor_ifid: r.get::<Option<i32>, _>(5).map(|n| n as u16),
                    router: r.get(6),
                });
            }
        }
        for r in sqlx::query("SELECT a_ia, a_ifid, b_ia, b_ifid FROM link ORDER BY 1, 2, 3, 4")
            .fetch_all(&self.pool)
            .await?
        {
            snap.links.push(LinkRecord {
                a: (un(r.get(0)), r.get::<i32, _>(1) as u16),
                b: (un(r.get(2)), r.get::<i32, _>(3) as u16),
            });
        }
        for r in sqlx::query("SELECT ia, from_node, to_node FROM internal_link ORDER BY 1, 2, 3")
            .fetch_all(&self.pool)
            .await?
        {
            snap.internal_links.push(InternalLinkRecord {
                ia: un(r.get(0)),
                from_node: r.get::<i64, _>(1) as u32,
                to_node: r.get::<i64, _>(2) as u32,
            });
        }
        for r in
            sqlx::query("SELECT fingerprint, first_seen_ns, learned FROM path ORDER BY fingerprint")
                .fetch_all(&self.pool)
                .await?
        {
            snap.paths.push(PathRecord {
                fingerprint: un(r.get(0)),
                hops: Vec::new(),
                first_seen_ns: un(r.get(1)),
                learned: r.get(2),
            });
        }
        for r in sqlx::query(
            "SELECT fingerprint, ia, ingress, egress FROM path_hop ORDER BY fingerprint, idx",
        )
        .fetch_all(&self.pool)
        .await?
        {
            let f = un(r.get(0));
            if let Ok(k) = snap
                .paths
                .binary_search_by_key(&(f as i64), |p| p.fingerprint as i64)
            {
                snap.paths[k].hops.push(HopRecord {
                    ia: un(r.get(1)),
                    ingress: r.get::<i32, _>(2) as u16,
                    egress: r.get::<i32, _>(3) as u16,
                });
            }
        }
        for r in sqlx::query(
            "SELECT fingerprint, detail, first_seen_ns FROM unknown_path ORDER BY fingerprint",
        )
        .fetch_all(&self.pool)
        .await?
        {
            snap.unknown_paths.push(UnknownPathRecord {
                fingerprint: un(r.get(0)),
                detail: r.get(1),
                first_seen_ns: un(r.get(2)),
            });
        }
        // SQL orders the signed column form; callers get unsigned order.
        snap.ases.sort_by_key(|a| a.ia);
        snap.links.sort();
        snap.internal_links.sort();
        snap.paths.sort_by_key(|p| p.fingerprint);
        snap.unknown_paths.sort_by_key(|p| p.fingerprint);
        Ok(snap)
    }

    /// The newest `limit` quarantined reports, newest first.
    pub async fn quarantine(&self, limit: u32) -> Result<Vec<QuarantineRecord>, DbError> {
        let rows = sqlx::query(
            "SELECT received_ns, reason, detail, report FROM quarantine ORDER BY id DESC LIMIT $1",
        )
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await?;
        Ok(rows
            .into_iter()
            .map(|r| QuarantineRecord {
                received_ns: un(r.get(0)),
                reason: r.get(1),
                detail: r.get(2),
                report: r.get(3),
            })
            .collect())
    }
}

/// PostgreSQL text cannot hold NUL characters.
fn no_nul(s: &str) -> std::borrow::Cow<'_, str> {
    if s.contains('\0') {
        s.replace('\0', "\u{fffd}").into()
    } else {
        s.into()
    }
}

async fn apply_one(tx: &mut Transaction<'_, Postgres>, c: &Change) -> Result<(), sqlx::Error> {
    match c {
        Change::As(a) => {
            sqlx::query(
                "INSERT INTO isd_as (ia, core, mtu) VALUES ($1, $2, $3) ON CONFLICT (ia) DO \
                 UPDATE SET core = EXCLUDED.core, mtu = EXCLUDED.mtu, updated_at = now()",
            )
            .bind(ia(a.ia))
            .bind(a.core)
            .bind(a.mtu.map(|m| m as i32))
            .execute(&mut **tx)
            .await?;
            sqlx::query("DELETE FROM router WHERE ia = $1")
                .bind(ia(a.ia))
                .execute(&mut **tx)
                .await?;
            sqlx::query("DELETE FROM interface WHERE ia = $1")
                .bind(ia(a.ia))
                .execute(&mut **tx)
                .await?;
            for r in &a.routers {
                sqlx::query(
                    "INSERT INTO router (ia, node_id, name) VALUES ($1, $2, $3) \
                     ON CONFLICT (ia, name) DO UPDATE SET node_id = EXCLUDED.node_id",
                )
                .bind(ia(a.ia))
                .bind(r.node_id.map(i64::from))
                .bind(no_nul(&r.name))
                .execute(&mut **tx)
                .await?;
            }
            for i in &a.interfaces {
                sqlx::query(
                    "INSERT INTO interface (ia, ifid, node_id, link_type, neighbor_ia, \
                     neighbor_ifid, router) VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT \
                     (ia, ifid) DO UPDATE SET node_id = EXCLUDED.node_id, link_type = \
                     EXCLUDED.link_type, neighbor_ia = EXCLUDED.neighbor_ia, neighbor_ifid = \
                     EXCLUDED.neighbor_ifid, router = EXCLUDED.router",
                )
                .bind(ia(a.ia))
                .bind(i32::from(i.ifid))
                .bind(i.node_id.map(i64::from))
                .bind(no_nul(&i.link_type))
                .bind(i.neighbor_ia.map(ia))
                .bind(i.neighbor_ifid.map(i32::from))
                .bind(i.router.as_deref().map(no_nul))
                .execute(&mut **tx)
                .await?;
            }
        }
        Change::Link(l) => {
            let l = l.canonical();
            sqlx::query("INSERT INTO link VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING")
                .bind(ia(l.a.0))
                .bind(i32::from(l.a.1))
                .bind(ia(l.b.0))
                .bind(i32::from(l.b.1))
                .execute(&mut **tx)
                .await?;
        }
        Change::InternalLink(l) => {
            sqlx::query("INSERT INTO internal_link VALUES ($1, $2, $3) ON CONFLICT DO NOTHING")
                .bind(ia(l.ia))
                .bind(i64::from(l.from_node))
                .bind(i64::from(l.to_node))
                .execute(&mut **tx)
                .await?;
        }
        Change::Path(p) => {
            let new = sqlx::query(
                "INSERT INTO path (fingerprint, src_ia, dst_ia, first_seen_ns, learned) VALUES \
                 ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING",
            )
            .bind(ia(p.fingerprint))
            .bind(ia(p.hops.first().map_or(0, |h| h.ia)))
            .bind(ia(p.hops.last().map_or(0, |h| h.ia)))
            .bind(p.first_seen_ns as i64)
            .bind(p.learned)
            .execute(&mut **tx)
            .await?
            .rows_affected()
                == 1;
            if !new {
                // The hops of a fingerprint never change; its origin may.
                sqlx::query("UPDATE path SET learned = $2 WHERE fingerprint = $1")
                    .bind(ia(p.fingerprint))
                    .bind(p.learned)
                    .execute(&mut **tx)
                    .await?;
            }
            if new {
                for (k, h) in p.hops.iter().enumerate() {
                    sqlx::query("INSERT INTO path_hop VALUES ($1, $2, $3, $4, $5)")
                        .bind(ia(p.fingerprint))
                        .bind(k as i32)
                        .bind(ia(h.ia))
                        .bind(i32::from(h.ingress))
                        .bind(i32::from(h.egress))
                        .execute(&mut **tx)
                        .await?;
                }
            }
        }
        Change::UnknownPath(u) => {
            sqlx::query("INSERT INTO unknown_path VALUES ($1, $2, $3) ON CONFLICT DO NOTHING")
                .bind(ia(u.fingerprint))
                .bind(no_nul(&u.detail))
                .bind(u.first_seen_ns as i64)
                .execute(&mut **tx)
                .await?;
        }
        Change::Quarantine(q) => {
            sqlx::query(
                "INSERT INTO quarantine (received_ns, reason, detail, report) VALUES ($1, $2, \
                 $3, $4)",
            )
            .bind(q.received_ns as i64)
            .bind(no_nul(&q.reason))
            .bind(no_nul(&q.detail))
            .bind(&q.report)
            .execute(&mut **tx)
            .await?;
        }
    }
    Ok(())
}

/// Counters of a [`WriteBehind`] queue.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriteBehindStats {
    /// Changes accepted.
    pub accepted: u64,
    /// Changes written.
    pub written: u64,
    /// Changes refused because the queue was full.
    pub refused: u64,
    /// Failed transactions that were retried.
    pub retries: u64,
    /// Changes PostgreSQL refused outright (logged with the reason; not retried).
    pub failed: u64,
    /// Accepted changes not yet written.
    pub pending: u64,
}

/// The queue was full: the change was not taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("topology write-behind queue full ({0} changes pending)")]
pub struct QueueFull(pub u64);

struct Shared {
    queue: Mutex<VecDeque<Change>>,
    capacity: usize,
    in_flight: AtomicU64,
    wake: Notify,
    drained: Notify,
    closed: AtomicBool,
    accepted: AtomicU64,
    written: AtomicU64,
    refused: AtomicU64,
    retries: AtomicU64,
    failed: AtomicU64,
}

impl Shared {
    fn pending(&self) -> u64 {
        self.queue.lock().map(|q| q.len()).unwrap_or(0) as u64 + self.in_flight.load(Relaxed)
    }
}

/// Writes topology changes and quarantine rows behind the caller: [`WriteBehind::send`] never
/// waits; a task writes batches in one transaction each and retries (with backoff) until
/// PostgreSQL takes them, so a database restart loses nothing that was accepted.
pub struct WriteBehind {
    shared: Arc<Shared>,
    task: Task,
}

impl std::fmt::Debug for WriteBehind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriteBehind")
            .field("stats", &self.stats())
            .finish()
    }
}

/// Most changes per transaction.
const BATCH: usize = 512;

impl WriteBehind {
    /// Starts the writer task on the current tokio runtime; at most `capacity` changes wait.
    pub fn spawn(db: TopologyDb, capacity: usize) -> Self {
        let shared = Arc::new(Shared {
            queue: Mutex::new(VecDeque::new()),
            capacity,
            in_flight: AtomicU64::new(0),
            wake: Notify::new(),
            drained: Notify::new(),
            closed: AtomicBool::new(false),
            accepted: AtomicU64::new(0),
            written: AtomicU64::new(0),
            refused: AtomicU64::new(0),
            retries: AtomicU64::new(0),
            failed: AtomicU64::new(0),
        });
        let task = tokio::spawn(write_loop(db, shared.clone()));
        WriteBehind {
            shared,
            task: Task::new(task),
        }
    }

    /// Queues a change; never waits.
    pub fn send(&self, change: Change) -> Result<(), QueueFull> {
        let s = &self.shared;
        {
            let Ok(mut q) = s.queue.lock() else {
                return Err(QueueFull(0));
            };
            let held = q.len() + s.in_flight.load(Relaxed) as usize;
            if held >= s.capacity || s.closed.load(Relaxed) {
                s.refused.fetch_add(1, Relaxed);
                return Err(QueueFull(held as u64));
            }
            q.push_back(change);
        }
        s.accepted.fetch_add(1, Relaxed);
        s.wake.notify_one();
        Ok(())
    }

    /// Queues changes, all or none (there must be room for every one); never waits.
    pub fn send_all(&self, changes: Vec<Change>) -> Result<(), QueueFull> {
        let s = &self.shared;
        let n = changes.len();
        {
            let Ok(mut q) = s.queue.lock() else {
                return Err(QueueFull(0));
            };
            let held = q.len() + s.in_flight.load(Relaxed) as usize;
            if held + n > s.capacity || s.closed.load(Relaxed) {
                s.refused.fetch_add(n as u64, Relaxed);
                return Err(QueueFull(held as u64));
            }
            q.extend(changes);
        }
        s.accepted.fetch_add(n as u64, Relaxed);
        s.wake.notify_one();
        Ok(())
    }

    /// Counters now.
    pub fn stats(&self) -> WriteBehindStats {
        let s = &self.shared;
        WriteBehindStats {
            accepted: s.accepted.load(Relaxed),
            written: s.written.load(Relaxed),
            refused: s.refused.load(Relaxed),
            retries: s.retries.load(Relaxed),
            failed: s.failed.load(Relaxed),
            pending: s.pending(),
        }
    }

    /// Waits (up to `timeout`) until everything accepted is written; returns what is still
    /// pending (0 on success).
    pub async fn flush(&self, timeout: Duration) -> u64 {
        let s = &self.shared;
        wait_drained(&s.wake, &s.drained, || s.pending(), timeout).await
    }

    /// Refuses new changes, writes the pending ones (up to `timeout`) and stops; returns the
    /// changes that could not be written (also logged).
    pub async fn close(&self, timeout: Duration) -> u64 {
        self.shared.closed.store(true, Relaxed);
        let left = self.flush(timeout).await;
        self.task.stop().await;
        if left > 0 {
            tracing::error!(
                pending = left,
                "topology writer closed with changes not written"
            );
        }
        left
    }
}

async fn write_loop(db: TopologyDb, s: Arc<Shared>) {
    let mut batch = Vec::with_capacity(BATCH);
    loop {
        batch.clear();
        if let Ok(mut q) = s.queue.lock() {
            let n = q.len().min(BATCH);
            batch.extend(q.drain(..n));
            s.in_flight.store(n as u64, Relaxed);
        }
        if batch.is_empty() {
            s.drained.notify_waiters();
            s.wake.notified().await;
            continue;
        }
        let mut delay = Duration::from_millis(50);
        let mut logged = false;
        loop {
            match db.apply(&batch).await {
                Ok(()) => {
                    s.written.fetch_add(batch.len() as u64, Relaxed);
                    s.in_flight.store(0, Relaxed);
                    if logged {
                        tracing::info!("topology writes resumed");
                    }
                    break;
                }
                Err(DbError::Sql(sqlx::Error::Database(e))) => {
                    // The server refused the data itself: retrying the batch would block the
                    // queue forever. Write the changes one by one; count and log refusals.
                    tracing::warn!(error = %e, "topology batch refused; writing changes one by one");
                    for c in &batch {
                        loop {
                            match db.apply(std::slice::from_ref(c)).await {
                                Ok(()) => s.written.fetch_add(1, Relaxed),
                                Err(DbError::Sql(sqlx::Error::Database(e))) => {
                                    tracing::error!(error = %e, change = ?c, "topology change refused by PostgreSQL");
                                    s.failed.fetch_add(1, Relaxed)
                                }
                                Err(_) => {
                                    s.retries.fetch_add(1, Relaxed);
                                    tokio::time::sleep(delay).await;
                                    delay = (delay * 2).min(Duration::from_secs(5));
                                    continue;
                                }
                            };
                            break;
                        }
                    }
                    s.in_flight.store(0, Relaxed);
                    break;
                }
                Err(e) => {
                    s.retries.fetch_add(1, Relaxed);
                    if !logged {
                        tracing::warn!(error = %e, pending = s.pending(), "topology write failed; retrying");
                        logged = true;
                    }
                    tokio::time::sleep(delay).await;
                    delay = (delay * 2).min(Duration::from_secs(5));
                }
            }
        }
        s.drained.notify_waiters();
    }
}
