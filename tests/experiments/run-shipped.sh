#!/bin/sh
# Runs every shipped experiment (experiments/*.xml) in its quick form
# (elk-run --quick: first value of each sweep axis, at most 2 layers), so
# that none of them rots: each must validate, run, and give only "ok" rows.
#
#   run-shipped.sh ELK_RUN EXPERIMENTS_DIR
set -eu
elk_run=$1
dir=$2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
n=0
for xml in "$dir"/*.xml; do
  name=$(basename "$xml" .xml)
  echo "== $name"
  "$elk_run" "$xml" --quick -q -o "$out/$name"
  failed=$(tail -n +2 "$out/$name/results.csv" | awk -F, '$33 != "ok"' | wc -l)
  if [ "$failed" -ne 0 ]; then
    echo "$name: $failed failed row(s):"
    awk -F, 'NR == 1 || $33 != "ok"' "$out/$name/results.csv"
    exit 1
  fi
  rows=$(tail -n +2 "$out/$name/results.csv" | wc -l)
  echo "$name: $rows row(s) ok"
  n=$((n + 1))
done
[ "$n" -gt 0 ] || { echo "no experiments found in $dir"; exit 1; }
echo "$n shipped experiments ran"
