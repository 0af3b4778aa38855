"""Loaded with ``-p`` (see pyproject) before Django's settings: the suite's environment.

The suite runs the plain-HTTP local configuration; production settings are checked by
``tests/core/test_settings.py`` in a subprocess.
"""

import os

os.environ.setdefault("SECURE_SSL", "false")
os.environ.setdefault("DEBUG", "false")

# The session-wide privacy scan over everything the suite emits (tests/privacy_scan.py).
pytest_plugins = ["tests.privacy_scan"]


def pytest_collectstart(collector):
    """schemathesis's pytest plugin (with hypothesis and trio behind it) costs seconds to
    import and only ``tests/core/test_schemathesis.py`` uses it: pyproject turns off its
    automatic loading (``-p no:schemathesis``) and it is loaded here, just before that
    module is collected (its ``pytest_configure`` is replayed for a late plugin)."""
    path = getattr(collector, "path", None)
    if path is None or path.name != "test_schemathesis.py":
        return
    manager = collector.config.pluginmanager
    if manager.get_plugin("schemathesis.pytest.plugin") is None:
        manager.import_plugin("schemathesis.pytest.plugin")
