#!/bin/sh
# Runs a libFuzzer target once over every file in the given folders (no
# fuzzing): the committed seeds and regression inputs must not crash.
# The folders are committed with the tests, so a missing folder or no
# input at all is a failure, not a pass.
set -eu
target=$1
shift
files=""
for d in "$@"; do
  if [ ! -d "$d" ]; then
    echo "FAIL: input folder $d is missing"
    exit 1
  fi
  for f in "$d"/*; do
    [ -f "$f" ] || continue
    case "$f" in *MANIFEST*|*.md) continue ;; esac
    files="$files $f"
  done
done
if [ -z "$files" ]; then
  echo "FAIL: no inputs in $*"
  exit 1
fi
# shellcheck disable=SC2086
exec "$target" -runs=0 -rss_limit_mb=2048 -timeout=30 $files
