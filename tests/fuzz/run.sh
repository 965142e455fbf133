#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Run each fuzz target for a bounded time on a scratch copy of its
# checked-in seeds and of its grown corpus, after replaying its regression
# inputs. Fails on any crash, leak, timeout or broken invariant; prints
# executions and corpus sizes. The grown corpus lives outside the tree,
# under $FUZZ_CORPUS/<target> (default $LAPICT_CACHE/fuzz, LAPICT_CACHE
# default /var/cache/lapict): a clean run merges what it found into it
# (libFuzzer -merge=1), so each run goes on from the last; on a fresh
# machine it starts from the seeds. tests/fuzz/seeds.sh picks the seeds
# from it. Skips (exit 0, with a message) when clang or its libFuzzer
# runtime is missing.
#   tests/fuzz/run.sh BUILD_DIR         BUILD_DIR configured with
#                                       -DCMAKE_C_COMPILER=clang -DLAPICT_FUZZ=ON
#   FUZZ_SECONDS=N (default 60)         time per target
#   FUZZ_TARGETS="regs restore replay countdown"  which targets
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:?usage: tests/fuzz/run.sh BUILD_DIR}
seconds=${FUZZ_SECONDS:-60}
targets=${FUZZ_TARGETS:-regs restore replay countdown}
grown=${FUZZ_CORPUS:-${LAPICT_CACHE:-/var/cache/lapict}/fuzz}

if ! command -v clang >/dev/null 2>&1; then
    echo "fuzz: SKIPPED: clang not found (install clang and libclang-rt-<version>-dev)"
    exit 0
fi
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
echo 'int LLVMFuzzerTestOneInput(const char *d, long n) { (void)d; (void)n; return 0; }' \
    > "$probe/p.c"
if ! clang -fsanitize=fuzzer "$probe/p.c" -o "$probe/p" >/dev/null 2>&1; then
    echo "fuzz: SKIPPED: clang cannot link -fsanitize=fuzzer (install libclang-rt-$(clang -dumpversion | cut -d. -f1)-dev)"
    exit 0
fi

status=0
report=()
for t in $targets; do
    bin=$build/bin/fuzz_$t
    if [ ! -x "$bin" ]; then
        echo "fuzz: $bin not built" >&2
        exit 1
    fi
    work=$probe/$t
    mkdir -p "$work/corpus" "$work/artifacts"
    cp "$here/seeds/$t/"* "$work/corpus/"
    [ -d "$grown/$t" ] && cp "$grown/$t/"* "$work/corpus/" 2>/dev/null || true
    seeds=$(find "$work/corpus" -type f | wc -l)
    # Known crashes first: each must now pass.
    if compgen -G "$here/regressions/$t/*" >/dev/null; then
        if ! "$bin" -runs=0 "$here/regressions/$t/"* >"$work/regress.log" 2>&1; then
            grep -v '^    #' "$work/regress.log" | tail -20 >&2
            echo "fuzz: $t: a regression input fails" >&2
            status=1
            report+=("$t: regression FAILED")
            continue
        fi
    fi
    log=$work/fuzz.log
    echo "fuzz: $t: ${seconds}s from $seeds seeds"
    if ! "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
            -print_final_stats=1 -artifact_prefix="$work/artifacts/" \
            "$work/corpus" >"$log" 2>&1; then
        grep -v '^    #' "$log" | grep -v -E '^#[0-9]+ ' | tail -30 >&2
        for a in "$work/artifacts/"*; do
            [ -e "$a" ] || continue
            mkdir -p "$build/fuzz-artifacts/$t"
            cp "$a" "$build/fuzz-artifacts/$t/"
            echo "fuzz: $t: crash input kept as $build/fuzz-artifacts/$t/$(basename "$a")" >&2
        done
        status=1
        report+=("$t: CRASH")
        continue
    fi
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    size=$(find "$work/corpus" -type f | wc -l)
    kept=""
    if mkdir -p "$grown/$t" 2>/dev/null && [ -w "$grown/$t" ]; then
        "$bin" -merge=1 "$grown/$t" "$work/corpus" >"$work/merge.log" 2>&1 ||
            { tail -20 "$work/merge.log" >&2; echo "fuzz: $t: merge into $grown/$t failed" >&2; exit 1; }
        kept=", grown corpus $(find "$grown/$t" -type f | wc -l) in $grown/$t"
    else
        kept=", grown corpus not kept ($grown/$t is not writable)"
    fi
    report+=("$t: $execs executions, corpus $seeds -> $size$kept")
done
for line in "${report[@]}"; do
    echo "fuzz: $line"
done
exit $status
