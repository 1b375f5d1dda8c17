/* tests/core/elk-test-util.h: helpers shared by the core tests. */
#pragma once

#include <elk/elk.h>

char *elk_test_fixture_plugin (const char *name);
char *elk_test_fixture_experiment (const char *name);
ElkRegistry *elk_test_registry_with_good (void);
void elk_test_assert_has_line (const GError *error, const char *file);
GObject *elk_test_make (ElkRegistry *registry, GType kind, const char *name,
                        const char *first_prop, ...);
void elk_test_complete_plans (ElkChip *chip, ElkProgram *program);
ElkMetrics *elk_test_run_program (ElkChip *chip, ElkProgram *program,
                                  ElkTrace *trace, GError **error);
