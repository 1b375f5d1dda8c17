/* elk-journal.h: the durable record of finished experiment points.
 * Private to libelk; see elk-journal.c. */
#pragma once

#include "elk-private.h"

#define ELK_TIMING_FIELDS 7

typedef struct
{
  guint point;
  char *key;           /* hash of the point's full configuration */
  guint status;        /* ElkRunStatus of this point */
  guint n_rows;
  guint n_fields;      /* per row */
  char **fields;       /* n_rows * n_fields, entries may be NULL */
  char **timings;      /* n_rows * ELK_TIMING_FIELDS */
} PointRecord;

typedef struct
{
  char *elk_version;
  char *experiment;
  char *hash;
  guint n_points;
  guint shard_k;       /* 1-based; 1/1 when not sharded */
  guint shard_n;
  GPtrArray *axes;     /* char * */
  GPtrArray *plugins;  /* char * */
} JournalHeader;

typedef struct _Journal Journal;

void elk__point_record_free (PointRecord *record);
void elk__journal_header_clear (JournalHeader *header);

Journal *elk__journal_open (const char *dir,
                            const JournalHeader *header,
                            gboolean resume,
                            GPtrArray **finished,
                            GError **error);
gboolean elk__journal_append (Journal *journal,
                              const PointRecord *record,
                              GError **error);
void elk__journal_close (Journal *journal);
gboolean elk__journal_read (const char *dir,
                            JournalHeader *header,
                            GPtrArray **records,
                            GError **error);

char *elk__point_record_serialize (const PointRecord *record);
PointRecord *elk__point_record_parse (const char *line, GError **error);

gboolean elk__results_write (const char *dir,
                             const JournalHeader *header,
                             GPtrArray *records,
                             GError **error);
