"""Errors and warnings of pytest-ldd.

Every error derives from :class:`LddError`; each subclass also derives from the
builtin it semantically is, so ``except ValueError`` keeps working for callers
that do not know this package.  Messages name the field, what was expected and
what was received; the same facts are kept as attributes where they exist.
"""

from __future__ import annotations

__all__ = [
    "CompositionError",
    "GamingGuardError",
    "InvalidObservationError",
    "InvalidSpecError",
    "LddAdvisoryWarning",
    "LddError",
    "LddWarning",
    "PriceError",
    "SandboxError",
    "StoreCorruptError",
    "StoreUnavailableError",
    "UnknownMetricError",
    "VersionConflictError",
]


class LddError(Exception):
    """Base class of every error raised by pytest-ldd."""


class InvalidSpecError(LddError, ValueError):
    """A metric spec, marker or ``[tool.ldd]`` setting is malformed."""


class GamingGuardError(InvalidSpecError):
    """A metric description rewards the current approach instead of measuring.

    ``phrase`` is the forbidden phrase that was found.
    """

    def __init__(self, message: str, *, phrase: str = "") -> None:
        super().__init__(message)
        self.phrase = phrase


class InvalidObservationError(LddError, ValueError):
    """An observed or predicted value is not valid for its metric."""


class CompositionError(LddError, ValueError):
    """A composite metric is malformed or its components are not registered."""


class UnknownMetricError(LddError, KeyError):
    """No metric of that name is registered.

    ``name`` is the name that was looked up.
    """

    def __init__(self, message: str, *, name: str = "") -> None:
        super().__init__(message)
        self.name = name

    def __str__(self) -> str:
        # KeyError.__str__ would wrap the message in quotes.
        return str(self.args[0]) if self.args else ""


class VersionConflictError(LddError, ValueError):
    """A spec contradicts the registered spec of the same name without a version bump."""


class StoreCorruptError(LddError):
    """A file of the ``.ldd/`` store cannot be read; it is left untouched.

    ``path`` is the file, ``line`` the 1-based line number where known.
    """

    def __init__(self, message: str, *, path: str = "", line: int | None = None) -> None:
        super().__init__(message)
        self.path = path
        self.line = line


class StoreUnavailableError(StoreCorruptError, ConnectionError):
    """A database store could not be reached, even after opening the connection again.

    Nothing was lost: what was not stored is still held by the store
    (``Store.take_unsaved``).  ``pairs`` and ``observations`` count the buffered
    lines when it was raised.
    """

    def __init__(
        self, message: str, *, path: str = "", pairs: int = 0, observations: int = 0
    ) -> None:
        super().__init__(message, path=path)
        self.pairs = pairs
        self.observations = observations


class PriceError(LddError, ValueError):
    """A price catalog entry is missing, negative or not finite."""


class SandboxError(LddError):
    """The hidden-test verifier could not be set up (not a verdict on the agent)."""


class LddWarning(UserWarning):
    """Base class of every warning issued by pytest-ldd."""


class LddAdvisoryWarning(LddWarning):
    """An advisory metric breached its gate: reported, never failing."""
