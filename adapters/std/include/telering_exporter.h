/*
 * telering_exporter.h: the C ABI of telering's exporter plug-ins.
 *
 * A plug-in is a shared library named libtelemetry_exporter_<name>.so in the
 * directory NIXL_PLUGIN_DIR names; <name> is ASCII letters, digits, '_' and '-',
 * lower-cased. An agent started with
 * NIXL_TELEMETRY_EXPORTER=<name> (alone or in a list), where <name> is not an
 * exporter built into telering, loads it, calls telering_exporter_entry() and
 * checks the table's abi_version against TELERING_EXPORTER_ABI_VERSION.
 *
 * Calls: init once; then export_events and add_dropped, from one thread at a
 * time (not always the same thread); then shutdown once, last. A plug-in that
 * fails export_events (non-zero) loses that batch: telering counts its events as
 * dropped and passes the count to add_dropped before the next batch.
 */
#ifndef TELERING_EXPORTER_H
#define TELERING_EXPORTER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this ABI; a table with another version is refused. */
#define TELERING_EXPORTER_ABI_VERSION 1u

/* The entry symbol's name, for dlsym. */
#define TELERING_EXPORTER_ENTRY "telering_exporter_entry"

/* One event. The strings are NUL-terminated and valid during the call only. */
typedef struct telering_export_event {
    uint64_t timestamp_us;  /* microseconds since the Unix epoch */
    const char *name;       /* at most 31 bytes, such as "agent_tx_bytes" */
    const char *category;   /* "MEMORY", "TRANSFER", "CONNECTION", "BACKEND",
                               "ERROR", "PERFORMANCE", "SYSTEM" or "CUSTOM" */
    uint64_t value;
} telering_export_event;

/* Reads a configuration value (a NIXL_TELEMETRY_* or TELERING_* variable, from
 * the environment or NIXL's configuration file): its text, or NULL when unset.
 * Callable during init only; the text stays valid until init returns. */
typedef const char *(*telering_config_get_fn)(void *config, const char *name);

typedef struct telering_exporter_init_args {
    const char *agent_name;
    const char *dir;              /* NIXL_TELEMETRY_DIR, or NULL when unset */
    uint64_t run_interval_ms;     /* NIXL_TELEMETRY_RUN_INTERVAL */
    void *config;                 /* pass to config_get */
    telering_config_get_fn config_get;
} telering_exporter_init_args;

typedef struct telering_exporter {
    uint32_t abi_version;  /* TELERING_EXPORTER_ABI_VERSION */
    /* Starts the exporter; stores its state in *state. 0 on success. */
    int (*init)(const telering_exporter_init_args *args, void **state);
    /* Exports count events (count may be 0). 0 on success. */
    int (*export_events)(void *state, const telering_export_event *events, size_t count);
    /* Events lost before reaching this exporter since the last call. */
    void (*add_dropped)(void *state, uint64_t events);
    /* Flushes and frees the state. */
    void (*shutdown)(void *state);
} telering_exporter;

/* The entry symbol every plug-in exports. */
const telering_exporter *telering_exporter_entry(void);

#ifdef __cplusplus
}
#endif

#endif /* TELERING_EXPORTER_H */
