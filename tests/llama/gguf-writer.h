/* gguf-writer.h: a tiny GGUF writer for the tests.
 *
 * Tests build synthetic files (either byte order, version 2 or 3, every
 * value type, nested arrays) and corrupted variants of them.  The writer is
 * written from the format description, independently of the reader under
 * test, and records the offset of every field so that tests can truncate
 * or patch a file at exact field boundaries.
 */
#pragma once

#include <string.h>
#include <glib.h>

typedef struct
{
  GByteArray *buf;
  gboolean big_endian;
  GArray *boundaries; /* gsize: offsets where a field starts */
} GgufWriter;

static inline GgufWriter *
gw_new (gboolean big_endian)
{
  GgufWriter *w = g_new0 (GgufWriter, 1);
  w->buf = g_byte_array_new ();
  w->big_endian = big_endian;
  w->boundaries = g_array_new (FALSE, FALSE, sizeof (gsize));
  return w;
}

static inline void
gw_free (GgufWriter *w)
{
  g_byte_array_unref (w->buf);
  g_array_unref (w->boundaries);
  g_free (w);
}

static inline void
gw_mark (GgufWriter *w)
{
  gsize at = w->buf->len;
  g_array_append_val (w->boundaries, at);
}

static inline void
gw_uint (GgufWriter *w, guint64 v, guint size)
{
  guint8 bytes[8];
  for (guint i = 0; i < size; i++)
    {
      guint shift = 8 * (w->big_endian ? size - 1 - i : i);
      bytes[i] = (guint8) (v >> shift);
    }
  gw_mark (w);
  g_byte_array_append (w->buf, bytes, size);
}

static inline void gw_u8 (GgufWriter *w, guint8 v) { gw_uint (w, v, 1); }
static inline void gw_u16 (GgufWriter *w, guint16 v) { gw_uint (w, v, 2); }
static inline void gw_u32 (GgufWriter *w, guint32 v) { gw_uint (w, v, 4); }
static inline void gw_u64 (GgufWriter *w, guint64 v) { gw_uint (w, v, 8); }

static inline void
gw_f32 (GgufWriter *w, float f)
{
  union { float f; guint32 u; } b = { .f = f };
  gw_u32 (w, b.u);
}

static inline void
gw_f64 (GgufWriter *w, double f)
{
  union { double f; guint64 u; } b = { .f = f };
  gw_u64 (w, b.u);
}

static inline void
gw_str (GgufWriter *w, const char *s)
{
  gw_u64 (w, strlen (s));
  if (*s)
    {
      gw_mark (w);
      g_byte_array_append (w->buf, (const guint8 *) s, (guint) strlen (s));
    }
}

static inline void
gw_header (GgufWriter *w, guint32 version, guint64 n_tensors, guint64 n_kv)
{
  gw_mark (w);
  g_byte_array_append (w->buf, (const guint8 *) "GGUF", 4);
  gw_u32 (w, version);
  gw_u64 (w, n_tensors);
  gw_u64 (w, n_kv);
}

/* Value type ids of the format. */
enum
{
  GW_U8 = 0, GW_I8, GW_U16, GW_I16, GW_U32, GW_I32, GW_F32, GW_BOOL,
  GW_STR, GW_ARR, GW_U64, GW_I64, GW_F64
};

static inline void
gw_key (GgufWriter *w, const char *key, guint32 type)
{
  gw_str (w, key);
  gw_u32 (w, type);
}

static inline void
gw_kv_u32 (GgufWriter *w, const char *key, guint32 v)
{
  gw_key (w, key, GW_U32);
  gw_u32 (w, v);
}

static inline void
gw_kv_str (GgufWriter *w, const char *key, const char *v)
{
  gw_key (w, key, GW_STR);
  gw_str (w, v);
}

static inline void
gw_kv_f32 (GgufWriter *w, const char *key, float v)
{
  gw_key (w, key, GW_F32);
  gw_f32 (w, v);
}

static inline void
gw_tensor_info (GgufWriter *w, const char *name, guint n_dims,
                const guint64 *dims, guint32 type, guint64 offset)
{
  gw_str (w, name);
  gw_u32 (w, n_dims);
  for (guint i = 0; i < n_dims; i++)
    gw_u64 (w, dims[i]);
  gw_u32 (w, type);
  gw_u64 (w, offset);
}

static inline void
gw_pad (GgufWriter *w, gsize alignment)
{
  static const guint8 zero[64] = { 0 };
  gsize pad = (alignment - w->buf->len % alignment) % alignment;
  if (pad)
    {
      gw_mark (w);
      g_byte_array_append (w->buf, zero, (guint) pad);
    }
}

static inline void
gw_zeros (GgufWriter *w, gsize n)
{
  guint8 *zero = g_malloc0 (n);
  gw_mark (w);
  g_byte_array_append (w->buf, zero, (guint) n);
  g_free (zero);
}

static inline GBytes *
gw_bytes (GgufWriter *w)
{
  return g_bytes_new (w->buf->data, w->buf->len);
}
