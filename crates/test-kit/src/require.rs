//! Tests that need what a developer's machine may lack (root for DPDK's EAL and network
//! namespaces, the PostgreSQL, VictoriaMetrics and InfluxDB binaries, tshark) start with
//! [`require!`](crate::require): under a plain `cargo test` a missing need skips the test
//! with its reason on stderr; with [`REQUIRE_ALL_ENV`]` = 1`, which `scripts/test.sh` sets
//! (and so CI), it fails the test instead, so nothing is ever skipped silently there.

use std::io::Write;
use std::path::Path;

/// Set to `1` to turn every unmet need into a test failure.
pub const REQUIRE_ALL_ENV: &str = "IDINT_TEST_REQUIRE_ALL";

/// Something a test needs from the machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// Effective user id 0 (DPDK's EAL, `ip netns`, `runuser` for PostgreSQL).
    Root,
    /// PostgreSQL 15's server binaries (Debian's `postgresql` package).
    Postgres,
    /// The `victoria-metrics` binary (Debian's `victoria-metrics` package).
    VictoriaMetrics,
    /// The `influxd` binary (Debian's `influxdb` package).
    InfluxDb,
    /// The `tshark` binary (Debian's `tshark` package), for the Wireshark dissector's tests.
    Tshark,
    /// The `luac` Lua compiler (Debian's `lua5.4` package), to syntax-check the Pktgen-DPDK
    /// scripts of `pktgen-configs/`.
    Luac,
    /// The `vmalert` binary (Debian's `victoria-metrics` package), to validate alerting rules.
    Vmalert,
    /// The `chromium` browser (Debian's `chromium` package), headless, for the collector's
    /// dashboard.
    Chromium,
    /// The `nginx` binary (Debian's `nginx` package), to front a single-node VictoriaMetrics
    /// with a cluster's URL layout (Debian packages no vminsert/vmselect).
    Nginx,
}

impl Need {
    /// Why the need is unmet, or `None` when it is met.
    pub fn unmet(self) -> Option<String> {
        match self {
            Need::Root => (!is_root()).then(|| "needs root (effective uid 0)".to_string()),
            Need::Postgres => (!Path::new(POSTGRES_BIN).is_dir())
                .then(|| format!("needs PostgreSQL 15 ({POSTGRES_BIN}; apt install postgresql)")),
            Need::VictoriaMetrics => (!on_path("victoria-metrics")).then(|| {
                "needs victoria-metrics on PATH (apt install victoria-metrics)".to_string()
            }),
            Need::InfluxDb => (!on_path("influxd"))
                .then(|| "needs influxd on PATH (apt install influxdb)".to_string()),
            Need::Tshark => (!on_path("tshark"))
                .then(|| "needs tshark on PATH (apt install tshark)".to_string()),
            Need::Luac => {
                (!on_path("luac")).then(|| "needs luac on PATH (apt install lua5.4)".to_string())
            }
            Need::Vmalert => (!on_path("vmalert"))
                .then(|| "needs vmalert on PATH (apt install victoria-metrics)".to_string()),
            Need::Chromium => (!on_path("chromium"))
                .then(|| "needs chromium on PATH (apt install chromium)".to_string()),
            Need::Nginx => {
                (!on_path("nginx")).then(|| "needs nginx on PATH (apt install nginx)".to_string())
            }
        }
    }
}

/// Where Debian's PostgreSQL 15 keeps its server binaries (what `scripts/services.sh` uses).
const POSTGRES_BIN: &str = "/usr/lib/postgresql/15/bin";

/// Whether the effective user id is 0, from `/proc/self/status` (no `unsafe` call).
fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
        s.lines()
            .find_map(|l| l.strip_prefix("Uid:"))
            .and_then(|ids| ids.split_whitespace().nth(1))
            == Some("0")
    })
}

/// Whether an executable named `name` is in a directory of `PATH`.
fn on_path(name: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(name).is_file()))
}

/// `true` if `test` can run with `needs`. Otherwise prints `SKIPPED <test>: <reasons>` and
/// returns `false`, or panics with the reasons when [`REQUIRE_ALL_ENV`] is `1`.
pub fn require(test: &str, needs: &[Need]) -> bool {
    let unmet: Vec<String> = needs.iter().filter_map(|n| n.unmet()).collect();
    if unmet.is_empty() {
        return true;
    }
    let reasons = unmet.join("; ");
    if std::env::var(REQUIRE_ALL_ENV).is_ok_and(|v| v == "1") {
        panic!("{test} cannot run: {reasons} ({REQUIRE_ALL_ENV}=1 requires every test to run)");
    }
    // Straight to stderr: the test harness captures `eprintln!` of passing tests.
    let _ = writeln!(std::io::stderr(), "SKIPPED {test}: {reasons}");
    false
}

/// The path of the function a `require!` stands in, from the type name of a local item
/// (`crate::test_name::{{closure}}::here` for an async test): without the marker and closures.
pub fn test_name(local_item_type: &'static str) -> String {
    local_item_type
        .trim_end_matches("::here")
        .replace("::{{closure}}", "")
}

/// Returns from the calling test (after printing why) unless every need is met; fails it
/// instead under [`REQUIRE_ALL_ENV`]` = 1`. `require!(Need::Root, Need::Postgres)`.
#[macro_export]
macro_rules! require {
    ($($need:expr),+ $(,)?) => {
        fn here() {}
        fn type_name_of<T>(_: T) -> &'static str {
            ::std::any::type_name::<T>()
        }
        let test = $crate::require::test_name(type_name_of(here));
        if !$crate::require::require(&test, &[$($need),+]) {
            return;
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn met_needs_run_and_unmet_ones_say_why() {
        // The current user is root or not; either way the answer matches /proc.
        let root = is_root();
        assert_eq!(Need::Root.unmet().is_none(), root);
        assert!(on_path("sh"), "sh is on every PATH");
        assert!(!on_path("no-such-binary-idint"));
        assert!(require("t", &[]));
        assert_eq!(
            test_name("store::round_trip::{{closure}}::here"),
            "store::round_trip"
        );
    }
}
