"""Models of the preferences app: the explicit journal and the recall hook's state."""

from preferences.models.journal import (
    PreferenceOperation,
    PreferenceScope,
    PreferenceSubject,
)
from preferences.models.recall import *  # noqa: F403 - the recall hook's models

__all__ = ["PreferenceOperation", "PreferenceScope", "PreferenceSubject"]
