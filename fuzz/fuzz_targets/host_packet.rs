//! Arbitrary bytes as a datagram received by `idint-ping`: the destination's handling
//! (parse, verify, decrypt, report, reply) and the sender's reply check never panic; a
//! verified packet always comes with a reply.
#![no_main]

use std::sync::{Mutex, OnceLock};

use idint_host::fixture::empty_path;
use idint_host::keys::HostKeys;
use idint_host::packet::Endpoint;
use idint_host::pinger::Pinger;
use idint_host::responder::Responder;
use idint_wire::{HostAddr, IsdAsn};
use libfuzzer_sys::fuzz_target;

/// The clock of the destination (the seed pings were built at this time).
const NOW_NS: u64 = 1_763_800_000_000_000_000;

fn ia() -> IsdAsn {
    "1-ff00:0:111".parse().expect("ISD-AS")
}

fn keys() -> HostKeys {
    let mut k = HostKeys::new(3600);
    k.insert(ia(), &[0x21; 16]);
    k
}

fn host() -> (&'static Mutex<Responder>, &'static Pinger) {
    static R: OnceLock<(Mutex<Responder>, Pinger)> = OnceLock::new();
    let (r, p) = R.get_or_init(|| {
        let me = HostAddr::V4([127, 0, 0, 1].into());
        let end = |port| Endpoint {
            ia: ia(),
            host: me,
            port,
        };
        let pinger = Pinger::new(
            end(28211),
            end(28210),
            empty_path("local", ia()),
            false,
            keys(),
        );
        (Mutex::new(Responder::new(ia(), me, keys())), pinger)
    });
    (r, p)
}

fuzz_target!(|data: &[u8]| {
    let (responder, pinger) = host();
    let h = responder.lock().expect("not poisoned").handle(data, NOW_NS);
    if h.failure.is_none() {
        assert!(h.reply.is_some());
    }
    let _ = pinger.reply(data);
});
