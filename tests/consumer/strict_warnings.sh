#!/usr/bin/env bash
# Compiles strict_warnings.cc, which includes sluice.h, with a user's strict
# flags under each compiler given: any warning in a public header fails.
#
#   strict_warnings.sh LIB_INCLUDE_DIR LIB_BUILD_DIR FILE.cc COMPILER...
# (LIB_BUILD_DIR holds the generated sluice/base/config.h.)
set -euo pipefail
inc=$1 gen=$2 file=$3
shift 3
tmp=$(mktemp -d)
trap 'rm -rf -- "$tmp"' EXIT
status=0
for cxx in "$@"; do
  if "$cxx" -std=c++20 -Wall -Wextra -Wpedantic -Werror -O3 -I"$inc" -I"$gen" -c "$file" -o "$tmp/out.o" 2>"$tmp/err"; then
    echo "$cxx: no warning"
  else
    echo "FAIL $cxx:"
    cat "$tmp/err"
    status=1
  fi
done
exit $status
