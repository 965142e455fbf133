#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Render the tuning study's advance-vs-expiry data as a PNG (gnuplot).
#
#   build/bin/lapict-bench --tuning --dat=tuning.dat
#   tools/bench/plot.sh tuning.dat tuning.png
#
# One panel per scenario: the advance in force at each expiry for lapict
# (goal latency), lapict-balanced and KVM's rule, and the host latency of
# that expiry (what a perfect advance would be). Then the trade-off, from
# the summary block: per scenario and algorithm the median lateness the
# guest sees and the mean spin the host pays (log scales; 0 is drawn at 1).
# Needs gnuplot (Debian: gnuplot-nox).
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
# The summary block follows the scenarios' (index n); older files lack it.
summary=0
grep -q '^# summary' "$dat" && summary=1
rows=$(((n + 1) / 2 + summary))
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
        if [ "$summary" = 1 ]; then
            echo "     '' index $i using 1:9 with lines lw 2 lc rgb '#00a040' title 'lapict-balanced advance', \\"
        fi
        echo "     '' index $i using 1:3 with lines lw 2 lc rgb '#c03000' title 'kvm advance'"
        i=$((i + 1))
    done
    if [ "$summary" = 1 ]; then
        # Columns of the summary: i name, then per algo (lapict,
        # lapict-balanced, kvm, off) median lateness and mean spin.
        echo "set style data linespoints; set logscale y; set yrange [0.5:*]"
        echo "set xtics rotate by -30; set xlabel ''; set key top left"
        echo "set title 'median lateness the guest sees (TSC cycles; 0 drawn at 1)'"
        echo "set ylabel 'cycles'"
        echo "plot '$dat' index $n using 1:(\$3>0?\$3:1):xtic(2) pt 7 lw 2 lc rgb '#0060c0' title 'lapict', \\"
        echo "     '' index $n using 1:(\$5>0?\$5:1) pt 5 lw 2 lc rgb '#00a040' title 'lapict-balanced', \\"
        echo "     '' index $n using 1:(\$7>0?\$7:1) pt 9 lw 2 lc rgb '#c03000' title 'kvm', \\"
        echo "     '' index $n using 1:(\$9>0?\$9:1) pt 1 lw 1 lc rgb '#888888' title 'off'"
        echo "set title 'mean host spin per interrupt (ns; 0 drawn at 1)'"
        echo "set ylabel 'ns'"
        echo "plot '$dat' index $n using 1:(\$4>0?\$4:1):xtic(2) pt 7 lw 2 lc rgb '#0060c0' title 'lapict', \\"
        echo "     '' index $n using 1:(\$6>0?\$6:1) pt 5 lw 2 lc rgb '#00a040' title 'lapict-balanced', \\"
        echo "     '' index $n using 1:(\$8>0?\$8:1) pt 9 lw 2 lc rgb '#c03000' title 'kvm'"
    fi
    echo "unset multiplot"
} | gnuplot
echo "plot.sh: wrote $png"
