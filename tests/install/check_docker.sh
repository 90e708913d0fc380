#!/bin/sh
# The Docker image as the README shows it: `docker build` of the repository's
# Dockerfile, then `docker run` of the image converting the example model with
# --verify, as a user would (the model folder mounted at /models, run as the
# calling user). The converted module must be written and verified.
# Usage: check_docker.sh SOURCE_DIR MODEL WORK_DIR
# Exit 77 (skipped, with the reason) where no Docker daemon is reachable: no
# docker client, or `docker info` failing (no daemon, no permission).
set -eu
src=$1 model=$2 work=$3
if ! command -v docker >/dev/null 2>&1; then
  echo "docker: skipped: no docker client on PATH (the image is built where Docker is installed and its daemon runs)"
  exit 77
fi
if ! reason=$(docker info 2>&1 >/dev/null); then
  echo "docker: skipped: no Docker daemon reachable: $(printf '%s' "$reason" | tail -n 1)"
  exit 77
fi
tag=nnapi-convert-ctest:$$
rm -rf "$work"
mkdir -p "$work/models"
cp "$model" "$work/models/tiny_cnn.pt"
cleanup() { docker image rm -f "$tag" >/dev/null 2>&1 || true; }
trap cleanup EXIT
docker build -t "$tag" "$src" >"$work/build.log" 2>&1 ||
  { tail -n 40 "$work/build.log"; echo "docker: docker build failed"; exit 1; }
docker run --rm --user "$(id -u):$(id -g)" -v "$work/models:/models" "$tag" \
  tiny_cnn.pt --input 1x3x32x32 --nhwc --verify 2>&1 | tee "$work/run.log"
[ -s "$work/models/tiny_cnn.nnapi.pt" ] || { echo "docker: no tiny_cnn.nnapi.pt written"; exit 1; }
grep -q "output 0: .* ok" "$work/run.log" || { echo "docker: --verify did not pass"; exit 1; }
echo "docker: image ok"
