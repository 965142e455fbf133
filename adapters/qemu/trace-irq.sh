#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Where a timer interrupt's host time goes in QEMU: one second of the host
# scheduler's and system calls' trace (perf) of a Linux guest running
# cyclictest, per QEMU thread, summed over the second and divided by the
# guest's timer interrupts, then the events of one interrupt's path.
#   adapters/qemu/trace-irq.sh ARM [INTERVAL_US] [SMP]
# ARM: stock (Debian's 10.0, stock.sh), off (the patched binary with
# lapict off), on (lapict's timer), tscdl (lapict's, the guest on
# TSC-deadline), auto (lapict's with timer-advance=auto); the guest is on
# the one-shot LAPIC but for tscdl. INTERVAL_US: cyclictest's interval
# (default 200, 5 kHz). SMP: -smp (default 1).
# Prints, per thread (main loop, each vCPU, the rest): wake-ups, CPU time
# and system calls by kind per interrupt, then one interrupt's events in
# order with their offsets in microseconds. Needs perf with the sched and
# syscalls tracepoints (root); exits 1 when the guest or perf fails.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
me=trace-irq.sh
arm=${1:?usage: trace-irq.sh stock|off|on|tscdl|auto [INTERVAL_US] [SMP]}
interval=${2:-200}
smp=${3:-1}
case "$interval$smp" in
*[!0-9]*) echo "$me: INTERVAL_US and SMP are numbers" >&2; exit 1 ;;
esac
if [ "$interval" -lt 50 ] || [ "$interval" -gt 1000000 ] ||
   [ "$smp" -lt 1 ] || [ "$smp" -gt 8 ]; then
    echo "$me: INTERVAL_US 50..1000000, SMP 1..8" >&2
    exit 1
fi
patched=${LAPICT_QEMU:-$repo/build/qemu/qemu-system-x86_64}
stock=$repo/build/qemu-stock/qemu-system-x86_64
guest=$repo/build/qemu/guest
qemu=$patched
append="lapic=notscdeadline"
extra=(-global apic.lapict=on)
case "$arm" in
stock) qemu=$stock; extra=() ;;
off) extra=(-global apic.lapict=off) ;;
on) ;;
tscdl) append="" ;;
auto) extra+=(-global apic.timer-advance=auto) ;;
*) echo "$me: unknown arm '$arm'" >&2; exit 1 ;;
esac
command -v perf >/dev/null || { echo "$me: perf is not installed" >&2; exit 1; }
[ -x "$stock" ] || bash "$here/stock.sh"
[ -x "$patched" ] || bash "$here/build.sh"
[ -f "$guest/initrd.img" ] || bash "$here/guest/mkimage.sh"

work=$(mktemp -d)
qpid=
cleanup() {
    [ -n "$qpid" ] && kill "$qpid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
mkfifo "$work/console"
"$qemu" -M q35 -accel tcg -cpu max -smp "$smp" -m 512 -display none \
    -monitor none -serial stdio -no-reboot -name trace,debug-threads=on \
    "${extra[@]}" -kernel "$guest/vmlinuz" -initrd "$guest/initrd.img" \
    -append "console=ttyS0 panic=-1 lapict.duration=6 lapict.interval=$interval $append" \
    </dev/null >"$work/console" 2>&1 &
qpid=$!
exec 3<"$work/console"
started=0
while IFS= read -r -t 120 line <&3; do
    echo "$line" >>"$work/console.log"
    case "$line" in
    "LAPICT start "*) started=1; break ;;
    esac
done
if [ "$started" != 1 ]; then
    echo "$me: the guest did not start cyclictest:" >&2
    tail -n 5 "$work/console.log" >&2
    exit 1
fi
# Past cyclictest's first two seconds, one second of trace. Interrupts
# are counted from the trace's span and the interval: cyclictest's timer
# fires once per interval on each vCPU (the guest's other ticks are few:
# nohz).
cat <&3 >>"$work/console.log" &
sleep 2
events=sched:sched_switch,sched:sched_wakeup
for s in futex ppoll write read ioctl timer_settime rt_sigreturn; do
    events+=,syscalls:sys_enter_$s,syscalls:sys_exit_$s
done
# System-wide: a wake-up is recorded in the waker's context (the host's
# timer interrupt, another process) and a switch-in in the idle task's, so
# a per-process recording would miss both; QEMU's threads are picked out
# by their ids below.
for t in /proc/"$qpid"/task/*; do
    echo "${t##*/} $(cat "$t/comm")"
done >"$work/threads"
if ! perf record -q -a -o "$work/perf.data" -e "$events" \
    -- sleep 1 >"$work/perf.log" 2>&1; then
    echo "$me: perf record failed:" >&2
    tail -n 5 "$work/perf.log" >&2
    exit 1
fi
perf script -i "$work/perf.data" -F comm,tid,time,event,trace \
    >"$work/perf.txt" 2>/dev/null
wait "$qpid" || true
qpid=
grep -q "LAPICT done" "$work/console.log" || {
    echo "$me: the guest did not finish:" >&2
    tail -n 5 "$work/console.log" >&2
    exit 1
}
ARM=$arm INTERVAL=$interval SMP=$smp \
    python3 - "$work/perf.txt" "$work/threads" <<'EOF'
import collections, os, re, sys

interval_us = int(os.environ["INTERVAL"])
smp = int(os.environ["SMP"])
rows = []
pat = re.compile(r"^\s*(.+?)\s+(\d+)\s+(\d+\.\d+):\s+(\S+):\s*(.*)$")
for line in open(sys.argv[1]):
    m = pat.match(line)
    if m:
        comm, tid, t, ev, rest = m.groups()
        rows.append((float(t) * 1e6, int(tid), comm.strip(), ev, rest))
if not rows:
    sys.exit("trace-irq.sh: perf recorded no event")
span = rows[-1][0] - rows[0][0]
irqs = max(1.0, span / interval_us * smp)

def role(comm):
    if comm.startswith("CPU "):
        return comm.split("/")[0]
    if comm.startswith("qemu-system"):
        return "main loop"
    return "other"

tids = {}
for line in open(sys.argv[2]):
    tid, comm = line.rstrip("\n").split(" ", 1)
    tids[int(tid)] = role(comm)
if not any(tid in tids for _, tid, _, _, _ in rows):
    sys.exit("trace-irq.sh: no event of QEMU's threads")
# sched_switch is logged on the CPU that switches: prev_pid= leaves it,
# next_pid= runs; a QEMU thread's run time is from its switch-in to its
# switch-out.
wake = collections.Counter()
calls = collections.defaultdict(collections.Counter)
run = collections.Counter()
on_cpu = {}
for t, tid, comm, ev, rest in rows:
    if ev == "sched:sched_wakeup":
        m = re.search(r"pid=(\d+)", rest)
        if m and int(m.group(1)) in tids:
            wake[tids[int(m.group(1))]] += 1
    elif ev == "sched:sched_switch":
        p = re.search(r"prev_pid=(\d+)", rest)
        n = re.search(r"next_pid=(\d+)", rest)
        if p and int(p.group(1)) in on_cpu:
            run[tids[int(p.group(1))]] += t - on_cpu.pop(int(p.group(1)))
        if n and int(n.group(1)) in tids:
            on_cpu[int(n.group(1))] = t
    elif ev.startswith("syscalls:sys_enter_") and tid in tids:
        calls[tids[tid]][ev[len("syscalls:sys_enter_"):]] += 1

print("arm %s, -smp %d, interval %d us: %.0f us traced, %.0f cyclictest "
      "timer interrupts (one per vCPU per interval)"
      % (os.environ["ARM"], smp, interval_us, span, irqs))
print("%-10s %10s %12s  %s" % ("thread", "wake/irq", "run us/irq",
                               "system calls per interrupt"))
for r in sorted(set(tids.values())):
    cs = " ".join("%s %.2f" % (k, v / irqs)
                  for k, v in sorted(calls[r].items()))
    print("%-10s %10.2f %12.1f  %s" % (r, wake[r] / irqs, run[r] / irqs,
                                        cs or "-"))
# One interrupt's path: the events of the window of one interval in the
# middle of the trace, starting at a vCPU's wake-up.
mid = rows[0][0] + span / 2
start = None
for i, (t, tid, comm, ev, rest) in enumerate(rows):
    if t >= mid and ev == "sched:sched_wakeup" and "CPU 0" in rest:
        start = i
        break
if start is None:
    sys.exit("trace-irq.sh: no vCPU wake-up in the trace's second half")
t0 = rows[start][0]
print("one interrupt's path (from CPU 0's wake-up, offsets in us):")
for t, tid, comm, ev, rest in rows[start:]:
    if t - t0 > interval_us:
        break
    if tid not in tids and not (ev.startswith("sched:") and
                                any("pid=%d " % q in rest + " "
                                    for q in tids)):
        continue
    ev = ev.replace("syscalls:sys_", "").replace("sched:sched_", "")
    print("  %8.1f  %-10s %-14s %s" % (t - t0, tids.get(tid, comm), ev,
                                       rest[:70]))
EOF
