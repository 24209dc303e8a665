// Routes from C++: two routes recorded from four threads, an error on one, then each
// route's totals printed as "route <bytes> <transfers> <descriptors> <errors>", one
// line per route. The ring directory is argv[1]. Exits non-zero on any unexpected
// status.
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "telering.hpp"

static int failures = 0;

static void expect(telering::Status got, telering::Status want, int line) {
    if (got != want) {
        std::fprintf(stderr, "routes.cpp:%d: got %s, expected %s: %s\n", line,
                     telering::status_name(got).data(), telering::status_name(want).data(),
                     telering::last_error().data());
        __atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED);
    }
}
#define EXPECT(call, want) expect((call), (want), __LINE__)

int main(int argc, char** argv) {
    if (argc != 2) return 2;
    const std::string dir = argv[1];
    auto options = telering::Telemetry::default_options();
    options.enabled = 1;
    options.dir = dir.c_str();
    options.buffer_size = 16384;
    options.run_interval_ms = 60000;
    auto telemetry = telering::Telemetry::create("cpp-routes", options);
    if (!telemetry) return 2;
    auto vram = telemetry->route(TELERING_ROUTE_WRITE, "UCX", TELERING_MEM_VRAM, TELERING_MEM_VRAM, "decode-0");
    auto file = telemetry->route(TELERING_ROUTE_READ, "POSIX", TELERING_MEM_DRAM, TELERING_MEM_FILE, "");
    if (!vram || !file) return 2;
    std::vector<std::thread> threads;
    for (int i = 0; i < 4; i++) {
        threads.emplace_back([&] {
            for (int n = 0; n < 500; n++) {
                EXPECT(telemetry->add_route_xfer_stats(*vram, 40, 1 << 20, 3, 4), TELERING_OK);
                EXPECT(telemetry->add_route_xfer_stats(*file, 900, 4096, 5, 1), TELERING_OK);
            }
        });
    }
    for (auto& t : threads) t.join();
    EXPECT(telemetry->update_route_error_count(*vram, TELERING_NIXL_ERR_REMOTE_DISCONNECT), TELERING_OK);
    telering::Status bad = TELERING_OK;
    if (telemetry->route(7, "UCX", TELERING_MEM_DRAM, TELERING_MEM_DRAM, "", &bad)) failures++;
    EXPECT(bad, TELERING_ERR_INVALID_ARGUMENT);
    EXPECT(telemetry->flush(), TELERING_OK);
    for (uint16_t id : {*vram, *file}) {
        auto t = telemetry->route_totals(id);
        if (!t) return 2;
        std::printf("route %llu %llu %llu %llu\n", (unsigned long long)t->bytes, (unsigned long long)t->transfers,
                    (unsigned long long)t->descriptors, (unsigned long long)t->errors);
    }
    return failures == 0 ? 0 : 1;
}
