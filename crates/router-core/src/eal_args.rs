//! Checks of the configuration's `eal` arguments that can be made before EAL runs, and the
//! look-ups the router needs to explain an EAL outcome afterwards.
//!
//! EAL parses its arguments with `getopt_long` (short options `a:b:c:s:d:hl:S:m:n:r:v`, long
//! options abbreviable to any unique prefix). Only what this module fully understands is
//! judged here; everything else is left to EAL, whose rejection the router still reports as
//! an error of `eal`.
//!
//! * `-h`, `--help` (or an abbreviation such as `--he`) and `--log-level=help` make EAL print
//!   a listing and end the process with exit code 0: refused.
//! * An `-l` core list (`a[-b][,c[-d]...]`) or `-c` core mask must name at least two lcores
//!   (the main lcore runs the control loop, each other one a worker), each below DPDK's
//!   `RTE_MAX_LCORE` and a CPU of this machine (EAL's own test: the CPU has
//!   `/sys/devices/system/cpu/cpuN/topology/core_id`).

use std::collections::BTreeSet;

/// Short options of EAL that take a value (the rest of the word or the next word).
const SHORT_WITH_VALUE: &str = "abcsdlSmnr";

/// DPDK's limit on lcore ids (exclusive): `RTE_MAX_LCORE` of Debian's DPDK 22.11 build
/// (`router-dpdk` checks at compile time that the DPDK it links agrees).
pub const MAX_LCORE: u32 = 128;

/// Whether EAL would see CPU `id` on this machine (its own test). `None` when the machine
/// has no `/sys/devices/system/cpu` to ask (then EAL decides alone).
pub fn cpu_detected(id: u32) -> Option<bool> {
    let sys = std::path::Path::new("/sys/devices/system/cpu");
    if !sys.is_dir() {
        return None;
    }
    Some(sys.join(format!("cpu{id}/topology/core_id")).exists())
}

/// Where in the arguments an lcore set is chosen.
#[derive(Debug, Clone, PartialEq, Eq)]
enum CoreOption {
    /// `-l LIST`.
    List(String),
    /// `-c MASK`.
    Mask(String),
    /// `--lcores MAP` (mapping syntax, left to EAL).
    Map,
}

/// The options of `args` as (name, value) pairs: short options one by one (`-lX`, `-l X`,
/// clusters such as `-vh`), long options as `--name` with the `=value` part if any. Words that
/// are not options are skipped.
fn options(args: &[String]) -> Vec<(String, Option<String>)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        i += 1;
        if let Some(long) = a.strip_prefix("--") {
            match long.split_once('=') {
                Some((n, v)) => out.push((format!("--{n}"), Some(v.to_string()))),
                None => out.push((a.clone(), None)),
            }
            continue;
        }
        let Some(cluster) = a.strip_prefix('-') else {
            continue;
        };
        for (at, c) in cluster.char_indices() {
            if SHORT_WITH_VALUE.contains(c) {
                let rest = &cluster[at + c.len_utf8()..];
                let value = if rest.is_empty() {
                    let v = args.get(i).cloned();
                    i += 1;
                    v
                } else {
                    Some(rest.to_string())
                };
                out.push((format!("-{c}"), value));
                break;
            }
            out.push((format!("-{c}"), None));
        }
    }
    out
}

/// The value of a long option `name` given as `--name=value` or `--name value`.
fn long_values<'a>(args: &'a [String], name: &str) -> Vec<&'a str> {
    let mut out = Vec::new();
    for (i, a) in args.iter().enumerate() {
        if let Some(v) = a.strip_prefix(name).and_then(|r| r.strip_prefix('=')) {
            out.push(v);
        } else if a == name
            && let Some(v) = args.get(i + 1)
        {
            out.push(v.as_str());
        }
    }
    out
}

/// The lcores of an `-l` list in the plain `a[-b][,c[-d]...]` form (decimal, ascending
/// ranges); `None` for anything else (left to EAL). Ids at or above [`MAX_LCORE`] are kept
/// (as `MAX_LCORE` itself, once) so the caller can name the limit.
fn parse_core_list(s: &str) -> Option<BTreeSet<u32>> {
    let num = |t: &str| -> Option<u64> {
        let t = t.trim();
        (!t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()))
            .then(|| t.parse().unwrap_or(u64::MAX))
    };
    let mut out = BTreeSet::new();
    for item in s.split(',') {
        let (a, b) = match item.split_once('-') {
            Some((a, b)) => (num(a)?, num(b)?),
            None => (num(item)?, num(item)?),
        };
        if a > b {
            return None;
        }
        let cap = u64::from(MAX_LCORE);
        out.extend((a.min(cap)..=b.min(cap)).map(|x| x as u32));
    }
    Some(out)
}

/// The lcores of a `-c` hexadecimal core mask (optional `0x`); `None` if it is not one. Bits
/// at or above [`MAX_LCORE`] appear as `MAX_LCORE`.
fn parse_core_mask(s: &str) -> Option<BTreeSet<u32>> {
    let s = s.trim();
    let hex = s
        .strip_prefix("0x")
        .or_else(|| s.strip_prefix("0X"))
        .unwrap_or(s);
    if hex.is_empty() {
        return None;
    }
    let mut out = BTreeSet::new();
    for (nibble, c) in hex.chars().rev().enumerate() {
        let v = c.to_digit(16)?;
        for bit in 0..4 {
            if v & (1 << bit) != 0 {
                let id = u32::try_from(nibble * 4 + bit).unwrap_or(u32::MAX);
                out.insert(id.min(MAX_LCORE));
            }
        }
    }
    Some(out)
}

/// `2-5, 9` for {2, 3, 4, 5, 9}.
fn ranges(ids: &BTreeSet<u32>) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut it = ids.iter().copied().peekable();
    while let Some(start) = it.next() {
        let mut end = start;
        while it.peek() == Some(&(end + 1)) {
            end += 1;
            it.next();
        }
        parts.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
    }
    parts.join(", ")
}

/// How many lcores `args` give EAL with `-l` or `-c` (`None`: neither, an `--lcores` map, or
/// a value EAL will refuse anyway).
pub fn lcore_count(args: &[String]) -> Option<usize> {
    let mut found = None;
    for (name, value) in options(args) {
        match (name.as_str(), value) {
            ("-l", Some(v)) => found = parse_core_list(&v).map(|ids| ids.len()),
            ("-c", Some(v)) => found = parse_core_mask(&v).map(|ids| ids.len()),
            (n, _) if n.len() >= 4 && "--lcores".starts_with(n) => return None,
            _ => {}
        }
    }
    found
}

/// Checks `args` (the configuration's `eal`) before EAL runs; `cpu` says whether a CPU id is
/// one of this machine's (`None`: unknown). Returns why the arguments cannot work.
pub fn check(args: &[String], cpu: impl Fn(u32) -> Option<bool>) -> Result<(), String> {
    let opts = options(args);
    for (name, value) in &opts {
        let help = name == "-h"
            || (name.len() >= 4 && "--help".starts_with(name.as_str()) && value.is_none());
        if help {
            return Err(format!(
                "{name:?} makes DPDK print its usage and end the router at once (exit code 0); \
                 remove it (the router's own usage: idint-router --help)"
            ));
        }
    }
    if long_values(args, "--log-level").contains(&"help") {
        return Err(
            "--log-level=help makes DPDK list its log types and end the router at once \
             (exit code 0); remove it"
                .into(),
        );
    }
    let mut cores = Vec::new();
    for (name, value) in &opts {
        match (name.as_str(), value) {
            ("-l", Some(v)) => cores.push(CoreOption::List(v.clone())),
            ("-c", Some(v)) => cores.push(CoreOption::Mask(v.clone())),
            (n, _) if n.len() >= 4 && "--lcores".starts_with(n) => cores.push(CoreOption::Map),
            _ => {}
        }
    }
    // EAL itself refuses more than one of -l, -c, --lcores; --lcores maps are left to it.
    let [only] = cores.as_slice() else {
        return Ok(());
    };
    let (shown, ids) = match only {
        CoreOption::List(v) => (format!("-l {v}"), parse_core_list(v)),
        CoreOption::Mask(v) => (format!("-c {v}"), parse_core_mask(v)),
        CoreOption::Map => return Ok(()),
    };
    let Some(ids) = ids else {
        return Ok(());
    };
    if ids.contains(&MAX_LCORE) {
        return Err(format!(
            "{shown}: lcore ids must be below {MAX_LCORE} (DPDK's RTE_MAX_LCORE)"
        ));
    }
    let missing: BTreeSet<u32> = ids
        .iter()
        .copied()
        .filter(|&id| cpu(id) == Some(false))
        .collect();
    if !missing.is_empty() {
        let (what, verb) = if missing.len() == 1 {
            ("lcore", "is not a CPU")
        } else {
            ("lcores", "are not CPUs")
        };
        return Err(format!(
            "{shown}: {what} {} {verb} of this machine (EAL finds no \
             /sys/devices/system/cpu/cpuN/topology/core_id for them)",
            ranges(&missing),
        ));
    }
    if ids.len() < 2 {
        return Err(format!(
            "{shown} gives {} lcore{}; the router needs the main lcore (control loop) plus at \
             least one worker lcore (e.g. -l 0-1)",
            ids.len(),
            if ids.len() == 1 { "" } else { "s" },
        ));
    }
    Ok(())
}

/// The name DPDK gives the port of PCI device `name` (`DDDD:BB:DD.F`, lower-case hex, domain
/// `0000` when `name` has none, as EAL's `-a 01:00.0` and `-a 0000:01:00.0` both name it);
/// `None` if `name` is not a PCI address.
pub fn pci_name(name: &str) -> Option<String> {
    fn hex(s: &str, max_digits: usize) -> Option<u32> {
        if s.is_empty() || s.len() > max_digits || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        u32::from_str_radix(s, 16).ok()
    }
    let parts: Vec<&str> = name.split(':').collect();
    let (domain, bus, devfn) = match parts[..] {
        [d, b, f] => (hex(d, 8)?, b, f),
        [b, f] => (0, b, f),
        _ => return None,
    };
    let bus = hex(bus, 2)?;
    let (dev, func) = devfn.split_once('.')?;
    let (dev, func) = (hex(dev, 2)?, hex(func, 1)?);
    if dev > 0x1f || func > 7 {
        return None;
    }
    Some(format!("{domain:04x}:{bus:02x}:{dev:02x}.{func:x}"))
}

/// `device` as DPDK names its port: a PCI address in its full form ([`pci_name`]), any other
/// name (a virtual device's) as it is.
pub fn port_name(device: &str) -> String {
    pci_name(device).unwrap_or_else(|| device.to_string())
}

/// The argument of `args` that asks EAL for device `device`: a `--vdev` or `-a`/`--allow`
/// whose name (before the first `,`) is `device` (PCI addresses compared in their full form).
pub fn device_arg(args: &[String], device: &str) -> Option<String> {
    let device = port_name(device);
    let named = |v: &str| v.split(',').next().map(port_name).as_deref() == Some(device.as_str());
    let mut found: Vec<String> = long_values(args, "--vdev")
        .into_iter()
        .chain(long_values(args, "--allow"))
        .filter(|v| named(v))
        .map(str::to_string)
        .collect();
    found.extend(
        options(args)
            .into_iter()
            .filter_map(|(n, v)| (n == "-a").then_some(v).flatten())
            .filter(|v| named(v)),
    );
    found.into_iter().next()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &[&str]) -> Vec<String> {
        s.iter().map(|a| a.to_string()).collect()
    }

    /// A machine with CPUs 0 and 1.
    fn two(id: u32) -> Option<bool> {
        Some(id < 2)
    }

    #[test]
    fn help_options_are_refused() {
        for a in [
            &["-h"][..],
            &["--help"],
            &["--he"],
            &["--hel"],
            &["-vh"],
            &["--log-level=help"],
            &["--log-level", "help"],
            &["--no-huge", "-l", "0-1", "-h"],
        ] {
            let e = check(&args(a), two).expect_err(&format!("{a:?}"));
            assert!(e.contains("exit code 0"), "{a:?}: {e}");
        }
        // -h as the value of an option, and -v (prints DPDK's version on stderr, harmless).
        for a in [&["-m", "-h", "-l", "0-1"][..], &["-v", "-l", "0-1"]] {
            assert_eq!(check(&args(a), two), Ok(()), "{a:?}");
        }
    }

    #[test]
    fn core_lists_need_a_worker_and_real_cpus() {
        let ok = [
            &["-l", "0-1"][..],
            &["-l0-1"],
            &["-l", "0,1"],
            &["-c", "3"],
            &["-c", "0x3"],
            &["--lcores=0@0,1@1,2@0"],
            &["--lcores", "0"], // left to EAL (and to the router's check after EAL)
            &["-l", "1-0"],     // EAL's syntax error, left to it
            &["-l", "0", "-l", "0-1"], // EAL refuses the repetition itself
            &[],
        ];
        for a in ok {
            assert_eq!(check(&args(a), two), Ok(()), "{a:?}");
        }
        let e = check(&args(&["-l", "0"]), two).unwrap_err();
        assert!(e.starts_with("-l 0 gives 1 lcore;"), "{e}");
        let e = check(&args(&["-l", "1,1"]), two).unwrap_err();
        assert!(e.contains("gives 1 lcore"), "{e}");
        let e = check(&args(&["-c", "0x1"]), two).unwrap_err();
        assert!(e.starts_with("-c 0x1 gives 1 lcore"), "{e}");
        let e = check(&args(&["-l", "0-99"]), two).unwrap_err();
        assert!(
            e.starts_with("-l 0-99: lcores 2-99 are not CPUs of this machine"),
            "{e}"
        );
        let e = check(&args(&["-l", "0,5"]), two).unwrap_err();
        assert!(
            e.starts_with("-l 0,5: lcore 5 is not a CPU of this machine"),
            "{e}"
        );
        let e = check(&args(&["-l", "0-4000000000"]), two).unwrap_err();
        assert!(e.contains(&format!("below {MAX_LCORE}")), "{e}");
        let e = check(&args(&["-c", "0x100000000000000000000000000000001"]), two).unwrap_err();
        assert!(e.contains("RTE_MAX_LCORE"), "{e}");
        // Unknown machine: only the count is judged.
        assert_eq!(check(&args(&["-l", "0-99"]), |_| None), Ok(()));
    }

    #[test]
    fn devices_named_in_the_arguments() {
        let a = args(&[
            "--vdev=net_null0,foo=bar",
            "--vdev",
            "net_pcap1,rx_pcap=x",
            "-a",
            "0000:01:00.0",
            "-a0000:02:00.0,txq_inline=1",
            "--allow=0000:03:00.0",
        ]);
        assert_eq!(
            device_arg(&a, "net_null0").as_deref(),
            Some("net_null0,foo=bar")
        );
        assert_eq!(
            device_arg(&a, "net_pcap1").as_deref(),
            Some("net_pcap1,rx_pcap=x")
        );
        assert!(device_arg(&a, "0000:01:00.0").is_some());
        assert!(device_arg(&a, "0000:02:00.0").is_some());
        assert!(device_arg(&a, "0000:03:00.0").is_some());
        assert_eq!(device_arg(&a, "net_null"), None);
        assert_eq!(device_arg(&a, "net_ring0"), None);
        // A PCI address with or without its domain, in either case, names the same device.
        assert!(device_arg(&a, "01:00.0").is_some());
        assert!(device_arg(&a, "0000:02:00.0").is_some());
        let short = args(&["-a", "0A:1f.7"]);
        assert!(device_arg(&short, "0000:0a:1F.7").is_some());
        assert_eq!(device_arg(&short, "0001:0a:1f.7"), None);
    }

    #[test]
    fn pci_addresses_in_full_form() {
        assert_eq!(pci_name("01:00.0").as_deref(), Some("0000:01:00.0"));
        assert_eq!(pci_name("0000:3B:00.1").as_deref(), Some("0000:3b:00.1"));
        assert_eq!(pci_name("1:2:3.4").as_deref(), Some("0001:02:03.4"));
        assert_eq!(pci_name("10000:00:1f.7").as_deref(), Some("10000:00:1f.7"));
        for not in [
            "net_pcap0",
            "",
            "01:00",
            "01:00.8",
            "01:20.0",
            "001:00.0",
            "0:0:0:0.0",
            "g1:00.0",
            "01:00.",
            ":00.0",
            "01:00.00",
        ] {
            assert_eq!(pci_name(not), None, "{not:?}");
        }
        assert_eq!(port_name("net_ring0"), "net_ring0");
        assert_eq!(port_name("3b:00.1"), "0000:3b:00.1");
    }

    #[test]
    fn lcores_counted_from_lists_and_masks() {
        assert_eq!(lcore_count(&args(&["-l", "0-2,5"])), Some(4));
        assert_eq!(lcore_count(&args(&["-c", "0x3"])), Some(2));
        assert_eq!(lcore_count(&args(&["--no-huge"])), None);
        assert_eq!(lcore_count(&args(&["--lcores=0@0,1@1"])), None);
    }

    #[test]
    fn lists_and_masks() {
        assert_eq!(parse_core_list("0-2,5"), Some(BTreeSet::from([0, 1, 2, 5])));
        assert_eq!(parse_core_list("x"), None);
        assert_eq!(parse_core_list("+1"), None);
        assert_eq!(parse_core_list(""), None);
        assert_eq!(parse_core_mask("0x5"), Some(BTreeSet::from([0, 2])));
        assert_eq!(parse_core_mask("g"), None);
        assert_eq!(ranges(&BTreeSet::from([2, 3, 4, 9])), "2-4, 9");
    }
}
