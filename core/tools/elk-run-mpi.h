/* elk-run-mpi.h: elk-run's MPI driver (docs/clusters.md).
 *
 * Built only with the "mpi" meson feature, which defines ELK_HAVE_MPI for
 * elk-run.  Under mpirun with two or more ranks, elk-run hands the loaded
 * experiment to elk_run_mpi_main() instead of its thread pool.
 */
#pragma once

#include <elk/elk.h>

G_BEGIN_DECLS

gboolean elk_run_mpi_active (void);
int elk_run_mpi_main (ElkExperiment *experiment, const ElkRunOptions *options);

G_END_DECLS
