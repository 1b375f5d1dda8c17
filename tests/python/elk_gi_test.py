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
    features each function of @register adds."""
    from gi.repository import Elk
    reg = Elk.Registry.new()
    reg.add_default_paths()
    reg.scan()
    for add in register:
        add(reg)
    return reg


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
