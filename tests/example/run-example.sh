#!/bin/sh
# Builds the out-of-tree example plugins (docs/examples/greedy-lookahead,
# a scheduler, and docs/examples/keep-preloads, an allocator) against a
# staged install of this build, the way a third party would against an
# installed elk, and runs their own tests (which run their reference
# experiments with the staged elk-run).
#
#   run-example.sh BUILD_DIR EXAMPLES_DIR PREFIX LIBDIR BINDIR
set -eu
build=$1
examples=$2
prefix=$3
libdir=$4
bindir=$5

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
stage=$work/stage

meson install -C "$build" --destdir "$stage" --no-rebuild --quiet

# Nothing private may be installed.
if [ -e "$stage$prefix/include/elk-1/elk/elk-private.h" ]; then
  echo "a private header was installed"; exit 1
fi
[ -f "$stage$prefix/$libdir/pkgconfig/elk-1.pc" ] || { echo "no elk-1.pc"; exit 1; }

# Installed tools find libelk in their own prefix, whatever it is.
for tool in elk-run elk-inspect elk-check-plugin; do
  readelf -d "$stage$prefix/$bindir/$tool" | grep -q "RUNPATH.*\[$prefix/$libdir\]" || {
    echo "$tool: no run path to $prefix/$libdir"; readelf -d "$stage$prefix/$bindir/$tool" | grep -i path; exit 1; }
done
# The .pc file names only the installed headers.
if grep -q "^Cflags:.*-I[^$]*\(core\|build\|plugins\)" "$stage$prefix/$libdir/pkgconfig/elk-1.pc"; then
  echo "elk-1.pc leaks a source or build include path"; exit 1
fi

# A copy of elk-1.pc whose prefix points into the stage, the way a
# relocated install would look; GLib's own .pc files stay untouched.
mkdir -p "$work/pkgconfig"
sed "s|^prefix=.*|prefix=$stage$prefix|" "$stage$prefix/$libdir/pkgconfig/elk-1.pc" \
  > "$work/pkgconfig/elk-1.pc"
export PKG_CONFIG_PATH="$work/pkgconfig"
export LD_LIBRARY_PATH="$stage$prefix/$libdir"
export ELK_PLUGIN_SYSTEM_PATH="$stage$prefix/$libdir/elk-1/plugins"
export PATH="$stage$prefix/$bindir:$PATH"
unset ELK_PLUGIN_PATH

plugindir=$(pkg-config --variable=plugindir elk-1)
case "$plugindir" in
  */elk-1/plugins) ;;
  *) echo "unexpected plugindir '$plugindir'"; exit 1 ;;
esac

# Each example: its kind and feature.  It builds without a warning at
# warning_level=3, passes its own test, and a third party checks it with
# the installed elk-check-plugin (issue 16): valid, deterministic programs
# on every shipped chip.
for example in scheduler:greedy-lookahead allocator:keep-preloads; do
  kind=${example%%:*}
  name=${example#*:}
  dir="$work/build-$name"
  meson setup "$dir" "$examples/$name" >"$work/setup.log" 2>&1 || { cat "$work/setup.log"; exit 1; }
  meson compile -C "$dir" >"$work/compile.log" 2>&1 || { cat "$work/compile.log"; exit 1; }
  if grep -q "warning:" "$work/compile.log"; then
    echo "$name: compiler warnings"; cat "$work/compile.log"; exit 1
  fi
  meson test -C "$dir" --print-errorlogs --verbose
  elk-check-plugin --plugin-path "$dir" "$kind" "example:$name"
done

# elk-new-plugin: each kind of plugin it writes builds against the staged
# elk with warnings as errors, loads, and passes its own test; bad
# arguments are refused.
for kind in scheduler allocator chip; do
  new="$work/new-$kind"
  elk-new-plugin "$kind" "scaffold:test-$kind" "$new" >/dev/null
  meson setup "$new/build" "$new" -Dwerror=true >"$work/new.log" 2>&1 || { cat "$work/new.log"; exit 1; }
  meson compile -C "$new/build" >"$work/new.log" 2>&1 || { cat "$work/new.log"; exit 1; }
  meson test -C "$new/build" --print-errorlogs --verbose
done
for bad in "bogus x:y" "chip Bad" "chip a:b- " "chip scaffold:test-chip $work/new-chip"; do
  # shellcheck disable=SC2086
  if elk-new-plugin $bad >/dev/null 2>"$work/new.err"; then
    echo "elk-new-plugin accepted '$bad'"; exit 1
  fi
  grep -q "elk-new-plugin: " "$work/new.err" || { echo "no message for '$bad'"; exit 1; }
done
