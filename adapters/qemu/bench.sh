#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Benchmarks (not tests) of lapict inside QEMU, side by side in one run:
# Debian's stock qemu-system-x86_64 against the patched one of build.sh, the
# same kernel and initramfs (guest/mkimage.sh), under TCG, alternating runs.
#   adapters/qemu/bench.sh linux [SECONDS]   every clockevent mode, -smp 1
#                                            and 2: cyclictest, LOC rate,
#                                            guest clock drift vs the host
#   adapters/qemu/bench.sh advance [SECONDS] patched default mode with
#                                            lapict's advance off / fixed
#   adapters/qemu/bench.sh mbtest            mbtest under TCG and KVM
#                                            kernel-irqchip=off, both QEMUs
# Drift: the guest prints CLOCK_MONOTONIC at the start and the end of
# cyclictest; the host stamps each line with its own CLOCK_MONOTONIC when it
# arrives on the serial console; drift = (guest interval - host interval) /
# host interval.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
what=${1:-linux}
secs=${2:-10}
patched=${LAPICT_QEMU:-$repo/build/qemu/qemu-system-x86_64}
stock=/usr/bin/qemu-system-x86_64
guest=$repo/build/qemu/guest
[ -x "$stock" ] || DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
    --no-install-recommends qemu-system-x86
[ -x "$patched" ] || bash "$here/build.sh"
[ -f "$guest/initrd.img" ] || bash "$here/guest/mkimage.sh"

export PATCHED=$patched STOCK=$stock GUEST=$guest SECS=$secs WHAT=$what
export MBTEST=${LAPICT_MBTEST:-$repo/build/examples/vmm/lapict-mbtest.flat}
exec python3 - <<'EOF'
import os, re, subprocess, sys, tempfile, time

P, S, G = os.environ["PATCHED"], os.environ["STOCK"], os.environ["GUEST"]
secs, what = int(os.environ["SECS"]), os.environ["WHAT"]

def linux(qemu, smp, append, extra=()):
    cmd = [qemu, "-M", "q35", "-accel", "tcg", "-cpu", "max", "-smp", str(smp),
           "-m", "512", "-display", "none", "-monitor", "none",
           "-serial", "stdio", "-no-reboot", *extra,
           "-kernel", G + "/vmlinuz", "-initrd", G + "/initrd.img",
           "-append", "console=ttyS0 panic=-1 lapict.duration=%d %s"
           % (secs, append)]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    lines = []
    for raw in p.stdout:
        lines.append((time.clock_gettime_ns(time.CLOCK_MONOTONIC),
                      raw.decode(errors="replace").rstrip("\r\n")))
    p.wait()
    r = {"status": p.returncode, "ct": []}
    for t, l in lines:
        if not l.startswith("LAPICT "):
            continue
        kv = dict(re.findall(r"(\w+)=(\S+)", l))
        tag = l.split()[1]
        if tag in ("start", "end"):
            r[tag] = (t, kv)
        elif tag == "boot":
            r["boot"] = kv
        elif tag == "cyclictest" and "thread" in kv:
            r["ct"].append(kv)
        elif tag == "dmesg":
            r.setdefault("dmesg", []).append(l)
    return r

def summary(r, smp):
    if "end" not in r or not r["ct"]:
        return "did not finish (status %s)" % r["status"]
    (h0, g0), (h1, g1) = r["start"], r["end"]
    gd = int(g1["mono_ns"]) - int(g0["mono_ns"])
    hd = h1 - h0
    drift = (gd - hd) * 1e6 / hd
    loc = [(int(g1["cpu%d" % c]) - int(g0["cpu%d" % c])) * 1e9 / gd
           for c in range(smp)]
    ct = r["ct"]
    avg = sum(int(c["avg_us"]) for c in ct) / len(ct)
    mx = max(int(c["max_us"]) for c in ct)
    mn = min(int(c["min_us"]) for c in ct)
    return ("%-14s min %4d avg %6.1f max %6d us  LOC/s %s  drift %+7.1f ppm"
            % (r["boot"]["clockevent"], mn, avg, mx,
               "/".join("%.2f" % x for x in loc), drift)), avg, mx, drift

modes = [("default", ""), ("oneshot", "lapic=notscdeadline"),
         ("periodic", "lapic=notscdeadline nohz=off highres=off")]

if what == "linux":
    print("cyclictest -S -m -p 90 -i 1000 -D %d under TCG, -cpu max; "
          "stock = %s, lapict = %s" % (secs, S, P))
    for smp in (1, 2):
        for name, app in modes:
            res = {}
            for label, q in (("stock", S), ("lapict", P)):
                r = linux(q, smp, app)
                res[label] = summary(r, smp)
                s = res[label] if isinstance(res[label], str) else res[label][0]
                print("smp %d %-8s %-6s %s" % (smp, name, label, s), flush=True)
            if all(not isinstance(v, str) for v in res.values()):
                print("smp %d %-8s ratio lapict/stock: avg %.2f  max %.2f"
                      % (smp, name, res["lapict"][1] / res["stock"][1],
                         res["lapict"][2] / res["stock"][2]), flush=True)
elif what == "advance":
    print("patched QEMU, default mode (lapic-deadline), -smp 1, %d s" % secs)
    for label, extra in (("off", ()),
                         ("fixed 20us", ("-global", "apic.lapict-advance-ns=20000")),
                         ("fixed 50us", ("-global", "apic.lapict-advance-ns=50000")),
                         ("off", ()),
                         ("fixed 100us", ("-global", "apic.lapict-advance-ns=100000"))):
        r = linux(P, 1, "", extra)
        s = summary(r, 1)
        print("advance %-12s %s" % (label, s if isinstance(s, str) else s[0]),
              flush=True)
elif what == "mbtest":
    mb = os.environ["MBTEST"]
    env = tempfile.NamedTemporaryFile("w", delete=False)
    env.write("TEST_DEVICE=0\nLAPICT_MBTEST=ok\n")
    env.close()
    runs = [("TCG", ["-accel", "tcg", "-cpu", "max"]),
            ("KVM kernel-irqchip=off", ["-accel", "kvm", "-M",
             "pc,kernel-irqchip=off", "-cpu", "qemu64,+tsc-deadline"])]
    for label, q in (("stock", S), ("lapict", P)):
        for acc, args in runs:
            cmd = ["timeout", "-s", "KILL", "60", q, "-M", "pc", *args,
                   "-m", "128", "-display", "none", "-monitor", "none",
                   "-serial", "stdio", "-no-reboot", "-device",
                   "isa-debug-exit,iobase=0xf4,iosize=4", "-kernel", mb,
                   "-initrd", env.name, "-append", "initrd=1 x2apic=0"]
            o = subprocess.run(cmd, capture_output=True, text=True)
            out = o.stdout + o.stderr
            m = re.search(r"SUMMARY: (\d+) tests, (\d+) failures", out)
            fails = re.findall(r"FAIL: (.*)", out)
            timer = [f for f in fails if re.search(
                r"tsc|timer|one-shot|periodic|TMICT|TMCCT|TDCR|LVTT|deadline",
                f, re.I)]
            print("mbtest xAPIC %-6s %-24s %s; timer failures: %s"
                  % (label, acc, m.group(0) if m else
                     "did not finish (status %d)" % o.returncode,
                     "; ".join(timer) if timer else "none"), flush=True)
    os.unlink(env.name)
EOF
