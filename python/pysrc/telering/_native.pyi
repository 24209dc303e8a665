"""Type stubs of telering's extension module (re-exported by ``telering``)."""

import datetime
import os
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Union

import numpy

from ._enums import Category, ErrorStatus, Recorded

_Path = Union[str, "os.PathLike[str]"]
_Seconds = Union[int, float, datetime.timedelta]
_CategoryLike = Union[Category, int, str]

EVENT_SIZE: int
NAME_MAX_LEN: int
__version__: str

def _logs_at_exit() -> None: ...

class FormatError(ValueError):
    """The file is not a telemetry ring telering can read; it was not modified."""

class NoTelemetryError(RuntimeError):
    """No per-transfer telemetry: capture is not enabled."""

class ClosedError(ValueError):
    """The object was closed."""

class CorruptEventWarning(UserWarning):
    """A reader returned an event that does not validate (as a foreign writer stored
    it); issued once per kind of problem per reader."""

class Event:
    """One event. Events of ring generations without timestamps have
    ``timestamp_us == 0`` and ``has_timestamp == False``. An event a foreign writer
    stored that does not validate (an empty name, category 8, a name cut inside a
    UTF-8 character) is returned as found with ``lenient == True``: ``event_name``
    holds the stored bytes, ``category`` the stored int (possibly outside
    ``telering.Category``; ``category_name`` is then ``UNKNOWN(n)``)."""

    @property
    def timestamp_us(self) -> int: ...
    @property
    def has_timestamp(self) -> bool: ...
    @property
    def lenient(self) -> bool: ...
    @property
    def category(self) -> int: ...
    @property
    def category_name(self) -> str: ...
    @property
    def event_name(self) -> bytes: ...
    @property
    def name(self) -> str: ...
    @property
    def value(self) -> int: ...
    def as_dict(self) -> Dict[str, Any]: ...

class XferHandle:
    @property
    def is_write(self) -> bool: ...
    @property
    def is_completed(self) -> bool: ...

class XferTelemetry:
    """NIXL's per-transfer telemetry fields; times in microseconds."""

    @property
    def startTime(self) -> int: ...
    @property
    def postDuration(self) -> int: ...
    @property
    def xferDuration(self) -> int: ...
    @property
    def totalBytes(self) -> int: ...
    @property
    def descCount(self) -> int: ...

class BackendTelemetry:
    @property
    def backend(self) -> str: ...
    @property
    def events_dropped(self) -> int: ...
    def add_telemetry_event(self, name: str, value: int) -> Recorded: ...
    def get_telemetry_events(self) -> List[Event]: ...

class Telemetry:
    """Telemetry for one agent. Options (keywords) and their defaults:

    ``enabled=False``, ``capture_telemetry=False``, ``enabled_metrics=""``,
    ``buffer_size=4096``, ``lane_capacity=None`` (the buffer size),
    ``run_interval=0.1`` (seconds), ``exporter=None``, ``dir=None``,
    ``clock="auto"``, ``early_flush=True`` (a thread whose lane is half full wakes
    the flush before its interval; ``False``: the flush runs on schedule only).

    ``exporter`` is one of ``"buffer"`` (the ring file), ``"csv"``, ``"nop"``,
    ``"prometheus"``, ``"prometheus_mp"`` or ``"otlp"`` (OTLP/HTTP push to an OpenTelemetry collector,
    configured by the ``OTEL_*`` variables of ``from_env``'s ``env`` or else of the
    process; docs/OTLP.md). It may be a list of them (``["buffer", "otlp"]``, or
    ``"buffer,otlp"``): each gets every event, counted on its own
    (``exporter_stats()``). A name listed twice (in any case, ``"Buffer,buffer"``)
    and an empty entry (``"buffer,,csv"``, a trailing comma) raise ``ValueError``
    naming them. Another name is an exporter plug-in,
    ``libtelemetry_exporter_<name>.so`` from ``NIXL_PLUGIN_DIR``; a missing one is a
    ``ValueError`` listing the built-in exporters and the folder searched, one that
    cannot be loaded says the dynamic loader's reason.

    A bad option raises ``ValueError`` naming the keyword and what to use instead
    (``buffer_size=1000 is not a power of two; use 512 or 1024``); a bad value that
    ``from_env`` read names its variable (``NIXL_TELEMETRY_BUFFER_SIZE=1000 ...``).
    ``enabled``, ``capture_telemetry`` and ``early_flush`` take ``True`` or
    ``False`` only (``TypeError`` otherwise: ``enabled="off"`` would be truthy).
    ``exporter`` and ``dir`` given as keywords are checked even when telemetry is
    disabled: an unknown exporter raises as it would when enabled, and a ``dir``
    that is not a directory or cannot be created (below a file, on ``/proc`` or
    ``/sys``, read-only or not writable) raises ``ValueError``; nothing is created.
    """

    def __init__(
        self,
        agent_name: str,
        *,
        enabled: bool = False,
        capture_telemetry: bool = False,
        enabled_metrics: str = "",
        buffer_size: int = 4096,
        lane_capacity: Optional[int] = None,
        run_interval: _Seconds = 0.1,
        exporter: Union[str, Sequence[str], None] = None,
        dir: Optional[_Path] = None,
        clock: str = "auto",
        early_flush: bool = True,
    ) -> None: ...
    @classmethod
    def from_env(
        cls,
        agent_name: str,
        env: Optional[Mapping[str, str]] = None,
        *,
        enabled: bool = ...,
        capture_telemetry: bool = ...,
        enabled_metrics: str = ...,
        buffer_size: int = ...,
        lane_capacity: Optional[int] = ...,
        run_interval: _Seconds = ...,
        exporter: Union[str, Sequence[str], None] = ...,
        dir: Optional[_Path] = ...,
        clock: str = ...,
        early_flush: bool = ...,
    ) -> "Telemetry": ...
    def update_tx_bytes(self, bytes: int) -> Recorded: ...
    def update_rx_bytes(self, bytes: int) -> Recorded: ...
    def update_tx_requests_num(self, requests: int) -> Recorded: ...
    def update_rx_requests_num(self, requests: int) -> Recorded: ...
    def update_memory_registered(self, bytes: int) -> Recorded: ...
    def update_memory_deregistered(self, bytes: int) -> Recorded: ...
    def update_error_count(self, status: Union[ErrorStatus, str]) -> Recorded: ...
    def add_xfer_stats(
        self, xfer_time_us: int, is_write: bool, bytes: int, post_time_us: int
    ) -> Recorded: ...
    def route(
        self, operation: str, backend: str, local_mem: str, remote_mem: str, peer: str = ""
    ) -> int: ...
    def add_route_xfer_stats(
        self, route: int, xfer_time_us: int, bytes: int, post_time_us: int, descriptors: int = 1
    ) -> Recorded: ...
    def update_route_error_count(self, route: int, status: Union[ErrorStatus, str]) -> Recorded: ...
    def route_totals(self, route: int) -> Dict[str, Any]: ...
    def record(self, category: _CategoryLike, name: str, value: int) -> Recorded: ...
    def start_xfer(
        self, is_write: bool, total_bytes: int, descriptor_count: int = 1
    ) -> XferHandle: ...
    def xfer_posted(self, xfer: XferHandle) -> None: ...
    def xfer_completed(self, xfer: XferHandle) -> Recorded: ...
    def get_xfer_telemetry(self, xfer: XferHandle) -> XferTelemetry: ...
    def backend(self, name: str) -> BackendTelemetry:
        """The handle of backend ``name`` (``"UCX"``): 1 to 64 bytes without control
        characters, else ``ValueError``."""
    def flush(self) -> None: ...
    def close(self) -> None: ...
    def stats(self) -> Dict[str, Union[int, bool]]:
        """The counters of Rust's ``TelemetryStats`` and C's ``telering_stats``, with
        the same names and meanings. Every recorded event ends in exactly one of five
        counts once recording threads are done and a flush has run:
        ``events_recorded == events_exported + events_dropped + exporter_dropped +
        events_not_in_layout + events_undelivered``.

        - ``events_recorded``: passed the allowlist.
        - ``events_dropped``: lost at record time, before any exporter had them (a
          full lane or backend buffer: the ``DROPPED`` outcomes).
        - ``events_exported``: delivered. For ``buffer`` and ``csv``, written to the
          file; for ``otlp``, in a push the collector answered with a 2xx status; for
          ``prometheus``, folded into the metrics its endpoint serves.
        - ``exporter_dropped``: lost by the exporter after it was handed them (a
          failed export such as a CSV write the disk refused, a full ring, a ring file
          another program unlinked, a full queue of one exporter of a list).
        - ``events_not_in_layout``: custom and backend events a
          ``TELERING_RING_LAYOUT=v4`` ring cannot hold.
        - ``events_undelivered``: taken by ``otlp`` or ``prometheus`` but not
          delivered (a collector down, refusing or silent; a port that could not be
          bound).
        - ``flushes``: flushes done.
        - ``export_errors``: failed attempts (refused, unreachable or timed-out
          pushes, a failed write, an endpoint that could not start).
        - ``exporter_failing`` (bool): the last export failed (a CSV write the disk
          refused), the last push was not delivered, or the endpoint could not start;
          ``False`` again once one succeeds.
        - ``lanes``: recording threads.

        With a list of exporters (``"buffer,otlp"``), these are the counts of the
        exporter that delivered fewest, ``export_errors`` adds up every exporter's and
        ``exporter_failing`` is set if any is failing; each one's own deliveries and
        failures are in ``exporter_stats()``. After ``close()`` they are the final
        counters, what the last export could not deliver included."""
    def exporter_stats(self) -> List[Dict[str, Union[int, bool, str, None]]]:
        """Each exporter's deliveries and losses, as Rust's ``Telemetry::exporter_stats``:
        one dict per name of the exporter list (``"buffer,otlp"``), in that order, so an
        exporter that fails shows beside one that delivers; ``[]`` without an
        exporter. Keys: ``name``, ``endpoint`` (its file, or the URL it serves or
        pushes to; ``None`` if it has none), ``events_delivered``, ``events_dropped``
        (lost by it: a full queue, failed exports), ``exporter_dropped`` (lost inside
        it: a full ring, a ring file unlinked), ``events_lost_after_delivery`` (of
        ``exporter_dropped``, those counted delivered first: written into a ring file
        another program then unlinked), ``events_not_in_layout``,
        ``events_undelivered``, ``export_errors`` and ``exporter_failing``, meaning
        what they mean in ``stats()``. Each exporter accounts for every event handed
        to the list: ``events_delivered + events_dropped + exporter_dropped +
        events_not_in_layout + events_undelivered``. After ``close()``, the final
        ones."""
    def __enter__(self) -> "Telemetry": ...
    def __exit__(self, *exc: object) -> bool: ...
    @property
    def closed(self) -> bool: ...
    @property
    def agent_name(self) -> str: ...
    @property
    def mode(self) -> str: ...
    @property
    def exporter(self) -> Optional[str]:
        """The exporter's name (one of ``Telemetry``'s ``exporter`` values), or None."""
    @property
    def dir(self) -> Optional[os.PathLike[str]]: ...
    @property
    def ring_path(self) -> Optional[os.PathLike[str]]: ...
    @property
    def buffer_size(self) -> int: ...
    @property
    def run_interval(self) -> float: ...
    @property
    def enabled_metrics(self) -> str: ...
    @property
    def clock(self) -> str: ...
    @property
    def captures(self) -> bool: ...
    @property
    def exports(self) -> bool: ...

class Follow(Iterator[Event]):
    """The iterator of ``follow()``: blocks (GIL released) until an event arrives,
    ends after ``timeout`` seconds without one."""

    def __iter__(self) -> "Follow": ...
    def __next__(self) -> Event: ...
    @property
    def interval(self) -> float: ...
    @property
    def timeout(self) -> Optional[float]: ...

class SharedRingBuffer:
    """A ring file opened as its one draining reader (the telemetry guide's API).

    A second draining reader of the same file (``telering read``, C's or another
    Python one, in this process or another) raises ``RuntimeError`` naming the first
    one's pid, and takes nothing; ``Observer`` watches without consuming."""

    def __init__(self, path: _Path, version: Optional[int] = None) -> None: ...
    def pop(self) -> Optional[Event]: ...
    def read_batch(self, max: int = ...) -> List[Event]: ...
    def to_numpy(self, max: Optional[int] = None) -> "numpy.ndarray[Any, Any]": ...
    def follow(self, interval: float = 0.01, timeout: Optional[float] = None) -> Follow: ...
    def get_capacity(self) -> int: ...
    def get_version(self) -> int: ...
    def size(self) -> int: ...
    def empty(self) -> bool: ...
    def full(self) -> bool: ...
    def info(self) -> Dict[str, Any]: ...
    def close(self) -> None: ...
    def __enter__(self) -> "SharedRingBuffer": ...
    def __exit__(self, *exc: object) -> bool: ...
    def __iter__(self) -> "SharedRingBuffer": ...
    def __next__(self) -> Event: ...
    @property
    def events_lost(self) -> int: ...
    @property
    def corrupt_events(self) -> int: ...
    @property
    def path(self) -> os.PathLike[str]: ...
    @property
    def closed(self) -> bool: ...

class Observer:
    """A read-only follower of a ring file."""

    def __init__(self, path: _Path, start: str = "oldest") -> None: ...
    def poll(self) -> Optional[Event]: ...
    def pop(self) -> Optional[Event]: ...
    def read_batch(self, max: int = ...) -> List[Event]: ...
    def to_numpy(self, max: Optional[int] = None) -> "numpy.ndarray[Any, Any]": ...
    def follow(self, interval: float = 0.01, timeout: Optional[float] = None) -> Follow: ...
    def get_capacity(self) -> int: ...
    def get_version(self) -> int: ...
    def info(self) -> Dict[str, Any]: ...
    def close(self) -> None: ...
    def __enter__(self) -> "Observer": ...
    def __exit__(self, *exc: object) -> bool: ...
    def __iter__(self) -> "Observer": ...
    def __next__(self) -> Event: ...
    @property
    def events_missed(self) -> int: ...
    @property
    def corrupt_events(self) -> int: ...
    @property
    def path(self) -> os.PathLike[str]: ...
    @property
    def closed(self) -> bool: ...

def stat(path: _Path) -> Dict[str, Any]: ...
