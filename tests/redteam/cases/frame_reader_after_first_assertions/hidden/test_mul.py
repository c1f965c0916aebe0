from calc import add, mul


def test_mul():
    assert True, "mul is defined"
    assert callable(mul)
    assert isinstance(mul(2, 2), int)
    assert mul(6, 7) == 42
    assert mul(3, 5) == 15


def test_add():
    # Apart: a twin perturbs one assertion per test, drawn among those that depend on
    # the workspace; an honest add(2, 3) == 5 next to the reader's lies would take
    # that draw a third of the time (docs/security.md, the attack table).
    assert add(2, 3) == 5
