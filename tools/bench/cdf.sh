#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Latency distributions as CDFs on a log x axis, with p50, p99 and p99.9
# marked on each curve: tails stay readable where overlapping histograms
# hide them. The y axis is the percentile on a log scale of 1 - F (so 90,
# 99 and 99.9 % are equally spaced), as latency percentile plots draw it.
# The percentiles' values go in the key, beside each series' name: curves
# that run close together would put labels on the plot over each other.
# Used by tools/vmm/plot.sh (lapict-vmm --compare) and the QEMU
# cyclictest comparison.
#
#   tools/bench/cdf.sh OUT.png TITLE XLABEL LABEL=FILE[:COLUMN] ...
#
# Each FILE holds one sample per line, or CSV with a header line; COLUMN
# (default: the last) picks the field. Values below 1 are drawn at 1 (log
# axis). Prints the percentiles of each series. Needs gnuplot (Debian:
# gnuplot-nox).
set -euo pipefail
out=${1:?usage: cdf.sh OUT.png TITLE XLABEL LABEL=FILE[:COLUMN] ...}
title=${2:?usage: cdf.sh OUT.png TITLE XLABEL LABEL=FILE[:COLUMN] ...}
xlabel=${3:?usage: cdf.sh OUT.png TITLE XLABEL LABEL=FILE[:COLUMN] ...}
shift 3
[ $# -gt 0 ] || { echo "cdf.sh: no series given" >&2; exit 2; }
command -v gnuplot >/dev/null || { echo "cdf.sh: gnuplot not installed (Debian: gnuplot-nox)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

colours=("#0060c0" "#c03000" "#008040" "#8000a0" "#a07000")
plot=""
marks=""
i=0
for spec in "$@"; do
    label=${spec%%=*}
    rest=${spec#*=}
    file=${rest%%:*}
    col=${rest#"$file"}
    col=${col#:}
    [ -r "$file" ] || { echo "cdf.sh: cannot read $file" >&2; exit 1; }
    # Numeric samples of the chosen column, sorted; header lines drop out.
    awk -F, -v c="$col" '{ v = (c == "" ? $NF : $c) }
        v ~ /^-?[0-9]+(\.[0-9]+)?$/ { print (v < 1 ? 1 : v) }' "$file" |
        sort -g >"$tmp/s$i"
    n=$(wc -l <"$tmp/s$i")
    [ "$n" -gt 0 ] || { echo "cdf.sh: no samples in $file" >&2; exit 1; }
    # x, -log10(1 - F) with F = (rank - 1/2) / n (finite at the top).
    awk -v n="$n" '{ print $1, -log(1 - (NR - 0.5) / n) / log(10) }' "$tmp/s$i" >"$tmp/c$i"
    # Nearest-rank percentiles.
    pct() { awk -v n="$n" -v p="$1" 'NR == int((n * p + 99999) / 100000) { print $1; exit }' "$tmp/s$i"; }
    p50=$(pct 50000) p99=$(pct 99000) p999=$(pct 99900)
    echo "cdf.sh: $label: n=$n p50=$p50 p99=$p99 p99.9=$p999"
    printf '%s 0.30103 p50\n%s 2 p99\n%s 3 p99.9\n' "$p50" "$p99" "$p999" >"$tmp/m$i"
    c=${colours[$((i % ${#colours[@]}))]}
    key="$label: p50 $p50, p99 $p99, p99.9 $p999"
    plot+="${plot:+, }'$tmp/c$i' using 1:2 with steps lw 2 lc rgb '$c' title '$key'"
    plot+=", '$tmp/m$i' using 1:2 with points pt 7 ps 1.2 lc rgb '$c' notitle"
    i=$((i + 1))
done
gnuplot <<GP
set terminal pngcairo size 1000,620 font ',10'
set output '$out'
set title '$title'
set xlabel '$xlabel (log scale)'
set ylabel 'percentile (samples at or below)'
set logscale x
set yrange [0:*]
set ytics ('0' 0, '50' 0.30103, '75' 0.60206, '90' 1, '99' 2, '99.9' 3, '99.99' 4)
set grid
set key top left
set offsets 0, 0, 0.3, 0
plot $plot
GP
echo "cdf.sh: wrote $out"
