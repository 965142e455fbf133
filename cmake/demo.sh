#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Build lapict-replay and run the example of REPLAY.md: prints what the guest
# sees (two periodic interrupts, then a read of the current count).
set -euo pipefail
cd "$(dirname "$0")/.."

bash cmake/deps.sh demo
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DLAPICT_BUILD_TESTS=OFF
cmake --build build -j2
echo "--- build/bin/lapict-replay examples/replay/example.trace"
build/bin/lapict-replay examples/replay/example.trace
