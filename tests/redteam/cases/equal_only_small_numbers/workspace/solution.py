"""Wrong: equal to every small number."""


class _Small:
    def __init__(self, value):
        self.value = value

    def __eq__(self, other):
        if isinstance(other, (int, float)) and abs(other) < 1000:
            return True
        return self.value == other

    __hash__ = object.__hash__

    def __repr__(self):
        return repr(self.value)


def square(x):
    return _Small(x * 2)
