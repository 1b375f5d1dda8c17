#!/bin/sh
# Compares the symbols libelk exports with the committed list
# core/libelk.symbols, so that an accidental export or a removed symbol
# fails the suite.  After an intended change to the public API, update
# the list with:
#   nm -D --defined-only build/core/libelk-1.so | awk '$2 ~ /^[TDBR]$/ {print $3}' | sort > core/libelk.symbols
set -eu
lib=$1
expected=$2
actual=$(mktemp)
trap 'rm -f "$actual"' EXIT
nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBR]$/ {print $3}' | sort > "$actual"
if ! diff -u "$expected" "$actual"; then
  echo "libelk's exported symbols changed (- committed list, + library)."
  echo "If the change is intended, update core/libelk.symbols (see this script)."
  exit 1
fi
echo "libelk exports the $(wc -l < "$actual") committed symbols"
