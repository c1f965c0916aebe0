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

from pytest_ldd.errors import LddError, StoreUnavailableError

if TYPE_CHECKING:
    import pytest

    from pytest_ldd.plugin.stash import SessionState

__all__ = ["end_session"]


def end_session(ldd: SessionState, session: pytest.Session, *, interrupted: bool) -> None:
    """End ``ldd``'s session: its document built, recorded when recording.

    Only the process that started the session ends it: a child forked by a test
    that returns into pytest instead of exiting must not record it a second time.
    """
    ledger, ctx, config = ldd.ledger, ldd.ctx, ldd.config
    if ledger is None or ctx is None or ldd.collect_only or ldd.usage_error is not None:
        return
    if not ldd.owns_session():
        return
    ldd.write_pending()
    outage: StoreUnavailableError | None = None
    with ldd.warnings.kept():
        if ldd.error is None:
            try:
                ledger.finish(ldd.corpus_bounds)
            except StoreUnavailableError as exc:
                outage = exc
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
                if outage is None:
                    store.append_sessions([document])
                    store.sync(["sessions"])  # the logs were synced by finish()
            except StoreUnavailableError as exc:
                outage = exc
            except LddError as exc:
                ldd.error = str(exc)
            finally:
                if outage is not None:
                    _spill(ldd, session, outage, document)
                store.close()
    if ledger.corpus_failures:
        session.testsfailed += 1


def _spill(
    ldd: SessionState,
    session: pytest.Session,
    outage: StoreUnavailableError,
    document: dict[str, object],
) -> None:
    """Keep what the store could not take beside the project, and fail the session.

    The folder (``.ldd-spill/<session id>/`` in the rootdir) is laid out as ``ldd
    store export`` writes a store, so ``ldd store import`` loads it once the store is
    back.  The session fails (exit status 1) with a line saying how many pairs and
    observations were not stored and where they are.
    """
    from pytest_ldd.calibration.transfer import SPILL_DIR, spill

    ctx = ldd.ctx
    assert ctx is not None
    store = ctx.registry.store
    observations, pairs = store.take_unsaved()
    # In registration order: components before the composites made of them.
    specs = [ctx.registry.spec(name).to_json() for name in ctx.registry.names()]
    folder = ldd.config.rootpath / SPILL_DIR / ctx.session_id
    what = f"{len(pairs)} pairs and {len(observations)} observations of this session"
    try:
        spill(folder, observations=observations, pairs=pairs, sessions=[document], specs=specs)
    except LddError as exc:
        ldd.end_errors.append(
            f"pytest-ldd: {what} were not stored ({outage}), and could not be kept in "
            f"{folder} either ({exc}): they are lost"
        )
    else:
        ldd.end_errors.append(
            f"pytest-ldd: {what} were not stored ({outage}); they are kept in {folder}: "
            f"load them with `ldd store import {folder}` once the store is back"
        )
    session.testsfailed += 1
