/*
 * A telering exporter plug-in in C: writes each event as one JSON line to
 * $NIXL_TELEMETRY_DIR/<agent>.jsonl, and each loss report as {"dropped": N}.
 *
 * Build:  cc -shared -fPIC -O2 -I ../../adapters/std/include \
 *             -o libtelemetry_exporter_jsonl.so jsonl.c
 * Use:    NIXL_PLUGIN_DIR=$PWD NIXL_TELEMETRY_EXPORTER=jsonl ...
 *
 * NIXL_TELEMETRY_JSONL_FAIL_FIRST=N makes the first N exports fail (to see a
 * failing exporter isolated and its losses counted).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "telering_exporter.h"

typedef struct {
    FILE *out;
    unsigned long fail_first;
} jsonl_state;

/* Names and categories are plain identifiers; escape anyway, as JSON requires. */
static void write_string(FILE *out, const char *s) {
    fputc('"', out);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            fputc('\\', out);
            fputc(c, out);
        } else if (c < 0x20) {
            fprintf(out, "\\u%04x", c);
        } else {
            fputc(c, out);
        }
    }
    fputc('"', out);
}

static int jsonl_init(const telering_exporter_init_args *args, void **state) {
    if (args->dir == NULL) {
        return 2; /* NIXL_TELEMETRY_DIR is required */
    }
    size_t len = strlen(args->dir) + strlen(args->agent_name) + sizeof("/.jsonl");
    char *path = malloc(len);
    if (path == NULL) {
        return 3;
    }
    snprintf(path, len, "%s/%s.jsonl", args->dir, args->agent_name);
    FILE *out = fopen(path, "w");
    free(path);
    if (out == NULL) {
        return 4;
    }
    jsonl_state *s = calloc(1, sizeof *s);
    if (s == NULL) {
        fclose(out);
        return 3;
    }
    s->out = out;
    const char *fail = args->config_get(args->config, "NIXL_TELEMETRY_JSONL_FAIL_FIRST");
    s->fail_first = fail ? strtoul(fail, NULL, 10) : 0;
    *state = s;
    return 0;
}

static int jsonl_export(void *state, const telering_export_event *events, size_t count) {
    jsonl_state *s = state;
    if (s->fail_first > 0) {
        s->fail_first--;
        return 1;
    }
    for (size_t i = 0; i < count; i++) {
        fprintf(s->out, "{\"timestamp_us\":%llu,\"category\":",
                (unsigned long long)events[i].timestamp_us);
        write_string(s->out, events[i].category);
        fputs(",\"name\":", s->out);
        write_string(s->out, events[i].name);
        fprintf(s->out, ",\"value\":%llu}\n", (unsigned long long)events[i].value);
    }
    return fflush(s->out) == 0 ? 0 : 5;
}

static void jsonl_add_dropped(void *state, uint64_t events) {
    jsonl_state *s = state;
    fprintf(s->out, "{\"dropped\":%llu}\n", (unsigned long long)events);
}

static void jsonl_shutdown(void *state) {
    jsonl_state *s = state;
    fclose(s->out);
    free(s);
}

static const telering_exporter TABLE = {
    .abi_version = TELERING_EXPORTER_ABI_VERSION,
    .init = jsonl_init,
    .export_events = jsonl_export,
    .add_dropped = jsonl_add_dropped,
    .shutdown = jsonl_shutdown,
};

const telering_exporter *telering_exporter_entry(void) {
    return &TABLE;
}
