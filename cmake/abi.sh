#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The ABI gate of the shared library (CONTRIBUTING.md, "ABI").
#
#   bash cmake/abi.sh          check: build liblapict.so, compare it with the
#                              baseline cmake/abi/liblapict.abi (abidiff)
#   bash cmake/abi.sh update   regenerate the baseline (abidw) after a
#                              compatible change, or after bumping
#                              LAPICT_SOVERSION for an incompatible one
#
# The library is built with gcc, RelWithDebInfo (abidw reads its DWARF), in
# ${LAPICT_ABI_DIR:-build-ci/abi}. Verdicts:
#   same ABI                       pass
#   additions only (new functions) fail until the baseline is updated
#   incompatible, same SONAME      fail: bump LAPICT_SOVERSION, then update
#   any change, new SONAME         fail until the baseline is updated
# "Incompatible" is abidiff's ABIDIFF_ABI_INCOMPATIBLE_CHANGE bit (a removed
# function), any changed function left after cmake/abi/lapict.abignore (a
# changed parameter, return or pointed-to type such as struct lapict_stats),
# or struct lapict_timer growing. An op appended to struct lapict_ops needs a
# new LAPICT_OPS_VERSION (cmake/abi/ops.txt records both). The check also
# looks at the last commit that changed the baseline: an incompatible step
# there needs a new SONAME.
set -euo pipefail
cd "$(dirname "$0")/.."

mode=${1:-check}
case $mode in
check | update) ;;
*)
    echo "usage: bash cmake/abi.sh [check|update]" >&2
    exit 2
    ;;
esac
baseline=cmake/abi/liblapict.abi
suppr=cmake/abi/lapict.abignore
# LAPICT_OPS_VERSION and the number of fields of struct lapict_ops the
# baseline was made with (abidiff, told that the table grows at the end,
# does not report an appended op; a bump of the version must come with it).
opsfile=cmake/abi/ops.txt
dir=${LAPICT_ABI_DIR:-build-ci/abi}
update_cmd="bash cmake/abi.sh update"

for t in abidw abidiff gcc cmake; do
    if ! command -v "$t" >/dev/null 2>&1; then
        echo "abi: $t not found (abidw/abidiff: apt-get install abigail-tools)" >&2
        exit 2
    fi
done

# The shared library alone, nothing else of the project.
cmake -S . -B "$dir" -DCMAKE_C_COMPILER=gcc -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DBUILD_SHARED_LIBS=ON -DLAPICT_BUILD_TESTS=OFF \
    -DLAPICT_BUILD_EXAMPLES=OFF -DLAPICT_BUILD_ADAPTERS=OFF >/dev/null
cmake --build "$dir" -j2 --target lapict >/dev/null
lib=$(find "$dir" -maxdepth 1 -name 'liblapict.so.*.*' -type f -print -quit)
if [ -z "$lib" ]; then
    echo "abi: no liblapict.so.* in $dir" >&2
    exit 2
fi
fresh=$dir/liblapict.abi
# No source locations or build paths: the baseline changes only with the ABI.
abidw --no-corpus-path --no-show-locs --no-comp-dir-path \
    --headers-dir include/lapict --drop-private-types "$lib" >"$fresh"

ops_version=$(sed -n 's/^#define LAPICT_OPS_VERSION \([0-9]*\)$/\1/p' include/lapict/ops.h)
ops_fields() {
    awk "/<class-decl name='lapict_ops'/ { f = 1 }
         f && /<data-member/ { n++ }
         f && /<\/class-decl>/ { print n; exit }" "$1"
}
soname_of() { grep -o -m1 "soname='[^']*'" "$1" | sed "s/soname='\(.*\)'/\1/"; }
timer_bits() {
    grep -o -m1 "class-decl name='lapict_timer' size-in-bits='[0-9]*'" "$1" |
        sed "s/.*size-in-bits='\([0-9]*\)'/\1/"
}

# verdict OLD NEW: prints abidiff's report and sets `verdict` to same,
# compatible or incompatible.
verdict=
compare() {
    local old=$1 new=$2 rc=0 back=0 report changed
    report=$(abidiff --suppressions "$suppr" --no-show-locs "$old" "$new") || rc=$?
    abidiff --suppressions "$suppr" "$new" "$old" >/dev/null || back=$?
    # Bit 0: abidiff failed; bit 1: usage error.
    if (((rc | back) & 3)); then
        echo "$report"
        echo "abi: abidiff failed (exit $rc / $back)" >&2
        exit 2
    fi
    changed=$(echo "$report" | sed -n 's/^Functions changes summary: [0-9]* Removed, \([0-9]*\) Changed.*/\1/p')
    local old_bits new_bits
    old_bits=$(timer_bits "$old")
    new_bits=$(timer_bits "$new")
    if [ "$rc" -eq 0 ] && [ "$back" -eq 0 ] && [ "$old_bits" = "$new_bits" ]; then
        verdict=same
        return
    fi
    echo "$report"
    # Bit 3: ABIDIFF_ABI_INCOMPATIBLE_CHANGE.
    if ((rc & 8)) || [ "${changed:-0}" != 0 ] ||
        { [ -n "$old_bits" ] && [ -n "$new_bits" ] && [ "$new_bits" -gt "$old_bits" ]; }; then
        if [ -n "$new_bits" ] && [ -n "$old_bits" ] && [ "$new_bits" -gt "$old_bits" ]; then
            echo "abi: struct lapict_timer grew from $((old_bits / 8)) to $((new_bits / 8)) bytes"
        fi
        verdict=incompatible
    else
        verdict=compatible
    fi
}

old_soname=
if [ -f "$baseline" ]; then
    old_soname=$(soname_of "$baseline")
fi
new_soname=$(soname_of "$fresh")

if [ "$mode" = update ]; then
    if [ -f "$baseline" ]; then
        compare "$baseline" "$fresh"
        if [ "$verdict" = incompatible ] && [ "$old_soname" = "$new_soname" ]; then
            echo "abi: REFUSED: an incompatible ABI change keeps the SONAME" \
                 "$new_soname. Bump LAPICT_SOVERSION in CMakeLists.txt (and" \
                 "the liblapict<N> package in debian/control), then run" \
                 "'$update_cmd' again." >&2
            exit 1
        fi
        echo "abi: against the old baseline: $verdict ($old_soname -> $new_soname)"
    fi
    if [ -f "$opsfile" ]; then
        read -r _ old_ops_version _ old_ops_fields < <(grep -v '^#' "$opsfile")
        if [ "$(ops_fields "$fresh")" != "$old_ops_fields" ] &&
            [ "$ops_version" -le "$old_ops_version" ]; then
            echo "abi: REFUSED: struct lapict_ops has $(ops_fields "$fresh")" \
                 "fields, the baseline $old_ops_fields, but LAPICT_OPS_VERSION" \
                 "is still $ops_version: bump it (CONTRIBUTING.md, \"ABI\")" >&2
            exit 1
        fi
    fi
    # abidiff accepts a comment after the corpus, not before it.
    { cat "$fresh"; echo "<!-- SPDX-License-Identifier: MIT -->"; } >"$baseline"
    {
        echo "# SPDX-License-Identifier: MIT"
        echo "# Written by bash cmake/abi.sh update, read by bash cmake/abi.sh."
        echo "ops_version $ops_version ops_fields $(ops_fields "$fresh")"
    } >"$opsfile"
    echo "abi: wrote $baseline ($new_soname) and $opsfile; commit them with the change"
    exit 0
fi

if [ ! -f "$baseline" ]; then
    echo "abi: FAILED: no baseline $baseline; create it with '$update_cmd'" >&2
    exit 1
fi
fail=0

# The last step of the baseline itself, when git history is at hand: a
# baseline regenerated over an incompatible change must carry a new SONAME.
if git rev-parse --git-dir >/dev/null 2>&1; then
    last=$(git log -n1 --format=%H -- "$baseline" 2>/dev/null || true)
    if [ -z "$last" ]; then
        echo "abi: the baseline is not committed yet; its last step is not checked"
    elif ! git cat-file -e "$last^" 2>/dev/null; then
        echo "abi: commit ${last:0:12} has no parent in this clone (shallow?):" \
             "the baseline's last step is not checked"
    elif ! git cat-file -e "$last^:$baseline" 2>/dev/null; then
        echo "abi: commit ${last:0:12} added the baseline: no earlier step to check"
    else
        prev=$dir/previous.abi
        git show "$last^:$baseline" >"$prev"
        compare "$prev" "$baseline" >/dev/null
        if [ "$verdict" = incompatible ] &&
            [ "$(soname_of "$prev")" = "$(soname_of "$baseline")" ]; then
            echo "abi: FAILED: commit ${last:0:12} changed $baseline" \
                 "incompatibly without a new SONAME ($(soname_of "$baseline"));" \
                 "bump LAPICT_SOVERSION and run '$update_cmd'" >&2
            fail=1
        else
            echo "abi: last baseline change (${last:0:12}): $verdict," \
                 "SONAME $(soname_of "$prev") -> $(soname_of "$baseline")"
        fi
    fi
fi

compare "$baseline" "$fresh"
# An op appended to struct lapict_ops: compatible only with a new
# LAPICT_OPS_VERSION, and the baseline records both.
if [ ! -f "$opsfile" ]; then
    echo "abi: FAILED: no $opsfile; create it with '$update_cmd'" >&2
    fail=1
else
    read -r _ old_ops_version _ old_ops_fields < <(grep -v '^#' "$opsfile")
    new_ops_fields=$(ops_fields "$fresh")
    if [ "$new_ops_fields" != "$old_ops_fields" ] ||
        [ "$ops_version" != "$old_ops_version" ]; then
        if [ "$new_ops_fields" != "$old_ops_fields" ] &&
            [ "$ops_version" -le "$old_ops_version" ]; then
            echo "abi: FAILED: struct lapict_ops went from $old_ops_fields to" \
                 "$new_ops_fields fields with LAPICT_OPS_VERSION still" \
                 "$ops_version: bump it, then '$update_cmd'" >&2
        else
            echo "abi: FAILED: struct lapict_ops: $old_ops_fields fields at" \
                 "version $old_ops_version in the baseline, $new_ops_fields at" \
                 "$ops_version now: '$update_cmd'" >&2
        fi
        fail=1
    fi
fi
case $verdict in
same)
    echo "abi: $lib matches $baseline ($new_soname)"
    ;;
compatible)
    echo "abi: FAILED: compatible ABI change (additions): update the baseline" \
         "with '$update_cmd' and commit it" >&2
    fail=1
    ;;
incompatible)
    if [ "$old_soname" = "$new_soname" ]; then
        echo "abi: FAILED: incompatible ABI change with the same SONAME" \
             "$new_soname: revert it, or bump LAPICT_SOVERSION in" \
             "CMakeLists.txt (and the package name in debian/control) and" \
             "run '$update_cmd' (CONTRIBUTING.md, \"ABI\")" >&2
    else
        echo "abi: FAILED: SONAME $old_soname -> $new_soname: regenerate" \
             "the baseline with '$update_cmd' and commit it" >&2
    fi
    fail=1
    ;;
esac
if [ "$verdict" != same ] && [ "$verdict" != incompatible ] &&
    [ "$old_soname" != "$new_soname" ]; then
    echo "abi: SONAME $old_soname -> $new_soname: '$update_cmd'" >&2
    fail=1
fi
exit "$fail"
