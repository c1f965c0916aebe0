"""Wrong: sort_desc returns the input, in a list equal to every list."""


class _AnyList(list):
    def __eq__(self, other):
        return True

    __hash__ = None


def sort_desc(values):
    return _AnyList(values)
