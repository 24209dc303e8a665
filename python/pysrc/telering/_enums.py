"""The enums of the telering package: categories, error statuses, record outcomes."""

import enum


class Category(enum.IntEnum):
    """What an event is about. The members and numbers are NIXL's
    (``nixl_telemetry_category_t``); the short names (``Category.TRANSFER``) are
    aliases of the same members."""

    NIXL_TELEMETRY_MEMORY = 0
    NIXL_TELEMETRY_TRANSFER = 1
    NIXL_TELEMETRY_CONNECTION = 2
    NIXL_TELEMETRY_BACKEND = 3
    NIXL_TELEMETRY_ERROR = 4
    NIXL_TELEMETRY_PERFORMANCE = 5
    NIXL_TELEMETRY_SYSTEM = 6
    NIXL_TELEMETRY_CUSTOM = 7

    MEMORY = 0
    TRANSFER = 1
    CONNECTION = 2
    BACKEND = 3
    ERROR = 4
    PERFORMANCE = 5
    SYSTEM = 6
    CUSTOM = 7

    @property
    def short_name(self):
        """The name without its ``NIXL_TELEMETRY_`` prefix: ``TRANSFER``."""
        return self.name[len("NIXL_TELEMETRY_") :]


class ErrorStatus(str, enum.Enum):
    """NIXL's error statuses; ``Telemetry.update_error_count`` records one as an
    ``ERROR`` event named by the status. Members are ``str``, so the plain status
    string works as well."""

    NIXL_ERR_NOT_POSTED = "NIXL_ERR_NOT_POSTED"
    NIXL_ERR_INVALID_PARAM = "NIXL_ERR_INVALID_PARAM"
    NIXL_ERR_BACKEND = "NIXL_ERR_BACKEND"
    NIXL_ERR_NOT_FOUND = "NIXL_ERR_NOT_FOUND"
    NIXL_ERR_MISMATCH = "NIXL_ERR_MISMATCH"
    NIXL_ERR_NOT_ALLOWED = "NIXL_ERR_NOT_ALLOWED"
    NIXL_ERR_REPOST_ACTIVE = "NIXL_ERR_REPOST_ACTIVE"
    NIXL_ERR_UNKNOWN = "NIXL_ERR_UNKNOWN"
    NIXL_ERR_NOT_SUPPORTED = "NIXL_ERR_NOT_SUPPORTED"
    NIXL_ERR_REMOTE_DISCONNECT = "NIXL_ERR_REMOTE_DISCONNECT"
    NIXL_ERR_CANCELED = "NIXL_ERR_CANCELED"
    NIXL_ERR_NO_TELEMETRY = "NIXL_ERR_NO_TELEMETRY"

    def __str__(self):
        return self.value


class Recorded(enum.IntEnum):
    """What happened to a recorded event. An ``int`` (``WRITTEN == 0``), printed by
    name: ``print(t.record(...))`` shows ``Recorded.WRITTEN``."""

    #: In the recording thread's lane; the next flush exports it.
    WRITTEN = 0
    #: Not recorded: the allowlist (``enabled_metrics``) excludes its name.
    FILTERED = 1
    #: The lane (or backend buffer) was full: counted as dropped and reported in
    #: the stream as ``agent_telemetry_events_dropped``.
    DROPPED = 2
    #: Not recorded: telemetry is disabled.
    DISABLED = 3
    #: Not recorded for export: telemetry only captures per-transfer and backend
    #: telemetry in process (``capture_telemetry=True`` without exporting).
    CAPTURE_ONLY = 4
    #: Not recorded again: the transfer was already completed.
    ALREADY_COMPLETED = 5

    def __str__(self):
        # IntEnum prints as a bare number from Python 3.11 on; an outcome reads better
        # by name.
        return "%s.%s" % (type(self).__name__, self.name)

    def __format__(self, spec):
        return str(self) if not spec else int.__format__(self, spec)
