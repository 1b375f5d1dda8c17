#!/usr/bin/env python3
"""Elk-Full is never slower than Elk-Dyn with the same options.

Runs elk-run on an experiment (default: full-vs-dyn.xml beside this
script) whose points each have an 'elk-dyn-same' and an 'elk-full' row,
and fails if Full's latency is above Dyn's on any point.  The default
experiment holds the two Fig 17 configurations where Full used to lose
while it chose by the engine's estimate; with select=estimate for Full
this check fails there (7.868 against 7.348 ms on Llama2-13B), with the
default select=timeline it holds by construction (docs/results.md, "What
Elk-Full adds").

Usage: check-full-vs-dyn.py [EXPERIMENT]; elk-run from $ELK_RUN.
"""
import csv
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    xml = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        HERE, 'full-vs-dyn.xml')
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [os.environ.get('ELK_RUN', 'elk-run'), '-q', '--no-report',
               '-o', tmp, xml]
        p = subprocess.run(cmd)
        if p.returncode != 0:
            print('elk-run failed with status %d' % p.returncode)
            return 1
        points = {}
        with open(os.path.join(tmp, 'results.csv')) as f:
            for r in csv.DictReader(f):
                if r['status'] != 'ok':
                    failures.append('point %s %s: %s'
                                    % (r['point'], r['label'], r['error']))
                    continue
                points.setdefault((r['point'], r['model'], r['seq'],
                                   r['batch']), {})[r['label']] = \
                    float(r['latency_s']) * 1e3
    for key, e in sorted(points.items()):
        if 'elk-full' not in e or 'elk-dyn-same' not in e:
            failures.append('point %s: needs elk-full and elk-dyn-same rows, '
                            'has %s' % (key[0], sorted(e)))
            continue
        print('%s s%s b%s: elk-dyn-same %.6f ms, elk-full %.6f ms'
              % (key[1], key[2], key[3], e['elk-dyn-same'], e['elk-full']))
        if e['elk-full'] > e['elk-dyn-same']:
            failures.append('%s s%s b%s: Elk-Full %.6f ms is slower than '
                            'Elk-Dyn with the same options %.6f ms'
                            % (key[1], key[2], key[3], e['elk-full'],
                               e['elk-dyn-same']))
    if not points:
        failures.append('no points')
    for f in failures:
        print('FAIL: ' + f)
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
