//! SCION's `keys/master0.key` format: the base64 of the AS master secret, optionally followed
//! by a newline. Decoding only; reading the file is the caller's job.

use core::fmt;

/// Longest master secret accepted.
pub const MAX_MASTER_LEN: usize = 64;

/// Why a master key file was rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyFileError {
    /// The content is not standard base64 (position of the first bad character).
    NotBase64(usize),
    /// The decoded secret is empty or longer than [`MAX_MASTER_LEN`] bytes.
    Length(usize),
    /// Not the canonical base64 of the secret: the unused low bits of the last character
    /// (at this byte) are not zero, so another text decodes to the same secret (a corrupted
    /// or hand-edited key?).
    NonCanonical(usize),
}

impl fmt::Display for KeyFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyFileError::NotBase64(at) => write!(f, "master key: invalid base64 at byte {at}"),
            KeyFileError::NonCanonical(at) => write!(
                f,
                "master key: non-canonical base64: the unused low bits of the character at \
                 byte {at} are not zero (a corrupted or hand-edited key?)"
            ),
            KeyFileError::Length(n) => {
                write!(
                    f,
                    "master key: {n} bytes decoded, expected 1..={MAX_MASTER_LEN}"
                )
            }
        }
    }
}

impl core::error::Error for KeyFileError {}

fn sextet(c: u8) -> Option<u8> {
    Some(match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => return None,
    })
}

/// Decodes the content of a master key file into `out`; returns the secret length.
pub fn decode_master_key(
    content: &[u8],
    out: &mut [u8; MAX_MASTER_LEN],
) -> Result<usize, KeyFileError> {
    let text = content.trim_ascii();
    let body_len = text.iter().rposition(|&c| c != b'=').map_or(0, |p| p + 1);
    let pad = text.len() - body_len;
    if pad > 2 || !text.len().is_multiple_of(4) {
        return Err(KeyFileError::NotBase64(body_len));
    }
    let mut acc: u32 = 0;
    let mut bits = 0;
    let mut n = 0;
    for (i, &c) in text[..body_len].iter().enumerate() {
        let v = sextet(c).ok_or(KeyFileError::NotBase64(i))?;
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            if n == MAX_MASTER_LEN {
                return Err(KeyFileError::Length(n + 1));
            }
            out[n] = (acc >> bits) as u8;
            n += 1;
        }
    }
    if n == 0 {
        return Err(KeyFileError::Length(0));
    }
    // With one `=` the last character carries 2 unused bits, with two `=` 4: they must be 0.
    if acc & ((1 << bits) - 1) != 0 {
        return Err(KeyFileError::NonCanonical(body_len - 1));
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_and_rejects() {
        let mut out = [0u8; MAX_MASTER_LEN];
        let n = decode_master_key(b"V9SOOHqV4KdAL6utGnvEtA==\n", &mut out).unwrap();
        assert_eq!(
            &out[..n],
            &[
                0x57, 0xd4, 0x8e, 0x38, 0x7a, 0x95, 0xe0, 0xa7, 0x40, 0x2f, 0xab, 0xad, 0x1a, 0x7b,
                0xc4, 0xb4
            ]
        );
        assert_eq!(
            decode_master_key(b"V9SO*HqV", &mut out),
            Err(KeyFileError::NotBase64(4))
        );
        assert!(decode_master_key(b"abc", &mut out).is_err());
        assert_eq!(
            decode_master_key(b"", &mut out),
            Err(KeyFileError::Length(0))
        );
        assert!(decode_master_key(&[b'A'; 100], &mut out).is_err());
        // "Dw==" is canonical; "Dx==" and "Dw9=" decode to the same bytes with unused bits set.
        assert_eq!(
            decode_master_key(b"AAECAwQFBgcICQoLDA0ODw==", &mut out),
            Ok(16)
        );
        assert_eq!(
            decode_master_key(b"AAECAwQFBgcICQoLDA0ODx==", &mut out),
            Err(KeyFileError::NonCanonical(21))
        );
        assert_eq!(
            decode_master_key(b"AAECAwQFBgcICQoLDA0ODw8=", &mut out),
            Ok(17)
        );
        assert_eq!(
            decode_master_key(b"AAECAwQFBgcICQoLDA0ODw9=", &mut out),
            Err(KeyFileError::NonCanonical(22))
        );
    }
}
