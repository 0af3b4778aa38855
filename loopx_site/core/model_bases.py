"""Model field factories shared by several apps.

Migration-neutral by construction: a factory returns exactly the fields the models
declared by hand before (same targets, options and ``related_name``), so adopting one
changes no column, constraint or index.
"""

from django.db import models


def goal_and_agent(related_name: str) -> tuple[models.ForeignKey, models.ForeignKey]:
    """The ``goal`` and ``agent`` foreign keys of a row that belongs to one Agent of one
    Goal: both cascade and share ``related_name`` (``"+"``: no reverse accessor).

    ``goal, agent = goal_and_agent("settlements")``
    """
    return (
        models.ForeignKey("core.Goal", on_delete=models.CASCADE, related_name=related_name),
        models.ForeignKey("core.Agent", on_delete=models.CASCADE, related_name=related_name),
    )
