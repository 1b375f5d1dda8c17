/* elk-experiment-private.h: the parsed experiment, shared by the loader
 * (elk-experiment.c) and the runner (elk-runner.c).  Not installed. */
#pragma once

#include "elk-private.h"

/* One <param>, already converted to the property's type. */
typedef struct
{
  char *name;
  GValue value;
  int line;
} ParamEntry;

/* A <frontend>, <chip>, <allocator>, <scheduler> or <plans> (kind
 * ELK_TYPE_PLAN_PARAMS, a libelk type rather than a plugin). */
typedef struct _Component Component;
struct _Component
{
  GType kind;
  const ElkFeature *feature;
  char *label;                /* schedulers only */
  GPtrArray *params;          /* ParamEntry * */
  Component *allocator;    /* schedulers only, optional */
  int line;
  gboolean bound;             /* schedulers only: measured as a bound */
};

/* One <axis>: which component and property, and the converted values. */
typedef struct
{
  char *text;                 /* the param attribute as written */
  Component *component;
  char *property;
  GArray *values;             /* GValue */
  GPtrArray *texts;           /* char *, as written */
  int line;
} Axis;

struct _ElkExperiment
{
  GObject parent_instance;

  char *path;
  char *dir;
  char *name;
  char *hash;
  guint64 seed;
  char *output_dir;
  gboolean trace;             /* <output trace="true"> */
  gint trace_point;           /* --trace POINT, or -1 */
  Component *frontend;
  Component *chip;
  Component *allocator;    /* default, optional */
  Component *plans;        /* <plans>, or one without params */
  GPtrArray *schedulers;      /* Component * */
  GPtrArray *axes;            /* Axis * */
  guint n_points;
  gboolean quick;             /* elk_experiment_set_quick() */
};

Component *elk__experiment_allocator_for (ElkExperiment *self,
                                          guint scheduler_index);
