#!/bin/sh
# Runs the reference experiment and checks that every design produced an
# "ok" row and the experiment's recorded answer: on this prefill, keeping
# preloads at their size is at least as fast as cost-aware's trade of
# preload space for execution space, under elk-dyn and elk-full alike.
# That is a finding about this workload, not a law (on four layers of
# llama2-13b-paper decode at batch 32, KV length 2048, cost-aware wins by
# 2-4%): if a change to elk flips it, look at why.
set -eu
elk_run=$1
experiment=$2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

"$elk_run" "$experiment" -o "$out" -q

csv=$out/results.csv
# Columns: latency_s is 17, label 32, status 33.
rows=$(tail -n +2 "$csv" | wc -l)
[ "$rows" -eq 4 ] || { echo "expected 4 rows, got $rows"; exit 1; }
bad=$(tail -n +2 "$csv" | awk -F, '$33 != "ok"' | wc -l)
[ "$bad" -eq 0 ] || { echo "failed rows:"; awk -F, '$33 != "ok"' "$csv"; exit 1; }
awk -F, 'NR > 1 { lat[$32] = $17 }
  END {
    split("dyn full", search, " ")
    for (k = 1; k <= 2; k++) {
      kp = lat["elk-" search[k] "-keep-preloads"]; ca = lat["elk-" search[k] "-cost-aware"]
      if (!(kp > 0) || !(ca > 0)) { print "missing elk-" search[k] " latency"; exit 1 }
      if (kp > ca) {
        print "elk-" search[k] ": keep-preloads is now slower than cost-aware: " kp " > " ca; exit 1 }
      printf "elk-%s: keep-preloads %.4g s, cost-aware %.4g s (%+.1f%%)\n",
        search[k], kp, ca, 100 * (kp - ca) / ca
    }
  }' "$csv"
