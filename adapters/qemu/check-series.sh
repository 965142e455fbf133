#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Every prefix of patches-10.0/series builds: in a git work tree of
# Debian's QEMU source whose last commits are the series, one commit per
# patch in the order of `series` (as `git am` of each leaves it), checks out
# each prefix in turn and runs an incremental ninja in a build directory
# configured from that tree (as build.sh configures its own). One line per
# prefix: ok or FAIL, the ninja's time, and the warnings of what it
# recompiled. The work tree is back at its commit at the end.
#
# A bisection lands on any prefix, and QEMU asks that each commit of a
# series builds; a patch that needs a later one to compile breaks that.
# Not run in CI: each prefix re-runs meson (the series changes
# meson.build) and recompiles what it touched, minutes per prefix.
#
# Usage: adapters/qemu/check-series.sh SRC BUILD
#   SRC    the git work tree (clean)
#   BUILD  its configured build directory
# Exit status: the number of prefixes that failed (2 for a bad argument).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if [ $# -ne 2 ] || [ ! -d "$1/.git" ] || [ ! -f "$2/build.ninja" ]; then
    sed -n 's/^# \{0,1\}//; /^Usage/,/^Exit/p' "$0" >&2
    exit 2
fi
src=$(cd "$1" && pwd)
build=$(cd "$2" && pwd)
jobs=${LAPICT_JOBS:-2}
log=$(mktemp)
mapfile -t patches < <(grep -v -e '^#' -e '^$' "$here/patches-10.0/series")
n=${#patches[@]}

git -C "$src" diff --quiet HEAD ||
    { echo "check-series: $src has uncommitted changes" >&2; exit 2; }
orig=$(git -C "$src" symbolic-ref -q --short HEAD ||
       git -C "$src" rev-parse HEAD)
head=$(git -C "$src" rev-parse HEAD)

# The work tree's last n commits are the series' patches, in order (same
# patch-id: the same change, whatever the commit metadata).
for i in $(seq 1 "$n"); do
    c=$(git -C "$src" rev-parse "$head~$((n - i))")
    a=$(git -C "$src" show "$c" | git patch-id --stable | cut -d' ' -f1)
    b=$(git patch-id --stable < "$here/patches-10.0/${patches[i - 1]}" |
        cut -d' ' -f1)
    if [ "$a" != "$b" ]; then
        echo "check-series: $c is not ${patches[i - 1]}" >&2
        exit 2
    fi
done

# meson re-runs with the options of its saved command line, and refuses
# one that the tree does not define: a prefix before the patch that adds
# an option (-Dlapict) gets the command line without it.
cmdline=$build/meson-private/cmd_line.txt
saved=$(mktemp)
cp "$cmdline" "$saved"
names() { sed -n "s/^option('\([^']*\)'.*/\1/p" | sort; }
all=$(git -C "$src" show "$head:meson_options.txt" | names)

trap 'git -C "$src" checkout -q "$orig"; cp "$saved" "$cmdline";
      rm -f "$log" "$saved"' EXIT
fails=0
for i in $(seq 1 "$n"); do
    git -C "$src" checkout -q --detach "$head~$((n - i))"
    later=$(comm -23 <(echo "$all") <(names < "$src/meson_options.txt") |
            tr '\n' ' ')
    awk -v later="$later" '
        BEGIN { n = split(later, l, " "); for (i = 1; i <= n; i++) x[l[i]] }
        { k = $1; if (!($2 == "=" && k in x)) print }' "$saved" >"$cmdline"
    t=$SECONDS
    if nice -n 10 ninja -C "$build" -j"$jobs" qemu-system-x86_64 \
            >"$log" 2>&1; then
        r=ok
    else
        r=FAIL
        fails=$((fails + 1))
    fi
    w=$(grep -c 'warning:' "$log" || true)
    printf '%d/%d %s: %s in %d s, %d warnings\n' "$i" "$n" \
        "${patches[i - 1]%%-*}" "$r" $((SECONDS - t)) "$w"
    if [ "$r" = FAIL ] || [ "$w" -gt 0 ]; then
        grep -E -m 20 'error|warning:' "$log" | sed 's/^/    /'
    fi
done
exit "$fails"
