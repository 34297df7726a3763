//! A sound, safe layer over `dpdk-sys`: EAL (once per process), mempools that live for the
//! process, owning mbufs, fixed-size bursts, ports with probed capabilities and per-queue
//! handles, single-producer/single-consumer mbuf rings, lcore launch that catches panics,
//! the TSC, and stop signals.
//!
//! Soundness rests on these invariants, each documented at its type:
//!
//! * [`Mempool`]s are never freed ([`Mempool::new`] returns `&'static Mempool`), so no
//!   [`Mbuf`] can outlive its pool.
//! * [`Eal::cleanup`] is `unsafe`: it unmaps DPDK's memory, which no safe API can prove
//!   unused while `&'static` pools exist. Dropping an [`Eal`] does nothing.
//! * The [`Eal`] and every [`LcoreHandle`] stay on the main lcore (neither is `Send`): only
//!   that thread may launch and wait for worker lcores.
//! * Each rx/tx queue has exactly one handle ([`RxQueue`], [`TxQueue`]), `Send` to move to
//!   its lcore once, neither `Clone` nor `Sync`; a port closes only when the port, its queues
//!   and its [`PortMonitor`]s are gone.
//! * Each SP/SC ring has exactly one [`Producer`] and one [`Consumer`], each `Send`, neither
//!   `Clone` nor `Sync`, with `&mut self` enqueue/dequeue.
//!
//! Per-packet operations (rx/tx bursts, mbuf data access, draining with prefetch, ring
//! hand-over, mbuf free) add no checks beyond what DPDK needs and are `#[inline]`, so they
//! inline across the crate boundary.
//!
//! Besides `dpdk-sys`, this is the only crate of the workspace with `unsafe` code (every block
//! carries a `// SAFETY:` comment); users need `unsafe` only for [`Eal::cleanup`].
#![allow(unsafe_code)]

mod burst;
mod cpu;
mod eal;
mod error;
mod lcore;
mod mbuf;
mod mempool;
mod port;
mod queue;
mod ring;
mod stop;

pub use burst::{Drain, MAX_BURST, MbufBurst};
pub use cpu::rdtsc;
pub use eal::Eal;
pub use error::DpdkError;
pub use lcore::{LcoreError, LcoreHandle, MAX_LCORE, launch, lcore_id};
pub use mbuf::{Mbuf, RoomMbuf};
pub use mempool::{MBUF_BUF_SIZE, Mempool};
pub use port::{
    Port, PortCaps, PortMonitor, PortSetup, PortStats, RSS_HASH_IP_UDP, TX_OFFLOAD_IPV4_CKSUM,
    TX_OFFLOAD_UDP_CKSUM, probe_port,
};
pub use queue::{RxQueue, TxQueue};
pub use ring::{Consumer, Producer, mbuf_ring};
pub use stop::{install_stop_signals, request_stop, stop_requested};
