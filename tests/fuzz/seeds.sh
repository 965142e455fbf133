#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Picks the checked-in seeds of each fuzz target from its grown corpus: the
# smallest set of inputs that covers the same code edges (libFuzzer's
# set-cover merge, without hit counts or comparison values, which would
# keep hundreds), each named after what it exercises, in
# tests/fuzz/seeds/<target>/. The grown corpus lives outside the tree
# (run.sh keeps it under $LAPICT_CACHE/fuzz/<target>); the seeds are what
# every normal build replays.
#   tests/fuzz/seeds.sh BUILD_DIR      BUILD_DIR as for run.sh, with the
#                                      fuzz_<target>_regress runners built
#   FUZZ_TARGETS="regs restore replay countdown"  which targets
#   FUZZ_CORPUS=DIR (default $LAPICT_CACHE/fuzz)  the grown corpora
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:?usage: tests/fuzz/seeds.sh BUILD_DIR}
targets=${FUZZ_TARGETS:-regs restore replay countdown}
grown=${FUZZ_CORPUS:-${LAPICT_CACHE:-/var/cache/lapict}/fuzz}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# A name for input $2 of target $1: what it drives, in words.
name_of() {
    local t=$1 f=$2
    case $t in
    regs)
        # The decoded steps (the trace run.sh's crash hint prints): the
        # missed-tick policy, hw or sw timer, and the kinds of step used.
        LAPICT_FUZZ_TRACE=1 "$build/bin/fuzz_regs_regress" "$f" 2>&1 |
            awk '/^config / { for (i = 2; i <= NF; i++) {
                                  split($i, kv, "=")
                                  if (kv[1] == "missed") m = kv[2]
                                  if (kv[1] == "hv_timer") hv = kv[2] ? "hv" : "sw"
                                  if (kv[1] == "tsc_deadline" && kv[2]) dl = "-deadline" } }
                 /^(write|read) / { k = $2; if (!(k in s)) { s[k]; o = o "-" k } }
                 /^(stall|save|restore|reset|block|unblock)/ {
                     k = $1; if (!(k in s)) { s[k]; o = o "-" k } }
                 END { print m "-" hv dl o }' | tr -c 'A-Za-z0-9_\n-' '-' |
            cut -c1-60 ;;
    replay)
        # A trace: its distinct commands in order.
        tr -c 'A-Za-z0-9_#\n' ' ' < "$f" |
            awk '$1 ~ /^[a-z_]+$/ && length($1) > 2 && !($1 in s) && n < 5 {
                     s[$1]; o = o "-" $1; n++ }
                 END { if (o == "") o = "-binary"; print substr(o, 2) }' |
            cut -c1-60 ;;
    restore|countdown)
        # Bytes: the scenario byte and the size.
        printf '%s-%02x-%db\n' "$t" "$(od -An -tu1 -N1 "$f" | tr -d ' ' |
            sed 's/^$/0/')" "$(wc -c < "$f")" ;;
    esac
}

for t in $targets; do
    bin=$build/bin/fuzz_$t
    [ -x "$bin" ] && [ -x "$build/bin/fuzz_${t}_regress" ] ||
        { echo "seeds: $bin or its _regress runner not built" >&2; exit 1; }
    src=()
    [ -d "$grown/$t" ] && src+=("$grown/$t")
    [ -d "$here/seeds/$t" ] && src+=("$here/seeds/$t")
    [ ${#src[@]} -gt 0 ] || { echo "seeds: no corpus for $t" >&2; exit 1; }
    mkdir -p "$work/$t" "$work/named-$t"
    "$bin" -set_cover_merge=1 -use_counters=0 -use_value_profile=0 \
        -use_cmp=0 "$work/$t" "${src[@]}" >"$work/$t.log" 2>&1 ||
        { tail -20 "$work/$t.log" >&2; exit 1; }
    i=0
    for f in $(ls -S "$work/$t"); do
        i=$((i + 1))
        cp "$work/$t/$f" "$work/named-$t/$(printf '%03d' $i)-$(name_of "$t" "$work/$t/$f")"
    done
    rm -rf "$here/seeds/$t"
    mkdir -p "$here/seeds"
    mv "$work/named-$t" "$here/seeds/$t"
    echo "seeds: $t: $i seeds from ${src[*]}"
done
