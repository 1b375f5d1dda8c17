#!/bin/sh
# elk-check-plugin's tests: a shipped scheduler (on every chip) and a
# shipped allocator pass; a nondeterministic fixture scheduler fails the
# determinism check with a clear message; --max-gap turns a gap into a
# failure; --graph takes an experiment's frontend; every user-facing error
# gives its exit code (1 bad command line, 2 bad input) and a message
# naming the thing and the expectation.
#
#   test-check-plugin.sh ELK_CHECK_PLUGIN FIXTURE_PLUGIN_DIR SOURCE_ROOT
set -u
tool=$1
fixtures=$2
src=$3

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0

fail () {
  echo "not ok: $*"
  failures=$((failures + 1))
}

# expect CODE PATTERN [ARGS...]: runs the tool, checks its exit code and
# that its output (stdout and stderr) matches the grep pattern.
expect () {
  code=$1; pattern=$2; shift 2
  "$tool" "$@" > "$work/out" 2>&1
  got=$?
  if [ "$got" -ne "$code" ]; then
    fail "'elk-check-plugin $*' exited with $got, expected $code"
    sed 's/^/    /' "$work/out"
    return
  fi
  if ! grep -q -e "$pattern" "$work/out"; then
    fail "'elk-check-plugin $*': no line matches '$pattern'"
    sed 's/^/    /' "$work/out"
    return
  fi
  echo "ok: elk-check-plugin $* (exit $got)"
}

# A shipped scheduler on every built-in graph and every chip: all pass,
# and the report ends with the gap table.
expect 0 'PASS  determinism  llama-decode on noc-sim' scheduler basic
for chip in analytic noc-sim ipu-pod; do
  grep -q "PASS  valid        llama-prefill on $chip" "$work/out" \
    || fail "scheduler basic: no valid check of llama-prefill on $chip"
done
grep -q '^  graph  *chip  *estimate_s  *latency_s  *gap' "$work/out" \
  || fail "scheduler basic: no gap table"
if grep -q '^FAIL' "$work/out"; then fail "scheduler basic: a check failed"; fi

# A scheduler with a 'threads' property is also compared across thread
# counts.
expect 0 'PASS  determinism  llama-decode on analytic: the same program with threads=0 (one per processor) and threads=1' \
  --chip analytic scheduler elk -p order-search=dyn

# An allocator runs under the elk scheduler by default.
expect 0 "allocator 'cost-aware' (.*), scheduler 'elk'" \
  --chip analytic allocator cost-aware
expect 0 "scheduler 'basic'" \
  --chip analytic --scheduler basic allocator reservation

# The nondeterministic fixture fails the determinism check, naming the
# first difference, and the tool exits with 3.
expect 3 'FAIL  determinism  llama-decode on analytic: scheduling the same input twice gave different results: operator [0-9]* .* has execute plan spatial \[' \
  --plugin-path "$fixtures" --chip analytic scheduler fixture:nondeterministic
grep -q 'PASS  valid        llama-decode on analytic' "$work/out" \
  || fail "fixture:nondeterministic: its programs should still be valid"

# --max-gap: no gap is within 0 (the estimate never equals the measurement
# to the last bit here), every gap is within a factor of a thousand.
expect 3 'FAIL  gap          llama-decode on analytic: estimate .* more than the allowed 0.0%' \
  --chip analytic --max-gap 0 scheduler basic
expect 0 'PASS  gap          llama-decode on analytic: gap' \
  --chip analytic --max-gap=1000 scheduler basic

# --graph takes the frontend of an experiment (here cut to 2 layers).
expect 0 'PASS  valid        quickstart on analytic' \
  --chip analytic --no-builtin --quick --graph "$src/experiments/quickstart.xml" \
  scheduler static

# Without the corpus, the ONNX graph is skipped with a message.
ELK_CORPUS=$work/no-corpus expect 0 'SKIP  graph        onnx-squeezenet: no onnx/torch-generated/squeezenet1_1.onnx in the corpus' \
  --chip analytic scheduler ideal

# Bad input: exit 2, with what was wrong and what was expected.
expect 2 "no-such-scheduler" scheduler no-such-scheduler
expect 2 "no-such-allocator" --allocator no-such-allocator scheduler basic
expect 2 "no-such-scheduler" --scheduler no-such-scheduler allocator cost-aware
expect 2 "scheduler 'basic': .* has no parameter 'no-such-param' (valid: " \
  -p no-such-param=1 scheduler basic
expect 2 "scheduler 'basic': parameter 'load-noc-share': 7 is out of range" \
  --param load-noc-share=7 scheduler basic
expect 2 "scheduler 'basic': parameter 'contention': unknown value 'sometimes' (expected one of: " \
  --param contention=sometimes scheduler basic
expect 2 "allocator 'cost-aware': parameter 'x' is not of the form NAME=VALUE" \
  --param x allocator cost-aware
expect 2 "scheduler 'elk': parameter 'threads' is set twice" \
  -p threads=1 -p threads=2 scheduler elk
expect 2 "no-such.xml" --graph "$work/no-such.xml" scheduler basic
printf '<experiment format="1" name="x"><frontend name="llama"/></experiment>\n' > "$work/bad.xml"
expect 2 "bad.xml" --graph "$work/bad.xml" scheduler basic

# Bad command line: exit 1.
expect 1 "expected a kind (scheduler or allocator) and a feature name"
expect 1 "expected a kind" scheduler
expect 1 "unknown kind 'chip': expected scheduler or allocator" chip analytic
expect 1 "max-gap: 'lots' is not a non-negative fraction" --max-gap lots scheduler basic
expect 1 "max-gap: '-0.1' is not a non-negative fraction" --max-gap=-0.1 scheduler basic
expect 1 "unknown chip 'tpu': expected one of analytic, noc-sim, ipu-pod" --chip tpu scheduler basic
expect 1 "no-builtin leaves no graph" --no-builtin scheduler basic
expect 1 "scheduler is for checking an allocator" --scheduler elk scheduler basic
expect 1 "allocator is for checking a scheduler" --allocator reservation allocator cost-aware
expect 1 "Unknown option --frobnicate" --frobnicate scheduler basic
# --valgrind without valgrind on PATH (the tool is given by its full path).
(PATH=$work/empty; export PATH; exec "$tool" --valgrind scheduler basic) \
  > "$work/out" 2>&1
got=$?
if [ "$got" -ne 1 ] \
   || ! grep -q "valgrind needs valgrind, which is not on PATH" "$work/out"; then
  fail "--valgrind without valgrind: exit $got, expected 1 and a message"
  sed 's/^/    /' "$work/out"
else
  echo "ok: elk-check-plugin --valgrind without valgrind on PATH (exit 1)"
fi

if [ "$failures" -ne 0 ]; then
  echo "$failures check(s) failed"
  exit 1
fi
echo "all elk-check-plugin checks passed"
