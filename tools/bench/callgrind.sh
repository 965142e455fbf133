#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Instructions per hot-path operation, counted by valgrind's callgrind.
#
#   tools/bench/callgrind.sh [path/to/lapict-bench]   (default build/bin)
#
# For each operation that `lapict-bench --callgrind=list` names, runs
# `lapict-bench --callgrind=OP` under callgrind (a fixed number of calls of
# the library function, then of its division baseline) and divides the
# inclusive instruction count of each function, from callgrind_annotate,
# by the number of calls. Inclusive counts take in what the function calls:
# the library's internals and the bench host's ops (a few loads and stores).
# Prints a table and one line per op:
#   RESULT test=callgrind op=OP instr=N baseline_instr=N|-
set -euo pipefail
bench=${1:-build/bin/lapict-bench}
for tool in valgrind callgrind_annotate; do
    command -v "$tool" >/dev/null || { echo "callgrind.sh: $tool not found" >&2; exit 1; }
done
[ -x "$bench" ] || { echo "callgrind.sh: $bench not built" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Inclusive count of function $2 in callgrind output file $1, per $3 calls.
per_call() {
    local n
    n=$(callgrind_annotate --inclusive=yes --threshold=100 "$1" 2>/dev/null |
        awk -v fn="$2" '$0 ~ ":" fn "( |$)" && $2 ~ /^\(/ { gsub(",", "", $1); print $1; exit }')
    if [ -z "$n" ]; then echo "-"; else echo $(((n + $3 / 2) / $3)); fi
}

printf '%-20s %8s %16s\n' op instr baseline_instr
"$bench" --callgrind=list | grep -v '^#' | while read -r op fn base iters; do
    out=$tmp/cg.$op
    valgrind --tool=callgrind --callgrind-out-file="$out" \
        "$bench" --callgrind="$op" >/dev/null 2>"$tmp/log" ||
        { cat "$tmp/log" >&2; exit 1; }
    instr=$(per_call "$out" "$fn" "$iters")
    binstr=-
    [ "$base" = - ] || binstr=$(per_call "$out" "$base" "$iters")
    printf '%-20s %8s %16s\n' "$op" "$instr" "$binstr"
    echo "RESULT test=callgrind op=$op instr=$instr baseline_instr=$binstr"
done
