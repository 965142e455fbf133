#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Benchmarks (not tests) of lapict inside QEMU, side by side in one run:
# Debian's stock QEMU 10.0 (stock.sh) against the patched one of build.sh
# with lapict's timer (-global apic.lapict=on, which it always gets here),
# the same kernel and initramfs (guest/mkimage.sh), under TCG, alternating
# runs.
#   adapters/qemu/bench.sh linux [SECONDS]   every clockevent mode, -smp 1
#                                            and 2: cyclictest, LOC rate,
#                                            guest clock drift vs the host
#                                            (SMPS="1 2", MODES="default
#                                            oneshot periodic" choose)
#   adapters/qemu/bench.sh advance [SECONDS] patched default mode with
#                                            lapict's advance off / fixed
#   adapters/qemu/bench.sh mbtest            mbtest under TCG, xAPIC and
#                                            x2APIC, both QEMUs
#   adapters/qemu/bench.sh cpu [SECONDS]     default mode, cyclictest at
#                                            1 kHz and 5 kHz (RATES="1000
#                                            200", interval in us), -smp 1,
#                                            2 and 4 (SMPS): latency beside
#                                            the host CPU each QEMU spent,
#                                            and the ratios to stock;
#                                            ADVANCES="100000" (ns) adds
#                                            lapict with that advance
#   adapters/qemu/bench.sh arms [SECONDS]    stock, the patched binary with
#                                            lapict off and on, the guest on
#                                            one-shot LAPIC in each, plus
#                                            lapict's TSC-deadline and
#                                            adaptive-advance rows; -smp 1, 2
#                                            and 4 (SMPS), 1 and 5 kHz
#                                            (RATES); REPS rounds (>= 8 for a
#                                            claim); each figure's range and
#                                            whether it overlaps stock's
#   adapters/qemu/bench.sh csv LOG          the per-run lines of a saved
#                                            run's output as CSV
# Every run's line also goes to a CSV file, $CSV (default
# $OUT/<mode>.csv): series, rep, config, clockevent, min/avg/max us, LOC/s
# per CPU, drift ppm, CPU % (process, main loop, vCPUs), machine.
# Every Linux run also reports the host CPU QEMU spent over the cyclictest
# window (between the guest's "LAPICT start" and "LAPICT end" lines), read
# from /proc/PID/task/*/stat: the whole process, its main-loop thread (the
# thread group leader) and its vCPU threads ("CPU n/TCG"), each in % of one
# core. Those figures carry the console's line latency at both ends.
# A Linux run that takes RUN_LIMIT seconds (default 240) beyond SECONDS is
# killed and left out, and the exit status says so. Every number from the
# command line or the environment is checked before the first run.
# HOSTREF=1 (linux, advance): each round also sleeps on the host, no VM,
# to each next 1 ms instant for SECONDS ("host sleeps"): the host's own
# wake-up tail, which every timer in QEMU's main loop inherits.
# HIST=1 (linux, advance): cyclictest also keeps a 1 us histogram in the
# guest (lapict.hist=20000); each configuration's samples of all its runs go
# to $OUT/<title>-<label>.txt (OUT default build/qemu/bench) and
# tools/bench/cdf.sh draws them as one CDF per comparison,
# $OUT/<title>.png.
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
stock=$repo/build/qemu-stock/qemu-system-x86_64
guest=$repo/build/qemu/guest
if [ "$what" = csv ]; then
    export LOG=${2:?usage: bench.sh csv LOG}
    secs=0
else
    [ -x "$stock" ] || bash "$here/stock.sh"
    [ -x "$patched" ] || bash "$here/build.sh"
    [ -f "$guest/initrd.img" ] || bash "$here/guest/mkimage.sh"
fi

export PATCHED=$patched STOCK=$stock GUEST=$guest SECS=$secs WHAT=$what
export OUT=${OUT:-$repo/build/qemu/bench} CDF=$repo/tools/bench/cdf.sh
export MBTEST=${LAPICT_MBTEST:-$repo/build/tests/guests/lapict-mbtest.flat}
exec python3 - <<'EOF'
import os, re, signal, subprocess, sys, tempfile, threading, time

P, S, G = os.environ["PATCHED"], os.environ["STOCK"], os.environ["GUEST"]
# The patched QEMU's APIC timer is lapict's only when asked for: every
# run of it gets ON, but for a configuration that says OFF.
ON = ("-global", "apic.lapict=on")
OFF = ("-global", "apic.lapict=off")
def wholes(name, default, lo, hi, one=False):
    """Whole numbers (space-separated; exactly one if one) from the
    environment, or a clear error."""
    raw = os.environ.get(name, default)
    v = raw.split()
    if not v or (one and len(v) > 1) or not all(
            re.fullmatch(r"[0-9]{1,9}", x) and lo <= int(x) <= hi for x in v):
        sys.exit("bench.sh: %s is %r; it takes %s in %d..%d"
                 % (name, raw, "a whole number" if one else "whole numbers",
                    lo, hi))
    return [int(x) for x in v]

def whole(name, default, lo, hi):
    return wholes(name, default, lo, hi, one=True)[0]

secs, what = whole("SECS", "10", 0, 3600), os.environ["WHAT"]
hist = os.environ.get("HIST", "0") == "1"

TICK = os.sysconf("SC_CLK_TCK")
# Seconds a Linux run may take beyond its cyclictest window (a boot under
# TCG takes seconds; -smp 4 on two host cores, under a minute).
RUN_LIMIT = whole("RUN_LIMIT", "240", 30, 3600)

def threads_cpu(pid):
    """{tid: (comm, utime + stime in clock ticks)} of every thread of pid."""
    out = {}
    try:
        tids = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return out
    for tid in tids:
        try:
            with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
                st = f.read()
        except OSError:
            continue  # the thread ended meanwhile
        comm = st[st.index("(") + 1:st.rindex(")")]
        fields = st[st.rindex(")") + 2:].split()
        out[int(tid)] = (comm, int(fields[11]) + int(fields[12]))
    return out

def cpu_use(cpu, pid):
    """Host CPU between the start and end lines, % of one core: the
    process, its main-loop thread, its vCPU threads; None if a line is
    missing."""
    if "start" not in cpu or "end" not in cpu:
        return None
    (t0, a), (t1, b) = cpu["start"], cpu["end"]
    secs = (t1 - t0) / 1e9
    use = {"all": 0, "main": 0, "vcpu": 0}
    for tid, (comm, ticks) in b.items():
        d = ticks - a.get(tid, (comm, 0))[1]
        use["all"] += d
        if tid == pid:
            use["main"] += d
        elif comm.startswith("CPU "):
            use["vcpu"] += d
    return {k: 100.0 * v / TICK / secs for k, v in use.items()}

def cpu_text(r):
    c = r.get("cpu")
    if not c:
        return "CPU n/a"
    return ("CPU %5.1f%% (main %5.1f%%, vCPUs %5.1f%%)"
            % (c["all"], c["main"], c["vcpu"]))

def linux(qemu, smp, append, extra=()):
    cmd = [qemu, "-M", "q35", "-accel", "tcg", "-cpu", "max", "-smp", str(smp),
           "-m", "512", "-display", "none", "-monitor", "none",
           "-serial", "stdio", "-no-reboot", "-name", "bench,debug-threads=on",
           *(ON if qemu == P and "apic.lapict=off" not in extra else ()),
           *extra,
           "-kernel", G + "/vmlinuz", "-initrd", G + "/initrd.img",
           "-append", "console=ttyS0 panic=-1 lapict.duration=%d %s%s"
           % (secs, "lapict.hist=20000 " if hist else "", append)]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    # A guest that hangs (stock at -smp 4 on two host cores has: an RCU
    # stall, one vCPU halted for good) is killed, and its run left out.
    killer = threading.Timer(RUN_LIMIT + secs, p.kill)
    killer.start()
    lines, cpu = [], {}
    for raw in p.stdout:
        t = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        l = raw.decode(errors="replace").rstrip("\r\n")
        if l.startswith("LAPICT start ") or l.startswith("LAPICT end "):
            cpu[l.split()[1]] = (t, threads_cpu(p.pid))
        lines.append((t, l))
    p.wait()
    killer.cancel()
    tail = [l for _, l in lines[-3:]]
    if p.returncode == -signal.SIGKILL:
        tail.append("killed after %d s" % (RUN_LIMIT + secs))
    r = {"status": p.returncode, "ct": [], "hist": {}, "over": 0,
         "cpu": cpu_use(cpu, p.pid), "tail": tail}
    for t, l in lines:
        if not l.startswith("LAPICT "):
            continue
        kv = dict(re.findall(r"(\w+)=(\S+)", l))
        tag = l.split()[1]
        if (tag in ("start", "end") or
                (tag == "cyclictest" and "thread" in kv)) and \
                not all(re.fullmatch(r"-?\d+", v) for v in kv.values()):
            # A kernel message printed into the line (the console is
            # shared): its numbers cannot be trusted, so the run is not.
            r["garbled"] = l
            continue
        if tag in ("start", "end"):
            r[tag] = (t, kv)
        elif tag == "boot":
            r["boot"] = kv
        elif tag == "cyclictest" and "thread" in kv:
            r["ct"].append(kv)
        elif tag == "hist":
            us = int(kv.pop("us"))
            r["hist"][us] = r["hist"].get(us, 0) + sum(map(int, kv.values()))
        elif tag == "hist_overflow":
            r["over"] += sum(map(int, kv.values()))
        elif tag == "dmesg":
            r.setdefault("dmesg", []).append(l)
    return r

def summary(r, smp):
    global discarded
    if "garbled" in r:
        discarded += 1
        return "discarded, garbled console line: %r" % r["garbled"]
    if "end" not in r or not r["ct"]:
        discarded += 1
        return "did not finish (status %s): %s" % (
            r["status"], " | ".join(r.get("tail", [])))
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
            "  %s"
            % (r["boot"]["clockevent"], mn, avg, mx,
               "/".join("%.2f" % x for x in loc), drift, cpu_text(r))), \
        avg, mx, drift, (r.get("cpu") or {}).get("all", float("nan"))

modes = [("default", ""), ("oneshot", "lapic=notscdeadline"),
         ("periodic", "lapic=notscdeadline nohz=off highres=off")]

reps = whole("REPS", "3", 1, 1000)
# Runs left out of the figures: the exit status says so.
discarded = 0

def med(v):
    v = sorted(v)
    return v[len(v) // 2] if len(v) % 2 else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2

def host_sleeps():
    """The host's own wake-up tail, no VM: what cyclictest -i 1000 does, on
    the host, for the same span (sleep to each next 1 ms instant, lateness
    in us). Returns a run in the shape of summary()'s, and the histogram."""
    step, n = 1000000, secs * 1000
    lat = {}
    nxt = time.clock_gettime_ns(time.CLOCK_MONOTONIC) + step
    for _ in range(n):
        left = nxt - time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        if left > 0:
            time.sleep(left / 1e9)
        us = (time.clock_gettime_ns(time.CLOCK_MONOTONIC) - nxt) // 1000
        lat[us] = lat.get(us, 0) + 1
        nxt += step
    tot = sum(u * c for u, c in lat.items())
    mn, mx, avg = min(lat), max(lat), tot / n
    return (("%-14s min %4d avg %6.1f max %6d us  (%d sleeps)"
             % ("no VM", mn, avg, mx, n)), avg, mx, 0.0, float("nan")), lat

def slug(s):
    """@s as a file-name part: runs of other characters become one '-'."""
    return re.sub(r"[^A-Za-z0-9]+", "-", s.strip()).strip("-")

RUN = re.compile(
    r"^(?P<series>.*?) rep (?P<rep>\d+) (?P<config>.{22}) (?P<rest>.*)$")
STAT = re.compile(
    r"(?P<clockevent>\S+)\s+min\s+(?P<min_us>\d+) avg\s+(?P<avg_us>[\d.]+)"
    r" max\s+(?P<max_us>\d+) us  LOC/s (?P<loc_per_s>\S+)  drift\s+"
    r"(?P<drift_ppm>[+-][\d.]+) ppm  CPU\s+(?P<cpu_pct>[\d.]+)% \(main\s+"
    r"(?P<main_pct>[\d.]+)%, vCPUs\s+(?P<vcpu_pct>[\d.]+)%\)")
CSV_COLS = ("series", "rep", "config", "clockevent", "min_us", "avg_us",
            "max_us", "loc_per_s", "drift_ppm", "cpu_pct", "main_pct",
            "vcpu_pct", "machine")

def machine():
    model = "?"
    with open("/proc/cpuinfo") as f:
        for l in f:
            if l.startswith("model name"):
                model = l.split(":", 1)[1].strip()
                break
    return "%s x%d" % (model, os.cpu_count())

HEADED = set()

def csv_row(line, out):
    """Appends the run @line (as compare() prints it) to CSV file @out;
    a run that did not finish keeps only its series, rep and config."""
    m = RUN.match(line)
    if not m:
        return False
    row = {k: m.group(k).strip() for k in ("series", "rep", "config")}
    st = STAT.search(m.group("rest"))
    if st:
        row.update(st.groupdict())
    row["machine"] = machine()
    new = out not in HEADED and (not os.path.exists(out) or
                                 os.path.getsize(out) == 0)
    HEADED.add(out)
    with open(out, "a") as o:
        if new:
            o.write(",".join(CSV_COLS) + "\n")
        o.write(",".join('"%s"' % row.get(k, "").replace('"', "'")
                         for k in CSV_COLS) + "\n")
    return True

def csv_path():
    return os.environ.get("CSV") or "%s/%s.csv" % (os.environ["OUT"], what)

def compare(title, configs, smp):
    """Runs each (label, qemu, append, extra) config reps times, alternating,
    prints every run and the medians. HOSTREF=1 adds the host's own
    wake-up tail (host_sleeps) as a last configuration of each round."""
    if os.environ.get("HOSTREF", "0") == "1":
        configs = configs + [("host sleeps", None, "", ())]
    res = {c[0]: [] for c in configs}
    samples = {c[0]: {} for c in configs}
    for rep in range(reps):
        for label, q, app, extra in configs:
            if q is None:
                s, h = host_sleeps()
                r = {"hist": h, "over": 0, "ct": []}
            else:
                r = linux(q, smp, app, extra)
                s = summary(r, smp)
            for us, n in r["hist"].items():
                samples[label][us] = samples[label].get(us, 0) + n
            if r["over"] and r["ct"]:
                # Beyond the histogram: counted at the run's maximum.
                mx = max(int(c["max_us"]) for c in r["ct"])
                samples[label][mx] = samples[label].get(mx, 0) + r["over"]
            line = "%s rep %d %-22s %s" % (title, rep, label,
                                           s if isinstance(s, str) else s[0])
            print(line, flush=True)
            os.makedirs(os.path.dirname(csv_path()) or ".", exist_ok=True)
            csv_row(line, csv_path())
            if not isinstance(s, str):
                res[label].append(s[1:])
    base = None
    for label, *_ in configs:
        v = res[label]
        if not v:
            continue
        a, m, d, c = med([x[0] for x in v]), med([x[1] for x in v]), \
            med([x[2] for x in v]), med([x[3] for x in v])
        # Each figure's range over the runs, and whether it overlaps the
        # first configuration's: a ratio is only a result where it does not.
        rng = [(min(x[k] for x in v), max(x[k] for x in v)) for k in (0, 1, 3)]
        if base is None:
            base = (a, m, c, rng)
        apart = ["apart" if r[1] < b[0] or r[0] > b[1] else "overlap"
                 for r, b in zip(rng, base[3])]
        print("%s MEDIAN %-22s avg %6.1f max %6d us drift %+6.1f ppm "
              "CPU %5.1f%%  (avg %.2fx, max %.2fx, CPU %.2fx of %s; n=%d)"
              % (title, label, a, m, d, c, a / base[0], m / base[1],
                 c / base[2] if base[2] else float("nan"),
                 configs[0][0], len(v)), flush=True)
        print("%s RANGE  %-22s avg %.1f..%.1f (%s) max %d..%d (%s) "
              "CPU %.1f..%.1f%% (%s)"
              % (title, label, rng[0][0], rng[0][1], apart[0], rng[1][0],
                 rng[1][1], apart[1], rng[2][0], rng[2][1], apart[2]),
              flush=True)
    if hist and any(samples.values()):
        os.makedirs(os.environ["OUT"], exist_ok=True)
        name = slug(title)
        series = []
        for label, *_ in configs:
            if not samples[label]:
                continue
            f = "%s/%s-%s.txt" % (os.environ["OUT"], name, slug(label))
            with open(f, "w") as o:
                for us in sorted(samples[label]):
                    o.write(("%d\n" % us) * samples[label][us])
            series.append("%s=%s" % (label, f))
        png = "%s/%s.png" % (os.environ["OUT"], name)
        subprocess.run(["bash", os.environ["CDF"], png,
                        "cyclictest under QEMU TCG: %s (%d runs of %d s each)"
                        % (title.strip(), reps, secs),
                        "latency (us)", *series], check=True)
        print("%s CDF %s" % (title, png), flush=True)

if what == "linux":
    print("cyclictest -S -m -p 90 -i 1000 -D %d under TCG, -cpu max, %d "
          "alternating runs each; stock = %s, lapict = %s"
          % (secs, reps, S, P))
    for smp in wholes("SMPS", "1 2", 1, 8):
        for name, app in modes:
            if name not in os.environ.get("MODES", "default oneshot periodic").split():
                continue
            compare("smp%d %-8s" % (smp, name),
                    [("stock", S, app, ()), ("lapict", P, app, ())], smp)
elif what == "advance":
    print("lapict's advance under TCG, default mode (lapic-deadline), "
          "-smp %s, %d s, %d alternating runs" % (os.environ.get("SMP", "1"),
                                                  secs, reps))
    cfgs = [("stock (lapic)", S, "", ()), ("lapict default", P, "", ())]
    for ns in wholes("ADVANCES", "0 50000 100000 200000", 0, 10**9):
        cfgs.append(("advance %d us" % (ns // 1000), P, "",
                     ("-global", "apic.timer-advance=%d" % ns)))
    compare("advance", cfgs, whole("SMP", "1", 1, 8))
elif what == "cpu":
    print("cyclictest -S -m -p 90 -D %d under TCG, -cpu max, default mode, "
          "%d alternating runs each; stock = %s, lapict = %s"
          % (secs, reps, S, P))
    for smp in wholes("SMPS", "1 2 4", 1, 8):
        for iv in wholes("RATES", "1000 200", 50, 1000000):
            app = "lapict.interval=%d" % iv
            cfgs = [("stock", S, app, ()), ("lapict", P, app, ())]
            for ns in wholes("ADVANCES", "100000", 0, 10**9):
                cfgs.append(("lapict advance %d us" % (ns // 1000), P,
                             app, ("-global", "apic.timer-advance=%d" % ns)))
            compare("smp%d %4.0f Hz" % (smp, 1e6 / iv), cfgs, smp)
elif what == "arms":
    # Three arms alternating, the guest on the same clockevent (one-shot
    # LAPIC: stock TCG has no TSC-deadline) in each: stock, the patched
    # binary with lapict off, with lapict on; then lapict's TSC-deadline
    # and adaptive-advance rows beside them.
    print("cyclictest -S -m -p 90 -D %d under TCG, -cpu max, %d alternating "
          "rounds; stock = %s, patched = %s" % (secs, reps, S, P))
    for smp in wholes("SMPS", "1 2 4", 1, 8):
        for iv in wholes("RATES", "1000 200", 50, 1000000):
            app = "lapict.interval=%d" % iv
            one = app + " lapic=notscdeadline"
            auto = ("-global", "apic.timer-advance=auto")
            cfgs = [("stock", S, one, ()), ("patched lapict off", P, one, OFF),
                    ("lapict on", P, one, ()),
                    ("lapict on tsc-deadline", P, app, ()),
                    ("lapict on advance auto", P, one, auto)]
            compare("smp%d %4.0f Hz" % (smp, 1e6 / iv), cfgs, smp)
elif what == "csv":
    out = csv_path() if os.environ.get("CSV") else "/dev/stdout"
    n = 0
    with open(os.environ["LOG"]) as f:
        for l in f:
            n += csv_row(l.rstrip("\n"), out)
    if n == 0:
        sys.exit("bench.sh csv: no run lines in %s" % os.environ["LOG"])
elif what == "mbtest":
    mb = os.environ["MBTEST"]
    env = tempfile.NamedTemporaryFile("w", delete=False)
    env.write("TEST_DEVICE=0\nLAPICT_MBTEST=ok\n")
    env.close()
    runs = [("TCG xAPIC", ["-accel", "tcg", "-cpu", "max,-x2apic"], 0),
            ("TCG x2APIC", ["-accel", "tcg", "-cpu", "max"], 1)]
    for label, q in (("stock", S), ("lapict", P)):
        for acc, args, x2 in runs:
            cmd = ["timeout", "-s", "KILL", "60", q, "-M", "pc", *args,
                   *(ON if q == P else ()),
                   "-m", "128", "-display", "none", "-monitor", "none",
                   "-serial", "stdio", "-no-reboot", "-device",
                   "isa-debug-exit,iobase=0xf4,iosize=4", "-kernel", mb,
                   "-initrd", env.name, "-append", "initrd=1 x2apic=%d" % x2]
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
if discarded:
    sys.exit("bench.sh: %d run(s) discarded (did not finish, or a garbled "
             "console line): the figures above leave them out" % discarded)
EOF
