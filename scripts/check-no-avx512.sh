#!/usr/bin/env bash
# Fails if the router or the collector contains 512-bit (AVX-512, zmm) instructions.
#
#   scripts/check-no-avx512.sh [BIN_DIR]     (default target/debug; binaries built beforehand)
#
# The builds target x86-64-v3 + AES (.cargo/config.toml), so the compiler never emits 512-bit
# code on its own; it can only come from a dependency that chooses an AVX-512 backend at run
# time (as the `aes` crate does from 0.9.3 on, hence its pin; docs/design.md, decision 7). On
# Intel Xeons such code on the per-packet path can lower the core's clock for every packet.
# Run-time-chosen code is the same in debug and release builds, so the test run's debug
# binaries serve.
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${1:-${CARGO_TARGET_DIR:-target}/debug}
status=0
for bin in idint-router idint-collector; do
    path=$DIR/$bin
    if [ ! -x "$path" ]; then
        echo "check-no-avx512: $path is missing (build it first)" >&2
        exit 2
    fi
    # Functions holding zmm instructions, as "count <function>".
    found=$(objdump -d --no-show-raw-insn "$path" |
        awk '/^[0-9a-f]+ <.*>:$/ { fn = $2 } /%zmm/ { n[fn]++ } END { for (f in n) print n[f], f }')
    if [ -n "$found" ]; then
        echo "check-no-avx512: $bin has 512-bit instructions in:" >&2
        echo "$found" | sort -rn | head -n 20 >&2
        status=1
    else
        echo "check-no-avx512: $bin: no 512-bit instructions"
    fi
done
exit $status
