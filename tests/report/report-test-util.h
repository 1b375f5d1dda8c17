/* report-test-util.h: synthetic results folders for the report tests.
 *
 * The tests write their own results.json, so that they know exactly which
 * bars and lines each figure must have.  Colours are counted in the SVG
 * (cairo writes "fill:rgb(R%,G%,B%)" and "stroke:rgb(...)"), which is how
 * a test can tell a bar of one design from a bar of another.
 */
#pragma once

#include <glib.h>

#include "elk-test-files.h"

G_BEGIN_DECLS

typedef struct
{
  const char *label;
  double hbm_gbps;      /* the value of the axis chip.hbm-bw-gbps */
  double latency_s;     /* NAN: the row failed */
} SyntheticRow;

/* Writes @dir/results.json (and @dir/experiment.xml, whose hash it
 * records) for @rows.  Returns the experiment's path. */
char *report_test_write_results (const char *dir,
                                 const SyntheticRow *rows,
                                 guint n_rows);

/* Counts the <path> elements of @svg_path whose style has
 * "@property:rgb(...)" equal to @rgb (0-255). */
guint report_test_count_paths (const char *svg_path,
                               const char *property,
                               const guint8 rgb[3]);

/* The number of non-overlapping occurrences of @needle in @haystack. */
guint report_test_count (const char *haystack, const char *needle);

/* Removes @dir and everything in it (a symbolic link, not its target). */

G_END_DECLS
