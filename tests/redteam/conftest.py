"""The red-team folder holds hostile workspaces and hidden tests: never collect them here.

``cases/`` holds agent workspaces whose ``conftest.py``, ``pytest.ini`` and plugins
attack whatever pytest run loads them; ``hidden/`` holds the hidden tests, which only
make sense inside the sandbox.  ``test_redteam.py`` runs each case through the sandbox.
"""

collect_ignore = ["cases", "hidden"]
