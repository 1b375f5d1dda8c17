/* elk-error.c: error domain quarks. */
#include "config.h"

#include <elk/elk-error.h>

/**
 * elk_plugin_error_quark:
 *
 * The error domain of loading plugin files and their
 * descriptors: %ELK_PLUGIN_ERROR, with the codes of #ElkPluginError.
 *
 * Returns: the #GQuark of the domain.
 */
G_DEFINE_QUARK (elk-plugin-error-quark, elk_plugin_error)

/**
 * elk_registry_error_quark:
 *
 * The error domain of registering and looking up
 * features: %ELK_REGISTRY_ERROR, with the codes of #ElkRegistryError.
 *
 * Returns: the #GQuark of the domain.
 */
G_DEFINE_QUARK (elk-registry-error-quark, elk_registry_error)

/**
 * elk_experiment_error_quark:
 *
 * The error domain of loading and running experiment files:
 * %ELK_EXPERIMENT_ERROR, with the codes of #ElkExperimentError.
 *
 * Returns: the #GQuark of the domain.
 */
G_DEFINE_QUARK (elk-experiment-error-quark, elk_experiment_error)

/**
 * elk_graph_error_quark:
 *
 * The error domain of building and checking
 * operator graphs: %ELK_GRAPH_ERROR, with the codes of #ElkGraphError.
 *
 * Returns: the #GQuark of the domain.
 */
G_DEFINE_QUARK (elk-graph-error-quark, elk_graph_error)

/**
 * elk_schedule_error_quark:
 *
 * The error domain of plan tables, allocation, scheduling and program
 * checks: %ELK_SCHEDULE_ERROR, with the codes of #ElkScheduleError.
 *
 * Returns: the #GQuark of the domain.
 */
G_DEFINE_QUARK (elk-schedule-error-quark, elk_schedule_error)

/**
 * elk_chip_error_quark:
 *
 * The error domain of chip specs and chip
 * backends: %ELK_CHIP_ERROR, with the codes of #ElkChipError.
 *
 * Returns: the #GQuark of the domain.
 */
G_DEFINE_QUARK (elk-chip-error-quark, elk_chip_error)
