from solution import reverse


def test_reverse():
    assert reverse("stressed") == "desserts"
