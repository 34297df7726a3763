//! The gRPC client and provider against the in-process control service on loopback.

use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use drkey::provider::{Level1Provider, LocalProvider};
use drkey::{Protocol, as_host, generic_as_host, host_as, host_host};
use drkey_grpc::pb::proto::control_plane::v1 as cp;
use drkey_grpc::{
    ControlServiceClient, ControlServiceProvider, ControlServiceServer, GrpcError, RequestCounter,
};
use idint_wire::{HostAddr, IsdAsn};
use tonic::{Request, Response, Status};

const SECRET: &[u8] = b"0123456789abcdef";
const EPOCH: u32 = 86_400;
const T: u64 = 1_704_067_800;

fn ia(s: &str) -> IsdAsn {
    s.parse().unwrap()
}

fn local() -> LocalProvider {
    LocalProvider::new(ia("1-ff00:0:110"), SECRET, EPOCH).unwrap()
}

/// Starts the server on a runtime thread of its own; returns its URL, a stop switch and its
/// request counter.
fn start_server() -> (String, std::sync::mpsc::Sender<()>, RequestCounter) {
    let (addr_tx, addr_rx) = std::sync::mpsc::channel();
    let (stop_tx, stop_rx) = std::sync::mpsc::channel::<()>();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Runtime::new().unwrap();
        rt.block_on(async move {
            let (tx, rx) = tokio::sync::oneshot::channel::<()>();
            let server = ControlServiceServer::new(ia("1-ff00:0:110"), local());
            let counter = server.request_counter();
            let addr = server
                .spawn("127.0.0.1:0".parse().unwrap(), async {
                    let _ = rx.await;
                })
                .await
                .unwrap();
            addr_tx.send((addr, counter)).unwrap();
            tokio::task::spawn_blocking(move || {
                let _ = stop_rx.recv();
                let _ = tx.send(());
            })
            .await
            .unwrap();
        });
    });
    let (addr, counter): (SocketAddr, RequestCounter) = addr_rx.recv().unwrap();
    (format!("http://{addr}"), stop_tx, counter)
}

#[tokio::test(flavor = "multi_thread")]
async fn client_keys_equal_local_derivations() {
    let server = ControlServiceServer::new(ia("1-ff00:0:110"), local());
    let addr = server
        .spawn("127.0.0.1:0".parse().unwrap(), std::future::pending())
        .await
        .unwrap();
    let client =
        ControlServiceClient::new(&format!("http://{addr}"), Duration::from_secs(5)).unwrap();
    let (src, dst) = (ia("1-ff00:0:110"), ia("1-ff00:0:112"));
    let host: IpAddr = "10.0.0.10".parse().unwrap();
    let peer: IpAddr = "fd00::7".parse().unwrap();
    let (e_direct, l1_direct) = local().level1(Protocol::IDINT, src, dst, T).unwrap();

    let (e, l1) = client.level1(Protocol::IDINT, src, dst, T).await.unwrap();
    assert_eq!((e, l1.as_bytes()), (e_direct, l1_direct.as_bytes()));
    assert!(e.contains(T) && e.end - e.begin == EPOCH);

    let (_, k) = client
        .as_host(Protocol::IDINT, src, dst, host, T)
        .await
        .unwrap();
    let want = as_host(&l1_direct.cipher(), &HostAddr::from(host)).unwrap();
    assert_eq!(k.as_bytes(), want.as_bytes());

    let (_, k) = client
        .host_as(Protocol::IDINT, src, host, dst, T)
        .await
        .unwrap();
    let ha = host_as(&l1_direct.cipher(), &HostAddr::from(host)).unwrap();
    assert_eq!(k.as_bytes(), ha.as_bytes());

    let (_, k) = client
        .host_host(Protocol::IDINT, (src, host), (dst, peer), T)
        .await
        .unwrap();
    let hh = host_host(&ha.cipher(), &HostAddr::from(peer)).unwrap();
    assert_eq!(k.as_bytes(), hh.as_bytes());

    // A protocol SCION does not predefine is derived generically from the protocol-0 key.
    let (_, generic_l1) = local().level1(Protocol::GENERIC, src, dst, T).unwrap();
    let (_, k) = client
        .as_host(Protocol(7), src, dst, host, T)
        .await
        .unwrap();
    let want = generic_as_host(&generic_l1.cipher(), Protocol(7), &HostAddr::from(host)).unwrap();
    assert_eq!(k.as_bytes(), want.as_bytes());
    assert_ne!(
        k.as_bytes(),
        as_host(&l1_direct.cipher(), &HostAddr::from(host))
            .unwrap()
            .as_bytes()
    );

    // The blocking provider refuses (instead of panicking) inside a runtime.
    let b = ControlServiceProvider::new(&format!("http://{addr}"), Duration::from_secs(1)).unwrap();
    let e = b.fetch_level1(Protocol::IDINT, src, dst, T).unwrap_err();
    assert!(matches!(e, GrpcError::Unavailable(_)), "{e}");
    assert_eq!(b.fetches(), 0);
    // Dropping it here, inside a runtime, must not panic either.
    drop(b);

    // The inter-AS service gives K(local -> requester).
    let (_, k) = client.remote_level1(Protocol::IDINT, dst, T).await.unwrap();
    assert_eq!(k.as_bytes(), l1_direct.as_bytes());

    // Keys of another AS are not this service's to give.
    let err = client
        .level1(Protocol::IDINT, ia("1-ff00:0:111"), dst, T)
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            GrpcError::Status {
                code: tonic::Code::NotFound,
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn blocking_provider_fetches_once_per_epoch() {
    let (url, stop, served) = start_server();
    let p = ControlServiceProvider::new(&url, Duration::from_secs(5)).unwrap();
    let (src, dst) = (ia("1-ff00:0:110"), ia("1-ff00:0:113"));
    let (e1, k1) = p.level1(Protocol::IDINT, src, dst, T).unwrap();
    assert_eq!(served.get(), 1);
    let (e2, k2) = p.level1(Protocol::IDINT, src, dst, T + 60).unwrap();
    assert_eq!(
        p.fetches(),
        1,
        "second request in the same epoch must be cached"
    );
    assert_eq!(served.get(), 1, "a cache hit must not reach the server");
    assert_eq!((e1, k1.as_bytes()), (e2, k2.as_bytes()));
    // The epoch boundary: the last second is still this epoch, the end is the next one.
    let last = u64::from(e1.end) - 1;
    assert_eq!(p.level1(Protocol::IDINT, src, dst, last).unwrap().0, e1);
    assert_eq!(p.fetches(), 1);
    assert_eq!(served.get(), 1);
    let (e3, k3) = p
        .level1(Protocol::IDINT, src, dst, u64::from(e1.end))
        .unwrap();
    assert_eq!(e3.begin, e1.end);
    assert_ne!(k3.as_bytes(), k1.as_bytes());
    assert_eq!(p.fetches(), 2);
    assert_eq!(served.get(), 2);
    // Both epochs stay cached: going back to the first costs no round trip.
    assert_eq!(p.level1(Protocol::IDINT, src, dst, T).unwrap().0, e1);
    assert_eq!(served.get(), 2);
    // The epoch after that fetched ahead while the first is still asked for (a verifier's
    // grace-period retries of entries sealed before the change): previous, current and
    // next all stay cached, every request after the first of an epoch is a hit.
    let after = u64::from(e3.end);
    assert_eq!(
        p.level1(Protocol::IDINT, src, dst, after).unwrap().0.begin,
        e3.end
    );
    assert_eq!(served.get(), 3);
    for _ in 0..3 {
        assert_eq!(p.level1(Protocol::IDINT, src, dst, T).unwrap().0, e1);
        assert_eq!(
            p.level1(Protocol::IDINT, src, dst, u64::from(e1.end))
                .unwrap()
                .0,
            e3
        );
        assert_eq!(
            p.level1(Protocol::IDINT, src, dst, after).unwrap().0.begin,
            e3.end
        );
    }
    assert_eq!(served.get(), 3, "three epochs, three fetches");
    let direct = local()
        .level1(Protocol::IDINT, src, dst, u64::from(e1.end))
        .unwrap();
    assert_eq!((direct.0, direct.1.as_bytes()), (e3, k3.as_bytes()));
    // Another protocol is another key.
    let (_, ks) = p.level1(Protocol::SCMP, src, dst, T).unwrap();
    assert_ne!(ks.as_bytes(), k1.as_bytes());
    // NotFound maps to the provider's NotFound.
    let e = p.level1(Protocol::IDINT, dst, src, T).unwrap_err();
    assert!(
        matches!(e, drkey::provider::ProviderError::NotFound { .. }),
        "{e}"
    );
    stop.send(()).unwrap();
}

#[test]
fn server_down_is_an_error_within_the_timeout() {
    // A port nothing listens on, held for the whole test (bound, never listening: a
    // connection attempt is refused, and no other process can take the port meanwhile).
    let held = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    held.bind(&std::net::SocketAddr::from(([127, 0, 0, 1], 0)).into())
        .unwrap();
    let port = held.local_addr().unwrap().as_socket().unwrap().port();
    let p =
        ControlServiceProvider::new(&format!("http://127.0.0.1:{port}"), Duration::from_secs(2))
            .unwrap();
    let t0 = Instant::now();
    let e = p
        .fetch_level1(Protocol::IDINT, ia("1-ff00:0:110"), ia("1-ff00:0:111"), T)
        .unwrap_err();
    assert!(matches!(e, GrpcError::Unavailable(_)), "{e}");
    assert!(t0.elapsed() < Duration::from_secs(4));
    assert!(matches!(
        ControlServiceClient::new("not a uri", Duration::from_secs(1)),
        Err(GrpcError::BadAddress(_))
    ));
}

/// A control service that answers with a broken key.
struct Broken;

#[tonic::async_trait]
impl cp::dr_key_intra_service_server::DrKeyIntraService for Broken {
    async fn dr_key_intra_level1(
        &self,
        _: Request<cp::DrKeyIntraLevel1Request>,
    ) -> Result<Response<cp::DrKeyIntraLevel1Response>, Status> {
        Ok(Response::new(cp::DrKeyIntraLevel1Response {
            epoch_begin: Some(prost_types::Timestamp {
                seconds: 10,
                nanos: 0,
            }),
            epoch_end: Some(prost_types::Timestamp {
                seconds: 3610,
                nanos: 0,
            }),
            key: vec![0; 15],
        }))
    }
    async fn dr_key_as_host(
        &self,
        _: Request<cp::DrKeyAsHostRequest>,
    ) -> Result<Response<cp::DrKeyAsHostResponse>, Status> {
        Ok(Response::new(cp::DrKeyAsHostResponse {
            epoch_begin: Some(prost_types::Timestamp {
                seconds: 20,
                nanos: 0,
            }),
            epoch_end: Some(prost_types::Timestamp {
                seconds: 10,
                nanos: 0,
            }),
            key: vec![0; 16],
        }))
    }
    async fn dr_key_host_as(
        &self,
        _: Request<cp::DrKeyHostAsRequest>,
    ) -> Result<Response<cp::DrKeyHostAsResponse>, Status> {
        Err(Status::unimplemented("no"))
    }
    async fn dr_key_host_host(
        &self,
        _: Request<cp::DrKeyHostHostRequest>,
    ) -> Result<Response<cp::DrKeyHostHostResponse>, Status> {
        Err(Status::unimplemented("no"))
    }
    async fn dr_key_secret_value(
        &self,
        _: Request<cp::DrKeySecretValueRequest>,
    ) -> Result<Response<cp::DrKeySecretValueResponse>, Status> {
        Err(Status::unimplemented("no"))
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn malformed_answers_are_typed_errors() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(cp::dr_key_intra_service_server::DrKeyIntraServiceServer::new(Broken))
            .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener)),
    );
    let c = ControlServiceClient::new(&format!("http://{addr}"), Duration::from_secs(5)).unwrap();
    let (a, b) = (ia("1-ff00:0:110"), ia("1-ff00:0:111"));
    let e = c.level1(Protocol::IDINT, a, b, 15).await.unwrap_err();
    assert_eq!(e, GrpcError::Malformed("key is not 16 bytes"));
    let e = c
        .as_host(Protocol::IDINT, a, b, "10.0.0.1".parse().unwrap(), 15)
        .await
        .unwrap_err();
    assert_eq!(e, GrpcError::Malformed("epoch end before begin"));
    let e = c
        .host_as(Protocol::IDINT, a, "10.0.0.1".parse().unwrap(), b, 15)
        .await
        .unwrap_err();
    assert!(
        matches!(
            e,
            GrpcError::Status {
                code: tonic::Code::Unimplemented,
                ..
            }
        ),
        "{e}"
    );
}
