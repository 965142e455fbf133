#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds Debian trixie's QEMU 10.0 (qemu 1:10.0.13+ds-0+deb13u1: Debian's
# patches, then ours in adapters/qemu/patches-10.0) on bookworm, for
# x86_64-softmmu with this checkout's lapict linked in, and copies the binary
# to OUT/qemu-system-x86_64 and lapict's licence, which QEMU installs, to
# OUT/LICENSE.lapict. The same tree built with -Dlapict=disabled gives
# OUT/disabled/qemu-system-x86_64, which links no lapict. Both run as is:
# their firmware and option ROMs are those of Debian's own QEMU 10.0, which
# stock.sh unpacks (no package is installed over bookworm's). QEMU 10 needs
# meson >= 1.5: meson 1.7 comes from bookworm-backports.
#
# Everything is cached outside the clone, under $LAPICT_CACHE (default
# /var/cache/lapict)/qemu:
#   src/<debian version>/           apt-get source (Debian's patches applied)
#   tree/<K1>/src, tree/<K1>/build  the source with our patches, configured
#   tree/<K1>/lapict-*              lapict built from lib/ + include/
#   tree/<K1>/out/<K2>/             the linked binary and lapict's licence
#   tree/<K1>/disabled/<KD>/        the binary built with -Dlapict=disabled
#   tree/<K1>/times                 configure and ninja times of each build
# K1 = hash(Debian version, configure arguments, patches-10.0/); K2 =
# hash(K1, lib/, include/, CMakeLists.txt, cmake/lapict.pc.in, LICENSE,
# build.sh); KD = hash(K1, build.sh). A run whose binaries exist only
# copies them; a change to lib/ rebuilds lapict and relinks (ninja
# recompiles what includes lapict's headers if they changed).
#
# The disabled binary comes from the same tree: the patches keep
# CONFIG_LAPICT out of config-host.h (in lapict-config.h, which only the
# files that test it include), so toggling the meson option recompiles
# those and the target's files (lapict's include path is on their command
# line) and relinks. A fresh tree builds the disabled binary first and the
# enabled one last, so the tree stays enabled for the next lib/ change.
#
# Usage: adapters/qemu/build.sh [--key] [OUT]
#   --key  print K1/K2/KD and exit
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
fail() { echo "qemu-build: $*" >&2; exit 1; }
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
       LICENSE adapters/qemu/build.sh) | sha256sum | cut -c1-16)
kd=$( (echo "$k1 disabled"; hash_files adapters/qemu/build.sh) |
     sha256sum | cut -c1-16)
if $print_key; then
    echo "$k1/$k2/$kd"
    exit 0
fi
tree=$cache/tree/$k1
bin=$tree/out/$k2/qemu-system-x86_64
dbin=$tree/disabled/$kd/qemu-system-x86_64
need_build=false
if [ ! -x "$bin" ] || [ ! -x "$dbin" ]; then
    need_build=true
fi

# lapict's own symbols (lapict_*) in a linked binary; fails without any.
lapict_symbols() {
    [ "$(nm -P --defined-only "$1" | wc -l)" -gt 1000 ] ||
        fail "$1: no symbol table to check"
    nm -P --defined-only "$1" | awk '$1 ~ /^lapict_/ { print $1; n++ }
                                    END { exit !n }'
}

# The tree's -Dlapict: meson configure rewrites it only when it differs
# (a rewrite makes the next ninja run meson again).
lapict_option() {
    python3 -c 'import json, sys
print(next(o["value"] for o in json.load(open(sys.argv[1]))
           if o["name"] == "lapict"))' \
        "$tree/build/meson-info/intro-buildoptions.json"
}
set_lapict() {
    if [ "$(lapict_option)" != "$1" ]; then
        log "meson configure -Dlapict=$1"
        (cd "$tree/build" && pyvenv/bin/meson configure -Dlapict="$1" . \
            >/dev/null)
        [ "$(lapict_option)" = "$1" ] || fail "-Dlapict=$1 did not take"
    fi
}

# Links qemu-system-x86_64 in the tree with -Dlapict=$1.
variant() {
    set_lapict "$1"
    log "ninja qemu-system-x86_64, -Dlapict=$1 (-j$jobs, nice 10)"
    # The static library is not a tracked input of the link: force it.
    rm -f "$tree/build/qemu-system-x86_64"
    t=$SECONDS
    (cd "$tree/build" && nice -n 10 ninja -j"$jobs" qemu-system-x86_64 \
        >ninja.log 2>&1) || { tail -40 "$tree/build/ninja.log"; exit 1; }
    echo "ninja ($1) $((SECONDS - t)) s" >> "$tree/times"
}

# --- packages ----------------------------------------------------------------
# The build needs only these (measured: `apt-get build-dep qemu` would pull
# in ~400 packages for GUI, audio, block and network back ends that a
# x86_64-softmmu build with --without-default-features does not use).
need=()
for p in "${run_pkgs[@]}"; do
    dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
if $need_build; then
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

if $need_build; then
    # QEMU 10 wants meson >= 1.5; bookworm has 1.0, bookworm-backports 1.7.
    if ! dpkg --compare-versions "$(dpkg-query -W -f '${Version}' meson \
            2>/dev/null || echo 0)" ge 1.5; then
        apt_backports
        log "installing meson from bookworm-backports"
        apt-get install -y -q --no-install-recommends -t bookworm-backports meson
    fi
fi

if $need_build; then
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

    # --- the two binaries -----------------------------------------------------
    if [ ! -x "$dbin" ]; then
        variant disabled
        lapict_symbols "$tree/build/qemu-system-x86_64" >/dev/null &&
            fail "the -Dlapict=disabled binary links lapict"
        mkdir -p "$tree/disabled/$kd"
        cp "$tree/build/qemu-system-x86_64" "$dbin.tmp"
        mv "$dbin.tmp" "$dbin"
    fi
    if [ ! -x "$bin" ]; then
        variant enabled
        lapict_symbols "$tree/build/qemu-system-x86_64" >/dev/null ||
            fail "the -Dlapict=enabled binary does not link lapict"
        # The licence QEMU's install puts beside its documentation.
        lic=$(python3 - "$tree/build/meson-info/intro-installed.json" <<'EOS'
import json, sys
for src, dst in json.load(open(sys.argv[1])).items():
    if dst.endswith("/lapict/LICENSE"):
        print(src)
EOS
)
        [ -n "$lic" ] || fail "QEMU's install has no lapict/LICENSE"
        cmp -s "$lic" "$repo/LICENSE" ||
            fail "QEMU installs $lic as lapict's licence, not $repo/LICENSE"
        mkdir -p "$tree/out/$k2"
        cp "$lic" "$tree/out/$k2/LICENSE.lapict"
        cp "$tree/build/qemu-system-x86_64" "$bin.tmp"
        mv "$bin.tmp" "$bin"
    fi
    # A run that built the disabled binary alone leaves the tree disabled:
    # the next one must not link a binary that lacks lapict.
    set_lapict enabled
fi

mkdir -p "$out/disabled"
cp "$bin" "$out/qemu-system-x86_64.tmp"
mv "$out/qemu-system-x86_64.tmp" "$out/qemu-system-x86_64"
cp "$tree/out/$k2/LICENSE.lapict" "$out/LICENSE.lapict"
cp "$dbin" "$out/disabled/qemu-system-x86_64.tmp"
mv "$out/disabled/qemu-system-x86_64.tmp" "$out/disabled/qemu-system-x86_64"
log "$out/qemu-system-x86_64, $out/disabled/qemu-system-x86_64" \
    "($k1/$k2/$kd) in $((SECONDS - start)) s"
