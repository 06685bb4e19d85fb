#!/usr/bin/env bash
# check-output.sh PROGRAM EXPECTED: runs an example and compares what it
# prints (standard output and error together) with the expected text that
# README.md quotes.
set -uo pipefail
program=${1:?usage: check-output.sh PROGRAM EXPECTED}
expected=${2:?usage: check-output.sh PROGRAM EXPECTED}
actual=$("$program" 2>&1)
status=$?
if [ $status -ne 0 ]; then
  # What it printed says why (a sanitizer's report among it).
  printf '%s\n' "$actual"
  echo "$program exited $status"
  exit 1
fi
diff -u --label expected --label actual "$expected" <(printf '%s\n' "$actual")
