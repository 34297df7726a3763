#!/usr/bin/env bash
# Builds and runs the cargo-fuzz targets (nightly toolchain).
#   scripts/fuzz.sh                 run every target for 600 s (FUZZ_SECONDS to change)
#   scripts/fuzz.sh TARGET...       run only these targets
#   scripts/fuzz.sh --build-only    just build them (CI)
# Seeds come from fuzz/corpus/<target>/seed-* (committed) and the golden vectors.
# Targets (fuzz/Cargo.toml): scion_packet, idint_hbh, router_process, router_idint,
# topology_json, router_config, collector_json, collector_wire, underlay, host_paths,
# host_packet, host_payload (idint-ping's parsers), and pipeline (the
# whole collector pipeline on genuine and mutated reports of test-kit's 4-AS chain: no
# panic, and every accepted report verifies under the chain's real DRKey keys).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"

rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal
command -v cargo-fuzz >/dev/null 2>&1 || cargo install cargo-fuzz --locked

if [ "${1:-}" = "--build-only" ]; then
    cargo +nightly fuzz build -O
    exit 0
fi

targets=("$@")
((${#targets[@]})) || mapfile -t targets < <(cargo +nightly fuzz list)
seconds="${FUZZ_SECONDS:-600}"
for t in "${targets[@]}"; do
    mkdir -p "fuzz/corpus/$t"
    echo "== fuzz $t for ${seconds}s"
    log="target/fuzz-$t.log"
    mkdir -p target
    if ! cargo +nightly fuzz run -O "$t" "fuzz/corpus/$t" -- \
        -max_total_time="$seconds" -max_len=2048 -print_final_stats=1 >"$log" 2>&1; then
        grep -E -A12 "panicked|ERROR: |SUMMARY" "$log" | head -n 60
        echo "fuzz $t FAILED (full log: $log)" >&2
        exit 1
    fi
    grep -E "^(stat::|Done)" "$log" | tail -n 12
done
