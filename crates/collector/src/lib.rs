//! The ID-INT telemetry collector service: turns verified telemetry reports into knowledge
//! hosts and operators can query.
//!
//! The pure pipeline lives in `collector-core` (re-exported here for compatibility):
//! [`pipeline`], [`topology`], [`metrics`], [`keys`], [`replay`], [`counters`], [`wire`].
//! This crate adds the service around it:
//!
//! * [`service`]: the tokio service (UDP and HTTP ingest with bounded queues, worker threads,
//!   shutdown).
//! * [`api`]: the REST API.
//! * [`storage`]: PostgreSQL and time-series storage (`collector-store`).
//! * [`config`]: the TOML configuration.
//! * [`state`]: what the API, the storage and the service share (queues, stores, API state).
//!
//! Module layering: `state` and `config` at the bottom, `api` and `storage` on them, `service`
//! on top.

pub mod api;
pub mod config;
pub use collector_core::{counters, json, keys, metrics, pipeline, replay, topology, wire};
pub mod service;
pub mod state;
pub mod storage;
