#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The RESULT lines of lapict-bench and lapict-vmm (stdin or FILE...) as one
# CSV table on stdout: one row per line, one column per key, in the order
# the keys first appear; a key a line lacks is empty. Fails when no line
# is a RESULT line, so a bench that printed nothing is not a table.
#   build/bin/lapict-bench --tuning | tools/bench/result2csv.sh > t.csv
set -euo pipefail
awk '
/^RESULT / {
    n++
    for (i = 2; i <= NF; i++) {
        eq = index($i, "=")
        if (eq == 0)
            continue
        k = substr($i, 1, eq - 1)
        if (!(k in seen)) {
            seen[k] = 1
            cols[++ncols] = k
        }
        v[n, k] = substr($i, eq + 1)
    }
}
END {
    if (n == 0) {
        print "result2csv: no RESULT line" > "/dev/stderr"
        exit 1
    }
    for (c = 1; c <= ncols; c++)
        printf "%s%s", cols[c], c < ncols ? "," : "\n"
    for (r = 1; r <= n; r++)
        for (c = 1; c <= ncols; c++)
            printf "%s%s", v[r, cols[c]], c < ncols ? "," : "\n"
}' "$@"
