#!/usr/bin/env python3
"""Compare an allocator written in Python with elk's shipped allocators.

    meson devenv -C build -w "$PWD" \
        python3 docs/examples/python/allocator_ablation.py [--quick] [-o DIR]

Registers hull_allocator.py's "py-hull" allocator with the registry at
run time and runs Elk-Dyn (the quickstart's elk-dyn design) on
experiments/quickstart.xml's point (Llama2-13B decode, batch 32, KV
length 2048, analytic IPU-POD4) once with each allocator: the artifact's
reservation, the paper's cost-aware greedy, the exhaustive exact search
and py-hull; sweeping the per-core SRAM (160 and 256 KiB, then 624 KiB,
the IPU's) to put the allocators under pressure.  Prints each design's
latency against cost-aware's at the same SRAM, and how many of py-hull's
requests had to shrink a group and which search won there.  --quick keeps
2 of the 40 layers (meson test runs it that way).  Needs python3-gi,
python3-pandas and python3-matplotlib; exits with status 77 (skipped)
and a message when one is missing.

Elk-Dyn, not Elk-Full: Elk-Full's order search asks for about 130,000
allocations per layer, which a Python allocator answers in minutes, not
seconds (each call crosses into Python and reads the request's fields
through introspection).
"""
import os
import sys
import xml.etree.ElementTree as ET

import elk_example

Elk = elk_example.import_elk()
plt, pd = elk_example.import_plotting()
import hull_allocator  # noqa: E402

ALLOCATORS = ['reservation', 'cost-aware', 'exact', 'py-hull']
SRAM_KIB = [160, 256, 624]   # --quick runs the first only


def elk_dyn(allocator):
    """The quickstart's elk-dyn design with its own allocator."""
    design = ET.Element('scheduler', name='elk', label='dyn-' + allocator)
    for name, value in [('order-search', 'dyn'),
                        ('contention', 'delay-execution'),
                        ('load-noc-share', '0.9'), ('select', 'estimate')]:
        ET.SubElement(design, 'param', name=name).text = value
    ET.SubElement(design, 'allocator', name=allocator)
    return design


def main():
    args = elk_example.parse_args(
        __doc__, 'results/python-allocator-ablation').parse_args()

    registry = elk_example.registry(hull_allocator.register)
    experiment = elk_example.quickstart_with(
        registry, 'python-allocator-ablation',
        [elk_dyn(a) for a in ALLOCATORS], keep_designs=False,
        sweep={'chip.sram-kib': SRAM_KIB})
    status, df = elk_example.run(experiment, args.quick, args.output)
    if elk_example.report_failed(df, ('label', 'sram_per_core', 'error')):
        return 1
    df['sram_kib'] = df['sram_per_core'] // 1024
    df['latency_ms'] = df['latency_s'] * 1e3
    base = df[df['label'] == 'dyn-cost-aware'].set_index('sram_kib')
    df['vs_cost_aware'] = df['latency_s'] / df['sram_kib'].map(
        base['latency_s'])
    print(df[['sram_kib', 'label', 'latency_ms', 'vs_cost_aware',
              'preload_only_s', 'stall_s']].to_string(index=False))
    s = hull_allocator.STATS
    print('py-hull: %d requests, %d had to shrink the group; there the '
          'hull search won %d, the paper\'s loop %d, tied %d'
          % (s['calls'], s['shrunk'], s['hull'], s['paper'], s['tie']))

    table = df.pivot_table(index='sram_kib', columns='label',
                           values='latency_ms')
    ax = table.plot.bar(figsize=(6, 4))
    ax.set_ylabel('latency (ms)')
    ax.set_xlabel('SRAM per core (KiB)')
    ax.tick_params(axis='x', labelrotation=0)
    ax.set_title('Elk-Dyn with each allocator%s'
                 % (' (quick: 2 layers)' if args.quick else ''))
    plt.tight_layout()
    figure = os.path.join(experiment.get_output_dir(), 'allocators.png')
    plt.savefig(figure)
    print('wrote', figure)
    return 0 if status == Elk.RunStatus.OK else 1


if __name__ == '__main__':
    sys.exit(main())
