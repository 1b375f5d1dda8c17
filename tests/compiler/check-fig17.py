#!/usr/bin/env python3
"""Reduced Fig 17 regression test (elk-paper.md §6.2).

Runs elk-run on fig17-reduced.xml (Llama2-13B and Gemma2-27B, seq 2048,
batch 16 and 64, all five designs) and checks the per-token latencies
against the artifact's numbers in fig17-reduced-reference.csv and against
what docs/compiler.md ("Fig 17 comparison") claims for these rows.  Each
threshold below is one named constant next to the docs line it checks; if
the documented numbers change, change the constant with them.  There is no
slack beyond the precision the docs give a number with: a claim written as
"1.45" holds if the measured value rounds to 1.45 or better.

Usage: check-fig17.py [--results DIR] (default: run $ELK_RUN into a
temporary directory).  Prints every row, the margin of every check, and
exits 0 on success, 1 with a list of failures.
"""
import csv
import os
import subprocess
import sys
import tempfile

# docs/compiler.md:222-224: "`*` = outside the issue's tolerance (10% for
# Elk-Full and Ideal; 15% for Basic and Static, judged at batch 64 only)",
# and :262-263 "Within tolerance: Elk-Full 24/24 ..., Ideal 24/24": every
# Elk-Full and every Ideal row within 10% of the reference.
FULL_TOL = 0.10
IDEAL_TOL = 0.10

# docs/compiler.md:222-224 and the rows of these configurations (:230,
# :236): at batch 64, Static is within 15% of the reference (0.87x, 0.90x,
# unmarked) and Basic is outside it on the fast side (0.78x *, 0.71x *),
# i.e. Basic < (1 - 0.15) x the reference.
BASELINE_TOL_B64 = 0.15

# docs/compiler.md:395-396: "Basic (mean 0.79x the reference) and Static
# (0.86x ...) are faster than the artifact's"; every row of the table
# (:228-236 for these configurations) is below 1.00x.  Checked on every
# row, after the artifact's batch cap.
BASELINE_MAX_RATIO = 1.00

# docs/compiler.md:264: "Elk-Full is never slower than Elk-Dyn".
FULL_OVER_DYN_EPS = 0.0
# docs/results.md, "What Elk-Full adds": with the same options Elk-Full
# is never slower than Elk-Dyn, by construction (it prices every candidate
# Dyn prices on the chip's own model).  fig17-reduced.xml runs that Dyn as
# 'elk-dyn-same'; no tolerance.
SAME_OPTIONS_DYN = 'elk-dyn-same'

# Ideal is Elk-Full's engine without contention (docs/compiler.md,
# modelling choice 7); it may not be slower than Elk-Full beyond rounding.
IDEAL_OVER_FULL_EPS = 1e-4

# Mean ratios, per model then over models (docs/compiler.md:253, the
# paper's aggregation).  The 24-row means of :257-260 (1.48, 1.19, 1.08,
# 0.938) cover every model and batch; the claims for this reduced sweep are
# the same means over the table's rows of its four configurations (:228,
# :230, :234, :236), with the reduced sweep's batch cap (Static at batch 16
# capped by batch 64 only: Llama2-13B 7.66 ms here where the full sweep's
# cap by batch 32 gives the table's 7.50).  A documented ratio is a value,
# not a bound: the measured mean must round to it at the precision it is
# written with, so that any design measurably slower (or faster) than
# documented fails here until docs/compiler.md and the constant change
# together.
# Since 2026-12-01 Elk-Full chooses among its candidates by the analytic
# chip's own model (select=timeline, docs/results.md "What Elk-Full adds"),
# which made it faster at Llama2-13B b16 (6.05 -> 5.98 ms) and Gemma2-27B
# b16 (7.38 -> 7.20 ms) here.
# Basic/Elk-Full: (8.14/5.98 + 15.60/9.23)/2, (8.73/7.20 + 13.90/9.18)/2.
BASIC_OVER_FULL = 1.44
# Static/Elk-Full: (7.66/5.98 + 11.41/9.23)/2, (8.17/7.20 + 13.89/9.18)/2.
STATIC_OVER_FULL = 1.29
# Elk-Dyn/Elk-Full: (6.88/5.98 + 10.04/9.23)/2, (7.98/7.20 + 9.43/9.18)/2.
DYN_OVER_FULL = 1.09
# Elk-Full's share of Ideal, Ideal/Elk-Full: (5.96/5.98 + 8.54/9.23)/2,
# (6.97/7.20 + 8.62/9.18)/2 (the 24-row claim: 93.8% of Ideal).
SHARE_OF_IDEAL = 0.957
# The means are computed as the docs compute them, from latencies rounded
# to the table's precision (ms, 2 decimals).
TABLE_DECIMALS = 2

HERE = os.path.dirname(os.path.abspath(__file__))
COLS = {'basic': 'basic_ms', 'static': 'static_ms', 'elk-dyn': 'elk_dyn_ms',
        'elk-full': 'elk_full_ms', 'ideal': 'ideal_ms'}


def read_reference():
    ref = {}
    with open(os.path.join(HERE, 'fig17-reduced-reference.csv')) as f:
        for r in csv.DictReader(l for l in f if not l.startswith('#')):
            ref[(r['model'], int(r['seq']), int(r['batch']))] = {
                d: float(r[c]) for d, c in COLS.items()}
    return ref


def read_results(path):
    res, failures = {}, []
    with open(os.path.join(path, 'results.csv')) as f:
        for r in csv.DictReader(f):
            key = (r['model'], int(r['seq']), int(r['batch']))
            if r['status'] != 'ok':
                failures.append('%s %s: %s' % (key, r['label'], r['error']))
                continue
            res.setdefault(key, {})[r['label']] = float(r['latency_s']) * 1e3
    return res, failures


def cap(res):
    """The artifact's min_append: Basic and Static at a batch are capped by
    the next larger batch of the same model and KV length."""
    out = {k: dict(v) for k, v in res.items()}
    for (m, s, b), v in res.items():
        for d in ('basic', 'static'):
            for (m2, s2, b2), v2 in res.items():
                if m2 == m and s2 == s and b2 > b and d in v2 and d in v:
                    out[(m, s, b)][d] = min(out[(m, s, b)][d], v2[d])
    return out


def rounds_to(value, claim, decimals):
    """A value written with @decimals decimals holds if @value rounds to
    it (half a unit in the last place either way)."""
    return abs(value - claim) <= 0.5 * 10 ** -decimals + 1e-12


def mean_per_model(values):
    """Mean per model, then over models (docs/compiler.md:253)."""
    per = {}
    for (model, _, _), v in values.items():
        per.setdefault(model, []).append(v)
    return sum(sum(v) / len(v) for v in per.values()) / len(per)


def main():
    results = None
    if len(sys.argv) == 3 and sys.argv[1] == '--results':
        results = sys.argv[2]
    ref = read_reference()
    with tempfile.TemporaryDirectory() as tmp:
        if results is None:
            results = tmp
            cmd = [os.environ.get('ELK_RUN', 'elk-run'), '-q', '-j', '2',
                   '-o', tmp, os.path.join(HERE, 'fig17-reduced.xml')]
            p = subprocess.run(cmd)
            if p.returncode not in (0, 1):
                print('elk-run failed with status %d' % p.returncode)
                return 1
        res, failures = read_results(results)
    res = cap(res)
    worst = {}

    def note(check, margin, where):
        if check not in worst or margin < worst[check][0]:
            worst[check] = (margin, where)

    ratios = {'basic': {}, 'static': {}, 'elk-dyn': {}, 'share': {}}
    for key, r in sorted(ref.items()):
        e = res.get(key, {})
        if set(e) != set(COLS) | {SAME_OPTIONS_DYN}:
            failures.append('%s: designs missing: %s'
                            % (key, sorted(set(COLS) | {SAME_OPTIONS_DYN}
                                           - set(e))))
            continue
        where = '%s s%d b%d' % key
        line = ' '.join('%s %.3f/%.2f (%.3f)' % (d, e[d], r[d], e[d] / r[d])
                        for d in COLS)
        print('%s: %s' % (where, line))
        for d, tol in (('elk-full', FULL_TOL), ('ideal', IDEAL_TOL)):
            dev = e[d] / r[d] - 1
            note('%s within %.0f%% of the reference' % (d, 100 * tol),
                 tol - abs(dev), where)
            if abs(dev) > tol:
                failures.append('%s %s: %.3f ms vs reference %.3f ms (%+.1f%%,'
                                ' docs/compiler.md claims within %.0f%%)'
                                % (where, d, e[d], r[d], 100 * dev, 100 * tol))
        for d in ('basic', 'static'):
            q = e[d] / r[d]
            note('%s <= %.2fx the reference' % (d, BASELINE_MAX_RATIO),
                 BASELINE_MAX_RATIO - q, where)
            if q > BASELINE_MAX_RATIO:
                failures.append('%s %s: %.3f ms is %.3fx the reference %.3f ms;'
                                ' docs/compiler.md claims the baselines are'
                                ' faster than the reference'
                                % (where, d, e[d], q, r[d]))
        if key[2] == 64:
            q = e['static'] / r['static']
            note('static within %.0f%% at batch 64' % (100 * BASELINE_TOL_B64),
                 BASELINE_TOL_B64 - abs(q - 1), where)
            if abs(q - 1) > BASELINE_TOL_B64:
                failures.append('%s static: %.3fx the reference; docs/'
                                'compiler.md has it within %.0f%% at batch 64'
                                % (where, q, 100 * BASELINE_TOL_B64))
            q = e['basic'] / r['basic']
            note('basic more than %.0f%% faster at batch 64'
                 % (100 * BASELINE_TOL_B64), (1 - BASELINE_TOL_B64) - q, where)
            if not q < 1 - BASELINE_TOL_B64:
                failures.append('%s basic: %.3fx the reference; docs/'
                                'compiler.md has it outside the %.0f%% '
                                'tolerance, faster (marked *)'
                                % (where, q, 100 * BASELINE_TOL_B64))
        note('ideal <= elk-full (relative)',
             e['elk-full'] * (1 + IDEAL_OVER_FULL_EPS) / e['ideal'] - 1, where)
        if e['ideal'] > e['elk-full'] * (1 + IDEAL_OVER_FULL_EPS):
            failures.append('%s: Ideal %.3f ms slower than Elk-Full %.3f ms'
                            % (where, e['ideal'], e['elk-full']))
        note('elk-full <= elk-dyn (relative)',
             e['elk-dyn'] * (1 + FULL_OVER_DYN_EPS) / e['elk-full'] - 1, where)
        if e['elk-full'] > e['elk-dyn'] * (1 + FULL_OVER_DYN_EPS):
            failures.append('%s: Elk-Full %.3f ms slower than Elk-Dyn %.3f ms'
                            ' (docs/compiler.md: never slower)'
                            % (where, e['elk-full'], e['elk-dyn']))
        same = e[SAME_OPTIONS_DYN]
        note('elk-full <= elk-dyn with the same options (relative)',
             same / e['elk-full'] - 1, where)
        if e['elk-full'] > same:
            failures.append('%s: Elk-Full %.6f ms slower than Elk-Dyn with '
                            'the same options %.6f ms (docs/results.md: '
                            'never, by construction)'
                            % (where, e['elk-full'], same))
        t = {d: round(e[d], TABLE_DECIMALS) for d in e}
        for d in ('basic', 'static', 'elk-dyn'):
            ratios[d][key] = t[d] / t['elk-full']
        ratios['share'][key] = t['ideal'] / t['elk-full']

    if ratios['share']:
        for name, d, claim, decimals in (
                ('Basic/Elk-Full', 'basic', BASIC_OVER_FULL, 2),
                ('Static/Elk-Full', 'static', STATIC_OVER_FULL, 2),
                ('Elk-Dyn/Elk-Full', 'elk-dyn', DYN_OVER_FULL, 2),
                ('Ideal/Elk-Full (share of Ideal)', 'share',
                 SHARE_OF_IDEAL, 3)):
            m = mean_per_model(ratios[d])
            # Room left before the value no longer rounds to the claim.
            room = 0.5 * 10 ** -decimals - abs(m - claim)
            note('mean %s = %.*f' % (name, decimals, claim), room, 'mean')
            print('mean %s %.4f (docs claim %.*f; room %+.4f, %+.4f from '
                  'the claim)' % (name, m, decimals, claim, room, m - claim))
            if not rounds_to(m, claim, decimals):
                failures.append('mean %s %.4f, docs/compiler.md claims %.*f'
                                % (name, m, decimals, claim))
    print('margins, the worst case of each check (fractions of the\n'
          'reference, of latency or of the ratio; negative = failed):')
    for check, (margin, where) in worst.items():
        print('  %-45s %+.4f (%s)' % (check, margin, where))
    for f in failures:
        print('FAIL: ' + f)
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
