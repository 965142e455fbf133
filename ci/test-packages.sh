#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The Debian packages (debian/): build them with dpkg-buildpackage from a
# copy of the tree, run lintian over them, unpack them into a scratch root
# with dpkg -x, and use that root the way a distribution's user would: the
# consumer project (tests/consumer) through find_package and pkg-config,
# the installed examples through their own CMakeLists.txt, the installed
# lapict-replay, the installed man pages and documents.
#
#   bash ci/test-packages.sh        (LAPICT_PKG_DIR, default build-ci/packages)
#
# dpkg-buildpackage writes its results into the parent of the tree it
# builds, so it builds a copy inside LAPICT_PKG_DIR: nothing is written
# beside the clone. lintian may report no error, and only the warnings that
# debian/README.source lists and justifies.
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
start=$SECONDS

fail() {
    echo "test-packages: FAILED: $*" >&2
    exit 1
}

for t in dpkg-buildpackage dh lintian scdoc cmake pkg-config man; do
    command -v "$t" >/dev/null 2>&1 ||
        fail "$t not found (bash ci/deps.sh installs what is needed)"
done

# --- versions: CMakeLists.txt, debian/changelog, debian/control agree ------
version=$(sed -n 's/^project(lapict VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
soversion=$(sed -n 's/^set(LAPICT_SOVERSION \([0-9]*\))$/\1/p' CMakeLists.txt)
[ -n "$version" ] && [ -n "$soversion" ] ||
    fail "cannot read the version / LAPICT_SOVERSION from CMakeLists.txt"
header=$(sed -n 's/^#define LAPICT_VERSION_STRING "\(.*\)"$/\1/p' include/lapict/version.h)
[ "$header" = "$version" ] ||
    fail "include/lapict/version.h says $header, CMakeLists.txt $version"
debversion=$(dpkg-parsechangelog -l debian/changelog -S Version)
# A version CHANGELOG.md has not dated yet is packaged as a pre-release of
# it (X.Y.Z~dev, which sorts before X.Y.Z): a package never claims a
# release that was not made. A dated one is packaged as itself.
if grep -q "^## \[$version\] - Unreleased" CHANGELOG.md; then
    want=$version~dev
elif grep -Eq "^## \[$version\] - [0-9]{4}-[0-9]{2}-[0-9]{2}$" CHANGELOG.md; then
    want=$version
else
    fail "CHANGELOG.md has no entry for $version"
fi
[ "${debversion%-*}" = "$want" ] ||
    fail "debian/changelog is at ${debversion%-*}, CHANGELOG.md's $version wants" \
         "$want (CONTRIBUTING.md, 'Releasing': add a debian/changelog entry)"
libpkg=liblapict$soversion
grep -qx "Package: $libpkg" debian/control ||
    fail "debian/control has no package $libpkg for LAPICT_SOVERSION" \
         "$soversion (rename the library package and debian/$libpkg.install)"
[ -f "debian/$libpkg.install" ] || fail "debian/$libpkg.install is missing"
arch=$(dpkg-architecture -qDEB_HOST_ARCH)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)

# --- build from a copy ---------------------------------------------------
work=${LAPICT_PKG_DIR:-build-ci/packages}
mkdir -p "$work"
work=$(cd "$work" && pwd)
case $work/ in
"$src"/build/* | "$src"/build-*/*) ;;
"$src"/*) fail "LAPICT_PKG_DIR must be outside the tree or in a build-* dir" ;;
esac
# Only what this script writes there (LAPICT_PKG_DIR may be any folder).
rm -rf "$work"/lapict-[0-9]* "$work/root" "$work/consumer" "$work/examples" \
    "$work"/*.deb "$work"/*.changes "$work"/*.buildinfo \
    "$work/build.log" "$work/lintian.txt" "$work/vmm-strings.txt"
tree=$work/lapict-$version
mkdir -p "$tree"
tar -C "$src" --exclude=./.git --exclude=./build --exclude='./build-*' -cf - . |
    tar -C "$tree" -xf -
echo "test-packages: dpkg-buildpackage -us -uc -b in $tree"
if ! (cd "$tree" && dpkg-buildpackage -us -uc -b) >"$work/build.log" 2>&1; then
    tail -n 40 "$work/build.log" >&2
    fail "dpkg-buildpackage (log: $work/build.log)"
fi
grep -E '^dpkg-deb: building package' "$work/build.log" || true
changes=$work/lapict_${debversion}_${arch}.changes
[ -f "$changes" ] || fail "no $changes"

# --- lintian: no error, only justified warnings --------------------------
echo "test-packages: lintian $changes"
lintian_rc=0
lintian --fail-on error --display-info "$changes" >"$work/lintian.txt" 2>&1 ||
    lintian_rc=$?
cat "$work/lintian.txt"
grep -q '^E: ' "$work/lintian.txt" && fail "lintian reports errors"
[ "$lintian_rc" -eq 0 ] || fail "lintian exited $lintian_rc"
# The justified warnings: "- `tag`: why" lines of debian/README.source.
allowed=$(sed -n 's/^- `\([a-z0-9-]*\)`.*/\1/p' debian/README.source)
unjustified=""
for tag in $(sed -n 's/^W: [^:]*: \([a-z0-9-]*\).*/\1/p' "$work/lintian.txt" | sort -u); do
    if ! grep -qx "$tag" <<<"$allowed"; then
        unjustified="$unjustified $tag"
    fi
done
[ -z "$unjustified" ] ||
    fail "lintian warnings not justified in debian/README.source:$unjustified"
echo "test-packages: lintian: 0 errors;" \
     "$(grep -c '^W: ' "$work/lintian.txt" || true) warnings, all justified"

# --- unpack into a scratch root -------------------------------------------
root=$work/root
# Every package debian/control builds for this architecture.
adapter_soversion=$(sed -n 's/^set(LAPICT_ADAPTER_SOVERSION \([0-9]*\))$/\1/p' CMakeLists.txt)
[ -n "$adapter_soversion" ] ||
    fail "cannot read LAPICT_ADAPTER_SOVERSION from CMakeLists.txt"
adapters="apic sim baremetal"
[ "$arch" = amd64 ] && adapters="kvm $adapters"
pkgs="$libpkg liblapict-dev lapict-tools"
for a in $adapters; do
    pkgs="$pkgs liblapict-$a$adapter_soversion liblapict-$a-dev"
done
for pkg in $pkgs; do
    deb=$work/${pkg}_${debversion}_${arch}.deb
    [ -f "$deb" ] || fail "no $deb"
    dpkg -x "$deb" "$root"
done
libdir=$root/usr/lib/$multiarch
# Each library package holds the library its name says, with that SONAME.
check_soname() { # file soname package
    [ -e "$libdir/$1" ] || fail "$3 has no $1"
    [ "$(objdump -p "$libdir/$1" | awk '/SONAME/ {print $2}')" = "$2" ] ||
        fail "$1: SONAME is not $2"
}
check_soname "liblapict.so.$soversion" "liblapict.so.$soversion" "$libpkg"
for a in $adapters; do
    so=liblapict-$a.so.$adapter_soversion
    check_soname "$so" "$so" "liblapict-$a$adapter_soversion"
done
# The LAPIC model's functions are liblapict-apic's alone; the KVM adapter,
# built on it, needs that library instead of carrying a copy.
apic_so=liblapict-apic.so.$adapter_soversion
exports=$(nm -D --defined-only "$libdir/$apic_so")
grep -q ' T lapict_apic_init$' <<<"$exports" ||
    fail "$apic_so does not export lapict_apic_init"
if [ "$arch" = amd64 ]; then
    kvm_so=liblapict-kvm.so.$adapter_soversion
    grep -Eq "NEEDED +$apic_so\$" <<<"$(objdump -p "$libdir/$kvm_so")" ||
        fail "$kvm_so does not need $apic_so"
    ! grep -q ' T lapict_apic_' <<<"$(nm -D --defined-only "$libdir/$kvm_so")" ||
        fail "$kvm_so defines lapict_apic_* functions, $apic_so's"
    echo "test-packages: $kvm_so needs $apic_so, which alone defines lapict_apic_*"
fi

# The installed tools run on the installed library.
echo "test-packages: installed lapict-replay on the docs/spec/replay.md example"
LD_LIBRARY_PATH=$libdir cmake -DCOMMAND="$root/usr/bin/lapict-replay" \
    -DARGS="$src/tools/replay/example.trace" \
    -DEXPECTED="$src/tools/replay/example.expected" \
    -P cmake/compare_output.cmake
for tool in lapict-replay lapict-vmm lapict-bench; do
    page=$root/usr/share/man/man1/$tool.1.gz
    [ -f "$page" ] || fail "lapict-tools has no man page $tool.1"
    err=$(MANWIDTH=80 man -l "$page" 2>&1 >/dev/null) || fail "man -l $page"
    [ -z "$err" ] || fail "man -l $page: $err"
    LD_LIBRARY_PATH=$libdir "$root/usr/bin/$tool" --help >/dev/null ||
        fail "installed $tool --help"
done
# liblapict-dev: the documents a user reads, .md uncompressed
# (dh_compress -X.md), and the section-3 pages by name, as after
# `apt install liblapict-dev`: lapict(3), a header's, a function's.
docdir=$root/usr/share/doc/liblapict-dev
for doc in README.md porting.md design.md spec/timer.md spec/replay.md spec/state.md \
           html/index.html examples/CMakeLists.txt examples/embed_sim.c \
           examples/kvm_loop.c; do
    [ -f "$docdir/$doc" ] || fail "liblapict-dev has no $doc in $docdir"
done
for name in lapict lapict-timer lapict_init lapict_strerror; do
    err=$(MANWIDTH=80 MANPAGER=cat man -M "$root/usr/share/man" "$name" 2>&1 >/dev/null) ||
        fail "man $name (liblapict-dev's pages)"
    [ -z "$err" ] || fail "man $name: $err"
done
echo "test-packages: liblapict-dev: README, porting guide, spec, examples, HTML" \
     "reference; man lapict, man lapict_init"
# Each adapter's -dev package: its README, its page and a function's.
for a in $adapters; do
    [ -f "$root/usr/share/doc/liblapict-$a-dev/README.md" ] ||
        fail "liblapict-$a-dev has no README.md"
    case $a in
    kvm) names="lapict-kvm lapict_kvm_pre_run" ;;
    apic) names="lapict-apic lapict_apic_mmio" ;;
    sim) names="lapict-sim lapict_sim_init" ;;
    baremetal) names="lapict-baremetal lapict_bm_cpu_init" ;;
    esac
    for name in $names; do
        err=$(MANWIDTH=80 MANPAGER=cat man -M "$root/usr/share/man" "$name" 2>&1 >/dev/null) ||
            fail "man $name (liblapict-$a-dev's pages)"
        [ -z "$err" ] || fail "man $name: $err"
    done
done
# lapict-vmm loads its guest images from where the package puts them.
# (strings into a file: with pipefail, grep -q closing the pipe early would
# fail the pipeline.)
strings "$root/usr/bin/lapict-vmm" >"$work/vmm-strings.txt"
for image in $(grep '^/usr/lib/lapict/' "$work/vmm-strings.txt" || true); do
    [ -f "$root$image" ] || fail "lapict-vmm expects $image, not in lapict-tools"
    echo "test-packages: lapict-vmm default image $image: packaged"
done
grep -q '^/usr/lib/lapict/lapict-vmm-guest' "$work/vmm-strings.txt" ||
    fail "lapict-vmm's default guest is not under /usr/lib/lapict"

# The installed documents' relative links resolve in the packages: in
# liblapict-dev's directory, and in each adapter's (whose README names the
# core's documents by their installed paths instead).
for dir in "$root"/usr/share/doc/liblapict-dev "$root"/usr/share/doc/liblapict-*-dev; do
    cmake -DDIR="$dir" -P cmake/check_doc_links.cmake
done

# --- the consumer project against the root --------------------------------
cmake -DINSTALLED_PREFIX="$root/usr" -DSOURCE_DIR="$src/tests/consumer" \
    -DWORK_DIR="$work/consumer" -DC_COMPILER=gcc \
    -DLIBDIR="lib/$multiarch" -DPKG_CONFIG="$(command -v pkg-config)" \
    -P cmake/test_consumer.cmake

# --- the installed examples, built on their own against the root -----------
echo "test-packages: the examples of liblapict-dev, with their CMakeLists.txt"
cmake -DEXAMPLES_DIR="$docdir/examples" -DPREFIX="$root/usr" \
    -DWORK_DIR="$work/examples" -DLIBDIR="lib/$multiarch" -DC_COMPILER=gcc \
    -P cmake/test_installed_examples.cmake

debs=""
for deb in "$work"/*.deb; do
    debs="$debs ${deb##*/}"
done
echo "test-packages: passed in $((SECONDS - start))s:$debs"
