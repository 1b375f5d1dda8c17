/* tests/core/elk-test-files.h: file helpers that need only GLib, shared by
 * the tests of libelk (through elk-test-util.h) and of libelk-report. */
#pragma once

#include <glib.h>

void elk_test_remove_tree (const char *dir);
