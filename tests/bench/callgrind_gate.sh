#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Regression gate on the hot paths' instruction counts (callgrind counts
# instructions, not time, so the figure is the same on a busy machine).
#
#   tests/bench/callgrind_gate.sh BENCH CEILINGS          check
#   tests/bench/callgrind_gate.sh BENCH CEILINGS --update rewrite CEILINGS
#
# Runs tools/bench/callgrind.sh on BENCH (lapict-bench) and compares each op's
# instructions per call with its ceiling in CEILINGS ("op instr" lines).
# Fails when an op is more than 10 % above its ceiling, or when the bench
# and the file do not name the same ops. A count well below its ceiling is
# reported, so the ceiling can be lowered with --update. The counts belong
# to one compiler and build type (the file's header says which; ctest runs
# the gate only in that configuration). Exit 77 (ctest: skipped) when
# valgrind is missing.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bench=${1:?usage: callgrind_gate.sh BENCH CEILINGS [--update]}
ceil=${2:?usage: callgrind_gate.sh BENCH CEILINGS [--update]}
mode=${3:-check}
tolerance=10 # per cent

if ! command -v valgrind >/dev/null || ! command -v callgrind_annotate >/dev/null; then
    echo "callgrind_gate: SKIP: valgrind/callgrind_annotate not installed"
    exit 77
fi

results=$(bash "$here/../../tools/bench/callgrind.sh" "$bench" | sed -n 's/^RESULT test=callgrind op=\([^ ]*\) instr=\([0-9-]*\) .*/\1 \2/p')
[ -n "$results" ] || { echo "callgrind_gate: no RESULT lines from callgrind.sh" >&2; exit 1; }

if [ "$mode" = --update ]; then
    {
        echo "# SPDX-License-Identifier: MIT"
        echo "# Instruction ceilings per hot-path op (lapict-bench --callgrind, gcc"
        echo "# RelWithDebInfo). The test command fails when an op is more than ${tolerance} %"
        echo "# above its line. Regenerate after a deliberate change with:"
        echo "#   bash tests/bench/callgrind_gate.sh build/bin/lapict-bench \\"
        echo "#       tests/bench/callgrind-ceilings.txt --update"
        echo "# compiler: $(${CC:-gcc} --version | head -1)"
        echo "$results"
    } >"$ceil"
    echo "callgrind_gate: wrote $ceil"
    exit 0
fi

[ -f "$ceil" ] || { echo "callgrind_gate: $ceil missing (run with --update)" >&2; exit 1; }
fail=0
printf '%-20s %8s %8s %8s\n' op instr ceiling limit
while read -r op instr; do
    c=$(awk -v op="$op" '$1 == op { print $2 }' "$ceil")
    if [ -z "$c" ]; then
        echo "callgrind_gate: FAIL: op '$op' has no ceiling in $ceil" >&2
        fail=1
        continue
    fi
    if [ "$instr" = - ]; then
        echo "callgrind_gate: FAIL: no count for '$op'" >&2
        fail=1
        continue
    fi
    limit=$((c + (c * tolerance + 99) / 100))
    verdict=ok
    if [ "$instr" -gt "$limit" ]; then
        verdict=FAIL
        fail=1
    elif [ $((instr * 100)) -lt $((c * 90)) ]; then
        verdict="ok (well below: lower the ceiling with --update)"
    fi
    printf '%-20s %8s %8s %8s %s\n' "$op" "$instr" "$c" "$limit" "$verdict"
done <<<"$results"
# Every ceiling names an op the bench still measures.
while read -r op _; do
    case "$op" in ''|'#'*) continue ;; esac
    grep -q "^$op " <<<"$results" ||
        { echo "callgrind_gate: FAIL: ceiling for '$op', which the bench no longer measures" >&2; fail=1; }
done <"$ceil"
[ "$fail" = 0 ] || { echo "callgrind_gate: FAILED (more than ${tolerance} % above a ceiling, or ops differ)" >&2; exit 1; }
echo "callgrind_gate: all ops within ${tolerance} % of their ceilings"
