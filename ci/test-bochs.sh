#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The Bochs gate: builds Bochs 3.0 with lapict as its LAPIC timer
# (adapters/bochs/build.sh) and without (stock.sh), then runs the
# multiboot test kernel under the patched one on a model with x2APIC and
# TSC-deadline mode, twice. Both runs must pass every check ("SUMMARY: <n>
# tests, 0 failures", adapters/bochs/run.sh exit 0) in x2APIC mode and
# print byte-identical output (Bochs counts time in instructions). The
# checks that need a QEMU-only device are skipped by the kernel with the
# reason printed (fwcfg=0: no fw_cfg; exit=bochs: Bochs's shutdown port
# instead of isa-debug-exit); this gate requires those SKIP lines and
# prints them. lapict-hv then runs the same kernel as its guest on the
# patched Bochs, with each of its host timers (the VMX-preemption timer;
# the LAPIC timer, which is then lapict's under lapict's): 0 failures,
# and its RESULT line with no early, lost or doubled interrupt. Then the
# snapshots: timers armed across Bochs's save/restore, in the patched
# binary and from the stock one into the patched one (see below). The same
# runs under the stock binary are printed for comparison and do not decide
# the gate. The series' conversions between Bochs's ticks and lapict's ns
# are checked against the divide they replace as well
# (adapters/bochs/muldiv-check.sh).
#
#   ci/test-bochs.sh BUILD
#
# BUILD is a directory for the binaries (BUILD/bochs, BUILD/bochs-stock),
# the kernel (BUILD/guests) and the outputs (BUILD/test-bochs). The Bochs
# builds are cached (adapters/bochs/build.sh); each step prints its time.
set -euo pipefail

me=test-bochs
repo=$(cd "$(dirname "$0")/.." && pwd)
[ $# -eq 1 ] || { echo "usage: ci/test-bochs.sh BUILD" >&2; exit 2; }
mkdir -p -- "$1"
build=$(cd -- "$1" && pwd)
out=$build/test-bochs
rm -rf "$out"
mkdir -p "$out"
fail=0
start=$SECONDS

step() { echo "$me: $*"; }
bad() { echo "$me: FAIL: $*"; fail=1; }

t=$SECONDS
"$repo/adapters/bochs/build.sh" "$build/bochs"
"$repo/adapters/bochs/stock.sh" "$build/bochs-stock"
step "Bochs binaries ready in $((SECONDS - t)) s"

# (After build.sh, which installs g++.)
t=$SECONDS
"$repo/adapters/bochs/muldiv-check.sh" >"$out/muldiv-check.log" 2>&1 ||
    bad "0003's tick <-> ns conversions differ from the divide: $(tail -n 3 "$out/muldiv-check.log")"
step "$(tail -n 1 "$out/muldiv-check.log") ($((SECONDS - t)) s)"

t=$SECONDS
cmake -S "$repo" -B "$build/guests" -DLAPICT_BUILD_TESTS=OFF \
    -DLAPICT_BUILD_EXAMPLES=OFF >"$out/guests-cmake.log" 2>&1 ||
    { tail -20 "$out/guests-cmake.log"; exit 1; }
cmake --build "$build/guests" --target lapict_mbtest lapict_hv \
    >"$out/guests-build.log" 2>&1 ||
    { tail -20 "$out/guests-build.log"; exit 1; }
kernel=$build/guests/tests/guests/lapict-mbtest.flat
hv=$build/guests/bin/lapict-hv
for f in "$kernel" "$hv"; do
    [ -f "$f" ] || { echo "$me: $f was not built" >&2; exit 1; }
done
step "kernel built in $((SECONDS - t)) s"

words=(fwcfg=0 exit=bochs tscwrite=1)

# run NAME BOCHS [RUN.SH OPTIONS]: the kernel's output in NAME.out, the
# runner's messages in NAME.err, its exit status in $rc.
run() {
    local name=$1 bochs=$2
    shift 2
    local t=$SECONDS
    rc=0
    "$repo/adapters/bochs/run.sh" "$@" "$bochs" "$kernel" "${words[@]}" \
        >"$out/$name.out" 2>"$out/$name.err" || rc=$?
    step "$name: exit $rc in $((SECONDS - t)) s" \
         "($(grep -a '^SUMMARY: ' "$out/$name.out" | tail -n 1 | tr -d '\r' ||
             echo 'no SUMMARY'))"
}

# The patched binary, twice, on corei7_haswell_4770 (x2APIC, TSC-deadline).
for i in 1 2; do
    run "patched-$i" "$build/bochs/bochs"
    if [ "$rc" -ne 0 ]; then
        bad "patched run $i: run.sh exit $rc"
        grep -a '^FAIL: ' "$out/patched-$i.out" || true
        cat "$out/patched-$i.err"
    fi
done
if ! cmp -s "$out/patched-1.out" "$out/patched-2.out"; then
    bad "the two patched runs differ:"
    diff "$out/patched-1.out" "$out/patched-2.out" | head -20 || true
fi
o=$out/patched-1.out
tr -d '\r' <"$o" >"$o.txt"
grep -qx 'SUMMARY: [0-9]* tests, 0 failures' "$o.txt" ||
    bad "patched: no 'SUMMARY: <n> tests, 0 failures' line"
grep -qx 'mode: x2apic' "$o.txt" || bad "patched: the checks did not run in x2APIC mode"
grep -qx 'PASS: cpuid: TSC-deadline' "$o.txt" ||
    bad "patched: the model does not offer TSC-deadline mode"
grep -q '^SKIP: fw_cfg: .*(fwcfg=0: the host has no fw_cfg device)$' "$o.txt" ||
    bad "patched: the fw_cfg checks were not skipped with their reason"
grep -q '^PASS: tsc deadline' "$o.txt" || bad "patched: no TSC-deadline check ran"
echo "$me: skipped (not failed), as the kernel printed:"
grep '^SKIP: ' "$o.txt" | sed 's/^/    /'
echo "    isa-debug-exit: Bochs has none; the kernel ends through port 0x8900 (exit=bochs)"

# hvrun NAME BOCHS TIMER: the kernel as lapict-hv's guest.
hvrun() {
    local name=$1 bochs=$2 timer=$3 t=$SECONDS
    rc=0
    "$repo/adapters/bochs/run.sh" --megs=192 --module="$kernel" "$bochs" \
        "$hv" "hv_timer=$timer" advance=off vcpus=1 tsc_khz=50000 \
        >"$out/$name.out" 2>"$out/$name.err" || rc=$?
    tr -d '\r' <"$out/$name.out" >"$out/$name.txt"
    step "$name: exit $rc in $((SECONDS - t)) s" \
         "($(grep '^RESULT ' "$out/$name.txt" | tail -n 1 || echo 'no RESULT'))"
}
for timer in preempt lapic; do
    hvrun "hv-$timer" "$build/bochs/bochs" "$timer"
    o=$out/hv-$timer.txt
    [ "$rc" -eq 0 ] || { bad "lapict-hv ($timer): run.sh exit $rc";
                         cat "$out/hv-$timer.err"; }
    grep -qx 'SUMMARY: [0-9]* tests, 0 failures' "$o" ||
        bad "lapict-hv ($timer): no 'SUMMARY: <n> tests, 0 failures' line"
    grep -q "^RESULT test=hv .* hv_timer=$timer deliveries=[1-9][0-9]* early=0 lost=0 doubled=0 " "$o" ||
        bad "lapict-hv ($timer): RESULT line missing, or an early, lost or doubled interrupt"
done

# Snapshots: a timer armed across a save fires on time after the restore.
# The kernel (snap=7) arms a one-shot count, a periodic count and a TSC
# deadline in turn and stops the debugger with each armed; run.sh --save
# saves the state there (SAVE/1, 2, 3) and goes on, and that run is the
# reference. A run restored from SAVE/N must pass the kernel's checks (not
# early, not late, not lost, not doubled) and print, byte for byte, what
# the saved run printed after the save. A state the patched binary saves
# after a restore (restored-patched-1 saves again) restores as well. The
# stock binary's states (Bochs's own timer fields, no lapict blob) must
# restore into the patched binary and pass the kernel's checks; that its
# output also equals the patched reference is printed, not required (the
# two binaries reach the stops at the same ticks only while the series
# leaves the boot's timing alone).
snapwords=(fwcfg=0 exit=bochs snap=7 tsc_khz=50000 bus_khz=50000)
snaps=$out/snapshots
# snaprun NAME RUN.SH ARGS...: the output in NAME.txt, the status in $rc.
snaprun() {
    local name=$1 t=$SECONDS
    shift
    rc=0
    "$repo/adapters/bochs/run.sh" "$@" >"$out/$name.out" 2>"$out/$name.err" ||
        rc=$?
    tr -d '\r' <"$out/$name.out" >"$out/$name.txt"
    step "$name: exit $rc in $((SECONDS - t)) s" \
         "($(grep '^SUMMARY: ' "$out/$name.txt" | tail -n 1 || echo 'no SUMMARY'))"
}
# tail_of REF OUT: OUT is not empty and REF ends with it.
tail_of() {
    python3 -c 'import sys
ref, out = (open(f, "rb").read() for f in sys.argv[1:])
sys.exit(0 if out and ref.endswith(out) else 1)' "$1" "$2"
}
ts=$SECONDS
snaprun saved-patched --megs=32 --save="$snaps/patched" "$build/bochs/bochs" \
    "$kernel" "${snapwords[@]}"
[ "$rc" -eq 0 ] || { bad "saved-patched: run.sh exit $rc";
                     cat "$out/saved-patched.err"; }
snaprun saved-stock --megs=32 --save="$snaps/stock" \
    "$build/bochs-stock/bochs" "$kernel" "${snapwords[@]}"
echo "$me: stock's own run after its saves (for comparison, not a gate):"
grep -E '^(FAIL|SUMMARY)' "$out/saved-stock.txt" | sed 's/^/    /' || true
for from in patched stock; do
    for n in 1 2 3; do
        name=restored-$from-$n
        if [ ! -f "$snaps/$from/$n/.saved" ]; then
            bad "saved-$from: no state saved at the kernel's stop $n"
            continue
        fi
        again=()
        [ "$from-$n" != patched-1 ] || again=(--save="$snaps/again")
        snaprun "$name" "${again[@]}" --restore="$snaps/$from/$n" \
            "$build/bochs/bochs"
        if [ "$rc" -ne 0 ]; then
            bad "$name: run.sh exit $rc"
            grep '^FAIL: ' "$out/$name.txt" || true
            cat "$out/$name.err"
        fi
        if tail_of "$out/saved-patched.txt" "$out/$name.txt"; then
            echo "    $name: the output after the save, byte for byte"
        elif [ "$from" = patched ]; then
            bad "$name: not what the saved run printed after the save"
        else
            echo "    $name: passes, but not byte for byte what the" \
                "patched run printed after the same stop"
        fi
    done
done
if [ -f "$snaps/again/1/.saved" ]; then
    snaprun restored-again-1 --restore="$snaps/again/1" "$build/bochs/bochs"
    [ "$rc" -eq 0 ] || { bad "restored-again-1: run.sh exit $rc";
                         cat "$out/restored-again-1.err"; }
    tail_of "$out/restored-patched-1.txt" "$out/restored-again-1.txt" ||
        bad "restored-again-1: not what restored-patched-1 printed after the save"
else
    bad "restored-patched-1: no state saved at its first stop"
fi
[ "$fail" -ne 0 ] || rm -rf "$snaps"  # ~40 MB a state
step "snapshots in $((SECONDS - ts)) s"

# Stock, for comparison only.
run stock "$build/bochs-stock/bochs"
echo "$me: stock Bochs 3.0 (for comparison, not a gate):"
tr -d '\r' <"$out/stock.out" | grep -E '^(FAIL|SKIP|SUMMARY)' | sed 's/^/    /' || true
sed 's/^/    /' "$out/stock.err"
for timer in preempt lapic; do
    hvrun "stock-hv-$timer" "$build/bochs-stock/bochs" "$timer"
    grep -E '^(FAIL|SUMMARY)' "$out/stock-hv-$timer.txt" | sed 's/^/    /' || true
done

step "done in $((SECONDS - start)) s"
if [ "$fail" -ne 0 ]; then
    echo "$me: FAILED (outputs in $out)"
    exit 1
fi
echo "$me: passed"
