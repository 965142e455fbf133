#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The tests that involve threads, signals or host timers, on a slow host:
# each one LAPICT_STRESS_VALGRIND times under valgrind memcheck and
# LAPICT_STRESS_HOG times beside a CPU hog that keeps every core busy. Prints
# the failures per test and in total; exit status 0 only if none failed.
# Not part of ci/test-all.sh: at 50 + 50 on 2 cores its valgrind half
# took 33 minutes and its hog half 51 (split into two runs side by side,
# beside the valgrind half). Run it after changing the adapters' threads,
# signals or timers, or those tests.
#
# The tests:
#  - test_kvm_host, test_kvm_vcpu, test_kvm_hooks (cmocka, memcheck runs
#    them in CI too; test_kvm_hooks needs /dev/kvm), and example_kvm_loop
#    (examples/kvm_loop.c: the adapter's default loop, five ticks of a
#    real guest on /dev/kvm);
#  - kvm_stress_<kick>: tests/tsan/stress.c built without ThreadSanitizer,
#    the KVM adapter's real run loop against a fake vCPU, for each kick
#    path (signal, thread, none, caller); a new seed every run, advance off
#    and adaptive in turn;
#  - beside the hog only, the lapict-vmm guests on /dev/kvm: check_baremetal,
#    check_vmm, check_multiboot_kvm, check_migrate, check_changemode. Their
#    threads and timers are lapict-vmm's, a child process; valgrind would
#    only slow the harness (and cannot run lapict-vmm's --exec migration
#    itself). They raise their priority (tests/support/kvm_probe.h,
#    lt_guest_priority) so that their timing checks can conclude beside
#    the hog; a check a host stall made inconclusive is never a pass.
#  - qemu_smp_boots, after both halves and beside nothing: Linux at
#    -smp 4 on the patched QEMU with lapict's timer boots and runs
#    cyclictest LAPICT_STRESS_QEMU_BOOTS times in a row (default 200), each
#    within LAPICT_STRESS_QEMU_LIMIT seconds (default 180); a boot that
#    hangs or panics is a failure and its console is kept. It builds (or
#    takes from the cache) QEMU and the guest as CI's qemu gate does.
# A run that exits 77 (no usable /dev/kvm) counts as skipped, not passed.
# A run that does not end within LAPICT_STRESS_TIMEOUT is killed and
# counts as failed. The log of every failed run is kept.
#
# Environment: LAPICT_STRESS_VALGRIND, LAPICT_STRESS_HOG (runs per test,
# default 50 each; 0 skips that half), LAPICT_STRESS_TESTS (a subset, names
# as above, space-separated), LAPICT_STRESS_DIR (build directory, default
# build-stress), LAPICT_STRESS_TIMEOUT (seconds per run, default 600),
# LAPICT_STRESS_DEADLINES (per kvm_stress run, default 500),
# LAPICT_STRESS_QEMU_BOOTS (0 skips them), LAPICT_STRESS_QEMU_LIMIT, CC.
#
#     LAPICT_STRESS_VALGRIND=3 LAPICT_STRESS_HOG=3 bash ci/stress.sh
set -euo pipefail
cd "$(dirname "$0")/.."

vg_runs=${LAPICT_STRESS_VALGRIND:-50}
hog_runs=${LAPICT_STRESS_HOG:-50}
dir=${LAPICT_STRESS_DIR:-build-stress}
limit=${LAPICT_STRESS_TIMEOUT:-600}
deadlines=${LAPICT_STRESS_DEADLINES:-500}
qemu_n=${LAPICT_STRESS_QEMU_BOOTS:-200}
qemu_limit=${LAPICT_STRESS_QEMU_LIMIT:-180}
cc=${CC:-gcc}
unit="test_kvm_host test_kvm_vcpu test_kvm_hooks example_kvm_loop"
fake="kvm_stress_signal kvm_stress_thread kvm_stress_none kvm_stress_caller"
guests="check_baremetal check_vmm check_multiboot_kvm check_migrate check_changemode"
tests=${LAPICT_STRESS_TESTS:-$unit $fake $guests}
logs=$dir/stress-logs

for t in $tests; do
    case " $unit $fake $guests " in
    *" $t "*) ;;
    *) echo "stress: unknown test $t (known: $unit $fake $guests)" >&2
       exit 2 ;;
    esac
done

echo "== stress: building in $dir"
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DLAPICT_BUILD_TESTS=ON -DLAPICT_WERROR=ON >/dev/null
targets=()
for t in $tests; do
    case $t in
    kvm_stress_*) ;;
    check_multiboot_kvm) targets+=(check_multiboot) ;;
    *) targets+=("$t") ;;
    esac
done
if [ ${#targets[@]} -gt 0 ]; then
    cmake --build "$dir" -j"$(nproc)" --target "${targets[@]}" >/dev/null
fi
"$cc" -std=c11 -O2 -g -Wall -Wextra -Werror -DLAPICT_BUILDING \
    -Iinclude -Ilib -Iadapters/apic -Iadapters/kvm -Itests/adapters \
    lib/*.c adapters/apic/apic.c adapters/kvm/*.c tests/adapters/kvm_fake.c \
    tests/tsan/stress.c \
    -o "$dir/kvm_stress" -lpthread
rm -rf "$logs"
mkdir -p "$logs"

# The command line of run @2 of test @1.
command_of() {
    local t=$1 i=$2 adv=off
    [ $((i % 2)) = 1 ] && adv=adaptive
    case $t in
    kvm_stress_*)
        echo "$dir/kvm_stress --kick=${t#kvm_stress_} --advance=$adv" \
             "--deadlines=$deadlines --seed=$i" ;;
    check_multiboot_kvm) echo "$dir/bin/check_multiboot kvm" ;;
    *) echo "$dir/bin/$t" ;;
    esac
}

declare -A failed skipped
hogs=()
stop_hogs() {
    local p
    for p in "${hogs[@]}"; do
        kill "$p" 2>/dev/null || true
    done
    for p in "${hogs[@]}"; do
        wait "$p" 2>/dev/null || true
    done
    hogs=()
}
trap stop_hogs EXIT

# run_half MODE RUNS: every test RUNS times, under valgrind or beside the hog.
run_half() {
    local mode=$1 runs=$2 t i rc log cmd
    local -a pre=()
    [ "$runs" -gt 0 ] || return 0
    if [ "$mode" = valgrind ]; then
        # shellcheck disable=SC2054 # the comma is in an option value
        pre=(valgrind --quiet --error-exitcode=1 --leak-check=full
             --errors-for-leak-kinds=definite,indirect)
    else
        for i in $(seq "$(nproc)"); do
            sh -c 'while :; do :; done' &
            hogs+=($!)
        done
    fi
    echo "== stress: $runs runs each, $mode$([ "$mode" = hog ] &&
        echo " (${#hogs[@]} busy loops)")"
    for t in $tests; do
        failed[$t,$mode]=0
        skipped[$t,$mode]=0
        if [ "$mode" = valgrind ] && [[ " $guests " = *" $t "* ]]; then
            failed[$t,$mode]=-
            continue
        fi
        for i in $(seq "$runs"); do
            cmd=$(command_of "$t" "$i")
            log=$logs/$t-$mode-$i.log
            rc=0
            # shellcheck disable=SC2086 # cmd is words by construction
            timeout -k 30 "$limit" "${pre[@]}" $cmd >"$log" 2>&1 || rc=$?
            case $rc in
            0) rm -f "$log" ;;
            77) skipped[$t,$mode]=$((skipped[$t,$mode] + 1))
                rm -f "$log" ;;
            124 | 137)
                echo "stress: $t run $i ($mode) did not end within" \
                     "${limit}s, killed: $log"
                failed[$t,$mode]=$((failed[$t,$mode] + 1)) ;;
            *) echo "stress: $t run $i ($mode) failed (exit $rc): $log"
               failed[$t,$mode]=$((failed[$t,$mode] + 1)) ;;
            esac
        done
        echo "$t: ${failed[$t,$mode]} of $runs failed" \
             "(${skipped[$t,$mode]} skipped)"
    done
    stop_hogs
}

# qemu_smp_boots: Linux at -smp 4 on lapict's timer, boot after boot.
qemu_boots() {
    local n=$1 qdir i rc log o
    failed[qemu_smp_boots,boots]=0
    [ "$n" -gt 0 ] || return 0
    qdir=$(cd "$dir" && pwd)/qemu-bin
    bash adapters/qemu/build.sh "$qdir" >/dev/null
    bash adapters/qemu/guest/mkimage.sh "$qdir/guest" >/dev/null
    for i in $(seq 1 "$n"); do
        log=$logs/qemu_smp_boots.$i.log
        rc=0
        timeout -s KILL "$qemu_limit" "$qdir/qemu-system-x86_64" -M q35 \
            -accel tcg -cpu max -smp 4 -m 512 -global apic.lapict=on \
            -nic none -display none -monitor none -serial stdio -no-reboot \
            -kernel "$qdir/guest/vmlinuz" -initrd "$qdir/guest/initrd.img" \
            -append 'console=ttyS0 panic=-1 lapict.duration=1' \
            </dev/null >"$log" 2>&1 || rc=$?
        o=$(cat "$log")
        if [ "$rc" = 0 ] && [[ $o == *"LAPICT cyclictest rc=0"* ]] &&
           [[ $o == *"LAPICT done"* ]]; then
            rm -f "$log"
        else
            echo "stress: qemu_smp_boots boot $i failed (exit $rc): $log"
            failed[qemu_smp_boots,boots]=$((failed[qemu_smp_boots,boots] + 1))
        fi
    done
    echo "qemu_smp_boots: ${failed[qemu_smp_boots,boots]} of $n failed"
}

start=$SECONDS
run_half valgrind "$vg_runs"
run_half hog "$hog_runs"
qemu_boots "$qemu_n"

total=0
echo
echo "== stress: failures per test (runs: valgrind $vg_runs, hog $hog_runs;" \
     "skipped in brackets; - not run)"
printf '%-22s %12s %12s\n' test valgrind hog
for t in $tests; do
    row=()
    for mode in valgrind hog; do
        f=${failed[$t,$mode]:--}
        s=${skipped[$t,$mode]:-0}
        [ "$f" != - ] && total=$((total + f))
        if [ "$s" != 0 ]; then row+=("$f ($s)"); else row+=("$f"); fi
    done
    printf '%-22s %12s %12s\n' "$t" "${row[0]}" "${row[1]}"
done
if [ "$qemu_n" -gt 0 ]; then
    printf '%-22s %12s\n' qemu_smp_boots "${failed[qemu_smp_boots,boots]} of $qemu_n"
    total=$((total + failed[qemu_smp_boots,boots]))
fi
echo "stress: $total failed in all ($((SECONDS - start))s); logs of failed" \
     "runs in $logs"
[ "$total" = 0 ]
