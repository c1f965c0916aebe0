"""Runs at interpreter start-up if found: loads a plugin forcing passes."""
import os

os.environ["PYTEST_PLUGINS"] = "evil_plugin"
