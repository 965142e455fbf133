#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Render the tuning study's advance-vs-expiry data as a PNG (gnuplot).
#
#   build/bin/lapict-bench --tuning --dat=tuning.dat
#   examples/bench/plot.sh tuning.dat tuning.png
#
# One panel per scenario: the advance in force at each expiry for lapict
# and KVM's rule, and the host latency of that expiry (what a perfect
# advance would be). Needs gnuplot (Debian: gnuplot-nox).
set -euo pipefail
dat=${1:?usage: plot.sh DATA.dat OUT.png}
png=${2:?usage: plot.sh DATA.dat OUT.png}
if ! command -v gnuplot >/dev/null; then
    echo "plot.sh: gnuplot not found (Debian: apt-get install gnuplot-nox)" >&2
    exit 1
fi
names=$(awk '/^# scenario /{print $3}' "$dat")
n=$(echo "$names" | wc -w)
[ "$n" -gt 0 ] || { echo "plot.sh: no scenarios in $dat" >&2; exit 1; }
rows=$(((n + 1) / 2))
{
    echo "set terminal pngcairo size 1400,$((rows * 380)) font ',9'"
    echo "set output '$png'"
    echo "set multiplot layout $rows,2"
    echo "set xlabel 'expiry'; set ylabel 'ns'; set key top left; set grid"
    i=0
    for s in $names; do
        echo "set title '$s'"
        echo "plot '$dat' index $i using 1:5 with points pt 7 ps 0.3 lc rgb '#bbbbbb' title 'latency', \\"
        echo "     '' index $i using 1:2 with lines lw 2 lc rgb '#0060c0' title 'lapict advance', \\"
        echo "     '' index $i using 1:3 with lines lw 2 lc rgb '#c03000' title 'kvm advance'"
        i=$((i + 1))
    done
    echo "unset multiplot"
} | gnuplot
echo "plot.sh: wrote $png"
