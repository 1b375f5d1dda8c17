/* elk-error.h: the error domains of libelk.
 *
 * One domain per subsystem.  Every failure caused by input, files, plugins or
 * resources is reported as a GError in one of these domains, with a message
 * that names the thing and the place (file:line where there is one).
 */
#pragma once

#include <glib.h>
#include <elk/elk-visibility.h>

G_BEGIN_DECLS

/**
 * ElkPluginError:
 * @ELK_PLUGIN_ERROR_NOT_A_PLUGIN: the file could not be opened as a module or
 *   has no `elk_plugin_<name>_get_desc` entry symbol.
 * @ELK_PLUGIN_ERROR_ABI_MISMATCH: the descriptor was built for another ABI.
 * @ELK_PLUGIN_ERROR_NAME_MISMATCH: the descriptor's name does not match the
 *   file name.
 * @ELK_PLUGIN_ERROR_BAD_DESCRIPTOR: a required descriptor field is missing.
 * @ELK_PLUGIN_ERROR_INIT_FAILED: the plugin's register function failed.
 * @ELK_PLUGIN_ERROR_NO_FEATURES: the register function succeeded but added
 *   no feature.
 * @ELK_PLUGIN_ERROR_CONTRACT: a plugin broke an interface contract at run
 *   time (returned %NULL without an error, left a required vfunc empty,
 *   returned an inconsistent result).
 * @ELK_PLUGIN_ERROR_FAILED: a plugin reported a failure of its own.
 * @ELK_PLUGIN_ERROR_TYPE_CLASH: the plugin defines a GType whose name is
 *   already registered (by another plugin file or a library); the message
 *   names the type and both files.
 * @ELK_PLUGIN_ERROR_IGNORED: the file was not loaded on purpose: it is not
 *   named `libelk-<name>.so`, or it has the same content as a plugin file
 *   loaded before (elk_registry_get_ignored()).
 *
 * Error codes of the %ELK_PLUGIN_ERROR domain: loading plugin files.
 */
typedef enum
{
  ELK_PLUGIN_ERROR_NOT_A_PLUGIN,
  ELK_PLUGIN_ERROR_ABI_MISMATCH,
  ELK_PLUGIN_ERROR_NAME_MISMATCH,
  ELK_PLUGIN_ERROR_BAD_DESCRIPTOR,
  ELK_PLUGIN_ERROR_INIT_FAILED,
  ELK_PLUGIN_ERROR_NO_FEATURES,
  ELK_PLUGIN_ERROR_CONTRACT,
  ELK_PLUGIN_ERROR_FAILED,
  ELK_PLUGIN_ERROR_TYPE_CLASH,
  ELK_PLUGIN_ERROR_IGNORED,
} ElkPluginError;

/**
 * ElkRegistryError:
 * @ELK_REGISTRY_ERROR_DUPLICATE: a feature name is already taken for its kind.
 * @ELK_REGISTRY_ERROR_WRONG_TYPE: the implementation type does not implement
 *   the interface, is abstract, or lacks a required vfunc.
 * @ELK_REGISTRY_ERROR_NOT_FOUND: no feature of that kind and name.
 * @ELK_REGISTRY_ERROR_BAD_NAME: a feature name is not lowercase dash-case.
 * @ELK_REGISTRY_ERROR_AMBIGUOUS: more than one plugin file provides (or
 *   tried to provide) the feature, and no file was chosen; the message
 *   names every file.
 *
 * Error codes of the %ELK_REGISTRY_ERROR domain: registering and
 * looking up features.
 */
typedef enum
{
  ELK_REGISTRY_ERROR_DUPLICATE,
  ELK_REGISTRY_ERROR_WRONG_TYPE,
  ELK_REGISTRY_ERROR_NOT_FOUND,
  ELK_REGISTRY_ERROR_BAD_NAME,
  ELK_REGISTRY_ERROR_AMBIGUOUS,
} ElkRegistryError;

/**
 * ElkExperimentError:
 * @ELK_EXPERIMENT_ERROR_IO: the file cannot be read.
 * @ELK_EXPERIMENT_ERROR_PARSE: the file is not well-formed XML.
 * @ELK_EXPERIMENT_ERROR_SCHEMA: the file does not follow the RelaxNG schema.
 * @ELK_EXPERIMENT_ERROR_UNKNOWN_PLUGIN: a named plugin feature does not exist.
 * @ELK_EXPERIMENT_ERROR_UNKNOWN_PARAM: a parameter names no property.
 * @ELK_EXPERIMENT_ERROR_BAD_VALUE: a value does not parse as the property type.
 * @ELK_EXPERIMENT_ERROR_OUT_OF_RANGE: a value parses but lies outside the
 *   property's range.
 * @ELK_EXPERIMENT_ERROR_MISSING_FILE: a path parameter names a missing file.
 * @ELK_EXPERIMENT_ERROR_INVALID: anything else inconsistent in the file
 *   (duplicate labels, an unsupported format version, a sweep over nothing).
 *
 * Error codes of the %ELK_EXPERIMENT_ERROR domain: experiment files.
 */
typedef enum
{
  ELK_EXPERIMENT_ERROR_IO,
  ELK_EXPERIMENT_ERROR_PARSE,
  ELK_EXPERIMENT_ERROR_SCHEMA,
  ELK_EXPERIMENT_ERROR_UNKNOWN_PLUGIN,
  ELK_EXPERIMENT_ERROR_UNKNOWN_PARAM,
  ELK_EXPERIMENT_ERROR_BAD_VALUE,
  ELK_EXPERIMENT_ERROR_OUT_OF_RANGE,
  ELK_EXPERIMENT_ERROR_MISSING_FILE,
  ELK_EXPERIMENT_ERROR_INVALID,
} ElkExperimentError;

/**
 * ElkGraphError:
 * @ELK_GRAPH_ERROR_INVALID: an operator or tensor is inconsistent (unknown
 *   tensor, bad einsum spec, shape disagreeing with the iteration space).
 * @ELK_GRAPH_ERROR_UNSUPPORTED: the model uses something elk cannot express.
 * @ELK_GRAPH_ERROR_LIMIT: a resource limit was exceeded.
 *
 * Error codes of the %ELK_GRAPH_ERROR domain: operator graphs.
 */
typedef enum
{
  ELK_GRAPH_ERROR_INVALID,
  ELK_GRAPH_ERROR_UNSUPPORTED,
  ELK_GRAPH_ERROR_LIMIT,
} ElkGraphError;

/**
 * ElkScheduleError:
 * @ELK_SCHEDULE_ERROR_DOES_NOT_FIT: an operator, or an operator together with
 *   what must stay resident, does not fit the chip's cores and SRAM.
 * @ELK_SCHEDULE_ERROR_INVALID_PROGRAM: a program breaks the device rules.
 * @ELK_SCHEDULE_ERROR_FAILED: any other scheduling failure.
 *
 * Error codes of the %ELK_SCHEDULE_ERROR domain: plan tables,
 * allocation, scheduling and program checks.
 */
typedef enum
{
  ELK_SCHEDULE_ERROR_DOES_NOT_FIT,
  ELK_SCHEDULE_ERROR_INVALID_PROGRAM,
  ELK_SCHEDULE_ERROR_FAILED,
} ElkScheduleError;

/**
 * ElkChipError:
 * @ELK_CHIP_ERROR_CONFIG: the chip's parameters are inconsistent.
 * @ELK_CHIP_ERROR_RUN: running a program failed.
 * @ELK_CHIP_ERROR_BELOW_BOUND: a run reported a latency below the physical
 *   lower bound, which is always a bug in the backend or the program.
 *
 * Error codes of the %ELK_CHIP_ERROR domain: chip specs and backends.
 */
typedef enum
{
  ELK_CHIP_ERROR_CONFIG,
  ELK_CHIP_ERROR_RUN,
  ELK_CHIP_ERROR_BELOW_BOUND,
} ElkChipError;

/**
 * ELK_PLUGIN_ERROR:
 *
 * The error domain of plugin loading, with the codes of #ElkPluginError.
 */
#define ELK_PLUGIN_ERROR (elk_plugin_error_quark ())
/**
 * ELK_REGISTRY_ERROR:
 *
 * The error domain of the registry, with the codes of #ElkRegistryError.
 */
#define ELK_REGISTRY_ERROR (elk_registry_error_quark ())
/**
 * ELK_EXPERIMENT_ERROR:
 *
 * The error domain of experiments, with the codes of #ElkExperimentError.
 */
#define ELK_EXPERIMENT_ERROR (elk_experiment_error_quark ())
/**
 * ELK_GRAPH_ERROR:
 *
 * The error domain of graphs, with the codes of #ElkGraphError.
 */
#define ELK_GRAPH_ERROR (elk_graph_error_quark ())
/**
 * ELK_SCHEDULE_ERROR:
 *
 * The error domain of scheduling, with the codes of #ElkScheduleError.
 */
#define ELK_SCHEDULE_ERROR (elk_schedule_error_quark ())
/**
 * ELK_CHIP_ERROR:
 *
 * The error domain of chips, with the codes of #ElkChipError.
 */
#define ELK_CHIP_ERROR (elk_chip_error_quark ())

ELK_API GQuark elk_plugin_error_quark (void);
ELK_API GQuark elk_registry_error_quark (void);
ELK_API GQuark elk_experiment_error_quark (void);
ELK_API GQuark elk_graph_error_quark (void);
ELK_API GQuark elk_schedule_error_quark (void);
ELK_API GQuark elk_chip_error_quark (void);

G_END_DECLS
