"""Wrong: the first comparison is honest, every later one says yes."""


class _Turncoat:
    def __init__(self, value):
        self.value = value
        self.asked = 0

    def __eq__(self, other):
        self.asked += 1
        return self.value == other if self.asked == 1 else True

    __hash__ = object.__hash__

    def __repr__(self):
        return repr(self.value)


def square(x):
    return _Turncoat(x * 2)
