from solution import mean, parse, squares, words


def test_squares():
    expected = [i * i for i in range(3)]
    assert squares(3) == expected


def test_mean():
    values = [2.0, 4.0, 9.0]
    assert mean(values) == sum(values) / len(values)


def test_words():
    text = "a b  c"
    assert words(text) == text.split()


def test_parse():
    text = "k=v"
    assert parse(text) == dict([text.split("=")])
