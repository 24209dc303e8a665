"""Shared fixtures: a telemetry directory, the `telering` binary, hand-made ring files."""

import hashlib
import os
import pathlib
import struct

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]

HEADER = struct.Struct("<QQiiQQ")  # write_pos, read_pos, version, expected_version, capacity, mask
SLOT = struct.Struct("<Qi32sIQ")  # timestamp_us, category, name, stamp, value


def telering_binary():
    """The `telering` command: $TELERING_BIN, else the release build in the target
    directory. None if there is none (and TELERING_BIN is unset)."""
    explicit = os.environ.get("TELERING_BIN")
    if explicit:
        assert os.access(explicit, os.X_OK), "TELERING_BIN=%s is not an executable" % explicit
        return explicit
    target = pathlib.Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
    candidate = target / "release" / "telering"
    return str(candidate) if os.access(candidate, os.X_OK) else None


@pytest.fixture
def cli():
    path = telering_binary()
    if path is None:
        pytest.skip("needs the telering binary: cargo build --release -p telering-cli, or TELERING_BIN")
    return path


@pytest.fixture
def no_otel_env(monkeypatch):
    """The process environment without OTEL_* variables (the exporter falls back to
    them, and the metrics-only forms win over what a test sets)."""
    for name in list(os.environ):
        if name.startswith("OTEL_"):
            monkeypatch.delenv(name)
    return monkeypatch


@pytest.fixture
def tdir(tmp_path):
    """A fresh telemetry directory."""
    d = tmp_path / "telemetry"
    d.mkdir()
    return d


def write_ring(path, capacity, events, version=1, read_pos=0):
    """A ring file laid out by hand as NIXL's writer lays it out: the 40-byte header
    and `capacity` 56-byte slots, no trailer. `events` are (timestamp_us, category,
    name bytes, value) tuples written from slot `read_pos` on."""
    slots = bytearray(capacity * SLOT.size)
    for i, (ts, cat, name, value) in enumerate(events):
        slot = (read_pos + i) % capacity
        SLOT.pack_into(slots, slot * SLOT.size, ts, cat, name, 0, value)  # no stamp, as NIXL
    write_pos = (read_pos + len(events)) % capacity
    header = HEADER.pack(write_pos, read_pos, version, version, capacity, capacity - 1)
    pathlib.Path(path).write_bytes(header + bytes(slots))
    return path


def digest(path):
    return hashlib.sha256(pathlib.Path(path).read_bytes()).hexdigest()
