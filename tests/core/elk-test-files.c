/* tests/core/elk-test-files.c: file helpers that need only GLib. */
#include "elk-test-files.h"

#include <glib/gstdio.h>

/* Removes @dir and everything below it (a test's temporary folder),
 * without following symbolic links. */
void
elk_test_remove_tree (const char *dir)
{
  GDir *handle = g_dir_open (dir, 0, NULL);
  const char *name;

  if (handle == NULL)
    return;
  while ((name = g_dir_read_name (handle)) != NULL)
    {
      g_autofree char *path = g_build_filename (dir, name, NULL);
      if (g_file_test (path, G_FILE_TEST_IS_DIR)
          && !g_file_test (path, G_FILE_TEST_IS_SYMLINK))
        elk_test_remove_tree (path);
      else
        g_unlink (path);
    }
  g_dir_close (handle);
  g_rmdir (dir);
}
