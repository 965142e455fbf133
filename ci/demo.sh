#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The demo: where /dev/kvm works, lapict-vmm runs the same guest with its APIC
# timer emulated by lapict in userspace and by KVM's in-kernel LAPIC, prints
# both latency distributions side by side and plots them; it always replays
# the example trace of docs/spec/replay.md on the simulated host first.
set -euo pipefail
cd "$(dirname "$0")/.."

bash ci/deps.sh demo
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DLAPICT_BUILD_TESTS=OFF
cmake --build build -j2

echo "--- build/bin/lapict-replay tools/replay/example.trace"
build/bin/lapict-replay tools/replay/example.trace

if [ ! -x build/bin/lapict-vmm ] || [ ! -r /dev/kvm ] || [ ! -w /dev/kvm ]; then
    echo "demo: /dev/kvm is not usable here: the replay above is the demo"
    exit 0
fi
echo "--- build/bin/lapict-vmm --compare --test=tscdeadline (2000 deadlines," \
     "HLT, adaptive advance): lapict vs KVM's in-kernel LAPIC"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
if ! build/bin/lapict-vmm --compare --quiet --test=tscdeadline --wait=hlt \
        --samples=2000 --advance=adaptive --csv=build/demo-compare.csv |
        tee "$out"; then
    echo "demo: lapict-vmm could not run a VM here (see above)"
    exit 0
fi
# The lines above are defined in lapict-vmm(1), OUTPUT; the two RESULT
# lines of the tscdeadline test say it in words.
awk '
/^RESULT test=tscdeadline lapic=/ {
    for (i = 1; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
    med[f["lapic"]] = f["median"]; p99[f["lapic"]] = f["p99"]
    early += f["early"]; n = f["samples"]
}
END {
    if (!("lib" in med) || !("kernel" in med) || med["kernel"] <= 0)
        exit
    d = 100 * (med["lib"] - med["kernel"]) / med["kernel"]
    printf "--- conclusion: over %d TSC deadlines each, the time from a " \
           "deadline to the guest'"'"'s interrupt handler had a median of " \
           "%d guest TSC cycles with lapict (userspace) and %d with " \
           "KVM'"'"'s in-kernel LAPIC: lapict'"'"'s median is %d %% %s. " \
           "99th percentile: %d against %d cycles. %s\n", n, med["lib"],
           med["kernel"],
           d < 0 ? -d : d, d < 0 ? "lower" : "higher", p99["lib"],
           p99["kernel"], early ? "Some interrupts came EARLY: see early= above." \
           : "No interrupt came before its deadline under either (early=0)."
}' "$out" | fold -s -w 78
echo "samples: $(pwd)/build/demo-compare-lib.csv," \
     "$(pwd)/build/demo-compare-kernel.csv (lapict-vmm(1), --csv)"
if bash tools/vmm/plot.sh build/demo-compare >/dev/null; then
    echo "plot: $(pwd)/build/demo-compare.png (CDF of the lateness, both LAPICs)"
fi
