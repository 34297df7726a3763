//! The DRKey keys of the host: every AS's master secret from a keys directory, and the ID-INT
//! keys derived from them (idint-pktgen's [`KeyRing`]).
//!
//! `--keys DIR` holds one subdirectory per AS, named like its ISD-AS with `:` replaced by `_`
//! (`1-ff00_0_111/master0.key`, the `keys/` layout of a SCION AS configuration). The box has
//! no control service, so hosts derive every key from the master secrets. In a real
//! deployment a host gets them from its AS's control service instead: the level-1 keys
//! K(router AS -> local AS) through `crates/drkey-grpc` (`Level1Provider`), from which the
//! AS-to-host and host-to-host keys below follow the same way.

use std::collections::BTreeSet;
use std::path::Path;

use idint_pktgen::keys::KeyRing;
use idint_wire::crypto::Aes128Enc;
use idint_wire::{HostAddr, IsdAsn};

/// Default DRKey epoch length, seconds (a day, as the routers' default).
pub const DEFAULT_EPOCH_SECS: u32 = 86_400;

/// Why a key is not available.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// The keys directory could not be read.
    #[error("keys directory {dir}: {why}")]
    Dir {
        /// The directory.
        dir: String,
        /// What went wrong.
        why: String,
    },
    /// No master secret of this AS was loaded.
    #[error("no keys for AS {0}")]
    UnknownAs(IsdAsn),
    /// DRKey derivation failed.
    #[error("DRKey: {0}")]
    Derive(String),
}

/// The ASes' master secrets and the ID-INT keys derived from them (cached).
pub struct HostKeys {
    ring: KeyRing,
    known: BTreeSet<IsdAsn>,
}

/// The ISD-AS a keys subdirectory stands for (`1-ff00_0_111` is 1-ff00:0:111).
pub fn dir_name_ia(name: &str) -> Option<IsdAsn> {
    name.replace('_', ":").parse().ok()
}

/// The subdirectory name of `ia` in a keys directory.
pub fn ia_dir_name(ia: IsdAsn) -> String {
    ia.to_string().replace(':', "_")
}

impl HostKeys {
    /// No keys yet; DRKey epochs last `epoch_secs`.
    pub fn new(epoch_secs: u32) -> Self {
        HostKeys {
            ring: KeyRing::new(epoch_secs),
            known: BTreeSet::new(),
        }
    }

    /// Loads every `DIR/<ISD-AS>/master0.key`. Entries whose name is no ISD-AS are skipped;
    /// a directory without any AS is an error.
    pub fn load(dir: &Path, epoch_secs: u32) -> Result<Self, KeyError> {
        let err = |why: String| KeyError::Dir {
            dir: dir.display().to_string(),
            why,
        };
        let mut keys = HostKeys::new(epoch_secs);
        let rd = std::fs::read_dir(dir).map_err(|e| err(e.to_string()))?;
        for entry in rd {
            let entry = entry.map_err(|e| err(e.to_string()))?;
            let Some(ia) = entry.file_name().to_str().and_then(dir_name_ia) else {
                continue;
            };
            if !entry.path().is_dir() {
                continue;
            }
            keys.ring
                .insert_dir(ia, &entry.path())
                .map_err(|e| err(format!("{}: {e}", entry.path().display())))?;
            keys.known.insert(ia);
        }
        if keys.known.is_empty() {
            return Err(err("no <ISD-AS>/master0.key inside".into()));
        }
        Ok(keys)
    }

    /// Uses `master0` as `ia`'s secret.
    pub fn insert(&mut self, ia: IsdAsn, master0: &[u8]) {
        self.ring.insert(ia, master0);
        self.known.insert(ia);
    }

    /// The ASes whose secrets are known.
    pub fn ases(&self) -> impl Iterator<Item = IsdAsn> + '_ {
        self.known.iter().copied()
    }

    fn known(&self, ia: IsdAsn) -> Result<(), KeyError> {
        if self.known.contains(&ia) {
            Ok(())
        } else {
            Err(KeyError::UnknownAs(ia))
        }
    }

    /// The key of the source entry: host-to-host K(src:src_host -> verifier:verifier_host)
    /// of the DRKey epoch holding `t_s`.
    pub fn source_key(
        &mut self,
        src: (IsdAsn, HostAddr),
        verifier: (IsdAsn, HostAddr),
        t_s: u64,
    ) -> Result<Aes128Enc, KeyError> {
        self.known(src.0)?;
        self.ring
            .idint_host_key(src.0, src.1, verifier.0, verifier.1, t_s)
            .cloned()
            .map_err(|e| KeyError::Derive(e.to_string()))
    }

    /// The key of the entries a router of `router_as` wrote: AS-to-host
    /// K(router_as -> verifier:verifier_host) of the epoch holding `t_s`.
    pub fn router_key(
        &mut self,
        router_as: IsdAsn,
        verifier: (IsdAsn, HostAddr),
        t_s: u64,
    ) -> Result<Aes128Enc, KeyError> {
        self.known(router_as)?;
        self.ring
            .idint_as_host_key(router_as, verifier.0, verifier.1, t_s)
            .map_err(|e| KeyError::Derive(e.to_string()))
    }

    /// The hop-field MAC of `ia` over a 16-byte MAC input (for building paths in tests and
    /// generators).
    pub fn hop_mac(&mut self, ia: IsdAsn, input: &[u8; 16]) -> Result<[u8; 16], KeyError> {
        self.known(ia)?;
        Ok(self.ring.hop_mac(ia).compute(input))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directory_names_map_to_ases() {
        let ia: IsdAsn = "1-ff00:0:111".parse().unwrap();
        assert_eq!(ia_dir_name(ia), "1-ff00_0_111");
        assert_eq!(dir_name_ia("1-ff00_0_111"), Some(ia));
        assert_eq!(dir_name_ia("README.md"), None);
    }

    #[test]
    fn unknown_ases_have_no_keys() {
        let mut k = HostKeys::new(DEFAULT_EPOCH_SECS);
        let a: IsdAsn = "1-ff00:0:1".parse().unwrap();
        let h = HostAddr::V4("10.0.0.1".parse().unwrap());
        assert_eq!(
            k.router_key(a, (a, h), 0).err(),
            Some(KeyError::UnknownAs(a))
        );
        k.insert(a, &[7; 16]);
        assert!(k.router_key(a, (a, h), 1_763_800_000).is_ok());
        assert!(k.source_key((a, h), (a, h), 1_763_800_000).is_ok());
    }
}
