"""Every write and use case of the preferences app.

``journal`` holds the explicit Agent preference journal (Part A); ``recall`` the
semantic preference recall hook (Part B); ``reads`` the reads that apply the journal's
rules (the view, the history page with its state, the turn-start projection — plain
reads such as the observation are ``preferences.selectors``). Import the package:
``from preferences import services`` then ``services.remember(...)``,
``services.read(...)``, ``services.recall(...)``.

The recall half (provider runtime, extensions, subprocess plumbing) is imported on first
use, so a journal-only CLI call does not pay for it. Use it through this package
(``services.recall(...)``); do not import the submodule ``preferences.services.recall``
directly — importing it binds the package attribute ``recall`` to the module itself.
"""

import importlib

#: Where each journal function lives; imported on first use, so a read never loads the
#: write path (``journal``) and a journal call never loads the recall half.
_HOMES = {
    "migrate_scope": "journal",
    "remember": "journal",
    "retire": "journal",
    "history": "reads",
    "read": "reads",
    "turn_start_projection": "reads",
}
_LAZY = "preferences.services.recall"
#: Submodules: ``from preferences.services import reads`` asks for the attribute first,
#: and must then fall back to importing the submodule, not load the recall half.
_SUBMODULES = frozenset({"journal", "reads", "extensions"})


def __getattr__(name: str):
    if name in _SUBMODULES or name.startswith("__"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if name in _HOMES:
        value = getattr(importlib.import_module(f"{__name__}.{_HOMES[name]}"), name)
        globals()[name] = value
        return value
    module = importlib.import_module(_LAZY)
    # Bind every exported name at once: importing the submodule also bound the package
    # attribute ``recall`` to the module itself, which the function must replace.
    globals().update({export: getattr(module, export) for export in module.__all__})
    if name in module.__all__:
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
