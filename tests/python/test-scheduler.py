#!/usr/bin/env python3
"""A scheduler written in Python, registered at run time (issue 23 item 3).

Registers docs/examples/python/double_buffer.py's scheduler with
Elk.Registry.add_feature and runs it beside a C scheduler in one
experiment (its estimate, priced with Elk.timeline_run, must be the
analytic chip's latency); then checks that a Python scheduler that
raises, returns None or returns an invalid program fails its rows with
the error a C plugin would get, naming the implementation, the virtual
method and the Python exception (the Elk overrides,
bindings/python/gi/overrides/Elk.py, do that with no help from the
author), never a crash; and that add_feature refuses a bad name, a type
that is not a scheduler, and a name added twice.  Prints TAP; skips only
without python3-gi, the typelib, or (--without-plugins) the plugins the
experiment needs.
"""
import sys

import elk_gi_test
from elk_gi_test import check

Elk, GLib, GObject = elk_gi_test.import_elk(
    needs='the llama frontend, the analytic chip, the reservation '
          'allocator or the basic scheduler')
import double_buffer  # noqa: E402

SCHEDULER = Elk.kind_from_string('scheduler')


class Raises(GObject.Object, Elk.Scheduler):
    __gtype_name__ = 'PyTestRaisesScheduler'

    def do_schedule(self, plans, allocator):
        raise ValueError('no plan for operator 7')


class RaisesGError(GObject.Object, Elk.Scheduler):
    """A GLib.Error raised by the plugin itself reaches the row as is."""
    __gtype_name__ = 'PyTestGErrorScheduler'

    def do_schedule(self, plans, allocator):
        raise GLib.Error.new_literal(Elk.schedule_error_quark(),
                                     'my own message',
                                     Elk.ScheduleError.FAILED)


def lookup(table, key):
    return table[key]


class RaisesDeeper(GObject.Object, Elk.Scheduler):
    """The row names the frame that raised, not the do_ method."""
    __gtype_name__ = 'PyTestRaisesDeeperScheduler'

    def do_schedule(self, plans, allocator):
        return lookup({}, 'missing')


class ReturnsNone(GObject.Object, Elk.Scheduler):
    __gtype_name__ = 'PyTestNoneScheduler'

    def do_schedule(self, plans, allocator):
        pass


class Invalid(GObject.Object, Elk.Scheduler):
    """Executes every operator without preloading it first."""
    __gtype_name__ = 'PyTestInvalidScheduler'

    def do_schedule(self, plans, allocator):
        graph = plans.get_graph()
        program = Elk.Program.new(graph)
        for i in range(graph.get_n_ops()):
            program.add_execute(i)
        return program


class NotAScheduler(GObject.Object):
    __gtype_name__ = 'PyTestNotAScheduler'


def add_test_schedulers(reg):
    for name, cls in [('py-raises', Raises), ('py-gerror', RaisesGError),
                      ('py-raises-deeper', RaisesDeeper),
                      ('py-none', ReturnsNone), ('py-invalid', Invalid)]:
        reg.add_feature(SCHEDULER, name, cls.__gtype__)


def run(reg, folder, schedulers, name):
    return elk_gi_test.run_one_layer(
        reg, folder, name,
        ['<scheduler name="%s" label="%s"/>' % (s, s) for s in schedulers],
        allocator='reservation')


def test_python_scheduler(reg, folder):
    status, rows = run(reg, folder, ['py-double-buffer', 'basic'], 'good')
    check(status == Elk.RunStatus.OK, 'status %s' % status)
    row = rows['py-double-buffer']
    check(row['status'] == 'ok', 'row %s' % row)
    check(row['scheduler'] == 'py-double-buffer', 'scheduler column')
    check(float(row['latency_s']) >= float(row['bound_s']) > 0,
          'latency %s bound %s' % (row['latency_s'], row['bound_s']))
    # The scheduler prices its candidates with Elk.timeline_run() as the
    # analytic chip (default properties) prices programs: its estimate is
    # the chip's latency.
    estimate, latency = float(row['estimate_s']), float(row['latency_s'])
    check(abs(estimate - latency) <= 1e-9 * latency,
          'estimate %r, chip latency %r' % (estimate, latency))
    # The plugin list of results.json has no file for a run-time feature;
    # the run must not have failed over it.
    check(rows['basic']['status'] == 'ok', 'the C scheduler ran too')


def test_bad_python_schedulers(reg, folder):
    status, rows = run(reg, folder, ['py-raises', 'py-gerror',
                                     'py-raises-deeper', 'py-none',
                                     'py-invalid', 'basic'], 'bad')
    check(status == Elk.RunStatus.PLUGIN_FAILED, 'status %s' % status)
    expect = {
        'py-raises': 'PyTestRaisesScheduler: schedule() raised ValueError '
                     'at test-scheduler.py:%d: no plan for operator 7'
                     % (Raises.do_schedule.__wrapped__.__code__
                        .co_firstlineno + 1),
        'py-gerror': 'my own message',
        'py-raises-deeper': 'PyTestRaisesDeeperScheduler: schedule() '
                            'raised KeyError at test-scheduler.py:%d: '
                            "'missing'" % (lookup.__code__.co_firstlineno
                                           + 1),
        'py-none': 'PyTestNoneScheduler: schedule() returned None without '
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

with elk_gi_test.temp_folder() as folder:
    status = elk_gi_test.run_tap(
        '/python/scheduler', TESTS,
        elk_gi_test.registry(double_buffer.register, add_test_schedulers),
        folder)
sys.exit(status)
