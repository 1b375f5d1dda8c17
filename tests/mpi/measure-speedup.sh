#!/bin/sh
# Measures the speed-up of the 200-point sweep sweep-200.xml from one
# elk-run process (-j 1) to two MPI ranks (docs/clusters.md), alternating
# the two so that other load on the machine hits both alike.
#
#   tests/mpi/measure-speedup.sh BUILD_DIR [ROUNDS]
#
# Prints one line per run (wall and CPU seconds, load average) and checks
# that every run wrote the same results.csv and results.json.
set -eu
build=$(cd "$1" && pwd)
rounds=${2:-3}
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp -d /tmp/elk-speedup-XXXXXX)
export ELK_PLUGIN_PATH="$build/plugins:$build/frontends:$build/chips"
export ELK_PLUGIN_SYSTEM_PATH=
elk_run="$build/core/tools/elk-run"

run() {
  name=$1; shift
  load=$(cut -d' ' -f1 /proc/loadavg)
  /usr/bin/time -f "%e %U %S" -o "$out/$name.time" "$@" >/dev/null 2>"$out/$name.err"
  read -r wall user sys < "$out/$name.time"
  echo "$name wall=${wall}s cpu=$(echo "$user + $sys" | bc)s load-before=$load"
  if [ -d "$out/ref" ]; then
    for f in results.csv results.json; do
      cmp "$out/ref/$f" "$out/$name/$f" || { echo "$name: $f differs" >&2; exit 1; }
    done
  fi
}

for r in $(seq 1 "$rounds"); do
  run "j1-$r" "$elk_run" "$here/sweep-200.xml" -o "$out/j1-$r" -j 1 -q
  [ -d "$out/ref" ] || cp -r "$out/j1-$r" "$out/ref"
  run "np2-$r" mpirun --allow-run-as-root -np 2 \
    "$elk_run" "$here/sweep-200.xml" -o "$out/np2-$r" -q
done
rm -rf "$out"
