"""Every write and use case of the preferences app.

``journal`` holds the explicit Agent preference journal (Part A); ``recall`` the
semantic preference recall hook (Part B). Import the package: ``from preferences import
services`` then ``services.remember(...)``, ``services.recall(...)``.
"""

from preferences.services.journal import (  # noqa: F401
    history,
    migrate_scope,
    observe,
    read,
    remember,
    retire,
)
from preferences.services.recall import *  # noqa: F403
