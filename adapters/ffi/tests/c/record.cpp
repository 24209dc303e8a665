// The C++ wrapper end to end: options, four recording threads, a pre-resolved event,
// one transfer, a backend, the NO_TELEMETRY path, RAII shutdown. The ring directory
// is argv[1]. Prints the transfer's telemetry as "xfer <start> <post> <xfer> <bytes>
// <descs>". Exits non-zero on any unexpected status.
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "telering.hpp"

static int failures = 0;

static void expect(telering::Status got, telering::Status want, int line) {
    if (got != want) {
        std::fprintf(stderr, "record.cpp:%d: got %s, expected %s: %s\n", line,
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
    options.run_interval_ms = 60000;  // only the final flush: backend events stay pending
    telering::Status status;
    auto telemetry = telering::Telemetry::create("cpp-agent", options, &status);
    if (!telemetry) {
        std::fprintf(stderr, "create: %s\n", telering::last_error().data());
        return 2;
    }
    {
        auto hot = telering::EventHandle::create(TELERING_CATEGORY_CUSTOM, std::string_view("hot_counter"));
        if (!hot) return 2;
        std::vector<std::thread> threads;
        for (uint64_t i = 0; i < 4; i++) {
            threads.emplace_back([&, i] {
                // A string_view into a longer buffer: only its bytes are the name.
                const std::string buffer = "worker_events_and_more";
                const std::string_view name(buffer.data(), 13);
                for (int n = 0; n < 500; n++) {
                    EXPECT(telemetry->record(TELERING_CATEGORY_CUSTOM, name, i + 1), TELERING_OK);
                    EXPECT(telemetry->update_tx_bytes(100), TELERING_OK);
                    EXPECT(telemetry->record(*hot, 2), TELERING_OK);
                    if (n < 100) EXPECT(telemetry->add_xfer_stats(10, true, 4096, 2), TELERING_OK);
                }
            });
        }
        for (auto& t : threads) t.join();
    }
    EXPECT(telemetry->update_rx_bytes(8192), TELERING_OK);
    EXPECT(telemetry->update_rx_requests_num(1), TELERING_OK);
    EXPECT(telemetry->update_memory_registered(65536), TELERING_OK);
    EXPECT(telemetry->update_memory_deregistered(65536), TELERING_OK);
    for (int i = 0; i < 3; i++) EXPECT(telemetry->update_error_count(TELERING_NIXL_ERR_BACKEND), TELERING_OK);
    EXPECT(telemetry->record(TELERING_CATEGORY_CUSTOM, std::string_view("a\0b", 3), 1), TELERING_ERR_INVALID_NAME);

    auto xfer = telemetry->start_xfer(true, 65536, 4);
    if (!xfer) return 2;
    EXPECT(telemetry->xfer_posted(*xfer), TELERING_OK);
    EXPECT(telemetry->xfer_completed(*xfer), TELERING_OK);
    auto tel = telemetry->xfer_telemetry(*xfer);
    if (!tel || tel->total_bytes != 65536 || tel->desc_count != 4 || tel->post_duration_us > tel->xfer_duration_us) {
        std::fprintf(stderr, "unexpected transfer telemetry\n");
        failures++;
    } else {
        std::printf("xfer %llu %llu %llu %llu %llu\n", (unsigned long long)tel->start_time_us,
                    (unsigned long long)tel->post_duration_us, (unsigned long long)tel->xfer_duration_us,
                    (unsigned long long)tel->total_bytes, (unsigned long long)tel->desc_count);
    }
    {
        auto ucx = telemetry->backend("UCX");
        if (!ucx) return 2;
        EXPECT(ucx->add_event("ucx_rndv_count", 3), TELERING_OK);
        EXPECT(ucx->add_event("ucx_rndv_count", 3), TELERING_OK);
        auto events = ucx->events();
        if (!events || events->size() != 2 || (*events)[1].name_view() != "ucx_rndv_count" || !(*events)[1].has_timestamp()) {
            std::fprintf(stderr, "unexpected backend events\n");
            failures++;
        }
    }
    {
        auto off = telering::Telemetry::create("cpp-agent-off", telering::Telemetry::default_options());
        if (!off) return 2;
        auto y = off->start_xfer(false, 1, 1);
        telering::Status why = TELERING_OK;
        if (!y || off->xfer_telemetry(*y, &why) || why != TELERING_ERR_NO_TELEMETRY) {
            std::fprintf(stderr, "expected NO_TELEMETRY\n");
            failures++;
        }
        std::printf("no_telemetry %s\n", telering::last_error().data());
    }
    EXPECT(telemetry->reset(), TELERING_OK);  // shuts down: exports everything
    return failures == 0 ? 0 : 1;
}
