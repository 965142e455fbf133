#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The timer lateness of lapict-hv, exact and reproducible anywhere: the
# lapict-timers guest (spinning, so its vCPU runs when the timer expires)
# under lapict-hv in Bochs, with each host timer path (VMX-preemption timer,
# physical LAPIC timer) and the advance off and adaptive, all in one run.
#
#   tools/hv/bench.sh BUILDDIR > docs/bench/hv.csv
#
# One CSV row per (path, advance, timer mode, place of measurement):
#   entry: host TSC ticks from the interrupt's architectural instant to the
#          VM entry that delivers it (lapict-hv's LATENESS lines: every
#          one-shot and periodic interrupt, all divides);
#   guest: guest TSC ticks from the instant to the first instructions of
#          the guest's handler (lapict-timers' BENCH lines at divide 1:
#          exact for TSC-deadline; for a count-down the instant is bounded
#          below by the TSC read before the TMICT write, so that row also
#          holds the write's own exit).
# Then one row per path with the advance off: the periodic run's drift
# (guest: lateness of period 10 000 minus that of period 2) and the grid
# check (count-down arms off the programmed grid, from lapict-hv's GRID).
# Each run's full output is kept in BUILDDIR/bench-hv/.
set -euo pipefail

me=bench.sh
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
if [ $# -ne 1 ] || [ ! -d "$1" ]; then
    echo "usage: tools/hv/bench.sh BUILDDIR > docs/bench/hv.csv" >&2
    exit 2
fi
build=$(cd "$1" && pwd)
hv=$build/bin/lapict-hv
guest=$build/tests/guests/lapict-timers.flat
for f in "$hv" "$guest"; do
    [ -f "$f" ] || { echo "$me: $f is not built" >&2; exit 2; }
done
out=$build/bench-hv
mkdir -p "$out"

configs=("preempt off" "lapic off" "preempt adaptive" "lapic adaptive")
pids=()
for c in "${configs[@]}"; do
    read -r path adv <<<"$c"
    "$repo/tools/hv/bochs.sh" --hv "$hv" --hv-timer="$path" \
        --advance="$adv" "$guest" >"$out/$path-$adv.out" \
        2>"$out/$path-$adv.err" &
    pids+=($!)
    # Two at a time: Bochs uses one core.
    if [ ${#pids[@]} -eq 2 ]; then
        for p in "${pids[@]}"; do
            wait "$p" || { echo "$me: a run failed (see $out)" >&2; exit 1; }
        done
        pids=()
    fi
done

echo "path,advance,mode,where,n,min,median,p99,max"
for c in "${configs[@]}"; do
    read -r path adv <<<"$c"
    f=$out/$path-$adv.out
    grep -q '^RESULT test=hv .* early=0 lost=0 doubled=0 ' "$f" || {
        echo "$me: $path/$adv: not a clean run (see $f)" >&2
        exit 1
    }
    sed -nE 's/^LATENESS mode=([a-z]+) n=([0-9]+) min=([0-9]+) median=([0-9]+) p99=([0-9]+) max=([0-9]+)$/\1,entry,\2,\3,\4,\5,\6/p' "$f" |
        sed "s/^/$path,$adv,/"
    sed -nE 's/^BENCH mode=([a-z]+) div=1 n=([0-9]+) min=([0-9]+) median=([0-9]+) p99=([0-9]+) max=([0-9]+)$/\1,guest,\2,\3,\4,\5,\6/p' "$f" |
        sed "s/^/$path,$adv,/"
done
echo
echo "path,periods,drift_ticks,grid_arms,off_grid"
for path in preempt lapic; do
    f=$out/$path-off.out
    drift=$(sed -nE 's/^DRIFT div=1 periods=([0-9]+) .* drift=(-?[0-9]+)$/\1,\2/p' "$f")
    grid=$(sed -nE 's/^GRID count-down timer arms=([0-9]+) off_grid=([0-9]+)$/\1,\2/p' "$f")
    echo "$path,$drift,$grid"
done
