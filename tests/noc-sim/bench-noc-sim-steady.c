/* bench-noc-sim-steady.c: what steady-state layer extrapolation buys on a
 * whole model.
 *
 * Llama2-70B decode (batch 32, KV length 2048, the paper's graph) on the
 * noc-sim chip of experiments/fig19.xml at 16 TB/s (4 chips of 1472
 * cores), compiled by basic and elk-full: the simulation of the whole
 * model (80 layers) and of its first 8 layers, one after the other in this
 * process so that the load on the machine is shared by both, with
 * steady-state extrapolation on (the default).  Prints the wall time of
 * each simulation (not of the compilation), their ratio and the
 * latencies, and fails when the whole model takes more than 2.5 times the
 * 8 layers' wall time (issue 20's target; 12x without extrapolation) or
 * when its latency does not scale with the layers (more than 8 times the
 * 8 layers').  Arguments pick the topologies (all-to-all, mesh; both
 * by default); with --check the whole model is also simulated with
 * steady-state = off, and the run fails unless its latency, HBM and NoC
 * utilisation equal the extrapolated ones to 1e-9. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <elk/elk.h>

static GObject *
make (ElkRegistry *registry, GType kind, const char *name)
{
  g_autoptr (GError) error = NULL;
  const ElkFeature *f = elk_registry_find (registry, kind, name, &error);

  if (f == NULL)
    {
      g_printerr ("bench-noc-sim-steady: %s\n", error->message);
      exit (77);
    }
  return g_object_new (f->type, NULL);
}

static void
set_param (GObject *obj, const char *name, const char *value)
{
  g_autoptr (GError) error = NULL;
  GValue v = G_VALUE_INIT;

  if (!elk_param_parse (G_OBJECT_TYPE (obj), name, value, NULL, &v, &error))
    g_error ("%s", error->message);
  g_object_set_property (obj, name, &v);
  g_value_unset (&v);
}

static ElkGraph *
llama2_70b (ElkRegistry *registry, guint layers)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GObject) fe = make (registry, ELK_TYPE_FRONTEND, "llama");
  g_autofree char *n = g_strdup_printf ("%u", layers);
  ElkGraph *g;

  set_param (fe, "preset", "llama2-70b-paper");
  set_param (fe, "phase", "decode");
  set_param (fe, "batch", "32");
  set_param (fe, "seq", "2048");
  set_param (fe, "layers", n);
  g = elk_frontend_load (ELK_FRONTEND (fe), &error);
  g_assert_no_error (error);
  return g;
}

/* Compiles @g for @chip with @design and runs it; returns the simulation's
 * wall time, the metrics into @metrics and the chip's description of the
 * run's path into @model. */
static double
compile_and_run (ElkRegistry *registry,
                 GObject *chip,
                 ElkGraph *g,
                 const char *design,
                 ElkMetrics **metrics,
                 char **model)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GObject) sched = make (registry, ELK_TYPE_SCHEDULER, design);
  g_autoptr (GObject) alloc
      = make (registry, ELK_TYPE_ALLOCATOR, "reservation");
  g_autoptr (ElkChipSpec) spec = elk_chip_dup_spec (ELK_CHIP (chip), &error);
  g_autoptr (ElkPlanSet) plans = NULL;
  g_autoptr (ElkProgram) program = NULL;
  ElkMetrics *m;
  gint64 t0;
  double wall;

  g_assert_no_error (error);
  if (g_str_equal (design, "elk"))
    set_param (sched, "order-search", "full");
  plans = elk_plan_set_new (g, spec, NULL, &error);
  g_assert_no_error (error);
  program = elk_scheduler_schedule (ELK_SCHEDULER (sched), plans,
                                    ELK_ALLOCATOR (alloc), &error);
  g_assert_no_error (error);
  t0 = g_get_monotonic_time ();
  m = elk_chip_run (ELK_CHIP (chip), program, plans, &error);
  wall = (g_get_monotonic_time () - t0) / 1e6;
  g_assert_no_error (error);
  *metrics = m;
  *model = g_strdup (strstr (m->model, "; every") != NULL
                         ? strstr (m->model, "; every") + 2
                     : strstr (m->model, "; steady") != NULL
                         ? strstr (m->model, "; steady") + 2
                         : m->model);
  return wall;
}

int
main (int argc, char *argv[])
{
  g_autoptr (ElkRegistry) registry = elk_registry_new ();
  g_autoptr (ElkGraph) g8 = NULL, g80 = NULL;
  const char *topos[] = { "all-to-all", "mesh" };
  const char *designs[] = { "basic", "elk" };
  gboolean check = FALSE;
  int status = 0;

  for (int a = 1; a < argc; a++)
    check |= strcmp (argv[a], "--check") == 0;
  elk_registry_add_default_paths (registry);
  elk_registry_scan (registry);
  g8 = llama2_70b (registry, 8);
  g80 = llama2_70b (registry, 80);
  for (guint t = 0; t < G_N_ELEMENTS (topos); t++)
    {
      gboolean picked = TRUE;
      for (int a = 1; a < argc; a++)
        if (strcmp (argv[a], "--check") != 0)
          picked = FALSE;
      for (int a = 1; a < argc; a++)
        picked |= strcmp (argv[a], topos[t]) == 0;
      if (!picked)
        continue;
      for (guint d = 0; d < G_N_ELEMENTS (designs); d++)
        {
          g_autoptr (GObject) chip = make (registry, ELK_TYPE_CHIP, "noc-sim");
          g_autofree char *note8 = NULL, *note80 = NULL;
          g_autoptr (ElkMetrics) m8 = NULL, m80 = NULL;
          double lat8, lat80, w8, w80;

          set_param (chip, "topology", topos[t]);
          set_param (chip, "hbm-bw-gbps", "16000");
          w8 = compile_and_run (registry, chip, g8, designs[d], &m8, &note8);
          w80 = compile_and_run (registry, chip, g80, designs[d], &m80,
                                 &note80);
          lat8 = m8->latency_s;
          lat80 = m80->latency_s;
          printf ("noc-sim %s, llama2-70b-paper decode b32 s2048, 16 TB/s, "
                  "%s: 8 layers %.4f ms in %.2f s wall (%s); 80 layers "
                  "%.4f ms (%.2fx) in %.2f s wall (%s); wall ratio %.2f "
                  "(target <= 2.5)\n",
                  topos[t], d == 0 ? "basic" : "elk-full", lat8 * 1e3, w8,
                  note8, lat80 * 1e3, lat80 / lat8, w80, note80, w80 / w8);
          fflush (stdout);
          if (check)
            {
              g_autoptr (ElkMetrics) full = NULL;
              g_autofree char *note = NULL;
              double w, d_lat, d_hbm, d_noc;

              set_param (chip, "steady-state", "off");
              w = compile_and_run (registry, chip, g80, designs[d], &full,
                                   &note);
              set_param (chip, "steady-state", "auto");
              d_lat = fabs (full->latency_s - lat80) / full->latency_s;
              d_hbm = fabs (full->hbm_util - m80->hbm_util) / full->hbm_util;
              d_noc = fabs (full->noc_util - m80->noc_util) / full->noc_util;
              printf ("  80 layers in full: %.9f ms in %.2f s wall; "
                      "extrapolated %.9f ms; relative differences: latency "
                      "%.2g, HBM utilisation %.2g, NoC utilisation %.2g\n",
                      full->latency_s * 1e3, w, lat80 * 1e3, d_lat, d_hbm,
                      d_noc);
              if (!(d_lat <= 1e-9 && d_hbm <= 1e-9 && d_noc <= 1e-9))
                {
                  printf ("  extrapolation differs from full simulation\n");
                  status = 1;
                }
            }
          if (w80 > 2.5 * w8)
            {
              printf ("  above target: wall ratio %.2f > 2.5\n", w80 / w8);
              status = 1;
            }
          if (lat80 > 10 * lat8 || lat80 < 8 * lat8)
            {
              printf ("  latency does not scale with the layers: %.2fx for "
                      "10x the layers\n",
                      lat80 / lat8);
              status = 1;
            }
        }
    }
  return status;
}
