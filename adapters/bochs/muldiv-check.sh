#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Checks the tick <-> ns conversions of patches-3.0/0003 (cpu/apic.cc's
# lapict_muldiv: a division by an invariant divisor, no divide instruction)
# against the 128-bit divide, exactly, with muldiv-check.cc's oracle. The
# code compiled is the patch's own added lines, taken from the patch.
#
# Usage: adapters/bochs/muldiv-check.sh [N]   (N random inputs, default
# 20000000; about a second)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
patch=$(ls "$here"/patches-3.0/0003-*.patch)
work=$(mktemp -d "${TMPDIR:-/tmp}/lapict-muldiv.XXXXXX")
trap 'rm -rf "$work"' EXIT
{
    sed -n '/^+struct bx_lapict_muldiv {/,/^+};/p' "$patch"
    sed -n '/^+\/\/ Once, when lapict is bound\./,/^+uint64_t bx_local_apic_c::lapict_now_ns/p' \
        "$patch" | sed '$d'
} | sed 's/^+//' >"$work/muldiv.inc"
grep -q '^static BX_CPP_INLINE Bit64u lapict_muldiv(' "$work/muldiv.inc" ||
    { echo "muldiv-check: lapict_muldiv not found in $patch" >&2; exit 1; }
${CXX:-g++} -std=c++11 -O2 -Wall -Wextra -Werror -I"$work" \
    -o "$work/muldiv-check" "$here/muldiv-check.cc"
"$work/muldiv-check" "$@"
