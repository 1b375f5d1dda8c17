#!/usr/bin/env python3
"""Run elk's quickstart experiment from Python, load the results into
pandas and plot them with matplotlib.

    meson devenv -C build -w "$PWD" \
        python3 docs/examples/python/quickstart.py [--quick] [-o DIR]

experiments/quickstart.xml compares the five designs of the Elk paper on
one Llama2-13B decode point (batch 32, KV length 2048) on the analytic
IPU-POD4 chip.  --quick runs the same experiment shrunk to 2 of the 40
layers (Elk.Experiment.set_quick, as `elk-run --quick` does), which takes
seconds instead of minutes; meson test runs it that way, so its figures
are for 2 layers, not the model.  Needs python3-gi, python3-pandas and
python3-matplotlib (Debian); exits with status 77 (skipped, for meson)
and a message when one of them is missing.
"""
import argparse
import os
import sys

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
    matplotlib.use('Agg')   # no display needed: the plot goes to a file
    import matplotlib.pyplot as plt
    import pandas as pd
except ImportError as e:
    print('skipped: this example needs python3-pandas and '
          'python3-matplotlib: %s' % e)
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
QUICKSTART = os.path.join(HERE, '..', '..', '..', 'experiments',
                          'quickstart.xml')


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('experiment', nargs='?', default=QUICKSTART)
    parser.add_argument('-o', '--output', help='results folder (default: '
                        "the experiment's <output dir>)")
    parser.add_argument('--quick', action='store_true',
                        help='2 layers instead of the whole model')
    args = parser.parse_args()

    # The registry finds the plugins on ELK_PLUGIN_PATH (meson devenv sets
    # it to the build tree) and in the installed plugin folder.
    registry = Elk.Registry.new()
    registry.add_default_paths()
    registry.scan()
    experiment = Elk.Experiment.load(args.experiment, registry)
    if args.quick:
        experiment.set_quick()
    if args.output:
        experiment.set_output_dir(args.output)

    def progress(exp, done, total, point, status, wall_s):
        print('[%d/%d] point %d %s in %.2f s' % (
            done, total, point, 'done' if status == Elk.RunStatus.OK
            else 'FAILED', wall_s), flush=True)

    ok, status = experiment.run_with_progress(None, progress)
    if status != Elk.RunStatus.OK:
        print('some rows failed: see the error column of results.csv')

    out = experiment.get_output_dir()
    df = pd.read_csv(os.path.join(out, 'results.csv'))
    df['latency_ms'] = df['latency_s'] * 1e3
    df['vs_ideal'] = df['latency_s'] / df['ideal_s']
    print(df[['label', 'status', 'latency_ms', 'vs_ideal', 'stall_s',
              'n_orders']].to_string(index=False))

    # One bar per design, the non-overlapped preload, execution, overlap
    # and stall stacked as in the paper's Fig 18a.
    parts = ['preload_only_s', 'execute_only_s', 'overlap_s', 'stall_s']
    ok_rows = df[df['status'] == 'ok'].set_index('label')
    ax = (ok_rows[parts] * 1e3).plot.bar(stacked=True, figsize=(6, 4))
    ax.legend(['preload only', 'execute only', 'overlap', 'stall'],
              fontsize='small', loc='lower right')
    ax.tick_params(axis='x', labelrotation=0)
    ax.set_ylabel('ms')
    ax.set_xlabel('design')
    ax.set_title('%s: %s %s, batch %d, seq %d%s' % (
        experiment.get_name(), df['model'][0], df['phase'][0],
        df['batch'][0], df['seq'][0], ' (quick)' if args.quick else ''))
    plt.tight_layout()
    figure = os.path.join(out, 'quickstart-breakdown.png')
    plt.savefig(figure)
    print('wrote', figure)
    return 0 if status == Elk.RunStatus.OK else 1


if __name__ == '__main__':
    sys.exit(main())
