/* test-gguf.c: the GGUF reader against the real corpus files, synthetic
 * files of every shape the format allows, and corrupted files.
 *
 * Corpus files are read from $ELK_CORPUS/gguf (../shared/corpus); the tests
 * that need them skip with a message when the folder is absent.
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include "elk-llama-private.h"
#include "gguf-writer.h"
#include "llama-test-util.h"

/* ------------------------------------------------------------------ */
/* Helpers                                                              */
/* ------------------------------------------------------------------ */

static guint64
u (const Gguf *g, const char *key)
{
  g_autoptr (GError) error = NULL;
  guint64 v = 0;
  gboolean ok = elk__gguf_get_uint (g, key, &v, &error);
  g_assert_no_error (error);
  if (!ok)
    g_error ("key %s is missing", key);
  return v;
}

static double
f (const Gguf *g, const char *key)
{
  g_autoptr (GError) error = NULL;
  double v = 0;
  gboolean ok = elk__gguf_get_float (g, key, &v, &error);
  g_assert_no_error (error);
  g_assert_true (ok);
  return v;
}

static char *
s (const Gguf *g, const char *key)
{
  g_autoptr (GError) error = NULL;
  char *v = elk__gguf_dup_string (g, key, &error);
  g_assert_no_error (error);
  g_assert_nonnull (v);
  return v;
}

static Gguf *
open_corpus (const char *name)
{
  g_autofree char *path = llama_test_corpus_file (name);
  g_autoptr (GError) error = NULL;
  Gguf *g;

  if (path == NULL)
    return NULL;
  g = elk__gguf_open (path, &error);
  g_assert_no_error (error);
  g_assert_nonnull (g);
  g_assert_cmpuint (elk__gguf_get_version (g), ==, 3);
  g_assert_false (elk__gguf_is_big_endian (g));
  g_assert_cmpuint (elk__gguf_get_alignment (g), ==, 32);
  g_assert_null (elk__gguf_lookup (g, "general.alignment"));
  return g;
}

static LlamaModel *
model_of (const char *name)
{
  g_autofree char *path = llama_test_corpus_file (name);
  g_autoptr (GError) error = NULL;
  LlamaModel *m;

  if (path == NULL)
    return NULL;
  m = elk__llama_model_new_from_file (path, &error);
  g_assert_no_error (error);
  g_assert_nonnull (m);
  return m;
}

/* ------------------------------------------------------------------ */
/* Corpus                                                               */
/* ------------------------------------------------------------------ */

static void
test_corpus_tiny_random (void)
{
  g_autoptr (Gguf) g = open_corpus ("llama-2-tiny-random.gguf");
  g_autofree char *arch = NULL, *name = NULL;
  const GgufValue *tokens, *scores, *types;
  GgufValue elem;
  g_autoptr (GError) error = NULL;
  guint64 params = 0, end = 0;
  static const struct
  {
    const char *name;
    guint n_dims;
    guint64 d0, d1;
    guint32 type;
  } expected[] = {
    { "token_embd.weight", 2, 8, 32000, 1 },
    { "blk.0.attn_q.weight", 2, 8, 8, 1 },
    { "blk.0.attn_k.weight", 2, 8, 8, 1 },
    { "blk.0.attn_v.weight", 2, 8, 8, 1 },
    { "blk.0.attn_output.weight", 2, 8, 8, 1 },
    { "blk.0.ffn_gate.weight", 2, 8, 32, 1 },
    { "blk.0.ffn_up.weight", 2, 8, 32, 1 },
    { "blk.0.ffn_down.weight", 2, 32, 8, 1 },
    { "blk.0.attn_norm.weight", 1, 8, 0, 0 },
    { "blk.0.ffn_norm.weight", 1, 8, 0, 0 },
    { "output_norm.weight", 1, 8, 0, 0 },
    { "output.weight", 2, 8, 32000, 1 },
  };

  if (g == NULL)
    return;
  g_assert_cmpuint (elk__gguf_get_n_kv (g), ==, 18);
  arch = s (g, "general.architecture");
  g_assert_cmpstr (arch, ==, "llama");
  name = s (g, "general.name");
  g_assert_cmpstr (name, ==, "LLaMA v2");
  g_assert_cmpuint (u (g, "llama.context_length"), ==, 4096);
  g_assert_cmpuint (u (g, "llama.embedding_length"), ==, 8);
  g_assert_cmpuint (u (g, "llama.block_count"), ==, 1);
  g_assert_cmpuint (u (g, "llama.feed_forward_length"), ==, 32);
  g_assert_cmpuint (u (g, "llama.rope.dimension_count"), ==, 4);
  g_assert_cmpuint (u (g, "llama.attention.head_count"), ==, 2);
  g_assert_cmpuint (u (g, "llama.attention.head_count_kv"), ==, 2);
  g_assert_cmpuint (u (g, "general.file_type"), ==, 1);
  g_assert_cmpfloat_with_epsilon (
      f (g, "llama.attention.layer_norm_rms_epsilon"), 1e-5, 1e-12);
  g_assert_null (elk__gguf_lookup (g, "llama.vocab_size"));
  g_assert_cmpint (elk__gguf_lookup (g, "llama.context_length")->type, ==,
                   GGUF_TYPE_UINT32);

  tokens = elk__gguf_lookup (g, "tokenizer.ggml.tokens");
  scores = elk__gguf_lookup (g, "tokenizer.ggml.scores");
  types = elk__gguf_lookup (g, "tokenizer.ggml.token_type");
  g_assert_nonnull (tokens);
  g_assert_cmpint (tokens->elem_type, ==, GGUF_TYPE_STRING);
  g_assert_cmpuint (tokens->count, ==, 32000);
  g_assert_cmpint (scores->elem_type, ==, GGUF_TYPE_FLOAT32);
  g_assert_cmpuint (scores->count, ==, 32000);
  g_assert_cmpint (types->elem_type, ==, GGUF_TYPE_INT32);
  g_assert_cmpuint (types->count, ==, 32000);
  /* SentencePiece's first tokens are <unk>, <s>, </s>. */
  g_assert_true (elk__gguf_array_nth (g, tokens, 1, &elem, &error));
  g_assert_no_error (error);
  g_assert_cmpmem (elem.str, elem.str_len, "<s>", 3);

  g_assert_cmpuint (elk__gguf_get_n_tensors (g), ==, 12);
  g_assert_cmpuint (elk__gguf_get_data_offset (g), ==, 724416);
  for (guint i = 0; i < G_N_ELEMENTS (expected); i++)
    {
      const GgufTensor *t = elk__gguf_find_tensor (g, expected[i].name);
      g_assert_nonnull (t);
      g_assert_cmpuint (t->n_dims, ==, expected[i].n_dims);
      g_assert_cmpuint (t->dims[0], ==, expected[i].d0);
      if (t->n_dims == 2)
        g_assert_cmpuint (t->dims[1], ==, expected[i].d1);
      g_assert_cmpuint (t->type, ==, expected[i].type);
      g_assert_cmpuint (t->bytes, ==,
                        t->n_elements * (t->type == 0 ? 4 : 2));
      params += t->n_elements;
      end = MAX (end, t->offset + t->bytes);
    }
  g_assert_cmpuint (params, ==, 513048);
  g_assert_cmpuint (elk__gguf_find_tensor (g, "output.weight")->offset, ==,
                    514144);
  /* The last tensor ends exactly at the end of the file. */
  g_assert_cmpuint (elk__gguf_get_data_offset (g) + end, ==, 1750560);
}

static void
test_corpus_llama_spm (void)
{
  g_autoptr (Gguf) g = open_corpus ("ggml-vocab-llama-spm.gguf");
  g_autoptr (LlamaModel) m = NULL;
  g_autoptr (GError) error = NULL;
  gboolean b = FALSE;

  if (g == NULL)
    return;
  g_assert_cmpuint (elk__gguf_get_n_tensors (g), ==, 0);
  g_assert_cmpuint (elk__gguf_get_n_kv (g), ==, 22);
  g_assert_cmpuint (u (g, "llama.block_count"), ==, 32);
  g_assert_cmpuint (u (g, "llama.embedding_length"), ==, 4096);
  g_assert_cmpuint (u (g, "llama.feed_forward_length"), ==, 11008);
  g_assert_cmpuint (u (g, "llama.attention.head_count"), ==, 32);
  g_assert_cmpuint (u (g, "llama.attention.head_count_kv"), ==, 32);
  g_assert_cmpuint (u (g, "llama.context_length"), ==, 4096);
  g_assert_cmpuint (u (g, "llama.rope.dimension_count"), ==, 128);
  g_assert_cmpuint (u (g, "llama.vocab_size"), ==, 32000);
  g_assert_cmpfloat_with_epsilon (
      f (g, "llama.attention.layer_norm_rms_epsilon"), 1e-5, 1e-12);
  g_assert_true (
      elk__gguf_get_bool (g, "tokenizer.ggml.add_bos_token", &b, &error));
  g_assert_true (b);
  g_assert_true (
      elk__gguf_get_bool (g, "tokenizer.ggml.add_eos_token", &b, &error));
  g_assert_false (b);
  g_assert_no_error (error);

  /* The same numbers through the model reader: the Llama-2-7B row. */
  m = model_of ("ggml-vocab-llama-spm.gguf");
  g_assert_cmpstr (m->arch, ==, "llama");
  g_assert_cmpuint (m->n_layers, ==, 32);
  g_assert_cmpuint (m->hidden, ==, 4096);
  g_assert_cmpuint (m->ffn, ==, 11008);
  g_assert_cmpuint (m->n_heads, ==, 32);
  g_assert_cmpuint (m->n_kv_heads, ==, 32);
  g_assert_cmpuint (m->head_dim, ==, 128);
  g_assert_cmpuint (m->context, ==, 4096);
  g_assert_cmpuint (m->vocab, ==, 32000);
  g_assert_cmpuint (m->rope_dims, ==, 128);
  g_assert_true (m->gated);
  g_assert_false (m->tied);
  g_assert_cmpint (m->norm, ==, LLAMA_NORM_RMS);
}

static void
test_corpus_deepseek (void)
{
  g_autoptr (Gguf) g = open_corpus ("ggml-vocab-deepseek-llm.gguf");
  g_autoptr (LlamaModel) m = NULL;
  g_autofree char *tok = NULL;

  if (g == NULL)
    return;
  g_assert_cmpuint (u (g, "llama.block_count"), ==, 30);
  g_assert_cmpuint (u (g, "llama.embedding_length"), ==, 4096);
  g_assert_cmpuint (u (g, "llama.feed_forward_length"), ==, 11008);
  g_assert_cmpuint (u (g, "llama.attention.head_count"), ==, 32);
  g_assert_cmpuint (u (g, "llama.attention.head_count_kv"), ==, 32);
  g_assert_cmpuint (u (g, "llama.vocab_size"), ==, 102400);
  g_assert_cmpfloat_with_epsilon (f (g, "llama.rope.freq_base"), 10000.0,
                                  1e-9);
  g_assert_cmpfloat_with_epsilon (
      f (g, "llama.attention.layer_norm_rms_epsilon"), 1e-6, 1e-13);
  tok = s (g, "tokenizer.ggml.model");
  g_assert_cmpstr (tok, ==, "gpt2");

  m = model_of ("ggml-vocab-deepseek-llm.gguf");
  g_assert_cmpuint (m->n_layers, ==, 30);
  g_assert_cmpuint (m->vocab, ==, 102400);
  g_assert_cmpfloat_with_epsilon (m->norm_eps, 1e-6, 1e-13);
}

static void
test_corpus_phi3 (void)
{
  g_autoptr (Gguf) g = open_corpus ("ggml-vocab-phi-3.gguf");
  g_autoptr (LlamaModel) m = NULL;
  g_autofree char *arch = NULL, *tmpl = NULL;

  if (g == NULL)
    return;
  arch = s (g, "general.architecture");
  g_assert_cmpstr (arch, ==, "phi3");
  g_assert_cmpuint (u (g, "phi3.block_count"), ==, 32);
  g_assert_cmpuint (u (g, "phi3.embedding_length"), ==, 3072);
  g_assert_cmpuint (u (g, "phi3.feed_forward_length"), ==, 8192);
  g_assert_cmpuint (u (g, "phi3.attention.head_count"), ==, 32);
  g_assert_cmpuint (u (g, "phi3.attention.head_count_kv"), ==, 32);
  g_assert_cmpuint (u (g, "phi3.rope.dimension_count"), ==, 96);
  g_assert_cmpuint (u (g, "phi3.rope.scaling.original_context_length"), ==,
                    4096);
  g_assert_nonnull (elk__gguf_lookup (g, "general.quantization_version"));
  tmpl = s (g, "tokenizer.chat_template");
  g_assert_cmpuint (strlen (tmpl), >, 40);

  m = model_of ("ggml-vocab-phi-3.gguf");
  g_assert_cmpstr (m->arch, ==, "phi3");
  g_assert_cmpuint (m->head_dim, ==, 96);
  g_assert_cmpuint (m->hidden, ==, 3072);
}

static void
test_corpus_falcon (void)
{
  g_autoptr (Gguf) g = open_corpus ("ggml-vocab-falcon.gguf");
  g_autoptr (LlamaModel) m = NULL;
  g_autofree char *layout = NULL;

  if (g == NULL)
    return;
  g_assert_cmpuint (u (g, "falcon.embedding_length"), ==, 4544);
  g_assert_cmpuint (u (g, "falcon.block_count"), ==, 32);
  g_assert_cmpuint (u (g, "falcon.attention.head_count"), ==, 71);
  g_assert_cmpuint (u (g, "falcon.attention.head_count_kv"), ==, 1);
  g_assert_cmpuint (u (g, "falcon.feed_forward_length"), ==, 18176);
  g_assert_cmpuint (u (g, "falcon.context_length"), ==, 2048);
  g_assert_nonnull (
      elk__gguf_lookup (g, "falcon.attention.layer_norm_epsilon"));
  g_assert_null (
      elk__gguf_lookup (g, "falcon.attention.layer_norm_rms_epsilon"));
  layout = s (g, "falcon.tensor_data_layout");
  g_assert_cmpstr (layout, ==, "jploski");

  m = model_of ("ggml-vocab-falcon.gguf");
  g_assert_cmpstr (m->arch, ==, "falcon");
  g_assert_cmpuint (m->n_heads, ==, 71);
  g_assert_cmpuint (m->n_kv_heads, ==, 1);
  g_assert_cmpuint (m->head_dim, ==, 64);
  g_assert_cmpint (m->norm, ==, LLAMA_NORM_LAYER);
  g_assert_true (m->parallel);
}

static void
test_corpus_gpt2 (void)
{
  g_autoptr (Gguf) g = open_corpus ("ggml-vocab-gpt-2.gguf");
  g_autoptr (LlamaModel) m = NULL;

  if (g == NULL)
    return;
  g_assert_cmpuint (u (g, "gpt2.block_count"), ==, 12);
  g_assert_cmpuint (u (g, "gpt2.embedding_length"), ==, 768);
  g_assert_cmpuint (u (g, "gpt2.feed_forward_length"), ==, 3072);
  g_assert_cmpuint (u (g, "gpt2.attention.head_count"), ==, 12);
  g_assert_cmpuint (u (g, "gpt2.context_length"), ==, 1024);
  g_assert_null (elk__gguf_lookup (g, "gpt2.attention.head_count_kv"));

  m = model_of ("ggml-vocab-gpt-2.gguf");
  g_assert_cmpuint (m->n_kv_heads, ==, 12);
  g_assert_cmpuint (m->n_positions, ==, 1024);
  g_assert_true (m->tied);
}

/* Every corpus file goes all the way to a graph. */
static void
test_corpus_graphs (void)
{
  static const char *const files[] = {
    "llama-2-tiny-random.gguf", "ggml-vocab-llama-spm.gguf",
    "ggml-vocab-deepseek-llm.gguf", "ggml-vocab-phi-3.gguf",
    "ggml-vocab-falcon.gguf", "ggml-vocab-gpt-2.gguf",
  };

  for (guint i = 0; i < G_N_ELEMENTS (files); i++)
    {
      g_autoptr (LlamaModel) m = model_of (files[i]);
      g_autoptr (ElkGraph) graph = NULL;
      g_autoptr (GError) error = NULL;
      LlamaBuildOptions o;
      guint64 kv;

      if (m == NULL)
        return;
      elk__llama_build_options_init (&o);
      o.batch = 4;
      o.seq = 512;
      graph = elk__llama_build_graph (m, &o, &error);
      g_assert_no_error (error);
      g_assert_nonnull (graph);
      /* decode reads the KV cache once: batch x seq x 2 x layers x KV
       * heads x head dim x 2 bytes. */
      kv = 4ull * 512 * 2 * m->n_layers * m->n_kv_heads * m->head_dim * 2;
      g_assert_cmpuint (g_ascii_strtoull (elk_graph_get_attribute (graph,
                                                                   "kv-bytes"),
                                          NULL, 10), ==, kv);
      g_assert_cmpuint (elk_graph_get_n_layers (graph), ==, m->n_layers);
    }
}

/* ------------------------------------------------------------------ */
/* Synthetic files                                                      */
/* ------------------------------------------------------------------ */

/* Writes one key of every value type, arrays of several types, nested
 * arrays and an empty array. */
static void
write_all_types (GgufWriter *w)
{
  gw_key (w, "t.u8", GW_U8), gw_u8 (w, 200);
  gw_key (w, "t.i8", GW_I8), gw_u8 (w, (guint8) -5);
  gw_key (w, "t.u16", GW_U16), gw_u16 (w, 60000);
  gw_key (w, "t.i16", GW_I16), gw_u16 (w, (guint16) -300);
  gw_key (w, "t.u32", GW_U32), gw_u32 (w, 4000000000u);
  gw_key (w, "t.i32", GW_I32), gw_u32 (w, (guint32) -70000);
  gw_key (w, "t.f32", GW_F32), gw_f32 (w, 1.5f);
  gw_key (w, "t.bool", GW_BOOL), gw_u8 (w, 1);
  gw_key (w, "t.str", GW_STR), gw_str (w, "hello");
  gw_key (w, "t.u64", GW_U64), gw_u64 (w, G_GUINT64_CONSTANT (1) << 40);
  gw_key (w, "t.i64", GW_I64), gw_u64 (w, (guint64) -(G_GINT64_CONSTANT (1) << 40));
  gw_key (w, "t.f64", GW_F64), gw_f64 (w, 2.25);
  gw_key (w, "t.arr_u32", GW_ARR), gw_u32 (w, GW_U32), gw_u64 (w, 3);
  gw_u32 (w, 1), gw_u32 (w, 2), gw_u32 (w, 3);
  gw_key (w, "t.arr_str", GW_ARR), gw_u32 (w, GW_STR), gw_u64 (w, 2);
  gw_str (w, "a"), gw_str (w, "bc");
  gw_key (w, "t.arr_bool", GW_ARR), gw_u32 (w, GW_BOOL), gw_u64 (w, 2);
  gw_u8 (w, 0), gw_u8 (w, 1);
  /* [[1, 2], [3]] as int16 arrays inside an array. */
  gw_key (w, "t.nested", GW_ARR), gw_u32 (w, GW_ARR), gw_u64 (w, 2);
  gw_u32 (w, GW_I16), gw_u64 (w, 2), gw_u16 (w, 1), gw_u16 (w, 2);
  gw_u32 (w, GW_I16), gw_u64 (w, 1), gw_u16 (w, 3);
  gw_key (w, "t.empty", GW_ARR), gw_u32 (w, GW_F64), gw_u64 (w, 0);
}
#define N_ALL_TYPES_KEYS 17

static void
check_all_types (const Gguf *g)
{
  const GgufValue *v;
  GgufValue e, e2;
  g_autoptr (GError) error = NULL;
  g_autofree char *str = NULL;
  gboolean b;

  g_assert_cmpuint (elk__gguf_lookup (g, "t.u8")->u, ==, 200);
  g_assert_cmpint (elk__gguf_lookup (g, "t.i8")->i, ==, -5);
  g_assert_cmpuint (elk__gguf_lookup (g, "t.u16")->u, ==, 60000);
  g_assert_cmpint (elk__gguf_lookup (g, "t.i16")->i, ==, -300);
  g_assert_cmpuint (elk__gguf_lookup (g, "t.u32")->u, ==, 4000000000u);
  g_assert_cmpint (elk__gguf_lookup (g, "t.i32")->i, ==, -70000);
  g_assert_cmpfloat (elk__gguf_lookup (g, "t.f32")->f, ==, 1.5);
  g_assert_true (elk__gguf_get_bool (g, "t.bool", &b, &error));
  g_assert_true (b);
  str = elk__gguf_dup_string (g, "t.str", &error);
  g_assert_cmpstr (str, ==, "hello");
  g_assert_cmpuint (elk__gguf_lookup (g, "t.u64")->u, ==,
                    G_GUINT64_CONSTANT (1) << 40);
  g_assert_cmpint (elk__gguf_lookup (g, "t.i64")->i, ==,
                   -(G_GINT64_CONSTANT (1) << 40));
  g_assert_cmpfloat (elk__gguf_lookup (g, "t.f64")->f, ==, 2.25);

  v = elk__gguf_lookup (g, "t.arr_u32");
  g_assert_cmpuint (v->count, ==, 3);
  g_assert_true (elk__gguf_array_nth (g, v, 2, &e, &error));
  g_assert_cmpuint (e.u, ==, 3);
  v = elk__gguf_lookup (g, "t.arr_str");
  g_assert_true (elk__gguf_array_nth (g, v, 1, &e, &error));
  g_assert_cmpmem (e.str, e.str_len, "bc", 2);
  v = elk__gguf_lookup (g, "t.arr_bool");
  g_assert_true (elk__gguf_array_nth (g, v, 1, &e, &error));
  g_assert_cmpuint (e.u, ==, 1);
  v = elk__gguf_lookup (g, "t.nested");
  g_assert_cmpint (v->elem_type, ==, GGUF_TYPE_ARRAY);
  g_assert_cmpuint (v->count, ==, 2);
  g_assert_true (elk__gguf_array_nth (g, v, 1, &e, &error));
  g_assert_cmpint (e.elem_type, ==, GGUF_TYPE_INT16);
  g_assert_cmpuint (e.count, ==, 1);
  g_assert_true (elk__gguf_array_nth (g, &e, 0, &e2, &error));
  g_assert_cmpint (e2.i, ==, 3);
  g_assert_true (elk__gguf_array_nth (g, v, 0, &e, &error));
  g_assert_true (elk__gguf_array_nth (g, &e, 1, &e2, &error));
  g_assert_cmpint (e2.i, ==, 2);
  v = elk__gguf_lookup (g, "t.empty");
  g_assert_cmpuint (v->count, ==, 0);
  g_assert_false (elk__gguf_array_nth (g, v, 0, &e, &error));
  g_assert_error (error, LLAMA_ERROR, LLAMA_ERROR_INVALID);
}

static void
test_synthetic_all_types (gconstpointer data)
{
  gboolean big_endian = GPOINTER_TO_INT (data) & 1;
  guint32 version = (GPOINTER_TO_INT (data) & 2) ? 2 : 3;
  GgufWriter *w = gw_new (big_endian);
  g_autoptr (GBytes) bytes = NULL;
  g_autoptr (Gguf) g = NULL;
  g_autoptr (GError) error = NULL;

  gw_header (w, version, 0, N_ALL_TYPES_KEYS);
  write_all_types (w);
  /* Zero tensors: the file ends right after the metadata, unpadded. */
  bytes = gw_bytes (w);
  g = elk__gguf_new_from_bytes (bytes, "synthetic.gguf", &error);
  g_assert_no_error (error);
  g_assert_nonnull (g);
  g_assert_cmpuint (elk__gguf_get_version (g), ==, version);
  g_assert_cmpint (elk__gguf_is_big_endian (g), ==, big_endian);
  g_assert_cmpuint (elk__gguf_get_n_kv (g), ==, N_ALL_TYPES_KEYS);
  g_assert_cmpuint (elk__gguf_get_n_tensors (g), ==, 0);
  check_all_types (g);
  gw_free (w);
}

/* A small model file: 2 tensors, a custom alignment. */
static GgufWriter *
write_small_model (gboolean big_endian, guint32 alignment)
{
  GgufWriter *w = gw_new (big_endian);
  const guint64 d1[] = { 64, 4 };   /* F16: 512 bytes */
  const guint64 d2[] = { 256, 2 };  /* Q4_K: 2 blocks = 288 bytes */
  guint64 off2 = ((512 + alignment - 1) / alignment) * alignment;

  gw_header (w, 3, 2, 3);
  gw_kv_str (w, "general.architecture", "llama");
  gw_key (w, "general.alignment", GW_U32), gw_u32 (w, alignment);
  gw_key (w, "t.flag", GW_BOOL), gw_u8 (w, 1);
  gw_tensor_info (w, "a.weight", 2, d1, 1, 0);
  gw_tensor_info (w, "b.weight", 2, d2, 12, off2);
  gw_pad (w, alignment);
  gw_zeros (w, 512);
  gw_pad (w, alignment);
  gw_zeros (w, 288);
  return w;
}

static void
test_synthetic_tensors (void)
{
  for (guint be = 0; be < 2; be++)
    {
      GgufWriter *w = write_small_model (be, 64);
      g_autoptr (GBytes) bytes = gw_bytes (w);
      g_autoptr (GError) error = NULL;
      g_autoptr (Gguf) g
          = elk__gguf_new_from_bytes (bytes, "small.gguf", &error);
      const GgufTensor *t;

      g_assert_no_error (error);
      g_assert_cmpuint (elk__gguf_get_alignment (g), ==, 64);
      g_assert_cmpuint (elk__gguf_get_data_offset (g) % 64, ==, 0);
      t = elk__gguf_find_tensor (g, "b.weight");
      g_assert_nonnull (t);
      g_assert_cmpuint (t->type, ==, 12);
      g_assert_cmpuint (t->bytes, ==, 288);
      g_assert_cmpuint (t->offset, ==, 512);
      t = elk__gguf_find_tensor (g, "a.weight");
      g_assert_cmpuint (t->bytes, ==, 512);
      gw_free (w);
    }
}

/* ------------------------------------------------------------------ */
/* Corrupted files                                                      */
/* ------------------------------------------------------------------ */

static void
expect_error (GBytes *bytes, const char *what, const char *needle)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (Gguf) g = elk__gguf_new_from_bytes (bytes, "bad.gguf", &error);

  if (g != NULL)
    g_error ("%s: the reader accepted a corrupted file", what);
  g_assert_nonnull (error);
  g_assert_true (error->domain == LLAMA_ERROR);
  g_assert_true (g_str_has_prefix (error->message, "bad.gguf:"));
  if (needle != NULL && strstr (error->message, needle) == NULL)
    g_error ("%s: message \"%s\" does not mention \"%s\"", what,
             error->message, needle);
  g_test_message ("%s: %s", what, error->message);
}

/* Every prefix of a valid file, cut at each field boundary and at every
 * byte in between, is an error. */
static void
test_truncated (void)
{
  for (guint variant = 0; variant < 3; variant++)
    {
      GgufWriter *w;
      if (variant == 2)
        w = write_small_model (FALSE, 32);
      else
        {
          w = gw_new (variant == 1);
          gw_header (w, 3, 0, N_ALL_TYPES_KEYS);
          write_all_types (w);
        }
      for (gsize len = 0; len < w->buf->len; len++)
        {
          g_autoptr (GBytes) bytes = g_bytes_new (w->buf->data, len);
          g_autoptr (GError) error = NULL;
          g_autoptr (Gguf) g
              = elk__gguf_new_from_bytes (bytes, "cut.gguf", &error);
          if (g != NULL)
            g_error ("variant %u: a file cut to %" G_GSIZE_FORMAT " of %u "
                     "bytes was accepted", variant, len, w->buf->len);
          g_assert_error (error, LLAMA_ERROR, LLAMA_ERROR_FORMAT);
          g_assert_true (strstr (error->message, "offset") != NULL);
        }
      g_test_message ("variant %u: %u field boundaries, %u prefixes "
                      "rejected", variant, w->boundaries->len, w->buf->len);
      gw_free (w);
    }
}

static GBytes *
patched (GgufWriter *w, gsize at, guint64 value, guint size)
{
  GByteArray *copy = g_byte_array_sized_new (w->buf->len);
  g_byte_array_append (copy, w->buf->data, w->buf->len);
  for (guint i = 0; i < size; i++)
    {
      guint shift = 8 * (w->big_endian ? size - 1 - i : i);
      copy->data[at + i] = (guint8) (value >> shift);
    }
  return g_byte_array_free_to_bytes (copy);
}

static gsize
find_bytes (GgufWriter *w, const char *needle)
{
  gsize n = strlen (needle);
  for (gsize i = 0; i + n <= w->buf->len; i++)
    if (memcmp (w->buf->data + i, needle, n) == 0)
      return i;
  g_error ("'%s' not found in the synthetic file", needle);
}

static void
test_corrupted (void)
{
  GgufWriter *w = write_small_model (FALSE, 32);
  gsize a_info = find_bytes (w, "a.weight") + 8;   /* after the name */
  gsize b_info = find_bytes (w, "b.weight") + 8;
  gsize flag = find_bytes (w, "t.flag") + 6;       /* the type field */
  gsize align = find_bytes (w, "general.alignment") + 17 + 4;
  gsize arch = find_bytes (w, "general.architecture") + 20 + 4;
  g_autoptr (GBytes) b = NULL;

  /* Magic and version. */
  b = patched (w, 0, 'G' | 'G' << 8 | 'M' << 16 | 'L' << 24, 4);
  expect_error (b, "wrong magic", "magic");
  g_clear_pointer (&b, g_bytes_unref);
  b = patched (w, 4, 1, 4);
  {
    g_autoptr (GError) error = NULL;
    g_autoptr (Gguf) g = elk__gguf_new_from_bytes (b, "v1.gguf", &error);
    g_assert_null (g);
    g_assert_error (error, LLAMA_ERROR, LLAMA_ERROR_UNSUPPORTED);
  }
  g_clear_pointer (&b, g_bytes_unref);
  b = patched (w, 4, 7, 4);
  expect_error (b, "unknown version", "version");
  g_clear_pointer (&b, g_bytes_unref);

  /* Huge counts. */
  b = patched (w, 8, G_GUINT64_CONSTANT (1) << 40, 8);
  expect_error (b, "huge tensor count", "tensor count");
  g_clear_pointer (&b, g_bytes_unref);
  b = patched (w, 16, G_GUINT64_CONSTANT (2000000000), 8);
  expect_error (b, "huge KV count", "metadata count");
  g_clear_pointer (&b, g_bytes_unref);
  b = patched (w, 24, G_MAXUINT64, 8);
  expect_error (b, "huge key length", "length");
  g_clear_pointer (&b, g_bytes_unref);
  b = patched (w, arch, G_GUINT64_CONSTANT (1) << 33, 8);
  expect_error (b, "huge string length", "length");
  g_clear_pointer (&b, g_bytes_unref);

  /* Bad values. */
  b = patched (w, flag + 4, 2, 1);
  expect_error (b, "bad bool", "expected 0 or 1");
  g_clear_pointer (&b, g_bytes_unref);
  b = patched (w, flag, 13, 4);
  expect_error (b, "unknown value type", "unknown value type id 13");
  g_clear_pointer (&b, g_bytes_unref);
  b = patched (w, flag, 0xffffffffu, 4);
  expect_error (b, "unknown value type 2^32-1", "unknown value type");
  g_clear_pointer (&b, g_bytes_unref);
  b = patched (w, align, 48, 4);
  expect_error (b, "alignment not a power of two", "power of two");
  g_clear_pointer (&b, g_bytes_unref);

  /* Tensor infos. */
  b = patched (w, a_info, 0, 4);
  expect_error (b, "rank 0", "dimensions");
  g_clear_pointer (&b, g_bytes_unref);
  b = patched (w, a_info, 5, 4);
  expect_error (b, "rank 5", "dimensions");
  g_clear_pointer (&b, g_bytes_unref);
  b = patched (w, a_info + 4, G_GUINT64_CONSTANT (1) << 63, 8);
  expect_error (b, "negative dimension", "dimension");
  g_clear_pointer (&b, g_bytes_unref);
  b = patched (w, a_info + 4 + 16, 99, 4);
  {
    g_autoptr (GError) error = NULL;
    g_autoptr (Gguf) g = elk__gguf_new_from_bytes (b, "bad.gguf", &error);
    g_assert_null (g);
    g_assert_error (error, LLAMA_ERROR, LLAMA_ERROR_UNSUPPORTED);
    g_assert_nonnull (strstr (error->message, "99"));
  }
  g_clear_pointer (&b, g_bytes_unref);
  b = patched (w, b_info + 4 + 16 + 4, 544 + 3, 8);
  expect_error (b, "misaligned offset", "not a multiple of the alignment");
  g_clear_pointer (&b, g_bytes_unref);
  b = patched (w, b_info + 4 + 16 + 4, 1024, 8);
  expect_error (b, "data past the end", "past the end");
  g_clear_pointer (&b, g_bytes_unref);
  b = patched (w, b_info + 4 + 16 + 4, 0, 8);
  expect_error (b, "overlapping data", "overlap");
  g_clear_pointer (&b, g_bytes_unref);
  /* Q4_K rows must be whole blocks of 256. */
  b = patched (w, b_info + 4, 128, 8);
  expect_error (b, "partial block", "block size");
  g_clear_pointer (&b, g_bytes_unref);
  gw_free (w);

  /* Duplicate keys and tensors; arrays claiming too much; deep nesting. */
  w = gw_new (FALSE);
  gw_header (w, 3, 0, 2);
  gw_kv_u32 (w, "k", 1);
  gw_kv_u32 (w, "k", 2);
  b = gw_bytes (w);
  expect_error (b, "duplicate key", "twice");
  g_clear_pointer (&b, g_bytes_unref);
  gw_free (w);

  w = gw_new (FALSE);
  gw_header (w, 3, 0, 1);
  gw_key (w, "arr", GW_ARR), gw_u32 (w, GW_U64);
  gw_u64 (w, G_GUINT64_CONSTANT (1) << 40);
  gw_u64 (w, 0);
  b = gw_bytes (w);
  expect_error (b, "huge array count", "elements");
  g_clear_pointer (&b, g_bytes_unref);
  gw_free (w);

  w = gw_new (FALSE);
  gw_header (w, 3, 0, 1);
  gw_key (w, "deep", GW_ARR);
  for (guint i = 0; i < 40; i++)
    gw_u32 (w, GW_ARR), gw_u64 (w, 1);
  gw_u32 (w, GW_U8), gw_u64 (w, 0);
  b = gw_bytes (w);
  expect_error (b, "deep nesting", "nested");
  g_clear_pointer (&b, g_bytes_unref);
  gw_free (w);

  w = gw_new (FALSE);
  gw_header (w, 3, 0, 1);
  gw_key (w, "arr", GW_ARR), gw_u32 (w, 77), gw_u64 (w, 1);
  b = gw_bytes (w);
  expect_error (b, "unknown array element type", "element type");
  g_clear_pointer (&b, g_bytes_unref);
  gw_free (w);

  {
    const guint64 dims[] = { 4 };
    w = gw_new (FALSE);
    gw_header (w, 3, 2, 0);
    gw_tensor_info (w, "t", 1, dims, 0, 0);
    gw_tensor_info (w, "t", 1, dims, 0, 32);
    gw_pad (w, 32);
    gw_zeros (w, 64);
    b = gw_bytes (w);
    expect_error (b, "duplicate tensor", "twice");
    g_clear_pointer (&b, g_bytes_unref);
    gw_free (w);
  }

  /* Too short for the magic; not a GGUF at all. */
  b = g_bytes_new_static ("GG", 2);
  expect_error (b, "two bytes", "magic");
  g_clear_pointer (&b, g_bytes_unref);
  b = g_bytes_new_static ("", 0);
  expect_error (b, "empty file", "magic");
}

/* A file whose architecture elk does not know is a clear error. */
static void
test_unknown_arch (void)
{
  GgufWriter *w = gw_new (FALSE);
  g_autoptr (GBytes) bytes = NULL;
  g_autoptr (GError) error = NULL;
  Gguf *g;
  LlamaModel *m;

  gw_header (w, 3, 0, 1);
  gw_kv_str (w, "general.architecture", "mamba");
  bytes = gw_bytes (w);
  g = elk__gguf_new_from_bytes (bytes, "mamba.gguf", &error);
  g_assert_no_error (error);
  m = elk__llama_model_new_from_gguf (g, &error);
  g_assert_null (m);
  g_assert_error (error, LLAMA_ERROR, LLAMA_ERROR_UNSUPPORTED);
  g_assert_nonnull (strstr (error->message, "'mamba'"));
  elk__gguf_free (g);
  gw_free (w);
}

/* Every limit refuses a file just past it, with LLAMA_ERROR_LIMIT and
 * a message that names the parameter that raises it; the same file reads
 * with the default limits. */
static void
expect_limit (GBytes *bytes, const LlamaLimits *limits, const char *param)
{
  g_autoptr (GError) error = NULL;
  Gguf *g;

  g = elk__gguf_new_from_bytes_with_limits (bytes, "limits.gguf", limits,
                                            &error);
  g_assert_null (g);
  g_assert_error (error, LLAMA_ERROR, LLAMA_ERROR_LIMIT);
  g_test_message ("%s", error->message);
  g_assert_nonnull (strstr (error->message, param));
  g_clear_error (&error);
  g = elk__gguf_new_from_bytes_with_limits (bytes, "limits.gguf", NULL, &error);
  g_assert_no_error (error);
  elk__gguf_free (g);
}

static void
test_limits (void)
{
  GgufWriter *w = gw_new (FALSE);
  g_autoptr (GBytes) bytes = NULL;
  LlamaLimits limits;

  gw_header (w, 3, 0, N_ALL_TYPES_KEYS);
  write_all_types (w);
  bytes = gw_bytes (w);

  elk__llama_limits_init (&limits);
  limits.max_metadata = N_ALL_TYPES_KEYS - 1;
  expect_limit (bytes, &limits, "'max-metadata-entries'");

  elk__llama_limits_init (&limits);
  limits.max_string_length = 4; /* "hello" and the keys are longer */
  expect_limit (bytes, &limits, "'max-string-length'");

  elk__llama_limits_init (&limits);
  limits.max_array_length = 2; /* t.arr_u32 has 3 */
  expect_limit (bytes, &limits, "'max-array-length'");

  elk__llama_limits_init (&limits);
  limits.max_file_size = g_bytes_get_size (bytes) - 1;
  expect_limit (bytes, &limits, "'max-file-size'");
  gw_free (w);
}

static void
test_limit_tensors (void)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *path = llama_test_corpus_file ("llama-2-tiny-random.gguf");
  LlamaLimits limits;
  Gguf *g;

  if (path == NULL)
    return;
  elk__llama_limits_init (&limits);
  limits.max_tensors = 2;
  g = elk__gguf_open_with_limits (path, &limits, &error);
  g_assert_null (g);
  g_assert_error (error, LLAMA_ERROR, LLAMA_ERROR_LIMIT);
  g_assert_nonnull (strstr (error->message, "'max-tensors'"));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);

  g_test_add_func ("/llama/gguf/corpus/tiny-random", test_corpus_tiny_random);
  g_test_add_func ("/llama/gguf/corpus/llama-spm", test_corpus_llama_spm);
  g_test_add_func ("/llama/gguf/corpus/deepseek", test_corpus_deepseek);
  g_test_add_func ("/llama/gguf/corpus/phi3", test_corpus_phi3);
  g_test_add_func ("/llama/gguf/corpus/falcon", test_corpus_falcon);
  g_test_add_func ("/llama/gguf/corpus/gpt2", test_corpus_gpt2);
  g_test_add_func ("/llama/gguf/corpus/graphs", test_corpus_graphs);
  g_test_add_data_func ("/llama/gguf/synthetic/le-v3", GINT_TO_POINTER (0),
                        test_synthetic_all_types);
  g_test_add_data_func ("/llama/gguf/synthetic/be-v3", GINT_TO_POINTER (1),
                        test_synthetic_all_types);
  g_test_add_data_func ("/llama/gguf/synthetic/le-v2", GINT_TO_POINTER (2),
                        test_synthetic_all_types);
  g_test_add_data_func ("/llama/gguf/synthetic/be-v2", GINT_TO_POINTER (3),
                        test_synthetic_all_types);
  g_test_add_func ("/llama/gguf/synthetic/tensors", test_synthetic_tensors);
  g_test_add_func ("/llama/gguf/corrupt/truncated", test_truncated);
  g_test_add_func ("/llama/gguf/corrupt/fields", test_corrupted);
  g_test_add_func ("/llama/gguf/unknown-arch", test_unknown_arch);
  g_test_add_func ("/llama/gguf/limits", test_limits);
  g_test_add_func ("/llama/gguf/limits/tensors", test_limit_tensors);
  return g_test_run ();
}
