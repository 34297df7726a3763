//! The collector's DRKey keys: the own AS's from its master secret, other ASes' from imported
//! level-1 keys (a JSON file at start, the admin API at run time), behind one
//! [`Level1Provider`]; per-worker caches of the level-2/3 keys the verifier needs.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use drkey::provider::{Level1Provider, LocalProvider, ProviderError};
use drkey::{Epoch, Key, Protocol};
use idint_wire::crypto::Aes128Enc;
use idint_wire::{HostAddr, IsdAsn};
use rustc_hash::FxHashMap;

/// One imported level-1 key K(src -> dst) (same JSON shape as `drkey`'s static key files).
#[derive(Debug, Clone, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct ImportedKey {
    /// Issuing AS, e.g. `1-ff00:0:111`.
    pub src_ia: String,
    /// Receiving AS (the collector's).
    pub dst_ia: String,
    /// DRKey protocol number (2 = ID-INT).
    pub protocol: u16,
    /// First second of validity.
    pub epoch_begin: u32,
    /// First second after validity.
    pub epoch_end: u32,
    /// The key, 32 hex digits.
    pub key_hex: String,
}

/// Imported level-1 keys by (protocol, src, dst), each with its epochs.
type KeyTable = HashMap<(Protocol, IsdAsn, IsdAsn), Vec<(Epoch, Key)>>;

/// Level-1 keys imported at run time (thread-safe; read on cache misses only).
#[derive(Default)]
pub struct ImportedKeys {
    keys: RwLock<KeyTable>,
    generation: AtomicU64,
    /// The verifier's AS, if set: only keys K(src -> it) are taken.
    verifier: Option<IsdAsn>,
}

impl ImportedKeys {
    /// An empty store for the collector of `ia`: it verifies ID-INT entries with keys
    /// K(src -> `ia`) of the ID-INT protocol only, so [`Self::import`] refuses keys for any
    /// other destination AS or protocol (they would be stored and never used).
    pub fn for_verifier(ia: IsdAsn) -> Self {
        ImportedKeys {
            verifier: Some(ia),
            ..ImportedKeys::default()
        }
    }

    /// Adds keys; all or nothing. Returns how many were added.
    pub fn import(&self, entries: &[ImportedKey]) -> Result<usize, String> {
        let mut parsed = Vec::with_capacity(entries.len());
        for (i, e) in entries.iter().enumerate() {
            let bad = |what: &str| format!("key {i}: {what}");
            let src: IsdAsn = e.src_ia.parse().map_err(|_| bad("bad src_ia"))?;
            let dst: IsdAsn = e.dst_ia.parse().map_err(|_| bad("bad dst_ia"))?;
            if let Some(v) = self.verifier
                && dst != v
            {
                return Err(bad(&format!(
                    "dst_ia {dst} is not this collector's AS {v} (it verifies with keys \
                     K(src -> {v}) only)"
                )));
            }
            if self.verifier.is_some() && Protocol(e.protocol) != Protocol::IDINT {
                return Err(bad(&format!(
                    "protocol {} is not ID-INT ({}), the only protocol this collector \
                     verifies with",
                    e.protocol,
                    Protocol::IDINT.0
                )));
            }
            let epoch = Epoch::new(e.epoch_begin, e.epoch_end)
                .ok_or_else(|| bad("epoch_end <= epoch_begin"))?;
            let raw: [u8; 16] = hex::decode(&e.key_hex)
                .ok()
                .and_then(|v| v.try_into().ok())
                .ok_or_else(|| bad("key_hex is not 32 hex digits"))?;
            parsed.push((
                (Protocol(e.protocol), src, dst),
                epoch,
                Key::from_bytes(raw),
            ));
        }
        let mut keys = self.keys.write().map_err(|_| "key store poisoned")?;
        let n = parsed.len();
        for (id, epoch, key) in parsed {
            let v = keys.entry(id).or_default();
            v.retain(|(e, _)| *e != epoch);
            v.push((epoch, key));
        }
        self.generation.fetch_add(1, Ordering::Release);
        Ok(n)
    }

    /// Parses and adds a JSON array of [`ImportedKey`].
    pub fn import_json(&self, text: &str) -> Result<usize, String> {
        let entries: Vec<ImportedKey> =
            serde_json::from_str(text).map_err(|e| format!("key file: {e}"))?;
        self.import(&entries)
    }

    /// Imports so far (caches of derived keys are dropped when it moves).
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Number of (protocol, src, dst) pairs with keys.
    pub fn len(&self) -> usize {
        self.keys.read().map(|k| k.len()).unwrap_or(0)
    }

    /// Whether no key was imported.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Level1Provider for ImportedKeys {
    fn level1(
        &self,
        protocol: Protocol,
        src: IsdAsn,
        dst: IsdAsn,
        time: u64,
    ) -> Result<(Epoch, Key), ProviderError> {
        let not_found = ProviderError::NotFound {
            src,
            dst,
            protocol,
            time,
        };
        let keys = self
            .keys
            .read()
            .map_err(|_| ProviderError::Config("poisoned".into()))?;
        keys.get(&(protocol, src, dst))
            .and_then(|v| v.iter().find(|(e, _)| e.contains(time)))
            .map(|(e, k)| (*e, k.clone()))
            .ok_or(not_found)
    }
}

/// The own AS's provider for its keys, imported keys for the others.
pub struct CollectorProvider {
    local_ia: IsdAsn,
    local: Option<LocalProvider>,
    imported: Arc<ImportedKeys>,
    extra: Option<Arc<dyn Level1Provider>>,
}

impl CollectorProvider {
    /// A provider for `local_ia` (master secret optional: without it own-AS keys must be
    /// imported too), imported keys, and an optional further provider (for example the
    /// control service client from `drkey-grpc`) asked last.
    pub fn new(
        local_ia: IsdAsn,
        local: Option<LocalProvider>,
        imported: Arc<ImportedKeys>,
        extra: Option<Arc<dyn Level1Provider>>,
    ) -> Self {
        CollectorProvider {
            local_ia,
            local,
            imported,
            extra,
        }
    }
}

impl Level1Provider for CollectorProvider {
    fn level1(
        &self,
        protocol: Protocol,
        src: IsdAsn,
        dst: IsdAsn,
        time: u64,
    ) -> Result<(Epoch, Key), ProviderError> {
        if src == self.local_ia
            && let Some(l) = &self.local
        {
            return l.level1(protocol, src, dst, time);
        }
        match self.imported.level1(protocol, src, dst, time) {
            Ok(k) => Ok(k),
            Err(e) => match &self.extra {
                Some(x) => x.level1(protocol, src, dst, time),
                None => Err(e),
            },
        }
    }
}

/// Why a key could not be had.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyError {
    /// No level-1 key for this AS at this time.
    NoLevel1(IsdAsn),
    /// The level-1 key of this AS is being fetched: try again later.
    Pending(IsdAsn),
    /// The host address cannot be used for derivation.
    BadHost,
}

fn level1_error(ia: IsdAsn, e: &ProviderError) -> KeyError {
    match e {
        ProviderError::Pending { .. } => KeyError::Pending(ia),
        _ => KeyError::NoLevel1(ia),
    }
}

/// Keys of one path's ASes, valid while `begin <= t < end` (the intersection of epochs).
struct PathKeys {
    begin: u64,
    end: u64,
    /// The ASes the keys are for: a path id is a hash, and another path's keys must never be
    /// taken for this one's.
    ases: Vec<IsdAsn>,
    keys: Vec<Aes128Enc>,
}

/// A cached source key and whose it is (the cache slot is a hash of the source).
struct SourceKey {
    ia: IsdAsn,
    host: HostAddr,
    epoch: Epoch,
    key: Aes128Enc,
}

/// The cache slot of a source's key: a 64-bit hash of its ISD-AS and host. Not an identity
/// (collisions can be computed): cached entries carry their source and are checked.
pub fn source_slot(ia: IsdAsn, host: &HostAddr) -> u64 {
    let (b, n) = host.to_bytes();
    let mut h = ia.to_u64() ^ 0x9e37_79b9_7f4a_7c15;
    for chunk in b[..n].chunks(8) {
        let mut w = [0u8; 8];
        w[..chunk.len()].copy_from_slice(chunk);
        h = (h ^ u64::from_le_bytes(w)).wrapping_mul(0x0000_0100_0000_01b3);
        h ^= h >> 31;
    }
    h ^ u64::from(host.addr_type().nibble())
}

/// A worker's key resolver: the AS-to-host keys K(AS -> collector) of every AS of a path,
/// kept per path for the intersection of their epochs, and the host-to-host source keys
/// K(src AS:host -> collector), kept per source. A report whose keys are cached costs two
/// hash lookups and no copies.
pub struct KeyResolver {
    local_ia: IsdAsn,
    host: HostAddr,
    provider: Arc<dyn Level1Provider>,
    path_keys: FxHashMap<u64, PathKeys>,
    source_keys: FxHashMap<u64, SourceKey>,
    capacity: usize,
    watched: Option<(Arc<ImportedKeys>, u64)>,
}

impl KeyResolver {
    /// Keys for the verifier `host` in `local_ia`.
    pub fn new(local_ia: IsdAsn, host: HostAddr, provider: Arc<dyn Level1Provider>) -> Self {
        KeyResolver {
            local_ia,
            host,
            provider,
            path_keys: FxHashMap::default(),
            source_keys: FxHashMap::default(),
            capacity: 1 << 16,
            watched: None,
        }
    }

    /// Drops cached keys whenever `imported` changes (see [`Self::refresh`]).
    pub fn watch(mut self, imported: Arc<ImportedKeys>) -> Self {
        let g = imported.generation();
        self.watched = Some((imported, g));
        self
    }

    /// Drops every cached key if the watched imports changed since the last call (cheap:
    /// one atomic load; the pipeline calls it once per batch).
    pub fn refresh(&mut self) {
        if let Some((imp, seen)) = &mut self.watched {
            let g = imp.generation();
            if g != *seen {
                *seen = g;
                self.clear();
            }
        }
    }

    /// Drops every cached key (for example when paths were remapped).
    pub fn clear(&mut self) {
        self.path_keys.clear();
        self.source_keys.clear();
    }

    /// The verifier's AS.
    pub fn local_ia(&self) -> IsdAsn {
        self.local_ia
    }

    /// The verifier's host.
    pub fn host(&self) -> HostAddr {
        self.host
    }

    /// K(`ia` -> collector) at `time_s` and its epoch.
    pub fn as_key(&self, ia: IsdAsn, time_s: u64) -> Result<(Epoch, Aes128Enc), KeyError> {
        let (epoch, l1) = self
            .provider
            .level1(Protocol::IDINT, ia, self.local_ia, time_s)
            .map_err(|e| level1_error(ia, &e))?;
        let k = drkey::as_host(&l1.cipher(), &self.host).map_err(|_| KeyError::BadHost)?;
        Ok((epoch, k.cipher()))
    }

    /// The keys of path `path` (ASes `ases` in hop order) at `time_s`.
    pub fn path_keys(
        &mut self,
        path: u64,
        ases: &[IsdAsn],
        time_s: u64,
    ) -> Result<&[Aes128Enc], KeyError> {
        let fresh = matches!(self.path_keys.get(&path),
            Some(p) if p.begin <= time_s && time_s < p.end && p.ases == ases);
        if !fresh {
            let (mut begin, mut end) = (0u64, u64::MAX);
            let mut keys = Vec::with_capacity(ases.len());
            for &ia in ases {
                let (e, k) = self.as_key(ia, time_s)?;
                begin = begin.max(u64::from(e.begin));
                end = end.min(u64::from(e.end));
                keys.push(k);
            }
            if self.path_keys.len() >= self.capacity {
                self.path_keys.clear();
            }
            self.path_keys.insert(
                path,
                PathKeys {
                    begin,
                    end,
                    ases: ases.to_vec(),
                    keys,
                },
            );
        }
        self.path_keys
            .get(&path)
            .map(|p| &p.keys[..])
            .ok_or(KeyError::BadHost)
    }

    /// The cached source key of source `id` and keys of `path` (after [`Self::source_key`] and
    /// [`Self::path_keys`] succeeded for them).
    pub fn cached(&self, id: u64, path: u64) -> Option<(&Aes128Enc, &[Aes128Enc])> {
        let s = self.source_keys.get(&id)?;
        let p = self.path_keys.get(&path)?;
        Some((&s.key, &p.keys[..]))
    }

    /// K(`ia`:`src` -> collector) at `time_s`, the source entry's key; `id` identifies the
    /// source (cache key).
    pub fn source_key(
        &mut self,
        id: u64,
        ia: IsdAsn,
        src: HostAddr,
        time_s: u64,
    ) -> Result<&Aes128Enc, KeyError> {
        let fresh = matches!(self.source_keys.get(&id),
            Some(s) if s.ia == ia && s.host == src && s.epoch.contains(time_s));
        if !fresh {
            let (epoch, l1) = self
                .provider
                .level1(Protocol::IDINT, ia, self.local_ia, time_s)
                .map_err(|e| level1_error(ia, &e))?;
            let ha = drkey::host_as(&l1.cipher(), &src).map_err(|_| KeyError::BadHost)?;
            let hh = drkey::host_host(&ha.cipher(), &self.host).map_err(|_| KeyError::BadHost)?;
            if self.source_keys.len() >= self.capacity {
                self.source_keys.clear();
            }
            self.source_keys.insert(
                id,
                SourceKey {
                    ia,
                    host: src,
                    epoch,
                    key: hh.cipher(),
                },
            );
        }
        self.source_keys
            .get(&id)
            .map(|s| &s.key)
            .ok_or(KeyError::BadHost)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(dst: &str) -> ImportedKey {
        ImportedKey {
            src_ia: "1-ff00:0:111".into(),
            dst_ia: dst.into(),
            protocol: 2,
            epoch_begin: 100,
            epoch_end: 200,
            key_hex: "00112233445566778899aabbccddeeff".into(),
        }
    }

    /// Two paths sharing a cache slot (their ids are hashes): each gets its own ASes' keys.
    #[test]
    fn path_keys_are_for_the_ases_asked_for() {
        let own: IsdAsn = "1-ff00:0:110".parse().unwrap();
        let local = drkey::provider::LocalProvider::new(own, &[7; 16], 86_400).unwrap();
        let other: IsdAsn = "1-ff00:0:111".parse().unwrap();
        let t = 1_763_800_000u64;
        let imported = Arc::new(ImportedKeys::default());
        imported
            .import(&[ImportedKey {
                src_ia: "1-ff00:0:111".into(),
                dst_ia: "1-ff00:0:110".into(),
                protocol: 2,
                epoch_begin: (t - 100) as u32,
                epoch_end: (t + 100) as u32,
                key_hex: "00112233445566778899aabbccddeeff".into(),
            }])
            .unwrap();
        let provider = Arc::new(CollectorProvider::new(own, Some(local), imported, None));
        let host = HostAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, 9));
        let mut r = KeyResolver::new(own, host, provider);
        let fingerprint = |k: &Aes128Enc| idint_wire::crypto::cbc_mac(k, &[0; 16]);
        let keys = |r: &mut KeyResolver, ases: &[IsdAsn]| -> Vec<[u8; 16]> {
            r.path_keys(5, ases, t)
                .unwrap()
                .iter()
                .map(fingerprint)
                .collect()
        };
        let mine = keys(&mut r, &[own]);
        let theirs = keys(&mut r, &[other]);
        assert_ne!(mine, theirs, "[other] got the cached [own] keys");
        assert_eq!(keys(&mut r, &[own]), mine);
        // The same for source keys: one slot, two sources, two keys.
        let a = r.source_key(9, own, host, t).map(fingerprint).unwrap();
        let other_host = HostAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, 10));
        let b = r
            .source_key(9, own, other_host, t)
            .map(fingerprint)
            .unwrap();
        assert_ne!(a, b);
        assert_eq!(r.source_key(9, own, host, t).map(fingerprint).unwrap(), a);
    }

    #[test]
    fn a_verifier_takes_only_keys_towards_its_own_as() {
        let own: IsdAsn = "1-ff00:0:110".parse().unwrap();
        let k = ImportedKeys::for_verifier(own);
        let e = k
            .import(&[key("1-ff00:0:110"), key("1-ff00:0:112")])
            .unwrap_err();
        assert!(e.contains("key 1: dst_ia 1-ff00:0:112"), "{e}");
        assert!(k.is_empty(), "all or nothing");
        assert_eq!(k.import(&[key("1-ff00:0:110")]), Ok(1));
        // A store for no particular verifier takes any destination.
        assert_eq!(
            ImportedKeys::default().import(&[key("1-ff00:0:112")]),
            Ok(1)
        );
    }

    #[test]
    fn a_verifier_takes_only_id_int_keys() {
        let own: IsdAsn = "1-ff00:0:110".parse().unwrap();
        let k = ImportedKeys::for_verifier(own);
        let scmp = ImportedKey {
            protocol: 1,
            ..key("1-ff00:0:110")
        };
        let e = k.import(&[key("1-ff00:0:110"), scmp.clone()]).unwrap_err();
        assert!(e.contains("key 1: protocol 1 is not ID-INT (2)"), "{e}");
        assert!(k.is_empty(), "all or nothing");
        assert_eq!(ImportedKeys::default().import(&[scmp]), Ok(1));
    }
}
