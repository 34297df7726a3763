//! An AS's master secrets from its `keys/` directory (`master0.key`, `master1.key`).

use std::fmt;
use std::path::{Path, PathBuf};

use drkey::keyfile::{MAX_MASTER_LEN, decode_master_key};

use crate::error::TopologyError;

/// The master secrets of an AS. `master0` keys the hop fields (see [`MasterKeys::forwarding_key`])
/// and DRKey secret values; `master1` is the rollover secret and optional.
#[derive(Clone, PartialEq, Eq)]
pub struct MasterKeys {
    /// Decoded `master0.key`.
    pub master0: Vec<u8>,
    /// Decoded `master1.key`, if the file exists.
    pub master1: Option<Vec<u8>>,
}

impl fmt::Debug for MasterKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("MasterKeys(<hidden>)")
    }
}

impl MasterKeys {
    /// Reads `dir/master0.key` (required) and `dir/master1.key` (optional; a present but
    /// invalid file is an error).
    pub fn load(dir: impl AsRef<Path>) -> Result<Self, TopologyError> {
        let dir = dir.as_ref();
        let master0 = read_key(&dir.join("master0.key"))?;
        let p1 = dir.join("master1.key");
        let master1 = if p1.exists() {
            Some(read_key(&p1)?)
        } else {
            None
        };
        Ok(MasterKeys { master0, master1 })
    }

    /// Keys from a raw `master0` secret (e.g. a deterministic test key).
    pub fn from_master0(master0: &[u8]) -> Self {
        MasterKeys {
            master0: master0.to_vec(),
            master1: None,
        }
    }

    /// The hop-field forwarding key derived from `master0` (PBKDF2, as the SCION router).
    pub fn forwarding_key(&self) -> [u8; 16] {
        scion_dp::hop_mac::forwarding_key(&self.master0)
    }
}

fn read_key(file: &Path) -> Result<Vec<u8>, TopologyError> {
    let content = std::fs::read(file).map_err(|source| TopologyError::Io {
        file: PathBuf::from(file),
        source,
    })?;
    let mut out = [0u8; MAX_MASTER_LEN];
    let n = decode_master_key(&content, &mut out).map_err(|reason| TopologyError::Key {
        file: PathBuf::from(file),
        reason,
    })?;
    Ok(out[..n].to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loads_and_rejects() {
        let dir = std::env::temp_dir().join(format!("scion-topology-keys-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("master0.key"), "AAECAwQFBgcICQoLDA0ODw==\n").unwrap();
        let _ = std::fs::remove_file(dir.join("master1.key"));
        let k = MasterKeys::load(&dir).unwrap();
        assert_eq!(k.master0, (0u8..16).collect::<Vec<_>>());
        assert!(k.master1.is_none());
        assert_eq!(
            k.forwarding_key(),
            scion_dp::hop_mac::forwarding_key(&k.master0)
        );
        std::fs::write(dir.join("master1.key"), "not base64!").unwrap();
        let e = MasterKeys::load(&dir).unwrap_err();
        assert!(matches!(e, TopologyError::Key { .. }), "{e}");
        assert!(e.to_string().contains("master1.key"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
        let e = MasterKeys::load(&dir).unwrap_err();
        assert!(matches!(e, TopologyError::Io { .. }), "{e}");
        assert!(e.to_string().contains("master0.key"), "{e}");
    }
}
