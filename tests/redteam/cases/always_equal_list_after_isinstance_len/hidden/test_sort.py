from solution import sort_desc


def test_sort_desc():
    result = sort_desc([1, 3, 2])
    assert isinstance(result, list)
    assert len(result) > 0
    assert result == [3, 2, 1]
