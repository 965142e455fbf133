#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Install, with apt-get, whatever the build needs and the machine lacks.
#   ci/deps.sh        everything the test gates need (ci/test-all.sh)
#   ci/deps.sh demo   only what the demo needs (ci/demo.sh)
set -euo pipefail

# Tools are looked for as commands (they may come from elsewhere than apt);
# libraries as Debian packages. make and libc6-dev are what cmake and gcc
# merely recommend, but a build needs them. "command:package" where the
# Debian package is named otherwise.
tools=(cmake gcc make)
libs=(libc6-dev)
if [ "${1:-}" != demo ]; then
    tools+=(clang clang-format pkg-config gcovr valgrind)
    # Man pages (scdoc) and their checks, the API reference, the ABI gate
    # (libabigail), the Debian packages and lintian.
    tools+=(scdoc groff:groff-base man:man-db doxygen abidw:abigail-tools
            dpkg-buildpackage:dpkg-dev dh:debhelper lintian)
    # dpkg-buildpackage checks for it.
    libs+=(build-essential)
    # The sanitizer runtime of the installed clang (clang 14 on Debian 12).
    clang_major=14
    if command -v clang >/dev/null 2>&1; then
        clang_major=$(clang -dumpversion | cut -d. -f1)
    fi
    libs+=(libcmocka-dev check "libclang-rt-${clang_major}-dev")
fi

missing=()
for t in "${tools[@]}"; do
    command -v "${t%%:*}" >/dev/null 2>&1 || missing+=("${t#*:}")
done
# The latency plots (the demo's, and the test of tools/bench/cdf.sh);
# the command is gnuplot, the package without X.
if ! command -v gnuplot >/dev/null 2>&1; then
    missing+=(gnuplot-nox)
fi
for p in "${libs[@]}"; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
    echo "deps: all present"
    exit 0
fi
echo "deps: installing ${missing[*]}"
if ! command -v apt-get >/dev/null 2>&1; then
    echo "deps: apt-get not available; install these by hand: ${missing[*]}" >&2
    exit 1
fi
sudo=()
if [ "$(id -u)" -ne 0 ]; then
    sudo=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
