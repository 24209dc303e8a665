"""Recording: options, from_env, built-ins, record(), errors, closing, threads."""

import os
import threading

import pytest

import telering
from telering import Category, ErrorStatus, Recorded


def drain(path):
    with telering.SharedRingBuffer(path) as ring:
        return ring.read_batch()


def names(events):
    return [e.name for e in events]


def test_defaults_mirror_the_builder(tdir):
    t = telering.Telemetry("agent")
    assert (t.mode, t.exporter, t.dir, t.ring_path) == ("disabled", None, None, None)
    assert (t.buffer_size, t.run_interval, t.enabled_metrics) == (4096, 0.1, "")
    assert t.clock in ("tsc", "realtime")  # "auto": the CPU counter where it is reliable
    assert not t.captures and not t.exports
    assert t.update_tx_bytes(1) == Recorded.DISABLED
    t.close()


def test_options_configure_the_ring_file(tdir):
    with telering.Telemetry(
        "opts", enabled=True, dir=tdir, buffer_size=64, run_interval=0.02, clock="realtime"
    ) as t:
        assert (t.mode, t.exporter, t.ring_path) == ("export", "buffer", tdir / "opts")
        assert (t.buffer_size, t.run_interval, t.clock) == (64, 0.02, "realtime")
        assert t.update_rx_bytes(5) == Recorded.WRITTEN
    info = telering.stat(tdir / "opts")
    assert info["capacity"] == 64 and info["trailer"]["clean_close"]
    assert info["trailer"]["clock"] == "realtime"


def test_every_builtin_writes_its_nixl_event(tdir):
    with telering.Telemetry("b", enabled=True, dir=tdir) as t:
        t.update_tx_bytes(10)
        t.update_rx_bytes(20)
        t.update_tx_requests_num(3)
        t.update_rx_requests_num(4)
        t.update_memory_registered(1 << 20)
        t.update_memory_deregistered(1 << 19)
        t.update_error_count(ErrorStatus.NIXL_ERR_BACKEND)
        t.update_error_count("NIXL_ERR_REMOTE_DISCONNECT")
        t.update_error_count("canceled")
        assert t.add_xfer_stats(180, False, 4096, 4) == Recorded.WRITTEN
    got = [(e.name, e.category, e.value) for e in drain(tdir / "b")]
    assert got == [
        ("agent_tx_bytes", Category.TRANSFER, 10),
        ("agent_rx_bytes", Category.TRANSFER, 20),
        ("agent_tx_requests_num", Category.TRANSFER, 3),
        ("agent_rx_requests_num", Category.TRANSFER, 4),
        ("agent_memory_registered", Category.MEMORY, 1 << 20),
        ("agent_memory_deregistered", Category.MEMORY, 1 << 19),
        ("NIXL_ERR_BACKEND", Category.ERROR, 1),
        ("NIXL_ERR_REMOTE_DISCONNECT", Category.ERROR, 1),
        ("NIXL_ERR_CANCELED", Category.ERROR, 1),
        ("agent_rx_bytes", Category.TRANSFER, 4096),
        ("agent_rx_requests_num", Category.TRANSFER, 1),
        ("agent_xfer_time", Category.PERFORMANCE, 180),
        ("agent_xfer_post_time", Category.PERFORMANCE, 4),
    ]


def test_record_takes_a_category_member_number_or_name(tdir):
    with telering.Telemetry("r", enabled=True, dir=tdir) as t:
        assert t.record(Category.NIXL_TELEMETRY_CUSTOM, "queue_depth", 12) == Recorded.WRITTEN
        t.record(Category.SYSTEM, "temp", 41)
        t.record(2, "conn_up", 1)
        t.record("backend", "b_ev", 2)
        t.record("NIXL_TELEMETRY_MEMORY", "m_ev", 2**64 - 1)
    got = [(e.category, e.event_name, e.value) for e in drain(tdir / "r")]
    assert got == [
        (7, b"queue_depth", 12),
        (6, b"temp", 41),
        (2, b"conn_up", 1),
        (3, b"b_ev", 2),
        (0, b"m_ev", 2**64 - 1),
    ]
    assert Category.TRANSFER is Category.NIXL_TELEMETRY_TRANSFER
    assert Category.TRANSFER.short_name == "TRANSFER"


@pytest.mark.parametrize(
    "args, error, text",
    [
        ((Category.CUSTOM, "", 1), ValueError, "event name is empty"),
        ((Category.CUSTOM, "x" * 32, 1), ValueError, "32 bytes long; at most 31"),
        ((Category.CUSTOM, "a\0b", 1), ValueError, "NUL byte at offset 1"),
        ((7, "x\nValue: 9", 1), ValueError, '"x\\nValue: 9": event name contains the control character \\n at offset 1'),
        ((7, "t\x1b]0;pwned\x07", 1), ValueError, "control character \\u{1b} at offset 1"),
        ((7, "a\u202eb", 1), ValueError, "control character \\u{202e} at offset 1"),
        ((Category.CUSTOM, "ok", -1), ValueError, "value=-1 is out of range"),
        ((Category.CUSTOM, "ok", 2**64), ValueError, "value=18446744073709551616 is out of range"),
        ((8, "ok", 1), ValueError, "category 8 is not one of NIXL's categories 0 to 7"),
        (("bogus", "ok", 1), ValueError, "category \"bogus\" is not one of NIXL's categories"),
        ((1.5, "ok", 1), TypeError, "category must be"),
        ((Category.CUSTOM, b"ok", 1), TypeError, "event name must be a str"),
        ((Category.CUSTOM, "ok", 1.0), TypeError, "float"),
    ],
)
def test_record_rejects_bad_input_with_a_clear_error(args, error, text):
    with telering.Telemetry("e", enabled=True, exporter="nop") as t:
        with pytest.raises(error) as info:
            t.record(*args)
        assert text in str(info.value)
        assert t.stats()["events_recorded"] == 0


def test_builtins_check_their_numbers_and_statuses():
    with telering.Telemetry("e", enabled=True, exporter="nop") as t:
        with pytest.raises(ValueError, match="bytes=-5 is out of range"):
            t.update_tx_bytes(-5)
        with pytest.raises(ValueError, match="xfer_time_us=-1 is out of range"):
            t.add_xfer_stats(-1, True, 1, 1)
        with pytest.raises(ValueError, match="is not a NIXL error status; use one of: NIXL_ERR_NOT_POSTED"):
            t.update_error_count("NIXL_ERR_NOPE")
        with pytest.raises(TypeError):
            t.update_error_count(3)


@pytest.mark.parametrize(
    "options, error, text",
    [
        ({"buffer_size": 1000}, ValueError, "buffer_size=1000 is not a power of two; use 512 or 1024"),
        ({"lane_capacity": 1000}, ValueError, "lane_capacity=1000 is not a power of two; use 512 or 1024"),
        ({"lane_capacity": 1}, ValueError, "lane_capacity=1 is too small"),
        ({"buffer_size": 2**40}, ValueError, "buffer_size=1099511627776 is above the maximum"),
        ({"buffer_size": -1}, ValueError, "buffer_size=-1 is out of range"),
        ({"run_interval": 0}, ValueError, "run_interval=0 is shorter than a millisecond; use at least 0.001 seconds"),
        ({"run_interval": 0.0005}, ValueError, "run_interval=0.0005 is shorter than a millisecond"),
        ({"run_interval": 10**6}, ValueError, "run_interval=1000000 is longer than a day; use at most 86400 seconds"),
        ({"run_interval": -1.0}, ValueError, "run_interval=-1.0 is not a usable duration"),
        ({"exporter": "bogus", "enabled": True}, ValueError, "exporter=bogus is not a known exporter; use one of: buffer, csv, nop, otlp, prometheus, prometheus_mp"),
        ({"exporter": "csv", "enabled": True}, ValueError, "NIXL_TELEMETRY_DIR is not set"),
        ({"clock": "sundial"}, ValueError, "clock=\"sundial\" is not a clock"),
        ({"colour": "blue"}, TypeError, "unexpected option \"colour\""),
    ],
)
def test_bad_options_raise_an_error_naming_the_option(options, error, text):
    with pytest.raises(error) as info:
        telering.Telemetry("agent", **options)
    assert text in str(info.value)


def test_bad_agent_name_and_unusable_dir(tdir):
    with pytest.raises(ValueError, match="agent name \"a/b\" cannot name the telemetry file"):
        telering.Telemetry("a/b", enabled=True, dir=tdir)
    blocker = tdir / "file"
    blocker.write_text("not a directory")
    # A ValueError when the configuration sees it is not a directory, an OSError
    # (with errno) when the operating system refuses it.
    with pytest.raises((OSError, ValueError)) as info:
        telering.Telemetry("agent", enabled=True, dir=blocker / "sub")
    assert str(info.value).startswith("dir=") and "file" in str(info.value)
    assert not isinstance(info.value, OSError) or info.value.errno is not None


def test_run_interval_accepts_a_timedelta():
    import datetime

    with telering.Telemetry("t", run_interval=datetime.timedelta(milliseconds=250)) as t:
        assert t.run_interval == 0.25


def test_from_env_reads_the_variables_and_options_override(tdir, monkeypatch):
    monkeypatch.setenv("NIXL_TELEMETRY_ENABLE", "yes")
    monkeypatch.setenv("NIXL_TELEMETRY_DIR", str(tdir))
    monkeypatch.setenv("NIXL_TELEMETRY_BUFFER_SIZE", "128")
    monkeypatch.setenv("NIXL_TELEMETRY_ENABLED_METRICS", "agent_tx_*")
    with telering.Telemetry.from_env("envagent") as t:
        assert (t.mode, t.exporter, t.buffer_size) == ("export", "buffer", 128)
        assert t.update_tx_bytes(1) == Recorded.WRITTEN
        assert t.update_rx_bytes(1) == Recorded.FILTERED
    with telering.Telemetry.from_env("envagent2", buffer_size=256, enabled_metrics="") as t:
        assert t.buffer_size == 256 and t.update_rx_bytes(1) == Recorded.WRITTEN
    monkeypatch.setenv("NIXL_TELEMETRY_BUFFER_SIZE", "1000")
    with pytest.raises(ValueError, match="NIXL_TELEMETRY_BUFFER_SIZE=1000 is not a power of two"):
        telering.Telemetry.from_env("envagent3")


def test_from_env_with_an_explicit_mapping(tdir):
    env = {"NIXL_TELEMETRY_ENABLE": "1", "NIXL_TELEMETRY_EXPORTER": "CSV", "NIXL_TELEMETRY_DIR": str(tdir)}
    with telering.Telemetry.from_env("csvagent", env=env) as t:
        assert t.exporter == "csv"
        t.update_tx_bytes(77)
    lines = (tdir / "csvagent.csv").read_text().splitlines()
    assert len(lines) == 2 and lines[1].endswith(",TRANSFER,agent_tx_bytes,77")
    with pytest.raises(TypeError, match="env must be a mapping"):
        telering.Telemetry.from_env("x", env=["NIXL_TELEMETRY_ENABLE"])
    # A value from the environment is named by its variable, one given as a keyword
    # (which wins) by the keyword.
    bogus = {"NIXL_TELEMETRY_ENABLE": "1", "NIXL_TELEMETRY_EXPORTER": "bogus", "NIXL_TELEMETRY_DIR": str(tdir)}
    with pytest.raises(ValueError, match="^NIXL_TELEMETRY_EXPORTER=bogus is not a known exporter"):
        telering.Telemetry.from_env("x", env=bogus)
    with pytest.raises(ValueError, match="^exporter=nope is not a known exporter"):
        telering.Telemetry.from_env("x", env=bogus, exporter="nope")


def test_allowlist_filters_names():
    with telering.Telemetry("f", enabled=True, exporter="nop", enabled_metrics="queue_*") as t:
        assert t.record(Category.CUSTOM, "queue_depth", 1) == Recorded.WRITTEN
        assert t.record(Category.CUSTOM, "other", 1) == Recorded.FILTERED
        assert t.update_tx_bytes(1) == Recorded.FILTERED
        assert t.stats()["events_recorded"] == 1


def test_flush_exports_without_closing(tdir):
    t = telering.Telemetry("fl", enabled=True, dir=tdir, run_interval=3600)
    t.update_tx_bytes(1)
    t.flush()
    assert telering.stat(tdir / "fl")["fill"] == 1
    assert t.stats()["events_exported"] == 1
    t.close()


def test_a_closed_telemetry_raises_on_every_call(tdir):
    t = telering.Telemetry("c", enabled=True, dir=tdir)
    backend = t.backend("UCX")
    t.close()
    t.close()  # idempotent
    assert t.closed
    for call in (
        lambda: t.update_tx_bytes(1),
        lambda: t.record(Category.CUSTOM, "x", 1),
        lambda: t.add_xfer_stats(1, True, 1, 1),
        lambda: t.flush(),
        lambda: t.start_xfer(True, 1),
        lambda: t.backend("UCX"),
        lambda: backend.add_telemetry_event("ucx_x", 1),
        lambda: backend.get_telemetry_events(),
    ):
        with pytest.raises(telering.ClosedError, match="is closed"):
            call()
    assert issubclass(telering.ClosedError, ValueError)


def test_stats_after_close_are_the_final_ones(tdir):
    t = telering.Telemetry("final", enabled=True, dir=tdir, run_interval=3600)
    for i in range(10):
        t.update_tx_bytes(i)
    assert t.stats()["events_exported"] == 0  # no flush yet
    t.close()
    # The last export happened in close(); the counters stay readable.
    final = t.stats()
    assert (final["events_recorded"], final["events_exported"], final["events_dropped"]) == (10, 10, 0)
    assert t.stats() == final


def test_the_context_manager_flushes_and_closes_the_ring(tdir):
    with telering.Telemetry("cm", enabled=True, dir=tdir, run_interval=3600) as t:
        for i in range(100):
            t.update_tx_bytes(i)
        assert telering.stat(tdir / "cm")["writer_alive"]
    assert t.closed
    info = telering.stat(tdir / "cm")
    assert info["fill"] == 100 and info["trailer"]["clean_close"] and not info["writer_alive"]
    assert [e.value for e in drain(tdir / "cm")] == list(range(100))


def test_four_python_threads_record_every_event(tdir):
    per_thread = 20_000
    with telering.Telemetry("mt", enabled=True, dir=tdir, buffer_size=1 << 17, run_interval=0.01) as t:
        start = threading.Barrier(4)

        def work(k):
            start.wait()
            for i in range(per_thread):
                t.record(Category.CUSTOM, "thread_%d" % k, i)

        threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        t.flush()
        stats = t.stats()
    assert stats["events_recorded"] == 4 * per_thread
    assert stats["events_dropped"] == 0 and stats["exporter_dropped"] == 0
    events = drain(tdir / "mt")
    assert len(events) == 4 * per_thread
    for k in range(4):
        values = [e.value for e in events if e.name == "thread_%d" % k]
        assert values == list(range(per_thread)), "thread %d's events out of order or lost" % k


def test_a_full_lane_drops_and_counts_every_event(tdir):
    with telering.Telemetry("drops", enabled=True, dir=tdir, lane_capacity=4, run_interval=3600, early_flush=False) as t:
        results = [t.update_tx_bytes(i) for i in range(10)]
        stats = t.stats()
    assert results[:3] == [Recorded.WRITTEN] * 3  # a lane of 4 slots holds 3 events
    assert results[3:] == [Recorded.DROPPED] * 7
    assert (stats["events_recorded"], stats["events_dropped"]) == (10, 7)
    events = drain(tdir / "drops")
    assert [e.value for e in events if e.name == "agent_tx_bytes"] == [0, 1, 2]
    reports = [(e.category, e.value) for e in events if e.name == "agent_telemetry_events_dropped"]
    assert reports == [(Category.ERROR, 7)] and len(events) == 4
