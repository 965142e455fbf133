#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The CI gates live in ci/. This stays so that the documented command,
# `bash cmake/test-all.sh`, keeps working.
exec bash "$(dirname "$0")/../ci/test-all.sh" "$@"
