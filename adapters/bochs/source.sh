# SPDX-License-Identifier: MIT
# shellcheck shell=bash disable=SC2034 # the variables are the sourcer's
# Sourced by build.sh and stock.sh: what Bochs is built from and how it is
# configured, shared so that the patched and the stock binary differ only
# in the series and --with-lapict.
#
# Debian trixie's source package bochs 3.0+dfsg-1. On bookworm its .dsc
# cannot be fetched by apt-get source (the mirror answers 404 for it) and
# would not unpack with bookworm's dpkg-source anyway, so the two tarballs
# are downloaded alone, checked against the SHA-256 sums of trixie's
# signed Sources index (apt-cache showsrc), unpacked, and debian/patches
# applied in the order of its series, as dpkg-source would.

bochs_version=3.0+dfsg-1
bochs_upstream=${bochs_version%-*}

# Headless (nogui; rfb too, which needs no library and is the one display
# whose save/restore button a script can press: snapshot.py), no plugins
# (every device linked in), the CPU features of the
# models run.sh offers (corei7_haswell_4770: x86-64, AVX2, VMX with the
# VMX-preemption timer, x2APIC, TSC-deadline; corei7_skylake_x also
# AVX-512 through EVEX), SMP as Debian builds it, the debugger for the
# instruction limit (its "sb" command) and no readline, so the binary
# does not depend on what happens to be installed on the build host.
bochs_configure_args=(--with-nogui --with-rfb --disable-plugins --enable-x86-64
    --enable-cpu-level=6 --enable-smp --enable-vmx=2 --enable-avx
    --enable-evex --enable-pci --enable-cdrom --enable-a20-pin --enable-fpu
    --enable-all-optimizations --enable-repeat-speedups --enable-debugger
    --disable-debugger-gui --disable-readline --disable-docbook)

bochs_build_pkgs=(dpkg-dev xz-utils patch g++ make pkg-config cmake)

bochs_log() { echo "${bochs_me:-bochs}: $*" >&2; }
bochs_fail() { echo "${bochs_me:-bochs}: $*" >&2; exit 1; }

# bochs_install_pkgs PKG...: installs the ones missing (apt-get, as root;
# apt.sh, which the caller sources).
bochs_install_pkgs() {
    apt_missing "$@"
    [ ${#apt_missing[@]} -gt 0 ] || return 0
    [ "$(id -u)" -eq 0 ] ||
        bochs_fail "missing Debian packages: ${apt_missing[*]}; as root run:" \
            "apt-get install -y --no-install-recommends ${apt_missing[*]}"
    apt_install_missing "$@"
}

# bochs_source DIR: DIR/bochs holds Debian's source with
# Debian's patches applied (DIR/.done marks it complete).
bochs_source() {
    local dir=$1 sums f want got p
    [ -f "$dir/.done" ] && return 0
    if ! apt-cache showsrc bochs 2>/dev/null |
            grep -q "^Version: $bochs_version$"; then
        # deb-src only: nothing from trixie is installed.
        apt_source deb-src trixie
        apt-get update -qq >&2
    fi
    # The sums of this version's files, from the signed index.
    sums=$(apt-cache showsrc bochs | awk -v v="$bochs_version" '
        /^Package:/ { inv = 0 } $0 == "Version: " v { inv = 1 }
        inv && /^Checksums-Sha256:/ { c = 1; next }
        c && /^ / { print $1, $3; next } { c = 0 }')
    [ -n "$sums" ] || bochs_fail "no SHA-256 sums for bochs $bochs_version"
    rm -rf "$dir"
    mkdir -p "$dir"
    bochs_log "downloading bochs $bochs_version's tarballs into $dir"
    # apt-get fails on the .dsc (404); the tarballs it got are checked
    # below, one by one.
    (cd "$dir" && apt-get source -q --download-only "bochs=$bochs_version" \
        >apt.log 2>&1) || true
    for f in "bochs_$bochs_upstream.orig.tar.xz" \
             "bochs_$bochs_version.debian.tar.xz"; do
        want=$(awk -v f="$f" '$2 == f { print $1 }' <<<"$sums")
        [ -f "$dir/$f" ] || { cat "$dir/apt.log" >&2;
                              bochs_fail "apt-get source did not fetch $f"; }
        got=$(sha256sum "$dir/$f" | cut -d' ' -f1)
        if [ -z "$want" ] || [ "$got" != "$want" ]; then
            bochs_fail "$f: SHA-256 $got, trixie's index says ${want:-nothing}"
        fi
    done
    mkdir "$dir/bochs"
    tar -C "$dir/bochs" --strip-components=1 --no-same-owner \
        -xf "$dir/bochs_$bochs_upstream.orig.tar.xz"
    tar -C "$dir/bochs" --no-same-owner \
        -xf "$dir/bochs_$bochs_version.debian.tar.xz"
    while read -r p; do
        case "$p" in ''|'#'*) continue;; esac
        patch -d "$dir/bochs" -p1 --quiet --forward \
            <"$dir/bochs/debian/patches/${p%% *}" ||
            bochs_fail "Debian's patch $p does not apply"
    done <"$dir/bochs/debian/patches/series"
    rm -f "$dir"/*.tar.xz "$dir"/*.dsc
    touch "$dir/.done"
}
