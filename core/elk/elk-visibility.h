/* elk-visibility.h: symbol visibility macros for libelk and its plugins.
 *
 * libelk is built with hidden visibility; only symbols marked ELK_API are
 * exported.  Plugins are built the same way and export exactly one symbol,
 * the descriptor getter made by ELK_PLUGIN_DEFINE, marked ELK_PLUGIN_EXPORT.
 */
#pragma once

#if defined(_WIN32)
#define ELK_API_EXPORT __declspec (dllexport)
#else
#define ELK_API_EXPORT __attribute__ ((visibility ("default")))
#endif

#define ELK_API extern ELK_API_EXPORT
#define ELK_PLUGIN_EXPORT ELK_API_EXPORT
