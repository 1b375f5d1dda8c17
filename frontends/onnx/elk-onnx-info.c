/* elk-onnx-info: what an ONNX model needs before an experiment can use it.
 *
 *   elk-onnx-info [--dims=NAME=VALUE,...] [--inputs=NAME,...] MODEL
 *
 * Prints the model's opsets, its inputs with their symbolic dimensions and
 * a suggested binding, its operator counts, and every node elk cannot
 * import with the reason (docs/frontend-onnx.md).  Exits 0 when the report
 * is printed, whether or not the model imports; 1 when the file cannot be
 * read or is malformed (the message names the file); 2 on a usage error.
 */
#include "config.h"

#include <locale.h>
#include <stdio.h>
#include <stdlib.h>

#include "elk-onnx-loader.h"

int
main (int argc, char **argv)
{
  g_autofree char *dims = NULL;
  g_autofree char *inputs = NULL;
  g_autofree char *input_values = NULL;
  g_autoptr (GOptionContext) context = NULL;
  g_autoptr (GError) error = NULL;
  g_autofree char *report = NULL;
  OnnxOptions options;
  GOptionEntry entries[] = {
    { "dims", 'd', 0, G_OPTION_ARG_STRING, &dims,
      "Bind symbolic dimensions (the others get suggested values)",
      "NAME=VALUE,..." },
    { "inputs", 'i', 0, G_OPTION_ARG_STRING, &inputs,
      "The graph inputs that are model inputs, as the frontend's 'inputs'",
      "NAME,..." },
    { "input-values", 'v', 0, G_OPTION_ARG_STRING, &input_values,
      "Give single-element graph inputs values, as the frontend's "
      "'input-values'",
      "NAME=NUMBER,..." },
    { NULL, 0, 0, 0, NULL, NULL, NULL }
  };

  setlocale (LC_ALL, "");
  context = g_option_context_new ("MODEL - what an ONNX model needs to be "
                                  "compiled by elk");
  g_option_context_add_main_entries (context, entries, NULL);
  if (!g_option_context_parse (context, &argc, &argv, &error))
    {
      fprintf (stderr, "elk-onnx-info: %s\n", error->message);
      return 2;
    }
  if (argc != 2)
    {
      fprintf (stderr, "elk-onnx-info: give one MODEL (see --help)\n");
      return 2;
    }

  elk__onnx_options_init (&options);
  options.dims = dims;
  options.inputs = inputs;
  options.input_values = input_values;
  report = elk__onnx_describe (argv[1], &options, &error);
  if (report == NULL)
    {
      fprintf (stderr, "elk-onnx-info: %s\n", error->message);
      return 1;
    }
  fputs (report, stdout);
  return 0;
}
