/* tests/core/elk-test-util.h: helpers shared by the core tests. */
#pragma once

#include <elk/elk.h>

#include "elk-test-files.h"

/* The five designs of experiments/fig17.xml (basic, static, Elk-Dyn,
 * Elk-Full and the ideal bound) as experiment XML, for the reduced Fig 17
 * sweeps of the chips' fidelity tests, which compare machines on the same
 * designs. */
#define ELK_TEST_FIG17_SCHEDULERS                                              \
  "  <scheduler name=\"basic\" label=\"basic\"/>\n"                            \
  "  <scheduler name=\"static\" label=\"static\"/>\n"                          \
  "  <scheduler name=\"elk\" label=\"elk-dyn\">\n"                             \
  "    <param name=\"order-search\">dyn</param>\n"                             \
  "    <param name=\"contention\">delay-execution</param>\n"                   \
  "    <param name=\"load-noc-share\">0.9</param>\n"                           \
  "    <param name=\"select\">estimate</param>\n"                              \
  "  </scheduler>\n"                                                           \
  "  <scheduler name=\"elk\" label=\"elk-full\">\n"                            \
  "    <param name=\"order-search\">full</param>\n"                            \
  "  </scheduler>\n"                                                           \
  "  <scheduler name=\"ideal\" bound=\"true\" label=\"ideal\"/>\n"

char *elk_test_fixture_plugin (const char *name);
char *elk_test_fixture_experiment (const char *name);
ElkRegistry *elk_test_registry_with_good (void);
void elk_test_assert_has_line (const GError *error, const char *file);
GObject *elk_test_make (ElkRegistry *registry, GType kind, const char *name,
                        const char *first_prop, ...);
void elk_test_complete_plans (ElkChip *chip, ElkProgram *program);
ElkProgram *elk_test_compile (ElkChip *chip,
                              ElkGraph *graph,
                              GObject *scheduler,
                              GObject *allocator,
                              ElkPlanSet **plans);
ElkMetrics *elk_test_run_program (ElkChip *chip, ElkProgram *program,
                                  ElkTrace *trace, GError **error);
ElkRegistry *elk_test_registry_new_default (void);

/* A graph's plans on the compiler tests' small analytic chip
 * (elk_test_compile_fixture_init()). */
typedef struct
{
  ElkChip *chip;
  ElkChipSpec *spec;
  ElkGraph *graph;
  ElkPlanSet *plans;
} ElkTestCompileFixture;

void elk_test_compile_fixture_init (ElkTestCompileFixture *f,
                                    ElkRegistry *registry,
                                    ElkGraph *graph);
void elk_test_compile_fixture_clear (ElkTestCompileFixture *f);
void elk_test_assert_same_program (ElkProgram *a, ElkProgram *b);
void elk_test_assert_one_expert_taken (const ElkMetrics *m,
                                       const ElkMetrics *unrouted,
                                       double untaken_flops,
                                       const ElkRoutingStats *want);
/* A toy decode stack shared by the compiler tests (elk-test-util.c). */
ElkGraph *
elk_test_toy_decode_graph (guint layers, guint64 b, guint64 d, guint64 kv_len);
char **elk_test_tool_env (const char *plugin_path);
int elk_test_spawn (const char *const *argv,
                    char **env,
                    char **out_stdout,
                    char **out_stderr);
int elk_test_spawn_tool (const char *exe,
                         const char *const *args,
                         char **env,
                         char **out_stdout,
                         char **out_stderr);
char *elk_test_read_file (const char *dir, const char *name);
GStrv elk_test_run_experiment (ElkRegistry *registry,
                               const char *xml,
                               const char *file,
                               const char *dir);
void elk_test_assert_breakdown_adds_up (const ElkMetrics *m, gboolean fig18a);
ElkMetrics *elk_test_schedule_and_run (ElkRegistry *registry,
                                       ElkGraph *graph,
                                       ElkChip *chip,
                                       const char *scheduler,
                                       const char *allocator,
                                       GError **error);
ElkProgram *
elk_test_hand_program (ElkGraph *graph, ElkPlanSet *plans, const char *order);
ElkGraph *elk_test_load_llama (ElkRegistry *registry,
                               const char *preset,
                               guint batch,
                               guint seq,
                               guint layers);
char *elk_test_init_with_tmpdir (int *argc, char ***argv, const char *tmpl);
int elk_test_run_and_remove (char *tmpdir);
void elk_test_run_on_every_chip (ElkRegistry *registry, ElkGraph *graph);
