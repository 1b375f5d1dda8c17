"""The set-up every Python test of tests/python shares.

Each test script starts with

    import elk_gi_test
    Elk, GLib, GObject = elk_gi_test.import_elk(needs='...')

which prints a TAP skip and exits when python3-gi or the Elk-1.0 typelib
is missing, or (when meson passes --without-plugins) the plugins named
by @needs are not built; and ends with elk_gi_test.run_tap(), which runs
its test functions and prints TAP.  meson runs the scripts with
PYTHONPATH, GI_TYPELIB_PATH, LD_LIBRARY_PATH and ELK_PLUGIN_PATH pointing
at the source and build trees (tests/python/meson.build).
"""
import contextlib
import os
import shutil
import sys
import tempfile

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..',
                        '..', 'docs', 'examples', 'python')


def _skip(reason):
    print('1..0 # SKIP %s' % reason)
    sys.exit(0)


def import_elk(needs=None):
    """Returns (Elk, GLib, GObject), or skips the whole script."""
    try:
        import gi
        gi.require_version
    except (ImportError, AttributeError):
        _skip('python3-gi is not installed (Debian: python3-gi)')
    try:
        gi.require_version('Elk', '1.0')
        from gi.repository import Elk, GLib, GObject
    except (ValueError, ImportError) as e:
        _skip('the Elk-1.0 typelib is not on GI_TYPELIB_PATH (built with '
              '-Dintrospection=disabled?): %s' % e)
    if Elk.Scheduler.__module__ != 'gi.overrides.Elk':
        # Not a skip: without the overrides Python plugins fail silently.
        print('Bail out! the Elk overrides (bindings/python/gi/overrides) '
              'are not on PYTHONPATH')
        sys.exit(1)
    if needs and '--without-plugins' in sys.argv[1:]:
        _skip('%s is not built' % needs)
    if EXAMPLES not in sys.path:
        sys.path.insert(0, EXAMPLES)
    return Elk, GLib, GObject


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def registry(*register):
    """A registry of the plugins on ELK_PLUGIN_PATH, plus the run-time
    features each function of @register adds (as the examples make it)."""
    import elk_example
    return elk_example.registry(*register)


def run_one_layer(reg, folder, name, designs, allocator=None):
    """Runs the <scheduler> elements of @designs (XML text) on one
    Llama2-13B decode layer (batch 8, KV length 512) on the analytic chip,
    with @allocator as the default allocator if given, into
    @folder/@name; returns the run status and the rows by label."""
    import csv
    from gi.repository import Elk
    xml = ['<?xml version="1.0"?>',
           '<experiment format="1" name="%s">' % name,
           '<frontend name="llama">',
           '<param name="preset">llama2-13b-paper</param>',
           '<param name="phase">decode</param>',
           '<param name="batch">8</param><param name="seq">512</param>',
           '<param name="layers">1</param></frontend>',
           '<chip name="analytic"/>']
    if allocator:
        xml.append('<allocator name="%s"/>' % allocator)
    xml += list(designs) + ['<output dir="%s"/>' % name, '</experiment>']
    experiment = Elk.Experiment.load_from_data(
        '\n'.join(xml).encode(), os.path.join(folder, name + '.xml'), reg)
    ok, status = experiment.run_with_progress(None, None)
    check(ok, 'the run wrote its results')
    with open(os.path.join(folder, name, 'results.csv'), newline='') as f:
        return status, {r['label']: r for r in csv.DictReader(f)}


@contextlib.contextmanager
def temp_folder():
    folder = tempfile.mkdtemp(prefix='elk-python-')
    try:
        yield folder
    finally:
        shutil.rmtree(folder)


def run_tap(prefix, tests, *args):
    """Runs each (name, function[, skip reason]) of @tests with @args and
    prints TAP; returns the exit status (1 if one failed)."""
    from gi.repository import GLib
    print('1..%d' % len(tests))
    failed = 0
    for i, (name, func, *skip) in enumerate(tests, 1):
        if skip and skip[0]:
            print('ok %d %s/%s # SKIP %s' % (i, prefix, name, skip[0]))
            continue
        try:
            func(*args)
            print('ok %d %s/%s' % (i, prefix, name))
        except (AssertionError, GLib.Error) as e:
            failed += 1
            print('not ok %d %s/%s' % (i, prefix, name))
            print('# %s: %s' % (type(e).__name__, e))
    return 1 if failed else 0
