"""Release keys as packaging builds them: a missing part sorts after, or before, every value."""


class InfinityType:
    def __repr__(self):
        return "Infinity"

    def __hash__(self):
        return hash(repr(self))

    def __lt__(self, other):
        return False

    def __le__(self, other):
        return False

    def __eq__(self, other):
        return isinstance(other, self.__class__)

    def __gt__(self, other):
        return True

    def __ge__(self, other):
        return True

    def __neg__(self):
        return NegativeInfinity


class NegativeInfinityType:
    def __repr__(self):
        return "-Infinity"

    def __hash__(self):
        return hash(repr(self))

    def __lt__(self, other):
        return True

    def __le__(self, other):
        return True

    def __eq__(self, other):
        return isinstance(other, self.__class__)

    def __gt__(self, other):
        return False

    def __ge__(self, other):
        return False

    def __neg__(self):
        return Infinity


Infinity = InfinityType()
NegativeInfinity = NegativeInfinityType()


def key(text):
    """1.0 < 1.0.post1, and a release with no pre-release sorts after its pre-releases."""
    release, _, pre = text.partition("rc")
    parts = tuple(int(p) for p in release.split("."))
    return parts, (int(pre) if pre else Infinity)


def bound(kind):
    return Infinity if kind == "top" else NegativeInfinity
