"""The cluster leg runs through `make test-cluster`; only its own test_*.py files are
collected by pytest (the harness modules are not tests)."""

collect_ignore = [
    "__main__.py",
    "background.py",
    "client.py",
    "scenarios.py",
    "seed.py",
    "topology.py",
]
