#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds Debian trixie's Bochs 3.0 (bochs 3.0+dfsg-1: Debian's patches,
# then ours in adapters/bochs/patches-3.0) on bookworm, configured as
# stock.sh's (source.sh) plus --with-lapict, with this checkout's lapict
# linked in (found through pkg-config), and copies the binary to
# OUT/bochs and lapict's licence to OUT/LICENSE.lapict.
#
# Everything is cached outside the clone, under $LAPICT_CACHE (default
# /var/cache/lapict)/bochs:
#   src/<debian version>/bochs   Debian's source (Debian's patches applied)
#   tree/<K1>/src                with our patches, configured and built
#   tree/<K1>/lapict-*           lapict built from lib/ + include/
#   tree/<K1>/out/<K2>/          the linked binary and lapict's licence
#   tree/<K1>/times              configure and make times of each build
# K1 = hash(Debian version, configure arguments, patches-3.0/); K2 =
# hash(K1, lib/, include/, CMakeLists.txt, cmake/lapict.pc.in, LICENSE,
# build.sh). A run whose binary exists only copies it. Another K2 rebuilds
# lapict and relinks; when include/ changed too, the tree is rebuilt from
# clean, as Bochs's makefiles do not see headers outside the tree (cpu.h
# includes apic.h, which includes lapict's).
#
# Usage: adapters/bochs/build.sh [--key] [OUT]
#   --key  print K1/K2 and exit
#   OUT    where the binary goes (default build/bochs)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
bochs_me=bochs-build # used by source.sh
export bochs_me
# shellcheck source=adapters/qemu/apt.sh
. "$here/../qemu/apt.sh"
# shellcheck source=adapters/bochs/source.sh
. "$here/source.sh"
cache=${LAPICT_CACHE:-/var/cache/lapict}/bochs
jobs=${LAPICT_JOBS:-2}
patches="patches-3.0"
print_key=false
if [ "${1:-}" = --key ]; then
    print_key=true
    shift
fi
[ $# -le 1 ] || bochs_fail "usage: adapters/bochs/build.sh [--key] [OUT]"
out=${1:-$repo/build/bochs}
start=$SECONDS
configure_args=("${bochs_configure_args[@]}" --with-lapict)

hash_files() { (cd "$repo" && find "$@" -type f -print0 | sort -z |
                xargs -0 sha256sum) | sha256sum | cut -c1-16; }
k1=$( (echo "$bochs_version ${configure_args[*]}";
       hash_files "adapters/bochs/$patches") | sha256sum | cut -c1-16)
k2=$( (echo "$k1"; hash_files lib include CMakeLists.txt cmake/lapict.pc.in \
       LICENSE adapters/bochs/build.sh) | sha256sum | cut -c1-16)
kinc=$(hash_files include)
if $print_key; then
    echo "$k1/$k2"
    exit 0
fi
tree=$cache/tree/$k1
bin=$tree/out/$k2/bochs

if [ ! -x "$bin" ]; then
    bochs_install_pkgs "${bochs_build_pkgs[@]}"
    bochs_source "$cache/src/$bochs_version"

    # --- our patches ----------------------------------------------------
    if [ ! -f "$tree/src/.configured" ]; then
        bochs_log "applying adapters/bochs/$patches to a copy ($tree)"
        rm -rf "$tree"
        mkdir -p "$tree"
        cp -a "$cache/src/$bochs_version/bochs" "$tree/src"
        while read -r p; do
            case "$p" in ''|'#'*) continue;; esac
            [ -f "$here/$patches/$p" ] ||
                bochs_fail "$patches/series names $p, which is not there"
            patch -d "$tree/src" -p1 --quiet --forward <"$here/$patches/$p" ||
                bochs_fail "$patches/$p does not apply"
        done <"$here/$patches/series"
    fi

    # --- lapict, static and PIC ------------------------------------------
    # A fresh build dir each time (seconds): the cache is shared by every
    # checkout of this machine, and CMake refuses a tree configured for
    # another source directory.
    bochs_log "building lapict from $repo"
    rm -rf "$tree/lapict-build" "$tree/lapict-prefix"
    nice -n 10 cmake -S "$repo" -B "$tree/lapict-build" \
        -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
        -DCMAKE_POSITION_INDEPENDENT_CODE=ON -DLAPICT_BUILD_TESTS=OFF \
        -DLAPICT_BUILD_EXAMPLES=OFF -DLAPICT_BUILD_ADAPTERS=OFF \
        -DLAPICT_BUILD_TOOLS=OFF >/dev/null
    nice -n 10 cmake --build "$tree/lapict-build" -j"$jobs" >/dev/null
    cmake --install "$tree/lapict-build" --prefix "$tree/lapict-prefix" \
        >/dev/null
    export PKG_CONFIG_PATH=$tree/lapict-prefix/lib/pkgconfig

    if [ ! -f "$tree/src/.configured" ]; then
        bochs_log "configuring --with-lapict ($tree/src)"
        t=$SECONDS
        (cd "$tree/src" && nice -n 10 ./configure "${configure_args[@]}" \
            >configure.log 2>&1) ||
            { tail -30 "$tree/src/configure.log" >&2;
              bochs_fail "configure failed"; }
        grep -q '^#define BX_WITH_LAPICT 1' "$tree/src/config.h" ||
            bochs_fail "configure --with-lapict did not define BX_WITH_LAPICT"
        echo "configure $((SECONDS - t)) s" >>"$tree/times"
        echo "$kinc" >"$tree/include.hash"
        touch "$tree/src/.configured"
    elif [ "$(cat "$tree/include.hash" 2>/dev/null)" != "$kinc" ]; then
        # all-clean: the top-level clean leaves the subdirectories' objects.
        bochs_log "lapict's headers changed: make all-clean"
        (cd "$tree/src" && make all-clean >/dev/null)
        echo "$kinc" >"$tree/include.hash"
    fi

    # The static library is not a prerequisite of the link: force it.
    rm -f "$tree/src/bochs"
    bochs_log "make -j$jobs bochs (nice 10)"
    t=$SECONDS
    (cd "$tree/src" && nice -n 10 make -j"$jobs" bochs >make.log 2>&1) ||
        { tail -40 "$tree/src/make.log" >&2; bochs_fail "make failed"; }
    echo "make $((SECONDS - t)) s" >>"$tree/times"
    # (Not nm | grep -q: grep's early exit would fail nm under pipefail.)
    syms=$(nm "$tree/src/bochs")
    grep -q ' T lapict_init$' <<<"$syms" ||
        bochs_fail "the --with-lapict binary does not link lapict"
    mkdir -p "$tree/out/$k2"
    cp "$repo/LICENSE" "$tree/out/$k2/LICENSE.lapict"
    cp "$tree/src/bochs" "$bin.tmp"
    mv "$bin.tmp" "$bin"
fi

mkdir -p "$out"
cp "$bin" "$out/bochs.tmp"
mv "$out/bochs.tmp" "$out/bochs"
cp "$tree/out/$k2/LICENSE.lapict" "$out/LICENSE.lapict"
bochs_log "$out/bochs ($k1/$k2) in $((SECONDS - start)) s"
