//! What the time-series store holds, read directly (VictoriaMetrics' export API), and what
//! the collector said it wrote (its final log line).

use std::path::Path;
use std::time::Duration;

use crate::procs::Procs;

/// How long written points may take to become visible in the store.
const VISIBLE_WITHIN: Duration = Duration::from_secs(15);

/// `points_written` of the last "collector stopped" line of the collector's log.
pub fn written_in_log(log: &Path) -> Option<u64> {
    final_counter(log, "points_written")
}

/// Counter `name` (`accepted`, `points_written`) of the last "collector stopped" line of the
/// collector's log.
pub fn final_counter(log: &Path, name: &str) -> Option<u64> {
    let text = strip_ansi(&std::fs::read_to_string(log).ok()?);
    let line = text
        .lines()
        .rev()
        .find(|l| l.contains("collector stopped"))?;
    let key = format!("{name}=");
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(key.as_str()))
        .and_then(|v| v.trim_matches(|c: char| !c.is_ascii_digit()).parse().ok())
}

/// `text` without ANSI colour sequences (`ESC [ ... m`).
fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Raw samples in the store (every series) stamped at or before `end_s` (Unix seconds).
fn count_samples(vm: &str, end_s: f64) -> Option<u64> {
    let text = reqwest::blocking::Client::new()
        .get(format!("{vm}/api/v1/export"))
        .query(&[
            ("match[]", "{__name__=~\".+\"}".to_string()),
            ("end", format!("{end_s:.3}")),
        ])
        .timeout(Duration::from_secs(30))
        .send()
        .ok()?
        .text()
        .ok()?;
    let mut n = 0u64;
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).ok()?;
        n += v["values"].as_array().map_or(0, |a| a.len() as u64);
    }
    Some(n)
}

/// Samples in the store stamped at or before `end_s`, waited for until two readings a second
/// apart agree.
pub fn samples_until(vm: &str, end_s: f64, procs: &Procs) -> Option<u64> {
    let _ = reqwest::blocking::Client::new()
        .get(format!("{vm}/internal/force_flush"))
        .send();
    let mut last = None;
    let _ = procs.wait_until("store settled", VISIBLE_WITHIN, || {
        let now = count_samples(vm, end_s);
        let same = now.is_some() && now == last;
        last = now;
        if !same {
            std::thread::sleep(Duration::from_secs(1));
        }
        same
    });
    last
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_final_counters_are_read_from_the_log() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("c.log");
        std::fs::write(
            &log,
            "2026 INFO collector started\n\
             2026 INFO idint_collector::service: collector stopped accepted=5 points_written=40\n",
        )
        .unwrap();
        assert_eq!(written_in_log(&log), Some(40));
        std::fs::write(
            &log,
            "\u{1b}[2m2026\u{1b}[0m collector stopped \u{1b}[3maccepted\u{1b}[0m\u{1b}[2m=\u{1b}[0m5571 \
             \u{1b}[3mpoints_written\u{1b}[0m\u{1b}[2m=\u{1b}[0m34907\n",
        )
        .unwrap();
        assert_eq!(written_in_log(&log), Some(34907));
        std::fs::write(&log, "nothing\n").unwrap();
        assert_eq!(written_in_log(&log), None);
    }
}
