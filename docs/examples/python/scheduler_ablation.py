#!/usr/bin/env python3
"""Compare a scheduler written in Python with elk's own designs.

    meson devenv -C build -w "$PWD" \
        python3 docs/examples/python/scheduler_ablation.py [--quick] [-o DIR]

Registers double_buffer.py's "py-double-buffer" scheduler with the
registry at run time, adds it to experiments/quickstart.xml (Llama2-13B
decode, batch 32, KV length 2048, analytic IPU-POD4) as a sixth design,
runs the experiment in this process, and prints each design's latency
against elk-full's, with a bar chart.  --quick keeps 2 of the 40 layers
(meson test runs it that way: seconds, not minutes).  Needs python3-gi,
python3-pandas and python3-matplotlib; exits with status 77 (skipped)
and a message when one is missing.
"""
import argparse
import os
import sys
import xml.etree.ElementTree as ET

try:
    import gi
    gi.require_version('Elk', '1.0')
    from gi.repository import Elk
except (ImportError, ValueError) as e:
    print('skipped: PyGObject (python3-gi) or the Elk-1.0 typelib is '
          'missing: %s' % e)
    sys.exit(77)
try:
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    import pandas as pd
except ImportError as e:
    print('skipped: this example needs python3-pandas and '
          'python3-matplotlib: %s' % e)
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import double_buffer  # noqa: E402

QUICKSTART = os.path.join(HERE, '..', '..', '..', 'experiments',
                          'quickstart.xml')


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('-o', '--output', default='results/python-ablation')
    parser.add_argument('--quick', action='store_true',
                        help='2 layers instead of the whole model')
    args = parser.parse_args()

    registry = Elk.Registry.new()
    registry.add_default_paths()
    registry.scan()
    double_buffer.register(registry)

    # The experiment, built in code: the quickstart file with one more
    # <scheduler> after the last one (the schema wants them together).
    tree = ET.parse(QUICKSTART)
    root = tree.getroot()
    root.set('name', 'python-ablation')
    last = max(i for i, el in enumerate(root) if el.tag == 'scheduler')
    root.insert(last + 1, ET.Element('scheduler', name='py-double-buffer',
                                     label='py-double-buffer'))
    data = ET.tostring(root, encoding='utf-8', xml_declaration=True)
    experiment = Elk.Experiment.load_from_data(data, QUICKSTART, registry)
    if args.quick:
        experiment.set_quick()
    experiment.set_output_dir(os.path.abspath(args.output))

    ok, status = experiment.run_with_progress(
        None, lambda exp, done, total, point, st, wall_s:
        print('[%d/%d] point %d in %.2f s' % (done, total, point, wall_s)))
    out = experiment.get_output_dir()
    df = pd.read_csv(os.path.join(out, 'results.csv'))
    failed = df[df['status'] != 'ok']
    if len(failed):
        print(failed[['label', 'error']].to_string(index=False))
        return 1
    full = df.set_index('label')['latency_s']['elk-full']
    df['latency_ms'] = df['latency_s'] * 1e3
    df['vs_elk_full'] = df['latency_s'] / full
    print(df[['label', 'latency_ms', 'vs_elk_full', 'stall_s',
              'preload_only_s']].to_string(index=False))

    ax = df.plot.bar(x='label', y='latency_ms', legend=False,
                     figsize=(6, 4))
    ax.set_ylabel('latency (ms)')
    ax.set_xlabel('design')
    ax.tick_params(axis='x', labelrotation=20)
    ax.set_title('Python scheduler vs elk designs%s'
                 % (' (quick: 2 layers)' if args.quick else ''))
    plt.tight_layout()
    figure = os.path.join(out, 'ablation.png')
    plt.savefig(figure)
    print('wrote', figure)
    return 0 if status == Elk.RunStatus.OK else 1


if __name__ == '__main__':
    sys.exit(main())
