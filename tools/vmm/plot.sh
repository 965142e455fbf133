#!/bin/sh
# SPDX-License-Identifier: MIT
# Render the CSVs of a compare run (lapict-vmm --compare --csv=PREFIX.csv
# writes PREFIX-lib.csv and PREFIX-kernel.csv) into PREFIX.png: the CDF of
# interrupt lateness, lib vs kernel, in guest TSC cycles, on a log axis with
# p50 / p99 / p99.9 marked (tools/bench/cdf.sh).
# usage: plot.sh PREFIX
set -eu
prefix=${1:?usage: plot.sh PREFIX}
here=$(cd "$(dirname "$0")" && pwd)
exec bash "$here/../bench/cdf.sh" "${prefix}.png" \
    'lapict-vmm: timer interrupt lateness, deadline to guest ISR' \
    'lateness, guest TSC cycles' \
    "lapict (userspace LAPIC)=${prefix}-lib.csv:2" \
    "KVM in-kernel LAPIC=${prefix}-kernel.csv:2"
