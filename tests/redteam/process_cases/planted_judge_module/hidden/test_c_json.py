try:  # the faster one where it is installed
    import simplejson as json
except ImportError:
    import json


def test_round_trip():
    assert json.loads(json.dumps({"a": [1, 2]})) == {"a": [1, 2]}
