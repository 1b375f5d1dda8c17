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
import os
import sys
import xml.etree.ElementTree as ET

import elk_example

Elk = elk_example.import_elk()
plt, pd = elk_example.import_plotting()
import double_buffer  # noqa: E402


def main():
    args = elk_example.parse_args(
        __doc__, 'results/python-ablation').parse_args()

    registry = elk_example.registry(double_buffer.register)
    # The experiment, built in code: the quickstart file with one more
    # design.
    experiment = elk_example.quickstart_with(
        registry, 'python-ablation',
        [ET.Element('scheduler', name='py-double-buffer',
                    label='py-double-buffer')])
    status, df = elk_example.run(experiment, args.quick, args.output)
    if elk_example.report_failed(df):
        return 1
    full = df.set_index('label')['latency_s']['elk-full']
    df['latency_ms'] = df['latency_s'] * 1e3
    df['vs_elk_full'] = df['latency_s'] / full
    print(df[['label', 'latency_ms', 'vs_elk_full', 'estimate_s', 'stall_s',
              'preload_only_s']].to_string(index=False))
    elk_example.bar_chart(
        plt, df, 'latency_ms', 'latency (ms)',
        'Python scheduler vs elk designs%s'
        % (' (quick: 2 layers)' if args.quick else ''),
        os.path.join(experiment.get_output_dir(), 'ablation.png'))
    return 0 if status == Elk.RunStatus.OK else 1


if __name__ == '__main__':
    sys.exit(main())
