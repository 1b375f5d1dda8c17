#!/usr/bin/env python3
"""A scheduler written in Python, registered at run time (issue 23 item 3).

Registers docs/examples/python/double_buffer.py's scheduler with
Elk.Registry.add_feature and runs it beside a C scheduler in one
experiment; then checks that a Python scheduler that raises, returns None
or returns an invalid program fails its rows with the error a C plugin
would get (naming the implementation and, with the example's
reports_exceptions decorator, the Python exception), never a crash; and
that add_feature refuses a bad name, a type that is not a scheduler, and
a name added twice.  Prints TAP; skips only without python3-gi, the
typelib, or (--without-plugins) the plugins the experiment needs.
"""
import csv
import os
import shutil
import sys
import tempfile

try:
    import gi
except ImportError:
    print('1..0 # SKIP python3-gi is not installed (Debian: python3-gi)')
    sys.exit(0)
try:
    gi.require_version('Elk', '1.0')
    from gi.repository import Elk, GLib, GObject
except (ValueError, ImportError) as e:
    print('1..0 # SKIP the Elk-1.0 typelib is not on GI_TYPELIB_PATH '
          '(built with -Dintrospection=disabled?): %s' % e)
    sys.exit(0)
if '--without-plugins' in sys.argv[1:]:
    print('1..0 # SKIP the llama frontend, the analytic chip, the '
          'reservation allocator or the basic scheduler is not built')
    sys.exit(0)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', '..', 'docs', 'examples', 'python'))
import double_buffer  # noqa: E402
from double_buffer import reports_exceptions  # noqa: E402

SCHEDULER = Elk.kind_from_string('scheduler')


def check(cond, what):
    if not cond:
        raise AssertionError(what)


class Raises(GObject.Object, Elk.Scheduler):
    __gtype_name__ = 'PyTestRaisesScheduler'

    @reports_exceptions
    def do_schedule(self, plans, allocator):
        raise ValueError('no plan for operator 7')


class RaisesUndecorated(GObject.Object, Elk.Scheduler):
    __gtype_name__ = 'PyTestRaisesUndecoratedScheduler'

    def do_schedule(self, plans, allocator):
        raise ValueError('lost on the way')


class ReturnsNone(GObject.Object, Elk.Scheduler):
    __gtype_name__ = 'PyTestNoneScheduler'

    @reports_exceptions
    def do_schedule(self, plans, allocator):
        return None


class Invalid(GObject.Object, Elk.Scheduler):
    """Executes every operator without preloading it first."""
    __gtype_name__ = 'PyTestInvalidScheduler'

    @reports_exceptions
    def do_schedule(self, plans, allocator):
        graph = plans.get_graph()
        program = Elk.Program.new(graph)
        for i in range(graph.get_n_ops()):
            program.add_execute(i)
        return program


class NotAScheduler(GObject.Object):
    __gtype_name__ = 'PyTestNotAScheduler'


def registry():
    reg = Elk.Registry.new()
    reg.add_default_paths()
    reg.scan()
    double_buffer.register(reg)
    for name, cls in [('py-raises', Raises),
                      ('py-raises-undecorated', RaisesUndecorated),
                      ('py-none', ReturnsNone), ('py-invalid', Invalid)]:
        reg.add_feature(SCHEDULER, name, cls.__gtype__)
    return reg


def run(reg, folder, schedulers, name):
    xml = ['<?xml version="1.0"?>',
           '<experiment format="1" name="%s">' % name,
           '<frontend name="llama">',
           '<param name="preset">llama2-13b-paper</param>',
           '<param name="phase">decode</param>',
           '<param name="batch">8</param><param name="seq">512</param>',
           '<param name="layers">1</param></frontend>',
           '<chip name="analytic"/><allocator name="reservation"/>']
    xml += ['<scheduler name="%s" label="%s"/>' % (s, s) for s in schedulers]
    xml += ['<output dir="%s"/>' % name, '</experiment>']
    experiment = Elk.Experiment.load_from_data(
        '\n'.join(xml).encode(), os.path.join(folder, name + '.xml'), reg)
    ok, status = experiment.run_with_progress(None, None)
    check(ok, 'the run wrote its results')
    with open(os.path.join(folder, name, 'results.csv'), newline='') as f:
        return status, {r['label']: r for r in csv.DictReader(f)}


def test_python_scheduler(reg, folder):
    status, rows = run(reg, folder, ['py-double-buffer', 'basic'], 'good')
    check(status == Elk.RunStatus.OK, 'status %s' % status)
    row = rows['py-double-buffer']
    check(row['status'] == 'ok', 'row %s' % row)
    check(row['scheduler'] == 'py-double-buffer', 'scheduler column')
    check(float(row['latency_s']) >= float(row['bound_s']) > 0,
          'latency %s bound %s' % (row['latency_s'], row['bound_s']))
    # The plugin list of results.json has no file for a run-time feature;
    # the run must not have failed over it.
    check(rows['basic']['status'] == 'ok', 'the C scheduler ran too')


def test_bad_python_schedulers(reg, folder):
    status, rows = run(reg, folder, ['py-raises', 'py-raises-undecorated',
                                     'py-none', 'py-invalid', 'basic'], 'bad')
    check(status == Elk.RunStatus.PLUGIN_FAILED, 'status %s' % status)
    expect = {
        'py-raises': 'PyTestRaisesScheduler: schedule() raised ValueError: '
                     'no plan for operator 7',
        'py-raises-undecorated': 'PyTestRaisesUndecoratedScheduler: '
                                 'schedule() returned NULL without an error',
        'py-none': 'PyTestNoneScheduler: schedule() returned NULL without '
                   'an error',
        'py-invalid': 'PyTestInvalidScheduler produced an invalid program: ',
    }
    for label, message in expect.items():
        row = rows[label]
        check(row['status'] == 'failed', '%s: %s' % (label, row['status']))
        check(row['error'].startswith(message),
              '%s: error %r, expected %r' % (label, row['error'], message))
    check(rows['basic']['status'] == 'ok', 'the good design still ran')


def test_add_feature_errors(reg, folder):
    cases = [('Bad_Name', Raises.__gtype__, Elk.RegistryError.BAD_NAME,
              "'Bad_Name' is not lowercase dash-case"),
             ('py-not', NotAScheduler.__gtype__, Elk.RegistryError.WRONG_TYPE,
              'must be an instantiatable, non-abstract GObject implementing '
              'ElkScheduler'),
             ('py-raises', Raises.__gtype__, Elk.RegistryError.DUPLICATE,
              "scheduler 'py-raises' is added twice")]
    for name, gtype, code, message in cases:
        try:
            reg.add_feature(SCHEDULER, name, gtype)
            raise AssertionError('%s was accepted' % name)
        except GLib.Error as e:
            check(e.domain == 'elk-registry-error-quark', e.domain)
            check(e.code == code, '%s: code %d' % (name, e.code))
            check(e.message.startswith('run time: ') and message in e.message,
                  '%s: %s' % (name, e.message))
    try:
        reg.add_feature(GObject.Object.__gtype__, 'py-x', Raises.__gtype__)
        raise AssertionError('a feature of kind GObject was accepted')
    except GLib.Error as e:
        check(e.code == Elk.RegistryError.WRONG_TYPE, 'code %d' % e.code)
    # The name is found like a plugin's, with no plugin behind it.
    feature = reg.find(SCHEDULER, 'py-double-buffer')
    check(feature.type == double_buffer.DoubleBufferScheduler.__gtype__ and
          feature.plugin is None, 'the feature has no plugin')


TESTS = [('python-scheduler', test_python_scheduler),
         ('bad-python-schedulers', test_bad_python_schedulers),
         ('add-feature-errors', test_add_feature_errors)]

print('1..%d' % len(TESTS))
failed = 0
reg = registry()
folder = tempfile.mkdtemp(prefix='elk-python-')
try:
    for i, (name, func) in enumerate(TESTS, 1):
        try:
            func(reg, folder)
            print('ok %d /python/scheduler/%s' % (i, name))
        except (AssertionError, GLib.Error) as e:
            failed += 1
            print('not ok %d /python/scheduler/%s' % (i, name))
            print('# %s: %s' % (type(e).__name__, e))
finally:
    shutil.rmtree(folder)
sys.exit(1 if failed else 0)
