#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# cdf.sh on known samples: the nearest-rank percentiles it prints and marks
# (1..1000 -> p50 500, p99 990, p99.9 999; CSV column and header handling),
# and a PNG is written. Exit 77 (ctest: skipped) without gnuplot.
#
#   check_cdf.sh [CDF]   (default: tools/bench/cdf.sh)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cdf=${1:-$here/../../tools/bench/cdf.sh}
command -v gnuplot >/dev/null || { echo "check_cdf: SKIP: gnuplot not installed"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
seq 1000 | sort -R >"$tmp/plain"
{ echo "sample,cycles"; seq 1000 | awk '{ print NR - 1 "," $1 * 2 }'; } >"$tmp/csv"
out=$(bash "$cdf" "$tmp/o.png" t x a="$tmp/plain" b="$tmp/csv:2")
echo "$out"
grep -qx "cdf.sh: a: n=1000 p50=500 p99=990 p99.9=999" <<<"$out"
grep -qx "cdf.sh: b: n=1000 p50=1000 p99=1980 p99.9=1998" <<<"$out"
[ -s "$tmp/o.png" ]
echo "check_cdf: ok"
