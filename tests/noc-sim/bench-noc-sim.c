/* bench-noc-sim.c: how fast the noc-sim engine runs a real program.
 *
 * Compiles Llama2-13B decode (batch 32, KV length 2048, the paper's graph)
 * for a 5888-core chip with the basic scheduler, then runs it on the
 * simulator as a 2-D mesh (4 chips of 32x46) and as all-to-all, with
 * hop-by-hop arbitration (arbitration=arrival) and with route booking,
 * and prints events per second, wall time of the simulation alone, and the
 * process's peak RSS.  Target on a 2-core machine: at least 5 M events/s,
 * the mesh run under 60 s and 2 GiB.  An event is one entry taken from the
 * event queue (docs/chip-noc-sim.md, "What counts as an event"). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <elk/elk.h>
#include "elk-noc-sim.h"
#include "elk-test-util.h"

static GObject *
make (ElkRegistry *registry, GType kind, const char *name)
{
  g_autoptr(GError) error = NULL;
  const ElkFeature *f = elk_registry_find (registry, kind, name, &error);

  if (f == NULL)
    {
      g_printerr ("bench-noc-sim: %s\n", error->message);
      exit (77);
    }
  return g_object_new (f->type, NULL);
}

static NocSim *
sim_for (const ElkChipSpec *spec, guint arbitration)
{
  g_autoptr(GError) error = NULL;
  NocConfig c = { 0 };
  NocSim *s;

  c.topology = spec->topology;
  c.chips = spec->n_chips;
  c.cores = spec->cores;
  c.rows = spec->mesh_rows;
  c.cols = spec->mesh_cols;
  c.link_bw = spec->link_bw;
  c.hop_latency = spec->link_latency;
  c.clock_hz = spec->clock_hz;
  c.cost = spec->cost;
  c.core_gap = spec->cost.shift_cycles_per_byte / spec->clock_hz;
  c.sync_s = spec->cost.sync_cycles / spec->clock_hz;
  c.syncs_per_shift = spec->cost.syncs_per_shift;
  c.shuffle_syncs = spec->cost.shuffle_syncs;
  c.hbm_channels = spec->hbm_channels;
  c.hbm_bw = spec->hbm_bw;
  c.hbm_latency = spec->hbm_latency;
  c.hbm_port_bw = spec->link_bw;
  c.placement = NOC_PLACE_EDGES;
  c.interleave = NOC_INTERLEAVE_NEAREST;
  c.reduce = NOC_REDUCE_AUTO;
  c.gateway = NOC_GATEWAY_EDGE;
  c.arbitration = (NocArbitration) arbitration;
  c.inter_chip_bw = spec->inter_chip_bw;
  c.packet_bytes = 4096;
  /* Every layer simulated: this benchmark measures the event core, which
   * steady-state extrapolation (bench-noc-sim-steady) would mostly skip. */
  c.steady_off = TRUE;
  s = elk__noc_sim_new (&c, &error);
  g_assert_no_error (error);
  return s;
}

/* Whether some argument is one of @names. */
static gboolean
arg_names (int argc, char *argv[], const char *const *names, guint n)
{
  for (int a = 1; a < argc; a++)
    for (guint i = 0; i < n; i++)
      if (strcmp (argv[a], names[i]) == 0)
        return TRUE;
  return FALSE;
}

int
main (int argc, char *argv[])
{
  g_autoptr(GError) error = NULL;
  g_autoptr(ElkRegistry) registry = elk_registry_new ();
  g_autoptr(GObject) frontend = NULL, sched = NULL, alloc = NULL;
  g_autoptr(ElkGraph) graph = NULL;
  const char *topos[] = { "mesh", "all-to-all" };
  const char *arbs[] = { "arrival", "booking" };
  int status = 0;

  elk_registry_add_default_paths (registry);
  elk_registry_scan (registry);
  frontend = make (registry, ELK_TYPE_FRONTEND, "llama");
  g_object_set (frontend, "preset", "llama2-13b-paper", "batch", 32, "seq",
                2048, NULL);
  /* layers=N runs the first N layers (for profiling and for comparing
   * two builds quickly); the figures in docs/performance.md are of the
   * whole model. */
  for (int a = 1; a < argc; a++)
    if (g_str_has_prefix (argv[a], "layers="))
      g_object_set (frontend, "layers", (guint) atoi (argv[a] + 7), NULL);
  graph = elk_frontend_load (ELK_FRONTEND (frontend), &error);
  g_assert_no_error (error);
  sched = make (registry, ELK_TYPE_SCHEDULER, "basic");
  alloc = make (registry, ELK_TYPE_ALLOCATOR, "reservation");

  for (guint t = 0; t < G_N_ELEMENTS (topos); t++)
    {
      g_autoptr(GObject) chip = make (registry, ELK_TYPE_CHIP, "noc-sim");
      const ElkChipSpec *spec;
      g_autoptr(ElkPlanSet) plans = NULL;
      g_autoptr(ElkProgram) program = NULL;
      GEnumClass *k = g_type_class_ref (ELK_TYPE_TOPOLOGY);
      /* Arguments, if any, pick the topologies and the arbitrations (for
       * profiling one); a kind not named runs all of its values. */
      gboolean picked = !arg_names (argc, argv, topos, G_N_ELEMENTS (topos));

      for (int a = 1; a < argc; a++)
        picked |= strcmp (argv[a], topos[t]) == 0;
      if (!picked)
        {
          g_type_class_unref (k);
          continue;
        }
      g_object_set (chip, "topology",
                    g_enum_get_value_by_nick (k, topos[t])->value, NULL);
      g_type_class_unref (k);
      program = elk_test_compile (ELK_CHIP (chip), graph, sched, alloc, &plans);
      spec = elk_plan_set_get_spec (plans);
      for (guint arb = 0; arb < 2; arb++)
        {
          gboolean arb_picked = !arg_names (argc, argv, arbs, 2);

          for (int a = 1; a < argc; a++)
            arb_picked |= strcmp (argv[a], arbs[arb]) == 0;
          if (!arb_picked)
            continue;

          g_autoptr(ElkMetrics) m = NULL;
          g_autoptr(NocSim) sim = sim_for (spec, arb);
          NocStats st = { 0 };
          struct rusage ru, ru0;
          double cpu;

          getrusage (RUSAGE_SELF, &ru0);
          m = elk__noc_sim_run (sim, program, NULL, &st, &error);
          g_assert_no_error (error);
          getrusage (RUSAGE_SELF, &ru);
          cpu = (ru.ru_utime.tv_sec - ru0.ru_utime.tv_sec)
                + (ru.ru_utime.tv_usec - ru0.ru_utime.tv_usec) / 1e6
                + (ru.ru_stime.tv_sec - ru0.ru_stime.tv_sec)
                + (ru.ru_stime.tv_usec - ru0.ru_stime.tv_usec) / 1e6;
          printf ("noc-sim %s %ux%u x %u chips, %u cores, llama2-13b-paper "
                  "b32 s2048 (basic), arbitration=%s: latency %.4f ms; "
                  "%" G_GUINT64_FORMAT " events, %" G_GUINT64_FORMAT
                  " link hops "
                  "(%" G_GUINT64_FORMAT " of them preload) in %.2f s wall, "
                  "%.2f s CPU = %.1f M events/s (per CPU second %.1f M/s); "
                  "peak RSS %.0f MiB\n",
                  topos[t], spec->mesh_rows, spec->mesh_cols, spec->n_chips,
                  spec->cores, arbs[arb], m->latency_s * 1e3, st.events,
                  st.hops, st.preload_hops, st.wall_s, cpu,
                  st.events / MAX (st.wall_s, 1e-9) / 1e6,
                  st.events / MAX (cpu, 1e-9) / 1e6, ru.ru_maxrss / 1024.0);
          /* An event is one entry taken from the event queue (calendar or
           * heap); with booking, hops happen inside events and are not
           * counted.  The rate is taken per CPU second so that other load
           * on the machine does not decide it; the wall-time target is
           * checked as measured. */
          if (st.events / MAX (cpu, 1e-9) < 5e6)
            {
              printf ("  below target: %.1f M events per CPU second < 5\n",
                      st.events / MAX (cpu, 1e-9) / 1e6);
              status = 1;
            }
          if (st.wall_s > 60 || ru.ru_maxrss > 2 * 1024 * 1024)
            {
              printf ("  above target: %.1f s wall (60), %.0f MiB (2048)\n",
                      st.wall_s, ru.ru_maxrss / 1024.0);
              status = 1;
            }
          fflush (stdout);
        }
    }
  return status;
}
