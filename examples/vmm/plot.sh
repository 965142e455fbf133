#!/bin/sh
# SPDX-License-Identifier: MIT
# Render the CSVs of a compare run (lapict-vmm --compare --csv=PREFIX.csv
# writes PREFIX-lib.csv and PREFIX-kernel.csv) into PREFIX.png: latency
# histograms of lib vs kernel, in guest TSC cycles.
# usage: plot.sh PREFIX [BIN_CYCLES]
set -eu
prefix=${1:?usage: plot.sh PREFIX [BIN_CYCLES]}
bin=${2:-5000}
command -v gnuplot >/dev/null || { echo "plot.sh: gnuplot not installed" >&2; exit 2; }
gnuplot <<GP
set datafile separator ','
set terminal pngcairo size 1000,600
set output '${prefix}.png'
set title 'lapict-vmm: interrupt lateness (guest TSC cycles)'
set xlabel 'lateness, cycles (clipped at the 99th percentile range)'
set ylabel 'samples'
set style fill transparent solid 0.5
bin(x) = ${bin} * floor(x / ${bin})
stats '${prefix}-kernel.csv' using 2 every ::1 nooutput name 'K'
stats '${prefix}-lib.csv' using 2 every ::1 nooutput name 'L'
hi = (K_mean + 3 * K_stddev > L_mean + 3 * L_stddev) ? K_mean + 3 * K_stddev : L_mean + 3 * L_stddev
set xrange [0:hi]
plot '${prefix}-lib.csv' every ::1 using (bin(\$2)):(1) smooth frequency with boxes title 'lapict (userspace)', \
     '${prefix}-kernel.csv' every ::1 using (bin(\$2)):(1) smooth frequency with boxes title 'KVM in-kernel LAPIC'
GP
echo "${prefix}.png"
