#!/usr/bin/env bash
# Saves a screenshot of the collector's dashboard: scripts/dashboard-shot.sh URL OUT.png
# URL is the collector's page (e.g. http://127.0.0.1:8480/). Headless Chromium (Debian's
# `chromium`, installed by scripts/setup.sh) loads it, lets its scripts poll for a few seconds
# of virtual time, and writes a PNG. DASHBOARD_SHOT_SIZE (WIDTHxHEIGHT, default 1440x2300)
# and DASHBOARD_SHOT_WAIT_MS (default 8000) adjust the window and the wait.
set -euo pipefail

if (($# != 2)); then
    echo "usage: $0 URL OUT.png" >&2
    exit 2
fi
url=$1
out=$2
size=${DASHBOARD_SHOT_SIZE:-1440x2300}
wait_ms=${DASHBOARD_SHOT_WAIT_MS:-8000}
command -v chromium >/dev/null || { echo "dashboard-shot: chromium missing (scripts/setup.sh installs it)" >&2; exit 1; }

profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
mkdir -p "$(dirname "$out")"
out_abs=$(cd "$(dirname "$out")" && pwd)/$(basename "$out")
rm -f "$out_abs"
# A throw-away profile: no state from earlier runs, no lock shared with another Chromium.
timeout 120 chromium --headless=new --no-sandbox --disable-gpu --hide-scrollbars \
    --no-first-run --user-data-dir="$profile" --window-size="${size/x/,}" \
    --virtual-time-budget="$wait_ms" --screenshot="$out_abs" "$url" >/dev/null 2>&1 || true
if [ ! -s "$out_abs" ]; then
    echo "dashboard-shot: no screenshot of $url written" >&2
    exit 1
fi
echo "$out_abs"
