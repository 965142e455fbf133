#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Debian trixie's Bochs 3.0 (bochs 3.0+dfsg-1, Debian's patches applied),
# without adapters/bochs/patches-3.0, built on bookworm with the same
# configuration as build.sh's (source.sh) but no lapict: the baseline the
# patched binary is compared with. Copies it to OUT/bochs.
#
# Cached outside the clone, under $LAPICT_CACHE (default
# /var/cache/lapict)/bochs:
#   src/<debian version>/bochs   Debian's source, Debian's patches applied
#   stock/<KS>/src               that source, configured and built
#   stock/<KS>/bochs             the binary
#   stock/<KS>/times             configure and make times
# KS = hash(Debian version, configure arguments). A run whose binary
# exists only copies it.
#
# Usage: adapters/bochs/stock.sh [--key] [OUT]
#   --key  print KS and exit
#   OUT    where the binary goes (default build/bochs-stock)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
bochs_me=bochs-stock # used by source.sh
export bochs_me
# shellcheck source=adapters/qemu/apt.sh
. "$here/../qemu/apt.sh"
# shellcheck source=adapters/bochs/source.sh
. "$here/source.sh"
cache=${LAPICT_CACHE:-/var/cache/lapict}/bochs
jobs=${LAPICT_JOBS:-2}
print_key=false
if [ "${1:-}" = --key ]; then
    print_key=true
    shift
fi
[ $# -le 1 ] || bochs_fail "usage: adapters/bochs/stock.sh [--key] [OUT]"
out=${1:-$repo/build/bochs-stock}
start=$SECONDS

ks=$(echo "$bochs_version ${bochs_configure_args[*]} stock" | sha256sum |
     cut -c1-16)
if $print_key; then
    echo "$ks"
    exit 0
fi
dir=$cache/stock/$ks
bin=$dir/bochs

if [ ! -x "$bin" ]; then
    bochs_install_pkgs "${bochs_build_pkgs[@]}"
    bochs_source "$cache/src/$bochs_version"
    rm -rf "$dir"
    mkdir -p "$dir"
    cp -a "$cache/src/$bochs_version/bochs" "$dir/src"
    bochs_log "configuring ($dir/src)"
    t=$SECONDS
    (cd "$dir/src" && nice -n 10 ./configure "${bochs_configure_args[@]}" \
        >configure.log 2>&1) ||
        { tail -30 "$dir/src/configure.log" >&2; bochs_fail "configure failed"; }
    echo "configure $((SECONDS - t)) s" >>"$dir/times"
    bochs_log "make -j$jobs bochs (nice 10)"
    t=$SECONDS
    (cd "$dir/src" && nice -n 10 make -j"$jobs" bochs >make.log 2>&1) ||
        { tail -40 "$dir/src/make.log" >&2; bochs_fail "make failed"; }
    echo "make $((SECONDS - t)) s" >>"$dir/times"
    syms=$(nm "$dir/src/bochs")
    if grep -q ' lapict_' <<<"$syms"; then
        bochs_fail "the stock binary links lapict"
    fi
    cp "$dir/src/bochs" "$bin.tmp"
    mv "$bin.tmp" "$bin"
fi

mkdir -p "$out"
cp "$bin" "$out/bochs.tmp"
mv "$out/bochs.tmp" "$out/bochs"
bochs_log "$out/bochs ($ks) in $((SECONDS - start)) s"
