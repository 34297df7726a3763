//! BFD and link state on the control side: the sessions of [`router_core::bfd`] fed by the
//! workers' BFD rings, their packets sent through a ring that worker 0 drains, the ports'
//! link state polled, and the result written to [`Router::set_link_up`]. Runs on the main
//! lcore's control loop ([`crate::run`]); its counters are read by `/metrics` and `/health`.

use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};

use dpdk::{Consumer, MbufBurst, Mempool, PortMonitor, Producer};
use router_core::bfd::{Framing, Session, State, TAG_LEN, Via};
use router_core::config::{BfdLink, BfdPlan};
use scion_dp::config::Router;

/// How often the ports' link state is read.
const LINK_POLL_NS: u64 = 100_000_000;
/// Largest SCION packet a BFD session writes (common, address and OneHop path headers with
/// IPv6 hosts, and the control packet).
const MAX_BFD_PACKET: usize = 128;

/// One session's published state and counters.
#[derive(Debug)]
pub struct SessionStats {
    /// `if<N>` or `sibling-<address>`.
    pub name: String,
    /// Whether BFD is disabled for it (the link counts as up).
    pub disabled: bool,
    /// The interfaces it decides.
    pub interfaces: Vec<u16>,
    /// [`State`] as its number.
    pub state: AtomicU8,
    /// Whether its interfaces are up (BFD and port link).
    pub link_up: AtomicBool,
    /// Control packets sent.
    pub sent: AtomicU64,
    /// Control packets accepted.
    pub received: AtomicU64,
    /// State changes.
    pub state_changes: AtomicU64,
}

/// Everything BFD and link state publish.
#[derive(Debug, Default)]
pub struct BfdStats {
    /// Per session.
    pub sessions: Vec<SessionStats>,
    /// Per port: device name and link state.
    pub ports: Vec<(String, AtomicBool)>,
    /// BFD packets dropped: no session (BFD disabled on the link, unknown sibling), wrong
    /// path type, malformed.
    pub dropped: AtomicU64,
    /// BFD packets not sent (no mbuf, ring full).
    pub tx_failed: AtomicU64,
}

impl BfdStats {
    /// The Prometheus text of the sessions and ports.
    pub fn prometheus(&self) -> String {
        let mut o = String::with_capacity(2048);
        let r = Ordering::Relaxed;
        let gauge = |o: &mut String, name: &str, help: &str| {
            let _ = writeln!(o, "# HELP idint_router_{name} {help}");
            let _ = writeln!(o, "# TYPE idint_router_{name} gauge");
        };
        let counter = |o: &mut String, name: &str, help: &str| {
            let _ = writeln!(o, "# HELP idint_router_{name} {help}");
            let _ = writeln!(o, "# TYPE idint_router_{name} counter");
        };
        gauge(
            &mut o,
            "bfd_session_state",
            "BFD session state (0 admin down, 1 down, 2 init, 3 up)",
        );
        for s in self.sessions.iter().filter(|s| !s.disabled) {
            let _ = writeln!(
                o,
                "idint_router_bfd_session_state{{session=\"{}\"}} {}",
                s.name,
                s.state.load(r)
            );
        }
        type Field = fn(&SessionStats) -> &AtomicU64;
        let fields: [(&str, &str, Field); 3] = [
            ("bfd_sent_total", "BFD control packets sent", |s| &s.sent),
            ("bfd_received_total", "BFD control packets accepted", |s| {
                &s.received
            }),
            (
                "bfd_state_changes_total",
                "BFD session state changes",
                |s| &s.state_changes,
            ),
        ];
        for (name, help, f) in fields {
            counter(&mut o, name, help);
            for s in self.sessions.iter().filter(|s| !s.disabled) {
                let _ = writeln!(
                    o,
                    "idint_router_{name}{{session=\"{}\"}} {}",
                    s.name,
                    f(s).load(r)
                );
            }
        }
        gauge(
            &mut o,
            "interface_up",
            "Whether the interface's link is up (BFD and port link)",
        );
        for s in &self.sessions {
            for i in &s.interfaces {
                let _ = writeln!(
                    o,
                    "idint_router_interface_up{{interface=\"{i}\"}} {}",
                    u8::from(s.link_up.load(r))
                );
            }
        }
        gauge(&mut o, "port_link_up", "Whether the port's link is up");
        for (d, up) in &self.ports {
            let _ = writeln!(
                o,
                "idint_router_port_link_up{{port=\"{d}\"}} {}",
                u8::from(up.load(r))
            );
        }
        counter(
            &mut o,
            "bfd_dropped_total",
            "BFD packets dropped (no session on the link, malformed)",
        );
        let _ = writeln!(o, "idint_router_bfd_dropped_total {}", self.dropped.load(r));
        o
    }

    /// The `/health` fields: every session's state and link, every port's link, and the
    /// interfaces that are down.
    pub fn health(&self) -> serde_json::Value {
        let r = Ordering::Relaxed;
        let sessions: serde_json::Map<String, serde_json::Value> = self
            .sessions
            .iter()
            .map(|s| {
                let state = if s.disabled {
                    "disabled"
                } else {
                    State::from_bits(s.state.load(r)).name()
                };
                (
                    s.name.clone(),
                    serde_json::json!({ "bfd": state, "up": s.link_up.load(r) }),
                )
            })
            .collect();
        let ports: serde_json::Map<String, serde_json::Value> = self
            .ports
            .iter()
            .map(|(d, up)| (d.clone(), serde_json::json!({ "link_up": up.load(r) })))
            .collect();
        let down: Vec<u16> = self
            .sessions
            .iter()
            .filter(|s| !s.link_up.load(r))
            .flat_map(|s| s.interfaces.iter().copied())
            .collect();
        serde_json::json!({ "sessions": sessions, "ports": ports, "interfaces_down": down })
    }
}

/// A session with what it needs to send and where its interfaces are.
struct Entry {
    /// `None`: BFD disabled on this link.
    session: Option<Session>,
    framing: Framing,
    via: Via,
    /// The port its packets leave by (its link state counts).
    port: Option<usize>,
    interfaces: Vec<u16>,
    /// What was last written to the router.
    up: Option<bool>,
}

/// The control side of BFD and link state.
pub struct BfdControl {
    plan: BfdPlan,
    /// Same order as `plan.sessions`.
    entries: Vec<Entry>,
    router: Arc<Router>,
    pool: &'static Mempool,
    /// From every worker.
    rx: Vec<Consumer>,
    /// To worker 0.
    tx: Producer,
    monitors: Vec<PortMonitor>,
    port_up: Vec<bool>,
    next_link_poll: u64,
    stats: Arc<BfdStats>,
    burst: MbufBurst,
}

/// The ports' monitors, device names and which interfaces each carries.
pub struct PortLayout {
    /// Per port: device name, monitor, interfaces, internal.
    pub ports: Vec<(String, PortMonitor, Vec<u16>, bool)>,
}

impl BfdControl {
    /// The sessions of `plan` (discriminators and jitter from `seed`, first packets due at
    /// `now_ns`); links with BFD start down until their session is Up (as scionproto's).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        plan: &BfdPlan,
        router: Arc<Router>,
        pool: &'static Mempool,
        rx: Vec<Consumer>,
        tx: Producer,
        layout: PortLayout,
        seed: [u8; 32],
        now_ns: u64,
    ) -> Self {
        let local_ia = router.local_ia();
        let mut rng = u64::from_le_bytes(seed[..8].try_into().unwrap_or_default()) | 1;
        let mut next = move || {
            // splitmix64 over the OS seed: distinct discriminators and jitter seeds.
            rng = rng.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = rng;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        };
        let port_of = |ifid: Option<u16>| {
            layout
                .ports
                .iter()
                .position(|(_, _, ifs, internal)| match ifid {
                    Some(i) => ifs.contains(&i),
                    None => *internal,
                })
        };
        let mut entries = Vec::new();
        let mut sessions = Vec::new();
        for peer in &plan.sessions {
            let (framing, via, port, name) = match peer.link {
                BfdLink::External {
                    ifid,
                    local,
                    remote,
                    remote_ia,
                } => (
                    Framing {
                        local_ia,
                        local_host: local.ip(),
                        remote_ia,
                        remote_host: remote.ip(),
                        ifid,
                    },
                    Via::External(ifid),
                    port_of(Some(ifid)),
                    format!("if{ifid}"),
                ),
                BfdLink::Sibling { addr } => (
                    Framing {
                        local_ia,
                        local_host: plan.internal_addr.ip(),
                        remote_ia: local_ia,
                        remote_host: addr.ip(),
                        ifid: 0,
                    },
                    Via::Internal(Some(addr)),
                    port_of(None),
                    format!("sibling-{addr}"),
                ),
            };
            let disabled = peer.settings.disable;
            let session = (!disabled).then(|| {
                let disc = (next() as u32).max(1);
                Session::new(disc, peer.settings.params(), next(), now_ns)
            });
            sessions.push(SessionStats {
                name,
                disabled,
                interfaces: peer.interfaces.clone(),
                state: AtomicU8::new(State::Down as u8),
                link_up: AtomicBool::new(disabled),
                sent: AtomicU64::new(0),
                received: AtomicU64::new(0),
                state_changes: AtomicU64::new(0),
            });
            entries.push(Entry {
                session,
                framing,
                via,
                port,
                interfaces: peer.interfaces.clone(),
                up: None,
            });
        }
        let ports: Vec<(String, AtomicBool)> = layout
            .ports
            .iter()
            .map(|(d, m, _, _)| (d.clone(), AtomicBool::new(m.link().0)))
            .collect();
        let port_up = ports
            .iter()
            .map(|(_, u)| u.load(Ordering::Relaxed))
            .collect();
        let stats = Arc::new(BfdStats {
            sessions,
            ports,
            ..BfdStats::default()
        });
        let mut c = BfdControl {
            plan: plan.clone(),
            entries,
            router,
            pool,
            rx,
            tx,
            monitors: layout.ports.into_iter().map(|(_, m, _, _)| m).collect(),
            port_up,
            next_link_poll: now_ns + LINK_POLL_NS,
            stats: stats.clone(),
            burst: MbufBurst::new(),
        };
        c.apply_links();
        c
    }

    /// One round at `now_ns` (monotonic) and `unix_s`: takes the received packets, runs the
    /// timers, sends what is due, polls the ports' links when due and updates the router.
    pub fn step(&mut self, now_ns: u64, unix_s: u32) {
        self.receive(now_ns);
        self.send_due(now_ns, unix_s);
        if now_ns >= self.next_link_poll {
            self.next_link_poll = now_ns + LINK_POLL_NS;
            for (i, m) in self.monitors.iter().enumerate() {
                let up = m.link().0;
                self.port_up[i] = up;
                self.stats.ports[i].1.store(up, Ordering::Relaxed);
            }
        }
        self.apply_links();
    }

    /// Drains the workers' rings into the sessions.
    fn receive(&mut self, now_ns: u64) {
        for ring in self.rx.iter_mut() {
            loop {
                let n = ring.dequeue(&mut self.burst);
                if n == 0 {
                    break;
                }
                for m in self.burst.drain() {
                    let d = m.data();
                    let Some(via) = Via::read_tag(d) else {
                        self.stats.dropped.fetch_add(1, Ordering::Relaxed);
                        continue;
                    };
                    let Some(r) = router_core::bfd::parse_scion(&d[TAG_LEN..]) else {
                        self.stats.dropped.fetch_add(1, Ordering::Relaxed);
                        continue;
                    };
                    let entry = self
                        .plan
                        .session_for(via, &r)
                        .and_then(|i| self.entries.get_mut(i));
                    let (Some(e), Ok(p)) = (entry, r.packet) else {
                        self.stats.dropped.fetch_add(1, Ordering::Relaxed);
                        continue;
                    };
                    // BFD disabled on this link: dropped, as scionproto does.
                    let Some(s) = e.session.as_mut() else {
                        self.stats.dropped.fetch_add(1, Ordering::Relaxed);
                        continue;
                    };
                    let _ = s.receive(&p, now_ns);
                }
            }
        }
    }

    /// Runs every session's timers and sends its due packets to worker 0.
    fn send_due(&mut self, now_ns: u64, unix_s: u32) {
        let mac = self.router.hop_mac();
        let mut buf = [0u8; MAX_BFD_PACKET];
        let mut failed = 0u64;
        for (e, st) in self.entries.iter_mut().zip(&self.stats.sessions) {
            let Some(s) = e.session.as_mut() else {
                continue;
            };
            s.check_timeout(now_ns);
            while let Some(p) = s.poll_tx(now_ns) {
                let Some(n) = e.framing.write(&p, mac, unix_s, &mut buf) else {
                    failed += 1;
                    continue;
                };
                let Some(mut m) = self.pool.alloc() else {
                    failed += 1;
                    continue;
                };
                let ok = m.append(TAG_LEN + n).is_some_and(|b| {
                    b[TAG_LEN..].copy_from_slice(&buf[..n]);
                    e.via.write_tag(b)
                });
                if !ok || self.burst.push(m).is_err() {
                    failed += 1;
                }
            }
            let c = s.counters();
            let r = Ordering::Relaxed;
            st.state.store(s.state() as u8, r);
            st.sent.store(c.sent, r);
            st.received.store(c.received, r);
            st.state_changes.store(c.state_changes, r);
        }
        if !self.burst.is_empty() {
            self.tx.enqueue(&mut self.burst);
            failed += self.burst.len() as u64;
            self.burst.clear();
        }
        self.stats.tx_failed.fetch_add(failed, Ordering::Relaxed);
    }

    /// Writes each session's verdict (BFD Up or disabled, and its port's link up) to the
    /// router for its interfaces, when it changed.
    fn apply_links(&mut self) {
        for (e, st) in self.entries.iter_mut().zip(&self.stats.sessions) {
            let bfd_ok = e.session.as_ref().is_none_or(|s| s.state() == State::Up);
            let port_ok = e.port.and_then(|p| self.port_up.get(p)).is_none_or(|u| *u);
            let up = bfd_ok && port_ok;
            if e.up != Some(up) {
                e.up = Some(up);
                for &i in &e.interfaces {
                    self.router.set_link_up(i, up);
                }
                st.link_up.store(up, Ordering::Relaxed);
                eprintln!(
                    "idint-router: {} {} (bfd {}, port link {})",
                    st.name,
                    if up { "up" } else { "down" },
                    e.session.as_ref().map_or("disabled", |s| s.state().name()),
                    if port_ok { "up" } else { "down" },
                );
            }
        }
    }

    /// The published state and counters.
    pub fn stats(&self) -> Arc<BfdStats> {
        self.stats.clone()
    }

    /// When the next session timer fires (ns, monotonic).
    pub fn next_event_ns(&self) -> u64 {
        self.entries
            .iter()
            .filter_map(|e| e.session.as_ref().map(Session::next_event_ns))
            .min()
            .unwrap_or(u64::MAX)
            .min(self.next_link_poll)
    }
}
