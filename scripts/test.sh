#!/usr/bin/env bash
# Runs every test of the workspace: unit, integration, golden vectors, property tests, and the
# no_std build checks. Installs what it needs first (scripts/setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"

./scripts/setup.sh

echo "== golden data unchanged (testdata/SHA256SUMS)"
(cd testdata && sha256sum --quiet -c SHA256SUMS)

echo "== no_std builds (x86_64-unknown-none)"
cargo build -q -p idint-wire --no-default-features --target x86_64-unknown-none
cargo build -q -p idint-wire --no-default-features --features crypto --target x86_64-unknown-none
cargo build -q -p scion-dp --target x86_64-unknown-none
if [ -d crates/drkey ]; then
    cargo build -q -p drkey --no-default-features --target x86_64-unknown-none
fi

echo "== router configuration without the measurement aids (as release builds refuse them)"
cargo test -q -p router-core --lib config:: 2>&1 | tail -n 3

echo "== cargo test --workspace --all-features"
# Every test must run here: one whose needs (root, the store binaries) are unmet fails instead
# of skipping (test_kit::require).
export IDINT_TEST_REQUIRE_ALL=1
mkdir -p target
cargo test --workspace --all-features 2>&1 | tee target/test-output.txt
# One closing line for the whole run (cargo prints one per test binary).
awk '/^test result:/ { p += $4; f += $6 } END { printf "tests: %d passed, %d failed\n", p, f }' \
    target/test-output.txt | tee target/test-summary.txt

echo "== no 512-bit instructions in the router and the collector"
./scripts/check-no-avx512.sh "${CARGO_TARGET_DIR:-target}/debug"
