"""Statistics that tell the truth, from Python: against three real local collectors
(one that answers 500 to every push, one that is down, one that accepts and never
answers) nothing counts as exported, every failed push is an export error, the
exporter shows as failing, and the failure is logged; a CSV write that fails is
counted and logged too."""

import json
import logging
import subprocess
import sys
import textwrap
import threading
import time

import pytest

import collectors
import telering

DEADLINE_S = 30.0
EVENTS = 5


def otlp_env(endpoint, **extra):
    env = {
        "NIXL_TELEMETRY_ENABLE": "y",
        "NIXL_TELEMETRY_EXPORTER": "otlp",
        "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
        "OTEL_METRIC_EXPORT_INTERVAL": "50",
        "OTEL_EXPORTER_OTLP_TIMEOUT": "300",
        "TELERING_OTLP_SHUTDOWN_TIMEOUT": "300",
    }
    env.update(extra)
    return env


def wait_until(what, check):
    deadline = time.monotonic() + DEADLINE_S
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, "timed out waiting for " + what
        time.sleep(0.02)


def logged(caplog, endpoint):
    return [
        r
        for r in caplog.records
        if r.name.startswith("telering.otlp") and r.levelno >= logging.WARNING and endpoint in r.getMessage()
    ]


BROKEN = {
    "answers 500": lambda: collectors.Answers(500),
    "down": collectors.Down,
    "never answers": collectors.BlackHole,
}


@pytest.mark.parametrize("broken", list(BROKEN))
def test_a_broken_collector_delivers_nothing_and_every_failure_counts(caplog, no_otel_env, broken):
    with BROKEN[broken]() as collector:
        t = telering.Telemetry.from_env("py-broken", env=otlp_env(collector.endpoint))
        for i in range(EVENTS):
            assert t.update_tx_bytes(i) == telering.Recorded.WRITTEN
        t.flush()
        stats = wait_until(
            "two failed pushes",
            lambda: (lambda s: s if s["export_errors"] >= 2 else None)(t.stats()),
        )
        assert stats["exporter_failing"] is True, stats
        assert stats["events_exported"] == 0, stats
        assert stats["events_undelivered"] == EVENTS, stats
        assert stats["events_recorded"] == EVENTS and stats["events_dropped"] == 0, stats
        wait_until("the failure in the log", lambda: logged(caplog, collector.endpoint))
        t.close()
        final = t.stats()
        assert final["events_exported"] == 0 and final["events_undelivered"] == EVENTS, final
        assert final["export_errors"] >= stats["export_errors"], final
        if broken == "answers 500":
            assert collector.answered() >= 2


def test_a_working_collector_delivers_every_event(no_otel_env):
    # The same statistics against a collector that answers 200: all delivered.
    with collectors.Answers(200) as collector:
        t = telering.Telemetry.from_env("py-working", env=otlp_env(collector.endpoint))
        for i in range(EVENTS):
            t.update_tx_bytes(i)
        t.flush()
        stats = wait_until(
            "a delivered push",
            lambda: (lambda s: s if s["events_exported"] == EVENTS else None)(t.stats()),
        )
        assert stats["export_errors"] == 0 and stats["exporter_failing"] is False, stats
        assert stats["events_undelivered"] == 0, stats
        t.close()


def test_shutdown_against_a_collector_that_never_answers_is_bounded(caplog, no_otel_env):
    # A request timeout far beyond the test's deadline: only the shutdown bound can
    # end close(); what it could not deliver is counted.
    with collectors.BlackHole() as collector:
        env = otlp_env(
            collector.endpoint,
            OTEL_EXPORTER_OTLP_TIMEOUT="600000",
            OTEL_METRIC_EXPORT_INTERVAL="600000",
            TELERING_OTLP_SHUTDOWN_TIMEOUT="300",
        )
        t = telering.Telemetry.from_env("py-black-hole", env=env)
        for i in range(EVENTS):
            t.update_tx_bytes(i)
        closer = threading.Thread(target=t.close, daemon=True)
        closer.start()
        closer.join(DEADLINE_S)
        assert not closer.is_alive(), "close() waited for a collector that never answers"
        final = t.stats()
        assert final["events_exported"] == 0 and final["events_undelivered"] == EVENTS, final
        assert final["export_errors"] >= 1 and final["exporter_failing"] is True, final
        # What shutdown could not deliver is logged with its count, once close() returned.
        said = [r.getMessage() for r in logged(caplog, collector.endpoint)]
        assert any("%d events were not delivered by shutdown" % EVENTS in m for m in said), said


def test_the_statistics_have_the_fields_of_rust_and_c():
    with telering.Telemetry("py-fields", enabled=True, exporter="nop") as t:
        assert set(t.stats()) == {
            "events_recorded",
            "events_dropped",
            "events_exported",
            "exporter_dropped",
            "events_not_in_layout",
            "events_undelivered",
            "flushes",
            "export_errors",
            "exporter_failing",
            "lanes",
        }
        assert set(t.exporter_stats()[0]) == {
            "name",
            "endpoint",
            "events_delivered",
            "events_dropped",
            "exporter_dropped",
            "events_lost_after_delivery",
            "events_not_in_layout",
            "events_undelivered",
            "export_errors",
            "exporter_failing",
        }


def test_a_metrics_port_in_use_shows_the_exporter_failing(no_otel_env):
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        env = {
            "NIXL_TELEMETRY_ENABLE": "y",
            "NIXL_TELEMETRY_EXPORTER": "prometheus",
            "NIXL_TELEMETRY_PROMETHEUS_PORT": str(busy.getsockname()[1]),
            "NIXL_TELEMETRY_PROMETHEUS_LOCAL": "true",
        }
        with telering.Telemetry.from_env("py-busy", env=env) as t:
            t.update_tx_bytes(1)
            t.flush()
            stats = t.stats()
    assert stats["exporter_failing"] is True and stats["export_errors"] >= 1, stats
    assert stats["events_exported"] == 0 and stats["events_undelivered"] == 1, stats


def test_exporter_stats_show_a_failing_exporter_beside_a_delivering_one(tdir, no_otel_env):
    with collectors.Down() as collector:
        env = otlp_env(collector.endpoint, NIXL_TELEMETRY_EXPORTER="buffer,otlp", NIXL_TELEMETRY_DIR=str(tdir))
        t = telering.Telemetry.from_env("py-two", env=env)
        for i in range(EVENTS):
            t.update_tx_bytes(i)
        t.flush()
        # Each exporter of a list takes its batches on its own thread: wait for both.
        def both_done():
            each = t.exporter_stats()
            ring, otlp = each
            done = ring["events_delivered"] == EVENTS and otlp["events_undelivered"] == EVENTS
            return each if done and otlp["export_errors"] >= 1 else None

        ring, otlp = wait_until("the ring written and a failed push of every event", both_done)
        assert (ring["name"], ring["endpoint"]) == ("buffer", str(tdir / "py-two")), ring
        assert ring["events_delivered"] == EVENTS and ring["exporter_failing"] is False, ring
        assert otlp["name"] == "otlp" and otlp["endpoint"].startswith(collector.endpoint), otlp
        assert otlp["events_delivered"] == 0 and otlp["events_undelivered"] == EVENTS, otlp
        assert otlp["exporter_failing"] is True, otlp
        # The telemetry's own counters tell the weakest member's story: nothing counts
        # as exported while one exporter delivered nothing.
        stats = t.stats()
        assert (stats["events_exported"], stats["events_undelivered"]) == (0, EVENTS), stats
        assert stats["exporter_failing"] is True, stats
        # Every member's failed attempts, added up (the collector keeps failing pushes).
        assert stats["export_errors"] >= otlp["export_errors"] >= 1, stats
        t.close()
        final = t.exporter_stats()
        assert [e["name"] for e in final] == ["buffer", "otlp"], final
        assert final[0]["events_delivered"] == EVENTS and final[1]["events_undelivered"] == EVENTS, final
        assert final[1]["export_errors"] >= otlp["export_errors"], final
    with telering.Telemetry("py-none") as t:
        assert t.exporter_stats() == []


def test_a_csv_write_that_fails_is_counted_and_logged(tdir):
    # A file size limit makes the CSV exporter's append fail (EFBIG), in a process of
    # its own: the limit holds for every file the process writes.
    code = textwrap.dedent(
        """
        import json, resource, signal, sys, telering
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        t = telering.Telemetry("py-csv", enabled=True, exporter="csv", dir=sys.argv[1], run_interval=3600)
        resource.setrlimit(resource.RLIMIT_FSIZE, (64, resource.RLIM_INFINITY))  # the header, no row
        for i in range(20):
            t.update_tx_bytes(i)
        t.flush()
        t.close()
        print(json.dumps([t.stats(), t.exporter_stats()]))
        """
    )
    out = subprocess.run([sys.executable, "-c", code, str(tdir)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    stats, [csv] = json.loads(out.stdout)
    # The exporter's losses, not the recording's; and it says it is failing.
    assert (stats["events_recorded"], stats["events_exported"], stats["events_dropped"]) == (20, 0, 0), stats
    assert stats["exporter_dropped"] == 20 and stats["exporter_failing"] is True, stats
    assert stats["export_errors"] >= 1 and csv["export_errors"] == stats["export_errors"], (stats, csv)
    assert csv["name"] == "csv" and csv["events_dropped"] == 20 and csv["exporter_failing"] is True, csv
    # Every event accounted for, with its cause, in both views.
    handed = stats["events_recorded"] - stats["events_dropped"]
    lost = csv["events_dropped"] + csv["exporter_dropped"] + csv["events_undelivered"]
    assert csv["events_delivered"] + lost + csv["events_not_in_layout"] == handed, csv
    assert stats["events_recorded"] == (
        stats["events_exported"]
        + stats["events_dropped"]
        + stats["exporter_dropped"]
        + stats["events_not_in_layout"]
        + stats["events_undelivered"]
    ), stats
    assert "telemetry export of 20 events failed" in out.stderr and "File too large" in out.stderr, out.stderr
    # The file holds whole rows only: the header, and no event that was counted lost.
    rows = (tdir / "py-csv.csv").read_text().splitlines()
    assert rows[0] == "timestamp_us,category,event,value" and not any(",agent_tx_bytes," in r for r in rows), rows
