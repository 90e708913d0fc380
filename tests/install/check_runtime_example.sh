#!/bin/sh
# Builds the C example of docs/runtime.md's "The NNAPI C API on Linux" (the
# ```c block after the runtime-example marker) against an installed prefix
# with pkg-config alone, as a user's project would, and runs it: no build tree,
# no LD_LIBRARY_PATH (the rpath from the .pc file finds the runtime).
# Usage: check_runtime_example.sh README PREFIX LIBDIR WORKDIR [CC]
set -eu
readme=$1 prefix=$2 libdir=$3 work=$4 cc=${5:-cc}
mkdir -p "$work"
awk '/<!-- runtime-example/ { armed = 1; next }
     armed && /^```c$/ { inside = 1; next }
     inside && /^```$/ { exit }
     inside { print }' "$readme" >"$work/add.c"
if [ ! -s "$work/add.c" ]; then
  echo "runtime example: no \`\`\`c block after the runtime-example marker in $readme"; exit 1
fi
PKG_CONFIG_PATH="$prefix/$libdir/pkgconfig"
export PKG_CONFIG_PATH
flags=$(pkg-config --cflags --libs nnapi-convert-runtime)
echo "runtime example: pkg-config gives $flags"
case "$flags" in
  *"$prefix"*) ;;
  *) echo "runtime example: the flags do not point into $prefix"; exit 1 ;;
esac
# -Werror: the example and the header compile cleanly as C11 and as C++.
# shellcheck disable=SC2086
"$cc" -std=c11 -Wall -Wextra -Werror -o "$work/add" "$work/add.c" $flags
# shellcheck disable=SC2086
c++ -x c++ -std=c++17 -Wall -Wextra -Werror -fsyntax-only "$work/add.c" $(pkg-config --cflags nnapi-convert-runtime)
env -u LD_LIBRARY_PATH "$work/add"
