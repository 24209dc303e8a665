"""Per-transfer telemetry (get_xfer_telemetry, NoTelemetryError, capture_telemetry)
and backend events."""

import time

import pytest

import telering
from telering import Category, Recorded


def test_capture_telemetry_gives_nixl_fields():
    with telering.Telemetry("x", capture_telemetry=True) as t:
        assert t.mode == "capture" and t.captures
        before = time.time_ns() // 1000
        h = t.start_xfer(True, 1 << 20, 8)
        time.sleep(0.002)
        t.xfer_posted(h)
        time.sleep(0.003)
        assert not h.is_completed
        assert t.xfer_completed(h) == Recorded.CAPTURE_ONLY  # nothing exported
        assert h.is_completed and h.is_write
        tel = t.get_xfer_telemetry(h)
    after = time.time_ns() // 1000
    assert before <= tel.startTime <= after
    assert tel.totalBytes == 1 << 20 and tel.descCount == 8
    assert 2000 <= tel.postDuration <= tel.xferDuration
    assert tel.xferDuration >= 5000
    assert "startTime=" in repr(tel)


def test_posting_twice_keeps_the_first_and_completion_records_once(tdir):
    with telering.Telemetry("x2", enabled=True, dir=tdir) as t:
        h = t.start_xfer(False, 4096)
        t.xfer_posted(h)
        first = t.get_xfer_telemetry(h).postDuration
        time.sleep(0.002)
        t.xfer_posted(h)
        assert t.get_xfer_telemetry(h).postDuration == first
        assert t.xfer_completed(h) == Recorded.WRITTEN
        assert t.xfer_completed(h) == Recorded.ALREADY_COMPLETED
        assert t.get_xfer_telemetry(h).descCount == 1
    with telering.SharedRingBuffer(tdir / "x2") as ring:
        got = [(e.name, e.value) for e in ring]
    assert [n for n, _ in got] == ["agent_rx_bytes", "agent_rx_requests_num", "agent_xfer_time", "agent_xfer_post_time"]
    assert got[0][1] == 4096 and got[1][1] == 1
    assert got[3][1] == first and got[2][1] >= 2000


def test_no_telemetry_error_when_capture_is_off():
    with telering.Telemetry("off") as t:
        h = t.start_xfer(True, 10, 1)
        t.xfer_posted(h)
        assert t.xfer_completed(h) == Recorded.DISABLED
        with pytest.raises(telering.NoTelemetryError, match="capture is not enabled") as info:
            t.get_xfer_telemetry(h)
    assert isinstance(info.value, RuntimeError)
    assert telering.nixlNoTelemetryError is telering.NoTelemetryError


def test_enabled_telemetry_captures_too():
    with telering.Telemetry("on", enabled=True) as t:
        assert t.mode == "capture"  # enabled without exporter or dir: in process only
        h = t.start_xfer(True, 10, 2)
        assert t.get_xfer_telemetry(h).descCount == 2


def test_start_xfer_checks_its_numbers():
    with telering.Telemetry("x", capture_telemetry=True) as t:
        with pytest.raises(ValueError, match="total_bytes=-1 is out of range"):
            t.start_xfer(True, -1)
        with pytest.raises(TypeError):
            t.xfer_posted("not a handle")


def test_a_transfer_belongs_to_the_telemetry_that_started_it():
    with telering.Telemetry("a", capture_telemetry=True) as a, telering.Telemetry(
        "b", capture_telemetry=True
    ) as b:
        h = a.start_xfer(True, 10, 1)
        for call in (b.xfer_posted, b.xfer_completed, b.get_xfer_telemetry):
            with pytest.raises(ValueError, match="started by another telemetry"):
                call(h)
        assert not h.is_completed
        assert a.xfer_completed(h) == Recorded.CAPTURE_ONLY


def test_backend_events_are_captured_and_exported(tdir):
    with telering.Telemetry("be", capture_telemetry=True) as t:
        ucx = t.backend("UCX")
        assert ucx.backend == "UCX"
        assert ucx.add_telemetry_event("ucx_rndv_count", 3) == Recorded.WRITTEN
        ucx.add_telemetry_event("ucx_retries", 1)
        events = t.backend("UCX").get_telemetry_events()  # same buffer by name
        assert [(e.name, e.category, e.value) for e in events] == [
            ("ucx_rndv_count", Category.BACKEND, 3),
            ("ucx_retries", Category.BACKEND, 1),
        ]
        assert events[0].timestamp_us > 0 and ucx.events_dropped == 0
        with pytest.raises(ValueError, match="at most 31"):
            ucx.add_telemetry_event("u" * 40, 1)
    with telering.Telemetry("be2", enabled=True, dir=tdir) as t:
        t.backend("GDS").add_telemetry_event("gds_reads", 9)
    with telering.SharedRingBuffer(tdir / "be2") as ring:
        (event,) = ring.read_batch()
    assert (event.name, event.category, event.value) == ("gds_reads", Category.BACKEND, 9)


def test_backend_events_off_without_capture():
    with telering.Telemetry("nb") as t:
        b = t.backend("UCX")
        assert b.add_telemetry_event("ucx_x", 1) == Recorded.DISABLED
        assert b.get_telemetry_events() == []
