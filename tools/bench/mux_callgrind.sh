#!/bin/sh
# SPDX-License-Identifier: MIT
# Instructions per operation of lapict-bench --mux, from callgrind: the
# bench in --callgrind mode runs a fixed number of operations per size and
# side and dumps the counters after each batch (client requests); this
# script divides each dump's instruction count by its operation count.
#
#   sh tools/bench/mux_callgrind.sh [build/bin/lapict-bench]
#
# Prints: RESULT test=mux_ir n=<n> ir_per_op=<x> binheap_ir_per_op=<y>
#         rbtree_ir_per_op=<z> sorted_ir_per_op=<w>
set -eu
bench=${1:-build/bin/lapict-bench}
command -v valgrind >/dev/null || { echo "valgrind not installed" >&2; exit 1; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
valgrind --tool=callgrind --callgrind-out-file="$dir/cg.out" \
    "$bench" --mux --callgrind >/dev/null 2>"$dir/log" ||
    { cat "$dir/log" >&2; exit 1; }
# Dumps in the order written (cg.out.1, .2, ... .10): sizes stay in order.
for f in $(ls -v "$dir"/cg.out.*); do
    # "desc: Trigger: Client Request: mux heap n=10 ops=100000"
    desc=$(sed -n 's/^desc: Trigger: Client Request: mux //p' "$f")
    total=$(sed -n 's/^summary: //p' "$f" | head -n 1)
    [ -n "$desc" ] && echo "$desc $total"
done | awk '
    { side = $1; n = substr($2, 3); ops = substr($3, 5); ir[n, side] = $4 / ops
      if (!(n in seen)) { seen[n] = 1; order[++k] = n } }
    END { for (i = 1; i <= k; i++) { n = order[i]
        printf "RESULT test=mux_ir n=%s ir_per_op=%.1f binheap_ir_per_op=%.1f rbtree_ir_per_op=%.1f sorted_ir_per_op=%.1f\n",
               n, ir[n, "heap"], ir[n, "binheap"], ir[n, "rbtree"], ir[n, "sorted"] } }'
