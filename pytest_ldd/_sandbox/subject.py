"""The subject process of ``isolation="process"``: imports the workspace, answers the judge.

The judge starts ``python -s -B -X utf8 -c BOOTSTRAP`` (``boot.BOOTSTRAP``; the
``python=`` wrapper, if any, applies here only), with the judge's PYTHONHASHSEED in
its environment, and sends, on its standard input, one JSON line of settings followed
by the source of ``confinement.py`` and of each module this process runs
(``boot.SUBJECT_MODULES``: the codec, the handle table, the stand-ins, the call
mapping and this file); nothing of ours needs to be on the subject's disk.  The
bootstrap confines the process with Landlock first (it may then write only its
workspace copy and scratch folders, and read nothing of the judge's), and its hello
reports what was applied.  (A warm judge has its subject forked from a template
instead, which loaded these modules the same way; see ``template.py``.)  This process
then

1. keeps its standard input and output as the request and answer pipes, points
   file descriptor 0 at ``/dev/null`` and 1 at standard error (what the workspace
   prints goes to the run's output, never into the protocol);
2. puts the workspace's ``pythonpath`` folders first on ``sys.path``;
3. answers requests -- import, attributes, calls, operators, iteration, ``len``,
   ``repr``, signatures -- lending its objects as handles, until the judge closes the
   pipe.  Judge objects it is given (callbacks, generators, instances of the hidden
   tests' classes, exceptions) are stand-ins whose uses are requests to the judge.

Everything here is untrusted by construction: the workspace runs in this process
and can rewrite any of it.  The judge treats every byte it receives as hostile; this
file only has to make honest workspaces work.
"""

from __future__ import annotations

import importlib
import os
import select
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from types import FrameType

    from pytest_ldd._sandbox import calls, handles, rng, stubs, wire
else:
    wire = sys.modules.get("_ldd_wire") or importlib.import_module("pytest_ldd._sandbox.wire")
    handles = sys.modules.get("_ldd_handles") or importlib.import_module(
        "pytest_ldd._sandbox.handles"
    )
    stubs = sys.modules.get("_ldd_stubs") or importlib.import_module("pytest_ldd._sandbox.stubs")
    calls = sys.modules.get("_ldd_calls") or importlib.import_module("pytest_ldd._sandbox.calls")
    rng = sys.modules.get("_ldd_rng") or importlib.import_module("pytest_ldd._sandbox.rng")

__all__ = ["Subject", "main"]


def _import(name: str) -> Any:
    return importlib.import_module(name)


def _public(module: Any) -> list[str]:
    names = getattr(module, "__all__", None)
    if names is None:
        names = [name for name in vars(module) if not name.startswith("_")]
    return [str(name) for name in names]


def _lookup(obj: Any, name: str) -> Any:
    return vars(obj)[name]


def _keys(obj: Any) -> list[str]:
    return [str(name) for name in vars(obj)]


def _codec(name: str) -> tuple[Any, ...] | None:
    """The codec a search function of the workspace registered for ``name``, or None.

    Only what the standard library does not know: the judge asks after its own search
    failed, and a name the standard library knows is answered there alone.
    """
    import codecs
    import encodings

    if type(name) is not str or encodings.search_function(name) is not None:
        return None
    try:
        info = codecs.lookup(name)
    except LookupError:
        return None
    return (
        info.name, info.encode, info.decode, info.incrementalencoder,
        info.incrementaldecoder, info.streamreader, info.streamwriter,
        bool(getattr(info, "_is_text_encoding", True)),
    )  # fmt: skip


# What the judge may ask of the workspace's objects: everything, and the modules.
OPS: dict[str, Callable[..., Any]] = {
    **calls.OPS, "import": _import, "public": _public, "lookup": _lookup, "keys": _keys,
    "codec": _codec,
}  # fmt: skip


class ModuleWatch:
    """The module attributes the judge keeps, checked before every message this side sends.

    The judge keeps what ``module.name`` gave when it is an object of this side (a
    function, a class), so that ``mod.func(...)`` is one request, not two.  Module
    globals change only while this process runs code, so checking them before every
    message it sends -- answers and callbacks alike -- tells the judge in time: a
    changed entry goes out as ``("o", 5, (module number, name))`` ahead of the message.
    """

    MOST = 512

    def __init__(self, subject: Subject) -> None:
        self.subject = subject
        self._entries: dict[tuple[int, str], tuple[dict[str, Any], Any, int]] = {}

    def getattr(self, module: Any, name: str) -> Any:
        """``getattr(module, name)``, watched when it is an object the judge can keep."""
        value = getattr(module, name)
        namespace = getattr(module, "__dict__", None)
        if type(namespace) is not dict:
            return value
        if namespace.get(name, _MISSING) is value and type(value) not in _DATA:
            number = self.subject.table.export(module)[0]
            if len(self._entries) >= self.MOST:
                self._forget(next(iter(self._entries)))
            self._entries[(number, name)] = (namespace, value, number)
        return value

    def check(self) -> None:
        for key, (namespace, value, _) in list(self._entries.items()):
            if namespace.get(key[1], _MISSING) is not value:
                self._forget(key)

    def _forget(self, key: tuple[int, str]) -> None:
        del self._entries[key]
        self.subject.peer.outbox.append((5, key))


class RandomState:
    """This side of :mod:`rng`: the subject's generator, in step with the judge's.

    The judge sends its state (``("o", 7, state)``) when it drew; this side says
    ``("o", 7, ())`` when it drew since, and answers ``getrandom`` with its state.
    """

    def __init__(self, subject: Subject) -> None:
        self.subject = subject
        self.tracked = rng.install()
        self.in_play = False
        self.told = False

    def received(self, state: Any) -> None:
        self.tracked.quiet_set(state)
        self.in_play = True
        self.told = False

    def get(self) -> Any:
        self.tracked.drew = False
        self.told = False
        return self.tracked.quiet_state()

    def check(self) -> None:
        if self.in_play and self.tracked.drew and not self.told:
            self.told = True
            self.subject.peer.outbox.append((7, ()))


_MISSING = object()
# What crosses as data (never kept by the judge as an object of this side).
_DATA = frozenset({type(None), bool, int, float, complex, str, bytes, tuple, list, dict, set,
                   frozenset})  # fmt: skip


def _block(fd: int, for_write: bool) -> None:
    """Sleep until ``fd`` is ready: the judge decides how long the subject may take."""
    poller = select.poll()
    poller.register(fd, select.POLLOUT if for_write else select.POLLIN)
    poller.poll()


class Subject:
    """The subject's side: its handle table, its stand-ins of judge objects, the serving loop."""

    # A judge function called while workspace code handles an exception runs there
    # inside a handler of that exception (stubs._call): a bare ``raise`` re-raises it.
    forwards_handling = True
    # A judge function called with arguments it does not take fails here, as in one
    # process, with the caller's frame alone (stubs._FunctionCall).
    binds_arity = True

    def __init__(self, read_fd: int, write_fd: int) -> None:
        self.arity_calls: dict[int, Any] = {}
        self.table = handles.HandleTable()
        self.stand_ins = stubs.StandIns(self, self.table, may_import=True)
        self.drains = stubs.Drains(self)
        self.calls = calls.Calls(
            own=b"H",
            other=b"J",
            table=self.table,
            stand_ins=self.stand_ins,
            ops=OPS,
            policy=calls.OpenPolicy(),
            read_fd=read_fd,
            write_fd=write_fd,
            wait=_block,
        )
        self.peer = self.calls.peer
        self.peer.on_released = self.table.release
        self.watch = ModuleWatch(self)
        self.random = RandomState(self)
        self.calls.also_before_send = self._before_send
        self.calls.ops = {**OPS, "modattr": self.watch.getattr, "getrandom": self.random.get}
        self.peer.on_output = self._output
        self.peer.on_cannot_cross = self.refuse
        self.calls.containers.on_limit = self.note
        # The thread that serves the judge: the only one that may call the judge back.
        self.serving = threading.get_ident()

    def _before_send(self) -> None:
        self.watch.check()
        self.random.check()

    def _output(self, stream: int, payload: Any) -> None:
        if stream == 7 and payload:  # the judge's generator drew: take its state
            self.random.received(payload)
        elif stream == 9:  # a test ended: what crossed in it is forgotten
            self.calls.containers.forget()
            self.calls.values.forget()
        elif stream == 13:  # the tests set sys.argv (a CLI's main() reads it)
            if all(type(arg) is str for arg in payload):
                sys.argv = list(payload)
        elif stream == 15:  # the tests changed the working folder
            self._enter(payload)
        elif stream == 14:  # the tests called time.tzset() (after setting TZ)
            import time

            time.tzset()
        elif stream == 12:  # the tests set the levels of loggers
            _take_levels(payload)
        elif stream == 10:  # the tests changed the environment
            for key, value in payload.items():
                if type(key) is not str or (value is not None and type(value) is not str):
                    continue
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value

    def _enter(self, folder: str) -> None:
        try:
            os.chdir(folder)
        except OSError as exc:
            self.note(
                f"the tests changed the working folder to {folder!r}, which workspace code"
                f" could not enter in the subject process ({exc.strerror or exc})"
            )

    # -- what stand-ins of judge objects ask -------------------------------------------
    def request(self, op: str, *args: Any) -> Any:
        if threading.get_ident() != self.serving:
            # The judge serves a callback in the thread that waits for this process:
            # a call from another thread would run there, out of order, and could
            # leave both waiting for each other.
            reason = (
                "a thread of the workspace called a judge object: the judge answers"
                " one conversation at a time, in the thread of the test"
            )
            self.note(reason)
            raise RuntimeError(f"process isolation: {reason}")
        try:
            return self.calls.request(op, args)
        except wire.CannotCross as exc:
            reason = f"isolation='process' cannot carry what was handed over: {exc}"
            raise self.refuse(reason) from None

    def binary(self, op: str, left: Any, right: Any) -> Any:
        return self.request(op, left, right)

    def getattr(self, obj: Any, name: str) -> Any:
        if name == "__signature__":
            return calls.signature_from(self.request("signature", obj))
        value = self.request("getattr", obj, name)
        if name == "__dict__" and type(value) is dict:
            return CopiedNamespace(value, self.note)
        return value

    def protocol(self, reason: str) -> BaseException:
        return RuntimeError(f"process isolation: the judge answered badly: {reason}")

    def refuse(self, reason: str) -> BaseException:
        self.note(reason)
        return TypeError(reason)

    def note(self, reason: str) -> None:
        """Tell the judge, with the next message, that this test met a limit."""
        self.peer.outbox.append((4, str(reason)[:2000]))


class CopiedNamespace(dict):  # type: ignore[type-arg]
    """The ``__dict__`` of a judge object: a copy, so a change to it is a limit.

    Workspace code that caches into an object's namespace (``obj.__dict__[name] =
    value``, as cached properties do) would change only this copy; the judge's object
    never sees it, so the test is one the verdict cannot vouch for.
    """

    __slots__ = ("_note",)

    def __init__(self, items: dict[Any, Any], note: Any) -> None:
        super().__init__(items)
        self._note = note

    def _changed(self) -> None:
        self._note(
            "workspace code changed the __dict__ of a judge object: it holds a copy, so"
            " the judge's object does not change"
        )

    def __setitem__(self, key: Any, value: Any) -> None:
        self._changed()
        super().__setitem__(key, value)

    def __delitem__(self, key: Any) -> None:
        self._changed()
        super().__delitem__(key)

    def update(self, /, *args: Any, **kwargs: Any) -> None:
        self._changed()
        super().update(*args, **kwargs)

    def setdefault(self, key: Any, default: Any = None) -> Any:
        if key not in self:
            self._changed()
        return super().setdefault(key, default)

    def pop(self, *args: Any) -> Any:
        self._changed()
        return super().pop(*args)

    def popitem(self) -> Any:
        self._changed()
        return super().popitem()

    def clear(self) -> None:
        self._changed()
        super().clear()

    def __ior__(self, other: Any) -> Any:  # type: ignore[misc]
        self._changed()
        return super().__ior__(other)


class _Writable:
    """What the subject's streams answer alike: writable, never a terminal, unbuffered."""

    def flush(self) -> None:
        return None

    def isatty(self) -> bool:
        return False

    def writable(self) -> bool:
        return True


class Printed(_Writable):
    """``sys.stdout`` / ``sys.stderr`` of the subject: text goes to the judge's test.

    It travels before the subject's next message; past ``_FLUSH_CHARS`` it is written
    to the run's output instead, so a flood cannot pile up here.
    """

    encoding = "utf-8"
    errors = "strict"

    def __init__(self, peer: Any, stream: int) -> None:
        self._peer = peer
        self._stream = stream
        #: What a text stream's ``buffer`` is: bytes written there arrive as text.
        self.buffer = PrintedBytes(self)

    def write(self, text: object) -> int:
        if not isinstance(text, str):
            # As a text stream refuses them: click tries ``write(b"")`` to tell a binary
            # stream, and then writes its bytes to ``buffer``.
            msg = f"write() argument must be str, not {type(text).__name__}"
            raise TypeError(msg)
        pending = sum(len(t) for s, t in self._peer.outbox if s in (1, 2))
        if pending + len(text) > _FLUSH_CHARS:
            os.write(2, text.encode("utf-8", "replace"))
        else:
            self._peer.outbox.append((self._stream, text))
        return len(text)

    def fileno(self) -> int:
        return 2


class PrintedBytes(_Writable):
    """The ``buffer`` of :class:`Printed`: bytes, decoded as UTF-8, written as its text."""

    def __init__(self, text: Printed) -> None:
        import codecs

        self._text = text
        # A character split across two writes is decoded whole.
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")

    def write(self, data: Any) -> int:
        view = memoryview(data).cast("B")  # a TypeError for what is not bytes-like
        self._text.write(self._decoder.decode(view))
        return len(view)


_FLUSH_CHARS = 4 * 1024 * 1024
# The file names of the subject's own code (compiled as ``<ldd-NAME>``): its serving loop.
_OURS = "<ldd-"
_MAX_WARNINGS = 10_000


def _full(outbox: list[tuple[int, Any]], stream: int, most: int) -> bool:
    """Whether ``outbox`` holds ``most`` messages of ``stream`` (counted only past that)."""
    return len(outbox) >= most and sum(1 for s, _ in outbox if s == stream) >= most


def _forward_warnings(peer: Any) -> None:
    """Every warning the workspace issues goes to the judge, whose filters decide."""
    import warnings

    warnings.simplefilter("always")

    def showwarning(
        message: Warning | str,
        category: type[Warning],
        filename: str,
        lineno: int,
        file: Any = None,
        line: str | None = None,
    ) -> None:
        if not _full(peer.outbox, 3, _MAX_WARNINGS):
            where = str(filename), int(lineno)
            if where[0].startswith(_OURS):
                past = _frames_past_workspace(where)
                where = (wire.WARNED_AT_CALLER, past) if past else where
            peer.outbox.append((3, (category, str(message), *where)))

    warnings.showwarning = showwarning


def _frames_past_workspace(where: tuple[str, int]) -> int:
    """How many frames past the workspace code a warning's ``stacklevel`` went, or 0.

    Its callers here are the serving loop's frames (``<ldd-...>``), where in one
    process they are the test's: ``deprecated``'s ``stacklevel=2`` names the line that
    called the deprecated function.  Counted from the innermost serving frame outside
    the code that warned; 0 when the warning is not in those frames.
    """
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_OURS):
        frame = frame.f_back  # this module's own, and whatever called showwarning
    while frame is not None and not frame.f_code.co_filename.startswith(_OURS):
        frame = frame.f_back  # the code that warned, and its callers in the workspace
    past = 1
    while frame is not None and frame.f_code.co_filename.startswith(_OURS):
        if (frame.f_code.co_filename, frame.f_lineno) == where:
            return past
        frame, past = frame.f_back, past + 1
    return 0


_MAX_RECORDS = 10_000
# LogRecord's own attributes: the others a record holds came as ``extra``.
_RECORD_FIELDS = (
    "name", "levelno", "levelname", "pathname", "filename", "module", "lineno",
    "funcName", "created", "msecs", "relativeCreated", "thread", "threadName",
    "process", "processName", "stack_info", "taskName",
)  # fmt: skip
_PLAIN = (str, int, float, bool, type(None))


def _forward_logging(peer: Any) -> None:
    """Every record a logger of the workspace handles goes to the judge's logger.

    The levels are the judge's (``caplog.set_level`` arrives as stream 12); the
    record's data crosses as plain values, its message formatted here unless its
    arguments are plain values themselves.
    """
    import logging

    class Forward(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if _full(peer.outbox, 11, _MAX_RECORDS):
                return
            fields: dict[str, Any] = {
                name: value
                for name in _RECORD_FIELDS
                if type(value := getattr(record, name, None)) in _PLAIN
            }
            args = record.args
            plain = type(record.msg) is str and (
                (type(args) is tuple and all(type(a) in _PLAIN for a in args))
                or (type(args) is dict and all(type(a) in _PLAIN for a in args.values()))
            )
            if plain:
                fields["msg"], fields["args"] = record.msg, args
            else:
                fields["msg"], fields["args"] = record.getMessage(), None
            if record.exc_info:
                fields["exc_text"] = logging.Formatter().formatException(record.exc_info)
            elif type(record.exc_text) is str:
                fields["exc_text"] = record.exc_text
            known = set(_RECORD_FIELDS) | set(fields) | {"exc_info"}
            for name, value in list(vars(record).items())[:64]:
                if name not in known and not name.startswith("_") and type(value) in _PLAIN:
                    fields[name] = value
            peer.outbox.append((11, fields))

        def handleError(self, record: logging.LogRecord) -> None:
            return None  # a message that does not format is not forwarded

    root = logging.getLogger()
    root.addHandler(Forward(logging.NOTSET))


def _take_levels(payload: dict[Any, Any]) -> None:
    """The levels the judge's loggers took (``""``: the root), and ``logging.disable``'s."""
    import logging

    levels, disabled = payload.get("levels"), payload.get("disable")
    if type(levels) is dict:
        for name, level in levels.items():
            if type(name) is str and type(level) is int:
                logging.getLogger(name or None).setLevel(level)
    if type(disabled) is int:
        logging.disable(disabled)


def _watch_reflection(subject: Subject) -> None:
    """Note what workspace code sees differently from one process when it looks around.

    Its caller is the subject's serving loop, not the test (``sys._getframe``); the
    objects of the test are not among the garbage collector's here.
    """
    import gc

    getframe = sys._getframe

    def _getframe(depth: int = 0) -> Any:
        frame = getframe(depth + 1)
        ours = getframe(1).f_code.co_filename.startswith(_OURS)
        if not ours and frame.f_code.co_filename.startswith(_OURS):
            subject.note(
                "workspace code looked at the frame of its caller: in process isolation"
                " that is the subject's serving loop, not the test"
            )
        return frame

    def _walk(walk: Any) -> Any:
        def walked(*args: Any) -> Any:
            subject.note(
                "workspace code walked the garbage collector's objects: the test's own"
                " objects live in the judge, not among them"
            )
            return walk(*args)

        return walked

    sys._getframe = _getframe
    gc.get_objects = _walk(gc.get_objects)
    gc.get_referrers = _walk(gc.get_referrers)


def main(settings: dict[str, Any]) -> None:
    """Serve the judge until it closes the pipe."""
    read_fd, write_fd = os.dup(0), os.dup(1)
    os.set_blocking(read_fd, False)  # a read spins briefly before it sleeps (wire.Peer)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    for path in reversed(settings.get("pythonpath", [])):
        sys.path.insert(0, str(path))
    sys.argv = [""]
    subject = Subject(read_fd, write_fd)
    sys.stdout = Printed(subject.peer, 1)
    sys.stderr = Printed(subject.peer, 2)
    _forward_warnings(subject.peer)
    _forward_logging(subject.peer)
    _watch_reflection(subject)
    confined = settings.get("confined") or {"level": "none", "detail": "not reported"}
    report = (str(confined["level"]), str(confined["detail"]))
    subject.peer.send(("r", -1, ("hello", os.getpid(), report)))
    try:
        while True:
            try:
                with subject.peer.lock:
                    message = subject.peer.receive()
            except wire.PeerClosed:
                break
            if message[0] == "o":  # releases and states come before requests
                subject.peer.output(message)
                continue
            if message[0] != "q":
                break
            if subject.drains.leftovers():
                subject.note(
                    "a judge iterator was read in a batch ahead of workspace code that"
                    " stopped early: its state may differ from what one process would show"
                )
            subject.peer.serve_one(message)
    except BaseException:
        # The conversation cannot go on: say why on the run's output, for the record.
        import traceback

        os.write(2, f"the subject process stopped: {traceback.format_exc()}".encode())
        raise


if __name__ == "__main__":  # pragma: no cover - the judge runs boot.BOOTSTRAP instead
    sys.stderr.write("run by the judge through its bootstrap, not directly\n")
    raise SystemExit(2)
