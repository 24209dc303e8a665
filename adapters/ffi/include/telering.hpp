// telering.hpp - a small C++17 wrapper over telering.h.
//
// RAII handles (move-only; the destructor destroys), std::string_view names,
// std::optional results, no exceptions: every call returns the telering_status_t of
// the C function it wraps, and telering::last_error() gives the message of a failure.
// Thread safety is that of the C functions (see telering.h): recording through one
// telering::Telemetry is safe from any number of threads; Xfer and Reader objects are
// used by one thread at a time; a Recorder belongs to the thread that made it.
//
//   auto telemetry = telering::Telemetry::from_env("agent-0");
//   if (!telemetry) { std::cerr << telering::last_error() << "\n"; return 1; }
//   telemetry->update_tx_bytes(4096);
//   telemetry->record(TELERING_CATEGORY_CUSTOM, "queue_depth", 17);
#ifndef TELERING_HPP
#define TELERING_HPP

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "telering.h"

namespace telering {

/// The status every call returns.
using Status = telering_status_t;

/// True for the negative (error) statuses.
inline bool failed(Status status) noexcept { return static_cast<int>(status) < 0; }

/// The message of this thread's most recent failed call.
inline std::string_view last_error() noexcept { return telering_last_error(); }

/// The status's constant name.
inline std::string_view status_name(Status status) noexcept {
    return telering_status_name(static_cast<int32_t>(status));
}

/// An event read back: the C struct with accessors.
struct Event : telering_event_t {
    std::string_view name_view() const noexcept { return std::string_view(name); }
    bool has_timestamp() const noexcept { return (flags & TELERING_EVENT_HAS_TIMESTAMP) != 0; }
    /// A foreign writer's event delivered as found (see TELERING_EVENT_LENIENT).
    bool lenient() const noexcept { return (flags & TELERING_EVENT_LENIENT) != 0; }
};
static_assert(sizeof(Event) == sizeof(telering_event_t), "Event adds no data");

namespace detail {
/// Owns one C handle; `Destroy` frees it.
template <typename T, telering_status_t (*Destroy)(T*)>
class Handle {
  public:
    Handle() noexcept = default;
    explicit Handle(T* raw) noexcept : raw_(raw) {}
    Handle(const Handle&) = delete;
    Handle& operator=(const Handle&) = delete;
    Handle(Handle&& other) noexcept : raw_(std::exchange(other.raw_, nullptr)) {}
    Handle& operator=(Handle&& other) noexcept {
        if (this != &other) {
            reset();
            raw_ = std::exchange(other.raw_, nullptr);
        }
        return *this;
    }
    ~Handle() { reset(); }
    /// Destroys the handle now; returns the C function's status.
    Status reset() noexcept {
        Status s = TELERING_OK;
        if (raw_ != nullptr) s = Destroy(std::exchange(raw_, nullptr));
        return s;
    }
    T* get() const noexcept { return raw_; }
    explicit operator bool() const noexcept { return raw_ != nullptr; }

  private:
    T* raw_ = nullptr;
};

inline void store(Status* out, Status s) noexcept {
    if (out != nullptr) *out = s;
}
}  // namespace detail

/// A custom event name checked once (telering_event_handle_t).
class EventHandle : public detail::Handle<telering_event_handle_t, telering_event_handle_destroy> {
  public:
    using Handle::Handle;
    /// The handle, or nothing (and `*status`) when the name or category is invalid.
    static std::optional<EventHandle> create(telering_category_t category, std::string_view name,
                                             Status* status = nullptr) noexcept {
        telering_event_handle_t* raw = nullptr;
        Status s = telering_event_handle_create_len(category, name.data(), name.size(), &raw);
        detail::store(status, s);
        if (failed(s)) return std::nullopt;
        return EventHandle(raw);
    }
};

class Telemetry;

/// One transfer's telemetry (telering_xfer_t).
class Xfer : public detail::Handle<telering_xfer_t, telering_xfer_destroy> {
  public:
    using Handle::Handle;
};

/// The recording calls of a Telemetry bound to the thread that made it
/// (telering_recorder_t, from Telemetry::recorder): each a direct push into the
/// thread's lane, with no thread-local lookup. Make, use and destroy it on that one
/// thread (debug builds of the library refuse a call from another thread with
/// TELERING_ERR_INVALID_HANDLE), and destroy it before its Telemetry.
class Recorder : public detail::Handle<telering_recorder_t, telering_recorder_destroy> {
  public:
    using Handle::Handle;
    Status update_tx_bytes(uint64_t bytes) const noexcept { return telering_recorder_update_tx_bytes(get(), bytes); }
    Status update_rx_bytes(uint64_t bytes) const noexcept { return telering_recorder_update_rx_bytes(get(), bytes); }
    Status update_tx_requests_num(uint64_t n) const noexcept {
        return telering_recorder_update_tx_requests_num(get(), n);
    }
    Status update_rx_requests_num(uint64_t n) const noexcept {
        return telering_recorder_update_rx_requests_num(get(), n);
    }
    Status update_memory_registered(uint64_t bytes) const noexcept {
        return telering_recorder_update_memory_registered(get(), bytes);
    }
    Status update_memory_deregistered(uint64_t bytes) const noexcept {
        return telering_recorder_update_memory_deregistered(get(), bytes);
    }
    /// `nixl_status` is NIXL's nixl_status_t value (TELERING_NIXL_ERR_*).
    Status update_error_count(int32_t nixl_status) const noexcept {
        return telering_recorder_update_error_count(get(), nixl_status);
    }
    Status add_xfer_stats(uint64_t xfer_time_us, bool is_write, uint64_t bytes, uint64_t post_time_us) const noexcept {
        return telering_recorder_add_xfer_stats(get(), xfer_time_us, is_write ? 1 : 0, bytes, post_time_us);
    }
    Status record(telering_category_t category, std::string_view name, uint64_t value) const noexcept {
        return telering_recorder_record_len(get(), category, name.data(), name.size(), value);
    }
    /// Completes a transfer started on the recorder's Telemetry, recording it into this
    /// thread's lane.
    Status xfer_completed(Xfer& xfer) const noexcept { return telering_recorder_xfer_completed(get(), xfer.get()); }
};

/// A transfer backend's telemetry (telering_backend_t). Destroy it before its Telemetry.
class Backend : public detail::Handle<telering_backend_t, telering_backend_destroy> {
  public:
    using Handle::Handle;
    Status add_event(std::string_view name, uint64_t value) const noexcept {
        return telering_backend_add_event_len(get(), name.data(), name.size(), value);
    }
    /// The events not yet exported, or nothing (and `*status`, TELERING_ERR_NO_TELEMETRY
    /// when capture is off).
    std::optional<std::vector<Event>> events(Status* status = nullptr) const {
        std::size_t count = 0;
        Status s = telering_backend_get_events(get(), nullptr, 0, &count);
        std::vector<Event> out;
        while (!failed(s)) {
            out.resize(count);
            std::size_t total = 0;
            s = telering_backend_get_events(get(), out.data(), out.size(), &total);
            if (failed(s) || total <= out.size()) {
                out.resize(total < out.size() ? total : out.size());
                break;
            }
            count = total;  // more arrived meanwhile: grow and copy again
        }
        detail::store(status, s);
        if (failed(s)) return std::nullopt;
        return out;
    }
};

/// An agent's telemetry (telering_t). Recording is safe from any number of threads.
class Telemetry : public detail::Handle<telering_t, telering_destroy> {
  public:
    using Handle::Handle;

    /// Options with the defaults filled in (telering_options_init).
    static telering_options_t default_options() noexcept {
        telering_options_t o;
        telering_options_init(&o);
        return o;
    }
    /// Telemetry from the process's NIXL_TELEMETRY_* variables, or nothing (and `*status`).
    static std::optional<Telemetry> from_env(const std::string& agent, Status* status = nullptr) noexcept {
        telering_t* raw = nullptr;
        Status s = telering_create_from_env(agent.c_str(), &raw);
        detail::store(status, s);
        if (failed(s)) return std::nullopt;
        return Telemetry(raw);
    }
    /// Telemetry from `options`, or nothing (and `*status`).
    static std::optional<Telemetry> create(const std::string& agent, const telering_options_t& options,
                                           Status* status = nullptr) noexcept {
        telering_t* raw = nullptr;
        Status s = telering_create(agent.c_str(), &options, &raw);
        detail::store(status, s);
        if (failed(s)) return std::nullopt;
        return Telemetry(raw);
    }

    Status update_tx_bytes(uint64_t bytes) const noexcept { return telering_update_tx_bytes(get(), bytes); }
    Status update_rx_bytes(uint64_t bytes) const noexcept { return telering_update_rx_bytes(get(), bytes); }
    Status update_tx_requests_num(uint64_t n) const noexcept { return telering_update_tx_requests_num(get(), n); }
    Status update_rx_requests_num(uint64_t n) const noexcept { return telering_update_rx_requests_num(get(), n); }
    Status update_memory_registered(uint64_t bytes) const noexcept {
        return telering_update_memory_registered(get(), bytes);
    }
    Status update_memory_deregistered(uint64_t bytes) const noexcept {
        return telering_update_memory_deregistered(get(), bytes);
    }
    /// `nixl_status` is NIXL's nixl_status_t value (TELERING_NIXL_ERR_*).
    Status update_error_count(int32_t nixl_status) const noexcept {
        return telering_update_error_count(get(), nixl_status);
    }
    Status add_xfer_stats(uint64_t xfer_time_us, bool is_write, uint64_t bytes, uint64_t post_time_us) const noexcept {
        return telering_add_xfer_stats(get(), xfer_time_us, is_write ? 1 : 0, bytes, post_time_us);
    }
    /// Interns a route (telering_route: TELERING_ROUTE_*, TELERING_MEM_*), or nothing
    /// (and `*status`). Once per route, not per transfer.
    std::optional<uint16_t> route(int32_t operation, const std::string& backend, int32_t local_mem,
                                  int32_t remote_mem, const std::string& peer,
                                  Status* status = nullptr) const noexcept {
        uint16_t id = 0;
        Status s = telering_route(get(), operation, backend.c_str(), local_mem, remote_mem, peer.c_str(), &id);
        detail::store(status, s);
        if (failed(s)) return std::nullopt;
        return id;
    }
    Status add_route_xfer_stats(uint16_t route, uint64_t xfer_time_us, uint64_t bytes, uint64_t post_time_us,
                                uint64_t descriptors) const noexcept {
        return telering_add_route_xfer_stats(get(), route, xfer_time_us, bytes, post_time_us, descriptors);
    }
    Status update_route_error_count(uint16_t route, int32_t nixl_status) const noexcept {
        return telering_update_route_error_count(get(), route, nixl_status);
    }
    /// The route's totals so far (telering_route_totals), or nothing (and `*status`).
    std::optional<telering_route_totals_t> route_totals(uint16_t route, Status* status = nullptr) const noexcept {
        telering_route_totals_t totals{};
        Status s = telering_route_totals(get(), route, &totals);
        detail::store(status, s);
        if (failed(s)) return std::nullopt;
        return totals;
    }
    Status record(telering_category_t category, std::string_view name, uint64_t value) const noexcept {
        return telering_record_len(get(), category, name.data(), name.size(), value);
    }
    Status record(const EventHandle& event, uint64_t value) const noexcept {
        return telering_record_event(get(), event.get(), value);
    }

    /// Starts a transfer's telemetry, or nothing (and `*status`).
    std::optional<Xfer> start_xfer(bool is_write, uint64_t total_bytes, uint64_t desc_count,
                                   Status* status = nullptr) const noexcept {
        telering_xfer_t* raw = nullptr;
        Status s = telering_xfer_start(get(), is_write ? 1 : 0, total_bytes, desc_count, &raw);
        detail::store(status, s);
        if (failed(s)) return std::nullopt;
        return Xfer(raw);
    }
    Status xfer_posted(Xfer& xfer) const noexcept { return telering_xfer_posted(get(), xfer.get()); }
    Status xfer_completed(Xfer& xfer) const noexcept { return telering_xfer_completed(get(), xfer.get()); }

    /// A Recorder for the calling thread, or nothing (and `*status`).
    std::optional<Recorder> recorder(Status* status = nullptr) const noexcept {
        telering_recorder_t* raw = nullptr;
        Status s = telering_recorder_create(get(), &raw);
        detail::store(status, s);
        if (failed(s)) return std::nullopt;
        return Recorder(raw);
    }
    /// The transfer's five fields, or nothing (and `*status`: TELERING_ERR_NO_TELEMETRY
    /// when capture is off).
    std::optional<telering_xfer_telemetry_t> xfer_telemetry(Xfer& xfer, Status* status = nullptr) const noexcept {
        telering_xfer_telemetry_t t{};
        Status s = telering_xfer_get_telemetry(get(), xfer.get(), &t);
        detail::store(status, s);
        if (failed(s)) return std::nullopt;
        return t;
    }

    /// The backend's handle, or nothing (and `*status`).
    std::optional<Backend> backend(const std::string& name, Status* status = nullptr) const noexcept {
        telering_backend_t* raw = nullptr;
        Status s = telering_backend_create(get(), name.c_str(), &raw);
        detail::store(status, s);
        if (failed(s)) return std::nullopt;
        return Backend(raw);
    }

    Status flush() const noexcept { return telering_flush(get()); }
    std::optional<telering_stats_t> stats() const noexcept {
        telering_stats_t s{};
        if (failed(telering_stats(get(), &s))) return std::nullopt;
        return s;
    }
};

/// A ring-file reader (telering_reader_t): draining or observing.
class Reader : public detail::Handle<telering_reader_t, telering_reader_destroy> {
  public:
    using Handle::Handle;
    /// Opens `path` in `mode`, or nothing (and `*status`).
    static std::optional<Reader> open(const std::string& path, telering_read_mode_t mode,
                                      Status* status = nullptr) noexcept {
        telering_reader_t* raw = nullptr;
        Status s = telering_reader_open(path.c_str(), mode, &raw);
        detail::store(status, s);
        if (failed(s)) return std::nullopt;
        return Reader(raw);
    }
    /// The next event, or nothing when none is waiting or on error (then `*status`).
    std::optional<Event> next(Status* status = nullptr) noexcept {
        Event e{};
        Status s = telering_reader_next(get(), &e);
        detail::store(status, s);
        if (s != TELERING_OK) return std::nullopt;
        return e;
    }
    /// Reads up to `out.size()` events into `out`; `*count` receives how many.
    Status read_batch(std::vector<Event>& out, std::size_t* count) noexcept {
        return telering_reader_read_batch(get(), out.data(), out.size(), count);
    }
    std::optional<telering_ring_info_t> stat() const noexcept {
        telering_ring_info_t info{};
        if (failed(telering_reader_stat(get(), &info))) return std::nullopt;
        return info;
    }
};

/// What the ring file at `path` holds, or nothing (and `*status`).
inline std::optional<telering_ring_info_t> stat(const std::string& path, Status* status = nullptr) noexcept {
    telering_ring_info_t info{};
    Status s = telering_stat(path.c_str(), &info);
    detail::store(status, s);
    if (failed(s)) return std::nullopt;
    return info;
}

}  // namespace telering

#endif  // TELERING_HPP
