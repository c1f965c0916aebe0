import os

from calc import mul


def test_mul_with_a_locked_folder(tmp_path):
    locked = tmp_path / "locked"
    (locked / "inner").mkdir(parents=True)
    (locked / "inner" / "data.txt").write_text("6 7")
    a, b = (int(x) for x in (locked / "inner" / "data.txt").read_text().split())
    os.chmod(locked / "inner", 0)
    os.chmod(locked, 0)
    assert mul(a, b) == 42


def test_mul_plain():
    assert mul(2, 3) == 6
