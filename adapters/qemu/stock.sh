#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Debian's own QEMU 10.0, unchanged, for interoperability and baselines:
# bookworm-backports' qemu-system-x86 with the qemu-system-data and seabios
# it depends on, unpacked (dpkg -x) under $LAPICT_CACHE (default
# /var/cache/lapict)/qemu/stock/<version>/root. Nothing is installed over
# bookworm's packages, so bookworm's own QEMU and its firmware stay as
# they are; only the shared libraries the binary links are installed, from
# bookworm. The firmware also serves build.sh's --qemu 10.0 binary.
#
# Usage: adapters/qemu/stock.sh [--root] [OUT]
#   --root  print the unpacked root (after unpacking it if needed)
#   OUT     writes OUT/qemu-system-x86_64, a wrapper that runs the binary
#           with its firmware (-L), default build/qemu-stock
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
# shellcheck source=apt.sh
. "$here/apt.sh"
version=1:10.0.2+ds-2+deb13u1~bpo12+1
seabios=1.16.3-2~bpo12+1
dir=${LAPICT_CACHE:-/var/cache/lapict}/qemu/stock/${version#*:}
root=$dir/root
print_root=false
if [ "${1:-}" = --root ]; then
    print_root=true
    shift
fi
out=${1:-$repo/build/qemu-stock}
export DEBIAN_FRONTEND=noninteractive

log() { echo "qemu-stock: $*" >&2; }

if [ ! -f "$dir/.done" ]; then
    apt_backports
    log "unpacking qemu-system-x86 $version into $root"
    rm -rf "$dir"
    mkdir -p "$dir/debs"
    # (apt warns that its sandbox user cannot write here; the download is
    # checked all the same: signed Release, hashes.)
    (cd "$dir/debs" && apt-get download -q "qemu-system-x86=$version" \
        "qemu-system-data=$version" "seabios=$seabios" >&2)
    for d in "$dir"/debs/*.deb; do
        dpkg -x "$d" "$root"
    done
    # The libraries qemu-system-x86 depends on (bookworm's).
    libs=$(dpkg-deb -f "$dir"/debs/qemu-system-x86_*.deb Depends |
           tr ',' '\n' | sed 's/^ *//; s/ .*//' | grep -E '^(lib|zlib)')
    need=()
    for p in $libs; do
        dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
    done
    if [ ${#need[@]} -gt 0 ]; then
        log "installing ${need[*]}"
        apt-get install -y -q --no-install-recommends "${need[@]}" >&2
    fi
    if ldd "$root/usr/bin/qemu-system-x86_64" | grep -q 'not found'; then
        ldd "$root/usr/bin/qemu-system-x86_64" | grep 'not found' >&2
        exit 1
    fi
    rm -rf "$dir/debs"
    touch "$dir/.done"
fi

if $print_root; then
    echo "$root"
    exit 0
fi
mkdir -p "$out"
cat > "$out/qemu-system-x86_64.tmp" <<EOS
#!/bin/sh
# Debian's qemu-system-x86 $version (adapters/qemu/stock.sh).
exec $root/usr/bin/qemu-system-x86_64 -L $root/usr/share/qemu \\
    -L $root/usr/share/seabios -L /usr/lib/ipxe/qemu "\$@"
EOS
chmod +x "$out/qemu-system-x86_64.tmp"
mv "$out/qemu-system-x86_64.tmp" "$out/qemu-system-x86_64"
log "$out/qemu-system-x86_64"
