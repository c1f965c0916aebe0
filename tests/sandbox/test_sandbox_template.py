"""The subject's warm template: fresh subjects forked per verdict, nothing shared between them.

A warm judge asks its zygote's template (``_sandbox/template.py``) for a subject
instead of starting an interpreter.  These tests drive a template from this process,
as a judge does: the subjects it forks serve like started ones, start from the
template's clean state each time, get the judge's limits and confinement, are killed
when their judge ends, and a malformed request is refused without harm.
"""

from __future__ import annotations

import array
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sandbox_support import write_tree

from pytest_ldd._sandbox import boot, proxies
from pytest_ldd._sandbox.confinement import abi_version

HERE = Path(proxies.__file__).parent
WORKSPACE = """
import os, sys

STATE = []


def where():
    return os.getpid(), os.getppid()


def plant():
    STATE.append("planted")
    sys.modules["_ldd_subject"].PLANTED = True
    return len(STATE)


def seen():
    return list(STATE), hasattr(sys.modules["_ldd_subject"], "PLANTED")


def limit(name):
    import resource

    return list(resource.getrlimit(getattr(resource, name)))


def read(path):
    with open(path, encoding="utf-8") as file:
        return file.read()
"""


@pytest.fixture
def template() -> Iterator[boot.Template]:
    names = ("confinement", *boot.SUBJECT_MODULES, "template")
    sources = {name: (HERE / f"{name}.py").read_bytes() for name in names}
    started = boot.Template.start(sources, boot.compiled(sources))
    yield started
    started.control.close()
    started.proc.wait(timeout=10)


def _serve(
    template: boot.Template, ws: Path, *, limits: dict[str, Any] | None = None, **confine: Any
) -> proxies.Connection:
    connection = proxies.Connection.fork(
        template,
        cwd=str(ws),
        pythonpath=[str(ws)],
        deadline=time.monotonic() + 60,
        limits=limits or {},
        confine=confine or None,
    )
    assert connection.hello() is None
    return connection


def _call(connection: proxies.Connection, ws: Path, function: str, *args: Any) -> Any:
    """``work.function(*args)`` in the subject serving ``ws``, through the judge's proxies."""
    finder = proxies.WorkspaceFinder([str(ws)], connection)
    sys.meta_path.append(finder)
    try:
        sys.modules.pop("work", None)
        import work  # type: ignore[import-not-found]

        return getattr(work, function)(*args)
    finally:
        sys.meta_path.remove(finder)
        sys.modules.pop("work", None)


def test_each_subject_is_a_fresh_fork_of_the_template(
    template: boot.Template, tmp_path: Path
) -> None:
    ws = write_tree(tmp_path / "ws", {"work.py": WORKSPACE})
    first = _serve(template, ws)
    try:
        pid, parent = _call(first, ws, "where")
        assert parent == template.proc.pid
        assert _call(first, ws, "plant") == 1
        assert _call(first, ws, "seen") == (["planted"], True)
    finally:
        first.close()
    second = _serve(template, ws)
    try:
        other, parent = _call(second, ws, "where")
        assert (other != pid, parent) == (True, template.proc.pid)
        # What the first subject planted, in its module or in ours, is gone.
        assert _call(second, ws, "seen") == ([], False)
    finally:
        second.close()


def test_a_forked_subject_gets_the_judges_limits(template: boot.Template, tmp_path: Path) -> None:
    ws = write_tree(tmp_path / "ws", {"work.py": WORKSPACE})
    connection = _serve(template, ws, limits={"RLIMIT_FSIZE": [123456, 123456]})
    try:
        assert _call(connection, ws, "limit", "RLIMIT_FSIZE") == [123456, 123456]
    finally:
        connection.close()


@pytest.mark.skipif(abi_version()[0] < 1, reason="needs Landlock (CI's kernel has it)")
def test_a_forked_subject_confines_itself(template: boot.Template, tmp_path: Path) -> None:
    ws = write_tree(tmp_path / "ws", {"work.py": WORKSPACE})
    secret = write_tree(tmp_path / "secret", {"answer.txt": "42"})
    connection = _serve(template, ws, mode="landlock", write=[str(ws)], deny=[str(secret)])
    try:
        assert connection.confinement["level"] == "landlock"
        with pytest.raises(PermissionError):
            _call(connection, ws, "read", str(secret / "answer.txt"))
    finally:
        connection.close()


def _raw_request(
    template: boot.Template, request: dict[str, Any], pipes: list[tuple[int, int]]
) -> dict[str, Any]:
    """Send ``request`` with the read ends of ``pipes``; the template's answer."""
    template.control.sendmsg(
        [json.dumps(request).encode()],
        [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [r for r, _ in pipes]))],
    )
    return template.answer(str(request.get("id", "")), time.monotonic() + 10)


@pytest.fixture
def pipes() -> Iterator[list[tuple[int, int]]]:
    made = [os.pipe() for _ in range(3)]
    yield made
    for pair in made:
        for fd in pair:
            os.close(fd)


GOOD = {"judge": os.getpid(), "cwd": "/", "env": {}, "umask": 0o22, "limits": {}}


@pytest.mark.parametrize(
    ("change", "fds"),
    [
        ({"env": {"A": 1}}, 3),
        ({"limits": {"RLIMIT_RTPRIO": [1, 1]}}, 3),
        ({"limits": {"RLIMIT_AS": ["1", 1]}}, 3),
        ({"umask": "022"}, 3),
        ({"judge": 2**22 + 12345}, 3),  # no such process
        ({}, 2),
    ],
    ids=["env", "limit-name", "limit-value", "umask", "judge", "descriptors"],
)
def test_a_malformed_request_is_refused_and_the_template_keeps_serving(
    template: boot.Template,
    tmp_path: Path,
    pipes: list[tuple[int, int]],
    change: dict[str, Any],
    fds: int,
) -> None:
    answer = _raw_request(template, {**GOOD, "id": "bad", **change}, pipes[:fds])
    assert "refused" in answer
    assert "pid" not in answer
    ws = write_tree(tmp_path / "ws", {"work.py": WORKSPACE})
    connection = _serve(template, ws)
    try:
        assert _call(connection, ws, "where")[1] == template.proc.pid
    finally:
        connection.close()


def test_a_subject_whose_judge_ended_is_killed(
    template: boot.Template, pipes: list[tuple[int, int]]
) -> None:
    judge = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        answer = _raw_request(template, {**GOOD, "id": "orphan", "judge": judge.pid}, pipes)
        pid = answer["pid"]
        # The subject waits for its settings on a pipe nobody writes: alive.
        time.sleep(0.2)
        os.kill(pid, 0)
    finally:
        judge.kill()
        judge.wait()
    status = template.answer("orphan", time.monotonic() + 10)
    assert status == {"id": "orphan", "status": -signal.SIGKILL}


def test_a_template_that_is_gone_makes_fork_fail_and_says_why(
    template: boot.Template, tmp_path: Path
) -> None:
    template.proc.kill()
    template.proc.wait()
    ws = write_tree(tmp_path / "ws", {"work.py": WORKSPACE})
    with pytest.raises(boot.BootError, match="template"):
        _serve(template, ws)
    assert template.broken is not None
    with pytest.raises(boot.BootError, match="template"):
        _serve(template, ws)
