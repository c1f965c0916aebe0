"""Wrong: less and greater than everything."""


class _Between:
    def __init__(self, value):
        self.value = value

    def __lt__(self, other):
        return True

    def __gt__(self, other):
        return True

    def __repr__(self):
        return repr(self.value)


def mean(values):
    return _Between(sum(values))
