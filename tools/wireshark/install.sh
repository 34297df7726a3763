#!/usr/bin/env bash
# Installs the SCION / ID-INT dissector into the personal Wireshark plugin folder, where
# Wireshark and tshark load it at start-up (no -X lua_script needed). Idempotent: running it
# again only replaces the file when it changed.
#
#   tools/wireshark/install.sh            # ~/.local/lib/wireshark/plugins/scion-idint.lua
#   WIRESHARK_PLUGIN_DIR=/some/dir tools/wireshark/install.sh
#   tools/wireshark/install.sh --uninstall
set -euo pipefail

src_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
src="$src_dir/scion-idint.lua"
dest_dir="${WIRESHARK_PLUGIN_DIR:-${HOME:?HOME is not set}/.local/lib/wireshark/plugins}"
dest="$dest_dir/scion-idint.lua"

case "${1:-}" in
"") ;;
--uninstall)
    if [ -e "$dest" ]; then
        rm -f "$dest"
        echo "removed $dest"
    else
        echo "not installed ($dest)"
    fi
    exit 0
    ;;
-h | --help)
    sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'
    exit 0
    ;;
*)
    echo "usage: $0 [--uninstall]" >&2
    exit 2
    ;;
esac

[ -f "$src" ] || { echo "install.sh: $src is missing" >&2; exit 1; }
mkdir -p "$dest_dir"
if [ -f "$dest" ] && cmp -s "$src" "$dest"; then
    echo "up to date: $dest"
else
    # Copy to a temporary name first so a running Wireshark never sees half a file.
    tmp="$(mktemp "$dest_dir/.scion-idint.lua.XXXXXX")"
    cp "$src" "$tmp"
    chmod 0644 "$tmp"
    mv -f "$tmp" "$dest"
    echo "installed $dest"
fi
if command -v tshark >/dev/null 2>&1; then
    echo "check: tshark -G plugins | grep scion-idint"
fi
