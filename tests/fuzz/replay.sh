#!/bin/sh
# Runs a libFuzzer target once over every file in the given folders (no
# fuzzing): the committed seeds and regression inputs must not crash.
set -eu
target=$1
shift
files=""
for d in "$@"; do
  [ -d "$d" ] || continue
  for f in "$d"/*; do
    [ -f "$f" ] || continue
    case "$f" in *MANIFEST*|*.md) continue ;; esac
    files="$files $f"
  done
done
if [ -z "$files" ]; then
  echo "no inputs"
  exit 0
fi
# shellcheck disable=SC2086
exec "$target" -runs=0 -rss_limit_mb=2048 -timeout=30 $files
