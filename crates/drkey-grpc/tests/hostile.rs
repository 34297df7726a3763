//! The client and provider against control services that misbehave: stalling after the
//! response headers, answering with absurd epochs; and URLs the client must refuse.

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::time::Duration;

use drkey::Protocol;
use drkey::provider::{Level1Provider, ProviderError};
use drkey_grpc::pb::proto::control_plane::v1 as cp;
use drkey_grpc::{ControlServiceClient, ControlServiceProvider, GrpcError};
use idint_wire::IsdAsn;
use tonic::{Request, Response, Status};

const T: u64 = 1_800_000_000;

fn ia(s: &str) -> IsdAsn {
    s.parse().unwrap()
}

/// Writes one HTTP/2 frame.
fn frame(out: &mut impl Write, kind: u8, flags: u8, stream: u32, payload: &[u8]) {
    let len = payload.len() as u32;
    let mut h = [0u8; 9];
    h[..3].copy_from_slice(&len.to_be_bytes()[1..]);
    h[3] = kind;
    h[4] = flags;
    h[5..].copy_from_slice(&stream.to_be_bytes());
    out.write_all(&h).unwrap();
    out.write_all(payload).unwrap();
}

/// A minimal HTTP/2 server that answers every request with gRPC response headers (status
/// 200, `application/grpc`) and then never sends the body.
fn headers_then_stall() -> SocketAddr {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for mut c in l.incoming().take(8).flatten() {
            std::thread::spawn(move || {
                let mut preface = [0u8; 24];
                if c.read_exact(&mut preface).is_err() {
                    return;
                }
                frame(&mut c, 4, 0, 0, &[]); // our SETTINGS
                loop {
                    let mut h = [0u8; 9];
                    if c.read_exact(&mut h).is_err() {
                        return;
                    }
                    let len = u32::from_be_bytes([0, h[0], h[1], h[2]]) as usize;
                    let mut payload = vec![0u8; len];
                    if c.read_exact(&mut payload).is_err() {
                        return;
                    }
                    let stream = u32::from_be_bytes([h[5], h[6], h[7], h[8]]) & 0x7fff_ffff;
                    match h[3] {
                        // SETTINGS (not an ACK): acknowledge.
                        4 if h[4] & 1 == 0 => frame(&mut c, 4, 1, 0, &[]),
                        // HEADERS of a request: answer with headers only, END_HEADERS set,
                        // END_STREAM not; then stay silent on the stream.
                        1 => {
                            let mut block = vec![0x88]; // :status 200 (static index 8)
                            block.extend_from_slice(&[0x0f, 0x10, 16]); // content-type, literal
                            block.extend_from_slice(b"application/grpc");
                            frame(&mut c, 1, 4, stream, &block);
                        }
                        _ => {}
                    }
                }
            });
        }
    });
    addr
}

#[tokio::test(flavor = "multi_thread")]
async fn stalled_body_times_out() {
    let addr = headers_then_stall();
    let c =
        ControlServiceClient::new(&format!("http://{addr}"), Duration::from_millis(500)).unwrap();
    let call = c.level1(Protocol::IDINT, ia("1-ff00:0:110"), ia("1-ff00:0:111"), T);
    // The outer bound only turns a hang into a failure; the client must give up by itself.
    let r = tokio::time::timeout(Duration::from_secs(20), call)
        .await
        .expect("the request timeout must cover the response body");
    assert!(matches!(r, Err(GrpcError::Unavailable(_))), "{r:?}");
}

#[test]
fn stalled_body_times_out_through_the_provider() {
    let addr = headers_then_stall();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let p = ControlServiceProvider::new(&format!("http://{addr}"), Duration::from_millis(500))
            .unwrap();
        let _ = tx.send(p.level1(Protocol::IDINT, ia("1-ff00:0:110"), ia("1-ff00:0:111"), T));
    });
    let r = rx
        .recv_timeout(Duration::from_secs(20))
        .expect("the provider must not hang on a stalled body");
    match r {
        Err(ProviderError::Config(m)) => assert!(m.contains("unavailable"), "{m}"),
        other => panic!("{other:?}"),
    }
}

/// A control service answering every level-1 request with the epoch `[begin, end)`.
struct FixedEpoch {
    begin: i64,
    end: i64,
}

fn ts(seconds: i64) -> Option<prost_types::Timestamp> {
    Some(prost_types::Timestamp { seconds, nanos: 0 })
}

#[tonic::async_trait]
impl cp::dr_key_intra_service_server::DrKeyIntraService for FixedEpoch {
    async fn dr_key_intra_level1(
        &self,
        _: Request<cp::DrKeyIntraLevel1Request>,
    ) -> Result<Response<cp::DrKeyIntraLevel1Response>, Status> {
        Ok(Response::new(cp::DrKeyIntraLevel1Response {
            epoch_begin: ts(self.begin),
            epoch_end: ts(self.end),
            key: vec![7; 16],
        }))
    }
    async fn dr_key_as_host(
        &self,
        _: Request<cp::DrKeyAsHostRequest>,
    ) -> Result<Response<cp::DrKeyAsHostResponse>, Status> {
        Err(Status::unimplemented("no"))
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

/// Serves `svc` on a runtime thread of its own; returns its URL.
fn serve(svc: FixedEpoch) -> String {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Runtime::new().unwrap();
        rt.block_on(async move {
            let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(l.local_addr().unwrap()).unwrap();
            let _ = tonic::transport::Server::builder()
                .add_service(cp::dr_key_intra_service_server::DrKeyIntraServiceServer::new(svc))
                .serve_with_incoming(tonic::transport::server::TcpIncoming::from(l))
                .await;
        });
    });
    format!("http://{}", rx.recv().unwrap())
}

#[test]
fn absurd_epochs_are_refused_and_not_cached() {
    let (src, dst) = (ia("1-ff00:0:110"), ia("1-ff00:0:111"));
    for (begin, end) in [
        (0, i64::from(u32::MAX)),
        (T as i64, T as i64 + 1),
        (1, 4_102_444_800),
    ] {
        let p =
            ControlServiceProvider::new(&serve(FixedEpoch { begin, end }), Duration::from_secs(5))
                .unwrap();
        for (n, time) in [T, 10, T + 1].into_iter().enumerate() {
            let e = p.fetch_level1(Protocol::IDINT, src, dst, time).unwrap_err();
            assert_eq!(
                e,
                GrpcError::Malformed("epoch length outside 360 s ..= 3 days"),
                "[{begin}, {end})"
            );
            assert_eq!(
                p.fetches(),
                n as u64 + 1,
                "a refused epoch must not be cached"
            );
        }
        match p.level1(Protocol::IDINT, src, dst, T) {
            Err(ProviderError::Config(m)) => assert!(m.contains("epoch length"), "{m}"),
            other => panic!("{other:?}"),
        }
    }
    // A sane epoch is served only for the times it contains.
    let begin = T as i64 - 100;
    let p = ControlServiceProvider::new(
        &serve(FixedEpoch {
            begin,
            end: begin + 3600,
        }),
        Duration::from_secs(5),
    )
    .unwrap();
    assert!(p.fetch_level1(Protocol::IDINT, src, dst, T).is_ok());
    assert!(p.fetch_level1(Protocol::IDINT, src, dst, T + 3000).is_ok());
    assert_eq!(p.fetches(), 1);
    let e = p
        .fetch_level1(Protocol::IDINT, src, dst, T + 3600)
        .unwrap_err();
    assert!(matches!(e, GrpcError::Malformed(_)), "{e}");
    assert_eq!(p.fetches(), 2);
}

#[tokio::test]
async fn urls_other_than_plain_http_are_refused_at_construction() {
    let t = Duration::from_secs(1);
    for url in ["https://127.0.0.1:1", "https://cs.example:30252"] {
        match ControlServiceClient::new(url, t) {
            Err(GrpcError::BadAddress(m)) => assert!(m.contains("TLS"), "{m}"),
            other => panic!("{url}: {other:?}"),
        }
        assert!(matches!(
            ControlServiceProvider::new(url, t),
            Err(GrpcError::BadAddress(_))
        ));
    }
    for url in [
        "localhost:1",
        "ftp://127.0.0.1:1",
        "unix:/tmp/cs",
        "",
        "http://[::1",
    ] {
        assert!(
            matches!(
                ControlServiceClient::new(url, t),
                Err(GrpcError::BadAddress(_))
            ),
            "{url}"
        );
    }
    assert!(ControlServiceClient::new("http://127.0.0.1:1", t).is_ok());
    // Outside a runtime the client cannot be built: an error, not a panic.
    let outside = std::thread::spawn(move || ControlServiceClient::new("http://127.0.0.1:1", t))
        .join()
        .unwrap();
    assert!(
        matches!(outside, Err(GrpcError::Unavailable(_))),
        "{outside:?}"
    );
}

#[test]
fn refused_connection_keeps_its_reason() {
    // A port bound but not listening: connections are refused.
    let held = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    held.bind(&SocketAddr::from(([127, 0, 0, 1], 0)).into())
        .unwrap();
    let port = held.local_addr().unwrap().as_socket().unwrap().port();
    let p =
        ControlServiceProvider::new(&format!("http://127.0.0.1:{port}"), Duration::from_secs(2))
            .unwrap();
    match p.level1(Protocol::IDINT, ia("1-ff00:0:110"), ia("1-ff00:0:111"), T) {
        Err(ProviderError::Config(m)) => {
            assert!(m.starts_with("control service unavailable: "), "{m}");
            // The OS-level cause, not just tonic's summary ("tcp connect error").
            assert!(m.contains("Connection refused"), "cause lost: {m}");
        }
        other => panic!("{other:?}"),
    }
}
