"""Wrong answers dressed as builtin values whose comparisons always agree."""


class _Int(int):
    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    def __gt__(self, other):
        return True

    __hash__ = int.__hash__


class _Str(str):
    def __eq__(self, other):
        return True

    __hash__ = str.__hash__


class _List(list):
    def __eq__(self, other):
        return True


class _Float(float):
    def __eq__(self, other):
        return True

    __hash__ = float.__hash__


class _Tuple(tuple):
    def __eq__(self, other):
        return True

    __hash__ = tuple.__hash__


class _Set(set):
    def __contains__(self, item):
        return True


class _Dict(dict):
    def __eq__(self, other):
        return True


def mul(a, b):
    return _Int(a + b)


def name():
    return _Str("wrong")


def items():
    return _List([0])


def ratio():
    return _Float(0.0)


def pair():
    return _Tuple((0, 0))


def keys():
    return _Set()


def table():
    return _Dict()
