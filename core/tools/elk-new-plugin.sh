#!/bin/sh
# elk-new-plugin: writes a new out-of-tree elk plugin project that builds
# against the installed elk-1, loads, and passes its own test, in one
# command (docs/plugin-guide.md, "Starting a plugin").
#
#   elk-new-plugin KIND VENDOR:NAME [DIRECTORY]
#
# KIND is scheduler, allocator or chip.  VENDOR:NAME is the feature name
# experiments use (lowercase letters, digits and dashes on both sides, as
# in acme:lookahead); the vendor part keeps the plugin's names clear of
# elk's own.  DIRECTORY defaults to ./VENDOR-NAME and must not exist.
#
# The project is a meson project with the plugin source (a working,
# deliberately simple implementation to start from), a reference
# experiment and a test that runs it with elk-run:
#
#   meson setup build && meson compile -C build && meson test -C build
set -eu

usage () {
  echo "usage: elk-new-plugin scheduler|allocator|chip VENDOR:NAME [DIRECTORY]" >&2
  exit 1
}

[ $# -ge 2 ] && [ $# -le 3 ] || usage
kind=$1
feature=$2
case "$kind" in
  scheduler|allocator|chip) ;;
  *) echo "elk-new-plugin: unknown kind '$kind'; expected scheduler, allocator or chip" >&2; exit 1 ;;
esac
if ! printf '%s\n' "$feature" | grep -Eq '^[a-z][a-z0-9-]*:[a-z][a-z0-9-]*$'; then
  echo "elk-new-plugin: '$feature' is not a VENDOR:NAME feature name (lowercase letters, digits and dashes, e.g. acme:lookahead)" >&2
  exit 1
fi
case "$feature" in
  *--*|*-:*|*:-*|*-) echo "elk-new-plugin: '$feature' has an empty word between dashes" >&2; exit 1 ;;
esac

vendor=${feature%%:*}
name=${feature#*:}
base="$vendor-$name"                     # acme-lookahead
dir=${3:-$base}
if [ -e "$dir" ]; then
  echo "elk-new-plugin: '$dir' already exists; give a new directory" >&2
  exit 1
fi

# acme-lookahead -> acme_lookahead, AcmeLookahead, ACME_LOOKAHEAD.
snake=$(printf '%s' "$base" | tr '-' '_')
camel=$(printf '%s' "$base" | awk -F- '{ for (i = 1; i <= NF; i++)
  printf "%s%s", toupper (substr ($i, 1, 1)), substr ($i, 2) }')
upper=$(printf '%s' "$snake" | tr '[:lower:]' '[:upper:]')
case "$kind" in
  scheduler) Kind=Scheduler; KIND=SCHEDULER ;;
  allocator) Kind=Allocator; KIND=ALLOCATOR ;;
  chip) Kind=Chip; KIND=CHIP ;;
esac
lkind=$(printf '%s' "$Kind" | tr '[:upper:]' '[:lower:]')

mkdir -p "$dir"

# What differs for a chip: it embeds libelk's common chip properties
# (ElkChipProps) and numbers its own after them.
if [ "$kind" = chip ]; then
  chip_props_field='  ElkChipProps props;   /* the common chip properties */'
  prop_ids='  PROP_CHIP_PROPS,\
  PROP_KNOB = PROP_CHIP_PROPS + ELK_CHIP_PROPS_N_PROPERTIES,'
  set_common='\
  if (elk_chip_props_set_property (\&self->props, prop_id, value, pspec))\
    return;'
  get_common='\
  if (elk_chip_props_get_property (\&self->props, prop_id, value, pspec))\
    return;'
  install_common='\
  elk_chip_props_install (object_class, PROP_CHIP_PROPS, NULL);'
else
  chip_props_field=''
  prop_ids='  PROP_KNOB,'
  set_common=''
  get_common=''
  install_common=''
fi

# Fills the placeholders of a template read on standard input.
fill () {
  sed -e "s/@FEATURE@/$feature/g" -e "s/@BASE@/$base/g" \
      -e "s/@snake@/$snake/g" -e "s/@Camel@/$camel/g" -e "s/@UPPER@/$upper/g" \
      -e "s/@Kind@/$Kind/g" -e "s/@KIND@/$KIND/g" -e "s/@kind@/$lkind/g" \
      -e "s|@CHIP_PROPS_FIELD@|$chip_props_field|" \
      -e "s|@PROP_IDS@|$prop_ids|" \
      -e "s|@SET_COMMON@|$set_common|" -e "s|@GET_COMMON@|$get_common|" \
      -e "s|@INSTALL_COMMON@|$install_common|"
}

fill > "$dir/meson.build" <<'EOF'
# @FEATURE@: an out-of-tree elk @kind@ plugin.  It finds elk only through
# pkg-config (elk-1.pc), like any third-party plugin.
project('@BASE@', 'c',
  version: '0.1',
  meson_version: '>= 1.0',
  default_options: ['c_std=gnu11', 'warning_level=3'])

elk_dep = dependency('elk-1')

# Install next to elk's own plugins unless told otherwise.
plugindir = get_option('plugindir')
if plugindir == ''
  plugindir = elk_dep.get_variable(pkgconfig: 'plugindir')
endif

# The file name gives the entry symbol: libelk-@BASE@.so exports
# elk_plugin_@snake@_get_desc(), made by ELK_PLUGIN_DEFINE (@snake@, ...).
plugin = shared_module('elk-@BASE@', '@BASE@-@kind@.c',
  dependencies: elk_dep,
  c_args: ['-Wno-unused-parameter'],
  gnu_symbol_visibility: 'hidden',
  install: true,
  install_dir: plugindir)

# The test runs the reference experiment with the installed elk-run and
# this build's plugin, and fails if any row failed.
test('reference-experiment', find_program('check-experiment.sh'),
  args: [find_program('elk-run').full_path(),
         meson.current_source_dir() / '@BASE@.xml'],
  env: {'ELK_PLUGIN_PATH': meson.current_build_dir()},
  depends: plugin,
  timeout: 300)
EOF

cat > "$dir/meson_options.txt" <<'EOF'
option('plugindir', type: 'string', value: '', description: 'Where to install the plugin (default: elk-1 plugindir)')
EOF

cat > "$dir/check-experiment.sh" <<'EOF'
#!/bin/sh
# Runs the reference experiment and fails unless every row is "ok".
set -eu
elk_run=$1
experiment=$2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$elk_run" -q --no-report "$experiment" -o "$out"
python3 - "$out/results.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
bad = [r for r in rows if r['status'] != 'ok']
for r in rows:
    print('%-16s %-8s latency %s s, estimate %s s %s'
          % (r['label'], r['status'], r['latency_s'], r['estimate_s'],
             r['error']))
sys.exit(1 if bad or not rows else 0)
PY
EOF
chmod +x "$dir/check-experiment.sh"

# The reference experiment: two layers of Llama2-13B decode, the plugin
# next to one of elk's own designs.
case "$kind" in
  scheduler) components='  <chip name="analytic"/>
  <allocator name="cost-aware"/>
  <scheduler name="@FEATURE@" label="@BASE@"/>
  <scheduler name="basic" label="basic"/>' ;;
  allocator) components='  <chip name="analytic"/>
  <allocator name="@FEATURE@"/>
  <scheduler name="elk" label="elk-with-@BASE@"/>
  <scheduler name="elk" label="elk-with-cost-aware">
    <allocator name="cost-aware"/>
  </scheduler>' ;;
  chip) components='  <chip name="@FEATURE@"/>
  <allocator name="cost-aware"/>
  <scheduler name="basic" label="basic"/>
  <scheduler name="elk" label="elk-full"/>' ;;
esac
fill > "$dir/$base.xml" <<EOF
<?xml version="1.0" encoding="UTF-8"?>
<experiment format="1" name="@BASE@">
  <description>The reference experiment of @FEATURE@ (a @kind@ plugin):
    two layers of Llama2-13B decode, batch 32, KV length 2048.</description>
  <frontend name="llama">
    <param name="preset">llama2-13b-paper</param>
    <param name="layers">2</param>
    <param name="phase">decode</param>
    <param name="batch">32</param>
    <param name="seq">2048</param>
  </frontend>
$components
  <output dir="results/@BASE@"/>
</experiment>
EOF

# The plugin source: the GObject boilerplate every plugin needs, and a
# simple working body to replace with an idea of your own.
{
  fill <<'EOF'
/* @BASE@-@kind@.c: "@FEATURE@", an elk @kind@ plugin.
 *
 * Written by elk-new-plugin as a starting point: it works, passes its test
 * and is deliberately simple.  Keep the boilerplate (the type, the
 * properties, the registration) and replace the body marked below with
 * your own idea.  Only the public API is used (#include <elk/elk.h>), and
 * every name carries this project's prefix, never Elk
 * (docs/plugin-guide.md).
 */
#include <elk/elk.h>

#define @UPPER@_TYPE_@KIND@ (@snake@_@kind@_get_type ())
G_DECLARE_FINAL_TYPE (@Camel@@Kind@, @snake@_@kind@, @UPPER@, @KIND@, GObject)

struct _@Camel@@Kind@
{
  GObject parent_instance;
@CHIP_PROPS_FIELD@
  double knob;   /* an example property: see class_init */
};

enum
{
  PROP_0,
@PROP_IDS@
  N_PROPS
};

static GParamSpec *properties[N_PROPS];

EOF
  case "$kind" in
    scheduler) fill <<'EOF'
/* ---- the body: replace with your own scheduler -------------------- */

/* Every operator in turn: the allocator's plan for it alone (all of a
 * core's SRAM), its preload if it reads HBM, then its execution.  No
 * overlap at all, so every other design should beat it.  The program
 * records only decisions (plans, steps) and a prediction (the estimate);
 * chips price it from the plans (docs/plugin-guide.md, "The trust
 * model"). */
static ElkProgram *
@snake@_scheduler_schedule (ElkScheduler *scheduler,
                            const ElkPlanSet *plans,
                            ElkAllocator *allocator,
                            GError **error)
{
  @Camel@Scheduler *self = @UPPER@_SCHEDULER (scheduler);
  ElkGraph *graph = elk_plan_set_get_graph (plans);
  const ElkChipSpec *spec = elk_plan_set_get_spec (plans);
  g_autoptr (ElkProgram) program = elk_program_new (graph);
  double estimate = 0;

  for (guint i = 0; i < elk_graph_get_n_ops (graph); i++)
    {
      const ElkPlanTable *table = elk_plan_set_get_table (plans, i);
      ElkAllocRequest request = {
        .plans = plans,
        .exec_op = i,
        .sram_budget = elk_chip_spec_get_usable_sram (spec),
      };
      ElkAllocResult result = { 0 };
      ElkProgramOp *pop = elk_program_get_op (program, i);
      const ElkColdHot *entry;
      gboolean fits = FALSE;

      if (!elk_allocator_allocate (allocator, &request, &result, &fits,
                                   error))
        return NULL;
      if (!fits)
        {
          g_set_error (error, ELK_SCHEDULE_ERROR,
                       ELK_SCHEDULE_ERROR_DOES_NOT_FIT,
                       "@FEATURE@: operator '%s' fits no plan in %"
                       G_GUINT64_FORMAT " bytes per core",
                       elk_graph_get_op (graph, i)->name,
                       request.sram_budget);
          return NULL;
        }
      entry = &table->cold_hot[result.exec_entry];
      pop->exec_plan = table->plans[entry->hot_plan];
      pop->preload_plan = table->plans[entry->cold_plan];
      pop->est_exec_s = entry->exec_s;
      pop->est_warmup_s = entry->warmup_s;
      if (table->hbm_bytes > 0)
        {
          pop->est_load_s = elk_chip_spec_get_load_time (
            spec, table->hbm_bytes, entry->cold_bytes, pop->preload_share,
            NULL);
          elk_program_add_preload (program, i);
          estimate += pop->est_load_s;
        }
      elk_program_add_execute (program, i);
      estimate += self->knob * (entry->exec_s + entry->warmup_s);
    }
  elk_program_set_estimate (program, estimate);
  return g_steal_pointer (&program);
}

/* ---- end of the body ------------------------------------------------ */

/* The type: a GObject implementing ElkScheduler with that function. */
ELK_DEFINE_SCHEDULER (@Camel@Scheduler, @snake@_scheduler,
                      @snake@_scheduler_schedule)

EOF
    ;;
    allocator) fill <<'EOF'
/* ---- the body: replace with your own allocator -------------------- */

/* Every preloaded operator keeps its fixed entry or takes its smallest
 * preload state; the executing operator takes its fastest entry in what
 * is left (scaled by the knob, so the property has an effect).  Keep no
 * state in the object: schedulers call one allocator from several
 * threads. */
static gboolean
@snake@_allocator_allocate (ElkAllocator *allocator,
                            const ElkAllocRequest *request,
                            ElkAllocResult *result,
                            GError **error)
{
  @Camel@Allocator *self = @UPPER@_ALLOCATOR (allocator);
  const ElkPlanTable *exec = elk_plan_set_get_table (request->plans,
                                                     request->exec_op);
  guint64 used = 0, room;
  gint best = -1;

  for (guint j = 0; j < request->n_preloaded; j++)
    {
      const ElkPlanTable *t = elk_plan_set_get_table (request->plans,
                                                      request->preloaded[j]);
      gint32 fixed = request->preloaded_fixed != NULL
                       ? request->preloaded_fixed[j] : -1;
      guint32 pick = fixed >= 0 ? (guint32) fixed : 0;

      for (guint e = 0; e < t->n_cold_hot; e++)
        {
          const ElkColdHot *ch = &t->cold_hot[e];
          /* A fixed operator may only change its preload state, keeping
           * its execute plan. */
          if (fixed >= 0 && ch->hot_plan != t->cold_hot[fixed].hot_plan)
            continue;
          if (ch->cold_bytes < t->cold_hot[pick].cold_bytes)
            pick = e;
        }
      result->preload_entries[j] = pick;
      used += t->cold_hot[pick].cold_bytes;
    }
  if (used > request->sram_budget)
    return FALSE;   /* nothing fits: not an error */
  room = request->sram_budget - used;
  for (guint e = 0; e < exec->n_cold_hot; e++)
    {
      const ElkColdHot *ch = &exec->cold_hot[e];
      if (request->exec_fixed && e != request->exec_entry)
        continue;
      if (ch->hot_bytes > room)
        continue;
      if (best < 0 || ch->exec_s + ch->warmup_s
                        < exec->cold_hot[best].exec_s
                            + exec->cold_hot[best].warmup_s)
        best = (gint) e;
    }
  if (best < 0)
    return FALSE;
  result->exec_entry = (guint32) best;
  result->exec_s = exec->cold_hot[best].exec_s;
  result->warmup_s = exec->cold_hot[best].warmup_s;
  result->penalty_s = 0;
  result->cost_s = self->knob * (result->exec_s + result->warmup_s);
  result->bytes = used + exec->cold_hot[best].hot_bytes;
  return TRUE;
}

/* ---- end of the body ------------------------------------------------ */

/* The type: a GObject implementing ElkAllocator with that function. */
ELK_DEFINE_ALLOCATOR (@Camel@Allocator, @snake@_allocator,
                      @snake@_allocator_allocate)

EOF
    ;;
    chip) fill <<'EOF'
/* ---- the body: replace with your own chip model -------------------- */

/* The machine: the common chip properties (an IPU-POD4 by default), with
 * the HBM bandwidth scaled by the knob. */
static ElkChipSpec *
@snake@_chip_dup_spec (ElkChip *chip, GError **error)
{
  @Camel@Chip *self = @UPPER@_CHIP (chip);
  ElkChipSpec *spec = elk_chip_spec_new_ipu_pod4 ();

  g_free (spec->name);
  spec->name = g_strdup ("@FEATURE@");
  /* The common properties (cores, SRAM, bandwidths, ...): one set of
   * names, ranges and defaults for every chip, from libelk. */
  elk_chip_props_fill_spec (&self->props, spec);
  spec->hbm_bw *= self->knob;
  return spec;
}

/* A serial model: every preload and every execution one after another,
 * nothing overlapped.  Every cost comes from elk_program_derive(), the
 * one derivation of a program's costs from its plans, so a scheduler
 * cannot bend this chip's measurement with what it declares. */
static ElkMetrics *
@snake@_chip_run (ElkChip *chip,
                  ElkProgram *program,
                  const ElkPlanSet *plans,
                  GError **error)
{
  ElkGraph *graph = elk_program_get_graph (program);
  g_autofree ElkOpCost *costs = elk_program_derive (program, plans, error);
  ElkMetrics *metrics;
  double load = 0, exec = 0, hbm = 0, noc = 0;

  if (costs == NULL)
    return NULL;
  for (guint i = 0; i < elk_graph_get_n_ops (graph); i++)
    {
      load += costs[i].load_s;
      exec += costs[i].exec_s + costs[i].warmup_s;
      hbm += (double) costs[i].hbm_bytes;
      noc += costs[i].noc_bytes + costs[i].warmup_noc_bytes;
    }
  metrics = elk_metrics_new ("@FEATURE@: serial model (no overlap), "
                             "costs from elk_program_derive");
  metrics->latency_s = load + exec;
  metrics->flops = elk_graph_get_total_flops (graph);
  metrics->hbm_bytes = hbm;
  metrics->noc_bytes = noc;
  metrics->hbm_util = hbm / elk_plan_set_get_spec (plans)->hbm_bw
                      / metrics->latency_s;
  metrics->achieved_flops = metrics->flops / metrics->latency_s;
  metrics->preload_only_s = load;
  metrics->execute_only_s = exec;
  return metrics;
}

/* ---- end of the body ------------------------------------------------ */

/* The type: a GObject implementing ElkChip with those functions (NULL: no
 * run_traced, so experiments that ask for traces refuse this chip). */
ELK_DEFINE_CHIP (@Camel@Chip, @snake@_chip, @snake@_chip_dup_spec,
                 @snake@_chip_run, NULL)

EOF
    ;;
  esac
  fill <<'EOF'
static void
@snake@_@kind@_set_property (GObject *object,
                            guint prop_id,
                            const GValue *value,
                            GParamSpec *pspec)
{
  @Camel@@Kind@ *self = @UPPER@_@KIND@ (object);
@SET_COMMON@
  switch (prop_id)
    {
    case PROP_KNOB:
      self->knob = g_value_get_double (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
@snake@_@kind@_get_property (GObject *object,
                            guint prop_id,
                            GValue *value,
                            GParamSpec *pspec)
{
  @Camel@@Kind@ *self = @UPPER@_@KIND@ (object);
@GET_COMMON@
  switch (prop_id)
    {
    case PROP_KNOB:
      g_value_set_double (value, self->knob);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
@snake@_@kind@_class_init (@Camel@@Kind@Class *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);

  object_class->set_property = @snake@_@kind@_set_property;
  object_class->get_property = @snake@_@kind@_get_property;
@INSTALL_COMMON@
  /* Every tunable is a property with a range, a default and a blurb: the
   * experiment's <param name="knob"> and elk-inspect come from it. */
  properties[PROP_KNOB] = g_param_spec_double (
    "knob", NULL, "An example parameter: a scale factor", 0.01, 100, 1.0,
    G_PARAM_READWRITE | G_PARAM_CONSTRUCT | G_PARAM_STATIC_STRINGS);
  g_object_class_install_property (object_class, PROP_KNOB,
                                   properties[PROP_KNOB]);
}

static gboolean
@snake@_register (ElkPlugin *plugin, GError **error)
{
  return elk_plugin_add_feature (plugin, ELK_TYPE_@KIND@, "@FEATURE@",
                                 @UPPER@_TYPE_@KIND@, error);
}

ELK_PLUGIN_DEFINE (@snake@, "@FEATURE@ (written by elk-new-plugin)", "0.1",
                   @snake@_register)
EOF
} > "$dir/$base-$kind.c"

fill > "$dir/README.md" <<'EOF'
# @FEATURE@

An elk @kind@ plugin, started with `elk-new-plugin @kind@ @FEATURE@`.

```sh
meson setup build && meson compile -C build && meson test -C build -v
ELK_PLUGIN_PATH=$PWD/build elk-inspect @FEATURE@
ELK_PLUGIN_PATH=$PWD/build elk-run @BASE@.xml -o results
```

Replace the body marked in `@BASE@-@kind@.c` with your own idea; the
plugin guide (docs/plugin-guide.md in elk) explains the interface, the
trust model and `elk-check-plugin`, which checks a scheduler or allocator
on every chip.
EOF

echo "elk-new-plugin: wrote $dir (feature '$feature', module libelk-$base.so)"
echo "  cd $dir && meson setup build && meson compile -C build && meson test -C build"
