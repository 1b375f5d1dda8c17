#!/bin/sh
# Runs the reference experiment and checks that every design produced an
# "ok" row and the point of the idea: greedy-lookahead's operators run
# their fastest execute plans, so its execution time (the time the chip
# spends executing, alone or next to a preload) is no more than
# elk-full's, which trades execution speed for deeper preloads.  It also
# checks that looking ahead is never slower than not on this workload.
set -eu
elk_run=$1
experiment=$2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

"$elk_run" "$experiment" -o "$out" -q

csv=$out/results.csv
# Columns: latency_s is 17, execute_only_s 27, overlap_s 28, label 32,
# status 33.
rows=$(tail -n +2 "$csv" | wc -l)
[ "$rows" -eq 4 ] || { echo "expected 4 rows, got $rows"; exit 1; }
bad=$(tail -n +2 "$csv" | awk -F, '$33 != "ok"' | wc -l)
[ "$bad" -eq 0 ] || { echo "failed rows:"; awk -F, '$33 != "ok"' "$csv"; exit 1; }
awk -F, 'NR > 1 { lat[$32] = $17; exe[$32] = $27 + $28 }
  END {
    if (!(lat["greedy-lookahead"] > 0)) { print "no greedy-lookahead latency"; exit 1 }
    if (exe["greedy-lookahead"] > exe["elk-full"] * (1 + 1e-9)) {
      print "greedy-lookahead executes longer than elk-full: " exe["greedy-lookahead"] " > " exe["elk-full"]; exit 1 }
    if (lat["greedy-lookahead"] > lat["no-lookahead"]) {
      print "looking ahead made it slower: " lat["greedy-lookahead"] " > " lat["no-lookahead"]; exit 1 }
    printf "executing: greedy-lookahead %.4g s, elk-full %.4g s\n", exe["greedy-lookahead"], exe["elk-full"]
    printf "latency: greedy-lookahead %.4g s, no-lookahead %.4g s, basic %.4g s, elk-full %.4g s\n",
      lat["greedy-lookahead"], lat["no-lookahead"], lat["basic"], lat["elk-full"]
  }' "$csv"
