"""Workspaces and hidden tests of tests/sandbox/test_sandbox_process.py: only the sandbox runs them."""

collect_ignore = ["good", "wrong", "hidden"]
