/* tests/fuzz/elk-fuzz.h: shared by the libFuzzer targets.
 *
 * Each target feeds one reader the fuzzer's bytes and checks the one
 * contract every reader has: it returns a result or a GError, never both
 * and never neither.  Crashes, leaks and hangs are caught by the
 * sanitizers and by libFuzzer itself. */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <glib.h>

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);
int LLVMFuzzerInitialize (int *argc, char ***argv);

/* Aborts (a finding) when a reader breaks the result-or-error contract. */
static inline void
elk_fuzz_check (gboolean ok, GError *error)
{
  if (ok == (error != NULL))
    {
      g_printerr ("contract broken: %s with %s\n", ok ? "success" : "failure",
                  error != NULL ? error->message : "no error");
      abort ();
    }
  /* ELK_FUZZ_VERBOSE=1 shows what each input does, for triage. */
  if (g_getenv ("ELK_FUZZ_VERBOSE") != NULL)
    g_printerr ("%s\n", ok ? "accepted" : error->message);
}

/* A reader that warns on bad input instead of returning an error is a
 * finding too: warnings and criticals abort. */
static inline void
elk_fuzz_fail_on_warnings (void)
{
  g_log_set_always_fatal (G_LOG_LEVEL_WARNING | G_LOG_LEVEL_CRITICAL
                          | G_LOG_LEVEL_ERROR);
}

/* A hash of the input, to pick build options (batch, sequence length,
 * phase, element type) that vary with it, up to the frontend's parameter
 * ranges: a size product that overflows must be an error, not a wrap. */
static inline guint64
elk_fuzz_hash (const uint8_t *data, size_t size)
{
  guint64 h = G_GUINT64_CONSTANT (14695981039346656037);
  for (size_t i = 0; i < size; i++)
    h = (h ^ data[i]) * G_GUINT64_CONSTANT (1099511628211);
  return h;
}
