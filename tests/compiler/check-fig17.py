#!/usr/bin/env python3
"""Reduced Fig 17 regression test (elk-paper.md §6.2).

Runs elk-run on fig17-reduced.xml and checks the per-token latencies
against the artifact's numbers in fig17-reduced-reference.csv:

  * every design runs (status ok) on every configuration;
  * Elk-Full and Ideal are within FULL_TOL of the reference (the issue asks
    for 10% on the full sweep; the test is looser so that it flags real
    regressions, not modelling noise);
  * Basic and Static, after the artifact's batch cap (min_append), lie in
    [BASELINE_LO, BASELINE_HI] x reference: elk's baselines are known to be
    faster than the artifact's (docs/compiler.md, "Why the baselines are
    faster"), but not by more than that;
  * the designs keep the paper's order: Ideal <= Elk-Full <= Elk-Dyn and
    Elk-Full < Static < Basic, with mean speedups of Elk-Full over Basic and
    Static and its share of Ideal above the floors below.

Usage: check-fig17.py [--results DIR] (default: run $ELK_RUN into a
temporary directory).  Exits 0 on success, 1 with a list of failures.
"""
import csv
import os
import subprocess
import sys
import tempfile

FULL_TOL = 0.15
BASELINE_LO, BASELINE_HI = 0.60, 1.15
MIN_SPEEDUP_BASIC = 1.30
MIN_SPEEDUP_STATIC = 1.02
MIN_SHARE_OF_IDEAL = 0.90
EPS = 1e-4

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
    sp_basic, sp_static, share = [], [], []
    for key, r in sorted(ref.items()):
        e = res.get(key, {})
        if set(e) != set(COLS):
            failures.append('%s: designs missing: %s'
                            % (key, sorted(set(COLS) - set(e))))
            continue
        line = ' '.join('%s %.2f/%.2f' % (d, e[d], r[d]) for d in COLS)
        print('%s %s' % (key, line))
        for d in ('elk-full', 'ideal'):
            if abs(e[d] / r[d] - 1) > FULL_TOL:
                failures.append('%s %s: %.3f ms vs reference %.3f ms (%+.1f%%,'
                                ' tolerance %.0f%%)' % (key, d, e[d], r[d],
                                100 * (e[d] / r[d] - 1), 100 * FULL_TOL))
        for d in ('basic', 'static'):
            q = e[d] / r[d]
            if not BASELINE_LO <= q <= BASELINE_HI:
                failures.append('%s %s: %.3f ms is %.2f x the reference %.3f'
                                ' ms, outside [%.2f, %.2f]' % (key, d, e[d], q,
                                r[d], BASELINE_LO, BASELINE_HI))
        if e['ideal'] > e['elk-full'] * (1 + EPS):
            failures.append('%s: Ideal %.3f ms slower than Elk-Full %.3f ms'
                            % (key, e['ideal'], e['elk-full']))
        if e['elk-full'] > e['elk-dyn'] * (1 + EPS):
            failures.append('%s: Elk-Full %.3f ms slower than Elk-Dyn %.3f ms'
                            % (key, e['elk-full'], e['elk-dyn']))
        if not e['elk-full'] < e['static'] < e['basic']:
            failures.append('%s: expected Elk-Full < Static < Basic, got %.3f,'
                            ' %.3f, %.3f ms' % (key, e['elk-full'],
                                                e['static'], e['basic']))
        sp_basic.append(e['basic'] / e['elk-full'])
        sp_static.append(e['static'] / e['elk-full'])
        share.append(e['ideal'] / e['elk-full'])
    if sp_basic:
        m = [sum(x) / len(x) for x in (sp_basic, sp_static, share)]
        print('mean: Basic/Elk-Full %.3f, Static/Elk-Full %.3f, '
              'Ideal/Elk-Full %.3f' % tuple(m))
        if m[0] < MIN_SPEEDUP_BASIC:
            failures.append('mean speedup over Basic %.3f < %.2f'
                            % (m[0], MIN_SPEEDUP_BASIC))
        if m[1] < MIN_SPEEDUP_STATIC:
            failures.append('mean speedup over Static %.3f < %.2f'
                            % (m[1], MIN_SPEEDUP_STATIC))
        if m[2] < MIN_SHARE_OF_IDEAL:
            failures.append('Elk-Full reaches %.1f%% of Ideal < %.0f%%'
                            % (100 * m[2], 100 * MIN_SHARE_OF_IDEAL))
    for f in failures:
        print('FAIL: ' + f)
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
