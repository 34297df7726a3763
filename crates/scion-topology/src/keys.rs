//! An AS's master secrets from its `keys/` directory (`master0.key`, `master1.key`).

use std::fmt;
use std::path::{Path, PathBuf};

use drkey::keyfile::{MAX_MASTER_LEN, decode_master_key};

use crate::error::TopologyError;

/// The master secrets of an AS. `master0` keys the hop fields (with the feature
/// `router-config`, `MasterKeys::forwarding_key` derives that key) and DRKey secret values; `master1` is the rollover secret and optional.
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

/// Shortest master secret accepted, in bytes. SCION itself only refuses an empty secret, but
/// generates 16 random bytes, and everything derived from the secret (hop-field and DRKey keys)
/// is a 128-bit key: a shorter secret would make those keys guessable.
pub const MIN_MASTER_LEN: usize = 16;

/// Largest master key file read, in bytes: the base64 of the longest secret (64 bytes) is 88
/// characters; anything far larger is not a key file and is refused without reading it.
pub const MAX_KEY_FILE_LEN: u64 = 1024;

impl MasterKeys {
    /// Reads `dir/master0.key` (required) and `dir/master1.key` (optional: absent is fine, but
    /// a present file, including a symbolic link to a missing file, must be valid).
    ///
    /// A key file must be a regular file (or a symbolic link to one) of at most
    /// [`MAX_KEY_FILE_LEN`] bytes holding the canonical base64 of a secret of
    /// [`MIN_MASTER_LEN`]`..=`[`MAX_MASTER_LEN`] bytes: leading and trailing whitespace is
    /// allowed, padding is required, and the unused bits of the last character must be zero
    /// (otherwise several texts would decode to one secret, e.g. a corrupted copy).
    pub fn load(dir: impl AsRef<Path>) -> Result<Self, TopologyError> {
        let dir = dir.as_ref();
        let master0 = read_key(&dir.join("master0.key"))?;
        let p1 = dir.join("master1.key");
        // `symlink_metadata`, not `exists`: a dangling link is reported, not taken as absent.
        let master1 = match std::fs::symlink_metadata(&p1) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            _ => Some(read_key(&p1)?),
        };
        Ok(MasterKeys { master0, master1 })
    }

    /// Keys from a raw `master0` secret (e.g. a deterministic test key). The secret is used as
    /// given: the checks of [`MasterKeys::load`] apply to files only.
    pub fn from_master0(master0: &[u8]) -> Self {
        MasterKeys {
            master0: master0.to_vec(),
            master1: None,
        }
    }
}

fn key_file_error(file: &Path, reason: impl Into<String>) -> TopologyError {
    TopologyError::KeyFile {
        file: PathBuf::from(file),
        reason: reason.into(),
    }
}

/// What kind of non-regular file `t` is, for messages.
fn file_kind(t: std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return "a FIFO (named pipe)";
        }
        if t.is_socket() {
            return "a socket";
        }
        if t.is_char_device() {
            return "a character device";
        }
        if t.is_block_device() {
            return "a block device";
        }
    }
    if t.is_dir() {
        "a directory"
    } else if t.is_symlink() {
        "a symbolic link"
    } else {
        "not a regular file"
    }
}

/// Refuses anything but a regular file of at most [`MAX_KEY_FILE_LEN`] bytes.
fn check_regular(file: &Path, meta: &std::fs::Metadata) -> Result<(), TopologyError> {
    if !meta.is_file() {
        return Err(key_file_error(
            file,
            format!(
                "is {}; a master key file must be a regular file",
                file_kind(meta.file_type())
            ),
        ));
    }
    if meta.len() > MAX_KEY_FILE_LEN {
        return Err(key_file_error(
            file,
            format!(
                "is {} bytes long; a master key file holds the base64 of at most \
                 {MAX_MASTER_LEN} bytes ({} characters) and is refused above {MAX_KEY_FILE_LEN} \
                 bytes",
                meta.len(),
                MAX_MASTER_LEN.div_ceil(3) * 4
            ),
        ));
    }
    Ok(())
}

fn read_key(file: &Path) -> Result<Vec<u8>, TopologyError> {
    use std::io::Read;
    let io = |source| TopologyError::Io {
        file: PathBuf::from(file),
        source,
    };
    // Look before opening: opening a FIFO for reading blocks until someone writes to it.
    let meta = match std::fs::metadata(file) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(match std::fs::read_link(file) {
                Ok(target) => key_file_error(
                    file,
                    format!(
                        "is a symbolic link to {}, which does not exist",
                        target.display()
                    ),
                ),
                Err(_) => io(e),
            });
        }
        Err(e) => return Err(io(e)),
    };
    check_regular(file, &meta)?;
    let f = std::fs::File::open(file).map_err(io)?;
    // Again on the opened file, in case it was replaced in between.
    check_regular(file, &f.metadata().map_err(io)?)?;
    let mut content = Vec::new();
    f.take(MAX_KEY_FILE_LEN + 1)
        .read_to_end(&mut content)
        .map_err(io)?;
    if content.len() as u64 > MAX_KEY_FILE_LEN {
        return Err(key_file_error(
            file,
            format!("grew beyond {MAX_KEY_FILE_LEN} bytes while being read"),
        ));
    }
    let mut out = [0u8; MAX_MASTER_LEN];
    let n = decode_master_key(&content, &mut out).map_err(|reason| TopologyError::Key {
        file: PathBuf::from(file),
        reason,
    })?;
    if n < MIN_MASTER_LEN {
        return Err(key_file_error(
            file,
            format!(
                "master key: {n} bytes decoded, at least {MIN_MASTER_LEN} are required (the \
                 hop-field and DRKey keys derived from it are 128-bit; SCION generates 16 \
                 random bytes)"
            ),
        ));
    }
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
        std::fs::write(dir.join("master1.key"), "not base64!").unwrap();
        let e = MasterKeys::load(&dir).unwrap_err();
        assert!(matches!(e, TopologyError::Key { .. }), "{e}");
        assert!(e.to_string().contains("master1.key"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
        let e = MasterKeys::load(&dir).unwrap_err();
        assert!(matches!(e, TopologyError::Io { .. }), "{e}");
        assert!(e.to_string().contains("master0.key"), "{e}");
    }

    /// A fresh directory for one test.
    fn temp_dir(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("scion-topology-keys-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn key_file_reason(e: TopologyError) -> String {
        match e {
            TopologyError::KeyFile { reason, .. } => reason,
            other => panic!("expected a key file error, got {other}"),
        }
    }

    #[test]
    fn short_and_noncanonical_secrets_are_refused() {
        let dir = temp_dir("short");
        let k0 = dir.join("master0.key");
        // 1 and 3 bytes decoded.
        for (text, n) in [("AQ==\n", 1), ("AQID", 3), ("AAECAwQFBgcICQoLDA0O", 15)] {
            std::fs::write(&k0, text).unwrap();
            let e = MasterKeys::load(&dir).unwrap_err();
            let msg = e.to_string();
            assert!(msg.contains("master0.key"), "{msg}");
            let r = key_file_reason(e);
            assert!(
                r.contains(&format!("{n} bytes decoded, at least 16")),
                "{r}"
            );
        }
        // Non-zero unused bits: "...Dw==" is canonical, "...Dx==" decodes to the same bytes.
        // (drkey's decoder refuses them; the error names the file.)
        std::fs::write(&k0, "AAECAwQFBgcICQoLDA0ODx==").unwrap();
        let r = MasterKeys::load(&dir).unwrap_err().to_string();
        assert!(r.contains("master0.key"), "{r}");
        assert!(r.contains("non-canonical base64"), "{r}");
        assert!(r.contains("byte 21"), "{r}");
        std::fs::write(&k0, "AAECAwQFBgcICQoLDA0ODw8=").unwrap();
        assert_eq!(MasterKeys::load(&dir).unwrap().master0.len(), 17);
        std::fs::write(&k0, "AAECAwQFBgcICQoLDA0ODw9=").unwrap();
        let r = MasterKeys::load(&dir).unwrap_err().to_string();
        assert!(r.contains("byte 22"), "{r}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn odd_files_are_reported_not_read_or_skipped() {
        let dir = temp_dir("odd");
        let k0 = dir.join("master0.key");
        std::fs::write(&k0, "AAECAwQFBgcICQoLDA0ODw==\n").unwrap();
        // A dangling master1.key symlink is reported, not taken as "no master1.key".
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(dir.join("gone.key"), dir.join("master1.key")).unwrap();
            let e = MasterKeys::load(&dir).unwrap_err();
            assert!(e.to_string().contains("master1.key"), "{e}");
            let r = key_file_reason(e);
            assert!(
                r.contains("symbolic link to") && r.contains("does not exist"),
                "{r}"
            );
            std::fs::remove_file(dir.join("master1.key")).unwrap();
        }
        // A 1 MB file: refused with its real size, without decoding a prefix of it.
        std::fs::write(&k0, vec![b'A'; 1_000_000]).unwrap();
        let r = key_file_reason(MasterKeys::load(&dir).unwrap_err());
        assert!(r.contains("is 1000000 bytes long"), "{r}");
        // A directory.
        std::fs::remove_file(&k0).unwrap();
        std::fs::create_dir(&k0).unwrap();
        let r = key_file_reason(MasterKeys::load(&dir).unwrap_err());
        assert!(r.contains("is a directory"), "{r}");
        std::fs::remove_dir(&k0).unwrap();
        // A FIFO: refused at once instead of blocking until someone writes to it.
        #[cfg(unix)]
        if std::process::Command::new("mkfifo")
            .arg(&k0)
            .status()
            .is_ok_and(|s| s.success())
        {
            let (tx, rx) = std::sync::mpsc::channel();
            let d = dir.clone();
            std::thread::spawn(move || {
                let _ = tx.send(MasterKeys::load(&d).map_err(|e| e.to_string()));
            });
            let got = rx
                .recv_timeout(std::time::Duration::from_secs(10))
                .expect("loading a FIFO master0.key blocked");
            let e = got.unwrap_err();
            assert!(e.contains("is a FIFO"), "{e}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
