"""Hostile workspaces of tests/redteam/test_redteam_process.py: never collected here."""

collect_ignore_glob = ["*"]
