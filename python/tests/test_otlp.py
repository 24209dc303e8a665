"""`NIXL_TELEMETRY_EXPORTER=otlp` from Python: events recorded here are pushed as
OTLP/HTTP protobuf to oteltest's sink from PyPI, which decodes every request with the
official `opentelemetry-proto` package (adapters/otlp/tests/otlp_receiver.py, the
receiver of the Rust and C agents' tests), and the totals it received are compared
with what was recorded.

The receiver tests carry the `otlp_receiver` marker. Without `oteltest` and
`opentelemetry-proto` in this interpreter they are skipped, saying so; with
TELERING_OTLP_RECEIVER_REQUIRED=1 (as `.ci/run` sets after installing both) a missing
package fails them instead.
"""

import importlib.util
import json
import os
import queue
import socket
import subprocess
import sys
import threading
import time

import pytest

import telering
from conftest import REPO

RECEIVER = REPO / "adapters" / "otlp" / "tests" / "otlp_receiver.py"
DEADLINE_S = 30.0


def _missing_receiver_packages():
    missing = []
    for package, module in (("oteltest", "oteltest"), ("opentelemetry-proto", "opentelemetry.proto")):
        try:
            found = importlib.util.find_spec(module) is not None
        except ModuleNotFoundError:
            found = False
        if not found:
            missing.append(package)
    return missing


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Receiver:
    """The receiver process on a loopback port and the JSON lines it prints, one per
    request it decoded: {"sums": {"metric|agent_name[|status]": total, ...},
    "resource": {...}, "content_type": ...}."""

    def __init__(self):
        self.port = _free_port()
        self.endpoint = "http://127.0.0.1:%d" % self.port
        self.lines = queue.Queue()
        self.process = subprocess.Popen(
            [sys.executable, str(RECEIVER), str(self.port)],
            stdout=subprocess.PIPE,
            text=True,
        )
        threading.Thread(target=self._read, daemon=True).start()
        deadline = time.monotonic() + DEADLINE_S
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                assert self.process.poll() is None, "the OTLP receiver exited at start"
                assert time.monotonic() < deadline, "the OTLP receiver did not start"
                time.sleep(0.05)

    def _read(self):
        for line in self.process.stdout:
            try:
                self.lines.put(json.loads(line))
            except ValueError:
                pass

    def wait_for_sum(self, key, want):
        """The first request whose sum `key` equals `want`, and every request before it."""
        seen = []
        deadline = time.monotonic() + DEADLINE_S
        while True:
            left = deadline - time.monotonic()
            try:
                line = self.lines.get(timeout=max(left, 0.001))
            except queue.Empty:
                raise AssertionError("no request with %s = %d; received %r" % (key, want, seen))
            if line["sums"].get(key) == want:
                return line, seen
            seen.append(line)

    def stop(self):
        self.process.kill()
        self.process.wait()
        self.process.stdout.close()


@pytest.fixture
def receiver():
    missing = _missing_receiver_packages()
    if missing:
        reason = "needs an OTLP receiver from PyPI: pip install oteltest opentelemetry-proto (missing: %s)" % (
            ", ".join(missing)
        )
        if os.environ.get("TELERING_OTLP_RECEIVER_REQUIRED") == "1":
            pytest.fail(reason + "; TELERING_OTLP_RECEIVER_REQUIRED=1", pytrace=False)
        pytest.skip(reason)
    r = Receiver()
    yield r
    r.stop()


def _record_from_threads(t, threads, per_thread):
    """Each thread records tx bytes 1..per_thread, one tx request per call, rx bytes
    2 per call, and one `backend` error."""

    def work():
        for b in range(1, per_thread + 1):
            assert t.update_tx_bytes(b) == telering.Recorded.WRITTEN
            assert t.update_tx_requests_num(1) == telering.Recorded.WRITTEN
            assert t.update_rx_bytes(2) == telering.Recorded.WRITTEN
        assert t.update_error_count("backend") == telering.Recorded.WRITTEN

    workers = [threading.Thread(target=work) for _ in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()


@pytest.mark.otlp_receiver
def test_otlp_exporter_pushes_the_totals_recorded_from_python_threads(receiver, no_otel_env):
    threads, per_thread = 4, 1000
    env = {
        "NIXL_TELEMETRY_ENABLE": "y",
        "NIXL_TELEMETRY_EXPORTER": "otlp",
        "NIXL_TELEMETRY_BUFFER_SIZE": "16384",
        "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
        "OTEL_METRIC_EXPORT_INTERVAL": "200",
        "OTEL_EXPORTER_OTLP_TIMEOUT": "2000",
        "OTEL_SERVICE_NAME": "py-trainer",
        "OTEL_RESOURCE_ATTRIBUTES": "deployment.environment=ci,team=transfer",
    }
    with telering.Telemetry.from_env("py-otlp", env=env) as t:
        assert t.exporter == "otlp"
        _record_from_threads(t, threads, per_thread)
        t.flush()
        tx = threads * per_thread * (per_thread + 1) // 2
        # Pushed every 200 ms while the telemetry is open.
        line, _ = receiver.wait_for_sum("agent_tx_bytes_total|py-otlp", tx)
        sums = line["sums"]
        assert sums["agent_tx_requests_num_total|py-otlp"] == threads * per_thread
        assert sums["agent_rx_bytes_total|py-otlp"] == 2 * threads * per_thread
        assert sums["agent_errors_total|py-otlp|backend"] == threads
        assert sums["__temporality"] == 2, "cumulative"
        assert sums["__hostname"] == os.uname().nodename
        assert line["content_type"] == "application/x-protobuf"
        assert line["resource"]["service.name"] == "py-trainer"
        assert line["resource"]["deployment.environment"] == "ci"
        assert line["resource"]["team"] == "transfer"
        stats = t.stats()
        assert stats["events_dropped"] == 0, stats


@pytest.mark.otlp_receiver
def test_otlp_exporter_pushes_the_final_totals_at_close(receiver, no_otel_env):
    # The process environment, read through `os.environ`, and the default export
    # interval (60 s): what arrives within the deadline is the push made by close().
    no_otel_env.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
    no_otel_env.setenv("OTEL_SERVICE_NAME", "py-closer")
    t = telering.Telemetry("py-close", enabled=True, exporter="otlp", buffer_size=16384)
    _record_from_threads(t, 2, 500)
    stats_before_close = t.stats()
    t.close()
    line, _ = receiver.wait_for_sum("agent_tx_bytes_total|py-close", 2 * 500 * 501 // 2)
    sums = line["sums"]
    assert sums["agent_tx_requests_num_total|py-close"] == 1000
    assert sums["agent_rx_bytes_total|py-close"] == 2000
    assert sums["agent_errors_total|py-close|backend"] == 2
    assert line["resource"]["service.name"] == "py-closer"
    assert stats_before_close["events_dropped"] == 0, stats_before_close


def test_a_malformed_otel_variable_is_a_value_error_naming_it(no_otel_env):
    env = {
        "NIXL_TELEMETRY_ENABLE": "y",
        "NIXL_TELEMETRY_EXPORTER": "otlp",
        "OTEL_METRIC_EXPORT_INTERVAL": "soon",
    }
    with pytest.raises(ValueError, match="OTEL_METRIC_EXPORT_INTERVAL"):
        telering.Telemetry.from_env("py-bad-otel", env=env)
