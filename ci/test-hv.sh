#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The lapict-hv gate: each guest below runs under lapict-hv in Bochs
# (tools/hv/bochs.sh) with each hypervisor timer, twice. Both runs must exit
# 0, print byte-identical output (Bochs is tick-exact), pass every check of
# the guest ("SUMMARY: <n> tests, 0 failures") and end with a
# "RESULT test=hv ..." line that counts deliveries and no early, lost or
# doubled one, on the path asked for (preempt: preemption-timer exits;
# lapic: none, physical timer interrupts instead). With the advance off,
# every count-down arm must lie on its grid ("GRID ... off_grid=0").
#
#   ci/test-hv.sh BUILDDIR
#
# BUILDDIR is a build with -DLAPICT_BUILD_TESTS=ON in which lapict-hv and
# the guests are built. Outputs go to BUILDDIR/test-hv/. The two runs of a
# pair go side by side (Bochs uses one core); LAPICT_HV_JOBS=1 runs them
# one after the other. LAPICT_HV_MAX_TICKS overrides bochs.sh's instruction
# limit.
set -euo pipefail

# The runs: "GUEST|ARGS|VCPUS|OPTIONS", GUEST relative to BUILDDIR, ARGS
# its command line words after argv[0], OPTIONS more bochs.sh options
# (none may contain '|'). Each guest prints a SUMMARY line. The timer
# scenarios run spinning (the vCPU runs when its timer expires: the
# preemption timer) and halted (blocked: the heap on the physical timer),
# and as 4 and 16 vCPUs (halted, round-robin; the 16 with 5 ms periods),
# odd ones at half the TSC rate: through RDTSC exiting on the default
# model, through VMX TSC scaling on Skylake-X (that run must say so).
runs=(
    "tests/guests/lapict-mbtest.flat||1|"
    "tests/guests/lapict-mbtest.flat||2|--advance=adaptive"
    "tests/guests/lapict-timers.flat||1|"
    "tests/guests/lapict-timers.flat|wait=hlt|1|--advance=adaptive"
    "tests/guests/lapict-timers.flat|shots=8 periods=500 wait=hlt|4|--hv-arg=half=odd"
    "tests/guests/lapict-timers.flat|shots=4 periods=100 period_us=5000 wait=hlt|16|--hv-arg=half=odd"
    "tests/guests/lapict-timers.flat|shots=4 periods=100 wait=hlt|2|--hv-arg=half=odd --cpu=corei7_skylake_x"
)
timers=(preempt lapic)

me=test-hv
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bochs_sh=$repo/tools/hv/bochs.sh

if [ $# -ne 1 ] || [ -z "$1" ]; then
    echo "usage: ci/test-hv.sh BUILDDIR" >&2
    exit 2
fi
[ -d "$1" ] || { echo "$me: FAILED: no build directory $1" >&2; exit 1; }
build=$(cd "$1" && pwd)
hv=$build/bin/lapict-hv
if [ ! -f "$hv" ]; then
    echo "$me: FAILED: $hv is not built (build the lapict-hv target in" \
         "$build first)" >&2
    exit 1
fi
for r in "${runs[@]}"; do
    g=$build/${r%%|*}
    if [ ! -f "$g" ]; then
        echo "$me: FAILED: the guest $g is not built" >&2
        exit 1
    fi
done
jobs=${LAPICT_HV_JOBS:-2}
if ! [[ $jobs =~ ^[1-9][0-9]*$ ]]; then
    echo "$me: LAPICT_HV_JOBS: a positive integer, not '$jobs'" >&2
    exit 2
fi
max_ticks=()
if [ -n "${LAPICT_HV_MAX_TICKS:-}" ]; then
    max_ticks=("--max-ticks=$LAPICT_HV_MAX_TICKS")
fi
out=$build/test-hv
mkdir -p "$out"

elapsed() {
    awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'
}

# check_result FILE TIMER ADVANCE VCPUS: the guests' summaries, the hypervisor's
# GRID and RESULT lines.
check_result() {
    local file=$1 last w key val words n
    local -A field=()
    # Every vCPU's guest ("[i] " before its lines when there are several)
    # passed all its checks. No grep -q after a pipe: under pipefail an
    # early exit fails tr.
    n=$(tr -d '\r' <"$file" |
        grep -cE '^(\[[0-9]+\] )?SUMMARY: [0-9]+ tests, 0 failures$' || true)
    if [ "$n" != "$4" ]; then
        echo "$n of $4 vCPUs printed 'SUMMARY: <n> tests, 0 failures'"
        return 1
    fi
    last=$(tail -n 1 "$file" | tr -d '\r')
    if [[ $last != "RESULT test=hv "* ]]; then
        echo "the last line is not a 'RESULT test=hv' line: $last"
        return 1
    fi
    read -ra words <<<"$last"
    for w in "${words[@]}"; do
        [[ $w == *=* ]] || continue
        field[${w%%=*}]=${w#*=}
    done
    case $2 in
    preempt) [[ ${field[preempt_exits]-} =~ ^[1-9][0-9]*$ ]] || {
        echo "preempt_exits=${field[preempt_exits]-(missing)}: the" \
             "preemption-timer path was not taken: $last"
        return 1
    } ;;
    lapic)
        if [ "${field[preempt_exits]-}" != 0 ] ||
            ! [[ ${field[lapic_irqs]-} =~ ^[1-9][0-9]*$ ]]; then
            echo "preempt_exits=${field[preempt_exits]-(missing)}" \
                 "lapic_irqs=${field[lapic_irqs]-(missing)}: not the LAPIC" \
                 "path: $last"
            return 1
        fi ;;
    esac
    if [ "$3" = off ] &&
        ! grep -E '^GRID count-down timer arms=[0-9]+ off_grid=0$' "$file" \
            >/dev/null; then
        echo "no 'GRID ... off_grid=0' line: a count-down armed off its grid"
        return 1
    fi
    for key in early lost doubled; do
        val=${field[$key]-}
        if [ "$val" != 0 ]; then
            echo "$key=${val:-(missing)}, not 0: $last"
            return 1
        fi
    done
    val=${field[deliveries]-}
    if ! [[ $val =~ ^[0-9]+$ ]] || [[ $val =~ ^0+$ ]]; then
        echo "deliveries=${val:-(missing)}, not a count above 0: $last"
        return 1
    fi
}

passed=0
failed=0
failures=()
for timer in "${timers[@]}"; do
    for r in "${runs[@]}"; do
        IFS='|' read -r guest args vcpus opts <<<"$r"
        read -ra words <<<"$args"
        read -ra extra <<<"$opts"
        advance=off
        [[ " $opts " != *" --advance=adaptive "* ]] || advance=adaptive
        tag=$(basename "$guest" .flat)-$timer-v$vcpus-$advance
        [ -z "$args" ] || tag+=-${args//[ =]/_}
        [[ " $opts " != *" --cpu="* ]] || tag+=-${opts##*--cpu=}
        cmd=("$bochs_sh" --hv "$hv" "--hv-timer=$timer" "--vcpus=$vcpus"
             "${extra[@]}" "${max_ticks[@]}" "$build/$guest" "${words[@]}")
        shown=("--hv-timer=$timer" "--vcpus=$vcpus" "${extra[@]}"
               "${max_ticks[@]}" "$guest" "${words[@]}")
        echo "--- $tag: tools/hv/bochs.sh ${shown[*]}"
        pids=()
        for i in 1 2; do
            (
                start=$EPOCHREALTIME
                rc=0
                "${cmd[@]}" >"$out/$tag.$i.out" 2>"$out/$tag.$i.err" || rc=$?
                echo "$rc $(elapsed "$start" "$EPOCHREALTIME")" >"$out/$tag.$i.rc"
            ) &
            pids+=($!)
            if [ "$jobs" -le 1 ]; then
                wait "${pids[@]}"
                pids=()
            fi
        done
        [ ${#pids[@]} -eq 0 ] || wait "${pids[@]}"
        ok=1
        for i in 1 2; do
            read -r rc secs <"$out/$tag.$i.rc"
            echo "$tag run $i: exit $rc, ${secs}s wall"
            if [ "$rc" != 0 ]; then
                echo "$me: $tag run $i exited $rc (want 0)" >&2
                tail -n 20 "$out/$tag.$i.err" | sed 's/^/    /' >&2
                ok=0
            fi
        done
        if ! cmp -s "$out/$tag.1.out" "$out/$tag.2.out"; then
            echo "$me: $tag: the two runs printed different output:" >&2
            diff "$out/$tag.1.out" "$out/$tag.2.out" | head -n 20 >&2 || true
            ok=0
        fi
        for i in 1 2; do
            if ! why=$(check_result "$out/$tag.$i.out" "$timer" "$advance" \
                "$vcpus"); then
                echo "$me: $tag run $i: $why" >&2
                ok=0
            fi
            if [[ " $opts " == *" --cpu=corei7_skylake_x"* ]] &&
                ! head -n 1 "$out/$tag.$i.out" | grep -q ', VMX TSC scaling'; then
                echo "$me: $tag run $i: lapict-hv did not use VMX TSC scaling" >&2
                ok=0
            fi
        done
        if [ "$ok" = 1 ]; then
            echo "$tag: passed: $(tail -n 1 "$out/$tag.1.out" | tr -d '\r')"
            passed=$((passed + 1))
        else
            echo "$tag: FAILED (outputs in $out/$tag.*)"
            failed=$((failed + 1))
            failures+=("$tag")
        fi
    done
done

echo "$me: $passed passed, $failed failed"
if [ "$failed" -ne 0 ]; then
    echo "$me: FAILED: ${failures[*]}" >&2
    exit 1
fi
