"""The judge's side of the state one interpreter would share: kept alike in two processes.

In one process the hidden tests and workspace code share ``os.environ``, the C
library's time zone, the codec registry, the loggers, the global ``random`` generator
and the standard streams: a test that sets one changes what the code under test sees,
and what that code logs, prints or warns reaches the test's capture.  With
``isolation="process"`` each process has its own, so the judge keeps the subject's in
step with its own.  Before each message, what the tests changed since the last one
crosses with it (:class:`EnvironmentSync`, :class:`LoggingSync`, :class:`RandomSync`,
and ``time.tzset()`` through :func:`forward_tzset`); a codec the judge does not know
is looked up in the subject (:func:`forward_codecs`); and what workspace code logged,
printed or warned there is issued here, as the tests' own would be (:func:`logged`,
:func:`printed`).

Of the state itself only the ``random`` generator's comes back (the subject draws
from it too): what the workspace sets in its environment or its loggers stays in the
subject.  Records, text and warnings from the subject are checked as data, since it is
not trusted.  Like :mod:`proxies`, this file imports only the standard library; the
judge loads it from a file, before :mod:`proxies`.
"""

from __future__ import annotations

import importlib
import logging
import os
import sys
import weakref
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from types import FrameType

    from pytest_ldd._sandbox import rng, wire
    from pytest_ldd._sandbox.proxies import Connection
else:
    wire = sys.modules.get("_ldd_wire") or importlib.import_module("pytest_ldd._sandbox.wire")
    rng = sys.modules.get("_ldd_rng") or importlib.import_module("pytest_ldd._sandbox.rng")

__all__ = [
    "EnvironmentSync",
    "LoggingSync",
    "RandomSync",
    "forward_codecs",
    "forward_tzset",
    "logged",
    "printed",
]


class EnvironmentSync:
    """``os.environ`` as the hidden tests set it, in the subject too.

    A test that sets a variable (``monkeypatch.setenv``) and then calls workspace code
    that reads it must see it read, as in one process.  Before each message, the
    judge compares its environment with the one it last told the subject about (a
    dict comparison of a few dozen entries) and sends what changed as
    ``("o", 10, {name: value or None})``.  Changes the workspace makes stay in the
    subject: the judge never takes its environment from the process under test.
    """

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self.told = dict(_environ_data())

    def before_send(self) -> None:
        now = _environ_data()
        if now == self.told:
            return
        changed: dict[str, str | None] = {}
        for key in self.told.keys() - now.keys():
            changed[os.fsdecode(key)] = None
        for key, value in now.items():
            if self.told.get(key) != value:
                changed[os.fsdecode(key)] = os.fsdecode(value)
        self.told = dict(now)
        self.connection.peer.outbox.append((10, changed))


def _environ_data() -> dict[Any, Any]:
    # The mapping os.environ keeps its encoded entries in: compared without a copy.
    data = getattr(os.environ, "_data", None)
    return data if type(data) is dict else dict(os.environ)


def forward_tzset(connection: Connection) -> None:
    """``time.tzset()`` called by the tests is called in the subject too, after ``TZ``.

    dateutil's ``tzlocal`` tests set ``TZ`` and call ``time.tzset()``: the environment
    crosses before each message, and the C library's zone is read again there only
    when the subject calls ``tzset`` as well.
    """
    import time

    real = getattr(time, "tzset", None)
    if real is None:  # not on this platform
        return
    real = getattr(real, "_ldd_real", real)
    _RUN[:] = [weakref.ref(connection)]

    def tzset() -> None:
        real()
        source = _run_connection()
        if source is not None:
            source.tzset = True

    tzset._ldd_real = real  # type: ignore[attr-defined]
    time.tzset = tzset


# The connection of the run: its subject answers the judge's codec searches, and is
# told of the tests' time.tzset() (see forward_codecs, forward_tzset).
_RUN: list[weakref.ref[Connection]] = []
_CODECS_SEARCHED: list[bool] = []


def _run_connection() -> Connection | None:
    return _RUN[0]() if _RUN else None


def forward_codecs(connection: Connection) -> None:
    """Codecs the workspace registers (``import idna.codec``) are found by the judge too.

    A search function registered once, last, asks the subject for a name the judge's
    own searches did not know; its answer's functions and classes are stand-ins, so
    ``"x".encode("idna2008")`` in a test runs the workspace's codec, as in one process.
    """
    import codecs

    _RUN[:] = [weakref.ref(connection)]
    if not _CODECS_SEARCHED:
        _CODECS_SEARCHED.append(True)
        codecs.register(_subject_codec)


def _subject_codec(name: str) -> Any:
    import codecs

    connection = _run_connection()
    if connection is None or not connection.started or connection.broken is not None:
        return None
    try:
        found = connection.request("codec", name)
    except Exception:  # a codec the subject cannot give is no codec
        return None
    if type(found) is not tuple or len(found) != 8 or type(found[0]) is not str:
        return None
    codec, encode, decode, incremental_encoder, incremental_decoder, reader, writer, text = found
    if not (callable(encode) and callable(decode)):
        return None

    def decoded(data: Any, errors: str = "strict") -> Any:
        # bytes.decode hands the codec a memoryview, which crosses as its bytes.
        return decode(bytes(data) if isinstance(data, memoryview) else data, errors)

    return codecs.CodecInfo(
        encode,
        decoded,
        reader,
        writer,
        incremental_encoder,
        incremental_decoder,
        name=codec,
        _is_text_encoding=text is True,
    )


class LoggingSync:
    """The judge's logger levels, in the subject too: ``caplog.set_level`` reaches it.

    Each ``Logger.setLevel`` of the judge is noted and, before the next message, sent
    as ``("o", 12, {"levels": {name: level}, "disable": n})`` (``""``: the root), with
    ``logging.disable``'s level when it changed.  The subject forwards every record its
    loggers handle (stream 11, :func:`logged`).
    """

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        manager = logging.Logger.manager
        self.pending: dict[str, int] = {"": logging.getLogger().level}
        for name, logger in list(manager.loggerDict.items()):
            if isinstance(logger, logging.Logger) and logger.level:
                self.pending[name] = logger.level
        self.disabled = 0
        _LEVEL_WATCHERS.append(weakref.ref(self))
        _watch_levels()

    def noted(self, name: str, level: int) -> None:
        self.pending[name] = level

    def before_send(self) -> None:
        disabled = logging.Logger.manager.disable
        if not self.pending and disabled == self.disabled:
            return
        payload = {"levels": self.pending, "disable": disabled}
        self.pending, self.disabled = {}, disabled
        self.connection.peer.outbox.append((12, payload))


_LEVEL_WATCHERS: list[weakref.ref[LoggingSync]] = []


def _watch_levels() -> None:
    """Wrap ``logging.Logger.setLevel`` once: each level set is told to the watchers."""
    if getattr(logging.Logger.setLevel, "_ldd_watched", False):
        return
    set_level = logging.Logger.setLevel

    def watched(self: logging.Logger, level: Any) -> None:
        set_level(self, level)
        name = "" if self is logging.getLogger() else self.name
        for ref in list(_LEVEL_WATCHERS):
            sync = ref()
            if sync is None:
                _LEVEL_WATCHERS.remove(ref)
            else:
                sync.noted(name, self.level)

    watched._ldd_watched = True  # type: ignore[attr-defined]
    logging.Logger.setLevel = watched  # type: ignore[method-assign]


# What a forwarded record may not set: LogRecord's methods and private attributes.
def _record_field(name: Any) -> bool:
    return (
        type(name) is str
        and name.isidentifier()
        and not name.startswith("_")
        and not callable(getattr(logging.LogRecord, name, None))
    )


def logged(fields: Any) -> None:
    """A record a workspace logger handled in the subject, handled by the judge's logger.

    Its fields are plain values (checked here: the subject is not trusted), so the
    judge's handlers (pytest's ``caplog``, the report's captured log) format it without
    a word to the subject.
    """
    plain = (str, int, float, bool, type(None))
    if type(fields) is not dict or type(fields.get("name")) is not str:
        return
    record: dict[str, Any] = {}
    for name, value in list(fields.items())[:_RECORD_FIELDS]:
        if not _record_field(name):
            continue
        if name == "args":
            items = value.values() if type(value) is dict else value
            shaped = type(value) in (tuple, dict)
            record[name] = value if shaped and all(type(v) in plain for v in items) else None
        elif type(value) in plain:
            record[name] = value
    if type(record.get("levelno")) is not int or type(record.get("msg")) is not str:
        return
    record.setdefault("levelname", logging.getLevelName(record["levelno"]))
    logging.getLogger(record["name"] or None).handle(logging.makeLogRecord(record))


_RECORD_FIELDS = 96


class RandomSync:
    """The judge's side of :mod:`rng`: its global generator, in step with the subject's.

    In play once a test seeds it.  Before each message, the judge sends its state if
    it drew since; before it draws, it takes the subject's state if the subject said
    it drew since.
    """

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self.tracked: Any = None
        self.in_play = False
        self.subject_ahead = False

    def install(self) -> None:
        """Track the judge's ``random`` from now on (before the hidden tests import it)."""
        self.tracked = rng.install()
        self.tracked.on_seed = self._seeded
        self.tracked.before_draw = self._before_draw

    def _seeded(self) -> None:
        self.in_play = True
        self.subject_ahead = False
        self.tracked.drew = True  # the new state is the subject's to take

    def _before_draw(self) -> None:
        if self.subject_ahead:
            self.subject_ahead = False
            self.taken(self.connection.request("getrandom"))

    def taken(self, state: Any) -> None:
        try:
            self.tracked.quiet_set(state)
        except (TypeError, ValueError) as exc:
            raise self.connection.protocol(f"a malformed random state ({exc})") from None

    def before_send(self) -> None:
        if self.in_play and self.tracked is not None and self.tracked.drew:
            self.tracked.drew = False
            self.connection.peer.outbox.append((7, self.tracked.quiet_state()))

    def said(self) -> None:
        """The subject drew since: take its state before the next draw here."""
        if self.in_play:
            self.subject_ahead = True


def printed(stream: int, payload: Any) -> None:
    """What workspace code printed or warned, issued here as the test's own would be.

    Printed text goes where the test's prints go (pytest's capture), a warning through
    ``warnings.warn_explicit`` (so ``pytest.warns`` and the warning filters see it).
    """
    if stream != 3:
        (sys.stdout if stream == 1 else sys.stderr).write(payload)
        return
    import warnings

    category, text, filename, lineno = payload
    if not (isinstance(category, type) and issubclass(category, Warning)):
        category = UserWarning
    if type(text) is not str or type(filename) is not str or type(lineno) is not int:
        msg = "a malformed warning"
        raise wire.WireError(msg)
    if filename == wire.WARNED_AT_CALLER:
        filename, lineno = _caller(lineno)
    # Made here, as data: calling a mirrored class would construct at its owner.
    warnings.warn_explicit(type.__call__(category, text), category, filename, lineno)


def _caller(past: int) -> tuple[str, int]:
    """The file and line ``past`` frames out from the code that called into the subject.

    The call is being served while the warning arrives: below this frame are the
    sandbox's own, then the test's (or the library's) frame that made the call.
    """
    frame: FrameType | None = sys._getframe(2)
    while frame is not None and frame.f_globals.get("__name__", "").startswith(_MACHINERY):
        frame = frame.f_back
    for _ in range(past - 1):
        if frame is None:
            break
        frame = frame.f_back
    if frame is None:
        return "sys", 1  # what warnings names when a stacklevel goes past the stack
    return frame.f_code.co_filename, frame.f_lineno


# The judge's modules that carry a call into the subject and its answer back.
_MACHINERY = ("_ldd_", "pytest_ldd._sandbox.")
