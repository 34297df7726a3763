//! DRKey (dynamically recreatable keys) derivation, byte-compatible with SCION
//! (`scion-dp.md` §4, `idint.md` §10). `no_std`, no allocation.
//!
//! * Level 0 — secret value SV(protocol, epoch) = PBKDF2-HMAC-SHA256 over
//!   `u64(len(secret)) | secret | u16(protocol) | u32(begin) | u32(end)`, salt
//!   `Derive DRKey Key`, 1000 iterations ([`secret_value`]).
//! * Higher levels use the AES-128 CBC-MAC PRF shared with ID-INT
//!   ([`idint_wire::crypto::cbc_mac`]): level 1 AS→AS ([`level1`]), level 2 AS→host and host→AS
//!   in the protocol-specific ([`as_host`], [`host_as`]) and generic ([`generic_as_host`],
//!   [`generic_host_as`]) forms, level 3 host→host ([`host_host`]).
//! * Keys ([`Key`]) never print their bytes and are zeroed when dropped; comparisons are
//!   constant-time.
#![cfg_attr(not(feature = "std"), no_std)]
#![forbid(unsafe_code)]

#[cfg(feature = "std")]
pub mod cache;
pub mod epoch;
pub mod keyfile;
#[cfg(feature = "std")]
pub mod provider;

use core::fmt;

use idint_wire::crypto::{Aes128Enc, aes128, cbc_mac, ct_eq};
use idint_wire::{HostAddr, IsdAsn};
use zeroize::Zeroize;

pub use epoch::Epoch;

/// A 16-byte DRKey. `Debug` and `Display` do not show the bytes.
#[derive(Clone)]
pub struct Key([u8; 16]);

impl Key {
    /// Wraps raw key bytes.
    pub const fn from_bytes(b: [u8; 16]) -> Self {
        Key(b)
    }
    /// The raw key bytes (handle with care).
    pub fn as_bytes(&self) -> &[u8; 16] {
        &self.0
    }
    /// The AES-128 key schedule for this key (build once, reuse for many MACs).
    pub fn cipher(&self) -> Aes128Enc {
        aes128(&self.0)
    }
}

impl PartialEq for Key {
    fn eq(&self, other: &Self) -> bool {
        ct_eq(&self.0, &other.0)
    }
}
impl Eq for Key {}

impl Drop for Key {
    fn drop(&mut self) {
        self.0.zeroize();
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Key(<redacted>)")
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted key>")
    }
}

/// A DRKey protocol identifier.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "std", derive(serde::Deserialize))]
pub struct Protocol(pub u16);

impl Protocol {
    /// Generic derivation (level-1 keys of the generic hierarchy).
    pub const GENERIC: Protocol = Protocol(0);
    /// SCMP authentication (SPAO on SCMP).
    pub const SCMP: Protocol = Protocol(1);
    /// ID-INT telemetry.
    pub const IDINT: Protocol = Protocol(2);
}

/// Key types: the first byte of every PRF input above level 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum KeyType {
    /// AS to AS (level 1).
    AsAs = 0,
    /// AS to host.
    AsHost = 1,
    /// Host to AS.
    HostAs = 2,
    /// Host to host.
    HostHost = 3,
}

/// PBKDF2 salt of secret values.
pub const SV_SALT: &[u8] = b"Derive DRKey Key";
/// PBKDF2 iterations of secret values.
pub const SV_ITERATIONS: u32 = 1000;
/// Longest AS secret accepted by [`secret_value`].
pub const MAX_SECRET_LEN: usize = 64;

/// Why a derivation could not be done.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeriveError {
    /// The AS secret is empty or longer than [`MAX_SECRET_LEN`].
    SecretLength,
    /// The host address type cannot be used in a key derivation (only IPv4, IPv6, SVC).
    HostType,
}

impl fmt::Display for DeriveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeriveError::SecretLength => write!(f, "AS secret must be 1..={MAX_SECRET_LEN} bytes"),
            DeriveError::HostType => f.write_str("host address type not usable for DRKey"),
        }
    }
}

impl core::error::Error for DeriveError {}

/// The PBKDF2 password of a secret value, written to `out`; returns its length.
pub fn sv_password(
    secret: &[u8],
    protocol: Protocol,
    epoch: Epoch,
    out: &mut [u8; 8 + MAX_SECRET_LEN + 10],
) -> Result<usize, DeriveError> {
    if secret.is_empty() || secret.len() > MAX_SECRET_LEN {
        return Err(DeriveError::SecretLength);
    }
    let n = secret.len();
    out[..8].copy_from_slice(&(n as u64).to_be_bytes());
    out[8..8 + n].copy_from_slice(secret);
    out[8 + n..10 + n].copy_from_slice(&protocol.0.to_be_bytes());
    out[10 + n..14 + n].copy_from_slice(&epoch.begin.to_be_bytes());
    out[14 + n..18 + n].copy_from_slice(&epoch.end.to_be_bytes());
    Ok(18 + n)
}

/// Level 0: the secret value of `protocol` for `epoch`, from the AS secret (normally the
/// decoded `master0.key`).
pub fn secret_value(secret: &[u8], protocol: Protocol, epoch: Epoch) -> Result<Key, DeriveError> {
    let mut pw = [0u8; 8 + MAX_SECRET_LEN + 10];
    let n = sv_password(secret, protocol, epoch, &mut pw)?;
    let mut key = [0u8; 16];
    pbkdf2::pbkdf2_hmac::<sha2::Sha256>(&pw[..n], SV_SALT, SV_ITERATIONS, &mut key);
    pw.zeroize();
    Ok(Key(key))
}

/// PRF input of a level-1 key: `0 | dst IA | zero padding` (16 bytes).
pub fn level1_input(dst: IsdAsn) -> [u8; 16] {
    let mut b = [0u8; 16];
    b[0] = KeyType::AsAs as u8;
    b[1..9].copy_from_slice(&dst.to_bytes());
    b
}

/// Level 1, AS→AS key K(A→B) from A's secret value (same for specific and generic
/// hierarchies; the secret value's protocol decides).
pub fn level1(sv: &Key, dst: IsdAsn) -> Key {
    Key(cbc_mac(&sv.cipher(), &level1_input(dst)))
}

/// PRF input `type | [protocol(2)] | nibble | host`, zero padded to 32 bytes; returns the
/// buffer and the number of meaningful bytes (the PRF zero-fills to a block boundary anyway).
/// An IPv4-mapped IPv6 host (`::ffff:a.b.c.d`) is the IPv4 host `a.b.c.d`, as SCION packs
/// host addresses for derivations (`slayers.PackAddr` unmaps them).
pub fn level2_input(
    kind: KeyType,
    protocol: Option<Protocol>,
    host: &HostAddr,
) -> Result<([u8; 32], usize), DeriveError> {
    let unmapped;
    let host = match host {
        HostAddr::V6(a) => match a.to_ipv4_mapped() {
            Some(v4) => {
                unmapped = HostAddr::V4(v4);
                &unmapped
            }
            None => host,
        },
        _ => host,
    };
    if !host.addr_type().is_known() {
        return Err(DeriveError::HostType);
    }
    let mut b = [0u8; 32];
    b[0] = kind as u8;
    let mut at = 1;
    if let Some(p) = protocol {
        b[1..3].copy_from_slice(&p.0.to_be_bytes());
        at = 3;
    }
    b[at] = host.addr_type().nibble();
    let (h, n) = host.to_bytes();
    b[at + 1..at + 1 + n].copy_from_slice(&h[..n]);
    Ok((b, at + 1 + n))
}

fn derive(
    parent: &Aes128Enc,
    kind: KeyType,
    protocol: Option<Protocol>,
    host: &HostAddr,
) -> Result<Key, DeriveError> {
    let (input, n) = level2_input(kind, protocol, host)?;
    Ok(Key(cbc_mac(parent, &input[..n])))
}

/// Protocol-specific level 2, AS→host K(A→B:H) from the level-1 key K(A→B) (a router's ID-INT
/// key for verifier host H).
pub fn as_host(level1: &Aes128Enc, host: &HostAddr) -> Result<Key, DeriveError> {
    derive(level1, KeyType::AsHost, None, host)
}

/// Protocol-specific level 2, host→AS K(A:H→B) from K(A→B).
pub fn host_as(level1: &Aes128Enc, host: &HostAddr) -> Result<Key, DeriveError> {
    derive(level1, KeyType::HostAs, None, host)
}

/// Generic level 2, AS→host, with the protocol inside the PRF input.
pub fn generic_as_host(
    level1: &Aes128Enc,
    protocol: Protocol,
    host: &HostAddr,
) -> Result<Key, DeriveError> {
    derive(level1, KeyType::AsHost, Some(protocol), host)
}

/// Generic level 2, host→AS.
pub fn generic_host_as(
    level1: &Aes128Enc,
    protocol: Protocol,
    host: &HostAddr,
) -> Result<Key, DeriveError> {
    derive(level1, KeyType::HostAs, Some(protocol), host)
}

/// Level 3, host→host K(A:HA→B:HB) from the host→AS key K(A:HA→B) (same layout for the
/// specific and generic hierarchies).
pub fn host_host(host_as_key: &Aes128Enc, dst_host: &HostAddr) -> Result<Key, DeriveError> {
    derive(host_as_key, KeyType::HostHost, None, dst_host)
}

#[cfg(test)]
mod tests {
    #[cfg(not(feature = "std"))]
    extern crate std;
    use super::*;
    use std::format;

    #[test]
    fn keys_never_print_their_bytes() {
        let k = Key::from_bytes([0xab; 16]);
        assert!(!format!("{k:?}{k}").contains("ab"));
        assert_eq!(k, Key::from_bytes([0xab; 16]));
        assert_ne!(k, Key::from_bytes([0xac; 16]));
    }

    #[test]
    fn bad_inputs_are_errors() {
        let e = Epoch::new(0, 1).unwrap();
        assert_eq!(
            secret_value(&[], Protocol::IDINT, e).unwrap_err(),
            DeriveError::SecretLength
        );
        assert_eq!(
            secret_value(&[0; 65], Protocol::IDINT, e).unwrap_err(),
            DeriveError::SecretLength
        );
        let odd = HostAddr::parse(idint_wire::AddrType::from_nibble(1), &[0; 8]).unwrap();
        let k = Key::from_bytes([1; 16]).cipher();
        assert_eq!(as_host(&k, &odd).unwrap_err(), DeriveError::HostType);
    }
}
