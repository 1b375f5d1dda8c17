/* elk-journal.c: the durable record of finished points, and the results
 * files made from it.
 *
 * While a sweep runs, every finished point is appended to
 * <output>/points.journal as one line and flushed to disk (fdatasync)
 * before the next one is written, so killing elk-run at any moment, even
 * with SIGKILL, loses at most the points still running.  Each line ends
 * with a checksum of itself, so a line torn by a crash is recognised and
 * dropped, never half-read.  --resume reads the journal back and runs only
 * the points it lacks.
 *
 * results.csv, results.json and timings.csv are always made from the
 * journal's records, in point order, when the sweep (or a shard, or a
 * merge of shards) completes, so they are byte-identical however the
 * points were run: on one thread or many, resumed, or as shards merged.
 *
 * Line format: tab-separated fields; inside a field, backslash escapes
 * "\\", "\t", "\n", "\r", and "\N" stands for an empty (NULL) field.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <glib/gstdio.h>

#include "elk-journal.h"

#define JOURNAL_NAME "points.journal"
#define JOURNAL_MAGIC "elk-journal"
#define JOURNAL_FORMAT "1"

struct _Journal
{
  char *path;
  FILE *file;
};

void
elk__point_record_free (PointRecord *record)
{
  if (record == NULL)
    return;
  g_free (record->key);
  for (guint i = 0; i < record->n_rows * record->n_fields; i++)
    g_free (record->fields[i]);
  for (guint i = 0; i < record->n_rows * ELK_TIMING_FIELDS; i++)
    g_free (record->timings[i]);
  g_free (record->fields);
  g_free (record->timings);
  g_free (record);
}

void
elk__journal_header_clear (JournalHeader *header)
{
  g_clear_pointer (&header->elk_version, g_free);
  g_clear_pointer (&header->experiment, g_free);
  g_clear_pointer (&header->hash, g_free);
  g_clear_pointer (&header->axes, g_ptr_array_unref);
  g_clear_pointer (&header->plugins, g_ptr_array_unref);
}

static void
append_escaped (GString *s, const char *field)
{
  if (field == NULL)
    {
      g_string_append (s, "\\N");
      return;
    }
  for (const char *p = field; *p != '\0'; p++)
    switch (*p)
      {
      case '\\':
        g_string_append (s, "\\\\");
        break;
      case '\t':
        g_string_append (s, "\\t");
        break;
      case '\n':
        g_string_append (s, "\\n");
        break;
      case '\r':
        g_string_append (s, "\\r");
        break;
      default:
        g_string_append_c (s, *p);
      }
}

/* Returns NULL for "\N"; sets *ok FALSE on a bad escape. */
static char *
unescape (const char *field, gboolean *ok)
{
  GString *s;

  if (strcmp (field, "\\N") == 0)
    return NULL;
  s = g_string_new (NULL);
  for (const char *p = field; *p != '\0'; p++)
    {
      if (*p != '\\')
        {
          g_string_append_c (s, *p);
          continue;
        }
      p++;
      switch (*p)
        {
        case '\\':
          g_string_append_c (s, '\\');
          break;
        case 't':
          g_string_append_c (s, '\t');
          break;
        case 'n':
          g_string_append_c (s, '\n');
          break;
        case 'r':
          g_string_append_c (s, '\r');
          break;
        default:
          *ok = FALSE;
          return g_string_free (s, TRUE), NULL;
        }
    }
  return g_string_free (s, FALSE);
}

static char *
line_checksum (const char *data, gsize length)
{
  return g_compute_checksum_for_data (G_CHECKSUM_SHA1, (const guchar *) data,
                                      length);
}

/**
 * elk__point_record_serialize:
 * Returns: (transfer full): the record as one journal line, with its
 *   checksum and a final newline.
 */
char *
elk__point_record_serialize (const PointRecord *record)
{
  GString *s = g_string_new ("R");
  g_autofree char *sum = NULL;

  g_string_append_printf (s, "\t%u\t%s\t%u\t%u\t%u", record->point,
                          record->key, record->status, record->n_rows,
                          record->n_fields);
  for (guint i = 0; i < record->n_rows * record->n_fields; i++)
    {
      g_string_append_c (s, '\t');
      append_escaped (s, record->fields[i]);
    }
  for (guint i = 0; i < record->n_rows * ELK_TIMING_FIELDS; i++)
    {
      g_string_append_c (s, '\t');
      append_escaped (s, record->timings[i]);
    }
  sum = line_checksum (s->str, s->len);
  g_string_append_printf (s, "\t%s\n", sum);
  return g_string_free (s, FALSE);
}

static gboolean
parse_uint (const char *text, guint max, guint *out)
{
  guint64 v;
  if (!g_ascii_string_to_unsigned (text, 10, 0, max, &v, NULL))
    return FALSE;
  *out = (guint) v;
  return TRUE;
}

/**
 * elk__point_record_parse:
 * @line: one journal line, without its newline
 *
 * Returns: (transfer full) (nullable): the record, or %NULL with @error
 *   when the line is torn, corrupt or inconsistent.
 */
PointRecord *
elk__point_record_parse (const char *line, GError **error)
{
  const char *last_tab = strrchr (line, '\t');
  g_autofree char *sum = NULL;
  g_auto (GStrv) parts = NULL;
  PointRecord *record;
  guint n, expected;
  gboolean ok = TRUE;

  if (last_tab == NULL || !g_str_has_prefix (line, "R\t"))
    goto bad;
  sum = line_checksum (line, (gsize) (last_tab - line));
  if (strcmp (sum, last_tab + 1) != 0)
    goto bad;

  parts = g_strsplit (line, "\t", -1);
  n = g_strv_length (parts);
  if (n < 7)
    goto bad;

  record = g_new0 (PointRecord, 1);
  record->key = g_strdup (parts[2]);
  if (!parse_uint (parts[1], G_MAXUINT, &record->point)
      || !parse_uint (parts[3], ELK_RUN_PLUGIN_FAILED, &record->status)
      || !parse_uint (parts[4], 1u << 16, &record->n_rows)
      || !parse_uint (parts[5], 1u << 16, &record->n_fields))
    {
      elk__point_record_free (record);
      goto bad;
    }
  expected = 6 + record->n_rows * (record->n_fields + ELK_TIMING_FIELDS) + 1;
  if (n != expected)
    {
      record->n_rows = 0;
      elk__point_record_free (record);
      goto bad;
    }
  record->fields = g_new0 (char *, record->n_rows * record->n_fields + 1);
  record->timings = g_new0 (char *, record->n_rows * ELK_TIMING_FIELDS + 1);
  for (guint i = 0; i < record->n_rows * record->n_fields; i++)
    record->fields[i] = unescape (parts[6 + i], &ok);
  for (guint i = 0; i < record->n_rows * ELK_TIMING_FIELDS; i++)
    record->timings[i] = unescape (
      parts[6 + record->n_rows * record->n_fields + i], &ok);
  if (!ok)
    {
      elk__point_record_free (record);
      goto bad;
    }
  return record;

bad:
  g_set_error (error, ELK_EXPERIMENT_ERROR, ELK_EXPERIMENT_ERROR_INVALID,
               "corrupt or incomplete journal record");
  return NULL;
}

static char *
header_text (const JournalHeader *h)
{
  GString *s = g_string_new (JOURNAL_MAGIC "\t" JOURNAL_FORMAT "\n");

  g_string_append_printf (s, "elk-version\t%s\n", h->elk_version);
  g_string_append (s, "experiment\t");
  append_escaped (s, h->experiment);
  g_string_append_printf (s, "\nsha256\t%s\npoints\t%u\nshard\t%u/%u\naxes",
                          h->hash, h->n_points, h->shard_k, h->shard_n);
  for (guint i = 0; i < h->axes->len; i++)
    {
      g_string_append_c (s, '\t');
      append_escaped (s, h->axes->pdata[i]);
    }
  g_string_append (s, "\nplugins");
  for (guint i = 0; i < h->plugins->len; i++)
    {
      g_string_append_c (s, '\t');
      append_escaped (s, h->plugins->pdata[i]);
    }
  g_string_append (s, "\nbegin\n");
  return g_string_free (s, FALSE);
}

static gboolean
parse_header (const char *path,
              char **lines,
              guint *n_header,
              JournalHeader *h,
              GError **error)
{
  guint i = 0;
  gboolean ok = TRUE;

#define EXPECT(prefix)                                                       \
  (lines[i] != NULL && g_str_has_prefix (lines[i], prefix "\t"))

  memset (h, 0, sizeof *h);
  if (lines[0] == NULL
      || strcmp (lines[0], JOURNAL_MAGIC "\t" JOURNAL_FORMAT) != 0)
    goto bad;
  i = 1;
  if (!EXPECT ("elk-version"))
    goto bad;
  h->elk_version = g_strdup (lines[i++] + strlen ("elk-version\t"));
  if (!EXPECT ("experiment"))
    goto bad;
  h->experiment = unescape (lines[i++] + strlen ("experiment\t"), &ok);
  if (!EXPECT ("sha256"))
    goto bad;
  h->hash = g_strdup (lines[i++] + strlen ("sha256\t"));
  if (!EXPECT ("points")
      || !parse_uint (lines[i++] + strlen ("points\t"), G_MAXUINT,
                      &h->n_points))
    goto bad;
  if (!EXPECT ("shard")
      || sscanf (lines[i++] + strlen ("shard\t"), "%u/%u", &h->shard_k,
                 &h->shard_n)
           != 2)
    goto bad;
  h->axes = g_ptr_array_new_with_free_func (g_free);
  h->plugins = g_ptr_array_new_with_free_func (g_free);
  if (lines[i] == NULL || !g_str_has_prefix (lines[i], "axes"))
    goto bad;
  {
    g_auto (GStrv) parts = g_strsplit (lines[i++], "\t", -1);
    for (guint k = 1; parts[k] != NULL; k++)
      g_ptr_array_add (h->axes, unescape (parts[k], &ok));
  }
  if (lines[i] == NULL || !g_str_has_prefix (lines[i], "plugins"))
    goto bad;
  {
    g_auto (GStrv) parts = g_strsplit (lines[i++], "\t", -1);
    for (guint k = 1; parts[k] != NULL; k++)
      g_ptr_array_add (h->plugins, unescape (parts[k], &ok));
  }
  if (lines[i] == NULL || strcmp (lines[i], "begin") != 0 || !ok)
    goto bad;
  *n_header = i + 1;
  return TRUE;
#undef EXPECT

bad:
  elk__journal_header_clear (h);
  g_set_error (error, ELK_EXPERIMENT_ERROR, ELK_EXPERIMENT_ERROR_INVALID,
               "%s:%u: not an elk points journal (format %s) or its header "
               "is damaged", path, i + 1, JOURNAL_FORMAT);
  return FALSE;
}

/* Reads a journal: the header and every intact record.  *valid_length is
 * the byte length up to the last intact line, where appending resumes. */
static gboolean
read_journal (const char *path,
              JournalHeader *header,
              GPtrArray **records,
              gsize *valid_length,
              GError **error)
{
  g_autofree char *data = NULL;
  g_autoptr (GError) local_error = NULL;
  g_auto (GStrv) lines = NULL;
  gsize length = 0, offset = 0;
  guint n_header = 0;

  if (!g_file_get_contents (path, &data, &length, &local_error))
    {
      g_set_error (error, ELK_EXPERIMENT_ERROR, ELK_EXPERIMENT_ERROR_IO,
                   "%s: cannot read the journal: %s", path,
                   local_error->message);
      return FALSE;
    }
  lines = g_strsplit (data, "\n", -1);
  if (!parse_header (path, lines, &n_header, header, error))
    return FALSE;
  for (guint i = 0; i < n_header; i++)
    offset += strlen (lines[i]) + 1;

  *records = g_ptr_array_new_with_free_func ((GDestroyNotify)
                                             elk__point_record_free);
  for (guint i = n_header; lines[i] != NULL; i++)
    {
      PointRecord *record;
      /* The last piece has no newline: it is either empty or torn. */
      if (lines[i + 1] == NULL)
        break;
      record = elk__point_record_parse (lines[i], NULL);
      if (record == NULL || record->point >= header->n_points)
        {
          /* A damaged line can only be the last one written before a
           * crash; anything after it is not trusted either. */
          elk__point_record_free (record);
          break;
        }
      g_ptr_array_add (*records, record);
      offset += strlen (lines[i]) + 1;
    }
  *valid_length = offset;
  return TRUE;
}

/**
 * elk__journal_read:
 * @dir: an output folder
 *
 * Reads the journal of a finished or interrupted run (for --merge).
 */
gboolean
elk__journal_read (const char *dir,
                   JournalHeader *header,
                   GPtrArray **records,
                   GError **error)
{
  g_autofree char *path = g_build_filename (dir, JOURNAL_NAME, NULL);
  gsize valid = 0;
  return read_journal (path, header, records, &valid, error);
}

static gboolean
sync_file (FILE *file, const char *path, GError **error)
{
  if (fflush (file) != 0 || fdatasync (fileno (file)) != 0)
    {
      int saved = errno;
      g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (saved),
                   "%s: cannot write the journal: %s", path,
                   g_strerror (saved));
      return FALSE;
    }
  return TRUE;
}

/**
 * elk__journal_open:
 * @dir: the output folder (created if missing)
 * @header: the run's header
 * @resume: keep the records of an earlier run of the same experiment
 * @finished: (out) (transfer full): the records kept
 *
 * Opens the journal for appending.  Without @resume any earlier journal
 * is replaced.  With it, the earlier journal must come from the same
 * experiment file, elk version and shard; a torn last line is cut off.
 */
Journal *
elk__journal_open (const char *dir,
                   const JournalHeader *header,
                   gboolean resume,
                   GPtrArray **finished,
                   GError **error)
{
  g_autofree char *path = g_build_filename (dir, JOURNAL_NAME, NULL);
  Journal *journal;

  if (!elk__make_output_dir (dir, error))
    return NULL;

  *finished = NULL;
  if (resume && g_file_test (path, G_FILE_TEST_EXISTS))
    {
      JournalHeader old;
      gsize valid = 0;
      if (!read_journal (path, &old, finished, &valid, error))
        return NULL;
      if (strcmp (old.hash, header->hash) != 0
          || strcmp (old.elk_version, header->elk_version) != 0
          || old.shard_k != header->shard_k || old.shard_n != header->shard_n)
        {
          g_set_error (error, ELK_EXPERIMENT_ERROR,
                       ELK_EXPERIMENT_ERROR_INVALID,
                       "%s: cannot resume: the journal is from experiment %s "
                       "(sha256 %.12s, elk %s, shard %u/%u), not this one "
                       "(sha256 %.12s, elk %s, shard %u/%u); use another "
                       "output folder", path, old.experiment, old.hash,
                       old.elk_version, old.shard_k, old.shard_n,
                       header->hash, header->elk_version, header->shard_k,
                       header->shard_n);
          elk__journal_header_clear (&old);
          g_clear_pointer (finished, g_ptr_array_unref);
          return NULL;
        }
      elk__journal_header_clear (&old);
      if (truncate (path, (off_t) valid) != 0)
        {
          int saved = errno;
          g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (saved),
                       "%s: cannot cut the torn end of the journal: %s",
                       path, g_strerror (saved));
          g_clear_pointer (finished, g_ptr_array_unref);
          return NULL;
        }
      journal = g_new0 (Journal, 1);
      journal->path = g_steal_pointer (&path);
      journal->file = g_fopen (journal->path, "a");
    }
  else
    {
      g_autofree char *text = header_text (header);
      *finished = g_ptr_array_new_with_free_func ((GDestroyNotify)
                                                  elk__point_record_free);
      journal = g_new0 (Journal, 1);
      journal->path = g_steal_pointer (&path);
      journal->file = g_fopen (journal->path, "w");
      if (journal->file != NULL)
        fputs (text, journal->file);
    }

  if (journal->file == NULL
      || !sync_file (journal->file, journal->path, error))
    {
      if (journal->file == NULL)
        {
          int saved = errno;
          g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (saved),
                       "%s: cannot open the journal: %s", journal->path,
                       g_strerror (saved));
        }
      elk__journal_close (journal);
      g_clear_pointer (finished, g_ptr_array_unref);
      return NULL;
    }
  return journal;
}

/**
 * elk__journal_append:
 *
 * Appends one finished point and waits until it is on disk.
 */
gboolean
elk__journal_append (Journal *journal,
                     const PointRecord *record,
                     GError **error)
{
  g_autofree char *line = elk__point_record_serialize (record);
  fputs (line, journal->file);
  return sync_file (journal->file, journal->path, error);
}

void
elk__journal_close (Journal *journal)
{
  if (journal->file != NULL)
    fclose (journal->file);
  g_free (journal->path);
  g_free (journal);
}

static gint
compare_points (gconstpointer a, gconstpointer b)
{
  const PointRecord *ra = *(PointRecord *const *) a;
  const PointRecord *rb = *(PointRecord *const *) b;
  return ra->point < rb->point ? -1 : ra->point > rb->point;
}

/* Whether a row of @records has routing statistics (the last of the
 * results writer's columns), which then get columns of their own. */
static gboolean
records_have_routing (GPtrArray *records)
{
  guint routing = elk__results_writer_get_n_columns () - 1;

  for (guint i = 0; i < records->len; i++)
    {
      const PointRecord *r = records->pdata[i];
      for (guint row = 0; row < r->n_rows && routing < r->n_fields; row++)
        {
          const char *value = r->fields[row * r->n_fields + routing];
          if (value != NULL && *value != '\0')
            return TRUE;
        }
    }
  return FALSE;
}

/**
 * elk__results_write:
 * @records: (element-type PointRecord): finished points, any order
 *
 * Writes results.csv, results.json and timings.csv from @records in point
 * order, through temporary files renamed into place.
 */
gboolean
elk__results_write (const char *dir,
                    const JournalHeader *header,
                    GPtrArray *records,
                    GError **error)
{
  g_autoptr (GPtrArray) axes = g_ptr_array_new ();
  ResultsWriter *writer;

  g_ptr_array_sort (records, compare_points);
  for (guint i = 0; i < header->axes->len; i++)
    g_ptr_array_add (axes, header->axes->pdata[i]);
  g_ptr_array_add (axes, NULL);

  writer = elk__results_writer_open (dir, header->experiment, header->hash,
                                     (const char *const *) axes->pdata,
                                     header->plugins,
                                     records_have_routing (records), error);
  if (writer == NULL)
    return FALSE;
  for (guint i = 0; i < records->len; i++)
    {
      const PointRecord *r = records->pdata[i];
      guint n_fields = elk__results_writer_get_n_columns () + header->axes->len;

      /* A journal an elk with other columns wrote cannot be read by
       * column. */
      if (r->n_rows > 0 && r->n_fields != n_fields)
        {
          g_set_error (error, ELK_EXPERIMENT_ERROR,
                       ELK_EXPERIMENT_ERROR_INVALID,
                       "%s: the journal's point %u has %u fields per row; "
                       "this elk writes %u (the journal comes from another "
                       "elk build: run again without --resume)",
                       dir, r->point, r->n_fields, n_fields);
          elk__results_writer_abort (writer);
          return FALSE;
        }
      for (guint row = 0; row < r->n_rows; row++)
        if (!elk__results_writer_add_row (writer,
                                          (const char *const *) r->fields
                                            + row * r->n_fields,
                                          error)
            || !elk__results_writer_add_timing (
                 writer,
                 (const char *const *) r->timings + row * ELK_TIMING_FIELDS,
                 error))
          {
            elk__results_writer_abort (writer);
            return FALSE;
          }
    }
  return elk__results_writer_commit (writer, error);
}
