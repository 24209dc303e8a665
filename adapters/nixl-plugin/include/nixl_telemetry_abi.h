/*
 * The C++ interface between NIXL's telemetry and an exporter plug-in, declared from
 * its facts (README.md of this folder: which NIXL releases it was checked against).
 * Only the layout matters to NIXL: the order and types of the members, the order of
 * the virtual functions, the two extern "C" entry points. The names are NIXL's, so
 * that a plug-in and a host written against this header read like NIXL's own.
 *
 * Layout (x86-64 and aarch64, Itanium C++ ABI, libstdc++ with the C++11 string ABI):
 *
 *   nixlTelemetryEvent               16 bytes: uint32 type at 0, uint64 value at 8
 *                                    (NIXL 1.3.0 and later; 1.1.0 and 1.2.0 put a
 *                                    category first and are not supported)
 *   nixlTelemetryExporterInitParams  std::string agentName; size_t maxEventsBuffered
 *   nixlTelemetryExporter            vptr, then const size_t maxEventsBuffered_;
 *                                    virtual functions, in order: the destructor
 *                                    (complete and deleting), exportEvent, and in
 *                                    NIXL after 1.4.0 onBatchBegin, onBatchEnd
 *   nixlTelemetryPlugin              api_version (unsigned), create_exporter (a
 *                                    function pointer), std::string name_, version_
 */
#ifndef TELERING_NIXL_TELEMETRY_ABI_H
#define TELERING_NIXL_TELEMETRY_ABI_H

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

/* NIXL's status codes (nixl_types.h): 0 success, errors negative. */
enum nixl_status_t {
    NIXL_IN_PROG = 1,
    NIXL_SUCCESS = 0,
    NIXL_ERR_NOT_POSTED = -1,
    NIXL_ERR_INVALID_PARAM = -2,
    NIXL_ERR_BACKEND = -3,
    NIXL_ERR_NOT_FOUND = -4,
    NIXL_ERR_MISMATCH = -5,
    NIXL_ERR_NOT_ALLOWED = -6,
    NIXL_ERR_REPOST_ACTIVE = -7,
    NIXL_ERR_UNKNOWN = -8,
    NIXL_ERR_NOT_SUPPORTED = -9,
    NIXL_ERR_REMOTE_DISCONNECT = -10,
    NIXL_ERR_CANCELED = -11,
    NIXL_ERR_NO_TELEMETRY = -12,
};

/* One event as NIXL's flush hands it over: a type number (0 AGENT_TX_BYTES …
 * 20 AGENT_TELEMETRY_EVENTS_DROPPED) and a value; no name, no timestamp. */
struct nixlTelemetryEvent {
    uint32_t eventType_;
    uint64_t value_;
};

static_assert(sizeof(nixlTelemetryEvent) == 16, "NIXL's event is 16 bytes");
static_assert(offsetof(nixlTelemetryEvent, value_) == 8, "the value is at offset 8");

/* What NIXL tells an exporter when it creates it. */
struct nixlTelemetryExporterInitParams {
    std::string agentName;
    size_t maxEventsBuffered;
};

/* The exporter NIXL's flush calls: exportEvent once per pending event, each flush's
 * events inside one batch (withBatch, in NIXL after 1.4.0; earlier releases call
 * exportEvent alone and never the hooks). */
class nixlTelemetryExporter {
public:
    explicit nixlTelemetryExporter(const nixlTelemetryExporterInitParams &params) noexcept
        : maxEventsBuffered_(params.maxEventsBuffered) {}
    nixlTelemetryExporter(const nixlTelemetryExporter &) = delete;
    nixlTelemetryExporter &operator=(const nixlTelemetryExporter &) = delete;

    virtual ~nixlTelemetryExporter() = default;

    size_t getMaxEventsBuffered() const noexcept { return maxEventsBuffered_; }

    virtual nixl_status_t exportEvent(const nixlTelemetryEvent &event) = 0;

    /* Runs body between onBatchBegin and onBatchEnd (also when body throws). */
    template<typename Body> void withBatch(Body &&body) {
        struct scope {
            nixlTelemetryExporter &exporter;
            explicit scope(nixlTelemetryExporter &e) noexcept : exporter(e) {
                exporter.onBatchBegin();
            }
            ~scope() { exporter.onBatchEnd(); }
        } open{*this};
        body();
    }

private:
    virtual void onBatchBegin() noexcept {}
    virtual void onBatchEnd() noexcept {}

    const size_t maxEventsBuffered_;
};

/* Plug-in API versions; NIXL 1.1.0 to 1.4.0 (and later) accept only V2. */
enum class nixl_telemetry_plugin_api_version : unsigned int {
    V1 = 1,
    V2 = 2,
};

using exporter_creator_fn_t =
    std::unique_ptr<nixlTelemetryExporter> (*)(const nixlTelemetryExporterInitParams &params);

/* What nixl_telemetry_plugin_init returns. */
class nixlTelemetryPlugin {
public:
    nixl_telemetry_plugin_api_version api_version;
    exporter_creator_fn_t create_exporter;

    nixlTelemetryPlugin(nixl_telemetry_plugin_api_version version,
                        std::string_view name,
                        std::string_view ver,
                        exporter_creator_fn_t create)
        : api_version(version), create_exporter(create), name_(name), version_(ver) {}

    const std::string &getName() const noexcept { return name_; }
    const std::string &getVersion() const noexcept { return version_; }

private:
    std::string name_;
    std::string version_;
};

/* The two entry points a host finds with dlsym. */
extern "C" {
typedef nixlTelemetryPlugin *(*nixl_telemetry_plugin_init_fn)();
typedef void (*nixl_telemetry_plugin_fini_fn)();
}

#endif /* TELERING_NIXL_TELEMETRY_ABI_H */
