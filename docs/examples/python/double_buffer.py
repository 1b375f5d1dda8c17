"""A scheduler written in Python: "py-double-buffer" (issue 23 item 3).

The idea is double buffering with a shared SRAM budget: while operator i
executes, exactly one operator, the next, preloads, and the two split each
core's SRAM between them.  Operator i's plans were fixed when it was
preloaded; the next operator then gets the fastest of its cold-hot entries
(execute plus data-distribution time) whose preload space fits next to
operator i.  When none fits, the next operator's preload waits until
operator i has finished and takes its fastest entry.  Elk's own design
(elk-full) instead searches how many operators to preload ahead and lets
the allocator re-split SRAM among all of them; this scheduler asks how
much of that a one-deep pipeline already gets.

It uses only the introspected public toolkit: the plan set's cold-hot
tables (Elk.PlanTable), the chip spec's usable SRAM, and Elk.Program's
builder; it does not call the experiment's allocator, which the
scheduler interface passes to every scheduler, because it sizes both
operators' plans itself.  elk_program_validate() checks what it returns,
as for every C scheduler.

    from gi.repository import Elk
    import double_buffer
    registry = Elk.Registry.new(); registry.add_default_paths()
    registry.scan()
    double_buffer.register(registry)   # then <scheduler name="py-double-buffer"/>
"""
import functools

import gi
gi.require_version('Elk', '1.0')
from gi.repository import Elk, GLib, GObject

FEATURE = 'py-double-buffer'


def reports_exceptions(vfunc):
    """Turns a Python exception raised by a vfunc into the GError a C
    plugin would return: ElkPluginError FAILED, naming the implementation
    type, the vfunc and the exception.  Without it PyGObject prints the
    traceback and the caller only sees NULL without an error (which elk
    also reports, as a broken contract, but without the exception)."""
    @functools.wraps(vfunc)
    def wrapper(self, *args):
        try:
            return vfunc(self, *args)
        except GLib.Error:
            raise
        except Exception as e:
            raise GLib.Error.new_literal(
                Elk.Plugin.error_quark(),
                '%s: %s() raised %s: %s' % (
                    type(self).__gtype__.name,
                    vfunc.__name__[len('do_'):], type(e).__name__, e),
                Elk.PluginError.FAILED)
    return wrapper


def _entries(table):
    """The cold-hot entries of a table, fastest first (ties: smaller
    preload space, then table order, so the choice is deterministic)."""
    entries = [table.get_cold_hot(k) for k in range(table.n_cold_hot)]
    return sorted(entries, key=lambda e: (e.exec_s + e.warmup_s,
                                          e.cold_bytes, e.hot_bytes))


def _fastest_within(entries, budget):
    for e in entries:
        if e.cold_bytes <= budget and e.hot_bytes <= budget:
            return e
    return None


class DoubleBufferScheduler(GObject.Object, Elk.Scheduler):
    __gtype_name__ = 'PyDoubleBufferScheduler'

    @reports_exceptions
    def do_schedule(self, plans, allocator):
        graph = plans.get_graph()
        usable = plans.get_spec().get_usable_sram()
        n_ops = graph.get_n_ops()
        program = Elk.Program.new(graph)
        chosen = [None] * n_ops
        tables = [plans.get_table(i) for i in range(n_ops)]
        sorted_entries = {}

        def entries(op):
            table = tables[op]
            key = id(table)   # identical operators share a table
            if key not in sorted_entries:
                sorted_entries[key] = (table, _entries(table))
            return sorted_entries[key][1]

        def choose(op, budget):
            entry = _fastest_within(entries(op), budget)
            if entry is None:
                raise GLib.Error.new_literal(
                    Elk.schedule_error_quark(),
                    '%s: operator %d (%s) has no plan within %d bytes per '
                    'core' % (FEATURE, op, graph.get_op(op).name, budget),
                    Elk.ScheduleError.FAILED)
            chosen[op] = entry
            program.set_plans(op, tables[op].get_plan(entry.hot_plan),
                              tables[op].get_plan(entry.cold_plan))
            program.add_preload(op)

        if n_ops > 0:
            choose(0, usable)
        for i in range(n_ops):
            nxt = i + 1
            if nxt < n_ops:
                # Operator i holds its execution space (and its preload
                # space until it starts) while the next one preloads.
                held = max(chosen[i].hot_bytes, chosen[i].cold_bytes)
                entry = _fastest_within(entries(nxt), usable - held)
                if entry is not None:
                    choose(nxt, usable - held)
            program.add_execute(i)
            if nxt < n_ops and chosen[nxt] is None:
                choose(nxt, usable)
        program.set_estimate(float('nan'))
        program.set_n_orders(1)
        return program


def register(registry, name=FEATURE):
    """Adds the scheduler to @registry as scheduler @name."""
    registry.add_feature(Elk.kind_from_string('scheduler'), name,
                         DoubleBufferScheduler.__gtype__)
