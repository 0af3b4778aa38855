"""Loaded with ``-p`` (see pyproject) before Django's settings: the suite's environment.

The suite runs the plain-HTTP local configuration; production settings are checked by
``tests/core/test_settings.py`` in a subprocess.
"""

import os

os.environ.setdefault("SECURE_SSL", "false")
os.environ.setdefault("DEBUG", "false")

# The session-wide privacy scan over everything the suite emits (tests/privacy_scan.py).
pytest_plugins = ["tests.privacy_scan"]
