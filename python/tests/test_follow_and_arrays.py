"""follow() (blocking, GIL released, timeouts, signals), NumPy arrays, pandas."""

import shutil
import signal
import subprocess
import sys
import threading
import time

import pytest

import telering
from telering import Category

np = pytest.importorskip("numpy")


def record(tdir, agent, n, **options):
    with telering.Telemetry(agent, enabled=True, dir=tdir, **options) as t:
        for i in range(n):
            t.record(Category.CUSTOM, "ev_%d" % (i % 3), i)
    return tdir / agent


def test_follow_yields_events_as_a_live_writer_records_them(tdir):
    t = telering.Telemetry("live", enabled=True, dir=tdir, run_interval=0.005)
    t.update_tx_bytes(0)
    t.flush()
    got = []
    done = threading.Event()

    def writer():
        for i in range(1, 50):
            t.update_tx_bytes(i)
            time.sleep(0.001)
        done.set()

    with telering.SharedRingBuffer(t.ring_path) as ring:
        th = threading.Thread(target=writer)
        th.start()
        for event in ring.follow(interval=0.002, timeout=2.0):
            got.append(event.value)
            if len(got) == 50:
                break
        th.join()
    t.close()
    assert got == list(range(50)) and done.is_set()


def test_follow_ends_after_its_timeout_without_events(tdir):
    path = record(tdir, "idle", 2)
    with telering.SharedRingBuffer(path) as ring:
        follow = ring.follow(interval=0.01, timeout=0.3)
        assert (follow.interval, follow.timeout) == (0.01, 0.3)
        start = time.monotonic()
        values = [e.value for e in follow]
        elapsed = time.monotonic() - start
    assert values == [0, 1]
    assert 0.3 <= elapsed < 3.0


def test_follow_releases_the_gil_while_it_waits(tdir):
    path = record(tdir, "gil", 0)
    ticks = 0
    stop = threading.Event()

    def spin():
        nonlocal ticks
        while not stop.is_set():
            ticks += 1

    th = threading.Thread(target=spin)
    with telering.Observer(path) as obs:
        th.start()
        time.sleep(0.05)
        before = ticks
        assert list(obs.follow(interval=0.05, timeout=0.5)) == []
        during = ticks - before
        stop.set()
        th.join()
    # Without the GIL released, the spinning thread would advance only at the
    # interpreter's switch interval while follow() slept; with it, it runs freely.
    assert during > 100_000, during


def test_follow_is_interrupted_by_a_signal_handler(tdir):
    path = record(tdir, "sig", 0)

    class Alarm(Exception):
        pass

    def on_alarm(signum, frame):
        raise Alarm()

    old = signal.signal(signal.SIGALRM, on_alarm)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.2)
        start = time.monotonic()
        with telering.SharedRingBuffer(path) as ring:
            with pytest.raises(Alarm):
                for _ in ring.follow(interval=0.05):  # no timeout: waits forever
                    pass
        assert time.monotonic() - start < 2.0
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def test_follow_checks_its_arguments(tdir):
    path = record(tdir, "args", 0)
    with telering.SharedRingBuffer(path) as ring:
        with pytest.raises(ValueError, match="interval=0 is not a positive number"):
            ring.follow(interval=0.0)
        with pytest.raises(ValueError, match="timeout=-1 is not a number of seconds"):
            ring.follow(timeout=-1.0)


def test_follow_on_a_closed_reader_raises(tdir):
    path = record(tdir, "closedf", 1)
    ring = telering.SharedRingBuffer(path)
    follow = ring.follow(timeout=0.1)
    ring.close()
    with pytest.raises(telering.ClosedError):
        next(follow)


def test_to_numpy_is_a_structured_array_of_every_waiting_event(tdir):
    path = record(tdir, "np", 1000)
    with telering.SharedRingBuffer(path) as ring:
        first = ring.pop()
        array = ring.to_numpy()
        assert ring.size() == 0
    assert array.dtype == telering.event_dtype() and array.dtype.itemsize == telering.EVENT_SIZE
    assert array.dtype.names == ("timestamp_us", "category", "event_name", "value")
    assert len(array) == 999 and array.flags.writeable
    assert array["value"].tolist() == list(range(1, 1000))
    assert set(array["event_name"].tolist()) == {b"ev_0", b"ev_1", b"ev_2"}
    assert (array["category"] == Category.CUSTOM).all()
    assert (array["timestamp_us"] >= first.timestamp_us).all()


def test_to_numpy_max_and_read_numpy(tdir):
    path = record(tdir, "npmax", 10)
    with telering.SharedRingBuffer(path) as ring:
        assert ring.to_numpy(4)["value"].tolist() == [0, 1, 2, 3]
    assert telering.read_numpy(path)["value"].tolist() == list(range(4, 10))
    assert len(telering.read_numpy(path)) == 0


def test_to_numpy_matches_popping_one_by_one(tdir):
    a = record(tdir, "same", 500)
    b = tdir / "same_copy"
    shutil.copyfile(a, b)
    with telering.SharedRingBuffer(a) as ring:
        popped = [(e.timestamp_us, e.category, e.event_name, e.value) for e in ring]
    array = telering.read_numpy(b)
    assert array.tolist() == popped and len(popped) == 500


def test_observer_to_numpy_reads_without_consuming(tdir):
    path = record(tdir, "obsnp", 40_000, buffer_size=1 << 16, run_interval=0.01)
    with telering.Observer(path) as obs:
        array = obs.to_numpy()
        assert len(array) == 40_000 and array["value"].tolist() == list(range(40_000))
        assert len(obs.to_numpy()) == 0
    assert telering.stat(path)["fill"] == 40_000


def test_numpy_is_optional():
    code = (
        "import sys; sys.modules['numpy'] = None\n"
        "import telering\n"
        "t = telering.Telemetry('n', capture_telemetry=True); t.close()\n"
        "try:\n"
        "    telering.event_dtype()\n"
        "except ImportError as e:\n"
        "    print('ImportError:', e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "ImportError: telering's array functions need NumPy: pip install numpy" in out.stdout


def test_load_gives_a_dataframe(tdir):
    pd = pytest.importorskip("pandas")
    path = record(tdir, "pd", 9)
    frame = telering.load(path)
    assert isinstance(frame, pd.DataFrame) and len(frame) == 9
    assert list(frame.columns) == ["timestamp", "category", "event_name", "value", "timestamp_us"]
    assert set(frame.columns) >= set(telering.event_dtype().names)
    assert frame["event_name"].tolist() == ["ev_%d" % (i % 3) for i in range(9)]
    assert frame["value"].tolist() == list(range(9)) and str(frame["value"].dtype) == "uint64"
    assert str(frame["category"].dtype) == "category" and set(frame["category"]) == {"CUSTOM"}
    assert frame["timestamp"].dt.tz is not None and frame["timestamp"].notna().all()
    assert frame.groupby("event_name")["value"].sum().to_dict() == {"ev_0": 9, "ev_1": 12, "ev_2": 15}
    # From an array too; a missing timestamp (0) becomes NaT, an unknown category shows.
    array = np.zeros(2, dtype=telering.event_dtype())
    array["category"] = [1, 9]
    array["event_name"] = [b"a", b"b"]
    array["timestamp_us"] = [0, 1_700_000_000_000_000]
    frame = telering.load(array)
    assert frame["category"].tolist() == ["TRANSFER", "UNKNOWN(9)"]
    assert frame["timestamp"].isna().tolist() == [True, False]
