#!/usr/bin/env bash
# From a fresh machine: install, build, and convert the example model.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNNAPI_CONVERT_BUILD_TESTS=OFF
cmake --build build -j"$(nproc)" --target nnapi-convert
/usr/bin/python3 examples/make_example.py examples/tiny_cnn.pt
build/nnapi-convert examples/tiny_cnn.pt --input 1x3x32x32 --nhwc -o examples/tiny_cnn.nnapi.pt
