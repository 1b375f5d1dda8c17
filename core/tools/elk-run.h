/* elk-run.h: what elk-run.c shares with its MPI driver, elk-run-mpi.c. */
#pragma once

#include <elk/elk.h>

G_BEGIN_DECLS

/* Exit codes: the top of elk-run.c says what each means. */
enum
{
  EXIT_USAGE = 1,
  EXIT_BAD_EXPERIMENT = 2,
  EXIT_PLUGIN_FAILED = 3,
  EXIT_RUN_FAILED = 4,
  EXIT_OUTPUT_FAILED = 5,
};

int elk_run_exit_status (ElkRunStatus status);

G_END_DECLS
