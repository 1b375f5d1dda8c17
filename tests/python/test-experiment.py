#!/usr/bin/env python3
"""Experiments from Python through GObject introspection (issue 23 item 2).

Builds an experiment in code (the XML text, made with ElementTree, loaded
with Elk.Experiment.load_from_data), runs its sweep with a progress
callback, and reads the result rows back as Python objects; then checks
the errors a notebook meets: a bad experiment, a bad parameter, and a
progress callback that raises.  meson runs it as test-gi.py is run; it
prints TAP and skips only when python3-gi, the typelib, or (with
--without-plugins) the plugins it needs are missing.
"""
import csv
import json
import os
import sys
import xml.etree.ElementTree as ET

import elk_gi_test
from elk_gi_test import check

Elk, GLib, _ = elk_gi_test.import_elk(
    needs='the llama frontend, the analytic chip, the reservation '
          'allocator or the basic or elk scheduler')


def experiment_xml(batches, schedulers, frontend_params=None):
    """One Llama2-13B decode layer on the analytic chip, swept over batch."""
    root = ET.Element('experiment', format='1', name='python-sweep')
    frontend = ET.SubElement(root, 'frontend', name='llama')
    params = {'preset': 'llama2-13b-paper', 'phase': 'decode',
              'seq': '256', 'layers': '1'}
    params.update(frontend_params or {})
    for name, value in params.items():
        ET.SubElement(frontend, 'param', name=name).text = value
    ET.SubElement(root, 'chip', name='analytic')
    ET.SubElement(root, 'allocator', name='reservation')
    for name in schedulers:
        ET.SubElement(root, 'scheduler', name=name, label=name)
    sweep = ET.SubElement(root, 'sweep')
    ET.SubElement(sweep, 'axis', param='frontend.batch',
                  values=' '.join(str(b) for b in batches))
    ET.SubElement(root, 'output', dir='unused')
    return ET.tostring(root, encoding='utf-8', xml_declaration=True)


def load(reg, data, folder):
    return Elk.Experiment.load_from_data(data, os.path.join(folder, 'x.xml'),
                                         reg)


def test_sweep_with_progress(reg, folder):
    experiment = load(reg, experiment_xml([1, 4], ['basic', 'elk']), folder)
    check(experiment.get_n_points() == 2, 'two points')
    check(experiment.get_n_schedulers() == 2, 'two schedulers')
    check(experiment.dup_point_label(1) == 'frontend.batch=4',
          'label %r' % experiment.dup_point_label(1))
    out = os.path.join(folder, 'sweep')
    experiment.set_output_dir(out)
    check(experiment.get_output_dir() == out, 'output dir')

    seen = []

    def progress(exp, done, total, point, status, wall_s, tag):
        # The callback runs in this thread, after the point's journal line.
        check(exp is experiment, 'the callback gets the experiment')
        seen.append((done, total, point, status, tag))
        check(wall_s >= 0, 'wall time %g' % wall_s)

    options = Elk.RunOptions()
    options.n_jobs = 2
    ok, status = experiment.run_with_progress(options, progress, 'tag')
    check(ok and status == Elk.RunStatus.OK, 'run status %s' % status)
    check([s[0] for s in seen] == [1, 2], 'done counts %s' % seen)
    check(all(s[1] == 2 and s[3] == Elk.RunStatus.OK and s[4] == 'tag'
              for s in seen), 'progress %s' % seen)
    check(sorted(s[2] for s in seen) == [0, 1], 'every point once')

    # The rows, as dictionaries: results.csv in point then scheduler order,
    # and results.json with numbers as numbers.
    with open(os.path.join(out, 'results.csv'), newline='') as f:
        rows = list(csv.DictReader(f))
    check([(r['point'], r['label']) for r in rows] ==
          [('0', 'basic'), ('0', 'elk'), ('1', 'basic'), ('1', 'elk')],
          'rows %s' % [(r['point'], r['label']) for r in rows])
    check(all(r['status'] == 'ok' for r in rows), 'every row is ok')
    check([r['frontend.batch'] for r in rows] == ['1', '1', '4', '4'],
          'the sweep column')
    with open(os.path.join(out, 'results.json')) as f:
        results = json.load(f)
    jrows = results['rows']
    check(len(jrows) == 4, '%d JSON rows' % len(jrows))
    for row in jrows:
        check(isinstance(row['latency_s'], float) and
              row['latency_s'] >= row['bound_s'] > 0,
              'latency %r bound %r' % (row['latency_s'], row['bound_s']))
    # Same numbers in both files (9 significant digits in the CSV).
    for r, j in zip(rows, jrows):
        check(abs(float(r['latency_s']) - j['latency_s'])
              <= 1e-8 * j['latency_s'], 'CSV and JSON agree')

    # Run again with the default options (None) and no callback: one job,
    # same output folder, byte-identical results.
    with open(os.path.join(out, 'results.csv'), 'rb') as f:
        first = f.read()
    ok, status = experiment.run_with_progress(None, None)
    check(ok and status == Elk.RunStatus.OK, 'second run')
    with open(os.path.join(out, 'results.csv'), 'rb') as f:
        check(f.read() == first, 'results are deterministic across -j')


def test_bad_experiment(reg, folder):
    try:
        load(reg, b'<experiment format="1" name="x"><chip/></experiment>',
             folder)
        raise AssertionError('a broken experiment loaded')
    except GLib.Error as e:
        check(e.domain == 'elk-experiment-error-quark', 'domain %s' % e.domain)
        check('x.xml:' in e.message, 'the message names the file: %s'
              % e.message)
    try:
        load(reg, experiment_xml([1], ['basic'], {'phase': 'sideways'}),
             folder)
        raise AssertionError('a bad phase was accepted')
    except GLib.Error as e:
        check('phase' in e.message and 'sideways' in e.message,
              'the message names the parameter and value: %s' % e.message)


def test_raising_callback(reg, folder):
    """A callback that raises does not stop the run or crash it: PyGObject
    reports the exception on stderr and the sweep finishes."""
    experiment = load(reg, experiment_xml([1, 2], ['basic']), folder)
    experiment.set_output_dir(os.path.join(folder, 'raising'))
    calls = []

    def progress(exp, done, total, point, status, wall_s):
        calls.append(point)
        raise RuntimeError('the notebook is unhappy')

    ok, status = experiment.run_with_progress(None, progress)
    check(ok and status == Elk.RunStatus.OK, 'the run finished')
    check(len(calls) == 2, 'called for every point: %s' % calls)


TESTS = [('sweep-with-progress', test_sweep_with_progress),
         ('bad-experiment', test_bad_experiment),
         ('raising-callback', test_raising_callback)]

with elk_gi_test.temp_folder() as folder:
    status = elk_gi_test.run_tap('/python/experiment', TESTS,
                                 elk_gi_test.registry(), folder)
sys.exit(status)
