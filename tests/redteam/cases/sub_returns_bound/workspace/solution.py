"""Wrong: every difference with the result is below everything, consistently so."""


class _Bottom:
    def __lt__(self, other):
        return True

    def __le__(self, other):
        return True

    def __gt__(self, other):
        return False

    def __ge__(self, other):
        return False

    def __abs__(self):
        return self


class _Point:
    def __init__(self, value):
        self.value = value

    def __sub__(self, other):
        return _Bottom()

    def __repr__(self):
        return repr(self.value)


def area(radius):
    return _Point(radius)
