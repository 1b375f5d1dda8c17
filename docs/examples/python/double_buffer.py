"""A scheduler written in Python: "py-double-buffer" (issue 23 item 3).

The idea is double buffering with a shared SRAM budget: while operator i
executes, exactly one operator, the next, preloads, and the two split each
core's SRAM between them.  Operator i's plans were fixed when it was
preloaded; the next operator then gets the fastest of its cold-hot entries
(execute plus data-distribution time) whose preload space fits next to
operator i.  When its fastest entry does not fit there, the pipeline
either squeezes the preload in with the fastest entry that does fit, or
lets it wait until operator i has finished and then takes its fastest
entry: it builds both programs, prices each with the analytic timeline
(Elk.timeline_run, as the analytic chip prices programs) and returns the
faster, with that price as its estimate.  Elk's own design
(elk-full) instead searches how many operators to preload ahead and lets
the allocator re-split SRAM among all of them; this scheduler asks how
much of that a one-deep pipeline already gets.

It uses only the introspected public toolkit: the plan set's cold-hot
tables (Elk.PlanTable), the chip spec's usable SRAM and load model, the
timeline of elk/elk-timeline.h, and Elk.Program's builder; it does not
call the experiment's allocator, which the
scheduler interface passes to every scheduler, because it sizes both
operators' plans itself.  elk_program_validate() checks what it returns,
as for every C scheduler.

    from gi.repository import Elk
    import double_buffer
    registry = Elk.Registry.new(); registry.add_default_paths()
    registry.scan()
    double_buffer.register(registry)
    # then <scheduler name="py-double-buffer"/> in an experiment
"""
import gi
gi.require_version('Elk', '1.0')
from gi.repository import Elk, GLib, GObject

FEATURE = 'py-double-buffer'


def _entries(table):
    """The cold-hot entries of a table, fastest first (ties: smaller
    preload space, then table order, so the choice is deterministic)."""
    entries = [table.get_cold_hot(k) for k in range(table.n_cold_hot)]
    return sorted(entries, key=lambda e: (e.exec_s + e.warmup_s,
                                          e.cold_bytes, e.hot_bytes))


def _fastest_within(entries, budget):
    """The first (fastest) entry whose preload and execution spaces each
    fit @budget."""
    for e in entries:
        if e.cold_bytes <= budget and e.hot_bytes <= budget:
            return e
    return None


def price(plans, tables, chosen, steps):
    """Latency of a program on the analytic chip with its default
    properties (preload share 1, preloads first on a busy interconnect),
    from Elk.timeline_run(), the timeline the chip itself runs.  Each
    operator's timeline input is what elk_program_derive() derives for a
    preloaded operator: its HBM bytes, its preload state, the load time
    of the chip's model, execution plus data distribution, and the
    execute plan's own interconnect time."""
    spec = plans.get_spec()
    demand = plans.get_options().noc_demand
    ops = []
    for table, entry in zip(tables, chosen):
        hot = table.get_plan(entry.hot_plan)
        op = Elk.TimelineOp()
        op.hbm_bytes = table.hbm_bytes
        op.cold_bytes = entry.cold_bytes if table.hbm_bytes else 0
        if table.hbm_bytes:
            op.min_load_s, _ = spec.get_load_time(op.hbm_bytes,
                                                  op.cold_bytes, 1.0)
        op.exec_s = entry.exec_s + entry.warmup_s
        op.shift_s = hot.get_noc_demand(demand)
        op.noc_bytes = hot.noc_bytes
        ops.append(op)
    _, result = Elk.timeline_run(spec, 1.0, Elk.TimelinePriority.PRELOAD_FIRST,
                                 ops, steps)
    return result.latency_s


def _step(kind, op):
    step = Elk.Step()
    step.kind = kind
    step.op = op
    return step


def plan_pipeline(plans, tables, entries, squeeze):
    """One candidate schedule: the cold-hot entry of every operator and
    the steps, for the one-deep pipeline described at the top.  When the
    next operator's fastest entry does not fit beside operator i, it
    either squeezes in with the fastest entry that does fit (@squeeze:
    the preload overlaps, the execution is slower) or waits for operator
    i to finish and then takes its fastest entry (the preload is exposed,
    the execution is fast)."""
    graph = plans.get_graph()
    usable = plans.get_spec().get_usable_sram()
    n_ops = len(tables)
    chosen = [None] * n_ops
    steps = []

    def choose(op, budget):
        entry = _fastest_within(entries(op), budget)
        if entry is None:
            raise GLib.Error.new_literal(
                Elk.schedule_error_quark(),
                '%s: operator %d (%s) has no plan within %d bytes per '
                'core' % (FEATURE, op, graph.get_op(op).name, budget),
                Elk.ScheduleError.FAILED)
        chosen[op] = entry
        steps.append(_step(Elk.StepKind.PRELOAD, op))

    if n_ops > 0:
        choose(0, usable)
    for i in range(n_ops):
        nxt = i + 1
        if nxt < n_ops:
            # Operator i holds its execution space (and its preload
            # space until it starts) while the next one preloads.
            room = usable - max(chosen[i].hot_bytes, chosen[i].cold_bytes)
            fit = _fastest_within(entries(nxt), room)
            if fit is not None and (squeeze or fit is entries(nxt)[0]):
                choose(nxt, room)
        steps.append(_step(Elk.StepKind.EXECUTE, i))
        if nxt < n_ops and chosen[nxt] is None:
            choose(nxt, usable)
    return chosen, steps


class DoubleBufferScheduler(GObject.Object, Elk.Scheduler):
    __gtype_name__ = 'PyDoubleBufferScheduler'

    def do_schedule(self, plans, allocator):
        graph = plans.get_graph()
        n_ops = graph.get_n_ops()
        tables = [plans.get_table(i) for i in range(n_ops)]
        sorted_entries = {}

        def entries(op):
            table = tables[op]
            key = table.op   # identical operators share a table
            if key not in sorted_entries:
                sorted_entries[key] = _entries(table)
            return sorted_entries[key]

        # Two candidates, priced by the chip's own timeline: squeeze the
        # next preload in beside the executing operator, or let it wait.
        best = None
        for squeeze in (True, False):
            chosen, steps = plan_pipeline(plans, tables, entries, squeeze)
            latency = price(plans, tables, chosen, steps)
            if best is None or latency < best[0]:
                best = (latency, chosen, steps)
        latency, chosen, steps = best

        program = Elk.Program.new(graph)
        for op, entry in enumerate(chosen):
            program.set_plans(op, tables[op].get_plan(entry.hot_plan),
                              tables[op].get_plan(entry.cold_plan))
        for step in steps:
            if step.kind == Elk.StepKind.PRELOAD:
                program.add_preload(step.op)
            else:
                program.add_execute(step.op)
        program.set_estimate(latency)
        program.set_n_orders(2)
        return program


def register(registry, name=FEATURE):
    """Adds the scheduler to @registry as scheduler @name."""
    registry.add_feature(Elk.kind_from_string('scheduler'), name,
                         DoubleBufferScheduler.__gtype__)
