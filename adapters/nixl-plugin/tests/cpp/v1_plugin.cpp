// A plug-in written for NIXL's telemetry plug-in API version 1: NIXL's loader (and
// the host modelling it) must refuse it before asking it for an exporter.

#include "nixl_telemetry_abi.h"

#include <cstdio>

namespace {
std::unique_ptr<nixlTelemetryExporter> create(const nixlTelemetryExporterInitParams &) {
    std::fprintf(stderr, "v1 plug-in: create_exporter called\n");
    return nullptr;
}
} // namespace

extern "C" __attribute__((visibility("default"))) nixlTelemetryPlugin *nixl_telemetry_plugin_init() {
    static nixlTelemetryPlugin plugin(nixl_telemetry_plugin_api_version::V1, "v1", "1.0", create);
    return &plugin;
}

extern "C" __attribute__((visibility("default"))) void nixl_telemetry_plugin_fini() {}
