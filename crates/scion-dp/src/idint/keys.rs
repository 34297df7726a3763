//! Verifier keys: the two-phase lookup trait [`VerifierKeys`] (find a [`KeyHandle`], then
//! borrow keys through it), its statistics, the DRKey-cache implementation [`DrkeyKeys`]
//! (cargo feature `drkey`) and [`VerifierId`], a verifier as plain integers for cheap
//! compares and lookups.

use idint_wire::crypto::Aes128Enc;
use idint_wire::{AddrType, HostAddr, IsdAsn};

/// A verifier's IPv4 host held as a `u128` sits in the top 32 bits: this shift.
pub(crate) const V4_HOST_SHIFT: u32 = 128 - 32;

/// A key found by [`VerifierKeys::find`]: a name the implementation gives out (for a cache,
/// the slot and the insertion that filled it), meaningless to anyone else.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyHandle {
    /// Where the implementation keeps the key.
    pub index: u32,
    /// Which version of that place holds it.
    pub generation: u64,
}

/// The AS→host keys a router uses for ID-INT entries.
///
/// Lookups are two-phase so that a burst can seal entries under many keys at once: [`find`]
/// (which may derive and evict) gives handles, [`key`] turns any number of them into keys
/// through a shared borrow.
///
/// [`find`]: VerifierKeys::find
/// [`key`]: VerifierKeys::key
pub trait VerifierKeys {
    /// Finds this AS's ID-INT key for `host` in `ia` valid at `now_ns` (Unix ns), or `None` if
    /// it is not available now (the packet then carries no entry from this router).
    fn find(&mut self, ia: IsdAsn, host: &HostAddr, now_ns: u64) -> Option<KeyHandle>;

    /// [`VerifierKeys::find`] for an IPv4 (`v6 == false`: the address in the top 32 bits of
    /// `host`) or IPv6 host given as integers, as the data plane holds it. The default builds
    /// the [`HostAddr`] and calls `find`.
    #[inline(always)]
    fn find_ip(&mut self, ia: IsdAsn, v6: bool, host: u128, now_ns: u64) -> Option<KeyHandle> {
        let h = if v6 {
            HostAddr::V6(core::net::Ipv6Addr::from(host))
        } else {
            HostAddr::V4(core::net::Ipv4Addr::from((host >> V4_HOST_SHIFT) as u32))
        };
        self.find(ia, &h, now_ns)
    }

    /// The key a handle from [`VerifierKeys::find`] names, or `None` once it is not held any
    /// more (a later `find` evicted it); never a different key.
    fn key(&self, handle: KeyHandle) -> Option<&Aes128Enc>;

    /// [`VerifierKeys::find`] and [`VerifierKeys::key`] in one step.
    #[inline]
    fn as_host_key(&mut self, ia: IsdAsn, host: &HostAddr, now_ns: u64) -> Option<&Aes128Enc> {
        let h = self.find(ia, host, now_ns)?;
        self.key(h)
    }

    /// How lookups went so far, for operators sizing a cache (zero for a store that keeps
    /// no counters).
    fn lookups(&self) -> KeyLookups {
        KeyLookups::default()
    }
}

/// Counters of a [`VerifierKeys`] store.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KeyLookups {
    /// Lookups answered from held keys.
    pub hits: u64,
    /// Lookups that had to derive (or fetch) the key.
    pub misses: u64,
    /// Held keys replaced to make room.
    pub evictions: u64,
}

/// [`VerifierKeys`] from a worker's DRKey key cache: the level-2 AS→host keys of protocol
/// ID-INT issued by `local` (the router's AS), valid at the packet's processing time. A key
/// the cache cannot produce (the provider has no level-1 key) is `None`, counted as `no_key`.
#[cfg(feature = "drkey")]
pub struct DrkeyKeys {
    /// The worker's cache.
    pub cache: drkey::cache::KeyCache,
    /// This router's AS.
    pub local: IsdAsn,
}

#[cfg(feature = "drkey")]
impl VerifierKeys for DrkeyKeys {
    /// Inlined into the caller, which has just built `host`: a call would read it back
    /// through memory (a store-forwarding stall per packet).
    #[inline(always)]
    fn find(&mut self, ia: IsdAsn, host: &HostAddr, now_ns: u64) -> Option<KeyHandle> {
        let id = drkey::cache::KeyId {
            protocol: drkey::Protocol::IDINT,
            src: self.local,
            dst: ia,
            host: *host,
        };
        let h = self.cache.find(&id, now_ns / 1_000_000_000).ok()?;
        Some(KeyHandle {
            index: h.index,
            generation: h.generation,
        })
    }

    /// The packed id straight from the integers (no [`HostAddr`] built and taken apart).
    #[inline(always)]
    fn find_ip(&mut self, ia: IsdAsn, v6: bool, host: u128, now_ns: u64) -> Option<KeyHandle> {
        let addr = if v6 { host } else { host >> V4_HOST_SHIFT };
        let id = drkey::cache::PackedKeyId::ip(drkey::Protocol::IDINT, self.local, ia, v6, addr);
        let h = self.cache.find_packed(&id, now_ns / 1_000_000_000).ok()?;
        Some(KeyHandle {
            index: h.index,
            generation: h.generation,
        })
    }

    #[inline]
    fn key(&self, h: KeyHandle) -> Option<&Aes128Enc> {
        self.cache.key(drkey::cache::KeyHandle {
            index: h.index,
            generation: h.generation,
        })
    }

    fn lookups(&self) -> KeyLookups {
        let s = self.cache.stats();
        KeyLookups {
            hits: s.hits,
            misses: s.misses,
            evictions: s.evictions,
        }
    }
}

/// A verifier (ISD-AS and IPv4/IPv6 host) as plain integers.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) struct VerifierId {
    pub(super) ia: u64,
    pub(super) host: u128,
    pub(super) ty: u8,
}

impl VerifierId {
    /// From raw host bytes (4 for IPv4, 16 for IPv6; anything else keeps its type only and
    /// is refused by the caller).
    #[inline]
    pub(super) fn new(ia: u64, t: AddrType, raw: &[u8]) -> Self {
        let host = if let Ok(b) = <[u8; 16]>::try_from(raw) {
            u128::from_be_bytes(b)
        } else if let Ok(b) = <[u8; 4]>::try_from(raw) {
            u128::from(u32::from_be_bytes(b)) << V4_HOST_SHIFT
        } else {
            0
        };
        VerifierId {
            ia,
            host,
            ty: t.nibble(),
        }
    }

    pub(super) fn ia(&self) -> IsdAsn {
        IsdAsn::from_u64(self.ia)
    }

    pub(super) fn v6(&self) -> bool {
        self.ty == AddrType::IPV6.nibble()
    }

    pub(super) fn host(&self) -> HostAddr {
        let b = self.host.to_be_bytes();
        if self.ty == AddrType::IPV4.nibble() {
            HostAddr::V4(core::net::Ipv4Addr::new(b[0], b[1], b[2], b[3]))
        } else {
            HostAddr::V6(core::net::Ipv6Addr::from(b))
        }
    }
}

pub(super) const NO_VERIFIER: VerifierId = VerifierId {
    ia: 0,
    host: 0,
    ty: 0,
};
