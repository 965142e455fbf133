#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The ABI gate of the shared library (CONTRIBUTING.md, "ABI").
#
#   bash ci/abi.sh          check: build liblapict.so, compare it with the
#                              baseline ci/abi/liblapict.abi (abidiff)
#   bash ci/abi.sh update   regenerate the baseline (abidw) after a
#                              compatible change, or after bumping
#                              LAPICT_SOVERSION for an incompatible one
#
# The library is built with gcc, RelWithDebInfo (abidw reads its DWARF), in
# ${LAPICT_ABI_DIR:-build-ci/abi}. The version moves with the ABI: the
# project version (include/lapict/version.h and project() in CMakeLists.txt,
# which must agree) has SONAME == LAPICT_VERSION_MAJOR from 1.0 on, and
# against the version the baseline was made at (ci/abi/ops.txt):
#   same ABI                       pass
#   additions only (new functions) fail until the baseline is updated, which
#                                  needs at least a minor version bump
#   incompatible                   fail until the baseline is updated, which
#                                  needs a major version bump (and so a new
#                                  SONAME; while 0.x, a minor bump)
#   any change, new SONAME         fail until the baseline is updated
# "Incompatible" is abidiff's ABIDIFF_ABI_INCOMPATIBLE_CHANGE bit (a removed
# function), any changed function left after ci/abi/lapict.abignore (a
# changed parameter, return or pointed-to type such as struct lapict_stats),
# or struct lapict_timer growing. An op appended to struct lapict_ops needs a
# new LAPICT_OPS_VERSION (ci/abi/ops.txt records both, with the project
# version and SONAME). The check also looks at the last commit that changed
# the baseline: an incompatible step there needs a major version bump.
set -euo pipefail
cd "$(dirname "$0")/.."

mode=${1:-check}
case $mode in
check | update) ;;
*)
    echo "usage: bash ci/abi.sh [check|update]" >&2
    exit 2
    ;;
esac
baseline=ci/abi/liblapict.abi
suppr=ci/abi/lapict.abignore
# LAPICT_OPS_VERSION and the number of fields of struct lapict_ops the
# baseline was made with (abidiff, told that the table grows at the end,
# does not report an appended op; a bump of the version must come with it).
opsfile=ci/abi/ops.txt
dir=${LAPICT_ABI_DIR:-build-ci/abi}
update_cmd="bash ci/abi.sh update"

for t in abidw abidiff gcc cmake; do
    if ! command -v "$t" >/dev/null 2>&1; then
        echo "abi: $t not found (abidw/abidiff: apt-get install abigail-tools)" >&2
        exit 2
    fi
done

# The shared library alone, nothing else of the project.
cmake -S . -B "$dir" -DCMAKE_C_COMPILER=gcc -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DBUILD_SHARED_LIBS=ON -DLAPICT_BUILD_TESTS=OFF \
    -DLAPICT_BUILD_TOOLS=OFF -DLAPICT_BUILD_EXAMPLES=OFF -DLAPICT_BUILD_ADAPTERS=OFF >/dev/null
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

# The project version: version.h's macros, its string and project() in
# CMakeLists.txt must be one version.
hdr_version() {
    awk '/^#define LAPICT_VERSION_(MAJOR|MINOR|PATCH) / { v[$2] = $3 }
         END { if (length(v) == 3)
                   print v["LAPICT_VERSION_MAJOR"] "." v["LAPICT_VERSION_MINOR"] \
                         "." v["LAPICT_VERSION_PATCH"] }'
}
version=$(hdr_version <include/lapict/version.h)
version_string=$(sed -n 's/^#define LAPICT_VERSION_STRING "\(.*\)"$/\1/p' include/lapict/version.h)
cmake_version=$(sed -n 's/^project(lapict VERSION \([0-9][0-9.]*\).*/\1/p' CMakeLists.txt)
if [ -z "$version" ] || [ "$version" != "$version_string" ] ||
    [ "$version" != "$cmake_version" ]; then
    echo "abi: FAILED: the version is not one: version.h macros '$version'," \
         "LAPICT_VERSION_STRING '$version_string', CMakeLists.txt" \
         "project() '$cmake_version'" >&2
    exit 1
fi
major() { echo "${1%%.*}"; }
minor() {
    local r=${1#*.}
    echo "${r%%.*}"
}
# The value after KEY in the ops.txt record on stdin (empty if absent).
kv() { awk -v k="$1" '!/^#/ { for (i = 1; i < NF; i++) if ($i == k) { print $(i + 1); exit } }'; }
# The project version the baseline had at commit REV: ops.txt records it
# from 1.0 on; before, version.h at that commit.
version_at() {
    local v
    v=$(git show "$1:$opsfile" 2>/dev/null | kv version || true)
    if [ -z "$v" ]; then
        v=$(git show "$1:include/lapict/version.h" 2>/dev/null | hdr_version || true)
    fi
    echo "${v:-0.0.0}"
}
# Whether version V was released (tag vV), and whether any release of
# major version M was (a tag vM.*): the ABI of a major version is frozen at
# its first release. Without git history nothing counts as released.
released() { git tag -l "v$1" 2>/dev/null | grep -q .; }
major_released() { git tag -l "v$1.*" 2>/dev/null | grep -q .; }
# version_allows VERDICT OLD NEW: whether the version step OLD -> NEW may
# carry an ABI change of kind VERDICT (CONTRIBUTING.md, "ABI"). Within the
# same version, not yet released, the baseline follows the release in
# progress: additions are free, and so are breaks until the major version
# has a release.
version_allows() {
    local om nm
    om=$(major "$2")
    nm=$(major "$3")
    if [ "$1" != same ] && [ "$2" = "$3" ] && ! released "$3"; then
        [ "$1" = compatible ] || ! major_released "$nm"
        return
    fi
    case $1 in
    same) return 0 ;;
    compatible)
        [ "$nm" -gt "$om" ] ||
            { [ "$nm" -eq "$om" ] && [ "$(minor "$3")" -gt "$(minor "$2")" ]; }
        ;;
    *)
        [ "$nm" -gt "$om" ] ||
            { [ "$om" -eq 0 ] && [ "$nm" -eq 0 ] &&
                [ "$(minor "$3")" -gt "$(minor "$2")" ]; }
        ;;
    esac
}
need_for() {
    case $1 in
    compatible) echo "at least a minor version bump (or a version not yet released)" ;;
    *) echo "a major version bump (a new SONAME with it)" ;;
    esac
}
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

# The members of struct NAME in an abidw file, one "name offset" a line.
members() {
    awk -v n="$1" '
        $0 ~ ("<class-decl name=." n "\047") && /size-in-bits/ { f = 1; next }
        f && /<\/class-decl>/ { exit }
        f && /<data-member/ {
            match($0, /layout-offset-in-bits=.[0-9]+/)
            off = substr($0, RSTART + 23, RLENGTH - 23)
        }
        f && /<var-decl/ {
            match($0, /name=.[^ ]*/)
            print substr($0, RSTART + 6, RLENGTH - 7), off
        }' "$2"
}
# The structures that grow only at the end (the suppressions let abidiff
# pass an appended member, and with it a moved one): the old members must
# be the first members of the new, at the same offsets.
grow_at_end="lapict_ops lapict_config lapict_stats"
grown_only() {
    local old=$1 new=$2 st o n
    for st in $grow_at_end; do
        o=$(members "$st" "$old")
        n=$(members "$st" "$new" | head -n "$(printf '%s\n' "$o" | grep -c .)")
        if [ "$o" != "$n" ]; then
            echo "abi: struct $st: a member removed, moved or renamed" \
                 "(only appending at the end is compatible)"
            return 1
        fi
    done
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
    local moved=0 grown
    grown=$(grown_only "$old" "$new") || moved=1
    if [ "$rc" -eq 0 ] && [ "$back" -eq 0 ] && [ "$old_bits" = "$new_bits" ] &&
        [ "$moved" -eq 0 ] &&
        [ "$(members lapict_config "$old")$(members lapict_stats "$old")" = \
            "$(members lapict_config "$new")$(members lapict_stats "$new")" ]; then
        verdict=same
        return
    fi
    echo "$report"
    [ -z "$grown" ] || echo "$grown"
    # Bit 3: ABIDIFF_ABI_INCOMPATIBLE_CHANGE.
    if ((rc & 8)) || [ "${changed:-0}" != 0 ] || [ "$moved" -eq 1 ] ||
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

# From 1.0 the SONAME is the major version: liblapict.so.<major>.
if [ "$(major "$version")" -ge 1 ] &&
    [ "$new_soname" != "liblapict.so.$(major "$version")" ]; then
    echo "abi: FAILED: SONAME $new_soname with version $version: from 1.0" \
         "the SONAME is liblapict.so.<major> (LAPICT_SOVERSION in" \
         "CMakeLists.txt, LAPICT_VERSION_MAJOR in version.h)" >&2
    exit 1
fi
# The version the baseline was made at.
base_version=
if [ -f "$opsfile" ]; then
    base_version=$(kv version <"$opsfile")
fi
if [ -z "$base_version" ] && git rev-parse --git-dir >/dev/null 2>&1; then
    base_rev=$(git log -n1 --format=%H -- "$baseline" 2>/dev/null || true)
    if [ -n "$base_rev" ]; then
        base_version=$(version_at "$base_rev")
    fi
fi
base_version=${base_version:-$version}

if [ "$mode" = update ]; then
    if [ -f "$baseline" ]; then
        compare "$baseline" "$fresh"
        if ! version_allows "$verdict" "$base_version" "$version"; then
            echo "abi: REFUSED: an $verdict ABI change from version" \
                 "$base_version (the baseline's) to $version needs" \
                 "$(need_for "$verdict"): bump LAPICT_VERSION_* in" \
                 "include/lapict/version.h and project() in CMakeLists.txt" \
                 "(for a major bump LAPICT_SOVERSION and the liblapict<N>" \
                 "package too), then run '$update_cmd' again." >&2
            exit 1
        fi
        echo "abi: against the old baseline: $verdict ($old_soname ->" \
             "$new_soname, version $base_version -> $version)"
    fi
    if [ -f "$opsfile" ]; then
        read -r _ old_ops_version _ old_ops_fields _ < <(grep -v '^#' "$opsfile")
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
        echo "# Written by bash ci/abi.sh update, read by bash ci/abi.sh."
        echo "ops_version $ops_version ops_fields $(ops_fields "$fresh")" \
             "version $version soname $new_soname"
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
    # A move of the file, unchanged, is no step: follow it to its old path.
    path=$baseline
    while [ -n "$last" ] && git cat-file -e "$last^" 2>/dev/null &&
        ! git cat-file -e "$last^:$path" 2>/dev/null; do
        old=$(git diff -M --name-status "$last^" "$last" 2>/dev/null |
              awk -v p="$path" '$1 == "R100" && $3 == p { print $2 }')
        [ -n "$old" ] || break
        path=$old
        last=$(git log -n1 --format=%H "$last^" -- "$path" 2>/dev/null || true)
    done
    if [ -z "$last" ]; then
        echo "abi: the baseline is not committed yet; its last step is not checked"
    elif ! git cat-file -e "$last^" 2>/dev/null; then
        echo "abi: commit ${last:0:12} has no parent in this clone (shallow?):" \
             "the baseline's last step is not checked"
    elif ! git cat-file -e "$last^:$path" 2>/dev/null; then
        echo "abi: commit ${last:0:12} added the baseline: no earlier step to check"
    else
        prev=$dir/previous.abi
        git show "$last^:$path" >"$prev"
        compare "$prev" "$baseline" >/dev/null
        prev_version=$(version_at "$last^")
        last_version=$(version_at "$last")
        if [ "$verdict" = incompatible ] &&
            [ "$(soname_of "$prev")" = "$(soname_of "$baseline")" ] &&
            ! version_allows incompatible "$prev_version" "$last_version"; then
            echo "abi: FAILED: commit ${last:0:12} changed $baseline" \
                 "incompatibly without a new SONAME or a major version bump" \
                 "($(soname_of "$baseline"), $prev_version -> $last_version);" \
                 "bump the major version and run '$update_cmd'" >&2
            fail=1
        else
            echo "abi: last baseline change (${last:0:12}): $verdict," \
                 "SONAME $(soname_of "$prev") -> $(soname_of "$baseline")," \
                 "version $prev_version -> $last_version"
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
    read -r _ old_ops_version _ old_ops_fields _ < <(grep -v '^#' "$opsfile")
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
compatible | incompatible)
    if ! version_allows "$verdict" "$base_version" "$version"; then
        echo "abi: FAILED: $verdict ABI change at version $version, the" \
             "baseline's $base_version: it needs $(need_for "$verdict")" \
             "(LAPICT_VERSION_* in version.h, project() in CMakeLists.txt;" \
             "a major one also LAPICT_SOVERSION and the package name in" \
             "debian/control), or revert it; then '$update_cmd'" \
             "(CONTRIBUTING.md, \"ABI\")" >&2
    else
        echo "abi: FAILED: $verdict ABI change, version $base_version ->" \
             "$version, SONAME $old_soname -> $new_soname: regenerate the" \
             "baseline with '$update_cmd' and commit it" >&2
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
