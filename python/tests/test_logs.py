"""Rust log records reach Python's `logging` under the logger `telering` (through
pyo3-log), from the calling thread and from telering's own threads, without ever
blocking a Python thread that holds the GIL."""

import logging
import socket
import subprocess
import sys
import textwrap
import time

import pytest

import collectors
import telering

DEADLINE_S = 30.0


def telering_records(caplog, level=logging.WARNING):
    return [r for r in caplog.records if r.name.startswith("telering.") and r.levelno == level]


def wait_for_record(caplog, text):
    """The first WARNING or ERROR record of telering's that contains `text`, waited
    for (it may come from another thread)."""
    deadline = time.monotonic() + DEADLINE_S
    while True:
        found = [
            r
            for r in caplog.records
            if r.name.startswith("telering.") and r.levelno >= logging.WARNING and text in r.getMessage()
        ]
        if found:
            return found[0]
        assert time.monotonic() < deadline, "no warning with %r: %r" % (
            text,
            [r.getMessage() for r in caplog.records],
        )
        time.sleep(0.02)


def test_an_unrecognized_enable_value_is_a_warning_when_from_env_returns(caplog):
    t = telering.Telemetry.from_env("py-maybe", env={"NIXL_TELEMETRY_ENABLE": "maybe"})
    # No waiting: the warning is logged before the constructor returns.
    [record] = telering_records(caplog)
    assert t.mode == "disabled"
    assert record.name == "telering.std.build"
    assert "NIXL_TELEMETRY_ENABLE=maybe is not recognized" in record.getMessage()
    t.close()


def test_an_allowlist_matching_no_builtin_is_a_warning(caplog):
    env = {
        "NIXL_TELEMETRY_ENABLE": "y",
        "NIXL_TELEMETRY_EXPORTER": "nop",
        "NIXL_TELEMETRY_ENABLED_METRICS": "nomatch_*",
    }
    with telering.Telemetry.from_env("py-nomatch", env=env) as t:
        assert t.update_tx_bytes(1) == telering.Recorded.FILTERED
    [record] = telering_records(caplog)
    assert "pattern `nomatch_*` (NIXL_TELEMETRY_ENABLED_METRICS or the enabled_metrics option) matches no built-in event" in record.getMessage()


def test_an_allowlist_keyword_matching_no_builtin_is_a_warning_naming_the_option(caplog):
    with telering.Telemetry("py-nomatch-kw", enabled=True, exporter="nop", enabled_metrics="nomatch_*") as t:
        assert t.update_tx_bytes(1) == telering.Recorded.FILTERED
    [record] = telering_records(caplog)
    assert "pattern `nomatch_*`" in record.getMessage() and "enabled_metrics option" in record.getMessage()


def test_a_metrics_port_in_use_is_a_warning_naming_the_variable(caplog):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        env = {
            "NIXL_TELEMETRY_ENABLE": "y",
            "NIXL_TELEMETRY_EXPORTER": "prometheus",
            "NIXL_TELEMETRY_PROMETHEUS_PORT": str(port),
            "NIXL_TELEMETRY_PROMETHEUS_LOCAL": "true",
        }
        # The agent runs on without its endpoint, and says so before from_env returns.
        with telering.Telemetry.from_env("py-busy-port", env=env) as t:
            assert t.update_tx_bytes(1) == telering.Recorded.WRITTEN
            # Only this agent's records: a record of an earlier test's telering thread
            # may still arrive through the forwarder.
            [record] = [
                r
                for r in caplog.records
                if r.name.startswith("telering.") and r.levelno >= logging.WARNING and str(port) in r.getMessage()
            ]
    message = record.getMessage()
    assert "cannot listen on 127.0.0.1:%d" % port in message
    assert "NIXL_TELEMETRY_PROMETHEUS_PORT" in message


def test_records_follow_the_telering_loggers_level(caplog):
    # Quiet by default: no DEBUG record is even made.
    telering.Telemetry("py-quiet", enabled=True, exporter="nop").close()
    assert telering_records(caplog, logging.DEBUG) == []
    # A DEBUG level set on the `telering` logger applies to the next telemetry.
    caplog.set_level(logging.DEBUG, logger="telering")
    telering.Telemetry("py-loud", enabled=True, exporter="nop").close()
    assert any("py-loud runs in mode" in r.getMessage() for r in telering_records(caplog, logging.DEBUG))


def test_a_background_threads_warning_reaches_logging_while_python_waits(caplog, no_otel_env):
    # The OTLP push thread logs the collector's refusal; the forwarder thread hands
    # it to `logging` while this thread makes no telering call.
    with collectors.Answers(500) as collector:
        env = {
            "NIXL_TELEMETRY_ENABLE": "y",
            "NIXL_TELEMETRY_EXPORTER": "otlp",
            "OTEL_EXPORTER_OTLP_ENDPOINT": collector.endpoint,
            "OTEL_METRIC_EXPORT_INTERVAL": "50",
            "OTEL_EXPORTER_OTLP_TIMEOUT": "2000",
        }
        t = telering.Telemetry.from_env("py-refused", env=env)
        t.update_tx_bytes(1)
        record = wait_for_record(caplog, "OTLP export to %s" % collector.endpoint)
        assert record.name.startswith("telering.otlp"), record.name
        assert collector.answered() >= 1
        t.close()


def test_a_telemetry_left_open_at_exit_ends_the_process_and_its_log_is_seen(tmp_path):
    # A down OTLP collector: the final push at exit fails and is logged, from the
    # exporter's thread, while the interpreter shuts down. The process must end (no
    # deadlock on the GIL) and say why the push failed.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    code = textwrap.dedent(
        """
        import telering
        env = {
            "NIXL_TELEMETRY_ENABLE": "y",
            "NIXL_TELEMETRY_EXPORTER": "otlp",
            "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:%d",
            "OTEL_EXPORTER_OTLP_TIMEOUT": "500",
        }
        t = telering.Telemetry.from_env("py-left-open", env=env)
        t.update_tx_bytes(1)
        kept = t  # never closed: freed while the interpreter exits
        """
        % port
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert "127.0.0.1:%d" % port in out.stderr, out.stderr


def test_a_telemetry_freed_without_close_logs_without_deadlock(tmp_path):
    # Freed by the garbage collector on a Python thread holding the GIL: its flush
    # thread's last export logs, and must not wait for that GIL.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code = textwrap.dedent(
        """
        import logging, telering
        seen = []
        class Keep(logging.Handler):
            def emit(self, record):
                seen.append(record.getMessage())
        logging.getLogger("telering").addHandler(Keep())
        env = {
            "NIXL_TELEMETRY_ENABLE": "y",
            "NIXL_TELEMETRY_EXPORTER": "otlp",
            "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:%d",
            "OTEL_EXPORTER_OTLP_TIMEOUT": "500",
        }
        t = telering.Telemetry.from_env("py-freed", env=env)
        t.update_tx_bytes(1)
        del t
        assert any("127.0.0.1:%d" in m for m in seen), seen
        print("freed")
        """
        % (port, port)
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout == "freed\n"


def test_name_errors_speak_python():
    with telering.Telemetry("py-names", enabled=True, exporter="nop") as t:
        for name in ("x" * 40, "", "a\0b"):
            with pytest.raises(ValueError) as info:
                t.record(telering.Category.CUSTOM, name, 1)
            assert "::" not in str(info.value) and "EventName" not in str(info.value)
        with pytest.raises(ValueError, match=r"40 bytes long; at most 31 bytes fit \(shorten it, e.g. name.encode\(\)"):
            t.record(telering.Category.CUSTOM, "x" * 40, 1)
        with pytest.raises(ValueError) as info:
            t.backend("UCX").add_telemetry_event("y" * 32, 1)
        assert "EventName" not in str(info.value)
