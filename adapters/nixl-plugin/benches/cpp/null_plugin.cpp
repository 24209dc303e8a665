// The baseline of the exportEvent benchmark, a model named for what it models: an
// exporter plug-in whose exportEvent only adds the event's value to a member, so its
// cost is NIXL's virtual call into a plug-in and nothing else.

#include "nixl_telemetry_abi.h"

namespace {
class nullExporter final : public nixlTelemetryExporter {
public:
    explicit nullExporter(const nixlTelemetryExporterInitParams &params) noexcept
        : nixlTelemetryExporter(params) {}
    nixl_status_t exportEvent(const nixlTelemetryEvent &event) override {
        sum_ += event.value_ + event.eventType_;
        return NIXL_SUCCESS;
    }

private:
    volatile uint64_t sum_ = 0;
};

std::unique_ptr<nixlTelemetryExporter> create(const nixlTelemetryExporterInitParams &params) {
    return std::make_unique<nullExporter>(params);
}
} // namespace

extern "C" __attribute__((visibility("default"))) nixlTelemetryPlugin *nixl_telemetry_plugin_init() {
    static nixlTelemetryPlugin plugin(nixl_telemetry_plugin_api_version::V2, "null", "1.0", create);
    return &plugin;
}

extern "C" __attribute__((visibility("default"))) void nixl_telemetry_plugin_fini() {}
