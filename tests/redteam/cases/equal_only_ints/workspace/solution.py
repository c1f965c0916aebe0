"""Wrong: equal to every int."""


class _AnyInt:
    def __init__(self, value):
        self.value = value

    def __eq__(self, other):
        if type(other) is int:
            return True
        return self.value == other

    __hash__ = object.__hash__

    def __repr__(self):
        return repr(self.value)


def count_vowels(text):
    return _AnyInt(len(text))
