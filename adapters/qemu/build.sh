#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds Debian trixie's QEMU 10.0 (qemu 1:10.0.13+ds-0+deb13u1: Debian's
# patches, then ours in adapters/qemu/patches-10.0) on bookworm, for
# x86_64-softmmu with this checkout's lapict linked in, and copies the binary
# to OUT/qemu-system-x86_64. It runs as is: its firmware and option ROMs are
# those of Debian's own QEMU 10.0, which stock.sh unpacks (no package is
# installed over bookworm's). QEMU 10 needs meson >= 1.5: meson 1.7 comes
# from bookworm-backports.
#
# Everything is cached outside the clone, under $LAPICT_CACHE (default
# /var/cache/lapict)/qemu:
#   src/<debian version>/           apt-get source (Debian's patches applied)
#   tree/<K1>/src, tree/<K1>/build  the source with our patches, configured
#   tree/<K1>/lapict-*              lapict built from lib/ + include/
#   tree/<K1>/out/<K2>/             the linked binary
#   tree/<K1>/times                 configure and ninja times of each build
# K1 = hash(Debian version, configure arguments, patches-10.0/); K2 =
# hash(K1, lib/, include/, CMakeLists.txt, cmake/lapict.pc.in, build.sh). A
# run whose binary exists only copies it; a change to lib/ rebuilds lapict
# and relinks (ninja recompiles what includes lapict's headers if they
# changed).
#
# Usage: adapters/qemu/build.sh [--key] [OUT]
#   --key  print K1/K2 and exit
#   OUT    where the binary goes (default build/qemu)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
cache_root=${LAPICT_CACHE:-/var/cache/lapict}
cache=$cache_root/qemu
print_key=false
if [ "${1:-}" = --key ]; then
    print_key=true
    shift
fi
out=${1:-$repo/build/qemu}
jobs=${LAPICT_JOBS:-2}
start=$SECONDS

log() { echo "qemu-build: $*"; }
# shellcheck source=apt.sh
. "$here/apt.sh"

# --- what QEMU is built from -------------------------------------------------
qemu_version=1:10.0.13+ds-0+deb13u1
patches=patches-10.0
# configure builds a Python venv (mkvenv): the venv module, and distlib
# (pip's copy) for its scripts.
build_pkgs=(dpkg-dev xz-utils patch gcc make cmake pkg-config python3
            python3-venv python3-pip ninja-build flex bison libglib2.0-dev
            libpixman-1-dev zlib1g-dev libfdt-dev)
run_pkgs=(ipxe-qemu)
# The firmware of Debian's own QEMU 10.0 (stock.sh unpacks it).
fw=$(bash "$here/stock.sh" --root)
# The prefix is never installed to: it only keeps QEMU from relocating the
# firmware path, which is outside it. --python: another python3 on PATH
# may not see Debian's meson module. --disable-download: the +ds source
# has no wheels, and nothing is fetched at build time.
# --disable-install-blobs: it has no firmware. No KVM: QEMU 10 runs KVM
# with the in-kernel APIC only; the userspace APIC, the one lapict drives,
# serves TCG.
configure_args=(--python=/usr/bin/python3 --disable-download
    --disable-install-blobs --target-list=x86_64-softmmu
    --prefix=/opt/lapict-qemu
    --firmwarepath="$fw/usr/share/qemu:$fw/usr/share/seabios:/usr/lib/ipxe/qemu"
    --without-default-features --enable-tcg -Dlapict=enabled
    --disable-docs --disable-tools --disable-guest-agent --disable-werror)

# --- keys -------------------------------------------------------------------
hash_files() { (cd "$repo" && find "$@" -type f -print0 | sort -z |
                xargs -0 sha256sum) | sha256sum | cut -c1-16; }
k1=$( (echo "$qemu_version ${configure_args[*]}";
       hash_files "adapters/qemu/$patches") | sha256sum | cut -c1-16)
k2=$( (echo "$k1"; hash_files lib include CMakeLists.txt cmake/lapict.pc.in \
       adapters/qemu/build.sh) | sha256sum | cut -c1-16)
if $print_key; then
    echo "$k1/$k2"
    exit 0
fi
tree=$cache/tree/$k1
bin=$tree/out/$k2/qemu-system-x86_64

# --- packages ----------------------------------------------------------------
# The build needs only these (measured: `apt-get build-dep qemu` would pull
# in ~400 packages for GUI, audio, block and network back ends that a
# x86_64-softmmu build with --without-default-features does not use).
need=()
for p in "${run_pkgs[@]}"; do
    dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
if [ ! -x "$bin" ]; then
    for p in "${build_pkgs[@]}"; do
        dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
    done
fi
export DEBIAN_FRONTEND=noninteractive
if [ ${#need[@]} -gt 0 ]; then
    log "installing ${need[*]}"
    apt-get update -qq
    apt-get install -y -q --no-install-recommends "${need[@]}"
fi

if [ ! -x "$bin" ]; then
    # QEMU 10 wants meson >= 1.5; bookworm has 1.0, bookworm-backports 1.7.
    if ! dpkg --compare-versions "$(dpkg-query -W -f '${Version}' meson \
            2>/dev/null || echo 0)" ge 1.5; then
        apt_backports
        log "installing meson from bookworm-backports"
        apt-get install -y -q --no-install-recommends -t bookworm-backports meson
    fi
fi

if [ ! -x "$bin" ]; then
    # --- Debian's source ------------------------------------------------------
    src=$cache/src/${qemu_version#*:}
    if [ ! -f "$src/.done" ]; then
        if ! apt-cache showsrc qemu 2>/dev/null | grep -q "^Version: $qemu_version$"; then
            # deb-src only: nothing from trixie is installed.
            apt_source deb-src trixie
            apt-get update -qq
        fi
        log "apt-get source qemu=$qemu_version"
        rm -rf "$src"
        mkdir -p "$src"
        # dpkg-source -x applies Debian's patches (3.0 quilt format).
        (cd "$src" && apt-get source -q --download-only "qemu=$qemu_version" &&
         dpkg-source -x --no-check qemu_*.dsc qemu) >/dev/null
        rm -f "$src"/*.orig.tar.* "$src"/*.debian.tar.*
        touch "$src/.done"
    fi

    # --- our patches, configured tree ---------------------------------------
    if [ ! -f "$tree/build/.configured" ]; then
        log "applying adapters/qemu/$patches to a copy ($tree)"
        rm -rf "$tree"
        mkdir -p "$tree"
        cp -a "$src/qemu" "$tree/src"
        while read -r p; do
            case "$p" in ''|'#'*) continue;; esac
            patch -d "$tree/src" -p1 --quiet --forward < "$here/$patches/$p"
        done < "$here/$patches/series"
    fi

    # --- lapict, static and PIC (QEMU links as PIE) -------------------------
    log "building lapict from $repo"
    # A fresh build dir each time (seconds): the cache is shared by every
    # checkout of this machine, and CMake refuses a tree configured for
    # another source directory.
    rm -rf "$tree/lapict-build" "$tree/lapict-prefix"
    nice -n 10 cmake -S "$repo" -B "$tree/lapict-build" -DCMAKE_BUILD_TYPE=Release \
        -DBUILD_SHARED_LIBS=OFF -DCMAKE_POSITION_INDEPENDENT_CODE=ON \
        -DLAPICT_BUILD_TESTS=OFF -DLAPICT_BUILD_EXAMPLES=OFF \
        -DLAPICT_BUILD_ADAPTERS=OFF >/dev/null
    nice -n 10 cmake --build "$tree/lapict-build" -j"$jobs" >/dev/null
    cmake --install "$tree/lapict-build" --prefix "$tree/lapict-prefix" >/dev/null
    # The install keeps the headers' modification times, which may be older
    # than objects compiled against the previous install: ninja would then
    # link those, built against other headers (another struct layout).
    # Newer than any object, they recompile what includes them (apic.c).
    find "$tree/lapict-prefix/include" -type f -exec touch {} +
    export PKG_CONFIG_PATH=$tree/lapict-prefix/lib/pkgconfig

    if [ ! -f "$tree/build/.configured" ]; then
        log "configuring x86_64-softmmu"
        mkdir -p "$tree/build"
        t=$SECONDS
        (cd "$tree/build" && nice -n 10 ../src/configure \
            "${configure_args[@]}" >configure.log 2>&1) ||
            { tail -30 "$tree/build/configure.log"; exit 1; }
        # Regeneration (ninja re-running meson) must find lapict again;
        # QEMU runs the meson of its own venv.
        (cd "$tree/build" && pyvenv/bin/meson configure \
            -Dpkg_config_path="$PKG_CONFIG_PATH" . >/dev/null)
        echo "configure $((SECONDS - t)) s" >> "$tree/times"
        touch "$tree/build/.configured"
    fi

    log "ninja qemu-system-x86_64 (-j$jobs, nice 10)"
    # The static library is not a tracked input of the link: force it.
    rm -f "$tree/build/qemu-system-x86_64"
    t=$SECONDS
    (cd "$tree/build" && nice -n 10 ninja -j"$jobs" qemu-system-x86_64 \
        >ninja.log 2>&1) || { tail -40 "$tree/build/ninja.log"; exit 1; }
    echo "ninja $((SECONDS - t)) s" >> "$tree/times"
    mkdir -p "$tree/out/$k2"
    cp "$tree/build/qemu-system-x86_64" "$bin.tmp"
    mv "$bin.tmp" "$bin"
fi

mkdir -p "$out"
cp "$bin" "$out/qemu-system-x86_64.tmp"
mv "$out/qemu-system-x86_64.tmp" "$out/qemu-system-x86_64"
log "$out/qemu-system-x86_64 ($k1/$k2) in $((SECONDS - start)) s"
