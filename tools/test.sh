#!/usr/bin/env bash
# The whole test suite from a fresh machine: install, build, run ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
cmake -S . -B "${BUILD_DIR:-build}" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNNAPI_CONVERT_BUILD_TESTS=ON
cmake --build "${BUILD_DIR:-build}" -j"$(nproc)"
cd "${BUILD_DIR:-build}"
ctest --output-on-failure -j"$(nproc)" "$@"
