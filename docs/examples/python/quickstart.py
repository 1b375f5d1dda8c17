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
import os
import sys

import elk_example

Elk = elk_example.import_elk()
plt, pd = elk_example.import_plotting()


def main():
    parser = elk_example.parse_args(__doc__)
    parser.add_argument('experiment', nargs='?',
                        default=elk_example.QUICKSTART)
    args = parser.parse_args()

    # The registry finds the plugins on ELK_PLUGIN_PATH (meson devenv sets
    # it to the build tree) and in the installed plugin folder.
    registry = elk_example.registry()
    experiment = Elk.Experiment.load(args.experiment, registry)
    status, df = elk_example.run(experiment, args.quick, args.output)
    if status != Elk.RunStatus.OK:
        print('some rows failed: see the error column of results.csv')

    out = experiment.get_output_dir()
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
