//! Zero-copy parsers and emitters for SCION and ID-INT packets.
//!
//! `no_std`, no `alloc`, no `unsafe`. Shared by the border router, end hosts and the collector.
//!
//! # Two levels
//!
//! * **Views** (`*Packet<T>`, `*Header<T>` …) wrap a buffer `T: AsRef<[u8]>` and read fields in
//!   place; with `T: AsMut<[u8]>` they also write them. Build them with `new_checked` on
//!   untrusted input (it runs `check_len`); `new_unchecked` skips the check and is for buffers
//!   whose length is already known to be right (for example right after `Repr::emit`).
//! * **Reprs** (`*Repr`) are small owned values with `parse` (from a checked view), `emit` (into a
//!   buffer of at least `buffer_len()` bytes) and `buffer_len`.
//!
//! # Panic contract
//!
//! No input makes this crate panic: after `new_checked` (or a successful `check_len`) every
//! getter of a view stays in bounds; every `parse` returns an [`Error`] instead. Setters that
//! change a length field may invalidate that guarantee until `check_len` is run again. `emit`
//! returns [`Error::Truncated`] when the buffer is too short. The fuzz targets in `fuzz/` check
//! this on arbitrary bytes.
//!
//! # Layers
//!
//! * [`addr`]: ISD, AS, ISD-AS and host addresses.
//! * [`scion`]: common header and address header.
//! * [`path`]: Empty, SCION, OneHop and EPIC-HP paths.
//! * [`ext`]: hop-by-hop and end-to-end extension headers, TLV options; [`spao`] the packet
//!   authenticator option.
//! * [`idint`]: ID-INT main option, telemetry stack entries, instruction table, stack
//!   operations, request builder, and (feature `crypto`) MAC chain and encryption.
//! * [`udp`], [`scmp`], [`checksum`]: layer 4 and the SCION pseudo-header checksum.
//! * [`packet`]: a whole packet parsed layer by layer; [`pretty`] prints it.
#![no_std]
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod bytes;

pub mod addr;
pub mod checksum;
#[cfg(feature = "crypto")]
pub mod crypto;
pub mod error;
pub mod ext;
pub mod idint;
pub mod packet;
pub mod path;
pub mod pretty;
pub mod scion;
pub mod scmp;
pub mod spao;
pub mod udp;

pub use addr::{AddrType, Asn, HostAddr, Isd, IsdAsn, Svc};
pub use error::{Error, Layer, Result};
