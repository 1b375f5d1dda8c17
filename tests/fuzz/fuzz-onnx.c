/* tests/fuzz/fuzz-onnx.c: the ONNX loader, from protobuf decoding through
 * shape inference to lowering.
 *
 * The loader reads a path (it maps the file and resolves external data
 * next to it), so each input is written to one file in a private folder
 * that holds nothing else: an external-data reference can only find the
 * model itself. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include <glib/gstdio.h>

#include "elk-fuzz.h"
#include "elk-onnx-loader.h"

static char *dir;
static char *model_path;

static void
cleanup (void)
{
  g_unlink (model_path);
  g_rmdir (dir);
}

int
LLVMFuzzerInitialize (int *argc, char ***argv)
{
  g_autoptr (GError) error = NULL;

  elk_fuzz_fail_on_warnings ();
  dir = g_dir_make_tmp ("elk-fuzz-onnx-XXXXXX", &error);
  if (dir == NULL)
    {
      g_printerr ("fuzz-onnx: %s\n", error->message);
      abort ();
    }
  model_path = g_build_filename (dir, "model.onnx", NULL);
  atexit (cleanup);
  return 0;
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  g_autoptr (GError) error = NULL;
  OnnxOptions options;
  ElkGraph *graph;
  FILE *fp;

  /* Not g_file_set_contents(): its fsync would dominate the run time. */
  fp = fopen (model_path, "wb");
  if (fp == NULL || fwrite (data, 1, size, fp) != size || fclose (fp) != 0)
    {
      g_printerr ("fuzz-onnx: cannot write %s\n", model_path);
      abort ();
    }
  elk__onnx_options_init (&options);
  /* Keep each run small: the default limits accept models far larger
   * than a fuzzer input can describe honestly. */
  options.max_tensor_elements = G_GUINT64_CONSTANT (1) << 28;
  graph = elk__onnx_load (model_path, &options, &error);
  elk_fuzz_check (graph != NULL, error);
  g_clear_pointer (&graph, elk_graph_unref);
  return 0;
}
