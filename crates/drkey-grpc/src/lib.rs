//! DRKey over the SCION control service's gRPC API.
//!
//! * [`ControlServiceClient`]: async client of the intra-AS service (`DRKeyIntraLevel1`,
//!   `DRKeyASHost`, `DRKeyHostAS`, `DRKeyHostHost`) and of the inter-AS `DRKeyLevel1`.
//! * [`ControlServiceProvider`]: a blocking [`Level1Provider`] over the client, with its own
//!   runtime and a per-epoch cache, for routers and tools that are not async.
//! * [`ControlServiceServer`]: the same API served from a [`LocalProvider`] (the AS's master
//!   secret), for tests, labs and standalone deployments.
//!
//! The messages and field numbers are those of SCION's `proto.control_plane.v1` and
//! `proto.drkey.v1` packages (protocol 2 = ID-INT as in the ID-INT fork). As in SCION's control
//! service, the protocols named in the `Protocol` enum (generic 0, SCMP 1, ID-INT 2; see
//! [`is_predefined`]) use the protocol-specific level-2 derivation on their own level-1 key;
//! any other number is derived generically from the protocol-0 level-1 key with the number
//! inside the level-2 input.
//!
//! Authentication of the peer (TLS with the AS certificate in SCION) is the deployment's job:
//! the inter-AS server takes the requesting AS from the `scion-ia` request metadata instead of
//! a TLS identity and must only be exposed where that is acceptable (loopback, labs).

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use drkey::provider::{Level1Provider, LocalProvider, ProviderError};
use drkey::{Epoch, Key, Protocol};
use idint_wire::{HostAddr, IsdAsn};
use tonic::transport::{Channel, Endpoint};
use tonic::{Request, Response, Status};

/// Generated protobuf and gRPC code.
#[allow(missing_docs, clippy::all)]
pub mod pb {
    /// SCION's `proto.*` packages.
    pub mod proto {
        /// `proto.drkey.*`.
        pub mod drkey {
            /// `proto.drkey.v1`: protocol identifiers.
            pub mod v1 {
                tonic::include_proto!("proto.drkey.v1");
            }
        }
        /// `proto.control_plane.*`.
        pub mod control_plane {
            /// `proto.control_plane.v1`: the DRKey services.
            pub mod v1 {
                tonic::include_proto!("proto.control_plane.v1");
            }
        }
    }
}

use cp::dr_key_inter_service_client::DrKeyInterServiceClient;
use cp::dr_key_intra_service_client::DrKeyIntraServiceClient;
use pb::proto::control_plane::v1 as cp;

/// Metadata key carrying the requesting ISD-AS on the inter-AS service (stand-in for the TLS
/// identity SCION uses).
pub const REQUESTER_IA_METADATA: &str = "scion-ia";

/// Why a key could not be fetched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GrpcError {
    /// The address is not a valid URI.
    BadAddress(String),
    /// No connection to the control service (refused, unreachable, timed out).
    Unavailable(String),
    /// The control service answered with an error status.
    Status {
        /// gRPC status code.
        code: tonic::Code,
        /// Its message.
        message: String,
    },
    /// The answer is not a usable key (wrong length, missing or inverted epoch).
    Malformed(&'static str),
}

impl std::fmt::Display for GrpcError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GrpcError::BadAddress(a) => write!(f, "bad control service address: {a}"),
            GrpcError::Unavailable(m) => write!(f, "control service unavailable: {m}"),
            GrpcError::Status { code, message } => {
                write!(f, "control service error {code:?}: {message}")
            }
            GrpcError::Malformed(m) => write!(f, "malformed key response: {m}"),
        }
    }
}

impl std::error::Error for GrpcError {}

impl From<Status> for GrpcError {
    fn from(s: Status) -> Self {
        // Transport failures come as a terse message ("transport error") with the cause in
        // the source chain; keep the whole chain so the reason is not lost.
        let mut message = s.message().to_string();
        let mut source = std::error::Error::source(&s);
        while let Some(e) = source {
            let text = e.to_string();
            if !message.contains(&text) {
                message = if message.is_empty() {
                    text
                } else {
                    format!("{message}: {text}")
                };
            }
            source = e.source();
        }
        match s.code() {
            tonic::Code::Unavailable | tonic::Code::DeadlineExceeded | tonic::Code::Cancelled => {
                GrpcError::Unavailable(message)
            }
            code => GrpcError::Status { code, message },
        }
    }
}

/// The `proto.drkey.v1.Protocol` wire value of a protocol id (SCION puts the 16-bit number on
/// the wire unchanged, named or not).
pub fn protocol_to_pb(p: Protocol) -> i32 {
    i32::from(p.0)
}

/// The protocol id of a `proto.drkey.v1.Protocol` wire value, or `None` outside the 16-bit
/// range SCION allows (the enum reserves 65536 and up; negative values are invalid).
pub fn protocol_from_pb(v: i32) -> Option<Protocol> {
    u16::try_from(v).ok().map(Protocol)
}

/// Whether `p` is named in SCION's `Protocol` enum (generic 0, SCMP 1, ID-INT 2): such
/// protocols get protocol-specific level-2 keys and may be asked for across ASes; others are
/// derived generically (SCION's `IsPredefined`).
pub fn is_predefined(p: Protocol) -> bool {
    pb::proto::drkey::v1::Protocol::try_from(protocol_to_pb(p)).is_ok()
}

fn timestamp(t: u64) -> prost_types::Timestamp {
    prost_types::Timestamp {
        seconds: t.min(i64::MAX as u64) as i64,
        nanos: 0,
    }
}

fn epoch_of(
    begin: Option<prost_types::Timestamp>,
    end: Option<prost_types::Timestamp>,
) -> Result<Epoch, GrpcError> {
    let secs = |t: Option<prost_types::Timestamp>| {
        t.and_then(|t| u32::try_from(t.seconds).ok())
            .ok_or(GrpcError::Malformed("epoch time missing or out of range"))
    };
    let epoch = Epoch::new(secs(begin)?, secs(end)?)
        .ok_or(GrpcError::Malformed("epoch end before begin"))?;
    // The same bounds a local provider accepts: an absurd epoch (say the whole u32 range)
    // would otherwise be cached and served for any time.
    if !(drkey::epoch::MIN_DURATION..=drkey::epoch::MAX_DURATION)
        .contains(&(epoch.end - epoch.begin))
    {
        return Err(GrpcError::Malformed(
            "epoch length outside 360 s ..= 3 days",
        ));
    }
    Ok(epoch)
}

/// Checks that `url` is a plaintext `http://` URL with a host: anything else is refused
/// before a channel is built (TLS is not compiled into this build, and tonic would silently
/// talk plaintext to an `https://` URL).
fn check_url(url: &str) -> Result<(), GrpcError> {
    let bad = |why: &str| GrpcError::BadAddress(format!("{url}: {why}"));
    let uri: tonic::codegen::http::Uri = url.parse().map_err(|e| bad(&format!("{e}")))?;
    match uri.scheme_str() {
        Some(s) if s.eq_ignore_ascii_case("http") => {}
        Some(s) if s.eq_ignore_ascii_case("https") => {
            return Err(bad(
                "https is not supported: TLS is not compiled into this build (keys would \
                 travel in cleartext); use http:// on a trusted path",
            ));
        }
        Some(s) => return Err(bad(&format!("scheme {s:?} is not supported, use http://"))),
        None => return Err(bad("no scheme, use http://host:port")),
    }
    match uri.host() {
        Some(h) if !h.is_empty() => Ok(()),
        _ => Err(bad("no host")),
    }
}

fn key_of(b: &[u8]) -> Result<Key, GrpcError> {
    let k: [u8; 16] = b
        .try_into()
        .map_err(|_| GrpcError::Malformed("key is not 16 bytes"))?;
    Ok(Key::from_bytes(k))
}

/// Async client of a control service's DRKey API.
#[derive(Debug, Clone)]
pub struct ControlServiceClient {
    intra: DrKeyIntraServiceClient<Channel>,
    inter: DrKeyInterServiceClient<Channel>,
    timeout: Duration,
}

impl ControlServiceClient {
    /// A client for the control service at `url` (e.g. `http://127.0.0.1:30252`). Connects
    /// lazily; each request (connecting, headers and body) fails with
    /// [`GrpcError::Unavailable`] after `timeout`.
    ///
    /// Only `http://host[:port]` URLs are accepted: TLS is not compiled into this build, so
    /// `https://` (and any other scheme, or a URL without scheme or host) is refused with
    /// [`GrpcError::BadAddress`] instead of silently falling back to plaintext.
    ///
    /// Must be called inside a Tokio runtime (the channel's connection task is spawned on
    /// it); elsewhere it returns [`GrpcError::Unavailable`].
    pub fn new(url: &str, timeout: Duration) -> Result<Self, GrpcError> {
        check_url(url)?;
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(GrpcError::Unavailable(
                "ControlServiceClient::new called outside a Tokio runtime".into(),
            ));
        }
        let channel = Endpoint::from_shared(url.to_string())
            .map_err(|e| GrpcError::BadAddress(format!("{url}: {e}")))?
            .connect_timeout(timeout)
            .timeout(timeout)
            .connect_lazy();
        Ok(ControlServiceClient {
            intra: DrKeyIntraServiceClient::new(channel.clone()),
            inter: DrKeyInterServiceClient::new(channel),
            timeout,
        })
    }

    /// Runs one RPC to completion (response headers *and* body) within the timeout: tonic's
    /// own request timeout stops at the headers, so a server that sends them and then stalls
    /// would otherwise hang the call forever.
    async fn call<T>(
        &self,
        rpc: impl std::future::Future<Output = Result<Response<T>, Status>>,
    ) -> Result<T, GrpcError> {
        match tokio::time::timeout(self.timeout, rpc).await {
            Ok(r) => Ok(r?.into_inner()),
            Err(_) => Err(GrpcError::Unavailable(format!(
                "no complete answer within {:?}",
                self.timeout
            ))),
        }
    }

    /// Level-1 key K(src -> dst) valid at `time` (Unix seconds), from the local control
    /// service (`DRKeyIntraLevel1`).
    pub async fn level1(
        &self,
        protocol: Protocol,
        src: IsdAsn,
        dst: IsdAsn,
        time: u64,
    ) -> Result<(Epoch, Key), GrpcError> {
        let mut intra = self.intra.clone();
        let r = self
            .call(intra.dr_key_intra_level1(cp::DrKeyIntraLevel1Request {
                val_time: Some(timestamp(time)),
                protocol_id: protocol_to_pb(protocol),
                src_ia: src.to_u64(),
                dst_ia: dst.to_u64(),
            }))
            .await?;
        Ok((epoch_of(r.epoch_begin, r.epoch_end)?, key_of(&r.key)?))
    }

    /// Level-1 key K(remote -> requester) from a remote AS's control service
    /// (`DRKeyLevel1`), naming the requesting AS in the request metadata.
    pub async fn remote_level1(
        &self,
        protocol: Protocol,
        requester: IsdAsn,
        time: u64,
    ) -> Result<(Epoch, Key), GrpcError> {
        let mut req = Request::new(cp::DrKeyLevel1Request {
            val_time: Some(timestamp(time)),
            protocol_id: protocol_to_pb(protocol),
        });
        let ia = requester
            .to_string()
            .parse()
            .map_err(|_| GrpcError::Malformed("ISD-AS not usable as metadata"))?;
        req.metadata_mut().insert(REQUESTER_IA_METADATA, ia);
        let mut inter = self.inter.clone();
        let r = self.call(inter.dr_key_level1(req)).await?;
        Ok((epoch_of(r.epoch_begin, r.epoch_end)?, key_of(&r.key)?))
    }

    /// The local AS's secret value of `protocol` at `time` (`DRKeySecretValue`); control
    /// services give it only to hosts delegated for the protocol.
    pub async fn secret_value(
        &self,
        protocol: Protocol,
        time: u64,
    ) -> Result<(Epoch, Key), GrpcError> {
        let mut intra = self.intra.clone();
        let r = self
            .call(intra.dr_key_secret_value(cp::DrKeySecretValueRequest {
                val_time: Some(timestamp(time)),
                protocol_id: protocol_to_pb(protocol),
            }))
            .await?;
        Ok((epoch_of(r.epoch_begin, r.epoch_end)?, key_of(&r.key)?))
    }

    /// Level-2 AS->host key K(src -> dst:dst_host) (what a router of `src` uses for ID-INT
    /// entries verified by `dst_host`).
    pub async fn as_host(
        &self,
        protocol: Protocol,
        src: IsdAsn,
        dst: IsdAsn,
        dst_host: IpAddr,
        time: u64,
    ) -> Result<(Epoch, Key), GrpcError> {
        let mut intra = self.intra.clone();
        let r = self
            .call(intra.dr_key_as_host(cp::DrKeyAsHostRequest {
                val_time: Some(timestamp(time)),
                protocol_id: protocol_to_pb(protocol),
                src_ia: src.to_u64(),
                dst_ia: dst.to_u64(),
                dst_host: dst_host.to_string(),
            }))
            .await?;
        Ok((epoch_of(r.epoch_begin, r.epoch_end)?, key_of(&r.key)?))
    }

    /// Level-2 host->AS key K(src:src_host -> dst).
    pub async fn host_as(
        &self,
        protocol: Protocol,
        src: IsdAsn,
        src_host: IpAddr,
        dst: IsdAsn,
        time: u64,
    ) -> Result<(Epoch, Key), GrpcError> {
        let mut intra = self.intra.clone();
        let r = self
            .call(intra.dr_key_host_as(cp::DrKeyHostAsRequest {
                val_time: Some(timestamp(time)),
                protocol_id: protocol_to_pb(protocol),
                src_ia: src.to_u64(),
                dst_ia: dst.to_u64(),
                src_host: src_host.to_string(),
            }))
            .await?;
        Ok((epoch_of(r.epoch_begin, r.epoch_end)?, key_of(&r.key)?))
    }

    /// Level-3 host->host key K(src:src_host -> dst:dst_host).
    pub async fn host_host(
        &self,
        protocol: Protocol,
        (src, src_host): (IsdAsn, IpAddr),
        (dst, dst_host): (IsdAsn, IpAddr),
        time: u64,
    ) -> Result<(Epoch, Key), GrpcError> {
        let mut intra = self.intra.clone();
        let r = self
            .call(intra.dr_key_host_host(cp::DrKeyHostHostRequest {
                val_time: Some(timestamp(time)),
                protocol_id: protocol_to_pb(protocol),
                src_ia: src.to_u64(),
                dst_ia: dst.to_u64(),
                src_host: src_host.to_string(),
                dst_host: dst_host.to_string(),
            }))
            .await?;
        Ok((epoch_of(r.epoch_begin, r.epoch_end)?, key_of(&r.key)?))
    }
}

/// Cache key of fetched level-1 keys.
type Level1Id = (Protocol, IsdAsn, IsdAsn);

/// Where the blocking provider runs its requests.
enum Exec {
    /// A current-thread runtime of its own (`None` only while dropping).
    Owned(Option<tokio::runtime::Runtime>),
    /// A runtime owned elsewhere.
    Shared(tokio::runtime::Handle),
}

/// A blocking [`Level1Provider`] backed by the local control service: each key is fetched
/// once per epoch and then served from memory. Runs its requests on a runtime of its own or
/// on a shared one ([`ControlServiceProvider::with_handle`]).
///
/// Cache misses must be fetched from a thread outside any Tokio runtime context (a plain
/// `std::thread`). A thread that has entered a runtime — an async task, but also a
/// `tokio::task::spawn_blocking` thread, which Tokio does not let a library tell apart from
/// an async task without risking a panic — gets [`GrpcError::Unavailable`] (mapped to
/// [`ProviderError::Config`]) instead of a key; use [`ControlServiceClient`] there, or run the
/// provider on a dedicated thread. Cache hits are served from any thread.
///
/// Errors through [`Level1Provider`]: NOT_FOUND from the control service becomes
/// [`ProviderError::NotFound`]; everything else (unavailable, timed out, malformed answer,
/// other statuses) becomes [`ProviderError::Config`] whose message is the [`GrpcError`]'s,
/// e.g. `control service unavailable: ...` with the underlying cause.
pub struct ControlServiceProvider {
    client: ControlServiceClient,
    exec: Exec,
    cache: Mutex<HashMap<Level1Id, Vec<(Epoch, Key)>>>,
    /// One gate per key id: concurrent misses of the same key wait for one fetch.
    inflight: Mutex<HashMap<Level1Id, Arc<Mutex<()>>>>,
    fetches: AtomicU64,
}

impl ControlServiceProvider {
    /// Epochs kept per (protocol, src, dst): the previous, the current and the next one. The
    /// previous one matters for a while after each epoch change: verifiers retry entries
    /// sealed just before it (DRKey's grace period) while the next epoch is already fetched
    /// ahead; with two kept, each such retry evicted the key the next one needed.
    const KEPT: usize = 3;

    /// A provider for the control service at `url`.
    pub fn new(url: &str, timeout: Duration) -> Result<Self, GrpcError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| GrpcError::Unavailable(format!("runtime: {e}")))?;
        let client = {
            let _guard = runtime.enter();
            ControlServiceClient::new(url, timeout)
        };
        match client {
            Ok(client) => Ok(Self::with_exec(client, Exec::Owned(Some(runtime)))),
            Err(e) => {
                // Dropping a runtime inside another one panics; this may be called from one.
                runtime.shutdown_background();
                Err(e)
            }
        }
    }

    /// A provider that runs its requests on the runtime behind `handle`, which must be a
    /// multi-thread runtime (a current-thread runtime only makes progress inside its own
    /// `block_on`).
    pub fn with_handle(
        url: &str,
        timeout: Duration,
        handle: tokio::runtime::Handle,
    ) -> Result<Self, GrpcError> {
        let client = {
            let _guard = handle.enter();
            ControlServiceClient::new(url, timeout)?
        };
        Ok(Self::with_exec(client, Exec::Shared(handle)))
    }

    fn with_exec(client: ControlServiceClient, exec: Exec) -> Self {
        ControlServiceProvider {
            client,
            exec,
            cache: Mutex::new(HashMap::new()),
            inflight: Mutex::new(HashMap::new()),
            fetches: AtomicU64::new(0),
        }
    }

    /// The async client the provider uses.
    pub fn client(&self) -> &ControlServiceClient {
        &self.client
    }

    /// Requests sent to the control service so far (cache misses).
    pub fn fetches(&self) -> u64 {
        self.fetches.load(Ordering::Relaxed)
    }

    /// Like [`Level1Provider::level1`] with the transport error kept.
    pub fn fetch_level1(
        &self,
        protocol: Protocol,
        src: IsdAsn,
        dst: IsdAsn,
        time: u64,
    ) -> Result<(Epoch, Key), GrpcError> {
        let id = (protocol, src, dst);
        if let Some(hit) = self.lookup(&id, time) {
            return Ok(hit);
        }
        if tokio::runtime::Handle::try_current().is_ok() {
            // block_on would panic inside a runtime.
            return Err(GrpcError::Unavailable(
                "blocking provider called from an async runtime; use ControlServiceClient".into(),
            ));
        }
        // Single flight: whoever waited for another thread's fetch finds the key cached.
        let gate = InflightGate {
            map: &self.inflight,
            id,
            gate: self
                .inflight
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .entry(id)
                .or_default()
                .clone(),
        };
        // Dropped before `gate`, which then prunes the map entry if no one else holds it.
        let _turn = gate.gate.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(hit) = self.lookup(&id, time) {
            return Ok(hit);
        }
        self.fetches.fetch_add(1, Ordering::Relaxed);
        let fetch = self.client.level1(protocol, src, dst, time);
        let (epoch, key) = match &self.exec {
            Exec::Owned(Some(rt)) => rt.block_on(fetch),
            Exec::Owned(None) => Err(GrpcError::Unavailable("runtime shut down".into())),
            Exec::Shared(handle) => handle.block_on(fetch),
        }?;
        if !epoch.contains(time) {
            return Err(GrpcError::Malformed(
                "epoch does not contain the requested time",
            ));
        }
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        let slot = cache.entry(id).or_default();
        // The newest epochs stay (an old one asked for is served, then dropped first).
        slot.retain(|(e, _)| *e != epoch);
        slot.push((epoch, key.clone()));
        slot.sort_by_key(|(e, _)| e.begin);
        while slot.len() > Self::KEPT {
            slot.remove(0);
        }
        Ok((epoch, key))
    }

    fn lookup(&self, id: &Level1Id, time: u64) -> Option<(Epoch, Key)> {
        let cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        cache
            .get(id)?
            .iter()
            .find(|(e, _)| e.contains(time))
            .map(|(e, k)| (*e, k.clone()))
    }
}

/// A caller's hold on the single-flight gate of one key id; the last holder removes the
/// gate from the map, so the map only holds ids with a fetch under way.
struct InflightGate<'a> {
    map: &'a Mutex<HashMap<Level1Id, Arc<Mutex<()>>>>,
    id: Level1Id,
    gate: Arc<Mutex<()>>,
}

impl Drop for InflightGate<'_> {
    fn drop(&mut self) {
        let mut map = self.map.lock().unwrap_or_else(|p| p.into_inner());
        // Clones are only taken under the map lock, so the count cannot grow meanwhile:
        // 2 = the map's and ours.
        if map
            .get(&self.id)
            .is_some_and(|g| Arc::ptr_eq(g, &self.gate))
            && Arc::strong_count(&self.gate) == 2
        {
            map.remove(&self.id);
        }
    }
}

impl Drop for ControlServiceProvider {
    fn drop(&mut self) {
        // Dropping a runtime inside another one panics; shutting it down in the background
        // does not, so the provider may be dropped anywhere.
        if let Exec::Owned(rt) = &mut self.exec
            && let Some(rt) = rt.take()
        {
            rt.shutdown_background();
        }
    }
}

impl Level1Provider for ControlServiceProvider {
    fn level1(
        &self,
        protocol: Protocol,
        src: IsdAsn,
        dst: IsdAsn,
        time: u64,
    ) -> Result<(Epoch, Key), ProviderError> {
        self.fetch_level1(protocol, src, dst, time)
            .map_err(|e| match e {
                GrpcError::Status {
                    code: tonic::Code::NotFound,
                    ..
                } => ProviderError::NotFound {
                    src,
                    dst,
                    protocol,
                    time,
                },
                other => ProviderError::Config(other.to_string()),
            })
    }
}

/// Number of RPCs a [`ControlServiceServer`] has received; a clone stays readable after the
/// server has been moved into [`ControlServiceServer::serve`] or [`ControlServiceServer::spawn`].
#[derive(Debug, Clone, Default)]
pub struct RequestCounter(Arc<AtomicU64>);

impl RequestCounter {
    /// RPCs received so far (answered or refused).
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }

    fn bump(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

/// Serves the DRKey API of one AS from its master secret.
pub struct ControlServiceServer {
    local_ia: IsdAsn,
    keys: LocalProvider,
    requests: RequestCounter,
}

impl ControlServiceServer {
    /// A server for AS `local_ia` deriving from `keys`.
    pub fn new(local_ia: IsdAsn, keys: LocalProvider) -> Self {
        ControlServiceServer {
            local_ia,
            keys,
            requests: RequestCounter::default(),
        }
    }

    /// RPCs received so far (answered or refused).
    pub fn requests(&self) -> u64 {
        self.requests.get()
    }

    /// A handle on the request count that outlives moving the server into a task.
    pub fn request_counter(&self) -> RequestCounter {
        self.requests.clone()
    }

    fn now_secs() -> u64 {
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0)
    }

    fn protocol(id: i32) -> Result<Protocol, Status> {
        protocol_from_pb(id)
            .ok_or_else(|| Status::invalid_argument(format!("protocol {id} is not 16-bit")))
    }

    fn time(t: Option<prost_types::Timestamp>) -> Result<u64, Status> {
        match t {
            Some(t) => u64::try_from(t.seconds)
                .map_err(|_| Status::invalid_argument("val_time before 1970")),
            None => Ok(Self::now_secs()),
        }
    }

    fn host(s: &str) -> Result<HostAddr, Status> {
        s.parse::<IpAddr>()
            .map(HostAddr::from)
            .map_err(|_| Status::invalid_argument(format!("host {s:?} is not an IP address")))
    }

    /// K(local -> dst) for `protocol` at `time`; `Err` NOT_FOUND for another source AS.
    fn level1_from_local(
        &self,
        protocol: Protocol,
        src: IsdAsn,
        dst: IsdAsn,
        time: u64,
    ) -> Result<(Epoch, Key), Status> {
        if src != self.local_ia {
            return Err(Status::not_found(format!(
                "this control service serves keys of {} only, not {src}",
                self.local_ia
            )));
        }
        self.keys
            .level1(protocol, src, dst, time)
            .map_err(|e| Status::not_found(e.to_string()))
    }

    /// A level-2 key (AS->host or host->AS) with SCION's choice of derivation scheme.
    fn level2(
        &self,
        protocol: Protocol,
        (src, dst): (IsdAsn, IsdAsn),
        host: &HostAddr,
        time: u64,
        as_host: bool,
    ) -> Result<(Epoch, Key), Status> {
        let bad = |e: drkey::DeriveError| Status::invalid_argument(e.to_string());
        if is_predefined(protocol) {
            let (epoch, l1) = self.level1_from_local(protocol, src, dst, time)?;
            let k = if as_host {
                drkey::as_host(&l1.cipher(), host)
            } else {
                drkey::host_as(&l1.cipher(), host)
            };
            Ok((epoch, k.map_err(bad)?))
        } else {
            let (epoch, l1) = self.level1_from_local(Protocol::GENERIC, src, dst, time)?;
            let k = if as_host {
                drkey::generic_as_host(&l1.cipher(), protocol, host)
            } else {
                drkey::generic_host_as(&l1.cipher(), protocol, host)
            };
            Ok((epoch, k.map_err(bad)?))
        }
    }

    /// Serves both services on `listener` until `shutdown` completes.
    pub async fn serve(
        self,
        listener: tokio::net::TcpListener,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> Result<(), tonic::transport::Error> {
        let this = Arc::new(self);
        let incoming = tonic::transport::server::TcpIncoming::from(listener);
        tonic::transport::Server::builder()
            .add_service(
                cp::dr_key_intra_service_server::DrKeyIntraServiceServer::from_arc(this.clone()),
            )
            .add_service(cp::dr_key_inter_service_server::DrKeyInterServiceServer::from_arc(this))
            .serve_with_incoming_shutdown(incoming, shutdown)
            .await
    }

    /// Binds `addr` (port 0 for any) and serves in a task of the current runtime until
    /// `shutdown` completes; returns the bound address.
    pub async fn spawn(
        self,
        addr: SocketAddr,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<SocketAddr> {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        let bound = listener.local_addr()?;
        tokio::spawn(async move {
            let _ = self.serve(listener, shutdown).await;
        });
        Ok(bound)
    }
}

macro_rules! key_response {
    ($ty:ident, $epoch:expr, $key:expr) => {
        cp::$ty {
            epoch_begin: Some(timestamp(u64::from($epoch.begin))),
            epoch_end: Some(timestamp(u64::from($epoch.end))),
            key: $key.as_bytes().to_vec(),
        }
    };
}

#[tonic::async_trait]
impl cp::dr_key_intra_service_server::DrKeyIntraService for ControlServiceServer {
    async fn dr_key_intra_level1(
        &self,
        req: Request<cp::DrKeyIntraLevel1Request>,
    ) -> Result<Response<cp::DrKeyIntraLevel1Response>, Status> {
        self.requests.bump();
        let r = req.into_inner();
        let (epoch, key) = self.level1_from_local(
            Self::protocol(r.protocol_id)?,
            IsdAsn::from_u64(r.src_ia),
            IsdAsn::from_u64(r.dst_ia),
            Self::time(r.val_time)?,
        )?;
        Ok(Response::new(key_response!(
            DrKeyIntraLevel1Response,
            epoch,
            key
        )))
    }

    async fn dr_key_as_host(
        &self,
        req: Request<cp::DrKeyAsHostRequest>,
    ) -> Result<Response<cp::DrKeyAsHostResponse>, Status> {
        self.requests.bump();
        let r = req.into_inner();
        let (epoch, key) = self.level2(
            Self::protocol(r.protocol_id)?,
            (IsdAsn::from_u64(r.src_ia), IsdAsn::from_u64(r.dst_ia)),
            &Self::host(&r.dst_host)?,
            Self::time(r.val_time)?,
            true,
        )?;
        Ok(Response::new(key_response!(
            DrKeyAsHostResponse,
            epoch,
            key
        )))
    }

    async fn dr_key_host_as(
        &self,
        req: Request<cp::DrKeyHostAsRequest>,
    ) -> Result<Response<cp::DrKeyHostAsResponse>, Status> {
        self.requests.bump();
        let r = req.into_inner();
        let (epoch, key) = self.level2(
            Self::protocol(r.protocol_id)?,
            (IsdAsn::from_u64(r.src_ia), IsdAsn::from_u64(r.dst_ia)),
            &Self::host(&r.src_host)?,
            Self::time(r.val_time)?,
            false,
        )?;
        Ok(Response::new(key_response!(
            DrKeyHostAsResponse,
            epoch,
            key
        )))
    }

    async fn dr_key_host_host(
        &self,
        req: Request<cp::DrKeyHostHostRequest>,
    ) -> Result<Response<cp::DrKeyHostHostResponse>, Status> {
        self.requests.bump();
        let r = req.into_inner();
        let (epoch, host_as) = self.level2(
            Self::protocol(r.protocol_id)?,
            (IsdAsn::from_u64(r.src_ia), IsdAsn::from_u64(r.dst_ia)),
            &Self::host(&r.src_host)?,
            Self::time(r.val_time)?,
            false,
        )?;
        let key = drkey::host_host(&host_as.cipher(), &Self::host(&r.dst_host)?)
            .map_err(|e| Status::invalid_argument(e.to_string()))?;
        Ok(Response::new(key_response!(
            DrKeyHostHostResponse,
            epoch,
            key
        )))
    }

    async fn dr_key_secret_value(
        &self,
        _req: Request<cp::DrKeySecretValueRequest>,
    ) -> Result<Response<cp::DrKeySecretValueResponse>, Status> {
        self.requests.bump();
        // SCION hands secret values only to delegated infrastructure, authenticated by
        // TLS; without that identity this server refuses.
        Err(Status::permission_denied(
            "secret values are only given to authenticated delegates",
        ))
    }
}

#[tonic::async_trait]
impl cp::dr_key_inter_service_server::DrKeyInterService for ControlServiceServer {
    async fn dr_key_level1(
        &self,
        req: Request<cp::DrKeyLevel1Request>,
    ) -> Result<Response<cp::DrKeyLevel1Response>, Status> {
        self.requests.bump();
        let requester: IsdAsn = req
            .metadata()
            .get(REQUESTER_IA_METADATA)
            .and_then(|v| v.to_str().ok())
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| Status::unauthenticated("requesting ISD-AS missing"))?;
        let r = req.into_inner();
        let protocol = Self::protocol(r.protocol_id)?;
        // As in SCION, only protocols named in the enum are handed to other ASes.
        if !is_predefined(protocol) {
            return Err(Status::invalid_argument(format!(
                "protocol {} is not predefined; other ASes derive it from the generic key",
                protocol.0
            )));
        }
        let (epoch, key) =
            self.level1_from_local(protocol, self.local_ia, requester, Self::time(r.val_time)?)?;
        Ok(Response::new(key_response!(
            DrKeyLevel1Response,
            epoch,
            key
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protocol_ids_convert_both_ways() {
        use pb::proto::drkey::v1::Protocol as Pb;
        for (ours, theirs) in [
            (Protocol::GENERIC, Pb::GenericUnspecified),
            (Protocol::SCMP, Pb::Scmp),
            (Protocol::IDINT, Pb::Idint),
        ] {
            assert_eq!(protocol_to_pb(ours), theirs as i32);
            assert_eq!(protocol_from_pb(theirs as i32), Some(ours));
            assert!(is_predefined(ours));
        }
        assert_eq!(
            Pb::GenericUnspecified.as_str_name(),
            "PROTOCOL_GENERIC_UNSPECIFIED"
        );
        assert_eq!(Pb::Scmp.as_str_name(), "PROTOCOL_SCMP");
        assert_eq!(Pb::Idint.as_str_name(), "PROTOCOL_IDINT");
        // Niche protocols travel as their number and are derived generically.
        assert_eq!(protocol_from_pb(65_535), Some(Protocol(65_535)));
        assert_eq!(protocol_to_pb(Protocol(65_535)), 65_535);
        assert!(!is_predefined(Protocol(3)));
        assert_eq!(protocol_from_pb(65_536), None);
        assert_eq!(protocol_from_pb(-1), None);
    }

    #[test]
    fn responses_are_checked() {
        let t = |s| Some(timestamp(s));
        assert_eq!(epoch_of(t(10), t(3610)), Ok(Epoch::new(10, 3610).unwrap()));
        assert!(epoch_of(t(20), t(20)).is_err());
        assert!(epoch_of(None, t(20)).is_err());
        assert!(epoch_of(t(10), t(u64::from(u32::MAX) + 1)).is_err());
        let neg = Some(prost_types::Timestamp {
            seconds: -1,
            nanos: 0,
        });
        assert!(epoch_of(neg, t(20)).is_err());
        assert!(key_of(&[0; 16]).is_ok());
        assert_eq!(
            key_of(&[0; 17]).unwrap_err(),
            GrpcError::Malformed("key is not 16 bytes")
        );
        assert!(key_of(&[]).is_err());
    }

    #[test]
    fn epochs_outside_the_drkey_bounds_are_refused() {
        let t = |s| Some(timestamp(s));
        let bad = Err(GrpcError::Malformed(
            "epoch length outside 360 s ..= 3 days",
        ));
        assert_eq!(epoch_of(t(0), t(u64::from(u32::MAX))), bad);
        assert_eq!(epoch_of(t(1_800_000_000), t(1_800_000_001)), bad);
        assert_eq!(epoch_of(t(1000), t(1359)), bad);
        assert_eq!(epoch_of(t(0), t(3 * 86_400 + 1)), bad);
        assert!(epoch_of(t(1000), t(1360)).is_ok());
        assert!(epoch_of(t(0), t(3 * 86_400)).is_ok());
    }

    #[test]
    fn only_plain_http_urls_with_a_host_are_accepted() {
        let refused = |url: &str| match check_url(url) {
            Err(GrpcError::BadAddress(m)) => m,
            other => panic!("{url}: {other:?}"),
        };
        assert!(refused("https://127.0.0.1:1").contains("TLS is not compiled"));
        assert!(refused("HTTPS://127.0.0.1:1").contains("TLS is not compiled"));
        assert!(refused("ftp://127.0.0.1:1").contains("scheme"));
        assert!(check_url("unix:/tmp/x").is_err());
        assert!(refused("localhost:1").contains("no scheme"));
        assert!(refused("/path").contains("no scheme"));
        assert!(check_url("").is_err());
        assert!(check_url("http://[::1").is_err());
        assert_eq!(check_url("http://127.0.0.1:30252"), Ok(()));
        assert_eq!(check_url("http://[::1]:30252"), Ok(()));
        assert_eq!(check_url("http://cs.example"), Ok(()));
    }

    #[test]
    fn finished_fetches_leave_no_inflight_gate() {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let Ok(rt) = tokio::runtime::Runtime::new() else {
                return;
            };
            rt.block_on(async move {
                let ia: IsdAsn = "1-ff00:0:110".parse().unwrap();
                let keys = LocalProvider::new(ia, b"0123456789abcdef", 86_400).unwrap();
                let addr = ControlServiceServer::new(ia, keys)
                    .spawn("127.0.0.1:0".parse().unwrap(), std::future::pending())
                    .await
                    .unwrap();
                tx.send(addr).unwrap();
                std::future::pending::<()>().await;
            });
        });
        let addr = rx.recv().unwrap();
        let p =
            ControlServiceProvider::new(&format!("http://{addr}"), Duration::from_secs(5)).unwrap();
        let src: IsdAsn = "1-ff00:0:110".parse().unwrap();
        let t = 1_704_067_800;
        for n in 1..=4u64 {
            let dst = IsdAsn::from_u64(src.to_u64() + n);
            p.fetch_level1(Protocol::IDINT, src, dst, t).unwrap();
            // A refused key (another AS's) completes its fetch too.
            p.fetch_level1(Protocol::IDINT, dst, src, t).unwrap_err();
        }
        assert_eq!(p.fetches(), 8);
        assert!(p.inflight.lock().unwrap().is_empty());
        // Concurrent misses of one key still share one fetch, and leave no gate behind.
        let dst = IsdAsn::from_u64(src.to_u64() + 9);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| p.fetch_level1(Protocol::IDINT, src, dst, t).unwrap());
            }
        });
        assert_eq!(p.fetches(), 9);
        assert!(p.inflight.lock().unwrap().is_empty());
    }
}
