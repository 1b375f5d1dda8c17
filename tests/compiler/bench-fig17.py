#!/usr/bin/env python3
"""The Fig 17 benchmark: runs the whole sweep and fails if a target of
docs/performance.md ("Compiler (Fig 17 sweep)") is missed.

  bench-fig17.py [-j N] [-o DIR] [EXPERIMENT]

runs `$ELK_RUN -q -j N -o DIR EXPERIMENT` (defaults: -j 2, a temporary
folder, experiments/fig17.xml of this source tree), then reads the
timings.csv that elk-run writes into DIR:

  * time per configuration = the point's plan_s (its plan tables, shared
    by its rows) + compile_s + run_s of each of its rows (the five designs);
    the median over the configurations must be under TARGET_MEDIAN_S;
  * elk-run's wall time, measured here around the process, under
    TARGET_TOTAL_S;
  * peak RSS, the largest peak_rss of timings.csv (the process's peak when
    each point finished) and the child's ru_maxrss, under TARGET_RSS_BYTES.

It also fails if elk-run exits non-zero, if a row of results.csv is not
"ok", or if the sweep has fewer rows than the experiment defines (a
design that fails or disappears is not faster).  Each failure names the
target and the measured figure.  Exits 0 if every target is met, 1 if
not.
"""
import csv
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

# The targets of docs/performance.md, "Compiler (Fig 17 sweep)" (issue 5).
TARGET_MEDIAN_S = 5.0               # median per configuration
TARGET_TOTAL_S = 180.0              # the whole sweep, wall
TARGET_RSS_BYTES = 1024 ** 3        # peak RSS, 1 GiB
# experiments/fig17.xml: 24 configurations x 5 designs.
EXPECTED_POINTS = 24
EXPECTED_ROWS = 24 * 5

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_XML = os.path.join(HERE, '..', '..', 'experiments', 'fig17.xml')


def main(argv):
    jobs, out, xml = '2', None, DEFAULT_XML
    args = list(argv)
    while args:
        a = args.pop(0)
        if a == '-j' and args:
            jobs = args.pop(0)
        elif a == '-o' and args:
            out = args.pop(0)
        elif not a.startswith('-'):
            xml = a
        else:
            print(__doc__)
            return 2
    elk_run = os.environ.get('ELK_RUN', 'elk-run')
    with tempfile.TemporaryDirectory() as tmp:
        out = out or tmp
        cmd = [elk_run, '-q', '-j', jobs, '-o', out, xml]
        print(' '.join(cmd), flush=True)
        t0 = time.monotonic()
        p = subprocess.run(cmd)
        wall = time.monotonic() - t0
        ru = resource.getrusage(resource.RUSAGE_CHILDREN)
        failures = []
        if p.returncode != 0:
            failures.append('elk-run exited with status %d' % p.returncode)
        try:
            with open(os.path.join(out, 'timings.csv')) as f:
                timings = list(csv.DictReader(f))
            with open(os.path.join(out, 'results.csv')) as f:
                results = list(csv.DictReader(f))
        except OSError as e:
            print('FAIL: %s' % e)
            return 1

    bad = [r for r in results if r['status'] != 'ok']
    for r in bad:
        failures.append('point %s %s: %s %s' % (r['point'], r['label'],
                                               r['status'], r['error']))
    if len(results) < EXPECTED_ROWS or len(timings) < EXPECTED_ROWS:
        failures.append('%d result rows and %d timing rows, expected %d'
                        % (len(results), len(timings), EXPECTED_ROWS))

    # Per configuration (point): plan_s once, compile_s + run_s per row.
    per_point, plan, names = {}, {}, {}
    for r in timings:
        k = int(r['point'])
        plan[k] = float(r['plan_s'])
        per_point[k] = (per_point.get(k, 0.0) + float(r['compile_s'])
                        + float(r['run_s']))
    for r in results:
        names[int(r['point'])] = '%s s%s b%s' % (r['model'], r['seq'],
                                                r['batch'])
    config_s = {k: per_point[k] + plan[k] for k in per_point}
    if len(config_s) < EXPECTED_POINTS:
        failures.append('%d configurations timed, expected %d'
                        % (len(config_s), EXPECTED_POINTS))
    rss = max([int(r['peak_rss']) for r in timings] + [0])
    child_rss = ru.ru_maxrss * 1024  # Linux: KiB
    peak = max(rss, child_rss)

    if config_s:
        median = statistics.median(config_s.values())
        slowest = max(config_s, key=config_s.get)
        print('configurations: %d, median %.2f s (target < %.1f s), '
              'slowest %.2f s (%s)' % (len(config_s), median, TARGET_MEDIAN_S,
                                       config_s[slowest],
                                       names.get(slowest, slowest)))
        if not median < TARGET_MEDIAN_S:
            failures.append('median time per configuration %.2f s, target '
                            'under %.1f s' % (median, TARGET_MEDIAN_S))
    print('total wall %.1f s (target < %.0f s), CPU %.1f s user + %.1f s '
          'system' % (wall, TARGET_TOTAL_S, ru.ru_utime, ru.ru_stime))
    print('peak RSS %.1f MiB (timings.csv %.1f MiB, ru_maxrss %.1f MiB; '
          'target < %.0f MiB)' % (peak / 2 ** 20, rss / 2 ** 20,
                                  child_rss / 2 ** 20,
                                  TARGET_RSS_BYTES / 2 ** 20))
    if not wall < TARGET_TOTAL_S:
        failures.append('total wall time %.1f s, target under %.0f s'
                        % (wall, TARGET_TOTAL_S))
    if not peak < TARGET_RSS_BYTES:
        failures.append('peak RSS %.1f MiB, target under %.0f MiB'
                        % (peak / 2 ** 20, TARGET_RSS_BYTES / 2 ** 20))
    try:
        print('load average: %s' % ' '.join('%.2f' % x
                                            for x in os.getloadavg()))
    except OSError:
        pass
    for f in failures:
        print('FAIL: ' + f)
    if not failures:
        print('all Fig 17 targets met')
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
