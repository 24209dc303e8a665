"""telering: record, read and analyse NIXL-compatible telemetry from Python.

Recording runs in Rust (telering-std): ``record()`` and the built-in update calls
write into a lock-free per-thread lane, and a flush thread exports the events —
to the shared-memory ring file (``NIXL_TELEMETRY_DIR/<agent>``), CSV, Prometheus or
an OpenTelemetry collector (``otlp``) — every run interval. Reading runs in Rust too (telering-shm), for every ring
generation the ``telering`` command reads::

    import telering

    with telering.Telemetry("agent", enabled=True, dir="/tmp/telemetry") as t:
        t.add_xfer_stats(180, True, 1 << 20, 4)
    print(telering.read_numpy("/tmp/telemetry/agent")["value"])

The telemetry guide's reading loop runs unchanged on ``SharedRingBuffer``::

    buf = telering.SharedRingBuffer(path, version=1)
    while (event := buf.pop()) is not None:
        print(event.timestamp_us, event.category, event.event_name, event.value)

NumPy is needed only for ``to_numpy()`` / ``read_numpy()``, pandas only for
``load()``.

Warnings and errors of the Rust side (a configuration value that is not
recognized, an exporter that fails) are logged to :mod:`logging` under the logger
``telering`` (``telering.std``, ``telering.otlp``, ...), at the level that logger
lets through (``WARNING`` by default).
"""

import atexit as _atexit
import importlib.metadata as _metadata

from . import _native
from ._enums import Category, ErrorStatus, Recorded
from ._native import (
    EVENT_SIZE,
    NAME_MAX_LEN,
    BackendTelemetry,
    ClosedError,
    CorruptEventWarning,
    Event,
    Follow,
    FormatError,
    NoTelemetryError,
    Observer,
    SharedRingBuffer,
    Telemetry,
    XferHandle,
    XferTelemetry,
    stat,
)
from ._arrays import event_dtype, load, read_numpy

try:
    #: The installed distribution's version (pyproject.toml's).
    __version__ = _metadata.version("telering")
except _metadata.PackageNotFoundError:  # pragma: no cover - an uninstalled build
    __version__ = _native.__version__

# Rust log records reach `logging` (the logger "telering") through a queue that Python
# calls and a forwarder thread empty; at exit it is emptied a last time, and later
# records go to stderr.
_atexit.register(_native._logs_at_exit)

#: The name NIXL's Python bindings give the same exception.
nixlNoTelemetryError = NoTelemetryError

__all__ = [
    "BackendTelemetry",
    "Category",
    "ClosedError",
    "CorruptEventWarning",
    "EVENT_SIZE",
    "ErrorStatus",
    "Event",
    "Follow",
    "FormatError",
    "NAME_MAX_LEN",
    "NoTelemetryError",
    "Observer",
    "Recorded",
    "SharedRingBuffer",
    "Telemetry",
    "XferHandle",
    "XferTelemetry",
    "__version__",
    "event_dtype",
    "load",
    "nixlNoTelemetryError",
    "read_numpy",
    "stat",
]
