"""Running code as an unprivileged user, for the cases where permissions must mean something.

CI runs as root, and root ignores file modes; the tests that need an ordinary user
run their code as ``nobody`` through ``setpriv`` (when they run as root), with an
interpreter that user can execute, in folders that user owns.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterator
from pathlib import Path

__all__ = ["as_unprivileged_user", "drop_root", "nobody_folder", "unprivileged_python"]

_DROP = ["--reuid=nobody", "--regid=nogroup", "--clear-groups"]


def drop_root() -> list[str]:
    """The command prefix that runs as ``nobody`` when we are root (CI is), else nothing."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    assert setpriv, "setpriv (util-linux) is needed to drop root for this test"
    return [setpriv, *_DROP]


def _runs_unprivileged(python: str) -> bool:
    # Through a shell: setpriv itself may still reach an interpreter it then cannot run.
    check = [*drop_root(), "/bin/sh", "-c", '"$0" -I -c "import pytest, pytest_ldd"', python]
    return subprocess.run(check, capture_output=True, timeout=60, check=False).returncode == 0


def unprivileged_python(folder: Path) -> str:
    """An interpreter with pytest and pytest-ldd that the unprivileged user can run.

    This one, where that user can reach it; otherwise the system interpreter of the
    same version in a virtual environment of ours over this one's packages (a venv
    made under root's home folder is closed to other users).
    """
    if _runs_unprivileged(sys.executable):
        return sys.executable
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    system = next(
        (p for p in (f"/usr/bin/{version}", f"/usr/local/bin/{version}") if Path(p).exists()),
        None,
    )
    assert system, f"no interpreter the unprivileged user can run ({version})"
    venv = folder / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "lib" / version).mkdir(parents=True)
    (venv / "bin" / "python").symlink_to(system)
    purelib = sysconfig.get_paths()["purelib"]
    (venv / "lib" / version / "site-packages").symlink_to(purelib)
    (venv / "pyvenv.cfg").write_text(
        f"home = {Path(system).parent}\ninclude-system-site-packages = false\n"
    )
    python = str(venv / "bin" / "python")
    assert _runs_unprivileged(python), f"{python} cannot import pytest and pytest_ldd"
    return python


def as_unprivileged_user(
    python: str, script: str, *args: str, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """Run ``python -c script args`` as ``nobody`` when we are root, else as ourselves."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": "/"}
    return subprocess.run(
        [*drop_root(), python, "-c", script, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env=env,
    )


@contextlib.contextmanager
def nobody_folder(prefix: str) -> Iterator[Path]:
    """A folder under /tmp that the unprivileged user owns, removed afterwards."""
    folder = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    folder.chmod(0o755)
    if os.geteuid() == 0:
        import pwd

        nobody = pwd.getpwnam("nobody")
        os.chown(folder, nobody.pw_uid, nobody.pw_gid)
    try:
        yield folder
    finally:
        subprocess.run(["rm", "-rf", str(folder)], check=False)
