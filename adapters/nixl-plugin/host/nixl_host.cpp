// A NIXL-shaped host: loads a telemetry exporter plug-in the way NIXL's plug-in
// manager and telemetry do (a model of them, written from their documented
// behaviour), then feeds it batches of events as NIXL's flush does.
//
//   nixl_host [--name telering] [--agent NAME | --agent-hex HEX] [--batches B]
//             [--events E] [--dropped D] [--unknown U] [--max-buffered M] [--no-batch-hooks]
//             [--null-exporter throw|continue] [--hold] [--bench ROUNDS]
//             [--interval-ms MS]
//
// Loading (exit 3 when the plug-in cannot be loaded, 4 when its API version is
// refused):
//   $NIXL_PLUGIN_DIR/libtelemetry_exporter_<name>.so, dlopen RTLD_NOW | RTLD_LOCAL |
//   RTLD_NODELETE, dlsym nixl_telemetry_plugin_init, api_version must be V2,
//   create_exporter({agent, max-buffered}); at the end the exporter is destroyed,
//   then nixl_telemetry_plugin_fini, then dlclose.
// When create_exporter answers null: by default as NIXL's main branch, 1.3.0, 1.3.1
// and 1.4.0 do, the agent's constructor throws std::runtime_error and the agent does
// not start (exit 6, "the agent did not start: ..."); --null-exporter continue models
// a host that logs and runs without telemetry (exit 5).
// --unknown U exports U events of type 99 (no NIXL release defines it) per batch.
// --agent-hex takes the agent name as hex bytes (a name with NUL or control bytes).
// Flushing: B batches; each is E events (event k of the run: type k % 20, value
// k % 7 + 1) then, with D > 0, one AGENT_TELEMETRY_EVENTS_DROPPED of value D, inside
// withBatch (NIXL after 1.4.0) or without hooks (--no-batch-hooks: NIXL 1.3.x, 1.4.0).
// --hold waits for a line on stdin before destroying the exporter (for a scrape).
// --bench ROUNDS: prints one line per round, "round R ns_per_event X", timing only
// the exportEvent calls; batches are --interval-ms apart, as NIXL's flush is.

#include "nixl_telemetry_abi.h"

#include <dlfcn.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <stdexcept>
#include <string>
#include <thread>

namespace {

struct options {
    std::string name = "telering";
    std::string agent = "nixl-agent";
    unsigned long batches = 1;
    unsigned long events = 100;
    unsigned long dropped = 0;
    unsigned long unknown = 0;
    unsigned long max_buffered = 4096;
    bool hooks = true;
    bool hold = false;
    bool throw_on_null = true;
    unsigned long bench_rounds = 0;
    unsigned long interval_ms = 100;
};

unsigned long number(const char *flag, const char *value) {
    char *end = nullptr;
    unsigned long n = std::strtoul(value ? value : "", &end, 10);
    if (value == nullptr || *value == '\0' || *end != '\0') {
        std::fprintf(stderr, "nixl_host: %s needs a number\n", flag);
        std::exit(2);
    }
    return n;
}

std::string from_hex(const char *hex) {
    std::string out;
    const std::string text = hex ? hex : "";
    if (text.size() % 2 != 0) {
        std::fprintf(stderr, "nixl_host: --agent-hex needs an even number of hex digits\n");
        std::exit(2);
    }
    for (size_t i = 0; i < text.size(); i += 2) {
        char *end = nullptr;
        const std::string pair = text.substr(i, 2);
        const unsigned long byte = std::strtoul(pair.c_str(), &end, 16);
        if (*end != '\0') {
            std::fprintf(stderr, "nixl_host: --agent-hex needs hex digits\n");
            std::exit(2);
        }
        out.push_back(static_cast<char>(byte));
    }
    return out;
}

options parse(int argc, char **argv) {
    options o;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        const char *next = i + 1 < argc ? argv[i + 1] : nullptr;
        if (a == "--name" && next) { o.name = next; ++i; }
        else if (a == "--agent" && next) { o.agent = next; ++i; }
        else if (a == "--agent-hex" && next) { o.agent = from_hex(next); ++i; }
        else if (a == "--null-exporter" && next && std::string(next) == "throw") { o.throw_on_null = true; ++i; }
        else if (a == "--null-exporter" && next && std::string(next) == "continue") { o.throw_on_null = false; ++i; }
        else if (a == "--batches") { o.batches = number("--batches", next); ++i; }
        else if (a == "--events") { o.events = number("--events", next); ++i; }
        else if (a == "--dropped") { o.dropped = number("--dropped", next); ++i; }
        else if (a == "--unknown") { o.unknown = number("--unknown", next); ++i; }
        else if (a == "--max-buffered") { o.max_buffered = number("--max-buffered", next); ++i; }
        else if (a == "--bench") { o.bench_rounds = number("--bench", next); ++i; }
        else if (a == "--interval-ms") { o.interval_ms = number("--interval-ms", next); ++i; }
        else if (a == "--no-batch-hooks") { o.hooks = false; }
        else if (a == "--hold") { o.hold = true; }
        else {
            std::fprintf(stderr, "nixl_host: unknown argument %s\n", a.c_str());
            std::exit(2);
        }
    }
    return o;
}

// One flush of NIXL's: the pending events, then its staging buffer's losses.
// Returns the number of exportEvent calls that did not answer NIXL_SUCCESS.
unsigned long flush(nixlTelemetryExporter &exporter, const options &o, unsigned long &k) {
    unsigned long failed = 0;
    auto body = [&] {
        for (unsigned long i = 0; i < o.events; ++i, ++k) {
            const nixlTelemetryEvent event{static_cast<uint32_t>(k % 20), k % 7 + 1};
            failed += exporter.exportEvent(event) != NIXL_SUCCESS;
        }
        // Events of a type number no NIXL release defines (a newer NIXL).
        for (unsigned long i = 0; i < o.unknown; ++i) {
            const nixlTelemetryEvent event{99, 1};
            failed += exporter.exportEvent(event) != NIXL_SUCCESS;
        }
        if (o.dropped > 0) {
            const nixlTelemetryEvent report{20, o.dropped};
            failed += exporter.exportEvent(report) != NIXL_SUCCESS;
        }
    };
    if (o.hooks) {
        exporter.withBatch(body);
    } else {
        body();
    }
    return failed;
}

int run(nixlTelemetryExporter &exporter, const options &o) {
    unsigned long k = 0, failed = 0;
    if (o.bench_rounds == 0) {
        for (unsigned long b = 0; b < o.batches; ++b) {
            failed += flush(exporter, o, k);
        }
        std::printf("exported %lu events in %lu batches, %lu not successful\n", k, o.batches, failed);
        return 0;
    }
    for (unsigned long r = 0; r < o.bench_rounds; ++r) {
        std::chrono::nanoseconds spent{0};
        unsigned long events = 0;
        for (unsigned long b = 0; b < o.batches; ++b) {
            std::this_thread::sleep_for(std::chrono::milliseconds(o.interval_ms));
            const auto start = std::chrono::steady_clock::now();
            failed += flush(exporter, o, k);
            spent += std::chrono::steady_clock::now() - start;
            events += o.events;
        }
        std::printf("round %lu ns_per_event %.3f not_successful %lu\n", r,
                    static_cast<double>(spent.count()) / static_cast<double>(events), failed);
    }
    return 0;
}

// The agent's telemetry as NIXL constructs it: a null exporter throws (NIXL's main
// branch, 1.3.0, 1.3.1, 1.4.0) or is logged and left out (--null-exporter continue).
struct agentTelemetry {
    std::unique_ptr<nixlTelemetryExporter> exporter;

    agentTelemetry(nixlTelemetryPlugin &plugin, const options &o) {
        const nixlTelemetryExporterInitParams params{o.agent, o.max_buffered};
        exporter = plugin.create_exporter(params);
        if (!exporter) {
            if (o.throw_on_null) {
                throw std::runtime_error("Failed to create telemetry exporter: " + o.name);
            }
            std::fprintf(stderr, "nixl_host: Failed to create telemetry exporter: %s\n", o.name.c_str());
        }
    }
};

} // namespace

int main(int argc, char **argv) {
    const options o = parse(argc, argv);
    const char *dir = std::getenv("NIXL_PLUGIN_DIR");
    const std::string path =
        std::string(dir ? dir : ".") + "/libtelemetry_exporter_" + o.name + ".so";
    struct stat st{};
    if (stat(path.c_str(), &st) != 0) {
        std::fprintf(stderr, "nixl_host: Plugin file does not exist: %s\n", path.c_str());
        return 3;
    }
    void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (handle == nullptr) {
        std::fprintf(stderr, "nixl_host: Failed to load plugin from %s: %s\n", path.c_str(), dlerror());
        return 3;
    }
    auto init = reinterpret_cast<nixl_telemetry_plugin_init_fn>(dlsym(handle, "nixl_telemetry_plugin_init"));
    if (init == nullptr) {
        std::fprintf(stderr, "nixl_host: Failed to find nixl_telemetry_plugin_init in %s: %s\n",
                     path.c_str(), dlerror());
        dlclose(handle);
        return 3;
    }
    nixlTelemetryPlugin *plugin = init();
    if (plugin == nullptr) {
        std::fprintf(stderr, "nixl_host: Failed to initialize plugin from %s\n", path.c_str());
        dlclose(handle);
        return 3;
    }
    if (plugin->api_version != nixl_telemetry_plugin_api_version::V2) {
        std::fprintf(stderr, "nixl_host: Plugin API version mismatch for %s: expected %u, got %u\n",
                     path.c_str(), static_cast<unsigned>(nixl_telemetry_plugin_api_version::V2),
                     static_cast<unsigned>(plugin->api_version));
        dlclose(handle);
        return 4;
    }
    std::printf("loaded %s %s\n", plugin->getName().c_str(), plugin->getVersion().c_str());
    int status = 0;
    try {
        agentTelemetry telemetry(*plugin, o);
        std::unique_ptr<nixlTelemetryExporter> &exporter = telemetry.exporter;
        if (!exporter) {
            status = 5;
        } else {
            status = run(*exporter, o);
            std::fflush(stdout);
            if (o.hold) {
                std::printf("holding\n");
                std::fflush(stdout);
                std::string line;
                std::getline(std::cin, line);
            }
        }
    } catch (const std::exception &e) {
        std::fprintf(stderr, "nixl_host: the agent did not start: %s\n", e.what());
        status = 6;
    }
    auto fini = reinterpret_cast<nixl_telemetry_plugin_fini_fn>(dlsym(handle, "nixl_telemetry_plugin_fini"));
    if (fini != nullptr) {
        fini();
    }
    dlclose(handle);
    return status;
}
