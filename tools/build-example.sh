#!/usr/bin/env bash
# From a fresh machine: install, build the converter and the host NNAPI runtime
# (build/runtime/libneuralnetworks.so, which --verify loads), make the example
# model and convert it with --verify: the converted module is run on the host
# runtime against eager PyTorch, and written only if it matches.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNNAPI_CONVERT_BUILD_TESTS=OFF
cmake --build build -j"$(nproc)" --target nnapi-convert neuralnetworks
/usr/bin/python3 examples/make_example.py examples/tiny_cnn.pt
build/nnapi-convert examples/tiny_cnn.pt --input 1x3x32x32 --nhwc --verify -o examples/tiny_cnn.nnapi.pt
echo "build-example: examples/tiny_cnn.nnapi.pt converted and verified on the host NNAPI runtime"
