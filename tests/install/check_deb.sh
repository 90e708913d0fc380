#!/bin/sh
# cpack -G DEB, then check the packages with dpkg-deb: files, Depends, fields.
# Usage: check_deb.sh CPACK BUILD_DIR OUT_DIR RUNTIME_DIR HAVE_MAN(ON|OFF) MODEL PYDIR
# MODEL is the example model: the binary unpacked from the package must convert
# and --verify it with the runtime unpacked beside it.
# Exit 77 (skipped) without cpack or dpkg-deb.
set -eu
cpack=$1 build=$2 out=$3 runtime_dir=$4 have_man=$5 model=$6 pydir=$7
if [ -z "$cpack" ] || ! [ -x "$cpack" ]; then echo "deb: no cpack, skipped"; exit 77; fi
if ! command -v dpkg-deb >/dev/null; then echo "deb: no dpkg-deb, skipped"; exit 77; fi
rm -rf "$out"
mkdir -p "$out"
"$cpack" -G DEB --config "$build/CPackConfig.cmake" -B "$out" >"$out/cpack.log" 2>&1 ||
  { cat "$out/cpack.log"; exit 1; }
status=0
fail() { echo "deb: $*"; status=1; }
one() {  # the single file matching a pattern
  # shellcheck disable=SC2086  # the pattern is meant to glob
  set -- $1
  [ "$#" -eq 1 ] && [ -f "$1" ] && echo "$1"
}
cli=$(one "$out/nnapi-convert_*.deb") || { ls "$out"; echo "deb: no nnapi-convert_*.deb"; exit 1; }
dev=$(one "$out/libnnapi-convert-dev_*.deb") || { ls "$out"; echo "deb: no libnnapi-convert-dev_*.deb"; exit 1; }
echo "deb: built ${cli##*/} and ${dev##*/}"

contains() {  # contains DEB PATH: the package holds ./usr/PATH
  dpkg-deb -c "$1" | awk '{print $NF}' | grep -qx "\./usr/$2" || fail "${1##*/} lacks /usr/$2"
}
lacks() {
  if dpkg-deb -c "$1" | awk '{print $NF}' | grep -q "$2"; then fail "${1##*/} has $2"; fi
}
contains "$cli" bin/nnapi-convert
contains "$cli" "$runtime_dir/libneuralnetworks.so"
if [ "$have_man" = ON ]; then contains "$cli" share/man/man1/nnapi-convert.1.gz; fi
contains "$cli" "$pydir/nnapi_convert/__init__.py"
contains "$cli" "$pydir/nnapi_convert/_installed.py"
lacks "$cli" include/
lacks "$cli" '\.a$'
contains "$dev" include/nnapi_convert/input_spec.h
lacks "$dev" bin/nnapi-convert

field() { dpkg-deb -f "$1" "$2"; }
[ "$(field "$cli" Package)" = nnapi-convert ] || fail "Package is '$(field "$cli" Package)'"
[ "$(field "$dev" Package)" = libnnapi-convert-dev ] || fail "dev Package is '$(field "$dev" Package)'"
for f in Version Maintainer Description Architecture; do
  [ -n "$(field "$cli" "$f")" ] || fail "no $f field"
done
depends=$(field "$cli" Depends)
echo "deb: Depends: $depends"
names=$(echo "$depends" | tr ',' '\n' | sed 's/(.*//; s/[[:space:]]//g')
for p in libtorch1.13 libspdlog1.10-fmt9 libfmt9 zlib1g libstdc++6 libgcc-s1 libc6 libfarmhash0 libstb0; do
  echo "$names" | grep -qxF "$p" || fail "Depends lacks $p"
done
# Every Depends is a package Debian knows (when apt-cache can tell).
if command -v apt-cache >/dev/null; then
  for p in $names; do
    apt-cache show "$p" >/dev/null 2>&1 || fail "Depends names $p, which apt-cache does not know"
  done
fi
field "$dev" Depends | grep -q libtorch-dev || fail "dev Depends lacks libtorch-dev"

dpkg-deb -x "$cli" "$out/root"
env -u NNAPI_CONVERT_RUNTIME -u LD_LIBRARY_PATH "$out/root/usr/bin/nnapi-convert" "$model" \
  --input 1x3x32x32 --nhwc --verify -q -o "$out/example.nnapi.pt" ||
  fail "the unpacked nnapi-convert could not convert and --verify $model"
# The unpacked Python package finds the unpacked binary beside it and converts with it.
found=$(env -u NNAPI_CONVERT PATH=/usr/bin:/bin PYTHONDONTWRITEBYTECODE=1 \
  PYTHONPATH="$out/root/usr/$pydir" /usr/bin/python3 -c \
  "import nnapi_convert as n; n.convert('$model', ['1x3x32x32'], output='$out/py.nnapi.pt'); print(n.find_binary())") ||
  fail "the unpacked Python package could not convert $model"
[ "$found" = "$out/root/usr/bin/nnapi-convert" ] || fail "the Python package runs '$found'"
if [ "$status" -eq 0 ]; then echo "deb: packages ok"; fi
exit "$status"
