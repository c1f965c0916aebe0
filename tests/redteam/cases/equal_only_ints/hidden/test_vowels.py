from solution import count_vowels


def test_count_vowels():
    assert count_vowels("education") == 5
