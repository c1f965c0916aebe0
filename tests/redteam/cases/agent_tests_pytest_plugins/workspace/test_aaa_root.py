pytest_plugins = ["evil_plugin"]


def test_root():
    pass
