//! The master secrets of every AS whose hop fields or DRKeys the generator builds.
//!
//! The router under test's AS uses its own `keys/master0.key`. Any other AS uses the keys
//! directory given for it ([`KeyRing::insert_dir`]), else a deterministic secret:
//! the first 16 bytes of `SHA-256("idint-pktgen master secret " || ISD-AS text)`
//! ([`deterministic_secret`]). The router under test only verifies its own hop fields, so the
//! neighbours' keys matter only to whoever checks the rest of the path.

use std::collections::HashMap;
use std::path::Path;

use drkey::provider::{Level1Provider, LocalProvider};
use drkey::{Key, Protocol};
use idint_wire::crypto::Aes128Enc;
use idint_wire::{HostAddr, IsdAsn};
use scion_dp::hop_mac::HopMac;
use scion_topology::MasterKeys;
use sha2::{Digest, Sha256};

use crate::GenError;

/// The deterministic master secret of an AS without a keys directory.
pub fn deterministic_secret(ia: IsdAsn) -> [u8; 16] {
    let mut h = Sha256::new();
    h.update(b"idint-pktgen master secret ");
    h.update(ia.to_string().as_bytes());
    let d = h.finalize();
    let mut out = [0u8; 16];
    out.copy_from_slice(&d[..16]);
    out
}

/// One AS's secrets and prepared hop-field MAC.
struct AsKeys {
    master: Vec<u8>,
    hop: HopMac,
}

/// Master secrets per AS, with the hop-field MACs and DRKey level-1 keys derived on first use
/// (PBKDF2 is slow; everything is cached).
pub struct KeyRing {
    ases: HashMap<IsdAsn, AsKeys>,
    epoch_secs: u32,
    /// Level-1 keys by (src, dst, epoch number).
    level1: HashMap<(IsdAsn, IsdAsn, u64), Key>,
    /// Host-to-host keys by (src, src host, dst, dst host, epoch number).
    host: HashMap<(IsdAsn, HostAddr, IsdAsn, HostAddr, u64), Aes128Enc>,
}

impl KeyRing {
    /// An empty ring; DRKey epochs last `epoch_secs` seconds.
    pub fn new(epoch_secs: u32) -> Self {
        KeyRing {
            ases: HashMap::new(),
            epoch_secs,
            level1: HashMap::new(),
            host: HashMap::new(),
        }
    }

    /// Uses `master0` as the secret of `ia`.
    pub fn insert(&mut self, ia: IsdAsn, master0: &[u8]) {
        let hop = HopMac::new(&scion_dp::hop_mac::forwarding_key(master0));
        self.ases.insert(
            ia,
            AsKeys {
                master: master0.to_vec(),
                hop,
            },
        );
    }

    /// Reads `dir/master0.key` as the secret of `ia`.
    pub fn insert_dir(&mut self, ia: IsdAsn, dir: &Path) -> Result<(), GenError> {
        let k = MasterKeys::load(dir)?;
        self.insert(ia, &k.master0);
        Ok(())
    }

    /// Whether `ia`'s secret was given ([`Self::insert`] or [`Self::insert_dir`]) or already
    /// derived deterministically.
    pub fn contains(&self, ia: IsdAsn) -> bool {
        self.ases.contains_key(&ia)
    }

    /// The DRKey epoch length, seconds.
    pub fn epoch_secs(&self) -> u32 {
        self.epoch_secs
    }

    fn entry(&mut self, ia: IsdAsn) -> &AsKeys {
        if !self.ases.contains_key(&ia) {
            self.insert(ia, &deterministic_secret(ia));
        }
        &self.ases[&ia]
    }

    /// The hop-field MAC of `ia`.
    pub fn hop_mac(&mut self, ia: IsdAsn) -> &HopMac {
        &self.entry(ia).hop
    }

    /// The level-1 key K(src -> dst) for ID-INT at `now_s`, derived from `src`'s secret.
    fn idint_level1(&mut self, src: IsdAsn, dst: IsdAsn, now_s: u64) -> Result<&Key, GenError> {
        let epoch = now_s / u64::from(self.epoch_secs.max(1));
        if !self.level1.contains_key(&(src, dst, epoch)) {
            let master = self.entry(src).master.clone();
            let p = LocalProvider::new(src, &master, self.epoch_secs)
                .map_err(|e| GenError::Key(e.to_string()))?;
            let (_, l1) = p
                .level1(Protocol::IDINT, src, dst, now_s)
                .map_err(|e| GenError::Key(e.to_string()))?;
            self.level1.insert((src, dst, epoch), l1);
        }
        Ok(&self.level1[&(src, dst, epoch)])
    }

    /// The ID-INT (protocol 2) AS-to-host key K(router_as -> dst:dst_host) at `now_s`,
    /// derived from `router_as`'s secret: the key a router of `router_as` authenticates (and
    /// encrypts) its entries with for the verifier `dst_host` of `dst`.
    pub fn idint_as_host_key(
        &mut self,
        router_as: IsdAsn,
        dst: IsdAsn,
        dst_host: HostAddr,
        now_s: u64,
    ) -> Result<Aes128Enc, GenError> {
        let l1 = self.idint_level1(router_as, dst, now_s)?;
        let k =
            drkey::as_host(&l1.cipher(), &dst_host).map_err(|e| GenError::Key(e.to_string()))?;
        Ok(k.cipher())
    }

    /// The ID-INT (protocol 2) host-to-host key K(src:src_host -> dst:dst_host) at time
    /// `now_s`, derived from `src`'s secret: level 1 K(src -> dst), host-to-AS for
    /// `src_host`, host-to-host for `dst_host`.
    pub fn idint_host_key(
        &mut self,
        src: IsdAsn,
        src_host: HostAddr,
        dst: IsdAsn,
        dst_host: HostAddr,
        now_s: u64,
    ) -> Result<&Aes128Enc, GenError> {
        // Epochs are aligned to the Unix epoch (as `LocalProvider` has them).
        let epoch = now_s / u64::from(self.epoch_secs.max(1));
        let k = (src, src_host, dst, dst_host, epoch);
        if !self.host.contains_key(&k) {
            let l1 = self.idint_level1(src, dst, now_s)?;
            let ha = drkey::host_as(&l1.cipher(), &src_host)
                .map_err(|e| GenError::Key(e.to_string()))?;
            let hh = drkey::host_host(&ha.cipher(), &dst_host)
                .map_err(|e| GenError::Key(e.to_string()))?;
            self.host.insert(k, hh.cipher());
        }
        Ok(&self.host[&k])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_keys_follow_the_epoch_of_the_time_asked() {
        let (a, b): (IsdAsn, IsdAsn) =
            ("1-ff00:0:1".parse().unwrap(), "1-ff00:0:2".parse().unwrap());
        let (ha, hb) = (
            HostAddr::V4("10.0.0.1".parse().unwrap()),
            HostAddr::V4("10.0.0.2".parse().unwrap()),
        );
        let epoch = 86_400u64;
        let t = 1_763_800_000u64 / epoch * epoch + 100;
        // A key's fingerprint: its CBC-MAC of a zero block.
        let key_bytes = |ring: &mut KeyRing, now_s: u64| {
            let k = ring.idint_host_key(a, ha, b, hb, now_s).unwrap();
            idint_wire::crypto::cbc_mac(k, &[0; 16])
        };
        let mut ring = KeyRing::new(epoch as u32);
        let first = key_bytes(&mut ring, t);
        assert_eq!(key_bytes(&mut ring, t + 1000), first, "same epoch");
        let next = key_bytes(&mut ring, t + epoch);
        assert_ne!(next, first, "the next epoch's key, not the cached one");
        // A fresh ring asked for the next epoch first agrees.
        assert_eq!(key_bytes(&mut KeyRing::new(epoch as u32), t + epoch), next);
    }

    #[test]
    fn deterministic_and_distinct() {
        let a: IsdAsn = "1-ff00:0:1".parse().unwrap();
        let b: IsdAsn = "1-ff00:0:2".parse().unwrap();
        assert_eq!(deterministic_secret(a), deterministic_secret(a));
        assert_ne!(deterministic_secret(a), deterministic_secret(b));
        let mut r = KeyRing::new(86400);
        let block = [3u8; 16];
        let m1 = r.hop_mac(a).compute(&block);
        let expect = HopMac::new(&scion_dp::hop_mac::forwarding_key(&deterministic_secret(a)))
            .compute(&block);
        assert_eq!(m1, expect);
        r.insert(a, &[9; 16]);
        assert_ne!(r.hop_mac(a).compute(&block), expect);
    }
}
