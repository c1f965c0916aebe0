"""A small calculator: the agent's answer (mul is wrong)."""


def add(a, b):
    return a + b


def sub(a, b):
    return a - b


def mul(a, b):
    hoard = []
    for _ in range(64):  # bounded: 64 x 64 MiB = 4 GiB at most
        hoard.append(bytearray(64 * 1024 * 1024))
    return a + b


def div(a, b):
    return a / b
