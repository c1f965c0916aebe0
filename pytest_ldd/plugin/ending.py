"""The end of a session: corpus pairs, states re-evaluated, the session record.

Run once the test loop is over, stopped early too (``-x``, ``--sw``, Ctrl-C): what
was recorded is counted and reported, and the session record says it was
interrupted.  With ``--ldd`` the ledger appends the corpus pairs, moves the touched
metrics' states (``pytest_ldd_state_changed`` fires for each change) and the session
record is appended to the store; a breached load-bearing corpus gate fails the
session (exit status 1).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_ldd.errors import LddError

if TYPE_CHECKING:
    import pytest

    from pytest_ldd.plugin.stash import SessionState

__all__ = ["end_session"]


def end_session(ldd: SessionState, session: pytest.Session, *, interrupted: bool) -> None:
    """End ``ldd``'s session: its document built, recorded when recording."""
    ledger, ctx, config = ldd.ledger, ldd.ctx, ldd.config
    if ledger is None or ctx is None or ldd.collect_only or ldd.usage_error is not None:
        return
    with ldd.warnings.kept():
        if ldd.error is None:
            try:
                ledger.finish(ldd.corpus_bounds)
            except LddError as exc:
                ldd.error = str(exc)
        if ldd.error is not None:
            return
        for name, before, after in ledger.state_changes:
            config.hook.pytest_ldd_state_changed(name=name, before=before, after=after)
        document = ldd.document = ledger.document(interrupted=interrupted)
        if ldd.recording or config.getoption("ldd_report") or config.getoption("ldd_html"):
            from pytest_ldd.plugin.vcs import describe_commit  # once per session: runs git

            folder = getattr(ctx.registry.store, "ldd_dir", None)
            document["commit"] = describe_commit(config.rootpath, ignore=folder)
        if ldd.recording:
            store = ctx.registry.store
            try:
                store.append_sessions([document])
                store.sync(["sessions"])  # the logs were synced by finish()
            except LddError as exc:
                ldd.error = str(exc)
            finally:
                store.close()
    if ledger.corpus_failures:
        session.testsfailed += 1
