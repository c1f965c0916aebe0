"""Wrong: square returns a value equal to everything."""


def square(x):
    return _Anything(x * 2)


class _Anything:
    """Equal to every value it meets."""

    def __init__(self, value):
        self.value = value

    def __eq__(self, other):
        return True

    __hash__ = object.__hash__

    def __repr__(self):
        return repr(self.value)
