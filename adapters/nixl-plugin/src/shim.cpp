// The C++ half of libtelemetry_exporter_telering.so: the plug-in object NIXL's loader
// reads and the exporter class NIXL's flush calls. Every call goes on to the Rust half
// (src/abi.rs) through the telering_nixl_* functions; nothing here throws into NIXL.

#include "nixl_telemetry_abi.h"

#include <new>

extern "C" {
// The Rust half (src/abi.rs). A handle is the Rust exporter, owned by the C++ object.
void *telering_nixl_create(const char *agent_name, size_t agent_name_len, size_t max_events);
int32_t telering_nixl_export(void *handle, uint32_t event_type, uint64_t value);
void telering_nixl_batch_end(void *handle);
void telering_nixl_destroy(void *handle);
}

namespace {

class teleringExporter final : public nixlTelemetryExporter {
public:
    teleringExporter(const nixlTelemetryExporterInitParams &params, void *handle) noexcept
        : nixlTelemetryExporter(params), handle_(handle) {}

    // Flushes every event still waiting, closes the exporters, logs what was lost.
    ~teleringExporter() override { telering_nixl_destroy(handle_); }

    nixl_status_t exportEvent(const nixlTelemetryEvent &event) override {
        return static_cast<nixl_status_t>(
            telering_nixl_export(handle_, event.eventType_, event.value_));
    }

private:
    void onBatchBegin() noexcept override {}
    void onBatchEnd() noexcept override { telering_nixl_batch_end(handle_); }

    void *handle_;
};

std::unique_ptr<nixlTelemetryExporter> createExporter(const nixlTelemetryExporterInitParams &params) {
    // On a bad telering setting the Rust half logs why and answers a degraded
    // exporter; it answers NULL only with TELERING_PLUGIN_STRICT=1 (NIXL's agent then
    // throws and does not start) or when out of memory.
    void *handle = telering_nixl_create(
        params.agentName.data(), params.agentName.size(), params.maxEventsBuffered);
    if (handle == nullptr) {
        return nullptr;
    }
    auto *exporter = new (std::nothrow) teleringExporter(params, handle);
    if (exporter == nullptr) {
        telering_nixl_destroy(handle);
        return nullptr;
    }
    return std::unique_ptr<nixlTelemetryExporter>(exporter);
}

} // namespace

// Called by the Rust entry point nixl_telemetry_plugin_init (a cdylib exports the
// symbols Rust defines, so the entry points are Rust's and call in here).
extern "C" nixlTelemetryPlugin *telering_nixl_plugin() {
    static nixlTelemetryPlugin plugin(
        nixl_telemetry_plugin_api_version::V2, "telering", TELERING_VERSION, createExporter);
    return &plugin;
}
