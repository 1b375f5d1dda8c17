# PyGObject overrides for the Elk namespace (issue 23).
#
# PyGObject imports this module whenever a program imports
# gi.repository.Elk, before any class of the program is defined.  It makes
# a Python plugin fail the way a C plugin does: a Python class that
# implements Elk.Scheduler, Elk.Allocator, Elk.Frontend or Elk.Chip gets
# its do_* virtual methods wrapped when the class is created, so that
#
#  - an exception they raise becomes the GError a C plugin would return
#    (ElkPluginError FAILED, naming the implementation type, the virtual
#    method, the exception's type and message and where it was raised),
#    instead of a traceback on stderr and a NULL or FALSE that says nothing
#    (for allocate(), FALSE without an error would even mean "nothing
#    fits" and silently change the schedule);
#  - returning None, which is what a Python function that forgets its
#    return statement does, is a contract error (ElkPluginError CONTRACT)
#    naming the type and the virtual method;
#  - a GLib.Error the method raises itself reaches the caller unchanged.
#
# The author does nothing: the wrapping happens in __init_subclass__ of
# the interface, which Python runs while the class statement executes and
# before PyGObject hooks the do_* methods into the GType's vtable.  With
# G_MESSAGES_DEBUG set to "all" or containing "elk-python", the full
# traceback is also printed on stderr.
#
# Installed into the gi/overrides folder of the Python that imports gi
# (bindings/python/meson.build); tests and examples find it in the source
# tree through PYTHONPATH (tests/python/meson.build).
import functools
import os
import re
import sys
import traceback

from ..module import get_introspection_module
from ..overrides import override
from gi.repository import GLib

Elk = get_introspection_module('Elk')

__all__ = []

# GITypeTag of a gboolean return value.
_TAG_BOOLEAN = 'gboolean'


def _exception_name(exc):
    cls = type(exc)
    if cls.__module__ in ('builtins', '__main__'):
        return cls.__qualname__
    return '%s.%s' % (cls.__module__, cls.__qualname__)


def _where(exc):
    """'file.py:LINE' of the innermost frame the exception went through."""
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return None
    last = frames[-1]
    return '%s:%d' % (os.path.basename(last.filename), last.lineno)


def _debugging():
    domains = os.environ.get('G_MESSAGES_DEBUG', '').replace(',', ' ').split()
    return 'all' in domains or 'elk-python' in domains


def _wrap(func, vfunc_name, returns_boolean):
    """Wraps one do_* method of a Python plugin class (see the top)."""
    @functools.wraps(func)
    def wrapper(self, *args):
        type_name = type(self).__gtype__.name
        try:
            ret = func(self, *args)
        except GLib.Error:
            raise
        except Exception as e:
            if _debugging():
                traceback.print_exc(file=sys.stderr)
            where = _where(e)
            raise GLib.Error.new_literal(
                Elk.Plugin.error_quark(),
                '%s: %s() raised %s%s: %s' % (
                    type_name, vfunc_name, _exception_name(e),
                    ' at ' + where if where else '', e),
                Elk.PluginError.FAILED)
        if ret is None:
            hint = (': return True with the result filled in, or False '
                    'when nothing fits' if returns_boolean else '')
            raise GLib.Error.new_literal(
                Elk.Plugin.error_quark(),
                '%s: %s() returned None without an error%s' % (
                    type_name, vfunc_name, hint),
                Elk.PluginError.CONTRACT)
        return ret
    wrapper._elk_checked = True
    return wrapper


def _snake(name):
    return re.sub(r'(?<!^)(?=[A-Z])', '_', name).lower()


def _check_vfuncs(cls, iface):
    """Wraps the do_* methods @cls defines for the virtual methods of
    @iface, under either name PyGObject accepts (do_NAME and
    do_TYPENAME_NAME)."""
    prefix = _snake(iface.__info__.get_type_name())
    for vfunc in iface.__info__.get_vfuncs():
        name = vfunc.get_name()
        returns_boolean = (vfunc.get_return_type().get_tag_as_string()
                           == _TAG_BOOLEAN)
        for attr in ('do_' + name, 'do_%s_%s' % (prefix, name)):
            func = cls.__dict__.get(attr)
            if callable(func) and not getattr(func, '_elk_checked', False):
                setattr(cls, attr, _wrap(func, name, returns_boolean))


def _checked(iface):
    """An override of the interface @iface whose implementations get their
    do_* methods wrapped as they are defined."""
    def __init_subclass__(cls, **kwargs):
        super(checked, cls).__init_subclass__(**kwargs)
        _check_vfuncs(cls, iface)

    checked = type(iface)(iface.__name__, (iface,), {
        '__module__': __name__,
        '__init_subclass__': classmethod(__init_subclass__),
    })
    return override(checked)


Scheduler = _checked(Elk.Scheduler)
Allocator = _checked(Elk.Allocator)
Frontend = _checked(Elk.Frontend)
Chip = _checked(Elk.Chip)
__all__ += ['Scheduler', 'Allocator', 'Frontend', 'Chip']
