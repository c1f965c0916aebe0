import math

import pytest

import solution
from solution import ParseError, Stack, add


def test_bare_assert():
    assert add(2, 3) == 5


def check(candidate):
    assert candidate(1, 1) == 2
    assert candidate(-1, 1) == 0
    assert candidate(10, 5) == 15


def test_check_helper():
    check(add)


@pytest.mark.parametrize(("a", "b", "want"), [(1, 2, 3), (2, 2, 4), (5, -2, 3)])
def test_parametrized(a, b, want):
    assert add(a, b) == want


def test_class_based():
    s = Stack()
    s.push(1)
    s.push(2)
    assert len(s) == 2
    assert s.pop() == 2
    assert s.pop() == 1
    assert isinstance(s, Stack)


def test_generator():
    gen = solution.count_up(4)
    assert next(gen) == 0
    assert list(gen) == [1, 2, 3]


def test_iterator():
    assert [x for x in solution.squares(4)] == [0, 1, 4, 9]


def test_raises_builtin():
    with pytest.raises(KeyError):
        solution.lookup({}, "k")
    try:
        solution.lookup({"a": 1}, "k")
    except KeyError as exc:
        assert exc.args == ("k",)


def test_raises_workspace_exception():
    with pytest.raises(ParseError, match="not a number"):
        solution.parse("x")
    with pytest.raises(ValueError):
        solution.parse("y")
    assert solution.parse("12") == 12


def test_raises_recursion_error():
    # The workspace's own RecursionError reaches the test; the subject serves on.
    with pytest.raises(RecursionError):
        solution.descend(0)
    assert add(1, 1) == 2


def test_tmp_path_file(tmp_path):
    out = solution.write_report(tmp_path / "r.txt", ["a", "b"])
    assert out == tmp_path / "r.txt"
    assert (tmp_path / "r.txt").read_text() == "a\nb"


def test_key_callback():
    assert solution.sort_by(["bb", "a", "ccc"], key=len) == ["a", "bb", "ccc"]
    assert solution.sort_by([3, 1, 2], key=lambda v: -v) == [3, 2, 1]


def test_monkeypatch_workspace_module(monkeypatch):
    monkeypatch.setattr(solution, "now", lambda: 42.0)
    assert solution.stamp() == "at 42"


def test_monkeypatch_was_undone():
    assert solution.now() > 1_000_000


def test_approx():
    assert solution.mean([0.1, 0.2]) == pytest.approx(0.15)


def test_isclose():
    assert math.isclose(solution.mean([1.0, 2.0, 4.0]), 7 / 3)


def test_hidden_conftest_fixture(numbers):
    assert solution.sort_by(numbers, key=None) == [1, 2, 3]


def test_namedtuple_result():
    point = solution.origin()
    assert point == (0, 0)
    assert point.x == 0


def test_printed_output(capsys):
    solution.greet("ada")
    assert capsys.readouterr().out == "hello ada\n"


def test_argument_changed_in_place():
    nums = [3, 1, 2]
    seen = {}
    solution.sort_in_place(nums, seen=seen)
    assert nums == [1, 2, 3]
    assert seen == {"count": 3}


def test_warnings():
    with pytest.warns(DeprecationWarning, match="old_api is deprecated"):
        solution.old_api()
    with pytest.warns(solution.SolutionWarning):
        solution.old_api()
