//! Build script of `dpdk-sys`.
//!
//! 1. Finds DPDK 22.11 with pkg-config (`libdpdk`) and emits its (shared) link lines.
//! 2. Runs bindgen over `wrapper.h` with a narrow allowlist; writes `$OUT_DIR/bindings.rs`.
//! 3. bindgen's `wrap_static_fns` writes `$OUT_DIR/static_wrappers.c`: one exported C wrapper
//!    (`<name>__extern`) per allowlisted `static inline` function (rx/tx burst, mbuf alloc/free,
//!    ring enqueue/dequeue, rdtsc, lcore id, ...); the Rust declarations link to those wrappers.
//! 4. `cc` compiles that file plus the hand-written `shim.c` (macros, thread-local `rte_errno`)
//!    with DPDK's own cflags into `libdpdk_sys_glue.a`.

use std::env;
use std::path::PathBuf;
use std::process::Command;

/// Functions bound. `static inline` ones among them get a C wrapper (see module docs).
const FUNCTIONS: &[&str] = &[
    // EAL
    "rte_eal_init",
    "rte_eal_cleanup",
    "rte_strerror",
    "rte_exit",
    // lcores
    "rte_lcore_id",
    "rte_lcore_count",
    "rte_get_main_lcore",
    "rte_get_next_lcore",
    "rte_socket_id",
    "rte_eal_remote_launch",
    "rte_eal_wait_lcore",
    "rte_eal_mp_wait_lcore",
    // time
    "rte_rdtsc",
    "rte_get_tsc_hz",
    "rte_get_tsc_cycles",
    // mempool
    "rte_pktmbuf_pool_create",
    "rte_mempool_free",
    "rte_mempool_avail_count",
    "rte_mempool_in_use_count",
    // mbuf
    "rte_pktmbuf_alloc",
    "rte_pktmbuf_free",
    "rte_pktmbuf_append",
    "rte_pktmbuf_prepend",
    "rte_pktmbuf_adj",
    "rte_pktmbuf_trim",
    "rte_pktmbuf_headroom",
    "rte_pktmbuf_tailroom",
    "rte_pktmbuf_reset",
    // ring
    "rte_ring_create",
    "rte_ring_free",
    "rte_ring_count",
    "rte_ring_enqueue_burst",
    "rte_ring_dequeue_burst",
    // ethdev
    "rte_eth_dev_count_avail",
    "rte_eth_dev_is_valid_port",
    "rte_eth_dev_get_port_by_name",
    "rte_eth_dev_get_name_by_port",
    "rte_eth_dev_info_get",
    "rte_eth_dev_configure",
    "rte_eth_rx_queue_setup",
    "rte_eth_tx_queue_setup",
    "rte_eth_dev_start",
    "rte_eth_dev_stop",
    "rte_eth_dev_close",
    "rte_eth_dev_socket_id",
    "rte_eth_rx_burst",
    "rte_eth_rx_queue_count",
    "rte_eth_tx_burst",
    "rte_eth_tx_descriptor_status",
    "rte_eth_stats_get",
    "rte_eth_stats_reset",
    "rte_eth_macaddr_get",
    "rte_eth_promiscuous_enable",
    "rte_eth_link_get_nowait",
    // hand-written shim (shim.h)
    "rust_rte_errno",
    "rust_rte_errno_set",
    "rust_rte_pktmbuf_mtod",
    "rust_rte_pktmbuf_data_len",
    "rust_rte_pktmbuf_pkt_len",
];

/// Types bound beyond those the functions above pull in.
const TYPES: &[&str] = &[
    "rte_mbuf",
    "rte_mempool",
    "rte_ring",
    "rte_eth_conf",
    "rte_eth_dev_info",
    "rte_eth_rxconf",
    "rte_eth_txconf",
    "rte_eth_stats",
    "rte_eth_link",
    "rte_ether_addr",
    "lcore_function_t",
    "rte_eth_rx_mq_mode",
    "rte_eth_tx_mq_mode",
    "rte_rmt_call_main_t",
];

/// Constants (macros) bound.
const VARS: &[&str] = &[
    "RTE_VER_.*",
    "RTE_EAL_PMD_PATH",
    "RTE_MAX_LCORE",
    "RTE_MAX_ETHPORTS",
    "RTE_MBUF_DEFAULT_BUF_SIZE",
    "RTE_MBUF_DEFAULT_DATAROOM",
    "RTE_PKTMBUF_HEADROOM",
    "RTE_MEMPOOL_CACHE_MAX_SIZE",
    "RTE_ETHER_.*",
    "RTE_ETH_NAME_MAX_LEN",
    "RTE_ETH_LINK_.*",
    "RTE_ETH_TX_DESC_.*",
    "RTE_MAX_QUEUES_PER_PORT",
    "SOCKET_ID_ANY",
    "LCORE_ID_ANY",
    "RING_F_.*",
];

fn main() {
    let manifest_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let out_dir = PathBuf::from(env::var("OUT_DIR").expect("OUT_DIR"));
    for f in ["build.rs", "wrapper.h", "shim.h", "shim.c"] {
        println!("cargo:rerun-if-changed={f}");
    }

    // Link lines (shared libraries, `-Wl,--as-needed`) and a version check. DPDK 22.11 is the
    // LTS with ABI 23; newer releases change struct layouts and the PMD directory.
    let lib = pkg_config::Config::new()
        .range_version("22.11".."22.12")
        .probe("libdpdk")
        .unwrap_or_else(|e| {
            panic!(
                "dpdk-sys: DPDK 22.11 not found through pkg-config (`libdpdk`). On Debian 12 \
                 install it with `apt-get install -y libdpdk-dev libclang-dev pkg-config`.\n{e}"
            )
        });
    println!("cargo:version={}", lib.version);

    // The pkg-config crate only reports -I/-D; DPDK's cflags also carry `-include rte_config.h`
    // and `-march=corei7`, which the headers need (bindgen and cc alike).
    let cflags = dpdk_cflags();

    let header = manifest_dir.join("wrapper.h");
    let wrappers = out_dir.join("static_wrappers");
    let mut builder = bindgen::Builder::default()
        // Absolute path: the generated static_wrappers.c #includes it.
        .header(header.to_str().expect("UTF-8 path"))
        .clang_args(&cflags)
        .rust_target(bindgen::RustTarget::stable(89, 0).expect("known Rust target"))
        .rust_edition(bindgen::RustEdition::Edition2024)
        .derive_default(true)
        .derive_debug(true)
        .layout_tests(true)
        // DPDK's doxygen text would turn into failing doctests.
        .generate_comments(false)
        .formatter(bindgen::Formatter::None)
        .wrap_static_fns(true)
        .wrap_static_fns_path(&wrappers)
        .parse_callbacks(Box::new(bindgen::CargoCallbacks::new()));
    for f in FUNCTIONS {
        builder = builder.allowlist_function(f);
    }
    for t in TYPES {
        builder = builder.allowlist_type(t);
    }
    for v in VARS {
        builder = builder.allowlist_var(v);
    }
    builder
        .generate()
        .expect("dpdk-sys: bindgen failed on wrapper.h")
        .write_to_file(out_dir.join("bindings.rs"))
        .expect("dpdk-sys: cannot write bindings.rs");

    let mut cc = cc::Build::new();
    for f in &cflags {
        cc.flag(f);
    }
    cc.include(&manifest_dir)
        .file(wrappers.with_extension("c"))
        .file(manifest_dir.join("shim.c"))
        // These wrappers sit on the packet path: optimise them even in debug builds.
        .opt_level(3)
        // DPDK's experimental-API deprecation warnings are not ours to fix.
        .warnings(false)
        .compile("dpdk_sys_glue");
}

/// `pkg-config --cflags libdpdk`, split on whitespace (DPDK's flags contain no quoted spaces).
fn dpdk_cflags() -> Vec<String> {
    let pkg_config = env::var("PKG_CONFIG").unwrap_or_else(|_| "pkg-config".to_owned());
    let out = Command::new(&pkg_config)
        .args(["--cflags", "libdpdk"])
        .output()
        .unwrap_or_else(|e| panic!("dpdk-sys: cannot run {pkg_config}: {e}"));
    assert!(
        out.status.success(),
        "dpdk-sys: `{pkg_config} --cflags libdpdk` failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .expect("UTF-8 cflags")
        .split_whitespace()
        .map(str::to_owned)
        .collect()
}
