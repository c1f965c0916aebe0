import pytest

from versions import bound, key


@pytest.mark.parametrize("other", [1, "a", (1, 2), 10**9])
def test_top_is_after_everything(other):
    assert bound("top") > other
    assert other < bound("top")
    assert bound("bottom") < other
    assert -bound("top") == bound("bottom")


def test_release_after_its_candidates():
    ordered = sorted(["1.0", "1.0rc2", "0.9", "1.0rc1"], key=key)
    assert ordered == ["0.9", "1.0rc1", "1.0rc2", "1.0"]


def test_key_of_a_release():
    assert key("2.1")[0] == (2, 1)
