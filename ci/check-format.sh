#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The format gate: every tracked C file as .clang-format (clang-format 14,
# Debian 12's) lays it out. `--fix` rewrites them instead.
set -euo pipefail
cd "$(dirname "$0")/.."
fmt=${CLANG_FORMAT:-clang-format}
command -v "$fmt" >/dev/null || { echo "check-format: $fmt not found (apt-get install clang-format)" >&2; exit 1; }
mapfile -t files < <(git ls-files '*.c' '*.h')
[ ${#files[@]} -gt 0 ] || { echo "check-format: no C files tracked here" >&2; exit 1; }
if [ "${1:-}" = --fix ]; then
    "$fmt" -i "${files[@]}"
    exit 0
fi
"$fmt" --dry-run -Werror "${files[@]}"
echo "check-format: ${#files[@]} files as .clang-format lays them out"
