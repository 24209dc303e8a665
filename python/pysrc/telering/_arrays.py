"""NumPy and pandas views of telemetry events. NumPy and pandas are imported only
when these functions run, so the rest of the package works without them."""

import os

#: Bytes per event in the arrays: NIXL's version-1 slot.
EVENT_SIZE = 56

_dtype = None


def _numpy():
    try:
        import numpy
    except ImportError as e:  # pragma: no cover - exercised in a venv without NumPy
        raise ImportError(
            "telering's array functions need NumPy: pip install numpy "
            "(or reinstall telering with its extra from the clone, pip install './python[numpy]', "
            "or from a wheel, pip install 'WHEEL[numpy]')"
        ) from e
    return numpy


def event_dtype():
    """The NumPy structured dtype of an event: NIXL's 56-byte version-1 slot,
    little-endian, with the fields ``timestamp_us`` (``<u8``, offset 0),
    ``category`` (``<i4``, 8), ``event_name`` (``S32``, 12; NUL padding stripped on
    access) and ``value`` (``<u8``, 48). Bytes 44 to 47 are padding."""
    global _dtype
    if _dtype is None:
        np = _numpy()
        _dtype = np.dtype(
            {
                "names": ["timestamp_us", "category", "event_name", "value"],
                "formats": ["<u8", "<i4", "S32", "<u8"],
                "offsets": [0, 8, 12, 48],
                "itemsize": EVENT_SIZE,
            }
        )
    return _dtype


def from_buffer(buf, count):
    """A structured array over the first ``count`` events in ``buf`` (no copy)."""
    np = _numpy()
    return np.frombuffer(buf, dtype=event_dtype(), count=count)


def read_numpy(path, max=None, version=None):
    """Drains the ring file at ``path`` as its draining reader and returns every
    waiting event (at most ``max``) as a NumPy structured array, in one bulk copy.
    The events returned are taken from the ring (its read position advances), as
    ``telering read`` takes them. Events of ring generations without timestamps have
    ``timestamp_us == 0``.

    Without NumPy it raises ``ImportError`` before opening the ring, so nothing is
    taken."""
    _numpy()
    from ._native import SharedRingBuffer

    with SharedRingBuffer(os.fspath(path), version=version) as ring:
        return ring.to_numpy(max)


def load(source, max=None, version=None):
    """A pandas DataFrame of events: ``source`` is a ring file's path, which is
    drained (the events returned are taken from the ring, as by ``read_numpy``), or
    an array from ``to_numpy()``/``read_numpy()``.

    Its columns are the NumPy record's, decoded for analysis: ``timestamp_us`` and
    ``value`` (``uint64``) as stored, ``category`` as a pandas categorical of the
    short names (``TRANSFER``; ``UNKNOWN(n)`` for a number outside NIXL's eight),
    ``event_name`` as text, and ``timestamp`` as ``datetime64[us, UTC]`` (``NaT`` for
    events without one) — ready for ``groupby("event_name")`` or
    ``set_index("timestamp").resample(...)``.

    Without pandas or NumPy it raises ``ImportError`` before opening the ring, so
    nothing is taken."""
    pd = _pandas()
    np = _numpy()
    if isinstance(source, np.ndarray):
        events = source
    else:
        events = read_numpy(source, max=max, version=version)
    from ._enums import Category

    names = [c.short_name for c in sorted(set(Category), key=int)]
    raw_categories = events["category"]
    labels = [
        names[c] if 0 <= c < len(names) else "UNKNOWN(%d)" % c for c in raw_categories.tolist()
    ]
    categories = names + sorted({label for label in labels if label not in names})
    timestamp_us = events["timestamp_us"]
    timestamps = pd.to_datetime(timestamp_us.astype("int64"), unit="us", utc=True)
    timestamps = timestamps.where(timestamp_us != 0)
    return pd.DataFrame(
        {
            "timestamp": timestamps,
            "category": pd.Categorical(labels, categories=categories),
            "event_name": [n.decode("utf-8", "replace") for n in events["event_name"].tolist()],
            "value": events["value"],
            "timestamp_us": timestamp_us,
        }
    )


def _pandas():
    try:
        import pandas
    except ImportError as e:
        raise ImportError(
            "telering.load needs pandas: pip install pandas "
            "(or reinstall telering with its extra from the clone, pip install './python[pandas]', "
            "or from a wheel, pip install 'WHEEL[pandas]')"
        ) from e
    return pandas
