"""The global random generator of the judge and of the subject, kept in step.

A hidden test that calls ``random.seed(n)`` and then workspace code that draws from
``random`` expects the numbers one process would give; so does a test that draws
after workspace code did.  With two processes there are two generators, so each
side replaces ``random``'s module-level generator by a :class:`TrackedRandom` (the
same generator, that also notes when it draws), and the judge keeps them in step
once a test seeded its own:

- before each request, if the judge drew (or seeded) since the last exchange, it
  sends its state (``random``);
- before each message, if the subject drew since, it says so (``("o", 7, ())``),
  and the judge takes the subject's state (``getrandom``) before its own next draw.

A test that never seeds pays nothing: its draws were not reproducible anyway.  This
module imports only the standard library; both sides load it from a file.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

__all__ = ["TrackedRandom", "install"]

# The module-level functions of ``random`` that are methods of its generator.
_FUNCTIONS = (
    "seed", "random", "uniform", "triangular", "randint", "choice", "randrange", "sample",
    "shuffle", "choices", "normalvariate", "lognormvariate", "expovariate", "vonmisesvariate",
    "gammavariate", "gauss", "betavariate", "paretovariate", "weibullvariate", "getstate",
    "setstate", "getrandbits", "randbytes", "binomialvariate",
)  # fmt: skip


class TrackedRandom(random.Random):
    """``random.Random`` that calls ``before_draw`` and notes ``drew`` on every draw.

    Every draw of ``random.Random`` goes through :meth:`random` or
    :meth:`getrandbits`; ``seed`` and ``setstate`` call ``on_seed``.
    """

    def __init__(self) -> None:
        self.drew = False
        self.before_draw: Callable[[], None] | None = None
        self.on_seed: Callable[[], None] | None = None
        super().__init__()

    def random(self) -> float:
        if self.before_draw is not None:
            self.before_draw()
        self.drew = True
        return super().random()

    def getrandbits(self, k: int) -> int:
        if self.before_draw is not None:
            self.before_draw()
        self.drew = True
        return super().getrandbits(k)

    def seed(self, /, *args: Any, **kwargs: Any) -> None:
        super().seed(*args, **kwargs)
        if getattr(self, "on_seed", None) is not None:
            self.on_seed()  # type: ignore[misc]

    def setstate(self, state: Any) -> None:
        super().setstate(state)
        if getattr(self, "on_seed", None) is not None:
            self.on_seed()  # type: ignore[misc]

    def quiet_state(self) -> Any:
        """The state, read without counting as a draw."""
        return super().getstate()

    def quiet_set(self, state: Any) -> None:
        """Take ``state`` without counting it as a seed or a draw."""
        random.Random.setstate(self, state)
        self.drew = False


def install() -> TrackedRandom:
    """Make ``random``'s module-level functions use a :class:`TrackedRandom`, in its state."""
    tracked = TrackedRandom()
    random.Random.setstate(tracked, random.getstate())
    random._inst = tracked
    for name in _FUNCTIONS:
        if hasattr(tracked, name):
            setattr(random, name, getattr(tracked, name))
    return tracked
