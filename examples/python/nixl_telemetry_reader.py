#!/usr/bin/env python3
"""Read a NIXL version-1 telemetry ring file (as written by telering or by NIXL).

Standard library only. Provides the API the NIXL telemetry guide documents, so the
guide's reading loop runs unchanged:

    buf = SharedRingBuffer(path, version=1)
    print(buf.get_capacity())
    while (event := buf.pop()) is not None:
        print(event.timestamp_us, event.category, event.event_name, event.value)

This is a *draining* reader: ``pop()`` advances ``read_pos`` in the file, so it needs
write access and there must be only one draining reader per file. It copies the whole
56-byte slot out of the mapping before it advances ``read_pos``, so the writer cannot
overwrite the slot while it is being decoded (no torn reads).

Unlike NIXL's own reader, a version mismatch raises an error and leaves the file
alone: it never unlinks a file it cannot read.

Run as a script, it prints every waiting event in the block format of
``telering read`` (timestamp in local time, category without its
``NIXL_TELEMETRY_`` prefix)::

    python3 nixl_telemetry_reader.py --telemetry_path /tmp/telemetry/agent [--follow]

File layout (little-endian): a 40-byte header -- write_pos u64 @0, read_pos u64 @8,
version i32 @16, expected_version i32 @20, capacity u64 @24, mask u64 @32 -- then
``capacity`` slots of 56 bytes: timestamp_us u64 @0, category i32 @8, event_name
char[32] @12, (4 bytes reserved) @44, value u64 @48. See docs/FORMAT.md.
"""

import argparse
import datetime
import mmap
import os
import struct
import sys
import time

HEADER = struct.Struct("<QQiiQQ")  # 40 bytes
EVENT = struct.Struct("<Qi32s4xQ")  # 56 bytes
POS = struct.Struct("<Q")
HEADER_SIZE = HEADER.size
EVENT_SIZE = EVENT.size
MAX_CAPACITY = 1 << 28

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
    """The file is not a readable version-1 telemetry ring (it is left untouched)."""


class TelemetryEvent:
    """One event: ``timestamp_us``, ``category`` (int), ``event_name`` (32 bytes,
    NUL-padded) and ``value``."""

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
        return "TelemetryEvent(timestamp_us=%d, category=%d, event_name=%r, value=%d)" % (
            self.timestamp_us,
            self.category,
            self.name,
            self.value,
        )


class SharedRingBuffer:
    """A NIXL version-1 ring file, opened as its one draining reader."""

    def __init__(self, path, version=1):
        self.path = path
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
            if found != version:
                raise TelemetryFileError(
                    "%s: field `version` is %d, expected %d; the file was left untouched"
                    % (path, found, version)
                )
            if capacity < 2 or capacity > MAX_CAPACITY or capacity & (capacity - 1):
                raise TelemetryFileError(
                    "%s: field `capacity` is %d, not a power of two from 2 to %d"
                    % (path, capacity, MAX_CAPACITY)
                )
            if mask != capacity - 1:
                raise TelemetryFileError(
                    "%s: field `mask` is %d, expected %d" % (path, mask, capacity - 1)
                )
            length = HEADER_SIZE + capacity * EVENT_SIZE
            if size < length:
                raise TelemetryFileError(
                    "%s: %d bytes, the header requires %d" % (path, size, length)
                )
            if write_pos >= capacity or read_pos >= capacity:
                raise TelemetryFileError(
                    "%s: positions %d/%d are not below the capacity %d"
                    % (path, write_pos, read_pos, capacity)
                )
            # Map exactly the ring, as NIXL's readers do; the telering trailer
            # after it is not needed here.
            self._map = mmap.mmap(fd, length, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        finally:
            os.close(fd)
        self._capacity = capacity
        self._mask = mask

    def get_capacity(self):
        """Number of slots (the ring holds capacity - 1 events)."""
        return self._capacity

    def size(self):
        """Events waiting."""
        write_pos, read_pos = struct.unpack_from("<QQ", self._map, 0)
        return (write_pos - read_pos) & self._mask

    def empty(self):
        return self.size() == 0

    def pop(self):
        """The oldest unread event, or None if the ring is empty."""
        write_pos = POS.unpack_from(self._map, 0)[0] & self._mask
        read_pos = POS.unpack_from(self._map, 8)[0] & self._mask
        if read_pos == write_pos:
            return None
        offset = HEADER_SIZE + read_pos * EVENT_SIZE
        # Copy the slot first: once read_pos moves, the writer may reuse it.
        record = bytes(self._map[offset : offset + EVENT_SIZE])
        POS.pack_into(self._map, 8, (read_pos + 1) & self._mask)
        timestamp_us, category, event_name, value = EVENT.unpack(record)
        return TelemetryEvent(timestamp_us, category, event_name, value)

    def close(self):
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
    return (
        "=== Telemetry Event ===\n"
        "Timestamp: %s\n"
        "Category: %s\n"
        "Event: %s\n"
        "Value: %d\n"
        "=======================\n"
        % (format_timestamp(event.timestamp_us), category_name(event.category), event.name, event.value)
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description="Drain a NIXL telemetry ring file.")
    parser.add_argument("--telemetry_path", required=True, help="the ring file")
    parser.add_argument("--follow", action="store_true", help="keep waiting for new events")
    parser.add_argument("--poll_interval_ms", type=float, default=100.0)
    args = parser.parse_args(argv)
    try:
        ring = SharedRingBuffer(args.telemetry_path, version=1)
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
