//! Level-1 key providers behind one trait: the local master secret (keys of the own AS) and
//! statically imported level-1 keys of other ASes. The third implementation, over the SCION
//! control service's gRPC API, lives in the `drkey-grpc` crate (it needs tokio and tonic).

use std::collections::HashMap;
use std::sync::Mutex;

use idint_wire::IsdAsn;

use crate::keyfile::{MAX_MASTER_LEN, decode_master_key};
use crate::{Epoch, Key, Protocol, level1, secret_value};

/// Why a provider could not give a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProviderError {
    /// This provider has no key for the request (e.g. another AS's key from the local one).
    NotFound {
        /// Source (key-issuing) AS.
        src: IsdAsn,
        /// Destination AS.
        dst: IsdAsn,
        /// Protocol.
        protocol: Protocol,
        /// Time asked for (Unix seconds).
        time: u64,
    },
    /// The key is being fetched (from a remote provider) and is not known yet: ask again
    /// later.
    Pending {
        /// Source (key-issuing) AS.
        src: IsdAsn,
        /// Time asked for (Unix seconds).
        time: u64,
    },
    /// The configuration or key file is unusable.
    Config(String),
}

impl std::fmt::Display for ProviderError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ProviderError::NotFound {
                src,
                dst,
                protocol,
                time,
            } => write!(
                f,
                "no level-1 key {src} -> {dst} for protocol {} at {time}",
                protocol.0
            ),
            ProviderError::Pending { src, time } => {
                write!(f, "the level-1 key of {src} at {time} is being fetched")
            }
            ProviderError::Config(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for ProviderError {}

/// Something that knows level-1 keys K(src -> dst) for a protocol at a time.
pub trait Level1Provider: Send + Sync {
    /// The level-1 key valid at `time` (Unix seconds) and its epoch.
    fn level1(
        &self,
        protocol: Protocol,
        src: IsdAsn,
        dst: IsdAsn,
        time: u64,
    ) -> Result<(Epoch, Key), ProviderError>;
}

/// Derives the own AS's keys from its master secret (`keys/master0.key`), with fixed-length
/// epochs aligned to the Unix epoch. Secret values are computed once per (protocol, epoch)
/// (PBKDF2 is slow) and kept.
pub struct LocalProvider {
    local: IsdAsn,
    secret: Vec<u8>,
    epoch_secs: u32,
    svs: Mutex<HashMap<(Protocol, Epoch), Key>>,
}

impl LocalProvider {
    /// A provider for AS `local` with `secret` and epochs of `epoch_secs` seconds
    /// (6 minutes ..= 3 days).
    pub fn new(local: IsdAsn, secret: &[u8], epoch_secs: u32) -> Result<Self, ProviderError> {
        if !(crate::epoch::MIN_DURATION..=crate::epoch::MAX_DURATION).contains(&epoch_secs) {
            return Err(ProviderError::Config(format!(
                "epoch length {epoch_secs} s outside 360 s ..= 3 days"
            )));
        }
        if secret.is_empty() || secret.len() > crate::MAX_SECRET_LEN {
            return Err(ProviderError::Config(
                "master secret must be 1..=64 bytes".into(),
            ));
        }
        Ok(LocalProvider {
            local,
            secret: secret.to_vec(),
            epoch_secs,
            svs: Mutex::new(HashMap::new()),
        })
    }

    /// Reads a `master0.key` file.
    pub fn from_key_file(
        local: IsdAsn,
        path: &std::path::Path,
        epoch_secs: u32,
    ) -> Result<Self, ProviderError> {
        let content = std::fs::read(path)
            .map_err(|e| ProviderError::Config(format!("{}: {e}", path.display())))?;
        let mut buf = [0u8; MAX_MASTER_LEN];
        let n = decode_master_key(&content, &mut buf)
            .map_err(|e| ProviderError::Config(format!("{}: {e}", path.display())))?;
        Self::new(local, &buf[..n], epoch_secs)
    }

    fn sv(&self, protocol: Protocol, epoch: Epoch) -> Result<Key, ProviderError> {
        // The map is only a cache of values that can be derived again: if a panic ever
        // poisoned the lock, start from an empty cache instead of failing every later call.
        let mut svs = self.svs.lock().unwrap_or_else(|poisoned| {
            let mut svs = poisoned.into_inner();
            svs.clear();
            self.svs.clear_poison();
            svs
        });
        if let Some(k) = svs.get(&(protocol, epoch)) {
            return Ok(k.clone());
        }
        let k = secret_value(&self.secret, protocol, epoch)
            .map_err(|e| ProviderError::Config(e.to_string()))?;
        // Drop this protocol's values of epochs that ended more than two epochs before this
        // one began (in u64: epochs may end as late as 2106, where u32 sums overflow).
        let horizon = 2 * u64::from(self.epoch_secs);
        svs.retain(|(p, e), _| {
            *p != protocol || u64::from(e.end) + horizon >= u64::from(epoch.begin)
        });
        svs.insert((protocol, epoch), k.clone());
        Ok(k)
    }
}

impl Level1Provider for LocalProvider {
    fn level1(
        &self,
        protocol: Protocol,
        src: IsdAsn,
        dst: IsdAsn,
        time: u64,
    ) -> Result<(Epoch, Key), ProviderError> {
        if src != self.local {
            return Err(ProviderError::NotFound {
                src,
                dst,
                protocol,
                time,
            });
        }
        let epoch = Epoch::containing(time, self.epoch_secs).ok_or(ProviderError::NotFound {
            src,
            dst,
            protocol,
            time,
        })?;
        Ok((epoch, level1(&self.sv(protocol, epoch)?, dst)))
    }
}

/// One imported level-1 key (JSON file format: an array of these objects).
#[derive(Debug, serde::Deserialize)]
struct StaticEntry {
    src_ia: String,
    dst_ia: String,
    protocol: u16,
    epoch_begin: u32,
    epoch_end: u32,
    key_hex: String,
}

/// Level-1 keys of other ASes imported from a JSON file:
/// `[{"src_ia": "1-ff00:0:111", "dst_ia": "1-ff00:0:110", "protocol": 2,
///    "epoch_begin": 1704067200, "epoch_end": 1704153600, "key_hex": "00..0f"}]`.
pub struct StaticProvider {
    keys: HashMap<(Protocol, IsdAsn, IsdAsn), Vec<(Epoch, Key)>>,
}

impl StaticProvider {
    /// Parses the JSON text of a key file.
    pub fn from_json(text: &str) -> Result<Self, ProviderError> {
        let entries: Vec<StaticEntry> = serde_json::from_str(text)
            .map_err(|e| ProviderError::Config(format!("static key file: {e}")))?;
        let mut keys: HashMap<_, Vec<(Epoch, Key)>> = HashMap::new();
        for (i, e) in entries.iter().enumerate() {
            let bad =
                |what: &str| ProviderError::Config(format!("static key file, entry {i}: {what}"));
            let src: IsdAsn = e.src_ia.parse().map_err(|_| bad("bad src_ia"))?;
            let dst: IsdAsn = e.dst_ia.parse().map_err(|_| bad("bad dst_ia"))?;
            let epoch = Epoch::new(e.epoch_begin, e.epoch_end)
                .ok_or_else(|| bad("epoch_end <= epoch_begin"))?;
            let raw =
                decode_hex16(&e.key_hex).ok_or_else(|| bad("key_hex is not 32 hex digits"))?;
            keys.entry((Protocol(e.protocol), src, dst))
                .or_default()
                .push((epoch, Key::from_bytes(raw)));
        }
        Ok(StaticProvider { keys })
    }

    /// Reads a key file.
    pub fn from_file(path: &std::path::Path) -> Result<Self, ProviderError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ProviderError::Config(format!("{}: {e}", path.display())))?;
        Self::from_json(&text)
    }
}

fn decode_hex16(s: &str) -> Option<[u8; 16]> {
    let b = s.as_bytes();
    if b.len() != 32 {
        return None;
    }
    let mut out = [0u8; 16];
    for (i, o) in out.iter_mut().enumerate() {
        let hi = (b[2 * i] as char).to_digit(16)?;
        let lo = (b[2 * i + 1] as char).to_digit(16)?;
        *o = (hi * 16 + lo) as u8;
    }
    Some(out)
}

impl Level1Provider for StaticProvider {
    fn level1(
        &self,
        protocol: Protocol,
        src: IsdAsn,
        dst: IsdAsn,
        time: u64,
    ) -> Result<(Epoch, Key), ProviderError> {
        self.keys
            .get(&(protocol, src, dst))
            .and_then(|v| v.iter().find(|(e, _)| e.contains(time)))
            .map(|(e, k)| (*e, k.clone()))
            .ok_or(ProviderError::NotFound {
                src,
                dst,
                protocol,
                time,
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_provider_survives_epochs_near_2106() {
        let ia: IsdAsn = "1-ff00:0:110".parse().unwrap();
        let p = LocalProvider::new(ia, &[7u8; 16], 360).unwrap();
        let (late, _) = p.level1(Protocol::IDINT, ia, ia, 4_294_966_700).unwrap();
        assert_eq!(late, Epoch::containing(4_294_966_700, 360).unwrap());
        // An earlier epoch afterwards: evicting the late value must not overflow (it used to
        // panic under the lock and poison it for good).
        let (now, k1) = p.level1(Protocol::IDINT, ia, ia, 1_700_000_000).unwrap();
        assert_eq!(now, Epoch::containing(1_700_000_000, 360).unwrap());
        let (_, k2) = p.level1(Protocol::IDINT, ia, ia, 1_700_000_001).unwrap();
        assert_eq!(k1, k2);
        assert!(
            p.level1(Protocol::IDINT, ia, ia, u64::from(u32::MAX))
                .is_err()
        );
    }

    #[test]
    fn a_poisoned_cache_is_reset() {
        let ia: IsdAsn = "1-ff00:0:110".parse().unwrap();
        let p = LocalProvider::new(ia, &[7u8; 16], 360).unwrap();
        let (_, k1) = p.level1(Protocol::IDINT, ia, ia, 1_700_000_000).unwrap();
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _guard = p.svs.lock();
            panic!("poison the lock");
        }));
        assert!(r.is_err());
        assert!(p.svs.is_poisoned());
        let (_, k2) = p.level1(Protocol::IDINT, ia, ia, 1_700_000_000).unwrap();
        assert_eq!(k1, k2);
        assert!(!p.svs.is_poisoned());
    }
}
