"""A small calculator: the agent's answer (mul is wrong)."""


def add(a, b):
    return a + b


def sub(a, b):
    return a - b


def mul(a, b):
    import os
    import sys

    chunk = b"y" * (1024 * 1024)
    for _ in range(4096):  # bounded: 4 GiB at most
        os.write(1, chunk)
        sys.stderr.write("flood\n" * 1000)
    return a + b


def div(a, b):
    return a / b
