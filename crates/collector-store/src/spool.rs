//! [`Spool`]: a bounded on-disk buffer of line-protocol text for the time-series writer, used
//! when its memory buffer is full (the store is down or slower than the input), as log
//! shippers do. Lines are appended to segment files; the writer sends the oldest segment
//! once the store answers and deletes it when every line of it was written. Segments left by
//! a process that stopped are picked up by the next one.

use std::collections::VecDeque;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Where and how much the spool may hold.
#[derive(Debug, Clone)]
pub struct SpoolConfig {
    /// The spool's directory (created if missing; the spool owns every `*.lp` file in it).
    pub dir: PathBuf,
    /// Bytes the spool holds at most; beyond, writes are refused.
    pub max_bytes: u64,
    /// Bytes per segment file (a segment is read whole when it is sent).
    pub segment_bytes: u64,
}

/// Default size of a segment file.
pub const DEFAULT_SEGMENT_BYTES: u64 = 4 << 20;

/// Extension of segment files.
const SEGMENT_EXTENSION: &str = "lp";

/// A closed segment: its number, bytes and lines.
#[derive(Debug, Clone, Copy)]
struct Segment {
    id: u64,
    bytes: u64,
    lines: u64,
}

/// The segment being appended to.
struct Open {
    segment: Segment,
    file: File,
}

/// The on-disk buffer (not thread-safe: the writer holds it behind its lock).
pub struct Spool {
    cfg: SpoolConfig,
    closed: VecDeque<Segment>,
    open: Option<Open>,
    next_id: u64,
    bytes: u64,
    lines: u64,
}

impl Spool {
    /// Opens the spool in `cfg.dir`, taking over the segments found there (oldest first).
    pub fn open(cfg: SpoolConfig) -> io::Result<Self> {
        fs::create_dir_all(&cfg.dir)?;
        let mut found = Vec::new();
        for entry in fs::read_dir(&cfg.dir)? {
            let path = entry?.path();
            let Some(id) = segment_id(&path) else {
                continue;
            };
            let text = fs::read(&path)?;
            let lines = text.iter().filter(|&&b| b == b'\n').count() as u64;
            found.push(Segment {
                id,
                bytes: text.len() as u64,
                lines,
            });
        }
        found.sort_by_key(|s| s.id);
        let next_id = found.last().map_or(0, |s| s.id + 1);
        let bytes = found.iter().map(|s| s.bytes).sum();
        let lines = found.iter().map(|s| s.lines).sum();
        Ok(Spool {
            cfg,
            closed: found.into(),
            open: None,
            next_id,
            bytes,
            lines,
        })
    }

    /// Appends `text` (whole lines, `lines` of them); `Ok(false)` if it does not fit.
    pub fn append(&mut self, text: &str, lines: u64) -> io::Result<bool> {
        let n = text.len() as u64;
        if self.bytes + n > self.cfg.max_bytes {
            return Ok(false);
        }
        if self
            .open
            .as_ref()
            .is_some_and(|o| o.segment.bytes > 0 && o.segment.bytes + n > self.cfg.segment_bytes)
        {
            self.rotate();
        }
        if self.open.is_none() {
            let id = self.next_id;
            self.next_id += 1;
            let file = OpenOptions::new()
                .create_new(true)
                .append(true)
                .open(self.path(id))?;
            self.open = Some(Open {
                segment: Segment {
                    id,
                    bytes: 0,
                    lines: 0,
                },
                file,
            });
        }
        let open = self.open.as_mut().expect("opened above");
        open.file.write_all(text.as_bytes())?;
        open.segment.bytes += n;
        open.segment.lines += lines;
        self.bytes += n;
        self.lines += lines;
        Ok(true)
    }

    /// The oldest segment's number and text, closing the open segment if it is the only
    /// one; `None` if the spool is empty.
    pub fn oldest(&mut self) -> io::Result<Option<(u64, String)>> {
        if self.closed.is_empty() {
            self.rotate();
        }
        let Some(s) = self.closed.front() else {
            return Ok(None);
        };
        let text = fs::read_to_string(self.path(s.id))?;
        Ok(Some((s.id, text)))
    }

    /// Deletes segment `id` (after every line of it was written or given up).
    pub fn remove(&mut self, id: u64) -> io::Result<()> {
        if let Some(at) = self.closed.iter().position(|s| s.id == id) {
            let s = self.closed.remove(at).expect("position found");
            self.bytes -= s.bytes;
            self.lines -= s.lines;
            fs::remove_file(self.path(id))?;
        }
        Ok(())
    }

    /// Lines held.
    pub fn lines(&self) -> u64 {
        self.lines
    }

    /// Bytes held.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Makes the open segment (if it holds anything) the newest closed one, flushed to disk.
    fn rotate(&mut self) {
        if let Some(open) = self.open.take() {
            // Best effort: a segment that could not be synced is still complete in the page
            // cache and read back by this process.
            let _ = open.file.sync_data();
            if open.segment.bytes > 0 {
                self.closed.push_back(open.segment);
            } else {
                let _ = fs::remove_file(self.path(open.segment.id));
            }
        }
    }

    fn path(&self, id: u64) -> PathBuf {
        self.cfg.dir.join(format!("{id:016}.{SEGMENT_EXTENSION}"))
    }
}

/// The number of a segment file, from its name.
fn segment_id(path: &Path) -> Option<u64> {
    if path.extension()? != SEGMENT_EXTENSION {
        return None;
    }
    path.file_stem()?.to_str()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("spool-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn segments_come_back_oldest_first_across_a_restart_and_the_bound_holds() {
        let d = dir("order");
        let cfg = SpoolConfig {
            dir: d.clone(),
            max_bytes: 100,
            segment_bytes: 20,
        };
        let mut s = Spool::open(cfg.clone()).unwrap();
        for k in 0..8 {
            assert!(s.append(&format!("m v={k} 1\n"), 1).unwrap());
        }
        assert_eq!((s.lines(), s.bytes()), (8, 64));
        // 100 bytes at most.
        assert!(
            !s.append("m,tag=a_rather_long_value v=12345678 1\n", 1)
                .unwrap()
        );
        drop(s);
        // Another process takes over what is on disk.
        let mut s = Spool::open(cfg).unwrap();
        assert_eq!((s.lines(), s.bytes()), (8, 64));
        let mut seen = String::new();
        while let Some((id, text)) = s.oldest().unwrap() {
            seen.push_str(&text);
            s.remove(id).unwrap();
        }
        let want: String = (0..8).map(|k| format!("m v={k} 1\n")).collect();
        assert_eq!(seen, want);
        assert_eq!((s.lines(), s.bytes()), (0, 0));
        assert_eq!(fs::read_dir(&d).unwrap().count(), 0);
        let _ = fs::remove_dir_all(&d);
    }
}
