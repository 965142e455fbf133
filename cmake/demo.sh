#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The demo: where /dev/kvm works, lapict-vmm runs the same guest with its APIC
# timer emulated by lapict in userspace and by KVM's in-kernel LAPIC, prints
# both latency distributions side by side and plots them; it always replays
# the example trace of REPLAY.md on the simulated host first.
set -euo pipefail
cd "$(dirname "$0")/.."

bash cmake/deps.sh demo
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DLAPICT_BUILD_TESTS=OFF
cmake --build build -j2

echo "--- build/bin/lapict-replay examples/replay/example.trace"
build/bin/lapict-replay examples/replay/example.trace

if [ ! -x build/bin/lapict-vmm ] || [ ! -r /dev/kvm ] || [ ! -w /dev/kvm ]; then
    echo "demo: /dev/kvm is not usable here: the replay above is the demo"
    exit 0
fi
echo "--- build/bin/lapict-vmm --compare --test=tscdeadline (2000 deadlines," \
     "HLT, adaptive advance): lapict vs KVM's in-kernel LAPIC"
if ! build/bin/lapict-vmm --compare --quiet --test=tscdeadline --wait=hlt \
        --samples=2000 --advance=adaptive --csv=build/demo-compare.csv; then
    echo "demo: lapict-vmm could not run a VM here (see above)"
    exit 0
fi
if bash examples/vmm/plot.sh build/demo-compare >/dev/null; then
    echo "plot: $(pwd)/build/demo-compare.png"
fi
