/* tests/core/test-plugin-loading.c: the loader accepts the good fixture
 * plugin and rejects every broken one with a GError naming the file and
 * the reason (issue 2, item 3). */
#include "elk-test-util.h"

#include <string.h>

typedef struct
{
  ElkRegistry *registry;
} Fixture;

static void
fixture_set_up (Fixture *f, gconstpointer data)
{
  f->registry = elk_registry_new ();
}

static void
fixture_tear_down (Fixture *f, gconstpointer data)
{
  g_clear_object (&f->registry);
}

static void
assert_rejected (Fixture *f,
                 const char *name,
                 GQuark domain,
                 gint code,
                 const char *needle)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *path = elk_test_fixture_plugin (name);

  g_assert_false (elk_registry_load_file (f->registry, path, &error));
  g_assert_error (error, domain, code);
  g_test_message ("%s", error->message);
  /* Every rejection names the file it rejected. */
  g_assert_nonnull (strstr (error->message, path));
  if (needle != NULL)
    g_assert_nonnull (strstr (error->message, needle));
}

static void
test_good (Fixture *f, gconstpointer data)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *path = elk_test_fixture_plugin ("good");
  g_autoptr (GPtrArray) plugins = NULL;
  const ElkFeature *feature;

  g_assert_true (elk_registry_load_file (f->registry, path, &error));
  g_assert_no_error (error);
  /* Loading the same file again is harmless. */
  g_assert_true (elk_registry_load_file (f->registry, path, &error));

  plugins = elk_registry_get_plugins (f->registry);
  g_assert_cmpuint (plugins->len, ==, 1);
  g_assert_cmpstr (elk_plugin_get_name (plugins->pdata[0]), ==, "good");
  g_assert_cmpstr (elk_plugin_get_version (plugins->pdata[0]), ==, "1.0");
  g_assert_cmpuint (elk_plugin_get_abi_version (plugins->pdata[0]), ==,
                    ELK_PLUGIN_ABI_VERSION);

  feature = elk_registry_lookup (f->registry, ELK_TYPE_SCHEDULER, "fixture");
  g_assert_nonnull (feature);
  g_assert_true (g_type_is_a (feature->type, ELK_TYPE_SCHEDULER));
  g_assert_true (feature->plugin == plugins->pdata[0]);
  g_assert_nonnull (elk_registry_lookup (f->registry, ELK_TYPE_FRONTEND,
                                         "fixture"));
  g_assert_nonnull (elk_registry_lookup (f->registry, ELK_TYPE_CHIP,
                                         "fixture"));
  g_assert_nonnull (elk_registry_lookup (f->registry, ELK_TYPE_ALLOCATOR,
                                         "fixture"));
}

static void
test_missing_feature (Fixture *f, gconstpointer data)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *path = elk_test_fixture_plugin ("good");

  g_assert_true (elk_registry_load_file (f->registry, path, NULL));
  g_assert_null (elk_registry_find (f->registry, ELK_TYPE_SCHEDULER,
                                    "greedy", &error));
  g_assert_error (error, ELK_REGISTRY_ERROR, ELK_REGISTRY_ERROR_NOT_FOUND);
  /* The message lists what is available instead. */
  g_assert_nonnull (strstr (error->message, "'greedy'"));
  g_assert_nonnull (strstr (error->message, "available: fixture"));
}

/* A broken fixture plugin that the loader refuses, with the error it must
 * give: domain, code and a fragment of the message besides the file. */
typedef struct
{
  const char *name;
  GQuark (*domain) (void);
  gint code;
  const char *needle;
} RejectCase;

static const RejectCase reject_cases[] = {
  { "missing-symbol", elk_plugin_error_quark, ELK_PLUGIN_ERROR_NOT_A_PLUGIN,
    "elk_plugin_missing_symbol_get_desc" },
  { "not-elf", elk_plugin_error_quark, ELK_PLUGIN_ERROR_NOT_A_PLUGIN,
    "cannot open" },
  { "name-mismatch", elk_plugin_error_quark, ELK_PLUGIN_ERROR_NAME_MISMATCH,
    "'other'" },
  { "bad-descriptor", elk_plugin_error_quark, ELK_PLUGIN_ERROR_BAD_DESCRIPTOR,
    "version" },
  { "init-silent", elk_plugin_error_quark, ELK_PLUGIN_ERROR_INIT_FAILED,
    "without saying why" },
  { "no-features", elk_plugin_error_quark, ELK_PLUGIN_ERROR_NO_FEATURES,
    "no feature" },
  { "wrong-type", elk_registry_error_quark, ELK_REGISTRY_ERROR_WRONG_TYPE,
    "ElkAllocator" },
  { "missing-vfunc", elk_registry_error_quark, ELK_REGISTRY_ERROR_WRONG_TYPE,
    "schedule()" },
};

static void
test_rejected (Fixture *f, gconstpointer data)
{
  const RejectCase *c = data;

  assert_rejected (f, c->name, c->domain (), c->code, c->needle);
}

static void
test_abi_mismatch (Fixture *f, gconstpointer data)
{
  g_autofree char *both = g_strdup_printf ("built for plugin ABI %u, but this "
                                           "elk has ABI %u",
                                           ELK_PLUGIN_ABI_VERSION + 1,
                                           ELK_PLUGIN_ABI_VERSION);
  /* The message names both numbers, and the register function (which
   * aborts the test if it runs) is never called. */
  assert_rejected (f, "abi-mismatch", ELK_PLUGIN_ERROR,
                   ELK_PLUGIN_ERROR_ABI_MISMATCH, both);
}

static void
test_init_fails (Fixture *f, gconstpointer data)
{
  assert_rejected (f, "init-fails", ELK_PLUGIN_ERROR,
                   ELK_PLUGIN_ERROR_INIT_FAILED,
                   "calibration table not found");
  /* The feature it added before failing is withdrawn. */
  g_assert_null (elk_registry_lookup (f->registry, ELK_TYPE_SCHEDULER,
                                      "init-fails"));
}

static void
test_scan_records_failures (Fixture *f, gconstpointer data)
{
  g_autofree char *good = elk_test_fixture_plugin ("good");
  g_autofree char *dir = g_path_get_dirname (good);
  const GPtrArray *failures;
  g_autoptr (GPtrArray) plugins = NULL;

  elk_registry_add_path (f->registry, dir);
  elk_registry_scan (f->registry);
  failures = elk_registry_get_failures (f->registry);
  plugins = elk_registry_get_plugins (f->registry);

  /* good, rogue and liars load; every other fixture is refused with its
   * reason.
   * (Two files providing one name are the subject of
   * test-plugin-identity.c, with the fixtures of tests/fixtures/identity.)
   * Nothing in this folder is ignored. */
  g_assert_cmpuint (plugins->len, ==, 3);
  g_assert_cmpuint (failures->len, ==, 10);
  g_assert_cmpuint (elk_registry_get_ignored (f->registry)->len, ==, 0);
  for (guint i = 0; i < failures->len; i++)
    {
      const ElkLoadFailure *failure = failures->pdata[i];
      g_assert_nonnull (failure->error);
      g_assert_nonnull (strstr (failure->error->message, failure->filename));
    }
}

int
main (int argc, char *argv[])
{
  g_test_init (&argc, &argv, NULL);

#define TEST(path, fn)                                                        \
  g_test_add ("/plugin-loading/" path, Fixture, NULL, fixture_set_up, fn,    \
              fixture_tear_down)

  TEST ("good", test_good);
  TEST ("missing-feature", test_missing_feature);
  TEST ("abi-mismatch", test_abi_mismatch);
  TEST ("init-fails", test_init_fails);
  TEST ("scan-records-failures", test_scan_records_failures);

#undef TEST

  for (guint i = 0; i < G_N_ELEMENTS (reject_cases); i++)
    {
      g_autofree char *path
          = g_strconcat ("/plugin-loading/", reject_cases[i].name, NULL);

      g_test_add (path, Fixture, &reject_cases[i], fixture_set_up,
                  test_rejected, fixture_tear_down);
    }
  return g_test_run ();
}
