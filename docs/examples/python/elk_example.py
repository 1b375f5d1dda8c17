"""What the examples of docs/examples/python share: importing elk and the
plotting libraries (or exiting with status 77, "skipped", and a message
when one is missing), a registry, the quickstart experiment extended in
code, running it with a progress line per point, and a bar chart.
"""
import os
import sys
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
QUICKSTART = os.path.join(HERE, '..', '..', '..', 'experiments',
                          'quickstart.xml')


def import_elk():
    """Returns the Elk module, or exits with status 77."""
    try:
        import gi
        gi.require_version('Elk', '1.0')
        from gi.repository import Elk
    except (ImportError, ValueError, AttributeError) as e:
        print('skipped: PyGObject (python3-gi) or the Elk-1.0 typelib is '
              'missing: %s' % e)
        sys.exit(77)
    return Elk


def import_plotting():
    """Returns (matplotlib.pyplot, pandas), or exits with status 77."""
    try:
        import matplotlib
        matplotlib.use('Agg')   # no display needed: plots go to files
        import matplotlib.pyplot as plt
        import pandas as pd
    except ImportError as e:
        print('skipped: this example needs python3-pandas and '
              'python3-matplotlib: %s' % e)
        sys.exit(77)
    return plt, pd


def parse_args(doc, default_output=None):
    """The examples' command line: --quick and -o DIR."""
    import argparse
    parser = argparse.ArgumentParser(description=doc.split('\n')[0])
    parser.add_argument('-o', '--output', default=default_output,
                        help='results folder')
    parser.add_argument('--quick', action='store_true',
                        help='2 layers instead of the whole model')
    return parser


def report_failed(df, columns=('label', 'error')):
    """Prints the failed rows of @df; returns whether there were any."""
    failed = df[df['status'] != 'ok']
    if len(failed):
        print(failed[list(columns)].to_string(index=False))
    return len(failed) > 0


def registry(*register):
    """The plugins on ELK_PLUGIN_PATH (meson devenv sets it to the build
    tree) and in the installed plugin folder, plus the run-time features
    each function of @register adds."""
    from gi.repository import Elk
    reg = Elk.Registry.new()
    reg.add_default_paths()
    reg.scan()
    for add in register:
        add(reg)
    return reg


def quickstart_with(reg, name, designs=(), keep_designs=True, sweep=None):
    """experiments/quickstart.xml built in code: renamed @name, with each
    ElementTree <scheduler> element of @designs added after its last
    scheduler (the schema wants them together), its own five designs
    dropped unless @keep_designs, and a <sweep> of the axes of @sweep (a
    dict: parameter to list of values)."""
    from gi.repository import Elk
    root = ET.parse(QUICKSTART).getroot()
    root.set('name', name)
    last = max(i for i, el in enumerate(root) if el.tag == 'scheduler')
    for k, design in enumerate(designs, 1):
        root.insert(last + k, design)
    if not keep_designs:
        for el in list(root)[:last + 1]:
            if el.tag == 'scheduler':
                root.remove(el)
    if sweep:
        axes = ET.Element('sweep')
        for param, values in sweep.items():
            ET.SubElement(axes, 'axis', param=param,
                          values=' '.join(str(v) for v in values))
        root.insert(list(root).index(root.find('output')), axes)
    data = ET.tostring(root, encoding='utf-8', xml_declaration=True)
    return Elk.Experiment.load_from_data(data, QUICKSTART, reg)


def run(experiment, quick=False, output=None, options=None):
    """Runs @experiment (2 layers with @quick, into @output if given)
    with a progress line per point; returns (status, rows as a pandas
    data frame)."""
    from gi.repository import Elk
    import pandas as pd
    if quick:
        experiment.set_quick()
    if output:
        experiment.set_output_dir(os.path.abspath(output))

    def progress(exp, done, total, point, status, wall_s):
        print('[%d/%d] point %d %s in %.2f s' % (
            done, total, point, 'done' if status == Elk.RunStatus.OK
            else 'FAILED', wall_s), flush=True)

    _, status = experiment.run_with_progress(options, progress)
    out = experiment.get_output_dir()
    return status, pd.read_csv(os.path.join(out, 'results.csv'))


def bar_chart(plt, df, y, ylabel, title, path):
    """One bar of @y per design (the label column), saved to @path."""
    ax = df.plot.bar(x='label', y=y, legend=False, figsize=(6, 4))
    ax.set_ylabel(ylabel)
    ax.set_xlabel('design')
    ax.tick_params(axis='x', labelrotation=20)
    ax.set_title(title)
    plt.tight_layout()
    plt.savefig(path)
    plt.close(ax.figure)
    print('wrote', path)
