"""The hidden tests' own helper."""


def expect_equal(got, want):
    assert got == want, f"{got!r} != {want!r}"
