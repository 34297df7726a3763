#!/usr/bin/env bash
# Runs every test of the workspace: unit, integration, golden vectors, property tests, and the
# no_std build checks. Installs what it needs first (scripts/setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"

./scripts/setup.sh

if [ ! -d ../shared/vectors ]; then
    echo "test: ../shared/vectors not found beside the checkout (golden data)" >&2
    exit 1
fi

echo "== no_std builds (x86_64-unknown-none)"
cargo build -q -p idint-wire --no-default-features --target x86_64-unknown-none
cargo build -q -p idint-wire --no-default-features --features crypto --target x86_64-unknown-none
cargo build -q -p scion-dp --target x86_64-unknown-none
if [ -d crates/drkey ]; then
    cargo build -q -p drkey --no-default-features --target x86_64-unknown-none
fi

echo "== cargo test --workspace --all-features"
cargo test --workspace --all-features
