#!/usr/bin/env bash
# Sets up (packages and build) and runs the whole test suite through ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh "$@"
ctest --test-dir build --output-on-failure -j "${DOPPIO_JOBS:-$(nproc)}"
