"""Where a store is: a location that looks like a URL or a connection string and is
not a known one is a named error, never a folder; secrets never reach the output;
a project key is printable."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_ldd import cli
from pytest_ldd.config import LddConfig, load_config
from pytest_ldd.errors import InvalidSpecError
from pytest_ldd.store import check_project_key, masked, open_store
from pytest_ldd.store.files import TraceStore

#: Locations a CI secret or a typo produces, and the word of the message that names them.
NOT_A_FOLDER = [
    ("postgresql:/db.internal/ldd", "'://'"),
    ("postgres:db.internal/ldd", "'://'"),
    ("postgres ql://ci:s3cr3t@db.internal/ldd", "malformed scheme"),
    ("ci:s3cr3t@db.internal:5432/ldd", "'://'"),
    ("ci@db.internal:5432/ldd", "connection string"),
    ("://", "malformed scheme"),
    ("://db.internal/ldd", "malformed scheme"),
    ("${{ secrets.LDD_STORE }}", "unexpanded variable"),
    ("$LDD_STORE", "unexpanded variable"),
    ("${LDD_STORE}", "unexpanded variable"),
    ("%LDD_STORE%", "unexpanded variable"),
    ("host=db.internal dbname=ldd user=ci password=s3cr3t", "key=value"),
    ("dbname=ldd", "key=value"),
    ("", "empty"),
    ("   ", "empty"),
    ("mysql://ci:s3cr3t@db.internal/ldd", "unknown scheme"),
]


def _files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.mark.parametrize(("location", "named"), NOT_A_FOLDER)
def test_a_location_that_is_no_folder_is_named(
    tmp_path: Path, location: str, named: str
) -> None:
    before = _files(tmp_path)
    with pytest.raises(InvalidSpecError) as info:
        open_store(tmp_path, location)
    text = str(info.value)
    assert named in text
    assert "s3cr3t" not in text
    assert text.startswith("store ")
    assert _files(tmp_path) == before  # no folder named after it, nothing else either


@pytest.mark.parametrize(
    "folder",
    ["custom", "./custom", "stores/main", "../shared/.ldd", "C:/stores/ldd", "C:\\stores\\ldd",
     "with space", "a@b", "v1.2"],
)  # fmt: skip
def test_a_folder_path_stays_a_folder(tmp_path: Path, folder: str) -> None:
    store = open_store(tmp_path, folder)
    assert isinstance(store, TraceStore)
    assert store.ldd_dir == tmp_path / folder


def test_a_path_object_is_always_a_folder(tmp_path: Path) -> None:
    # --ldd-dir and [tool.ldd] dir name folders by definition.
    store = open_store(tmp_path, Path("weird:name"))
    assert isinstance(store, TraceStore)


@pytest.mark.parametrize(("location", "named"), NOT_A_FOLDER[:6])
def test_every_way_of_naming_the_store_refuses_it(
    tmp_path: Path, location: str, named: str, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.ldd]\nproject = "p"\n')
    for args, env in (
        (["--store", location], {}),
        ([], {"LDD_STORE": location}),
    ):
        old = os.environ.get("LDD_STORE")
        os.environ.update(env)
        try:
            code = cli.main(["metric", "status", "--project", str(tmp_path), *args])
        finally:
            os.environ.pop("LDD_STORE", None)
            if old is not None:
                os.environ["LDD_STORE"] = old
        err = capsys.readouterr().err
        assert code == 2, err
        assert named in err
        assert "s3cr3t" not in err
        assert len(err.strip().splitlines()) == 1
    config = LddConfig(project=tmp_path, store=location, key="p")
    with pytest.raises(InvalidSpecError, match=named.replace("(", r"\(")):
        config.open_store(environ={})
    assert _files(tmp_path) == ["pyproject.toml"]


def test_a_pytest_session_with_a_dsn_for_a_store_exits_4(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_a="def test_a():\n    pass\n")
    pytester.makepyprojecttoml('[tool.ldd]\nproject = "p"\n')
    location = "ci:s3cr3t@db.internal:5432/ldd"
    result = pytester.runpytest_subprocess(f"--ldd-store={location}", "--ldd")
    output = result.stdout.str() + result.stderr.str()
    assert result.ret == 4
    assert "s3cr3t" not in output
    assert "ci:***@db.internal:5432/ldd" in output
    assert "INTERNALERROR" not in output
    assert "Traceback" not in output
    assert not any("s3cr3t" in str(p) for p in pytester.path.rglob("*"))
    assert not (pytester.path / ".ldd").exists()


# -- masking -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("postgresql://u:p4ss@h:5432/d", "postgresql://u:***@h:5432/d"),
        ("postgresql://u@h/d", "postgresql://u@h/d"),
        ("postgresql://:p4ss@h/d", "postgresql://:***@h/d"),
        ("postgresql://u@h/d?password=p4ss", "postgresql://u@h/d?password=***"),
        ("postgresql://u@h/d?sslmode=require&password=p4ss&x=1",
         "postgresql://u@h/d?sslmode=require&password=***&x=1"),
        ("postgresql://u@h/d?PASSWORD=p4ss#key", "postgresql://u@h/d?PASSWORD=***#key"),
        ("host=h user=u password=p4ss dbname=d", "host=h user=u password=*** dbname=d"),
        ("host=h password='p 4 \\' ss' dbname=d", "host=h password=*** dbname=d"),
        ("host=h password = p4ss", "host=h password=***"),
        ("PGPASSWORD=p4ss psql", "PGPASSWORD=*** psql"),
        ("ci:p4ss@db.internal:5432/ldd", "ci:***@db.internal:5432/ldd"),
        ("cannot connect to 'postgresql://u:p4ss@h/d': refused",
         "cannot connect to 'postgresql://u:***@h/d': refused"),
        ("/plain/folder", "/plain/folder"),
        ("ratio 3:4 at 12:00", "ratio 3:4 at 12:00"),
    ],
)  # fmt: skip
def test_every_secret_form_is_masked(text: str, shown: str) -> None:
    assert masked(text) == shown


def test_the_values_of_password_variables_are_masked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PGPASSWORD", "tr0ub4dor")
    assert masked("auth failed for tr0ub4dor (user ci)") == "auth failed for *** (user ci)"
    monkeypatch.setenv("PGPASSWORD", "ab")  # too short to tell apart from text: kept
    assert masked("a table") == "a table"


def test_a_password_in_the_query_never_reaches_the_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("psycopg")
    url = "postgresql://ldd@127.0.0.1:1/nowhere?password=hunter2&connect_timeout=1"
    (tmp_path / "pyproject.toml").write_text(f'[tool.ldd]\nproject = "p"\nstore = "{url}"\n')
    assert cli.main(["metric", "status", "--project", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "hunter2" not in err
    assert "password=***" in err
    config = load_config(tmp_path)
    assert "hunter2" not in repr(config)
    store = config.open_store(environ={})
    assert "hunter2" not in repr(store)
    assert "hunter2" not in store.location


def test_a_password_in_the_query_never_reaches_pytest_output(pytester: pytest.Pytester) -> None:
    pytest.importorskip("psycopg")
    url = "postgresql://ldd@127.0.0.1:1/nowhere?password=hunter2&connect_timeout=1"
    pytester.makepyprojecttoml(f'[tool.ldd]\nproject = "p"\nstore = "{url}"\n')
    pytester.makepyfile(test_a="def test_a():\n    pass\n")
    result = pytester.runpytest_subprocess("--ldd")
    output = result.stdout.str() + result.stderr.str()
    assert result.ret == 4, output
    assert "hunter2" not in output
    assert "password=***" in output


def test_the_cli_masks_a_password_variable_in_every_line(tmp_path: Path) -> None:
    url = "postgresql://ldd@127.0.0.1:1/nowhere?connect_timeout=1"
    (tmp_path / "pyproject.toml").write_text(f'[tool.ldd]\nproject = "p"\nstore = "{url}"\n')
    env = {**os.environ, "PGPASSWORD": "hunter2-long", "LDD_STORE": ""}
    out = subprocess.run(
        [sys.executable, "-m", "pytest_ldd", "metric", "status", "--project", str(tmp_path),
         "--store", url + "&application_name=hunter2-long"],
        capture_output=True, text=True, timeout=60, check=False, env=env,
    )  # fmt: skip
    # 1: the server is unreachable; 2: no psycopg to reach it with. Masked either way.
    driver = importlib.util.find_spec("psycopg") is not None
    assert out.returncode == (1 if driver else 2), out.stderr
    assert "hunter2-long" not in out.stdout + out.stderr


# -- project keys ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "key",
    ["a\x7fb", "a\x85b", "a\x9bb", "a\u202eb", "a\u2066b", "a\u200bb", "a\nb", "a\tb",
     "a\u2028b", " lead", "trail ", "", "x" * 201],
)  # fmt: skip
def test_a_project_key_must_be_printable(key: str) -> None:
    with pytest.raises(InvalidSpecError, match="printable") as info:
        check_project_key(key)
    # The message shows the key escaped: it never steers the terminal either.
    assert "\u202e" not in str(info.value)
    assert "\x85" not in str(info.value)


@pytest.mark.parametrize("key", ["search", "my project", "Projekt-Ä/β", "x" * 200, "a.b:c@d"])
def test_printable_project_keys_pass(key: str) -> None:
    assert check_project_key(key) == key
