"""The commit a session ran on: git status once, or .git read directly."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from plugin_support import run

from pytest_ldd.plugin.vcs import DIRTY_SUFFIX, SHORT_LENGTH, describe_commit, read_head

GIT = shutil.which("git")
needs_git = pytest.mark.skipif(GIT is None and not os.environ.get("CI"), reason="needs git")

_IDENTITY = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.org",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.org",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, **_IDENTITY}
    done = subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=env
    )
    return done.stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository with one commit: a tracked file and a tracked ``.ldd`` log."""
    root = tmp_path / "repo"
    (root / ".ldd").mkdir(parents=True)
    (root / "code.py").write_text("x = 1\n")
    (root / ".ldd" / "observations.jsonl").write_text("")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "first")
    return root


def head(repo: Path) -> str:
    return git(repo, "rev-parse", "HEAD")[:SHORT_LENGTH]


@needs_git
def test_clean_work_tree_gives_the_short_hash(repo: Path) -> None:
    described = describe_commit(repo, ignore=repo / ".ldd")
    assert described == head(repo)
    assert len(described) == SHORT_LENGTH


@needs_git
def test_a_changed_tracked_file_is_dirty(repo: Path) -> None:
    (repo / "code.py").write_text("x = 2\n")
    assert describe_commit(repo, ignore=repo / ".ldd") == head(repo) + DIRTY_SUFFIX


@needs_git
def test_staged_changes_and_renames_are_dirty(repo: Path) -> None:
    git(repo, "mv", "code.py", "moved.py")
    assert describe_commit(repo) == head(repo) + DIRTY_SUFFIX


@needs_git
def test_the_ldd_folder_and_untracked_files_do_not_count(repo: Path) -> None:
    (repo / ".ldd" / "observations.jsonl").write_text('{"a": 1}\n')
    (repo / "untracked.txt").write_text("new\n")
    assert describe_commit(repo, ignore=repo / ".ldd") == head(repo)
    # Without the exclusion the store's own change is a change like any other.
    assert describe_commit(repo) == head(repo) + DIRTY_SUFFIX


@needs_git
def test_a_subfolder_sees_changes_anywhere_in_the_work_tree(repo: Path) -> None:
    sub = repo / "pkg"
    sub.mkdir()
    (repo / "code.py").write_text("x = 3\n")
    assert describe_commit(sub, ignore=sub / ".ldd") == head(repo) + DIRTY_SUFFIX


@needs_git
def test_an_ignore_folder_outside_the_project_is_not_passed_to_git(
    repo: Path, tmp_path: Path
) -> None:
    assert describe_commit(repo, ignore=tmp_path / "elsewhere" / ".ldd") == head(repo)


@needs_git
def test_no_repository_or_no_commit_is_none(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    assert describe_commit(plain) is None
    assert read_head(plain) is None
    empty = tmp_path / "empty"
    empty.mkdir()
    git(empty, "init", "-q")
    assert describe_commit(empty) is None
    assert read_head(empty) is None


@needs_git
def test_read_head_follows_loose_and_packed_refs_and_detached_heads(repo: Path) -> None:
    expected = head(repo)
    assert read_head(repo) == expected
    git(repo, "pack-refs", "--all")
    assert not any((repo / ".git" / "refs" / "heads").iterdir())
    assert read_head(repo) == expected
    git(repo, "checkout", "-q", "--detach")
    assert read_head(repo / "sub-does-not-exist") == expected


@needs_git
def test_read_head_in_a_linked_work_tree(repo: Path, tmp_path: Path) -> None:
    (repo / "code.py").write_text("x = 5\n")
    git(repo, "commit", "-q", "-am", "second")
    linked = tmp_path / "linked"
    git(repo, "worktree", "add", "-q", "-b", "other", str(linked), "HEAD~1")
    assert (linked / ".git").is_file()
    assert read_head(linked) == git(linked, "rev-parse", "HEAD")[:SHORT_LENGTH]
    assert read_head(linked) != head(repo)
    assert describe_commit(linked) == read_head(linked)


@needs_git
def test_without_a_git_executable_head_is_read_from_the_folder(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (repo / "code.py").write_text("x = 4\n")
    expected = head(repo)
    monkeypatch.setenv("PATH", str(repo / "no-such-bin"))
    # The work tree differs, but nothing can tell without git: no +dirty claim.
    assert describe_commit(repo) == expected


@needs_git
def test_a_recording_session_records_its_commit_running_git_once(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert GIT is not None
    log = tmp_path / "git-calls.log"
    shim = tmp_path / "bin"
    shim.mkdir()
    (shim / "git").write_text(f'#!/bin/sh\necho "$@" >> "{log}"\nexec "{GIT}" "$@"\n')
    (shim / "git").chmod(0o755)
    pytester.makepyfile(
        test_values="""
        import pytest
        from pytest_ldd import Observation

        @pytest.mark.metric("latency", kind="positive", unit="ms", description="latency")
        @pytest.mark.parametrize("case", range(3))
        def test_latency(case):
            yield Observation("latency", 10.0 + case)
        """
    )
    git(pytester.path, "init", "-q")
    git(pytester.path, "add", "test_values.py")
    git(pytester.path, "commit", "-q", "-m", "suite")
    pytester.makefile(".txt", notes="untracked: not a change")
    monkeypatch.setenv("PATH", f"{shim}{os.pathsep}{os.environ['PATH']}")
    # pytest-benchmark runs git six times at every session's end, for its own
    # commit record: only pytest-ldd's calls are counted here.
    result = run(pytester, "--ldd", "-p", "no:benchmark")
    assert result.ret == 0
    calls = log.read_text().splitlines()
    assert len(calls) == 1, calls
    assert " status " in f" {calls[0]} "
    session = json.loads((pytester.path / ".ldd" / "sessions.jsonl").read_text().splitlines()[-1])
    assert session["commit"] == head(pytester.path)
    # A changed tracked file shows in the next session.
    (pytester.path / "test_values.py").write_text(
        (pytester.path / "test_values.py").read_text() + "\n# edited\n"
    )
    run(pytester, "--ldd")
    last = json.loads((pytester.path / ".ldd" / "sessions.jsonl").read_text().splitlines()[-1])
    assert last["commit"] == head(pytester.path) + DIRTY_SUFFIX


def test_a_session_outside_a_repository_records_null(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(
        test_values="""
        import pytest

        @pytest.mark.metric("latency", kind="positive", unit="ms", description="latency")
        def test_latency():
            yield 1.0
        """
    )
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(pytester.path.parent))
    assert run(pytester, "--ldd").ret == 0
    session = json.loads((pytester.path / ".ldd" / "sessions.jsonl").read_text())
    assert "commit" in session
    assert session["commit"] is None
