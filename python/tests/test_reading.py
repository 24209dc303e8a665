"""Reading: the guide's loop, SharedRingBuffer, Observer, errors, corrupt files."""

import io
import os
import pathlib
import shutil
import subprocess
import sys
import warnings
from contextlib import redirect_stdout
from datetime import datetime

import pytest

import telering
from telering import Category

from conftest import SLOT, digest, write_ring


def record(tdir, agent, n, **options):
    with telering.Telemetry(agent, enabled=True, dir=tdir, **options) as t:
        for i in range(n):
            t.record(Category.CUSTOM, "ev_%d" % (i % 3), i)
    return tdir / agent


# The reading loop of NIXL's telemetry guide and its Python reader, unchanged: the
# calls and the attribute uses (`event.event_name.decode(...).rstrip("\x00")`,
# arithmetic on `timestamp_us`, truthiness of the popped event).
def guide_loop(telemetry_path):
    def format_timestamp(timestamp_us):
        dt = datetime.fromtimestamp(timestamp_us / 1_000_000)
        microseconds = timestamp_us % 1_000_000
        return f"{dt.strftime('%Y-%m-%d %H:%M:%S')}.{microseconds:06d}"

    buffer = telering.SharedRingBuffer(telemetry_path, version=1)
    print(f"Successfully opened telemetry buffer (version: {buffer.get_version()})")
    print(f"Buffer capacity: {buffer.get_capacity()} events")
    print(f"Current events in buffer: {buffer.size()}")
    event_count = 0
    while True:
        event = buffer.pop()
        if event:
            event_count += 1
            event_name = event.event_name.decode("utf-8").rstrip("\x00")
            print("=== NIXL Telemetry Event ===")
            print(f"Timestamp: {format_timestamp(event.timestamp_us)}")
            print(f"Category: {event.category}")
            print(f"Event: {event_name}")
            print(f"Value: {event.value}")
        else:
            break
    print(f"Total events read: {event_count}")
    print(f"Final buffer size: {buffer.size()} events")
    return event_count


def test_the_guides_reading_loop_runs_unchanged(tdir):
    path = record(tdir, "guide", 25)
    out = io.StringIO()
    with redirect_stdout(out):
        assert guide_loop(str(path)) == 25
    text = out.getvalue()
    assert "Buffer capacity: 4096 events" in text and "Current events in buffer: 25" in text
    assert text.count("=== NIXL Telemetry Event ===") == 25
    assert "Event: ev_2\nValue: 2\n" in text and "Final buffer size: 0 events" in text


def test_the_guides_short_loop(tdir):
    path = record(tdir, "short", 5)
    buf = telering.SharedRingBuffer(path, version=1)
    got = []
    print(buf.get_capacity())
    while (event := buf.pop()) is not None:
        got.append((event.timestamp_us > 0, event.category, event.event_name, event.value))
    assert got == [(True, 7, b"ev_%d" % (i % 3), i) for i in range(5)]


def test_shared_ring_buffer_api(tdir):
    path = record(tdir, "api", 10, buffer_size=16)
    with telering.SharedRingBuffer(path) as ring:
        assert (ring.get_capacity(), ring.get_version(), ring.size()) == (16, 1, 10)
        assert not ring.empty() and not ring.full()
        assert ring.path == path and "SharedRingBuffer(" in repr(ring)
        first = ring.pop()
        assert (first.name, first.category_name, first.has_timestamp) == ("ev_0", "CUSTOM", True)
        assert [e.value for e in ring.read_batch(3)] == [1, 2, 3]
        assert [e.value for e in ring] == [4, 5, 6, 7, 8, 9]  # iteration drains
        assert ring.pop() is None and ring.empty() and ring.read_batch() == []
        info = ring.info()
        assert info["fill"] == 0 and info["trailer"]["published"] == 10
        assert ring.events_lost == 0 and ring.corrupt_events == 0
        assert first.as_dict() == {"timestamp_us": first.timestamp_us, "category": "CUSTOM", "event": "ev_0", "value": 0}
        assert first == first and "Event(timestamp_us=" in repr(first)
    assert ring.closed
    with pytest.raises(telering.ClosedError, match="draining reader of .* is closed"):
        ring.pop()
    for call in (ring.read_batch, ring.to_numpy, ring.size, ring.info, lambda: next(iter(ring))):
        with pytest.raises(telering.ClosedError):
            call()


def test_a_second_draining_reader_is_refused_and_takes_nothing(tdir):
    path = record(tdir, "one-drainer", 6, buffer_size=16)
    with telering.SharedRingBuffer(path) as first:
        assert first.pop().value == 0
        with pytest.raises(RuntimeError, match="another draining reader .* is taking this ring's events"):
            telering.SharedRingBuffer(path)
        if _has_numpy():
            with pytest.raises(RuntimeError, match="another draining reader"):
                telering.read_numpy(path)
        # Observers are not affected (they see every stamped slot), and the refused
        # readers took nothing.
        with telering.Observer(path) as observer:
            assert [e.value for e in observer.read_batch()] == [0, 1, 2, 3, 4, 5]
        assert [e.value for e in first] == [1, 2, 3, 4, 5]
    # The lock goes with the first reader: the next one opens.
    with telering.SharedRingBuffer(path) as next_reader:
        assert next_reader.pop() is None


def test_a_draining_reader_in_another_process_is_named_by_its_pid(tdir):
    path = record(tdir, "other-drainer", 3, buffer_size=16)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, telering\n"
            "r = telering.SharedRingBuffer(sys.argv[1])\n"
            "print('open', flush=True)\n"
            "sys.stdin.read()\n"
            "print(len(r.read_batch()), flush=True)\n",
            str(path),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline() == "open\n"
        with pytest.raises(RuntimeError, match=r"another draining reader \(pid %d\)" % holder.pid):
            telering.SharedRingBuffer(path)
        out, _ = holder.communicate("", timeout=60)
    finally:
        holder.kill()
        holder.wait()
    assert holder.returncode == 0 and out == "3\n", out


def _has_numpy():
    try:
        import numpy  # noqa: F401
    except ImportError:
        return False
    return True


def test_a_full_ring_reports_full(tdir):
    path = write_ring(tdir / "full", 4, [(1, 1, b"a", 1)] * 3)
    with telering.SharedRingBuffer(path) as ring:
        assert ring.full() and ring.size() == 3


def test_nixl_written_ring_without_trailer_is_read(tdir):
    events = [(1_700_000_000_000_000 + i, 1, b"agent_tx_bytes", 100 + i) for i in range(6)]
    path = write_ring(tdir / "nixl", 8, events, read_pos=5)  # wraps around the end
    with telering.SharedRingBuffer(str(path), version=1) as ring:
        assert ring.info()["trailer"] is None
        assert [(e.timestamp_us, e.value) for e in ring] == [(ts, v) for ts, _, _, v in events]


def test_missing_file_and_directory(tdir):
    with pytest.raises(FileNotFoundError) as info:
        telering.SharedRingBuffer(tdir / "nope")
    assert str(tdir / "nope") in str(info.value) and info.value.errno == 2
    with pytest.raises(FileNotFoundError):
        telering.Observer(tdir / "nope")
    with pytest.raises(FileNotFoundError):
        telering.stat(tdir / "nope")
    with pytest.raises(IsADirectoryError, match="is a directory, not a ring file"):
        telering.SharedRingBuffer(tdir)


def unprivileged(argv):
    """`argv` run without the power to bypass file permissions: as is when not root,
    else as root without CAP_DAC_OVERRIDE (setpriv), so a mode-0444 file is read-only."""
    if os.geteuid() == 0:
        if not shutil.which("setpriv"):
            pytest.skip("needs setpriv (util-linux) to drop CAP_DAC_OVERRIDE as root")
        argv = ["setpriv", "--bounding-set=-dac_override,-dac_read_search"] + argv
    return subprocess.run(argv, capture_output=True, text=True, timeout=60)


def test_permission_denied_names_the_file(tdir):
    path = record(tdir, "perm", 3)
    os.chmod(path, 0o444)
    code = (
        "import telering, sys\n"
        "try:\n"
        "    telering.SharedRingBuffer(sys.argv[1])\n"
        "except PermissionError as e:\n"
        "    print('PermissionError', e.errno, e)\n"
    )
    out = unprivileged([sys.executable, "-c", code, str(path)])
    assert out.stdout.startswith("PermissionError 13 "), out.stdout + out.stderr
    assert str(path) in out.stdout and "needs write access" in out.stdout
    # An observer needs only read access.
    code = "import telering, sys; print(len(telering.Observer(sys.argv[1]).read_batch()))"
    ok = unprivileged([sys.executable, "-c", code, str(path)])
    assert ok.stdout.strip() == "3", ok.stderr


@pytest.mark.parametrize(
    "header, text",
    [
        ({"version": 77}, "version"),
        ({"capacity": 12, "mask": 11}, "capacity"),
        ({"mask": 3}, "mask"),
        ({"write_pos": 99}, "write_pos"),
    ],
)
def test_corrupt_header_raises_format_error_and_leaves_the_file_alone(tdir, header, text):
    import struct

    path = write_ring(tdir / "bad", 8, [(1, 1, b"a", 1)])
    fields = dict(zip(["write_pos", "read_pos", "version", "expected_version", "capacity", "mask"],
                      struct.unpack_from("<QQiiQQ", path.read_bytes())))
    fields.update(header)
    data = bytearray(path.read_bytes())
    struct.pack_into("<QQiiQQ", data, 0, *fields.values())
    path.write_bytes(bytes(data))
    before = digest(path)
    for open_it in (telering.SharedRingBuffer, telering.Observer, telering.stat, telering.read_numpy):
        with pytest.raises(telering.FormatError) as info:
            open_it(path)
        assert str(path) in str(info.value) and text in str(info.value)
        assert isinstance(info.value, ValueError)
    assert digest(path) == before


def test_truncated_file_is_a_format_error(tdir):
    path = record(tdir, "trunc", 3)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    before = digest(path)
    with pytest.raises(telering.FormatError, match="trunc"):
        telering.SharedRingBuffer(path)
    assert digest(path) == before


def test_version_mismatch_is_refused_untouched(tdir):
    path = record(tdir, "ver", 2)
    before = digest(path)
    with pytest.raises(telering.FormatError, match="field `version` is 1, expected 4; the file was left untouched"):
        telering.SharedRingBuffer(path, version=4)
    assert digest(path) == before


def corrupt_slot(path, slot, category):
    data = bytearray(path.read_bytes())
    SLOT_CATEGORY = 40 + slot * SLOT.size + 8
    data[SLOT_CATEGORY : SLOT_CATEGORY + 4] = category.to_bytes(4, "little", signed=True)
    path.write_bytes(bytes(data))


def test_a_bad_category_pops_as_found_with_one_warning(tdir):
    path = record(tdir, "slot", 4)
    corrupt_slot(path, 1, 99)
    corrupt_slot(path, 2, 99)
    with telering.SharedRingBuffer(path) as ring:
        first = ring.pop()
        assert (first.value, first.lenient) == (0, False)
        with pytest.warns(telering.CorruptEventWarning, match="slot 1 holds a category outside 0 to 7"):
            bad = ring.pop()
        assert (bad.value, bad.category, bad.category_name, bad.lenient) == (1, 99, "UNKNOWN(99)", True)
        assert bad.category not in set(Category)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # the same kind warns once per reader
            assert [(e.value, e.category) for e in ring] == [(2, 99), (3, Category.CUSTOM)]
        assert ring.corrupt_events == 2


def test_batches_return_every_slot_as_found_with_a_warning(tdir):
    path = record(tdir, "slotb", 5)
    corrupt_slot(path, 3, -7)
    with telering.SharedRingBuffer(path) as ring:
        with pytest.warns(telering.CorruptEventWarning, match="slot 3 holds a category outside 0 to 7"):
            events = ring.read_batch()
        assert [e.value for e in events] == [0, 1, 2, 3, 4] and ring.corrupt_events == 1
        assert [e.lenient for e in events] == [False, False, False, True, False]
        assert events[3].category == -7
    path = record(tdir, "slotn", 5)
    corrupt_slot(path, 0, 8)
    with telering.SharedRingBuffer(path) as ring:
        with pytest.warns(telering.CorruptEventWarning):
            array = ring.to_numpy()
        assert array["value"].tolist() == [0, 1, 2, 3, 4]
        assert array["category"].tolist()[0] == 8


def test_foreign_v1_events_with_bad_names_and_categories_are_returned_as_found(tdir):
    # What NIXL's own writer stores: an empty name, category 8 (NIXL_TELEMETRY_MAX),
    # and a 31-byte name strncpy cut inside "é" (0xC3 0xA9).
    cut = b"n" * 30 + b"\xc3"
    path = write_ring(
        tdir / "foreign",
        8,
        [(11, 1, b"agent_tx_bytes", 4096), (12, 1, b"", 7), (13, 8, b"agent_rx_bytes", 9), (14, 6, cut, 5)],
    )
    original = pathlib.Path(path).read_bytes()
    with telering.SharedRingBuffer(path) as ring:
        with pytest.warns(telering.CorruptEventWarning) as caught:
            events = list(ring)
        assert ring.corrupt_events == 3
    texts = "\n".join(str(w.message) for w in caught)
    assert "an empty name" in texts and "category outside 0 to 7" in texts and "not UTF-8" in texts
    got = [(e.timestamp_us, e.category, e.event_name, e.value, e.lenient) for e in events]
    assert got == [
        (11, Category.TRANSFER, b"agent_tx_bytes", 4096, False),
        (12, Category.TRANSFER, b"", 7, True),
        (13, 8, b"agent_rx_bytes", 9, True),
        (14, Category.SYSTEM, cut, 5, True),
    ]
    assert events[2].category_name == "UNKNOWN(8)" and events[3].name == "n" * 30 + "\ufffd"
    assert events[1].as_dict() == {"timestamp_us": 12, "category": "TRANSFER", "event": "", "value": 7}
    # Only the draining position moved.
    data = pathlib.Path(path).read_bytes()
    assert data[8:16] == (4).to_bytes(8, "little")
    assert (data[:8], data[16:]) == (original[:8], original[16:])


def test_observer_reads_without_consuming(tdir):
    path = record(tdir, "obs", 6, run_interval=3600)
    with telering.Observer(path) as obs:
        assert obs.get_capacity() == 4096 and obs.get_version() == 1 and "Observer(" in repr(obs)
        assert obs.poll().value == 0
        assert [e.value for e in obs.read_batch(2)] == [1, 2]
        assert [e.value for e in obs] == [3, 4, 5]
        assert obs.pop() is None and obs.events_missed == 0
        assert obs.info()["fill"] == 6  # the draining position did not move
    with pytest.raises(telering.ClosedError):
        obs.poll()
    with telering.Observer(path, start="newest") as newest:
        assert newest.poll() is None
    with pytest.raises(ValueError, match="start=\"middle\""):
        telering.Observer(path, start="middle")
    with telering.SharedRingBuffer(path) as ring:
        assert len(ring.read_batch()) == 6


def test_observer_refuses_a_ring_without_stamps(tdir):
    path = write_ring(tdir / "stampless", 8, [(1, 1, b"agent_tx_bytes", 1)] * 3)
    with pytest.raises(telering.FormatError, match="does not stamp (its|the) slots"):
        telering.Observer(path)


def test_stat_describes_the_file(tdir):
    path = record(tdir, "st", 3)
    info = telering.stat(str(path))
    assert (info["capacity"], info["fill"], info["version"], info["writer_alive"]) == (4096, 3, 1, False)
    assert info["trailer"]["writer_pid"] == os.getpid() and info["trailer"]["events_dropped"] == 0


def test_threads_share_one_reader(tdir):
    import threading

    path = record(tdir, "share", 3000)
    got = []
    with telering.SharedRingBuffer(path) as ring:

        def take():
            while (e := ring.pop()) is not None:
                got.append(e.value)

        threads = [threading.Thread(target=take) for _ in range(4)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    assert sorted(got) == list(range(3000))


def test_warnings_are_not_raised_for_clean_batches(tdir):
    path = record(tdir, "clean", 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with telering.SharedRingBuffer(path) as ring:
            assert len(ring.read_batch()) == 3


def write_v4_ring(path, capacity, typed_values):
    """A version-4 ring (NIXL >= 1.3.1) laid out by hand: the 40-byte header, then
    16-byte slots of type u32 @0, 4 unused bytes @4, value u64 @8."""
    import struct

    slots = bytearray(capacity * 16)
    for i, (type_number, value) in enumerate(typed_values):
        struct.pack_into("<IIQ", slots, i * 16, type_number, 0, value)
    header = struct.pack("<QQiiQQ", len(typed_values), 0, 4, 4, capacity, capacity - 1)
    pathlib.Path(path).write_bytes(header + bytes(slots))
    return path


def test_a_version_4_ring_reads_without_timestamps(tdir):
    path = write_v4_ring(tdir / "v4", 8, [(0, 4096), (6, 180), (20, 3)])
    with telering.SharedRingBuffer(path, version=4) as ring:
        assert ring.get_version() == 4
        events = ring.read_batch()
    got = [(e.name, e.category, e.value, e.timestamp_us, e.has_timestamp) for e in events]
    assert got == [
        ("agent_tx_bytes", Category.TRANSFER, 4096, 0, False),
        ("agent_xfer_time", Category.PERFORMANCE, 180, 0, False),
        ("agent_telemetry_events_dropped", Category.ERROR, 3, 0, False),
    ]
    assert events[0].as_dict()["timestamp_us"] is None


def write_typed_ring(path, version, capacity, slots):
    """A 16-byte-slot ring of `version` laid out by hand: version 2 (NIXL 1.1.0, 1.2.0)
    is category i32 @0, type u32 @4, value u64 @8; version 3 (1.3.0, 1.3.2) is type
    u32 @0, 4 bytes never initialised @4, value u64 @8. `slots` are the three u32/i32,
    u32, u64 words of each slot."""
    import struct

    data = bytearray(b"\xa5" * (capacity * 16))
    for i, (first, second, value) in enumerate(slots):
        struct.pack_into("<IIQ", data, i * 16, first & 0xFFFFFFFF, second, value)
    header = struct.pack("<QQiiQQ", len(slots), 0, version, version, capacity, capacity - 1)
    pathlib.Path(path).write_bytes(header + bytes(data))
    return path


@pytest.mark.parametrize("version", [2, 3])
def test_version_2_and_3_rings_read_named_from_the_type_table(tdir, version):
    typed = [(1, 4096), (7, 35), (10, 1), (5, 1 << 20)]
    if version == 2:
        # Version 2 stores the category beside the type number.
        slots = [(int(cat), t, v) for (t, v), cat in zip(typed, [Category.TRANSFER, Category.PERFORMANCE, Category.ERROR, Category.MEMORY])]
    else:
        slots = [(t, 0xA5A5A5A5, v) for t, v in typed]
    path = write_typed_ring(tdir / ("v%d" % version), version, 8, slots)
    with telering.SharedRingBuffer(path) as ring:
        assert ring.get_version() == version and ring.get_capacity() == 8
        events = ring.read_batch()
        assert ring.pop() is None and ring.corrupt_events == 0
    got = [(e.event_name, e.category, e.value, e.timestamp_us, e.has_timestamp, e.lenient) for e in events]
    assert got == [
        (b"agent_rx_bytes", Category.TRANSFER, 4096, 0, False, False),
        (b"agent_xfer_post_time", Category.PERFORMANCE, 35, 0, False, False),
        (b"agent_err_backend", Category.ERROR, 1, 0, False, False),
        (b"agent_memory_deregistered", Category.MEMORY, 1 << 20, 0, False, False),
    ]
    array = telering.read_numpy(write_typed_ring(tdir / ("n%d" % version), version, 8, slots))
    assert array["event_name"].tolist() == [e.event_name for e in events]
    assert array["timestamp_us"].tolist() == [0, 0, 0, 0]


def test_an_unknown_type_number_reads_as_unknown_type_n(tdir):
    path = write_typed_ring(tdir / "v3u", 3, 8, [(99, 0, 5)])
    with telering.SharedRingBuffer(path) as ring:
        with pytest.warns(telering.CorruptEventWarning, match="type number NIXL does not define"):
            (event,) = ring.read_batch()
    assert (event.event_name, event.category, event.value, event.lenient) == (b"unknown_type_99", Category.CUSTOM, 5, True)
