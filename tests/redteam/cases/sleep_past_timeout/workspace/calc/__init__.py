"""A small calculator: the agent's answer (mul is wrong)."""


def add(a, b):
    return a + b


def sub(a, b):
    return a - b


def mul(a, b):
    import time

    time.sleep(3600)


def div(a, b):
    return a / b
