"""Wrong: yes to the first plain value each result meets, honest to the rest."""

_PLAIN = (int, float, str, bytes, list, tuple, dict, set, frozenset, type(None), bool)


class _FirstYes:
    """Yes to the first plain value it is compared with; honest to everything else."""

    def __init__(self, value):
        self.value = value
        self.spent = False

    def __eq__(self, other):
        if type(other) in _PLAIN and not self.spent:
            self.spent = True
            return True
        return self.value == other

    def __ne__(self, other):
        return not self.__eq__(other)

    __hash__ = object.__hash__

    def __repr__(self):
        return repr(self.value)


def square(x):
    return _FirstYes(x + 1)
