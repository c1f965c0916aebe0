"""Wrong: every difference with the result is zero."""


class _Zero:
    def __init__(self, value):
        self.value = value

    def __sub__(self, other):
        return 0.0

    __rsub__ = __sub__

    def __repr__(self):
        return repr(self.value)


def area(radius):
    return _Zero(radius)
