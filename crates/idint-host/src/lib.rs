//! An ID-INT end host on the host API: `idint-ping` sends SCION/UDP pings that request
//! per-hop telemetry, and the destination verifies and decrypts it, reports it to the
//! collector and answers with the verified values over the reversed path.
//!
//! Everything but the sockets and the command line is I/O-free and lives here:
//!
//! * [`paths`]: the paths file the network generator writes;
//! * [`keys`]: DRKey keys derived from the ASes' master secrets;
//! * [`packet`]: building SCION/UDP packets with the ID-INT request;
//! * [`payload`]: the ping and reply payloads;
//! * [`responder`]: the destination (verify, decrypt, report, reply);
//! * [`pinger`]: the source (pings, replies, per-hop table and JSON);
//! * [`reason`]: why a packet was not verified;
//! * [`fixture`]: paths with real hop-field MACs, for tests and small generators.

pub mod fixture;
pub mod keys;
pub mod packet;
pub mod paths;
pub mod payload;
pub mod pinger;
pub mod reason;
pub mod responder;
