#!/usr/bin/env bash
# Installs what nnapi-convert needs to build and test, from Debian's packages.
# Safe to run again: apt-get skips what is already installed.
#   tools/install-deps.sh               build and test (tools/test.sh, CI)
#   tools/install-deps.sh --build-only  build, man page and package only (Dockerfile)
set -euo pipefail
pkgs=(cmake g++ make libtorch-dev libcli11-dev libspdlog-dev nlohmann-json3-dev zlib1g-dev
      libfarmhash-dev libstb-dev libssl-dev help2man)
case "${1:-}" in
  --build-only) ;;
  "") pkgs+=(libgtest-dev python3-torch python3-torchvision ccache clang libclang-rt-14-dev strace pkgconf)
      pkgs+=(graphviz) ;;  # inspect --dot rendered by the tests (dot -Tsvg)
  *) echo "usage: $0 [--build-only]" >&2; exit 2 ;;
esac
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
