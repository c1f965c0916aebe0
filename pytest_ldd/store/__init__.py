"""The store: where a project's calibration history is kept.

- :mod:`~pytest_ldd.store.protocol`: the seam, all the registry and the calibrator
  see of a backend (:class:`Store`, :class:`Cursor`);
- :mod:`~pytest_ldd.store.location`: choosing a backend from a URL or a folder;
- :mod:`~pytest_ldd.store.document`: the registry document as every backend stores it;
- :mod:`~pytest_ldd.store.files`: the ``.ldd/`` folder, the embedded default;
- :mod:`~pytest_ldd.store.postgres`: one PostgreSQL database for a fleet.
"""

from __future__ import annotations

from pytest_ldd.store.document import SCHEMA_VERSION
from pytest_ldd.store.location import BACKENDS, check_project_key, masked, open_store
from pytest_ldd.store.protocol import (
    SAMPLE_LINES,
    Cursor,
    LogExcerpt,
    LogName,
    PairRead,
    StalePosition,
    Store,
)

__all__ = [
    "BACKENDS",
    "SAMPLE_LINES",
    "SCHEMA_VERSION",
    "Cursor",
    "LogExcerpt",
    "LogName",
    "PairRead",
    "StalePosition",
    "Store",
    "check_project_key",
    "masked",
    "open_store",
]
