"""The subject process of ``isolation="process"``: imports the workspace, answers the judge.

The judge starts ``python -I -B -X utf8 -c BOOTSTRAP`` (the ``python=`` wrapper, if
any, applies here only) and sends, on its standard input, one JSON line of settings
followed by the source of ``confinement.py``, ``wire.py`` and this file; nothing of
ours needs to be on the subject's disk.  The bootstrap confines the process with
Landlock first (it may then write only its workspace copy and scratch folders, and
read nothing of the judge's), and its hello reports what was applied.  This process
then

1. keeps its standard input and output as the request and answer pipes, points
   file descriptor 0 at ``/dev/null`` and 1 at standard error (what the workspace
   prints goes to the run's output, never into the protocol);
2. puts the workspace's ``pythonpath`` folders first on ``sys.path``;
3. answers requests -- import, get / set / delete an attribute, call, operators,
   iteration, ``len``, ``repr`` / ``str`` -- holding a table of the objects it handed
   out, until the judge closes the pipe.

Everything here is untrusted by construction: the workspace runs in this process
and can rewrite any of it.  The judge treats every byte it receives as hostile; this
file only has to make honest workspaces work.
"""

from __future__ import annotations

import builtins
import copy
import importlib
import operator
import os
import select
import sys
import traceback
import types
from typing import Any

# Loaded by BOOTSTRAP before this file runs; absent where the parent imports this module.
wire: Any = sys.modules.get("_ldd_wire")

_TRACEBACK_CHARS = 20_000
_TEXT_CHARS = 20_000

# The special methods a judge-side proxy may have; each is reported when the type has it.
SPECIAL = (
    "__call__", "__len__", "__iter__", "__next__", "__getitem__", "__setitem__",
    "__delitem__", "__contains__", "__bool__", "__enter__", "__exit__", "__reversed__",
    "__add__", "__sub__", "__mul__", "__truediv__", "__floordiv__", "__mod__", "__pow__",
    "__matmul__", "__lshift__", "__rshift__", "__and__", "__or__", "__xor__",
    "__radd__", "__rsub__", "__rmul__", "__rtruediv__", "__rfloordiv__", "__rmod__",
    "__rpow__", "__rmatmul__", "__rlshift__", "__rrshift__", "__rand__", "__ror__", "__rxor__",
    "__iadd__", "__isub__", "__imul__", "__itruediv__", "__ifloordiv__", "__imod__",
    "__ior__", "__iand__", "__ixor__",
    "__neg__", "__pos__", "__abs__", "__invert__", "__int__", "__float__", "__index__",
    "__complex__", "__round__",
)  # fmt: skip


def _call(function: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    return function(*args, **kwargs)


def _call_sync(
    function: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    positions: tuple[int, ...],
    names: tuple[str, ...],
) -> Any:
    result = function(*args, **kwargs)
    return result, tuple(args[i] for i in positions) + tuple(kwargs[n] for n in names)


def _call_method(obj: Any, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    return getattr(obj, name)(*args, **kwargs)


def _import(name: str) -> Any:
    return importlib.import_module(name)


def _dir(obj: Any) -> list[str]:
    return [str(name) for name in dir(obj)]


def _public(module: Any) -> list[str]:
    names = getattr(module, "__all__", None)
    if names is None:
        names = [name for name in vars(module) if not name.startswith("_")]
    return [str(name) for name in names]


def _lookup(obj: Any, name: str) -> Any:
    return vars(obj)[name]


def _keys(obj: Any) -> list[str]:
    return [str(name) for name in vars(obj)]


def _isinstance(obj: Any, cls: Any) -> bool:
    return isinstance(obj, cls)


OPS: dict[str, Any] = {
    "import": _import, "getattr": getattr, "setattr": setattr, "delattr": delattr,
    "call": _call, "callsync": _call_sync, "callmethod": _call_method,
    "dir": _dir, "public": _public,
    "repr": repr, "str": str, "format": format, "len": len, "iter": iter, "next": next,
    "hash": hash, "bool": bool, "isinstance": _isinstance,
    "lookup": _lookup, "keys": _keys, "copy": copy.copy, "deepcopy": copy.deepcopy,
    "eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le,
    "gt": operator.gt, "ge": operator.ge, "contains": operator.contains,
    "getitem": operator.getitem, "setitem": operator.setitem, "delitem": operator.delitem,
    "reversed": reversed, "round": round,
    "add": operator.add, "sub": operator.sub, "mul": operator.mul,
    "truediv": operator.truediv, "floordiv": operator.floordiv, "mod": operator.mod,
    "pow": operator.pow, "matmul": operator.matmul, "lshift": operator.lshift,
    "rshift": operator.rshift, "and": operator.and_, "or": operator.or_, "xor": operator.xor,
    "iadd": operator.iadd, "isub": operator.isub, "imul": operator.imul,
    "itruediv": operator.itruediv, "ifloordiv": operator.ifloordiv, "imod": operator.imod,
    "ior": operator.ior, "iand": operator.iand, "ixor": operator.ixor,
    "neg": operator.neg, "pos": operator.pos, "abs": abs, "invert": operator.invert,
    "int": int, "float": float, "index": operator.index, "complex": complex,
    "enter": lambda obj: obj.__enter__(),
    "exit": lambda obj, *exc: obj.__exit__(*exc),
}  # fmt: skip


def _defined(cls: type, name: str) -> bool:
    """Whether instances of ``cls`` have the special method (its MRO, not its metaclass)."""
    for klass in type.__dict__["__mro__"].__get__(cls):
        if name in klass.__dict__:
            return klass.__dict__[name] is not None
    return False


class JudgeFunction:
    """A callable of the judge's: calling it asks the judge; nothing else about it is known."""

    __slots__ = ("__weakref__", "_ldd_id", "_ldd_subject")

    def __init__(self, subject: Subject, ref: int) -> None:
        self._ldd_subject = subject
        self._ldd_id = ref

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._ldd_subject.peer.request("call", (self, args, kwargs))

    def __repr__(self) -> str:
        return f"<judge callable #{self._ldd_id}>"


def _block(fd: int, for_write: bool) -> None:
    """Sleep until ``fd`` is ready: the judge decides how long the subject may take."""
    poller = select.poll()
    poller.register(fd, select.POLLOUT if for_write else select.POLLIN)
    poller.poll()


class JudgeError(Exception):
    """An exception raised by judge code called back, that is not a builtin one."""


class Subject:
    """The object table and the serving loop."""

    def __init__(self, read_fd: int, write_fd: int) -> None:
        self.objects: dict[int, Any] = {}
        self.by_identity: dict[int, int] = {}
        self.sent_classes: set[int] = set()
        self.stubs: dict[int, JudgeFunction] = {}
        self.next_id = 1
        self.peer = wire.Peer(
            read_fd,
            write_fd,
            encoder=wire.Encoder(self.reference),
            decoder=wire.Decoder({b"H": self.resolve, b"J": self.stub}),
            serve=self.serve,
            fail=self.fail,
            raise_error=self.raise_error,
            wait=_block,
            spin_s=wire.SPIN_S,
        )
        self.peer.on_released = self.release

    # -- handles ---------------------------------------------------------------
    def handle(self, obj: Any) -> int:
        known = self.by_identity.get(id(obj))
        if known is not None and self.objects.get(known) is obj:
            return known
        number = self.next_id
        self.next_id += 1
        self.objects[number] = obj
        self.by_identity[id(obj)] = number
        return number

    def resolve(self, payload: Any) -> Any:
        if type(payload) is not int or payload not in self.objects:
            msg = f"unknown subject handle {payload!r:.40}"
            raise wire.WireError(msg)
        return self.objects[payload]

    def stub(self, payload: Any) -> Any:
        if type(payload) is not int:
            msg = f"malformed judge reference {payload!r:.40}"
            raise wire.WireError(msg)
        found = self.stubs.get(payload)
        if found is None:
            found = self.stubs[payload] = JudgeFunction(self, payload)
        return found

    def release(self, released: Any) -> None:
        if type(released) is not tuple:
            return
        for number in released:
            obj = self.objects.pop(number, None)
            if obj is not None and self.by_identity.get(id(obj)) == number:
                del self.by_identity[id(obj)]

    def class_records(self, cls: type) -> tuple[Any, ...]:
        records = []
        for klass in reversed(type.__dict__["__mro__"].__get__(cls)):
            number = self.handle(klass)
            if number in self.sent_classes:
                continue
            self.sent_classes.add(number)
            bases = tuple(self.handle(base) for base in klass.__bases__)
            name = klass.__name__
            builtin = name if getattr(builtins, name, None) is klass else None
            special = tuple(n for n in SPECIAL if _defined(klass, n))
            hashable = _defined(klass, "__hash__")
            is_exception = issubclass(klass, BaseException)
            records.append(
                (
                    number,
                    (
                        str(klass.__module__),
                        str(klass.__qualname__),
                        bases,
                        special,
                        builtin,
                        hashable,
                        is_exception,
                    ),
                )
            )
        return tuple(records)

    def reference(self, obj: Any) -> tuple[bytes, Any]:
        if type(obj) is JudgeFunction:
            return b"J", obj._ldd_id
        cls = type(obj)
        if isinstance(obj, types.ModuleType):
            is_package = hasattr(obj, "__path__")
            return b"H", ("m", self.handle(obj), str(obj.__name__), is_package)
        if issubclass(cls, type):
            return b"H", ("c", self.handle(obj), self.class_records(obj))
        return b"H", ("o", self.handle(obj), self.handle(cls), self.class_records(cls))

    # -- serving ---------------------------------------------------------------
    def serve(self, op: str, args: Any) -> Any:
        function = OPS.get(op)
        if function is None or type(args) is not tuple:
            msg = f"unknown request {op!r:.40}"
            raise wire.WireError(msg)
        return function(*args)

    def fail(self, exc: BaseException) -> Any:
        ref = getattr(exc, "_ldd_judge", None)
        try:
            text = str(exc)[:_TEXT_CHARS]
        except Exception:
            text = f"<{type(exc).__name__}: str() failed>"
        try:
            tb = "".join(traceback.format_exception(exc))[-_TRACEBACK_CHARS:]
        except Exception:
            tb = ""
        args = exc.args if type(exc.args) is tuple else ()
        try:
            self.peer.encoder.encode(args)
        except Exception:
            args = (text,)
        return (type(exc), args, text, tb, ref if type(ref) is JudgeFunction else exc)

    def raise_error(self, error: Any) -> BaseException:
        cls, args, text, _tb, ref = error
        exc: BaseException
        if isinstance(cls, type) and issubclass(cls, BaseException):
            try:
                exc = cls(*args)
            except Exception:
                exc = JudgeError(text)
        else:
            exc = JudgeError(text)
        exc._ldd_judge = ref  # type: ignore[attr-defined]
        return exc


class Printed:
    """``sys.stdout`` / ``sys.stderr`` of the subject: text goes to the judge's test.

    It travels before the subject's next message; past ``_FLUSH_CHARS`` it is written
    to the run's output instead, so a flood cannot pile up here.
    """

    encoding = "utf-8"
    errors = "strict"

    def __init__(self, peer: Any, stream: int) -> None:
        self._peer = peer
        self._stream = stream
        self._fd = stream

    def write(self, text: str) -> int:
        text = str(text)
        pending = sum(len(t) for s, t in self._peer.outbox if s != 3)
        if pending + len(text) > _FLUSH_CHARS:
            os.write(2, text.encode("utf-8", "replace"))
        else:
            self._peer.outbox.append((self._stream, text))
        return len(text)

    def flush(self) -> None:
        return None

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        return 2

    def writable(self) -> bool:
        return True


_FLUSH_CHARS = 4 * 1024 * 1024
_MAX_WARNINGS = 10_000


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
        if sum(1 for s, _ in peer.outbox if s == 3) < _MAX_WARNINGS:
            peer.outbox.append((3, (category, str(message), str(filename), int(lineno))))

    warnings.showwarning = showwarning


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
    confined = settings.get("confined") or {"level": "none", "detail": "not reported"}
    report = (str(confined["level"]), str(confined["detail"]))
    subject.peer.send(("r", -1, ("hello", os.getpid(), report)))
    while True:
        try:
            message = subject.peer.receive()
        except wire.PeerClosed:
            break
        if message[0] != "q":
            break
        subject.peer.serve_one(message)


BOOTSTRAP = (
    "import json,sys,types\n"
    "f=sys.stdin.buffer\n"
    "s=json.loads(f.readline())\n"
    "c={'__name__':'_ldd_confinement'}\n"
    "exec(compile(f.read(s['confinement']),'<ldd-confinement>','exec'),c)\n"
    "s['confined']=c['confine'](s['confine'])\n"
    "w=types.ModuleType('_ldd_wire')\n"
    "sys.modules['_ldd_wire']=w\n"
    "exec(compile(f.read(s['wire']),'<ldd-wire>','exec'),w.__dict__)\n"
    "g={'__name__':'_ldd_subject'}\n"
    "exec(compile(f.read(s['subject']),'<ldd-subject>','exec'),g)\n"
    "g['main'](s)\n"
    "import os\n"
    "os._exit(0)\n"
)


if __name__ == "__main__":  # pragma: no cover - the judge runs BOOTSTRAP instead
    sys.stderr.write("run by the judge through BOOTSTRAP, not directly\n")
    raise SystemExit(2)
