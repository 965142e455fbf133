#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds the Linux guest of the QEMU tests from Debian packages only:
# linux-image-cloud-amd64's kernel, and an initramfs with busybox-static,
# rt-tests' cyclictest and the shared libraries it needs (libc6, libnuma1),
# and ./init. Cached outside the clone, keyed by the package versions and
# this folder's files; the result is copied to OUT (default build/qemu/guest):
#   OUT/vmlinuz  OUT/initrd.img
# Usage: adapters/qemu/guest/mkimage.sh [OUT]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
out=${1:-$repo/build/qemu/guest}
cache=${LAPICT_CACHE:-/var/cache/lapict}/qemu/guest
command -v cpio >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -q cpio

# Resolve the kernel metapackage to the image it depends on.
kpkg=$(apt-cache depends linux-image-cloud-amd64 |
       awk '/Depends: linux-image-[0-9]/ { print $2; exit }')
if [ -z "$kpkg" ]; then
    apt-get update -qq
    kpkg=$(apt-cache depends linux-image-cloud-amd64 |
           awk '/Depends: linux-image-[0-9]/ { print $2; exit }')
fi
pkgs=("$kpkg" busybox-static rt-tests libnuma1 libc6)
vers=""
for p in "${pkgs[@]}"; do
    vers+="$p=$(apt-cache policy "$p" | awk '/Candidate:/ { print $2 }') "
done
key=$( (echo "$vers"; cat "$here/init" "$here/mkimage.sh") | sha256sum | cut -c1-16)
dir=$cache/$key
if [ ! -f "$dir/initrd.img" ]; then
    echo "mkimage: building $dir ($vers)"
    rm -rf "$dir.tmp"
    mkdir -p "$dir.tmp/debs" "$dir.tmp/x" "$dir.tmp/root"
    (cd "$dir.tmp/debs" && apt-get download -q "${pkgs[@]}" 2>&1 |
        grep -v '^W: Download is performed unsandboxed' || true)
    for d in "$dir.tmp"/debs/*.deb; do
        dpkg-deb -x "$d" "$dir.tmp/x"
    done
    r=$dir.tmp/root
    mkdir -p "$r/bin" "$r/usr/bin" "$r/lib/x86_64-linux-gnu" "$r/lib64" \
             "$r/dev" "$r/proc" "$r/sys" "$r/tmp"
    cp "$dir.tmp/x/bin/busybox" "$r/bin/busybox"
    cp "$dir.tmp/x/usr/bin/cyclictest" "$r/usr/bin/"
    # cyclictest's libraries, taken from the packages (not from the host).
    for l in libc.so.6 libm.so.6 librt.so.1 libpthread.so.0 libnuma.so.1; do
        f=$(find "$dir.tmp/x" -name "$l" | head -n1)
        [ -n "$f" ] || { echo "mkimage: $l not in the packages" >&2; exit 1; }
        cp -L "$f" "$r/lib/x86_64-linux-gnu/"
    done
    cp -L "$(find "$dir.tmp/x" -name ld-linux-x86-64.so.2 | head -n1)" \
          "$r/lib64/ld-linux-x86-64.so.2"
    ln -s ../lib64/ld-linux-x86-64.so.2 "$r/lib/ld-linux-x86-64.so.2"
    install -m 0755 "$here/init" "$r/init"
    (cd "$r" && find . | sort | cpio -o -H newc --quiet | gzip -9) \
        > "$dir.tmp/initrd.img"
    cp "$(find "$dir.tmp/x/boot" -name 'vmlinuz-*' | head -n1)" \
       "$dir.tmp/vmlinuz"
    rm -rf "$dir.tmp/debs" "$dir.tmp/x" "$dir.tmp/root"
    rm -rf "$dir"
    mv "$dir.tmp" "$dir"
fi
mkdir -p "$out"
cp "$dir/vmlinuz" "$dir/initrd.img" "$out/"
echo "mkimage: $out/vmlinuz $out/initrd.img (cache $dir)"
