#!/usr/bin/env python3
"""An allocator written in Python, registered at run time (issue 23 item 3).

Checks docs/examples/python/hull_allocator.py's search on hand-made
fronts against an exhaustive search; registers its "py-hull" allocator
with Elk.Registry.add_feature and runs Elk-Dyn with it beside Elk-Dyn with
the shipped cost-aware allocator in one experiment; then checks that a
Python allocator that raises, returns None, returns an entry out of range
or gives the wrong number of preload entries fails its rows with the
error a C plugin would get, naming the implementation, the virtual
method and the Python exception (the Elk overrides do that with no help
from the author), never a crash and never a silent "nothing fits".
Prints TAP; skips only without python3-gi, the typelib, or
(--without-plugins) the plugins the experiment needs.
"""
import itertools
import sys

import elk_gi_test
from elk_gi_test import check

Elk, GLib, GObject = elk_gi_test.import_elk(
    needs='the llama frontend, the analytic chip, the cost-aware '
          'allocator or the elk scheduler')
import hull_allocator  # noqa: E402

ALLOCATOR = Elk.kind_from_string('allocator')


def exhaustive(groups, budget):
    best = None
    for choice in itertools.product(*(range(len(g)) for g in groups)):
        if sum(g[c][0] for g, c in zip(groups, choice)) <= budget:
            cost = hull_allocator.cost(groups, choice)
            best = cost if best is None else min(best, cost)
    return best


def test_hull_search(reg, folder):
    # Fronts of (bytes, seconds, entry).  In the first, the hull step of
    # the executing operator frees 5 bytes where 1 was needed and the
    # paper's loop wins; in the second, the paper's loop takes a poor
    # neighbour step of a non-convex front and the hull wins.
    cases = [([[(1, 10.0, 0), (5, 9.9, 1), (6, 1.0, 2)],
               [(1, 5.0, 0), (2, 1.0, 1)]], 7, 10.9, 6.0),
             ([[(1, 10.0, 0), (9, 9.9, 1), (10, 1.0, 2)],
               [(1, 5.0, 0), (3, 1.0, 1)]], 9, 11.0, 15.0)]
    for groups, budget, hull_cost, paper_cost in cases:
        hulls = [hull_allocator._hull(g) for g in groups]
        got = [hull_allocator.cost(groups, hull_allocator.hull_greedy(
                   groups, hulls, budget)),
               hull_allocator.cost(groups, hull_allocator.neighbour_greedy(
                   groups, budget)),
               hull_allocator.cost(groups, hull_allocator.allocate(
                   groups, hulls, budget))]
        best = exhaustive(groups, budget)
        check(got == [hull_cost, paper_cost, best],
              'budget %d: hull, paper, py-hull %s; optimum %s'
              % (budget, got, best))
    check(hull_allocator.allocate([[(4, 1.0, 0)], [(4, 1.0, 0)]],
                                  [[0], [0]], 7) is None,
          'nothing fits: None')


class Raises(GObject.Object, Elk.Allocator):
    __gtype_name__ = 'PyTestRaisesAllocator'

    def do_allocate(self, request, result):
        raise ZeroDivisionError('budget split by zero')


class ReturnsNone(GObject.Object, Elk.Allocator):
    """Forgets its return statement: must not read as "nothing fits"."""
    __gtype_name__ = 'PyTestNoneAllocator'

    def do_allocate(self, request, result):
        result.exec_entry = 0


class OutOfRange(GObject.Object, Elk.Allocator):
    __gtype_name__ = 'PyTestOutOfRangeAllocator'

    def do_allocate(self, request, result):
        result.exec_entry = 1000000
        result.set_preload_entries(request, [0] * request.n_preloaded)
        return True


class WrongLength(GObject.Object, Elk.Allocator):
    __gtype_name__ = 'PyTestWrongLengthAllocator'

    def do_allocate(self, request, result):
        result.exec_entry = 0
        result.set_preload_entries(request, [0] * (request.n_preloaded + 1))
        return True


calls = []


def counting_allocate(*args):
    calls.append(1)
    return ORIGINAL_ALLOCATE(*args)


ORIGINAL_ALLOCATE = hull_allocator.allocate
hull_allocator.allocate = counting_allocate


def add_test_allocators(reg):
    for name, cls in [('py-raises', Raises), ('py-none', ReturnsNone),
                      ('py-out-of-range', OutOfRange),
                      ('py-wrong-length', WrongLength)]:
        reg.add_feature(ALLOCATOR, name, cls.__gtype__)


def run(reg, folder, allocators, name):
    """Elk-Dyn, once per allocator."""
    return elk_gi_test.run_one_layer(
        reg, folder, name,
        ['<scheduler name="elk" label="%s"><param name="order-search">dyn'
         '</param><allocator name="%s"/></scheduler>' % (a, a)
         for a in allocators])


def test_python_allocator(reg, folder):
    del calls[:]
    status, rows = run(reg, folder, ['py-hull', 'cost-aware'], 'good')
    check(status == Elk.RunStatus.OK, 'status %s' % status)
    row = rows['py-hull']
    check(row['status'] == 'ok', 'row %s' % row)
    check(row['allocator'] == 'py-hull', 'allocator column %r'
          % row['allocator'])
    check(float(row['latency_s']) >= float(row['bound_s']) > 0,
          'latency %s bound %s' % (row['latency_s'], row['bound_s']))
    check(len(calls) > 0, 'the experiment called py-hull')
    check(rows['cost-aware']['status'] == 'ok', 'the C allocator ran too')


def test_bad_python_allocators(reg, folder):
    status, rows = run(reg, folder, ['py-raises', 'py-none',
                                     'py-out-of-range', 'py-wrong-length',
                                     'cost-aware'], 'bad')
    check(status == Elk.RunStatus.PLUGIN_FAILED, 'status %s' % status)
    expect = {
        'py-raises': 'PyTestRaisesAllocator: allocate() raised '
                     'ZeroDivisionError at test-allocator.py:%d: budget '
                     'split by zero'
                     % (Raises.do_allocate.__wrapped__.__code__
                        .co_firstlineno + 1),
        'py-none': 'PyTestNoneAllocator: allocate() returned None without '
                   'an error: return True with the result filled in, or '
                   'False when nothing fits',
        'py-out-of-range': 'PyTestOutOfRangeAllocator: allocate() returned '
                           'entry 1000000 of ',
        'py-wrong-length': 'allocation for operator ',
    }
    for label, message in expect.items():
        row = rows[label]
        check(row['status'] == 'failed', '%s: %s' % (label, row['status']))
        check(message in row['error'],
              '%s: error %r, expected %r' % (label, row['error'], message))
    check('preload entries given for' in rows['py-wrong-length']['error'],
          rows['py-wrong-length']['error'])
    check(rows['cost-aware']['status'] == 'ok', 'the good design still ran')


TESTS = [('hull-search', test_hull_search),
         ('python-allocator', test_python_allocator),
         ('bad-python-allocators', test_bad_python_allocators)]

with elk_gi_test.temp_folder() as folder:
    status = elk_gi_test.run_tap(
        '/python/allocator', TESTS,
        elk_gi_test.registry(hull_allocator.register, add_test_allocators),
        folder)
sys.exit(status)
