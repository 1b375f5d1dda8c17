#!/usr/bin/env python3
"""libelk from Python through GObject introspection (issue 23 item 1).

Loads the Elk-1.0 typelib of the build tree with PyGObject and drives the
public API the way a notebook would: a chip spec, a graph built in code,
its plan tables, the shipped plugins through the registry, a schedule run
on the analytic chip (unless --without-plugins: meson passes it when one
of those plugins is not built), and (with --with-llama) a graph loaded
from a llama preset.  meson runs it with GI_TYPELIB_PATH and
LD_LIBRARY_PATH pointing at build/core, ELK_PLUGIN_PATH at the build's
plugins and PYTHONPATH at bindings/python; it prints TAP.

It skips (TAP "1..0 # SKIP") only when python3-gi or the typelib is
missing: every other failure fails.
"""
import gc
import math
import sys

import elk_gi_test
from elk_gi_test import check

Elk, GLib, GObject = elk_gi_test.import_elk()

WITH_LLAMA = '--with-llama' in sys.argv[1:]
WITH_PLUGINS = '--without-plugins' not in sys.argv[1:]


def tiny_graph():
    """A 64x128 by 128x256 MatMul whose weight streams from HBM."""
    graph = Elk.Graph.new('tiny')
    check(graph.add_tensor('x', Elk.DType.F16, Elk.TensorOrigin.ACTIVATION,
                           [64, 128], 0) == 0, 'tensor x is id 0')
    check(graph.add_tensor('w', Elk.DType.F16, Elk.TensorOrigin.WEIGHT,
                           [128, 256], 0) == 1, 'tensor w is id 1')
    check(graph.add_tensor('y', Elk.DType.F16, Elk.TensorOrigin.ACTIVATION,
                           [64, 256], 0) == 2, 'tensor y is id 2')
    check(graph.add_op('mm', 'matmul', Elk.OpKind.MATMUL, -1, 'mk,kn->mn',
                       [0, 1, 2], None) == 0, 'operator mm is id 0')
    return graph


def test_chip_spec():
    spec = Elk.ChipSpec.new_ipu_pod4()
    check(spec.name == 'ipu-pod4', 'name %r' % spec.name)
    check(spec.cores == 5888, 'cores %d' % spec.cores)
    check(spec.get_usable_sram() == (624 - 8) * 1024,
          'usable SRAM %d' % spec.get_usable_sram())
    check(Elk.topology_to_string(spec.topology) == 'all-to-all',
          'topology %s' % Elk.topology_to_string(spec.topology))
    check(spec.validate(), 'the default spec validates')
    # The boxed copy is a value: changing it leaves the original alone.
    copy = spec.copy()
    copy.cores = 7
    check(spec.cores == 5888 and copy.cores == 7, 'copy is independent')
    copy.n_chips = 0
    try:
        copy.validate()
        raise AssertionError('a spec with 0 chips validated')
    except GLib.Error as e:
        check(e.domain == 'elk-chip-error-quark', 'domain %s' % e.domain)
        check(e.code == Elk.ChipError.CONFIG, 'code %d' % e.code)


def test_graph():
    graph = tiny_graph()
    check(graph.validate(), 'the tiny graph validates')
    check(graph.get_n_ops() == 1 and graph.get_n_tensors() == 3, 'sizes')
    op = graph.get_op(0)
    check(op.name == 'mm' and op.kind == Elk.OpKind.MATMUL, 'op %s' % op.name)
    check(op.flops == 2 * 64 * 128 * 256, 'flops %g' % op.flops)
    check(graph.get_tensor(1).bytes == 128 * 256 * 2, 'weight bytes')
    check(graph.get_hbm_bytes() == 128 * 256 * 2, 'HBM bytes')
    check(graph.find_tensor('y') == 2 and graph.find_tensor('z') == -1,
          'find_tensor')
    graph.set_attribute('phase', 'decode')
    check(graph.get_attribute('phase') == 'decode', 'attribute')
    check(graph.get_attribute('nothing') is None, 'missing attribute')
    try:
        graph.add_tensor('x', Elk.DType.F16, Elk.TensorOrigin.ACTIVATION,
                         [1], 0)
        raise AssertionError('a duplicate tensor was accepted')
    except GLib.Error as e:
        check(e.domain == 'elk-graph-error-quark', 'domain %s' % e.domain)
        check(e.code == Elk.GraphError.INVALID, 'code %d' % e.code)
        check("'x'" in e.message, 'message names the tensor: %s' % e.message)


def test_plan_set():
    spec = Elk.ChipSpec.new_ipu_pod4()
    plans = Elk.PlanSet.new(tiny_graph(), spec, None)
    check(plans.get_n_distinct() == 1, 'one distinct table')
    check(plans.get_spec().cores == spec.cores, 'the set keeps the spec')
    table = plans.get_table(0)
    fastest = table.get_fastest()
    smallest = table.get_smallest()
    check(table.n_plans > 0 and table.n_hot > 0, 'the table has plans')
    check(0 < fastest.time_s <= smallest.time_s, 'front is ordered')
    check(smallest.hot_bytes <= fastest.hot_bytes, 'front is ordered')
    check(table.best_within(smallest.hot_bytes).time_s == smallest.time_s,
          'best_within at the smallest footprint is the smallest plan')
    check(table.best_within(0) is None, 'nothing fits 0 bytes')
    # Arrays of structs are read through the accessors; the front is
    # ascending in footprint and descending in time.
    front = [table.get_plan(i) for i in table.hot_front]
    check(len(front) == table.n_hot, 'front length')
    check(all(a.hot_bytes < b.hot_bytes and a.time_s > b.time_s
              for a, b in zip(front, front[1:])), 'the front is a front')
    entry = table.get_cold_hot(0)
    check(entry.hot_plan < table.n_plans and entry.exec_s ==
          table.get_plan(entry.hot_plan).time_s, 'a cold-hot entry')
    # The table is a deep boxed copy: it outlives the set.
    n_plans = table.n_plans
    del plans
    gc.collect()
    check(table.n_plans == n_plans and table.get_fastest().time_s ==
          fastest.time_s, 'the table copy outlives its set')


def create(reg, kind, name, **props):
    feature = reg.find(Elk.kind_from_string(kind), name)
    return GObject.new(feature.type, **props)


def test_schedule_and_run():
    reg = elk_gi_test.registry()
    chips = [f.name for f in reg.list_features(Elk.kind_from_string('chip'))]
    check('analytic' in chips, 'the analytic chip is registered: %s' % chips)
    for plugin in reg.get_plugins():
        check(len(plugin.get_sha256()) == 64, 'plugin checksum')
    chip = create(reg, 'chip', 'analytic')
    spec = chip.dup_spec()
    plans = Elk.PlanSet.new(tiny_graph(), spec, None)
    allocator = create(reg, 'allocator', 'cost-aware')
    scheduler = create(reg, 'scheduler', 'elk')
    program = scheduler.schedule(plans, allocator)
    check(program.validate(plans), 'the program validates')
    kinds = [program.get_step(i).kind for i in range(program.get_n_steps())]
    check(kinds == [Elk.StepKind.PRELOAD, Elk.StepKind.EXECUTE],
          'steps %s' % kinds)
    check(program.peek_op(0).exec_plan.cores_used > 0, 'an execute plan')
    metrics = chip.run(program, plans)
    check(math.isfinite(metrics.latency_s) and metrics.latency_s > 0,
          'latency %g' % metrics.latency_s)
    copy = metrics.copy()
    check(metrics.first_difference(copy)[0] is None,
          'metrics equal their copy')
    copy.stall_s += 1
    field, value_a, value_b = metrics.first_difference(copy)
    check(field == 'stall_s' and value_b == value_a + 1,
          'first difference %s %g %g' % (field, value_a, value_b))
    try:
        reg.find(Elk.kind_from_string('scheduler'), 'no-such-scheduler')
        raise AssertionError('an unknown scheduler was found')
    except GLib.Error as e:
        check(e.domain == 'elk-registry-error-quark', 'domain %s' % e.domain)
        check(e.code == Elk.RegistryError.NOT_FOUND, 'code %d' % e.code)


def test_llama_preset():
    reg = elk_gi_test.registry()
    frontend = create(reg, 'frontend', 'llama', preset='llama2-13b-paper',
                      phase='decode', batch=1, seq=128, layers=1)
    graph = frontend.load()
    check(graph.get_n_ops() > 0 and graph.validate(), 'a loaded graph')
    check(graph.get_n_layers() == 1, 'one layer: %d' % graph.get_n_layers())
    check(graph.get_hbm_bytes() > 0, 'the weights stream from HBM')


TESTS = [('chip-spec', test_chip_spec, None),
         ('graph', test_graph, None),
         ('plan-set', test_plan_set, None),
         ('schedule-and-run', test_schedule_and_run,
          None if WITH_PLUGINS else 'the analytic chip, the cost-aware '
          'allocator or the elk scheduler is not built'),
         ('llama-preset', test_llama_preset,
          None if WITH_LLAMA else 'the llama frontend is not built')]

sys.exit(elk_gi_test.run_tap('/gi', TESTS))
