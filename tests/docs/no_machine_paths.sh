#!/bin/sh
# No file of the repository names a path of a particular machine (issue 23):
# a home or user directory, a development machine's work tree, a scratch
# directory of this project under /tmp. Generic locations the docs tell users
# about (/usr/local, /usr/lib/nnapi-convert, $TMPDIR) are not such paths.
# Usage: no_machine_paths.sh SOURCE_DIR
set -eu
cd "$1"
pattern='/work/|/home/|/Users/|/tmp/nnapi|(^|[^A-Za-z0-9_.$/-])/root/|C:\\Users'
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  hits=$(git grep -n -I -E "$pattern" -- ':!*.lock' ':!tests/docs/no_machine_paths.sh' || true)
else
  hits=$(grep -rn -I -E "$pattern" --exclude-dir=.git --exclude-dir='build*' \
           --exclude='*.lock' --exclude=no_machine_paths.sh . || true)
fi
if [ -n "$hits" ]; then
  printf '%s\n' "$hits"
  echo "paths: the lines above name a path of a particular machine; use a relative path, \$TMPDIR or a placeholder"
  exit 1
fi
echo "paths: no machine paths"
