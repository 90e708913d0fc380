#!/bin/sh
# cmake --install into a fresh prefix, then check the layout users rely on.
# Usage: check_install.sh CMAKE SOURCE_DIR BUILD_DIR PREFIX LIBDIR RUNTIME_DIR HAVE_MAN(ON|OFF) PYDIR
set -eu
cmake=$1 source=$2 build=$3 prefix=$4 libdir=$5 runtime_dir=$6 have_man=$7 pydir=$8
rm -rf "$prefix"
"$cmake" --install "$build" --prefix "$prefix" >/dev/null
status=0
need() {
  if [ -f "$prefix/$1" ]; then echo "install: has $1"; else echo "install: MISSING $1"; status=1; fi
}
need bin/nnapi-convert
need "$runtime_dir/libneuralnetworks.so"
for h in "$source"/include/nnapi_convert/*.h; do need "include/nnapi_convert/${h##*/}"; done
need "$libdir/libnnapi_convert.a"
need "$libdir/libnnapi_convert_types.a"
need "$libdir/libnnapi_convert_validate.a"
need "$libdir/cmake/nnapi_convert/nnapi_convertConfig.cmake"
need "$libdir/cmake/nnapi_convert/nnapi_convertConfigVersion.cmake"
need include/nnapi_runtime/android/NeuralNetworks.h
for p in "$source"/python/nnapi_convert/*.py; do need "$pydir/nnapi_convert/${p##*/}"; done
need "$pydir/nnapi_convert/_installed.py"
need "$libdir/pkgconfig/nnapi-convert-runtime.pc"
if [ "$have_man" = ON ]; then
  need share/man/man1/nnapi-convert.1.gz
  # help2man's page: the name line and the options from --help.
  gzip -dc "$prefix/share/man/man1/nnapi-convert.1.gz" |
    grep -q '^nnapi-convert \\- convert TorchScript models' || { echo "install: man page lacks NAME"; status=1; }
  gzip -dc "$prefix/share/man/man1/nnapi-convert.1.gz" |
    grep -q -- '-verify' || { echo "install: man page lacks --verify"; status=1; }
fi
# The runtime is off the loader's path and not where the build tree keeps it.
for wrong in bin/runtime "$libdir/libneuralnetworks.so"; do
  if [ -e "$prefix/$wrong" ]; then echo "install: unexpected $wrong"; status=1; fi
done
# The CMake package must not point back into the source or build tree.
if grep -rlF -e "$source" -e "$build" "$prefix/$libdir/cmake"; then
  echo "install: the CMake package above names the source or build directory"; status=1
fi
if [ "$status" -eq 0 ]; then echo "install: layout ok"; fi
exit "$status"
