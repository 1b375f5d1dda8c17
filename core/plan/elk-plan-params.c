/* elk-plan-params.c: the plan-table options an experiment may set.
 *
 * The runner builds the plan tables itself (they are shared by every
 * scheduler of a point), so these options belong to no plugin.  Giving
 * them a GObject class anyway lets the experiment loader treat <plans>
 * like any component: every <param> and every "plans.P" sweep value is
 * converted and range-checked through the property's GParamSpec, with
 * the same messages (file, line, parameter, expected values).
 */
#include "config.h"

#include "elk-plan-params.h"

struct _ElkPlanParams
{
  GObject parent_instance;
  ElkPlanEnumeration enumeration;
  ElkNocDemand noc_demand;
  double padding_floor;
  double utilisation_floor;
  ElkCostModelChoice cost_model;
  ElkFuseFlags fuse;
  ElkLayoutChoice layout;
};

/* The "fuse" option's values.  A private enum rather than a flags type:
 * experiment files name one choice (one word of a sweep axis), and every
 * choice is a set of #ElkFuseFlags.  Both fusions together are spelt as
 * GLib spells a set of flags, the nicks in the flags' order, joined by
 * commas. */
#define ELK_TYPE_PLAN_FUSE (plan_fuse_get_type ())
static GType
plan_fuse_get_type (void)
{
  static gsize type = 0;
  static const GEnumValue values[] = {
    { ELK_FUSE_NONE, "ELK_FUSE_NONE", "none" },
    { ELK_FUSE_NORM, "ELK_FUSE_NORM", "norm" },
    { ELK_FUSE_SOFTMAX, "ELK_FUSE_SOFTMAX", "softmax" },
    { ELK_FUSE_NORM | ELK_FUSE_SOFTMAX, "ELK_FUSE_NORM_SOFTMAX",
      "norm,softmax" },
    { 0, NULL, NULL },
  };

  if (g_once_init_enter (&type))
    g_once_init_leave (&type, g_enum_register_static ("ElkPlanFuse", values));
  return (GType) type;
}

G_DEFINE_FINAL_TYPE (ElkPlanParams, elk__plan_params, G_TYPE_OBJECT)

enum
{
  PROP_0,
  PROP_ENUMERATION,
  PROP_NOC_DEMAND,
  PROP_PADDING_FLOOR,
  PROP_UTILISATION_FLOOR,
  PROP_COST_MODEL,
  PROP_FUSE,
  PROP_LAYOUT,
  N_PROPS
};

static void
plan_params_set_property (GObject *object,
                          guint id,
                          const GValue *value,
                          GParamSpec *pspec)
{
  ElkPlanParams *self = ELK_PLAN_PARAMS (object);

  switch (id)
    {
    case PROP_NOC_DEMAND:
      self->noc_demand = g_value_get_enum (value);
      break;
    case PROP_ENUMERATION:
      self->enumeration = g_value_get_enum (value);
      break;
    case PROP_PADDING_FLOOR:
      self->padding_floor = g_value_get_double (value);
      break;
    case PROP_UTILISATION_FLOOR:
      self->utilisation_floor = g_value_get_double (value);
      break;
    case PROP_COST_MODEL:
      self->cost_model = g_value_get_enum (value);
      break;
    case PROP_FUSE:
      self->fuse = g_value_get_enum (value);
      break;
    case PROP_LAYOUT:
      self->layout = g_value_get_enum (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, id, pspec);
    }
}

static void
plan_params_get_property (GObject *object,
                          guint id,
                          GValue *value,
                          GParamSpec *pspec)
{
  ElkPlanParams *self = ELK_PLAN_PARAMS (object);

  switch (id)
    {
    case PROP_NOC_DEMAND:
      g_value_set_enum (value, self->noc_demand);
      break;
    case PROP_ENUMERATION:
      g_value_set_enum (value, self->enumeration);
      break;
    case PROP_PADDING_FLOOR:
      g_value_set_double (value, self->padding_floor);
      break;
    case PROP_UTILISATION_FLOOR:
      g_value_set_double (value, self->utilisation_floor);
      break;
    case PROP_COST_MODEL:
      g_value_set_enum (value, self->cost_model);
      break;
    case PROP_FUSE:
      g_value_set_enum (value, self->fuse);
      break;
    case PROP_LAYOUT:
      g_value_set_enum (value, self->layout);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, id, pspec);
    }
}

static void
elk__plan_params_class_init (ElkPlanParamsClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GParamFlags flags = G_PARAM_READWRITE | G_PARAM_CONSTRUCT
                      | G_PARAM_STATIC_STRINGS;

  object_class->set_property = plan_params_set_property;
  object_class->get_property = plan_params_get_property;

  g_object_class_install_property (
    object_class, PROP_ENUMERATION,
    g_param_spec_enum ("enumeration", "Enumeration",
                       "The plan space searched: t10 (each temporal column "
                       "on its own loop dimension) or artifact (the Elk "
                       "artifact's quirked search and cold-hot pairing, a "
                       "measurement device)",
                       ELK_TYPE_PLAN_ENUMERATION, ELK_PLAN_ENUMERATION_T10,
                       flags));
  g_object_class_install_property (
    object_class, PROP_NOC_DEMAND,
    g_param_spec_enum ("noc-demand", "NoC demand",
                       "What an executing operator's own interconnect use "
                       "is when it overlaps preloads: shift-shuffle (its "
                       "rotations, output shuffle and partial-sum "
                       "reduction, the artifact's definition; the default) "
                       "or shift (its rotations only)",
                       ELK_TYPE_NOC_DEMAND, ELK_NOC_DEMAND_SHIFT_SHUFFLE,
                       flags));
  g_object_class_install_property (
    object_class, PROP_PADDING_FLOOR,
    g_param_spec_double ("padding-floor", "Padding floor",
                         "Minimum ratio of useful to padded work, 0 for "
                         "T10's size-dependent default",
                         0.0, 1.0, 0.0, flags));
  g_object_class_install_property (
    object_class, PROP_UTILISATION_FLOOR,
    g_param_spec_double ("utilisation-floor", "Utilisation floor",
                         "Minimum ratio of used to available cores, 0 for "
                         "T10's size-dependent default",
                         0.0, 1.0, 0.0, flags));
  g_object_class_install_property (
      object_class, PROP_COST_MODEL,
      g_param_spec_enum ("cost-model", "Cost model",
                         "The cost model schedulers plan with: analytic (the "
                         "paper's model whatever the chip; the default) or "
                         "chip (the chip's own model when it supplies one, "
                         "else the analytic model)",
                         ELK_TYPE_COST_MODEL_CHOICE, ELK_COST_MODEL_ANALYTIC,
                         flags));
  g_object_class_install_property (
      object_class, PROP_FUSE,
      g_param_spec_enum ("fuse", "Fuse",
                         "Operator fusion applied to the point's graph "
                         "before the plan tables are built "
                         "(elk_graph_fuse()): none (the default), norm "
                         "(every RMSNorm and LayerNorm folded into the "
                         "MatMuls that read it), softmax (every softmax's "
                         "exp, sum and divide folded into the MatMuls that "
                         "read it over its axis) or norm,softmax (both)",
                         ELK_TYPE_PLAN_FUSE, ELK_FUSE_NONE, flags));
  g_object_class_install_property (
      object_class, PROP_LAYOUT,
      g_param_spec_enum ("layout", "Layout",
                         "Whether choosing an operator's plan counts the "
                         "re-layout of its output into the plans of its "
                         "consumers, as the chip prices it: aware (the "
                         "default; nothing changes on a chip whose model "
                         "prices no re-layout) or ignore (each plan from "
                         "its own table, as the paper)",
                         ELK_TYPE_LAYOUT_CHOICE, ELK_LAYOUT_AWARE, flags));
}

static void
elk__plan_params_init (ElkPlanParams *self)
{
  (void) self;
}

/* Fills the plan-space fields of @options; n_threads is left alone, it
 * belongs to the runner. */
void
elk__plan_params_get_options (ElkPlanParams *self, ElkPlanOptions *options)
{
  g_return_if_fail (ELK_IS_PLAN_PARAMS (self));
  options->enumeration = self->enumeration;
  options->noc_demand = self->noc_demand;
  options->padding_floor = self->padding_floor;
  options->utilisation_floor = self->utilisation_floor;
}

/* The "cost-model" option: not part of #ElkPlanOptions, since the tables
 * are built on the chip spec alone and the runner re-prices them
 * (elk_plan_set_new_priced()) for the schedulers. */
ElkCostModelChoice
elk__plan_params_get_cost_model (ElkPlanParams *self)
{
  g_return_val_if_fail (ELK_IS_PLAN_PARAMS (self), ELK_COST_MODEL_ANALYTIC);
  return self->cost_model;
}

/* The "layout" option: not part of #ElkPlanOptions either, since the
 * tables do not depend on it; the runner hands the engine the chip's
 * re-layout prices through the plan set's cost model. */
ElkLayoutChoice
elk__plan_params_get_layout (ElkPlanParams *self)
{
  g_return_val_if_fail (ELK_IS_PLAN_PARAMS (self), ELK_LAYOUT_IGNORE);
  return self->layout;
}

/* The "fuse" option: not part of #ElkPlanOptions either, since it
 * rewrites the graph before any table exists (elk_graph_fuse()). */
ElkFuseFlags
elk__plan_params_get_fuse (ElkPlanParams *self)
{
  g_return_val_if_fail (ELK_IS_PLAN_PARAMS (self), ELK_FUSE_NONE);
  return self->fuse;
}
