#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Every CI gate, each in its own directory under build-ci/ (build/ is left
# alone): the C files' format, gcc and clang with -Werror, ASan+UBSan, coverage with a floor,
# valgrind memcheck of the unit tests, the libFuzzer targets,
# ThreadSanitizer over the KVM adapter, the ABI of the shared library, the
# API reference without a Doxygen warning, lapict-hv under Bochs, lapict
# inside Bochs, the Debian packages, and lapict inside QEMU.
set -euo pipefail
cd "$(dirname "$0")/.."

bash ci/deps.sh

jobs=2
line_floor=95
branch_floor=85
summary=()
# Time limits, seconds: a test that hangs is killed and named (ctest:
# "***Timeout", memcheck: a message), well inside CI's 90 minutes. Each
# is several times the longest honest run on a loaded 2-core host.
test_timeout=${LAPICT_TEST_TIMEOUT:-900}          # each ctest test
memcheck_timeout=${LAPICT_MEMCHECK_TIMEOUT:-900}  # each valgrind run
qemu_timeout=${LAPICT_QEMU_TIMEOUT:-4500}         # check_qemu, all its cases

banner() {
    echo
    echo "=================================================================="
    echo "== $*"
    echo "=================================================================="
}

# Every C file as .clang-format lays it out (a second, before anything builds).
start=$SECONDS
banner "gate format: clang-format --dry-run -Werror"
bash ci/check-format.sh
summary+=("format: $((SECONDS - start))s")

# gate NAME CC BUILD_TYPE [cmake -D options...]: configure, build, ctest.
gate() {
    local name=$1 cc=$2 type=$3
    shift 3
    local dir=build-ci/$name start=$SECONDS
    banner "gate $name: $cc $type $*"
    cmake -S . -B "$dir" -DCMAKE_C_COMPILER="$cc" -DCMAKE_BUILD_TYPE="$type" \
        -DLAPICT_BUILD_TESTS=ON -DLAPICT_WERROR=ON "$@"
    cmake --build "$dir" -j"$jobs"
    # Counters from an earlier run would inflate the coverage.
    find "$dir" -name '*.gcda' -delete
    (cd "$dir" && ctest --output-on-failure -j"$jobs" \
        --timeout "$((test_timeout * ${CK_TIMEOUT_MULTIPLIER:-1}))") |
        tee "$dir/ctest.log"
    gate_seconds=$((SECONDS - start))
    echo "gate $name: passed in ${gate_seconds}s"
}

gate gcc gcc RelWithDebInfo
summary+=("gcc: ${gate_seconds}s")

gate clang clang Debug
summary+=("clang: ${gate_seconds}s")

export ASAN_OPTIONS=halt_on_error=1:detect_leaks=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
# Instrumented code is slower: give Check's per-test timeouts room.
CK_TIMEOUT_MULTIPLIER=4 gate sanitize clang Debug -DLAPICT_SANITIZE=ON
sanitize_seconds=$gate_seconds

# The suite on a machine without KVM: the sanitize build's whole ctest run
# again with /dev/kvm hidden (/dev/null bound over it in a private mount
# namespace: it opens, and KVM_CREATE_VM fails), so a KVM test's skip path
# is checked leak-free under ASan wherever CI runs. Where /dev/kvm is
# absent, the run above already was that run. Either way every test that
# needs KVM must have reported "Skipped", and none failed.
start=$SECONDS
banner "gate no-kvm: the sanitize build's ctest with /dev/kvm hidden"
if [ -e /dev/kvm ]; then
    (cd build-ci/sanitize &&
     unshare --mount --propagation private sh -c \
         'mount --bind /dev/null /dev/kvm && exec "$@"' sh \
         ctest --output-on-failure -j"$jobs" \
         --timeout "$((test_timeout * 4))") | tee build-ci/sanitize/ctest-nokvm.log
    nokvm_log=build-ci/sanitize/ctest-nokvm.log
else
    echo "no /dev/kvm on this machine: the sanitize gate's run was the no-KVM run"
    nokvm_log=build-ci/sanitize/ctest.log
fi
kvm_tests=(example_kvm_loop consumer_kvm_loop test_kvm_hooks check_vmm
           check_migrate check_multiboot_kvm check_baremetal check_changemode)
for t in "${kvm_tests[@]}"; do
    if grep -Eq "Test +#[0-9]+: $t \.+\*+Skipped" "$nokvm_log"; then
        echo "no-kvm: $t skipped"
    elif grep -Eq "Test +#[0-9]+: $t " "$nokvm_log"; then
        echo "test-all: FAILED: $t did not report Skipped without /dev/kvm" >&2
        exit 1
    else
        echo "no-kvm: $t not built in this configuration"
    fi
done
unset ASAN_OPTIONS UBSAN_OPTIONS
summary+=("sanitize: ${sanitize_seconds}s" "no-kvm: $((SECONDS - start))s")

gate coverage gcc Debug -DLAPICT_COVERAGE=ON
start=$SECONDS
banner "coverage of lib/ (floor: lines ${line_floor}%, branches ${branch_floor}%)"
gcovr_args=(--root . --object-directory build-ci/coverage --filter 'lib/'
            --exclude-unreachable-branches --exclude-throw-branches)
echo "--- branches"
gcovr "${gcovr_args[@]}" --branches --txt
echo "--- lines"
if ! gcovr "${gcovr_args[@]}" --txt --print-summary \
        --fail-under-line "$line_floor" --fail-under-branch "$branch_floor"; then
    echo "test-all: FAILED: coverage of lib/ is under the floor" \
         "(lines ${line_floor}%, branches ${branch_floor}%)" >&2
    exit 1
fi
summary+=("coverage: $((gate_seconds + SECONDS - start))s")

# valgrind memcheck over the cmocka unit tests of the gcc gate's build,
# each run killed after memcheck_timeout seconds (timeout: 124, or 137
# once it had to send SIGKILL).
start=$SECONDS
banner "memcheck: valgrind over the unit tests of build-ci/gcc" \
    "(${memcheck_timeout}s each)"
for t in build-ci/gcc/bin/test_*; do
    echo "--- $t"
    rc=0
    timeout -k 30 "$memcheck_timeout" valgrind --quiet --error-exitcode=1 \
        --leak-check=full --errors-for-leak-kinds=definite,indirect \
        "$t" >/dev/null || rc=$?
    case $rc in
    0) ;;
    77) echo "    skipped (exit 77: /dev/kvm unusable here)" ;;
    124 | 137)
       echo "test-all: FAILED: valgrind memcheck of $t did not end within" \
            "${memcheck_timeout}s (hung?), killed" >&2
       exit 1 ;;
    *) echo "test-all: FAILED: valgrind memcheck of $t (exit $rc)" >&2
       exit 1 ;;
    esac
done
summary+=("memcheck: $((SECONDS - start))s")

# libFuzzer targets (clang), each run for FUZZ_SECONDS (default 60) on a
# copy of its corpus after its regression inputs; tests/fuzz/run.sh skips
# with a message when the fuzzer runtime is missing.
start=$SECONDS
banner "gate fuzz: clang -DLAPICT_FUZZ=ON, ${FUZZ_SECONDS:-60}s per target"
cmake -S . -B build-ci/fuzz -DCMAKE_C_COMPILER=clang \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLAPICT_BUILD_TESTS=OFF \
    -DLAPICT_WERROR=ON -DLAPICT_FUZZ=ON
cmake --build build-ci/fuzz -j"$jobs" --target fuzz_regs fuzz_restore fuzz_replay \
    fuzz_countdown
FUZZ_SECONDS=${FUZZ_SECONDS:-60} bash tests/fuzz/run.sh build-ci/fuzz
summary+=("fuzz: $((SECONDS - start))s")

# ThreadSanitizer over the KVM adapter's timer / vCPU hand-off: a fake-vCPU
# stress everywhere, short lapict-vmm runs where /dev/kvm works.
start=$SECONDS
banner "gate tsan: adapters/kvm kick / vCPU hand-off"
LAPICT_TSAN_DIR=build-ci/tsan bash tests/tsan/run.sh
summary+=("tsan: $((SECONDS - start))s")

# The shared library's ABI against ci/abi/liblapict.abi (libabigail).
start=$SECONDS
banner "gate abi: abidiff against ci/abi/liblapict.abi"
LAPICT_ABI_DIR=build-ci/abi bash ci/abi.sh
summary+=("abi: $((SECONDS - start))s")

# The API reference: any Doxygen warning (an undocumented public function
# or parameter) fails.
start=$SECONDS
banner "gate docs: Doxygen, warnings as errors"
cmake -S . -B build-ci/docs -DLAPICT_BUILD_TESTS=OFF \
    -DLAPICT_BUILD_TOOLS=OFF -DLAPICT_BUILD_EXAMPLES=OFF -DLAPICT_DOCS_WERROR=ON >/dev/null
cmake --build build-ci/docs --target docs
summary+=("docs: $((SECONDS - start))s")

# lapict-hv, the VMX hypervisor of tools/hv, under Debian's Bochs (which
# emulates VMX with the preemption timer, tick-exact): lapict-mbtest and
# the timer scenarios on both timer paths, 1 to 4 vCPUs, each run twice and
# byte-identical. Its kernel and guests are those of the gcc gate's build.
start=$SECONDS
banner "gate hv: lapict-hv under Bochs, both timer paths, runs repeated"
bash ci/test-hv.sh build-ci/gcc
summary+=("hv: $((SECONDS - start))s")

# lapict inside Bochs (adapters/bochs): Debian trixie's Bochs 3.0 with the
# patches-3.0 series and without it, cached outside the clone keyed by
# their inputs; lapict-mbtest under the patched one twice, byte-identical
# and every check passed, and as lapict-hv's guest on both host timers.
start=$SECONDS
banner "gate bochs: patched Bochs 3.0 with lapict, mbtest and lapict-hv"
bash ci/test-bochs.sh build-ci/bochs
summary+=("bochs: $((SECONDS - start))s")

# Debian packages: dpkg-buildpackage, lintian, dpkg -x, consumer builds.
start=$SECONDS
banner "gate packages: debian/ built, linted, unpacked and consumed"
LAPICT_PKG_DIR=build-ci/packages bash ci/test-packages.sh
summary+=("packages: $((SECONDS - start))s")

# lapict inside QEMU (adapters/qemu): Debian trixie's QEMU 10.0 with the
# patches-10.0 series, built on bookworm and cached outside the clone keyed
# by its inputs (a full build and a -Dlapict=disabled one of the same tree
# from scratch, seconds when cached, a relink when only lib/ changed), with
# lapict's licence beside it; Debian's own QEMU 10.0, unpacked for the
# interop cases; the Linux guest from Debian's packages; then check_qemu:
# with -global apic.lapict=on, Linux under TCG in its three clockevent
# modes, lapict-mbtest in xAPIC and x2APIC, migration (the timer armed, a
# corrupt lapict state, a 20-move chain), migration to and from stock 10.0,
# "info lapic", tsc-frequency=, icount boots and record/replay; with the
# default (lapict off), the guest ABI and CPU options of pc-q35-10.0
# against stock 10.0, migration to and from stock and from the disabled
# build, guest memory; the licence.
start=$SECONDS
banner "gate qemu: patched QEMU 10.0 with lapict, Linux and mbtest guests"
bash adapters/qemu/build.sh "$PWD/build-ci/qemu-bin"
bash adapters/qemu/stock.sh "$PWD/build-ci/qemu-bin/stock"
bash adapters/qemu/guest/mkimage.sh "$PWD/build-ci/qemu-bin/guest"
cmake -S . -B build-ci/qemu -DCMAKE_C_COMPILER=gcc \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLAPICT_BUILD_TESTS=ON \
    -DLAPICT_WERROR=ON -DLAPICT_QEMU_DIR="$PWD/build-ci/qemu-bin"
cmake --build build-ci/qemu -j"$jobs" --target check_qemu
(cd build-ci/qemu && ctest --output-on-failure -R '^check_qemu' \
    --timeout "$qemu_timeout")
summary+=("qemu: $((SECONDS - start))s")

banner "test-all: all gates passed (${summary[*]})"
