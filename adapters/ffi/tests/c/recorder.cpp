// The C++ Recorder: made per thread from a Telemetry, RAII-destroyed on that thread,
// recording beside the Telemetry's own calls. The ring directory is argv[1]. Prints
// "stats <recorded> <dropped>". Exits non-zero on any unexpected status.
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "telering.hpp"

static int failures = 0;

static void expect(telering::Status got, telering::Status want, int line) {
    if (got != want) {
        std::fprintf(stderr, "recorder.cpp:%d: got %s, expected %s: %s\n", line,
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
    auto telemetry = telering::Telemetry::create("cpp-recorder", options);
    if (!telemetry) return 2;
    std::vector<std::thread> threads;
    for (int i = 0; i < 4; i++) {
        threads.emplace_back([&] {
            auto recorder = telemetry->recorder();
            if (!recorder) {
                failures++;
                return;
            }
            for (int n = 0; n < 1000; n++) {
                EXPECT(recorder->update_tx_bytes(1), TELERING_OK);
                EXPECT(telemetry->update_rx_bytes(2), TELERING_OK);
                if (n < 100) EXPECT(recorder->add_xfer_stats(10, true, 4096, 2), TELERING_OK);
                if (n < 10) EXPECT(recorder->record(TELERING_CATEGORY_CUSTOM, "rec_events", 3), TELERING_OK);
            }
            EXPECT(recorder->update_error_count(TELERING_NIXL_ERR_BACKEND), TELERING_OK);
            EXPECT(recorder->record(TELERING_CATEGORY_CUSTOM, std::string_view("rec_events"), 3), TELERING_OK);
            auto xfer = telemetry->start_xfer(false, 8192, 1);
            if (!xfer) return;
            EXPECT(recorder->xfer_completed(*xfer), TELERING_OK);
        });  // the recorder is destroyed here, on its thread
    }
    for (auto& t : threads) t.join();
    EXPECT(telemetry->flush(), TELERING_OK);
    auto stats = telemetry->stats();
    if (!stats) return 2;
    std::printf("stats %llu %llu\n", (unsigned long long)stats->events_recorded,
                (unsigned long long)stats->events_dropped);
    return failures == 0 ? 0 : 1;
}
