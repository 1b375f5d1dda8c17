"""An allocator written in Python: "py-hull" (issue 23 item 3).

SRAM allocation (elk-paper.md §3.6) is a multiple-choice knapsack: the
executing operator E and each preloaded operator Qj pick one option
(bytes, seconds) from their cold-hot table, and the bytes must fit the
per-core budget.  The paper's greedy loop (the shipped "cost-aware")
walks each operator's Pareto front one neighbour at a time, always taking
the step that saves the most bytes per second added.  On a front that is
not convex, the next neighbour can be a poor trade while a step two
options further is a good one, and the loop stops at the first option
that fits.

py-hull uses the classic Lagrangian answer to that (the convex-hull
greedy of the multiple-choice knapsack): it keeps only the options on the
lower convex hull of each operator's front, so that every step has a
steeper trade than the one before, shrinks along the cheapest hull steps
until the group fits, and then spends the bytes left over on the largest
time saving any single operator can still buy, options off the hull
included.  The objective is the one cost-aware minimises (execution, data
distribution, and the NoC penalty on E's preload state), so the
comparison with cost-aware and the exhaustive "exact" measures the search
alone.  allocator_ablation.py runs it under elk-dyn and elk-full.

It uses only the introspected API: the request's fields, the plan set's
cold-hot tables, the chip spec's link bandwidth, and
Elk.AllocResult.set_preload_entries() for the result's preload array.  It
keeps no state between calls, as the interface asks, so the experiment's
worker threads can share it.

    import hull_allocator
    hull_allocator.register(registry)   # then <allocator name="py-hull"/>
"""
import collections
import threading

import gi
gi.require_version('Elk', '1.0')
from gi.repository import Elk, GObject  # noqa: E402

FEATURE = 'py-hull'

# What allocate() did, for allocator_ablation.py: requests answered,
# requests whose fastest options overflowed the budget, and which search
# gave the cheaper answer there.  Worker threads share it, hence the lock.
STATS = collections.Counter()
_STATS_LOCK = threading.Lock()


def _count(*keys):
    with _STATS_LOCK:
        for key in keys:
            STATS[key] += 1


def _pareto(options):
    """Ascending bytes, strictly decreasing seconds (ties: table order)."""
    front = []
    for opt in sorted(options, key=lambda o: (o[0], o[1], o[2])):
        if not front or opt[1] < front[-1][1]:
            front.append(opt)
    return front


def _hull(front):
    """The lower convex hull of a Pareto front, as indices into it."""
    hull = []
    for i, (b, t, _) in enumerate(front):
        while len(hull) >= 2:
            b1, t1, _ = front[hull[-2]]
            b2, t2, _ = front[hull[-1]]
            # Drop the middle point when it lies on or above the segment
            # from hull[-2] to this option.
            if (t2 - t1) * (b - b1) >= (t - t1) * (b2 - b1):
                hull.pop()
            else:
                break
        hull.append(i)
    return hull


class _Fronts:
    """The Pareto fronts and hulls of one plan set's operators, computed
    once per (operator, fixed entry, budget, penalty).

    elk-full asks for hundreds of thousands of allocations, each reading
    the same few tables; reading a table through introspection copies it,
    so the fronts are remembered.  This is not per-call state: the tables
    of a plan set never change, and the plan set is held (so its address,
    which keys PyGObject's equality of boxed values, is not reused)."""

    def __init__(self, plans):
        self.plans = plans
        self.link_bw = plans.get_spec().link_bw
        self.entries = {}
        self.fronts = {}

    def _entries(self, op):
        entries = self.entries.get(op)
        if entries is None:
            table = self.plans.get_table(op)
            entries = []
            for k in range(table.n_cold_hot):
                e = table.get_cold_hot(k)
                entries.append((e.cold_bytes, e.hot_bytes, e.hot_plan,
                                e.exec_s, e.warmup_s))
            self.entries[op] = entries
        return entries

    def front(self, op, is_exec, fixed, budget, penalty_per_byte):
        """(front, hull, base seconds) of one operator of the group."""
        key = (op, is_exec, fixed, budget, penalty_per_byte)
        got = self.fronts.get(key)
        if got is not None:
            return got
        entries = self._entries(op)
        base = 0.0
        if is_exec:
            opts = [(hot, ex + wu + penalty_per_byte * cold, k)
                    for k, (cold, hot, _, ex, wu) in enumerate(entries)
                    if (fixed < 0 or k == fixed)
                    and hot <= budget and cold <= budget]
        elif fixed >= 0:
            hot_plan = entries[fixed][2]
            base = entries[fixed][4]
            opts = [(cold, wu, k)
                    for k, (cold, _, hp, _, wu) in enumerate(entries)
                    if hp == hot_plan and cold <= budget]
        else:
            opts = [(cold, ex + wu, k)
                    for k, (cold, _, _, ex, wu) in enumerate(entries)
                    if cold <= budget]
        front = _pareto(opts)
        got = (front, _hull(front), base)
        self.fronts[key] = got
        return got


def hull_greedy(groups, hulls, budget):
    """The convex-hull greedy plus the fill pass over each operator's
    front (@groups) and its hull; returns one index into each front.
    The smallest options must fit."""
    pick = [len(h) - 1 for h in hulls]          # position on each hull
    steps = []
    for gi_, (g, h) in enumerate(zip(groups, hulls)):
        for pos in range(len(h) - 1, 0, -1):
            big, small = g[h[pos]], g[h[pos - 1]]
            # Seconds added per byte saved; hull steps of one operator
            # come out in increasing order, so sorting keeps them in turn.
            steps.append(((small[1] - big[1]) / (big[0] - small[0]),
                          gi_, pos))
    steps.sort()
    total = sum(g[h[-1]][0] for g, h in zip(groups, hulls))
    for _, gi_, pos in steps:
        if total <= budget:
            break
        g, h = groups[gi_], hulls[gi_]
        total -= g[h[pos]][0] - g[h[pos - 1]][0]
        pick[gi_] = pos - 1
    choice = [h[p] for h, p in zip(hulls, pick)]
    # Fill: spend what is left on the best single upgrade, until none fits.
    while True:
        best = None
        for gi_, g in enumerate(groups):
            cur = g[choice[gi_]]
            for i in range(choice[gi_] + 1, len(g)):
                if total - cur[0] + g[i][0] > budget:
                    break
                gain = cur[1] - g[i][1]
                if best is None or gain > best[0]:
                    best = (gain, gi_, i)
        if best is None:
            break
        _, gi_, i = best
        total += groups[gi_][i][0] - groups[gi_][choice[gi_]][0]
        choice[gi_] = i
    return choice


def neighbour_greedy(groups, budget):
    """The paper's loop, as cost-aware runs it: from the fastest options,
    move the operator whose next smaller option saves the most bytes per
    second added, until the group fits (ties: the first operator).  The
    smallest options must fit."""
    pick = [len(g) - 1 for g in groups]
    total = sum(g[-1][0] for g in groups)
    while total > budget:
        best = None
        for k, g in enumerate(groups):
            if pick[k] > 0:
                big, small = g[pick[k]], g[pick[k] - 1]
                rate = (big[0] - small[0]) / (small[1] - big[1])
                if best is None or rate > best[0]:
                    best = (rate, k)
        _, k = best
        total -= groups[k][pick[k]][0] - groups[k][pick[k] - 1][0]
        pick[k] -= 1
    return pick


def cost(groups, choice):
    return sum(g[c][1] for g, c in zip(groups, choice))


def allocate(groups, hulls, budget):
    """py-hull's choice: one index into each operator's front (@groups,
    with @hulls their convex hulls), or None when even the smallest
    options overflow @budget.  The hull greedy's answer, unless the
    paper's loop finds a cheaper one on the same fronts: a hull step can
    free far more bytes than needed, which the fill pass cannot always
    win back, so taking the better of the two keeps py-hull's objective
    at or below cost-aware's on every request."""
    if any(not g for g in groups):
        return None
    if sum(g[0][0] for g in groups) > budget:
        _count('calls')
        return None
    if sum(g[-1][0] for g in groups) <= budget:
        _count('calls')
        return [len(g) - 1 for g in groups]
    hull = hull_greedy(groups, hulls, budget)
    paper = neighbour_greedy(groups, budget)
    hull_cost, paper_cost = cost(groups, hull), cost(groups, paper)
    _count('calls', 'shrunk', 'tie' if hull_cost == paper_cost
           else 'paper' if paper_cost < hull_cost else 'hull')
    return paper if paper_cost < hull_cost else hull


class HullAllocator(GObject.Object, Elk.Allocator):
    __gtype_name__ = 'PyHullAllocator'

    noc_penalty = GObject.Property(
        type=float, default=0.5, minimum=0.0, maximum=10.0,
        nick='noc-penalty',
        blurb='Weight of the NoC penalty on the executing operator\'s '
              'preload-state bytes, as for the shipped allocators')

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._fronts = collections.OrderedDict()

    def _fronts_of(self, plans):
        """The fronts of @plans, remembering the last few plan sets (one
        per experiment point being run)."""
        fronts = self._fronts.get(plans)
        if fronts is None:
            fronts = self._fronts[plans] = _Fronts(plans)
            while len(self._fronts) > 8:
                self._fronts.popitem(last=False)
        return fronts

    def do_allocate(self, request, result):
        plans = request.plans
        fronts = self._fronts_of(plans)
        penalty = (self.noc_penalty / fronts.link_bw
                   if request.contention == Elk.AllocContention.SHARED
                   else 0.0)
        budget = request.sram_budget
        exec_op = request.exec_op
        group = [fronts.front(exec_op, True,
                              request.exec_entry if request.exec_fixed
                              else -1, budget, penalty)]
        preloaded = request.preloaded
        if preloaded:
            for op, f in zip(preloaded, request.preloaded_fixed
                             or [-1] * len(preloaded)):
                group.append(fronts.front(op, False, f, budget, 0.0))
        choice = allocate([g[0] for g in group], [g[1] for g in group],
                          budget)
        if choice is None:
            return False            # nothing fits: not an error
        picked = [g[0][c] for g, c in zip(group, choice)]
        added = sum(p[1] - g[2] for p, g in zip(picked[1:], group[1:]))
        _, _, _, exec_s, warmup_s = fronts.entries[exec_op][picked[0][2]]
        result.exec_entry = picked[0][2]
        if preloaded:
            result.set_preload_entries(request, [p[2] for p in picked[1:]])
        result.exec_s = exec_s
        result.penalty_s = picked[0][1] - exec_s - warmup_s
        result.warmup_s = warmup_s + added
        result.cost_s = picked[0][1] + added
        result.bytes = sum(p[0] for p in picked)
        return True


def register(registry, name=FEATURE):
    """Adds the allocator to @registry as allocator @name."""
    registry.add_feature(Elk.kind_from_string('allocator'), name,
                         HullAllocator.__gtype__)
