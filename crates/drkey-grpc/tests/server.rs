//! The loopback server against SCION's rules: which protocols get which derivation, what is
//! refused with which status, the RPC paths on the wire, and level-2 keys across an epoch
//! boundary.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use drkey::provider::{Level1Provider, LocalProvider};
use drkey::{Epoch, Protocol, as_host, generic_as_host, host_as, host_host};
use drkey_grpc::pb::proto::control_plane::v1 as cp;
use drkey_grpc::pb::proto::control_plane::v1::dr_key_inter_service_client::DrKeyInterServiceClient;
use drkey_grpc::pb::proto::control_plane::v1::dr_key_intra_service_client::DrKeyIntraServiceClient;
use drkey_grpc::{
    ControlServiceClient, ControlServiceProvider, ControlServiceServer, GrpcError,
    REQUESTER_IA_METADATA, RequestCounter,
};
use idint_wire::{HostAddr, IsdAsn};
use tonic::Code;
use tonic::codegen::http::uri::PathAndQuery;

const SECRET: &[u8] = b"another secret!!";
const EPOCH: u32 = 3_600;
const T: u64 = 1_704_067_800;

fn ia(s: &str) -> IsdAsn {
    s.parse().unwrap()
}

fn local() -> LocalProvider {
    LocalProvider::new(ia("1-ff00:0:110"), SECRET, EPOCH).unwrap()
}

fn ts(t: u64) -> Option<prost_types::Timestamp> {
    Some(prost_types::Timestamp {
        seconds: t as i64,
        nanos: 0,
    })
}

async fn spawn() -> (SocketAddr, RequestCounter) {
    let server = ControlServiceServer::new(ia("1-ff00:0:110"), local());
    let counter = server.request_counter();
    let addr = server
        .spawn("127.0.0.1:0".parse().unwrap(), std::future::pending())
        .await
        .unwrap();
    (addr, counter)
}

fn code(e: GrpcError) -> Code {
    match e {
        GrpcError::Status { code, .. } => code,
        other => panic!("expected a status, got {other}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn generic_protocol_uses_the_specific_level2_derivation() {
    // SCION's control service treats every protocol named in its enum, the generic one
    // included, as predefined: level 2 without the protocol number in the PRF input.
    let (addr, _) = spawn().await;
    let c = ControlServiceClient::new(&format!("http://{addr}"), Duration::from_secs(5)).unwrap();
    let (src, dst) = (ia("1-ff00:0:110"), ia("1-ff00:0:111"));
    let host: IpAddr = "192.0.2.7".parse().unwrap();
    let (_, l1) = local().level1(Protocol::GENERIC, src, dst, T).unwrap();
    let (_, k) = c
        .as_host(Protocol::GENERIC, src, dst, host, T)
        .await
        .unwrap();
    let specific = as_host(&l1.cipher(), &HostAddr::from(host)).unwrap();
    let generic = generic_as_host(&l1.cipher(), Protocol::GENERIC, &HostAddr::from(host)).unwrap();
    assert_eq!(k.as_bytes(), specific.as_bytes());
    assert_ne!(k.as_bytes(), generic.as_bytes());
}

#[tokio::test(flavor = "multi_thread")]
async fn level2_keys_across_an_epoch_boundary() {
    let (addr, _) = spawn().await;
    let c = ControlServiceClient::new(&format!("http://{addr}"), Duration::from_secs(5)).unwrap();
    let (src, dst) = (ia("1-ff00:0:110"), ia("1-ff00:0:112"));
    let (a, b): (IpAddr, IpAddr) = ("10.1.2.3".parse().unwrap(), "2001:db8::1".parse().unwrap());
    let first = Epoch::containing(T, EPOCH).unwrap();
    let second = first.next().unwrap();
    let mut last_keys = None;
    for t in [u64::from(first.end) - 1, u64::from(first.end)] {
        let want_epoch = if t < u64::from(first.end) {
            first
        } else {
            second
        };
        let (e1, l1) = local().level1(Protocol::IDINT, src, dst, t).unwrap();
        assert_eq!(e1, want_epoch);
        let ha = host_as(&l1.cipher(), &HostAddr::from(a)).unwrap();

        let (e, k_ah) = c.as_host(Protocol::IDINT, src, dst, b, t).await.unwrap();
        assert_eq!(e, want_epoch, "AS-host epoch at {t}");
        let want = as_host(&l1.cipher(), &HostAddr::from(b)).unwrap();
        assert_eq!(k_ah.as_bytes(), want.as_bytes());

        let (e, k_ha) = c.host_as(Protocol::IDINT, src, a, dst, t).await.unwrap();
        assert_eq!(e, want_epoch, "host-AS epoch at {t}");
        assert_eq!(k_ha.as_bytes(), ha.as_bytes());

        let (e, k_hh) = c
            .host_host(Protocol::IDINT, (src, a), (dst, b), t)
            .await
            .unwrap();
        assert_eq!(e, want_epoch, "host-host epoch at {t}");
        let want = host_host(&ha.cipher(), &HostAddr::from(b)).unwrap();
        assert_eq!(k_hh.as_bytes(), want.as_bytes());

        if let Some((ah, hh)) = last_keys.replace((*k_ah.as_bytes(), *k_hh.as_bytes())) {
            assert_ne!(ah, *k_ah.as_bytes(), "new epoch, new AS-host key");
            assert_ne!(hh, *k_hh.as_bytes(), "new epoch, new host-host key");
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn refusals_carry_the_right_status() {
    let (addr, served) = spawn().await;
    let url = format!("http://{addr}");
    let c = ControlServiceClient::new(&url, Duration::from_secs(5)).unwrap();
    let (me, other) = (ia("1-ff00:0:110"), ia("1-ff00:0:111"));
    let host: IpAddr = "10.0.0.1".parse().unwrap();

    // Keys whose source is another AS: not this service's to give.
    let e = c
        .as_host(Protocol::IDINT, other, me, host, T)
        .await
        .unwrap_err();
    assert_eq!(code(e), Code::NotFound);
    let e = c
        .host_host(Protocol::IDINT, (other, host), (me, host), T)
        .await
        .unwrap_err();
    assert_eq!(code(e), Code::NotFound);
    // Secret values go to authenticated delegates only.
    let e = c.secret_value(Protocol::IDINT, T).await.unwrap_err();
    assert_eq!(code(e), Code::PermissionDenied);
    // Other ASes get level-1 keys of predefined protocols only.
    let e = c.remote_level1(Protocol(7), other, T).await.unwrap_err();
    assert_eq!(code(e), Code::InvalidArgument);
    assert!(c.remote_level1(Protocol::SCMP, other, T).await.is_ok());

    // Requests the typed client cannot produce.
    let channel = tonic::transport::Endpoint::from_shared(url.clone())
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut intra = DrKeyIntraServiceClient::new(channel.clone());
    let bad_host = intra
        .dr_key_as_host(cp::DrKeyAsHostRequest {
            val_time: ts(T),
            protocol_id: 2,
            src_ia: me.to_u64(),
            dst_ia: other.to_u64(),
            dst_host: "not-an-ip".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(bad_host.code(), Code::InvalidArgument);
    let bad_protocol = intra
        .dr_key_intra_level1(cp::DrKeyIntraLevel1Request {
            val_time: ts(T),
            protocol_id: 65_536,
            src_ia: me.to_u64(),
            dst_ia: other.to_u64(),
        })
        .await
        .unwrap_err();
    assert_eq!(bad_protocol.code(), Code::InvalidArgument);
    let mut inter = DrKeyInterServiceClient::new(channel);
    let anonymous = inter
        .dr_key_level1(cp::DrKeyLevel1Request {
            val_time: ts(T),
            protocol_id: 2,
        })
        .await
        .unwrap_err();
    assert_eq!(anonymous.code(), Code::Unauthenticated);

    // Every RPC above reached the server and was counted, refused or not.
    assert_eq!(served.get(), 8);
}

/// Calls `path` with a hand-written method path, so the service and method names on the wire
/// are checked against SCION's, not against the generated code.
async fn call_path<Req, Resp>(
    url: &str,
    path: &'static str,
    req: tonic::Request<Req>,
) -> Result<Resp, tonic::Status>
where
    Req: prost::Message + Send + Sync + 'static,
    Resp: prost::Message + Default + Send + Sync + 'static,
{
    let channel = tonic::transport::Endpoint::from_shared(url.to_string())
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut grpc = tonic::client::Grpc::new(channel);
    grpc.ready().await.unwrap();
    let codec = tonic_prost::ProstCodec::<Req, Resp>::default();
    grpc.unary(req, PathAndQuery::from_static(path), codec)
        .await
        .map(tonic::Response::into_inner)
}

#[tokio::test(flavor = "multi_thread")]
async fn rpc_paths_are_scions() {
    let (addr, _) = spawn().await;
    let url = format!("http://{addr}");
    let (me, other) = (ia("1-ff00:0:110"), ia("1-ff00:0:111"));
    let (_, l1) = local().level1(Protocol::IDINT, me, other, T).unwrap();

    let r: cp::DrKeyIntraLevel1Response = call_path(
        &url,
        "/proto.control_plane.v1.DRKeyIntraService/DRKeyIntraLevel1",
        tonic::Request::new(cp::DrKeyIntraLevel1Request {
            val_time: ts(T),
            protocol_id: 2,
            src_ia: me.to_u64(),
            dst_ia: other.to_u64(),
        }),
    )
    .await
    .unwrap();
    assert_eq!(r.key, l1.as_bytes().to_vec());

    let mut req = tonic::Request::new(cp::DrKeyLevel1Request {
        val_time: ts(T),
        protocol_id: 2,
    });
    req.metadata_mut()
        .insert(REQUESTER_IA_METADATA, "1-ff00:0:111".parse().unwrap());
    let r: cp::DrKeyLevel1Response = call_path(
        &url,
        "/proto.control_plane.v1.DRKeyInterService/DRKeyLevel1",
        req,
    )
    .await
    .unwrap();
    assert_eq!(r.key, l1.as_bytes().to_vec());

    for (path, want) in [
        (
            "/proto.control_plane.v1.DRKeyIntraService/DRKeyASHost",
            Code::InvalidArgument,
        ),
        (
            "/proto.control_plane.v1.DRKeyIntraService/DRKeyHostAS",
            Code::InvalidArgument,
        ),
        (
            "/proto.control_plane.v1.DRKeyIntraService/DRKeyHostHost",
            Code::InvalidArgument,
        ),
        (
            "/proto.control_plane.v1.DRKeyIntraService/DRKeySecretValue",
            Code::PermissionDenied,
        ),
        (
            "/proto.control_plane.v1.DRKeyIntraService/DRKeyNoSuchThing",
            Code::Unimplemented,
        ),
    ] {
        // An empty request: no host, so the known methods refuse it with their own status,
        // which tells them apart from a path the server does not know.
        let e = call_path::<cp::DrKeySecretValueRequest, cp::DrKeySecretValueResponse>(
            &url,
            path,
            tonic::Request::new(cp::DrKeySecretValueRequest::default()),
        )
        .await
        .unwrap_err();
        assert_eq!(e.code(), want, "{path}");
    }
}

#[test]
fn provider_on_a_shared_runtime() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let (addr, served) = rt.block_on(spawn());
    let p = ControlServiceProvider::with_handle(
        &format!("http://{addr}"),
        Duration::from_secs(5),
        rt.handle().clone(),
    )
    .unwrap();
    let (src, dst) = (ia("1-ff00:0:110"), ia("1-ff00:0:119"));
    let (e, k) = p.level1(Protocol::SCMP, src, dst, T).unwrap();
    let (de, dk) = local().level1(Protocol::SCMP, src, dst, T).unwrap();
    assert_eq!((e, k.as_bytes()), (de, dk.as_bytes()));
    assert!(p.level1(Protocol::SCMP, src, dst, T + 1).is_ok());
    assert_eq!(served.get(), 1);
}

#[test]
fn concurrent_misses_fetch_once() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (addr, served) = rt.block_on(spawn());
    let p = ControlServiceProvider::new(&format!("http://{addr}"), Duration::from_secs(5)).unwrap();
    let (src, dst) = (ia("1-ff00:0:110"), ia("1-ff00:0:120"));
    let keys: Vec<[u8; 16]> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..8u64)
            .map(|i| {
                let p = &p;
                s.spawn(move || {
                    *p.level1(Protocol::IDINT, src, dst, T + i)
                        .unwrap()
                        .1
                        .as_bytes()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(keys.iter().all(|k| *k == keys[0]));
    assert_eq!(p.fetches(), 1);
    assert_eq!(served.get(), 1, "eight threads, one epoch, one request");
}

/// Accepts connections and never answers.
fn silent_listener() -> SocketAddr {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        // Bounded: a handful of connections is all a test makes; they stay open, unanswered,
        // until the test process ends.
        for c in l.incoming().take(8).flatten() {
            held.push(c);
        }
    });
    addr
}

#[test]
fn silent_server_times_out() {
    let addr = silent_listener();
    let p =
        ControlServiceProvider::new(&format!("http://{addr}"), Duration::from_millis(500)).unwrap();
    let t0 = std::time::Instant::now();
    let e = p
        .fetch_level1(Protocol::IDINT, ia("1-ff00:0:110"), ia("1-ff00:0:111"), T)
        .unwrap_err();
    assert!(matches!(e, GrpcError::Unavailable(_)), "{e}");
    assert!(t0.elapsed() < Duration::from_secs(3), "{:?}", t0.elapsed());
    assert!(matches!(
        p.level1(Protocol::IDINT, ia("1-ff00:0:110"), ia("1-ff00:0:111"), T),
        Err(drkey::provider::ProviderError::Config(_))
    ));
}

#[test]
fn wire_encoding_matches_scion_field_numbers() {
    use prost::Message;
    let req = cp::DrKeyHostHostRequest {
        val_time: ts(1),
        protocol_id: 2,
        src_ia: 3,
        dst_ia: 4,
        src_host: "a".into(),
        dst_host: "b".into(),
    };
    // Field 1 Timestamp (length-delimited), 2 enum, 3 and 4 varints, 5 and 6 strings.
    let want = [
        0x0a, 0x02, 0x08, 0x01, 0x10, 0x02, 0x18, 0x03, 0x20, 0x04, 0x2a, 0x01, b'a', 0x32, 0x01,
        b'b',
    ];
    assert_eq!(req.encode_to_vec(), want);
    let resp = cp::DrKeyAsHostResponse {
        epoch_begin: ts(1),
        epoch_end: ts(2),
        key: vec![0xee; 2],
    };
    let want = [
        0x0a, 0x02, 0x08, 0x01, 0x12, 0x02, 0x08, 0x02, 0x1a, 0x02, 0xee, 0xee,
    ];
    assert_eq!(resp.encode_to_vec(), want);
    let level1 = cp::DrKeyIntraLevel1Request {
        val_time: None,
        protocol_id: 1,
        src_ia: 0x0001_ff00_0000_0110,
        dst_ia: 0,
    };
    let bytes = level1.encode_to_vec();
    assert_eq!(&bytes[..2], &[0x10, 0x01]);
    assert_eq!(bytes[2], 0x18);
    assert_eq!(
        cp::DrKeyIntraLevel1Request::decode(&bytes[..]).unwrap(),
        level1
    );
}
