#!/usr/bin/env python3
"""Read a NIXL telemetry ring file of any generation (as written by telering or by NIXL).

Standard library only. Provides the API the NIXL telemetry guide documents, so the
guide's reading loop runs unchanged:

    buf = SharedRingBuffer(path, version=1)
    print(buf.get_capacity())
    while (event := buf.pop()) is not None:
        print(event.timestamp_us, event.category, event.event_name, event.value)

Every generation NIXL has written is read; the file's own header and size decide
which one it is, whatever ``version`` the caller passed (``buf.version`` and
``buf.generation`` say what was found):

=========  ==============================  ======  =====================================
version    NIXL releases                   slot    layout
=========  ==============================  ======  =====================================
1          0.5.1 - 1.0.1                   56 B    timestamp_us u64 @0, category i32 @8,
                                                   name char[32] @12, 4 bytes @44,
                                                   value u64 @48
2 (first)  development builds              48 B    category i32 @0, name char[32] @4,
                                                   4 bytes @36, value u64 @40
2          1.1.0, 1.2.0                    16 B    category i32 @0, type u32 @4,
                                                   value u64 @8
3          1.3.0, 1.3.2                    16 B    type u32 @0, 4 bytes @4, value u64 @8
4          1.3.1, 1.4.0, current           16 B    as 3; adds type 20
=========  ==============================  ======  =====================================

The two version-2 forms are told apart by the file size: exactly 40 + capacity * 48
or exactly 40 + capacity * 16 bytes. Generations 2 to 4 carry no timestamp
(``event.timestamp_us`` is None); those that store a type number get their name from
NIXL's type table (``unknown_type_N`` for a number it does not define) and, where the
slot stores no category (3, 4), the category NIXL implies from the name.

This is a *draining* reader: ``pop()`` advances ``read_pos`` in the file, so it needs
write access and there must be only one draining reader per file. It copies the whole
slot out of the mapping before it advances ``read_pos``, so the writer cannot
overwrite the slot while it is being decoded (no torn reads).

Unlike NIXL's own reader, a file of an unknown version or an inconsistent size raises
an error and is left alone: it never unlinks a file it cannot read.

Run as a script, it prints every waiting event in the block format of
``telering read`` (timestamp in local time, category without its
``NIXL_TELEMETRY_`` prefix; no ``Timestamp:`` line for generations without one)::

    python3 nixl_telemetry_reader.py --telemetry_path /tmp/telemetry/agent [--follow]

The 40-byte header (little-endian) is the same in every generation: write_pos u64 @0,
read_pos u64 @8, version i32 @16, expected_version i32 @20, capacity u64 @24,
mask u64 @32; the slots start at 40. See docs/FORMAT.md.
"""

import argparse
import datetime
import mmap
import os
import struct
import sys
import time

HEADER = struct.Struct("<QQiiQQ")  # 40 bytes
HEADER_SIZE = HEADER.size
MAX_CAPACITY = 1 << 28

# The slot layouts, by generation name: (version, slot size, decoder).
V1 = struct.Struct("<Qi32s4xQ")  # 56 bytes
V2_NAMED = struct.Struct("<i32s4xQ")  # 48 bytes
V2 = struct.Struct("<iIQ")  # 16 bytes
V3 = struct.Struct("<I4xQ")  # 16 bytes
EVENT_SIZE = V1.size

# NIXL's event type numbers (generations 2 to 4); type 20 exists from version 4.
TYPE_NAMES = [
    "agent_tx_bytes",
    "agent_rx_bytes",
    "agent_tx_requests_num",
    "agent_rx_requests_num",
    "agent_memory_registered",
    "agent_memory_deregistered",
    "agent_xfer_time",
    "agent_xfer_post_time",
    "agent_err_not_posted",
    "agent_err_invalid_param",
    "agent_err_backend",
    "agent_err_not_found",
    "agent_err_mismatch",
    "agent_err_not_allowed",
    "agent_err_repost_active",
    "agent_err_unknown",
    "agent_err_not_supported",
    "agent_err_remote_disconnect",
    "agent_err_canceled",
    "agent_err_no_telemetry",
    "agent_telemetry_events_dropped",
]

CATEGORIES = [
    "NIXL_TELEMETRY_MEMORY",
    "NIXL_TELEMETRY_TRANSFER",
    "NIXL_TELEMETRY_CONNECTION",
    "NIXL_TELEMETRY_BACKEND",
    "NIXL_TELEMETRY_ERROR",
    "NIXL_TELEMETRY_PERFORMANCE",
    "NIXL_TELEMETRY_SYSTEM",
    "NIXL_TELEMETRY_CUSTOM",
]


class TelemetryFileError(Exception):
    """The file is not a readable telemetry ring of any generation (it is left untouched)."""


class TelemetryEvent:
    """One event: ``timestamp_us`` (None for generations without timestamps),
    ``category`` (int), ``event_name`` (32 bytes, NUL-padded) and ``value``."""

    __slots__ = ("timestamp_us", "category", "event_name", "value")

    def __init__(self, timestamp_us, category, event_name, value):
        self.timestamp_us = timestamp_us
        self.category = category
        self.event_name = event_name
        self.value = value

    @property
    def name(self):
        """The event name as text (up to the first NUL)."""
        return self.event_name.split(b"\0", 1)[0].decode("utf-8", "replace")

    def __repr__(self):
        return "TelemetryEvent(timestamp_us=%r, category=%d, event_name=%r, value=%d)" % (
            self.timestamp_us,
            self.category,
            self.name,
            self.value,
        )


def implied_category(name):
    """The category NIXL derives from a type name (generations 3 and 4)."""
    if name.startswith("agent_memory_"):
        return 0  # MEMORY
    if name.startswith("agent_tx_") or name.startswith("agent_rx_"):
        return 1  # TRANSFER
    if name.startswith("agent_xfer_"):
        return 5  # PERFORMANCE
    if name.startswith("agent_err_") or name == "agent_telemetry_events_dropped":
        return 4  # ERROR
    return 7  # CUSTOM: a type NIXL does not define


def type_name(version, type_number):
    """The name of a type number in a ring of ``version`` (``unknown_type_N`` if none)."""
    known = len(TYPE_NAMES) if version >= 4 else len(TYPE_NAMES) - 1
    if type_number < known:
        return TYPE_NAMES[type_number]
    return "unknown_type_%d" % type_number


def _name_field(name):
    return name.encode("ascii").ljust(32, b"\0")


def _decode_v1(record, version):
    timestamp_us, category, event_name, value = V1.unpack(record)
    return TelemetryEvent(timestamp_us, category, event_name, value)


def _decode_v2_named(record, version):
    category, event_name, value = V2_NAMED.unpack(record)
    return TelemetryEvent(None, category, event_name, value)


def _decode_v2(record, version):
    category, type_number, value = V2.unpack(record)
    name = type_name(version, type_number)
    if name.startswith("unknown_type_"):
        category = 7  # CUSTOM, as for an unknown type in every generation
    return TelemetryEvent(None, category, _name_field(name), value)


def _decode_v3(record, version):
    type_number, value = V3.unpack(record)
    name = type_name(version, type_number)
    return TelemetryEvent(None, implied_category(name), _name_field(name), value)


def _has_trailer_magic(path, offset):
    with open(path, "rb") as f:
        f.seek(offset)
        return f.read(8) == b"TLRNGTRL"


def detect_generation(path, version, capacity, size):
    """``(generation name, slot size, decoder)`` of a file from its header's
    ``version`` and ``capacity`` and its size; raises TelemetryFileError otherwise."""
    if version in (1, 3, 4):
        name, slot, decode = {
            1: ("v1", V1.size, _decode_v1),
            3: ("v3", V3.size, _decode_v3),
            4: ("v4", V3.size, _decode_v3),
        }[version]
        needed = HEADER_SIZE + capacity * slot
        # One rule for every generation: exactly the ring, plus telering's trailer
        # (versions 1 and 4) when the bytes after the slots start with its magic.
        trailer = {1: 64, 4: 72}.get(version)
        if size == needed or (trailer and size == needed + trailer and _has_trailer_magic(path, needed)):
            return name, slot, decode
        with_trailer = " (or %d with telering's trailer)" % (needed + trailer) if trailer else ""
        raise TelemetryFileError(
            "%s: the file is %d bytes, but a version-%d ring of %d slots is exactly %d bytes%s; "
            "the file was left untouched" % (path, size, version, capacity, needed, with_trailer)
        )
    if version == 2:
        named = HEADER_SIZE + capacity * V2_NAMED.size
        typed = HEADER_SIZE + capacity * V2.size
        if size == named:
            return "v2-48", V2_NAMED.size, _decode_v2_named
        if size == typed:
            return "v2", V2.size, _decode_v2
        raise TelemetryFileError(
            "%s: the file is %d bytes, but a version-2 ring of %d slots is exactly %d bytes "
            "(48-byte slots) or exactly %d bytes (16-byte slots); the file was left untouched"
            % (path, size, capacity, named, typed)
        )
    raise TelemetryFileError(
        "%s: field `version` is %d; no NIXL ring generation has it (1 to 4 are read); "
        "the file was left untouched" % (path, version)
    )


class SharedRingBuffer:
    """A NIXL ring file of any generation, opened as its one draining reader.

    ``version`` is accepted for the guide's API; the file's header and size decide
    the generation that is read (see ``self.version`` and ``self.generation``)."""

    def __init__(self, path, version=None):
        self.path = path
        self.requested_version = version
        fd = os.open(path, os.O_RDWR | os.O_CLOEXEC | os.O_NONBLOCK)
        try:
            st = os.fstat(fd)
            if not _is_regular(st.st_mode):
                raise TelemetryFileError("%s: not a regular file" % path)
            size = st.st_size
            if size < HEADER_SIZE:
                raise TelemetryFileError(
                    "%s: %d bytes, shorter than the %d-byte header" % (path, size, HEADER_SIZE)
                )
            header = os.pread(fd, HEADER_SIZE, 0)
            write_pos, read_pos, found, _expected, capacity, mask = HEADER.unpack(header)
            if found not in (1, 2, 3, 4):
                detect_generation(path, found, capacity, size)  # raises
            if capacity < 2 or capacity > MAX_CAPACITY or capacity & (capacity - 1):
                raise TelemetryFileError(
                    "%s: field `capacity` is %d, not a power of two from 2 to %d"
                    % (path, capacity, MAX_CAPACITY)
                )
            if mask != capacity - 1:
                raise TelemetryFileError(
                    "%s: field `mask` is %d, expected %d" % (path, mask, capacity - 1)
                )
            generation, slot, decode = detect_generation(path, found, capacity, size)
            if write_pos >= capacity or read_pos >= capacity:
                raise TelemetryFileError(
                    "%s: positions %d/%d are not below the capacity %d"
                    % (path, write_pos, read_pos, capacity)
                )
            length = HEADER_SIZE + capacity * slot
            # Map exactly the ring, as NIXL's readers do; a telering trailer after
            # it is not needed here.
            self._map = mmap.mmap(fd, length, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        finally:
            os.close(fd)
        # write_pos and read_pos, each loaded and stored as one 8-byte word (as
        # NIXL's readers do with atomics). struct.pack_into would not do: CPython
        # zeroes the field before writing the new bytes, so a writer loading
        # read_pos in between sees 0 and overwrites events not yet read; and
        # struct.unpack_from reads byte by byte, so a position can tear. The
        # memoryview is native-endian, as the ring file is on the host writing it.
        self._positions = memoryview(self._map)[0:16].cast("Q")
        self._capacity = capacity
        self._mask = mask
        self._slot = slot
        self._decode = decode
        self.version = found
        self.generation = generation

    def has_timestamps(self):
        """Whether the events carry timestamps (only version 1)."""
        return self.version == 1

    def get_capacity(self):
        """Number of slots (the ring holds capacity - 1 events)."""
        return self._capacity

    def size(self):
        """Events waiting."""
        write_pos, read_pos = self._positions[0], self._positions[1]
        return (write_pos - read_pos) & self._mask

    def empty(self):
        return self.size() == 0

    def pop(self):
        """The oldest unread event, or None if the ring is empty."""
        write_pos = self._positions[0] & self._mask
        read_pos = self._positions[1] & self._mask
        if read_pos == write_pos:
            return None
        offset = HEADER_SIZE + read_pos * self._slot
        # Copy the slot first: once read_pos moves, the writer may reuse it.
        record = bytes(self._map[offset : offset + self._slot])
        self._positions[1] = (read_pos + 1) & self._mask
        return self._decode(record, self.version)

    def close(self):
        self._positions.release()
        self._map.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _is_regular(mode):
    import stat

    return stat.S_ISREG(mode)


def category_name(category):
    """``TRANSFER`` for 1 and so on; the number for an unknown category."""
    if 0 <= category < len(CATEGORIES):
        return CATEGORIES[category][len("NIXL_TELEMETRY_") :]
    return "UNKNOWN(%d)" % category


def format_timestamp(timestamp_us):
    """Local time with microseconds: ``2025-01-15 14:30:25.123456``."""
    seconds, micros = divmod(timestamp_us, 1_000_000)
    try:
        when = datetime.datetime.fromtimestamp(seconds)
    except (OverflowError, OSError, ValueError):
        return "%d us" % timestamp_us
    return when.strftime("%Y-%m-%d %H:%M:%S") + ".%06d" % micros


def format_event(event):
    timestamp = ""
    if event.timestamp_us is not None:
        timestamp = "Timestamp: %s\n" % format_timestamp(event.timestamp_us)
    return (
        "=== Telemetry Event ===\n"
        "%s"
        "Category: %s\n"
        "Event: %s\n"
        "Value: %d\n"
        "=======================\n"
        % (timestamp, category_name(event.category), event.name, event.value)
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description="Drain a NIXL telemetry ring file.")
    parser.add_argument("--telemetry_path", required=True, help="the ring file")
    parser.add_argument("--follow", action="store_true", help="keep waiting for new events")
    parser.add_argument("--poll_interval_ms", type=float, default=100.0)
    args = parser.parse_args(argv)
    try:
        ring = SharedRingBuffer(args.telemetry_path)
    except (OSError, TelemetryFileError) as e:
        print("error: %s" % e, file=sys.stderr)
        return 1
    out = sys.stdout
    try:
        while True:
            event = ring.pop()
            if event is not None:
                out.write(format_event(event))
                continue
            if not args.follow:
                break
            out.flush()
            time.sleep(args.poll_interval_ms / 1000.0)
        out.flush()
    except KeyboardInterrupt:
        pass
    except BrokenPipeError:
        # The reader of our output went away (`| head`): stop quietly, like cat does.
        # Point stdout at /dev/null so the interpreter's final flush does not fail too.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    finally:
        ring.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
