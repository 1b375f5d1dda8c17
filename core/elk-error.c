/* elk-error.c: error domain quarks. */
#include "config.h"

#include <elk/elk-error.h>

G_DEFINE_QUARK (elk-plugin-error-quark, elk_plugin_error)
G_DEFINE_QUARK (elk-registry-error-quark, elk_registry_error)
G_DEFINE_QUARK (elk-experiment-error-quark, elk_experiment_error)
G_DEFINE_QUARK (elk-graph-error-quark, elk_graph_error)
G_DEFINE_QUARK (elk-schedule-error-quark, elk_schedule_error)
G_DEFINE_QUARK (elk-chip-error-quark, elk_chip_error)
