/* elk-gguf.c: a bounds-checked reader for GGUF files, versions 2 and 3.
 *
 * GGUF (ggml's model format) is a header, typed key-value metadata, tensor
 * infos, padding to the alignment, and the tensor data.  elk only needs the
 * metadata and the tensor infos, so the file is mapped and never read past
 * the tensor infos: the data pages are never touched.
 *
 * Nothing read from the file is trusted before it is checked against the
 * file size.  A count is compared with the smallest number of bytes its
 * elements could occupy before anything is allocated for it, so a 2^40
 * element count in a 700 KB file is an error, not an allocation.  Every
 * error names the file, the byte offset of the field and what was expected.
 *
 * Big-endian files (produced by gguf-py with --bigendian) differ only in
 * byte order; the magic is the same four bytes, so the byte order is taken
 * from the version field, which is 2 or 3 in the file's own order.
 */
#include "config.h"

#include <string.h>

#include "elk-llama-private.h"

/* The quark name is stringified, dashes and all. */
/* clang-format off */
G_DEFINE_QUARK (elk-llama-error-quark, elk__llama_error)
/* clang-format on */

/* Nested arrays are legal, but each level costs 12 bytes, so a hostile
 * file could nest deeply enough to exhaust the stack.  Real files nest at
 * most twice. */
#define MAX_ARRAY_DEPTH 32

#define DEFAULT_ALIGNMENT 32

struct _Gguf
{
  char *path;
  LlamaLimits limits;
  GMappedFile *map;
  GBytes *bytes;
  const guint8 *data;
  gsize size;

  guint32 version;
  gboolean big_endian;
  guint64 alignment;
  guint64 data_offset;

  GPtrArray *keys;          /* char*, in file order */
  GArray *values;           /* GgufValue, same order */
  GHashTable *key_index;    /* key -> index + 1 */
  GArray *tensors;          /* GgufTensor */
  GHashTable *tensor_index; /* name -> index + 1 */
};

typedef struct
{
  const Gguf *gguf;
  gsize pos;
} Reader;

/* ggml tensor types: block size (elements) and bytes per block.  Ids with a
 * zero block size were removed from ggml and no longer appear in files. */
static const struct
{
  const char *name;
  guint block_size;
  guint type_size;
} ggml_types[] = {
  [0] = { "F32", 1, 4 },        [1] = { "F16", 1, 2 },
  [2] = { "Q4_0", 32, 18 },     [3] = { "Q4_1", 32, 20 },
  [4] = { "Q4_2", 0, 0 },       [5] = { "Q4_3", 0, 0 },
  [6] = { "Q5_0", 32, 22 },     [7] = { "Q5_1", 32, 24 },
  [8] = { "Q8_0", 32, 34 },     [9] = { "Q8_1", 32, 36 },
  [10] = { "Q2_K", 256, 84 },   [11] = { "Q3_K", 256, 110 },
  [12] = { "Q4_K", 256, 144 },  [13] = { "Q5_K", 256, 176 },
  [14] = { "Q6_K", 256, 210 },  [15] = { "Q8_K", 256, 292 },
  [16] = { "IQ2_XXS", 256, 66 }, [17] = { "IQ2_XS", 256, 74 },
  [18] = { "IQ3_XXS", 256, 98 }, [19] = { "IQ1_S", 256, 50 },
  [20] = { "IQ4_NL", 32, 18 },  [21] = { "IQ3_S", 256, 110 },
  [22] = { "IQ2_S", 256, 82 },  [23] = { "IQ4_XS", 256, 136 },
  [24] = { "I8", 1, 1 },        [25] = { "I16", 1, 2 },
  [26] = { "I32", 1, 4 },       [27] = { "I64", 1, 8 },
  [28] = { "F64", 1, 8 },       [29] = { "IQ1_M", 256, 56 },
  [30] = { "BF16", 1, 2 },      [31] = { "Q4_0_4_4", 0, 0 },
  [32] = { "Q4_0_4_8", 0, 0 },  [33] = { "Q4_0_8_8", 0, 0 },
  [34] = { "TQ1_0", 256, 54 },  [35] = { "TQ2_0", 256, 66 },
  [36] = { "IQ4_NL_4_4", 0, 0 }, [37] = { "IQ4_NL_4_8", 0, 0 },
  [38] = { "IQ4_NL_8_8", 0, 0 }, [39] = { "MXFP4", 32, 17 },
};

static const char *const value_type_names[] = {
  "uint8", "int8", "uint16", "int16", "uint32", "int32", "float32",
  "bool", "string", "array", "uint64", "int64", "float64",
};

const char *
elk__gguf_type_name (GgufType type)
{
  return (guint) type < G_N_ELEMENTS (value_type_names)
             ? value_type_names[type]
             : "invalid";
}

const char *
elk__ggml_type_name (guint32 type)
{
  return type < G_N_ELEMENTS (ggml_types) && ggml_types[type].name != NULL
             ? ggml_types[type].name
             : "unknown";
}

/**
 * elk__ggml_type_info:
 * Returns: %TRUE if @type is a ggml type that files may contain, with its
 *   block size in elements and its size in bytes per block.
 */
gboolean
elk__ggml_type_info (guint32 type, guint *block_size, guint *type_size)
{
  if (type >= G_N_ELEMENTS (ggml_types) || ggml_types[type].block_size == 0)
    return FALSE;
  *block_size = ggml_types[type].block_size;
  *type_size = ggml_types[type].type_size;
  return TRUE;
}

/**
 * elk__ggml_type_to_dtype:
 * Returns: %TRUE with the elk element type for the plain ggml types, and
 *   %FALSE (with %ELK_DTYPE_QUANTIZED) for block-quantized ones.
 */
gboolean
elk__ggml_type_to_dtype (guint32 type, ElkDType *dtype)
{
  switch (type)
    {
    case 0: *dtype = ELK_DTYPE_F32; return TRUE;
    case 1: *dtype = ELK_DTYPE_F16; return TRUE;
    case 24: *dtype = ELK_DTYPE_I8; return TRUE;
    case 26: *dtype = ELK_DTYPE_I32; return TRUE;
    case 27: *dtype = ELK_DTYPE_I64; return TRUE;
    case 28: *dtype = ELK_DTYPE_F64; return TRUE;
    case 30: *dtype = ELK_DTYPE_BF16; return TRUE;
    default: *dtype = ELK_DTYPE_QUANTIZED; return FALSE;
    }
}

/* Sizes of the fixed-size value types; 0 for string and array. */
static gsize
value_type_size (GgufType type)
{
  switch (type)
    {
    case GGUF_TYPE_UINT8:
    case GGUF_TYPE_INT8:
    case GGUF_TYPE_BOOL:
      return 1;
    case GGUF_TYPE_UINT16:
    case GGUF_TYPE_INT16:
      return 2;
    case GGUF_TYPE_UINT32:
    case GGUF_TYPE_INT32:
    case GGUF_TYPE_FLOAT32:
      return 4;
    case GGUF_TYPE_UINT64:
    case GGUF_TYPE_INT64:
    case GGUF_TYPE_FLOAT64:
      return 8;
    default:
      return 0;
    }
}

/* The fewest bytes one element of @type can occupy: a string is at least
 * its 8-byte length, an array at least its type and count. */
static gsize
value_min_size (GgufType type)
{
  if (type == GGUF_TYPE_STRING)
    return 8;
  if (type == GGUF_TYPE_ARRAY)
    return 12;
  return value_type_size (type);
}

/**
 * elk__llama_limits_init:
 *
 * Fills @limits with the defaults (LLAMA_DEFAULT_*).
 */
void
elk__llama_limits_init (LlamaLimits *limits)
{
  limits->max_file_size = LLAMA_DEFAULT_MAX_FILE_SIZE;
  limits->max_config_size = LLAMA_DEFAULT_MAX_CONFIG_SIZE;
  limits->max_tensors = LLAMA_DEFAULT_MAX_TENSORS;
  limits->max_metadata = LLAMA_DEFAULT_MAX_METADATA;
  limits->max_string_length = LLAMA_DEFAULT_MAX_STRING_LENGTH;
  limits->max_array_length = LLAMA_DEFAULT_MAX_ARRAY_LENGTH;
  limits->max_json_depth = LLAMA_DEFAULT_MAX_JSON_DEPTH;
}

/* Past a limit the message names the limit and the frontend parameter
 * that raises it. */
static void
set_limit_error (GError **error,
                 const Gguf *gguf,
                 gsize offset,
                 const char *what,
                 guint64 value,
                 const char *param,
                 guint64 limit)
{
  g_set_error (error, LLAMA_ERROR, LLAMA_ERROR_LIMIT,
               "%s: offset %" G_GSIZE_FORMAT ": %s is %" G_GUINT64_FORMAT
               ", more than the %s limit of %" G_GUINT64_FORMAT "; raise "
               "the llama frontend's '%s' parameter to read this file",
               gguf->path, offset, what, value, param, limit, param);
}

G_GNUC_PRINTF (4, 5)
static void
set_format_error (
    GError **error, const Gguf *gguf, gsize offset, const char *format, ...)
{
  va_list args;
  g_autofree char *message = NULL;

  va_start (args, format);
  message = g_strdup_vprintf (format, args);
  va_end (args);
  g_set_error (error, LLAMA_ERROR, LLAMA_ERROR_FORMAT,
               "%s: offset %" G_GSIZE_FORMAT ": %s", gguf->path, offset,
               message);
}

static gboolean
need (Reader *r, guint64 n, const char *what, GError **error)
{
  gsize left = r->gguf->size - r->pos;
  if (n > left)
    {
      set_format_error (error, r->gguf, r->pos,
                        "truncated %s: needs %" G_GUINT64_FORMAT
                        " bytes, the file has %" G_GSIZE_FORMAT
                        " left (file size %" G_GSIZE_FORMAT ")",
                        what, n, left, r->gguf->size);
      return FALSE;
    }
  return TRUE;
}

static guint64
load_uint (const Gguf *gguf, gsize pos, gsize size)
{
  guint64 v = 0;
  const guint8 *p = gguf->data + pos;

  if (gguf->big_endian)
    for (gsize i = 0; i < size; i++)
      v = (v << 8) | p[i];
  else
    for (gsize i = size; i > 0; i--)
      v = (v << 8) | p[i - 1];
  return v;
}

static gboolean
read_uint (Reader *r, gsize size, guint64 *out, const char *what,
           GError **error)
{
  if (!need (r, size, what, error))
    return FALSE;
  *out = load_uint (r->gguf, r->pos, size);
  r->pos += size;
  return TRUE;
}

static gboolean
read_u32 (Reader *r, guint32 *out, const char *what, GError **error)
{
  guint64 v;
  if (!read_uint (r, 4, &v, what, error))
    return FALSE;
  *out = (guint32) v;
  return TRUE;
}

static gboolean
read_u64 (Reader *r, guint64 *out, const char *what, GError **error)
{
  return read_uint (r, 8, out, what, error);
}

static gboolean
read_string (Reader *r, const char **str, gsize *len, const char *what,
             GError **error)
{
  gsize start = r->pos;
  guint64 n;
  g_autofree char *length_what = g_strdup_printf ("length of %s", what);

  if (!read_u64 (r, &n, length_what, error))
    return FALSE;
  if (n > r->gguf->size - r->pos)
    {
      set_format_error (error, r->gguf, start,
                        "%s has length %" G_GUINT64_FORMAT
                        " but only %" G_GSIZE_FORMAT
                        " bytes of the file remain (file size %"
                        G_GSIZE_FORMAT ")",
                        what, n, r->gguf->size - r->pos, r->gguf->size);
      return FALSE;
    }
  if (n > r->gguf->limits.max_string_length)
    {
      g_autofree char *length_of = g_strdup_printf ("the length of %s",
                                                    what);
      set_limit_error (error, r->gguf, start, length_of, n,
                       "max-string-length",
                       r->gguf->limits.max_string_length);
      return FALSE;
    }
  *str = (const char *) r->gguf->data + r->pos;
  *len = (gsize) n;
  r->pos += (gsize) n;
  return TRUE;
}

/* Reads one value of @type at the reader's position into @value, checking
 * every element of arrays (bools must be 0 or 1, nested types must exist)
 * without allocating anything. */
static gboolean
read_value (Reader *r,
            GgufType type,
            GgufValue *value,
            const char *key,
            guint depth,
            GError **error)
{
  gsize start = r->pos;
  guint64 v;

  memset (value, 0, sizeof (*value));
  value->type = type;
  value->offset = r->pos;

  switch (type)
    {
    case GGUF_TYPE_UINT8:
    case GGUF_TYPE_UINT16:
    case GGUF_TYPE_UINT32:
    case GGUF_TYPE_UINT64:
      if (!read_uint (r, value_type_size (type), &v, key, error))
        return FALSE;
      value->u = v;
      return TRUE;

    case GGUF_TYPE_INT8:
    case GGUF_TYPE_INT16:
    case GGUF_TYPE_INT32:
    case GGUF_TYPE_INT64:
      {
        gsize size = value_type_size (type);
        if (!read_uint (r, size, &v, key, error))
          return FALSE;
        /* Sign-extend from the field width. */
        if (size < 8 && (v & (G_GUINT64_CONSTANT (1) << (size * 8 - 1))))
          v |= ~((G_GUINT64_CONSTANT (1) << (size * 8)) - 1);
        value->i = (gint64) v;
        return TRUE;
      }

    case GGUF_TYPE_FLOAT32:
      {
        union { guint32 u; gfloat f; } bits;
        if (!read_uint (r, 4, &v, key, error))
          return FALSE;
        bits.u = (guint32) v;
        value->f = bits.f;
        return TRUE;
      }

    case GGUF_TYPE_FLOAT64:
      {
        union { guint64 u; gdouble f; } bits;
        if (!read_uint (r, 8, &v, key, error))
          return FALSE;
        bits.u = v;
        value->f = bits.f;
        return TRUE;
      }

    case GGUF_TYPE_BOOL:
      if (!read_uint (r, 1, &v, key, error))
        return FALSE;
      if (v > 1)
        {
          set_format_error (error, r->gguf, start,
                            "bool value of '%s' is %" G_GUINT64_FORMAT
                            " (expected 0 or 1)", key, v);
          return FALSE;
        }
      value->u = v;
      return TRUE;

    case GGUF_TYPE_STRING:
      return read_string (r, &value->str, &value->str_len, key, error);

    case GGUF_TYPE_ARRAY:
      {
        guint32 elem_type;
        guint64 count;
        gsize min_size;

        if (depth >= MAX_ARRAY_DEPTH)
          {
            set_format_error (error, r->gguf, start,
                              "arrays in '%s' are nested more than %d deep",
                              key, MAX_ARRAY_DEPTH);
            return FALSE;
          }
        if (!read_u32 (r, &elem_type, "array element type", error))
          return FALSE;
        if (elem_type >= GGUF_N_TYPES)
          {
            set_format_error (error, r->gguf, start,
                              "array '%s' has unknown element type id %u "
                              "(expected 0..%d)",
                              key, elem_type, GGUF_N_TYPES - 1);
            return FALSE;
          }
        if (!read_u64 (r, &count, "array length", error))
          return FALSE;
        min_size = value_min_size ((GgufType) elem_type);
        if (count > (r->gguf->size - r->pos) / min_size)
          {
            set_format_error (error, r->gguf, start + 4,
                              "array '%s' claims %" G_GUINT64_FORMAT
                              " elements of type %s, more than the "
                              "%" G_GSIZE_FORMAT " remaining bytes can hold",
                              key, count,
                              elk__gguf_type_name ((GgufType) elem_type),
                              r->gguf->size - r->pos);
            return FALSE;
          }
        if (count > r->gguf->limits.max_array_length)
          {
            g_autofree char *what = g_strdup_printf ("the length of array "
                                                     "'%s'", key);
            set_limit_error (error, r->gguf, start + 4, what, count,
                             "max-array-length",
                             r->gguf->limits.max_array_length);
            return FALSE;
          }
        value->elem_type = (GgufType) elem_type;
        value->count = count;
        value->offset = r->pos;

        if (elem_type != GGUF_TYPE_STRING && elem_type != GGUF_TYPE_ARRAY
            && elem_type != GGUF_TYPE_BOOL)
          {
            /* Fixed-size elements: the count check above already proved
             * that they fit. */
            r->pos += (gsize) count * min_size;
            return TRUE;
          }
        for (guint64 i = 0; i < count; i++)
          {
            GgufValue elem;
            if (!read_value (r, (GgufType) elem_type, &elem, key, depth + 1,
                             error))
              return FALSE;
          }
        return TRUE;
      }

    default:
      set_format_error (error, r->gguf, start,
                        "'%s' has unknown value type id %u (expected 0..%d)",
                        key, (guint) type, GGUF_N_TYPES - 1);
      return FALSE;
    }
}

static void
tensor_clear (gpointer data)
{
  GgufTensor *t = data;
  g_free (t->name);
}

static gboolean
is_power_of_two (guint64 v)
{
  return v != 0 && (v & (v - 1)) == 0;
}

static gint
compare_tensor_offsets (gconstpointer a, gconstpointer b)
{
  const GgufTensor *ta = *(GgufTensor *const *) a;
  const GgufTensor *tb = *(GgufTensor *const *) b;
  return ta->offset < tb->offset ? -1 : ta->offset > tb->offset ? 1 : 0;
}

static gboolean
parse_header (
    Gguf *gguf, Reader *r, guint64 *n_tensors, guint64 *n_kv, GError **error)
{
  guint32 version_le;

  if (gguf->size < 4)
    {
      set_format_error (error, gguf, 0,
                        "the file has %" G_GSIZE_FORMAT " bytes, too few for "
                        "the GGUF magic", gguf->size);
      return FALSE;
    }
  if (memcmp (gguf->data, "GGUF", 4) != 0)
    {
      g_autofree char *shown = g_strescape ((const char[5]) {
                                              (char) gguf->data[0],
                                              (char) gguf->data[1],
                                              (char) gguf->data[2],
                                              (char) gguf->data[3], 0 },
                                            NULL);
      set_format_error (error, gguf, 0,
                        "bad magic \"%s\" (expected \"GGUF\"); this is not a "
                        "GGUF file", shown);
      return FALSE;
    }
  r->pos = 4;
  if (!need (r, 4, "version", error))
    return FALSE;
  version_le = (guint32) load_uint (gguf, 4, 4);
  if (version_le == 2 || version_le == 3 || version_le == 1)
    gguf->version = version_le;
  else if (GUINT32_SWAP_LE_BE (version_le) <= 3
           && GUINT32_SWAP_LE_BE (version_le) >= 1)
    {
      gguf->big_endian = TRUE;
      gguf->version = GUINT32_SWAP_LE_BE (version_le);
    }
  else
    {
      set_format_error (error, gguf, 4,
                        "unknown GGUF version %u (0x%08x); elk reads "
                        "versions 2 and 3", version_le, version_le);
      return FALSE;
    }
  r->pos = 8;
  if (gguf->version == 1)
    {
      g_set_error (error, LLAMA_ERROR, LLAMA_ERROR_UNSUPPORTED,
                   "%s: offset 4: GGUF version 1 (32-bit counts) is not "
                   "supported; elk reads versions 2 and 3; convert the file "
                   "with a current llama.cpp",
                   gguf->path);
      return FALSE;
    }

  if (!read_u64 (r, n_tensors, "tensor count", error)
      || !read_u64 (r, n_kv, "metadata key-value count", error))
    return FALSE;

  /* A key-value pair is at least an 8-byte key length, a 4-byte type and
   * a 1-byte value; a tensor info at least 8 + 4 + 8 + 4 + 8 bytes. */
  if (*n_kv > (gguf->size - r->pos) / 13)
    {
      set_format_error (error, gguf, 16,
                        "metadata count %" G_GUINT64_FORMAT " cannot fit in "
                        "the %" G_GSIZE_FORMAT " bytes that follow the "
                        "header", *n_kv, gguf->size - r->pos);
      return FALSE;
    }
  if (*n_tensors > (gguf->size - r->pos) / 32)
    {
      set_format_error (error, gguf, 8,
                        "tensor count %" G_GUINT64_FORMAT " cannot fit in "
                        "the %" G_GSIZE_FORMAT " bytes that follow the "
                        "header", *n_tensors, gguf->size - r->pos);
      return FALSE;
    }
  if (*n_kv > gguf->limits.max_metadata)
    {
      set_limit_error (error, gguf, 16, "the metadata count", *n_kv,
                       "max-metadata-entries", gguf->limits.max_metadata);
      return FALSE;
    }
  if (*n_tensors > gguf->limits.max_tensors)
    {
      set_limit_error (error, gguf, 8, "the tensor count", *n_tensors,
                       "max-tensors", gguf->limits.max_tensors);
      return FALSE;
    }
  return TRUE;
}

static gboolean
parse_metadata (Gguf *gguf, Reader *r, guint64 n_kv, GError **error)
{
  for (guint64 i = 0; i < n_kv; i++)
    {
      gsize key_at = r->pos;
      const char *key_ptr;
      gsize key_len;
      guint32 type;
      GgufValue value;
      char *key;

      if (!read_string (r, &key_ptr, &key_len, "metadata key", error))
        return FALSE;
      key = g_strndup (key_ptr, key_len);
      g_ptr_array_add (gguf->keys, key);
      if (strlen (key) != key_len || !g_utf8_validate (key, -1, NULL))
        {
          set_format_error (error, gguf, key_at,
                            "metadata key %" G_GUINT64_FORMAT " is not a "
                            "valid UTF-8 string without NUL bytes", i);
          return FALSE;
        }
      if (g_hash_table_contains (gguf->key_index, key))
        {
          set_format_error (error, gguf, key_at,
                            "metadata key '%s' appears twice", key);
          return FALSE;
        }
      if (!read_u32 (r, &type, "value type", error))
        return FALSE;
      if (type >= GGUF_N_TYPES)
        {
          set_format_error (error, gguf, r->pos - 4,
                            "'%s' has unknown value type id %u (expected "
                            "0..%d)",
                            key, type, GGUF_N_TYPES - 1);
          return FALSE;
        }
      if (!read_value (r, (GgufType) type, &value, key, 0, error))
        return FALSE;
      g_array_append_val (gguf->values, value);
      g_hash_table_insert (gguf->key_index, key,
                           GUINT_TO_POINTER (gguf->values->len));
    }
  return TRUE;
}

static gboolean
parse_alignment (Gguf *gguf, GError **error)
{
  const GgufValue *v = elk__gguf_lookup (gguf, "general.alignment");
  guint64 a;

  gguf->alignment = DEFAULT_ALIGNMENT;
  if (v == NULL)
    return TRUE;
  switch (v->type)
    {
    case GGUF_TYPE_UINT8:
    case GGUF_TYPE_UINT16:
    case GGUF_TYPE_UINT32:
    case GGUF_TYPE_UINT64:
      a = v->u;
      break;
    case GGUF_TYPE_INT8:
    case GGUF_TYPE_INT16:
    case GGUF_TYPE_INT32:
    case GGUF_TYPE_INT64:
      a = v->i > 0 ? (guint64) v->i : 0;
      break;
    default:
      set_format_error (error, gguf, v->offset,
                        "general.alignment is a %s (expected uint32)",
                        elk__gguf_type_name (v->type));
      return FALSE;
    }
  if (!is_power_of_two (a) || a > (G_GUINT64_CONSTANT (1) << 30))
    {
      set_format_error (error, gguf, v->offset,
                        "general.alignment is %" G_GUINT64_FORMAT
                        " (expected a power of two, at most 2^30)", a);
      return FALSE;
    }
  gguf->alignment = a;
  return TRUE;
}

static gboolean
parse_tensor_infos (Gguf *gguf, Reader *r, guint64 n_tensors, GError **error)
{
  for (guint64 i = 0; i < n_tensors; i++)
    {
      GgufTensor t = { 0 };
      gsize info_at = r->pos;
      const char *name_ptr;
      gsize name_len;
      guint32 n_dims;
      guint block_size, type_size;
      guint64 blocks;

      if (!read_string (r, &name_ptr, &name_len, "tensor name", error))
        return FALSE;
      t.name = g_strndup (name_ptr, name_len);
      g_array_append_val (gguf->tensors, t);
      if (strlen (t.name) != name_len || !g_utf8_validate (t.name, -1, NULL))
        {
          set_format_error (error, gguf, info_at,
                            "tensor %" G_GUINT64_FORMAT " has a name that is "
                            "not valid UTF-8 without NUL bytes", i);
          return FALSE;
        }
      if (g_hash_table_contains (gguf->tensor_index, t.name))
        {
          set_format_error (error, gguf, info_at,
                            "tensor '%s' appears twice", t.name);
          return FALSE;
        }
      g_hash_table_insert (gguf->tensor_index, t.name,
                           GUINT_TO_POINTER (gguf->tensors->len));

      if (!read_u32 (r, &n_dims, "tensor rank", error))
        return FALSE;
      if (n_dims < 1 || n_dims > GGUF_MAX_DIMS)
        {
          set_format_error (error, gguf, r->pos - 4,
                            "tensor '%s' has %u dimensions (expected 1..%d)",
                            t.name, n_dims, GGUF_MAX_DIMS);
          return FALSE;
        }
      t.n_dims = n_dims;
      t.n_elements = 1;
      for (guint d = 0; d < n_dims; d++)
        {
          if (!read_u64 (r, &t.dims[d], "tensor dimension", error))
            return FALSE;
          /* Dimensions are int64 in ggml: reject negative ones and
           * products that overflow. */
          if (t.dims[d] == 0 || t.dims[d] > (guint64) G_MAXINT64
              || !g_uint64_checked_mul (&t.n_elements, t.n_elements,
                                        t.dims[d])
              || t.n_elements > (guint64) G_MAXINT64)
            {
              set_format_error (error, gguf, r->pos - 8,
                                "tensor '%s' dimension %u is %"
                                G_GUINT64_FORMAT " (expected 1..2^63 with "
                                "a product below 2^63)", t.name, d,
                                t.dims[d]);
              return FALSE;
            }
        }
      if (!read_u32 (r, &t.type, "tensor type", error))
        return FALSE;
      if (!elk__ggml_type_info (t.type, &block_size, &type_size))
        {
          g_set_error (error, LLAMA_ERROR, LLAMA_ERROR_UNSUPPORTED,
                       "%s: offset %" G_GSIZE_FORMAT ": tensor '%s' has "
                       "unknown or removed ggml type id %u (%s)",
                       gguf->path, r->pos - 4, t.name, t.type,
                       elk__ggml_type_name (t.type));
          return FALSE;
        }
      if (t.dims[0] % block_size != 0)
        {
          set_format_error (error, gguf, r->pos - 4,
                            "tensor '%s' of type %s has %" G_GUINT64_FORMAT
                            " elements per row, not a multiple of the "
                            "block size %u",
                            t.name, elk__ggml_type_name (t.type), t.dims[0],
                            block_size);
          return FALSE;
        }
      blocks = t.n_elements / block_size;
      if (!g_uint64_checked_mul (&t.bytes, blocks, type_size))
        {
          set_format_error (error, gguf, info_at,
                            "tensor '%s' is larger than 2^64 bytes", t.name);
          return FALSE;
        }
      if (!read_u64 (r, &t.offset, "tensor data offset", error))
        return FALSE;
      if (t.offset % gguf->alignment != 0)
        {
          set_format_error (error, gguf, r->pos - 8,
                            "tensor '%s' data offset %" G_GUINT64_FORMAT
                            " is not a multiple of the alignment %"
                            G_GUINT64_FORMAT, t.name, t.offset,
                            gguf->alignment);
          return FALSE;
        }
      g_array_index (gguf->tensors, GgufTensor, gguf->tensors->len - 1) = t;
    }
  return TRUE;
}

/* The data section starts at the first aligned offset after the tensor
 * infos.  A file without tensors may end right after its metadata (the
 * llama.cpp vocabulary files do), so the padding is only required when
 * there is data to pad for. */
static gboolean
check_tensor_data (Gguf *gguf, Reader *r, GError **error)
{
  guint64 data_offset = r->pos;
  guint64 data_size;
  g_autoptr (GPtrArray) sorted = NULL;

  if (data_offset % gguf->alignment != 0)
    data_offset += gguf->alignment - data_offset % gguf->alignment;
  gguf->data_offset = data_offset;
  if (gguf->tensors->len == 0)
    return TRUE;

  if (data_offset > gguf->size)
    {
      set_format_error (error, gguf, r->pos,
                        "the tensor data should start at offset %"
                        G_GUINT64_FORMAT " (aligned to %" G_GUINT64_FORMAT
                        ") but the file ends at %" G_GSIZE_FORMAT,
                        data_offset, gguf->alignment, gguf->size);
      return FALSE;
    }
  data_size = gguf->size - data_offset;

  sorted = g_ptr_array_new ();
  for (guint i = 0; i < gguf->tensors->len; i++)
    {
      GgufTensor *t = &g_array_index (gguf->tensors, GgufTensor, i);
      guint64 end;
      if (!g_uint64_checked_add (&end, t->offset, t->bytes)
          || end > data_size)
        {
          set_format_error (error, gguf, data_offset,
                            "tensor '%s' (%s, %" G_GUINT64_FORMAT " bytes at "
                            "data offset %" G_GUINT64_FORMAT ") runs past the "
                            "end of the file: the data section has "
                            "%" G_GUINT64_FORMAT " bytes",
                            t->name, elk__ggml_type_name (t->type), t->bytes,
                            t->offset, data_size);
          return FALSE;
        }
      g_ptr_array_add (sorted, t);
    }
  g_ptr_array_sort (sorted, compare_tensor_offsets);
  for (guint i = 1; i < sorted->len; i++)
    {
      const GgufTensor *a = sorted->pdata[i - 1];
      const GgufTensor *b = sorted->pdata[i];
      if (a->offset + a->bytes > b->offset)
        {
          set_format_error (error, gguf, data_offset + b->offset,
                            "the data of tensors '%s' and '%s' overlap",
                            a->name, b->name);
          return FALSE;
        }
    }
  return TRUE;
}

static Gguf *
gguf_new (const char *display_name, const LlamaLimits *limits)
{
  Gguf *gguf = g_new0 (Gguf, 1);
  gguf->path = g_strdup (display_name);
  if (limits != NULL)
    gguf->limits = *limits;
  else
    elk__llama_limits_init (&gguf->limits);
  gguf->keys = g_ptr_array_new_with_free_func (g_free);
  gguf->values = g_array_new (FALSE, TRUE, sizeof (GgufValue));
  gguf->key_index = g_hash_table_new (g_str_hash, g_str_equal);
  gguf->tensors = g_array_new (FALSE, TRUE, sizeof (GgufTensor));
  g_array_set_clear_func (gguf->tensors, tensor_clear);
  gguf->tensor_index = g_hash_table_new (g_str_hash, g_str_equal);
  return gguf;
}

static gboolean
gguf_parse (Gguf *gguf, GError **error)
{
  Reader r = { gguf, 0 };
  guint64 n_tensors, n_kv;

  if (gguf->size > gguf->limits.max_file_size)
    {
      set_limit_error (error, gguf, 0, "the file size", gguf->size,
                       "max-file-size", gguf->limits.max_file_size);
      return FALSE;
    }
  return parse_header (gguf, &r, &n_tensors, &n_kv, error)
         && parse_metadata (gguf, &r, n_kv, error)
         && parse_alignment (gguf, error)
         && parse_tensor_infos (gguf, &r, n_tensors, error)
         && check_tensor_data (gguf, &r, error);
}

/**
 * elk__gguf_open:
 * @path: a GGUF file
 * @error: return location for a #GError
 *
 * Maps @path and reads its metadata and tensor infos.  The tensor data is
 * never read.
 *
 * Returns: (transfer full) (nullable): the parsed file.
 */
Gguf *
elk__gguf_open (const char *path, GError **error)
{
  return elk__gguf_open_with_limits (path, NULL, error);
}

/**
 * elk__gguf_open_with_limits:
 * @limits: (nullable): the limits; %NULL for the defaults
 *
 * Like elk__gguf_open(), refusing a file beyond @limits with
 * %LLAMA_ERROR_LIMIT.
 */
Gguf *
elk__gguf_open_with_limits (const char *path,
                            const LlamaLimits *limits,
                            GError **error)
{
  g_autoptr (GError) local_error = NULL;
  Gguf *gguf;

  gguf = gguf_new (path, limits);
  gguf->map = g_mapped_file_new (path, FALSE, &local_error);
  if (gguf->map == NULL)
    {
      g_set_error (error, LLAMA_ERROR, LLAMA_ERROR_IO,
                   "%s: cannot read the model file: %s", path,
                   local_error->message);
      elk__gguf_free (gguf);
      return NULL;
    }
  gguf->data = (const guint8 *) g_mapped_file_get_contents (gguf->map);
  gguf->size = g_mapped_file_get_length (gguf->map);
  if (!gguf_parse (gguf, error))
    {
      elk__gguf_free (gguf);
      return NULL;
    }
  return gguf;
}

/**
 * elk__gguf_new_from_bytes:
 * @bytes: the whole file
 * @display_name: the name used in error messages
 *
 * Like elk__gguf_open() for a file held in memory (tests write synthetic
 * files this way too).
 */
Gguf *
elk__gguf_new_from_bytes (GBytes *bytes,
                          const char *display_name,
                          GError **error)
{
  return elk__gguf_new_from_bytes_with_limits (bytes, display_name, NULL,
                                               error);
}

Gguf *
elk__gguf_new_from_bytes_with_limits (GBytes *bytes,
                                      const char *display_name,
                                      const LlamaLimits *limits,
                                      GError **error)
{
  Gguf *gguf = gguf_new (display_name, limits);
  gsize size;

  gguf->bytes = g_bytes_ref (bytes);
  gguf->data = g_bytes_get_data (bytes, &size);
  gguf->size = size;
  if (gguf->data == NULL)
    gguf->data = (const guint8 *) "";
  if (!gguf_parse (gguf, error))
    {
      elk__gguf_free (gguf);
      return NULL;
    }
  return gguf;
}

void
elk__gguf_free (Gguf *gguf)
{
  if (gguf == NULL)
    return;
  g_hash_table_unref (gguf->key_index);
  g_hash_table_unref (gguf->tensor_index);
  g_ptr_array_unref (gguf->keys);
  g_array_unref (gguf->values);
  g_array_unref (gguf->tensors);
  g_clear_pointer (&gguf->map, g_mapped_file_unref);
  g_clear_pointer (&gguf->bytes, g_bytes_unref);
  g_free (gguf->path);
  g_free (gguf);
}

const char *
elk__gguf_get_path (const Gguf *gguf)
{
  return gguf->path;
}

guint32
elk__gguf_get_version (const Gguf *gguf)
{
  return gguf->version;
}

gboolean
elk__gguf_is_big_endian (const Gguf *gguf)
{
  return gguf->big_endian;
}

guint64
elk__gguf_get_alignment (const Gguf *gguf)
{
  return gguf->alignment;
}

guint64
elk__gguf_get_data_offset (const Gguf *gguf)
{
  return gguf->data_offset;
}

guint
elk__gguf_get_n_kv (const Gguf *gguf)
{
  return gguf->values->len;
}

const char *
elk__gguf_get_key (const Gguf *gguf, guint index)
{
  g_return_val_if_fail (index < gguf->values->len, NULL);
  return g_ptr_array_index (gguf->keys, index);
}

const GgufValue *
elk__gguf_get_value (const Gguf *gguf, guint index)
{
  g_return_val_if_fail (index < gguf->values->len, NULL);
  return &g_array_index (gguf->values, GgufValue, index);
}

const GgufValue *
elk__gguf_lookup (const Gguf *gguf, const char *key)
{
  guint i = GPOINTER_TO_UINT (g_hash_table_lookup (gguf->key_index, key));
  return i == 0 ? NULL : &g_array_index (gguf->values, GgufValue, i - 1);
}

/**
 * elk__gguf_array_nth:
 * @array: an ARRAY value of this file
 * @index: element index
 * @out: (out caller-allocates): the element
 *
 * Reads element @index of @array, walking the elements before it when they
 * have variable size (strings, nested arrays).
 */
gboolean
elk__gguf_array_nth (const Gguf *gguf,
                     const GgufValue *array,
                     guint64 index,
                     GgufValue *out,
                     GError **error)
{
  Reader r = { gguf, array->offset };
  gsize size;

  g_return_val_if_fail (array->type == GGUF_TYPE_ARRAY, FALSE);
  if (index >= array->count)
    {
      g_set_error (error, LLAMA_ERROR, LLAMA_ERROR_INVALID,
                   "%s: array element %" G_GUINT64_FORMAT " requested, the "
                   "array has %" G_GUINT64_FORMAT,
                   gguf->path, index, array->count);
      return FALSE;
    }
  size = value_type_size (array->elem_type);
  if (size != 0)
    r.pos += (gsize) index * size;
  else
    for (guint64 i = 0; i < index; i++)
      if (!read_value (&r, array->elem_type, out, "array element", 1, error))
        return FALSE;
  return read_value (&r, array->elem_type, out, "array element", 1, error);
}

static void
set_type_error (GError **error,
                const Gguf *gguf,
                const char *key,
                const GgufValue *v,
                const char *expected)
{
  g_set_error (error, LLAMA_ERROR, LLAMA_ERROR_FORMAT,
               "%s: offset %" G_GSIZE_FORMAT ": '%s' is a %s (expected %s)",
               gguf->path, v->offset, key, elk__gguf_type_name (v->type),
               expected);
}

/* Counts in real files are u32 although the spec suggests u64, and some
 * converters write signed types: accept every integer type, rejecting only
 * negative values. */
gboolean
elk__gguf_get_uint (const Gguf *gguf,
                    const char *key,
                    guint64 *out,
                    GError **error)
{
  const GgufValue *v = elk__gguf_lookup (gguf, key);

  if (v == NULL)
    return FALSE;
  switch (v->type)
    {
    case GGUF_TYPE_UINT8:
    case GGUF_TYPE_UINT16:
    case GGUF_TYPE_UINT32:
    case GGUF_TYPE_UINT64:
      *out = v->u;
      return TRUE;
    case GGUF_TYPE_INT8:
    case GGUF_TYPE_INT16:
    case GGUF_TYPE_INT32:
    case GGUF_TYPE_INT64:
      if (v->i < 0)
        {
          g_set_error (error, LLAMA_ERROR, LLAMA_ERROR_INVALID,
                       "%s: offset %" G_GSIZE_FORMAT
                       ": '%s' is %" G_GINT64_FORMAT
                       " (expected a non-negative count)",
                       gguf->path, v->offset, key, v->i);
          return FALSE;
        }
      *out = (guint64) v->i;
      return TRUE;
    default:
      set_type_error (error, gguf, key, v, "an integer");
      return FALSE;
    }
}

gboolean
elk__gguf_get_float (const Gguf *gguf,
                     const char *key,
                     double *out,
                     GError **error)
{
  const GgufValue *v = elk__gguf_lookup (gguf, key);

  if (v == NULL)
    return FALSE;
  switch (v->type)
    {
    case GGUF_TYPE_FLOAT32:
    case GGUF_TYPE_FLOAT64:
      *out = v->f;
      return TRUE;
    case GGUF_TYPE_UINT8:
    case GGUF_TYPE_UINT16:
    case GGUF_TYPE_UINT32:
    case GGUF_TYPE_UINT64:
      *out = (double) v->u;
      return TRUE;
    case GGUF_TYPE_INT8:
    case GGUF_TYPE_INT16:
    case GGUF_TYPE_INT32:
    case GGUF_TYPE_INT64:
      *out = (double) v->i;
      return TRUE;
    default:
      set_type_error (error, gguf, key, v, "a number");
      return FALSE;
    }
}

gboolean
elk__gguf_get_bool (const Gguf *gguf,
                    const char *key,
                    gboolean *out,
                    GError **error)
{
  const GgufValue *v = elk__gguf_lookup (gguf, key);

  if (v == NULL)
    return FALSE;
  if (v->type != GGUF_TYPE_BOOL)
    {
      set_type_error (error, gguf, key, v, "a bool");
      return FALSE;
    }
  *out = v->u != 0;
  return TRUE;
}

/**
 * elk__gguf_dup_string:
 * Returns: (transfer full) (nullable): the string value of @key, or %NULL
 *   if it is absent (no error) or not a string (error set).
 */
char *
elk__gguf_dup_string (const Gguf *gguf, const char *key, GError **error)
{
  const GgufValue *v = elk__gguf_lookup (gguf, key);

  if (v == NULL)
    return NULL;
  if (v->type != GGUF_TYPE_STRING)
    {
      set_type_error (error, gguf, key, v, "a string");
      return NULL;
    }
  return g_strndup (v->str, v->str_len);
}

guint
elk__gguf_get_n_tensors (const Gguf *gguf)
{
  return gguf->tensors->len;
}

const GgufTensor *
elk__gguf_get_tensor (const Gguf *gguf, guint index)
{
  g_return_val_if_fail (index < gguf->tensors->len, NULL);
  return &g_array_index (gguf->tensors, GgufTensor, index);
}

const GgufTensor *
elk__gguf_find_tensor (const Gguf *gguf, const char *name)
{
  guint i = GPOINTER_TO_UINT (g_hash_table_lookup (gguf->tensor_index, name));
  return i == 0 ? NULL : &g_array_index (gguf->tensors, GgufTensor, i - 1);
}
