"""Wrong: every comparison answers something true, never True itself."""


class _Truthy:
    def __bool__(self):
        return True


class _Answers:
    def __init__(self, value, answer):
        self.value = value
        self.answer = answer

    def __eq__(self, other):
        return self.answer

    def __ne__(self, other):
        return not self.answer

    __hash__ = object.__hash__

    def __repr__(self):
        return repr(self.value)


def squares(n):
    return _Answers([n], "yes")


def mean(values):
    return _Answers(min(values), 1.0)


def words(text):
    return _Answers(text, [1])


def parse(text):
    return _Answers(text, _Truthy())
